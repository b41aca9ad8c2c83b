"""FIXED COPY (the one fix: the next chunk read in a background thread while the current one trains).

DeepDriving affordance regression on TORCS frames, training: new/train_combined.py of deepdriving, an AlexNet fitted
on in-memory arrays one chunk at a time: the frames of a chunk are read with ``cv2.imread`` one by one, normalised
and labelled into NumPy arrays, then ``model.fit`` runs several epochs on that chunk (validation_split 0.2) before
the next chunk is read.

Source: https://github.com/babraham123/deepdriving at 007599aebd33abb50587c1b29a3868feb16cbd0c (new/train_combined.py).
Re-written here in the source's structure and order, not copied: train(db, keys, avg) takes m = 100000 keys, batch
16, stream_size 16 * 500, epochs 5; for each chunk get_data reads every frame with cv2.imread (210x280x3), to float
/ 255 minus the average image, and its 14 affordances from affordances.npy (the row whose index matches the file
name's 8 digits) scaled by scale_output; model.fit(X, Y, batch_size=16, epochs=5, validation_split=0.2, verbose=2,
callbacks=[CSVLogger, ReduceLROnPlateau, ModelCheckpoint]); alexnet is Conv 96 11x11/4, MaxPool 3/2, BatchNorm,
Conv 256 5x5, MaxPool, BatchNorm, Conv 384, 384, 256 3x3 (zero-padded), MaxPool, Dense 4096, 4096, 256 (Dropout 0.5
each) and Dense 14 hard_sigmoid, compiled with Adam(1e-4), mse and mae; the average image comes from
deepdriving_average.h5.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/deepdriving``: 960 generated 210x280 JPEG frames, affordances.npy and
deepdriving_average.h5, for /home/lkara/deepdrive/...; the CSV log and checkpoint in a temporary folder removed at
exit); m = len(keys) (960) for 100000 and stream_size 16 * 20 (3 chunks of 320) for 16 * 500; epochs 2 per chunk
for 5; AlexNet's filters and units an eighth of the source's (12/32/48/48/32, Dense 512/512/32); Keras 1/2 names
ported to Keras 3 (Convolution2D(n, h, w, subsample=s) -> Conv2D(n, (h, w), strides=s), Model(input=, output=) ->
Model(inputs=, outputs=), Adam(lr=) -> learning_rate=, ``K.image_dim_ordering() == 'tf'`` ->
``K.image_data_format() == 'channels_last'``, ModelCheckpoint's removed ``period=2`` dropped and its file named
``.weights.h5`` as Keras 3 wants); descale_output (not used in training) left out.
"""

import atexit
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from glob import glob
from time import time

import cv2
import h5py
import numpy as np
from keras import backend as K
from keras.callbacks import CSVLogger, EarlyStopping, ModelCheckpoint, ReduceLROnPlateau
from keras.layers import BatchNormalization, Conv2D, Dense, Dropout, Flatten, Input, MaxPooling2D, ZeroPadding2D
from keras.models import Model
from keras.optimizers import Adam

start_time = time()

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "deepdriving")

same_size = True
pretrained = False
model_num = 2
folder = tempfile.mkdtemp(prefix="deepdriving-") + "/"
atexit.register(shutil.rmtree, folder, ignore_errors=True)
os.makedirs(folder + "models")
logs_path = folder + "models"
model_filename = folder + 'models/model%d.json' % model_num
weights_filename = folder + 'models/model_weights%d.weights.h5' % model_num
csvlog_filename = folder + 'models/model%d.csv' % model_num

csvlog = CSVLogger(csvlog_filename, separator=',', append=False)
mdlchkpt = ModelCheckpoint(weights_filename, monitor='val_loss', save_best_only=True, save_weights_only=True, verbose=1)
erlystp = EarlyStopping(monitor='val_mean_absolute_error', min_delta=1e-4, patience=10, verbose=1)
reduce_lr = ReduceLROnPlateau(monitor='val_loss', factor=0.8, patience=5, min_lr=1e-5, verbose=1)

if K.image_data_format() == 'channels_last':
    print('Tensorflow')
    if same_size:
        dim = (210, 280, 3)
    else:
        dim = (227, 227, 3)
else:
    print('Theano')
    if same_size:
        dim = (3, 210, 280)
    else:
        dim = (3, 227, 227)


def train(db, keys, avg):
    m = len(keys)

    batch_size = 16  # powers of 2
    stream_size = batch_size * 20  # 320 images loaded at a time
    epochs = 2

    if pretrained and os.path.isfile(weights_filename):
        model = alexnet(weights_path=weights_filename)
    else:
        model = alexnet()

    pool = ThreadPoolExecutor(1)  # the fix: the next chunk read while this one trains
    nxt = pool.submit(get_data, db, keys[0:stream_size], avg)
    for i in range(0, m, stream_size):
        print(i, 'iteration')
        X_batch, Y_batch = nxt.result()
        if i + stream_size < m:
            nxt = pool.submit(get_data, db, keys[(i + stream_size):(i + 2 * stream_size)], avg)
        model.fit(X_batch, Y_batch,
                  batch_size=batch_size, epochs=epochs,
                  validation_split=0.2, verbose=2,
                  callbacks=[csvlog, reduce_lr, mdlchkpt])

    return model


def alexnet(weights_path=None):
    inputs = Input(shape=dim)

    conv_1 = Conv2D(12, (11, 11), strides=(4, 4), activation='relu', name='conv_1')(inputs)
    conv_2 = MaxPooling2D((3, 3), strides=(2, 2))(conv_1)
    conv_2 = BatchNormalization()(conv_2)

    conv_2 = ZeroPadding2D((2, 2))(conv_2)
    conv_2 = Conv2D(32, (5, 5), activation="relu", name='conv_2')(conv_2)

    conv_3 = MaxPooling2D((3, 3), strides=(2, 2))(conv_2)
    conv_3 = BatchNormalization()(conv_3)
    conv_3 = ZeroPadding2D((1, 1))(conv_3)
    conv_3 = Conv2D(48, (3, 3), activation='relu', name='conv_3')(conv_3)

    conv_4 = ZeroPadding2D((1, 1))(conv_3)
    conv_4 = Conv2D(48, (3, 3), activation="relu", name='conv_4')(conv_4)

    conv_5 = ZeroPadding2D((1, 1))(conv_4)
    conv_5 = Conv2D(32, (3, 3), activation="relu", name='conv_5')(conv_5)
    dense_1 = MaxPooling2D((3, 3), strides=(2, 2), name="convpool_5")(conv_5)

    dense_1 = Flatten(name="flatten")(dense_1)
    dense_1 = Dense(512, activation='relu', name='dense_1')(dense_1)
    dense_2 = Dropout(0.5)(dense_1)

    dense_2 = Dense(512, activation='relu', name='dense_2')(dense_2)
    dense_3 = Dropout(0.5)(dense_2)

    dense_3 = Dense(32, activation='relu', name='dense_3')(dense_3)
    dense_4 = Dropout(0.5)(dense_3)

    # output: 14 affordances, gaussian std 0.01
    dense_4 = Dense(14, activation='hard_sigmoid', name='dense_4')(dense_4)

    model = Model(inputs=inputs, outputs=dense_4)
    model.summary()

    if weights_path:
        model.load_weights(weights_path)

    adam = Adam(learning_rate=1e-4)
    model.compile(optimizer=adam, loss='mse', metrics=['mae'])  # try cross-entropy

    return model


def get_data(db, keys, avg):
    n = len(keys)

    xdim = (n,) + dim
    X_train = np.empty(xdim)
    Y_train = np.empty((n, 14))

    for i, key in enumerate(keys):
        img = cv2.imread(key)
        # img.shape = 210x280x3
        if not same_size:
            img = cv2.resize(img, (227, 227))

        img = img.astype('float32')

        img = img / 255.0
        img = np.subtract(img, avg)
        if K.image_data_format() == 'channels_first':
            img = np.swapaxes(img, 1, 2)
            img = np.swapaxes(img, 0, 1)

        X_train[i] = img

        j = int(key[-12:-4])
        affordances = db[j - 1]
        if int(affordances[0]) != j:
            raise ValueError('Image and affordance do not match: ' + str(j))
        affordances = affordances[1:]

        affordances = scale_output(affordances)
        affordances = affordances.reshape(1, 14)
        Y_train[i] = affordances

    return X_train, Y_train


def scale_output(affordances):
    ''' Scale output between [0.1, 0.9]
    '''
    affordances[0] = affordances[0] / 1.1 + 0.5  # angle

    affordances[1] = affordances[1] / 5.6249 + 1.34445  # toMarking_L
    affordances[2] = affordances[2] / 6.8752 + 0.39091  # toMarking_M
    affordances[3] = affordances[3] / 5.6249 - 0.34445     #toMarking_R

    affordances[4] = affordances[4] / 95 + 0.12     #dist_L
    affordances[5] = affordances[5] / 95 + 0.12     #dist_R

    affordances[6] = affordances[6] / 6.8752 + 1.48181       #toMarking_LL
    affordances[7] = affordances[7] / 6.25 + 0.98             #toMarking_ML
    affordances[8] = affordances[8] / 6.25 + 0.02             #toMarking_MR
    affordances[9] = affordances[9] / 6.8752 - 0.48181        #toMarking_RR

    affordances[10] = affordances[10] / 95 + 0.12  # dist_LL
    affordances[11] = affordances[11] / 95 + 0.12  # dist_MM
    affordances[12] = affordances[12] / 95 + 0.12  # dist_RR
    return affordances


def load_average():
    h5f = h5py.File(os.path.join(DATA, 'deepdriving_average.h5'), 'r')
    avg = h5f['average'][:]
    h5f.close()
    return avg


if __name__ == "__main__":
    dbpath = os.path.join(DATA, 'train_images') + '/'
    keys = glob(dbpath + '*.jpg')
    keys.sort()
    db = np.load(dbpath + 'affordances.npy')

    db = db.astype('float32')

    avg = load_average()
    # avg.shape = 210x280x3
    if not same_size:
        avg = cv2.resize(avg, (227, 227))

    model = train(db, keys, avg)

    model.save(folder + "models/alexnet%d.keras" % model_num)
    print("Time taken is %s seconds " % (time() - start_time))
