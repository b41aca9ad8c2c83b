"""FIXED COPY (the one fix: each face is opened, resized and labelled once and kept in memory).

Face identity classification with SqueezeNet on IMDB-WIKI, training: train_squ.py of
Conditional-Variational-Autoencoder-Keras, a custom loop of ``train_on_batch`` over batches that
HandleData.load_data_id_critic reads, resizes and one-hot labels with PIL and NumPy for every batch of every epoch.

Source: https://github.com/Osebek/Conditional-Variational-Autoencoder-Keras at
6b6a4843ca9d0f386f9aac1e2e271d3fe00f00a2 (train_squ.py, HandleData.py, networks_def_tf.py). Re-written here in the
source's structure and order, not copied: HandleData, at import, reads the imdb.mat metadata, keeps the faces with
face_score > FACE_SCORE_CUTOFF (3.0), one name and no second face, gives each its age (photo_taken - year of
birth), keeps the people with more than NUM_PIC_ID (100) photos, numbers them (name_id_map) and draws perm_map, a
permutation of those files drawn once; load_data_id_critic(xmin, xmax) opens each file of perm_map[xmin:xmax] with
PIL, resizes it to 224x224 BICUBIC, stacks a grayscale one to 3 channels, builds a uint8 copy and a PIL image of it
(unused), one-hot labels its identity with ``np.eye(len(name_id_map))[name_id]`` and returns the images / 255, the
labels and the ages; squeezenet is conv1 96 (7x7, stride 2), max pooling, fire modules 2-9 (squeeze 16-64, expand
64-256 1x1 and 3x3, concatenated) with max pooling after fire4 and fire8, AveragePooling2D(14), Dense(FC_width
2048) relu, Dropout 0.5, Dense softmax; train_squ compiles it with SGD(lr=0.001, decay=0.0002, momentum=0.9,
nesterov) and categorical cross-entropy, then for each of EPOCHS (100) epochs and each of n / batch_size (64)
batches loads the batch, ``squ.train_on_batch(x, y)``, prints the batch's label and loss, and saves the weights
after each epoch.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/squeezenet_faces/imdb_db``: 680 generated 128x128 face crops, 640 of
8 people kept by the filters, for IMDB-WIKI's 460k; imdb.mat as imdb_crop/imdb.csv with the same fields, read with
the csv module, no scipy here; the date of birth as its year, the name a str, not utf-8 bytes); NUM_PIC_ID 50 for 100 (8 people of 80 photos); images resized to 64x64 for 224x224
and squeezenet's filters a quarter of the source's (conv1 24, fire modules squeeze 4-16, expand 16-64), FC_width
256 for 2048 and the last pooling AveragePooling2D(4) for (14) (a step runs on 2 CPU cores); EPOCHS 3 for 100;
HandleData's UTKFace listings, its other loaders and the unused vgg_face/InceptionV3 imports left out (not used by
train_squ); Keras 1/2 layer calls ported to Keras 3 (``Convolution2D(..., init=, subsample=)`` ->
``Conv2D(..., kernel_initializer=, strides=)``, ``merge(mode="concat")`` -> ``Concatenate``, ``Model(input=,
output=)`` -> ``Model(inputs, outputs)``); ``SGD(lr=0.001, decay=0.0002, ...)`` -> ``learning_rate=0.001`` (Keras
3 has no ``decay``); ``n/batch_size`` -> ``n // batch_size`` (Python 3); the weights saved as
``db_trained_squ.weights.h5`` under a temporary folder (Keras 3 wants the suffix).
"""

import csv
import math
import os
import tempfile
from collections import Counter

import numpy as np
from keras.layers import AveragePooling2D, Concatenate, Conv2D, Dense, Dropout, Flatten, Input, MaxPooling2D
from keras.models import Model
from keras.optimizers import SGD
from keras.regularizers import l1, l2
from PIL import Image

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "squeezenet_faces")

# ----------------------------------------------------------------------------- HandleData.py
img_rows, img_cols, img_chns = 64, 64, 3
NUM_PIC_ID = 50
FACE_SCORE_CUTOFF = 3.0
files = {}
files_critic = {}
num_id = 0

with open(os.path.join(DATA, "imdb_db", "imdb_crop", "imdb.csv")) as f:
    data = list(csv.DictReader(f))
taken = [int(r["photo_taken"]) for r in data]
dob = [int(r["dob_year"]) for r in data]
face_location = [[[float(v) for v in r["face_location"].split()]] for r in data]
second_face_score = [float(r["second_face_score"]) for r in data]
face_score = [float(r["face_score"]) for r in data]
name = [[r["name"]] for r in data]
full_path = [r["full_path"] for r in data]

name1 = map(lambda x: (x[0], 1) if len(x) == 1 else (x, 0), name)

zipped = zip(full_path, taken, dob, name1, face_score, face_location, second_face_score)

zipped_filter = filter(lambda x: x[4] > FACE_SCORE_CUTOFF and x[3][1] == 1 and math.isnan(x[6]), zipped)

for (c, img_info) in enumerate(zipped_filter):
    taken = img_info[1]
    dob = img_info[2]
    files[c] = (img_info[0], taken - int(dob), img_info[3][0], img_info[5])

names = map(lambda x: x[1][2], files.items())
x = Counter(names).items()
multiple_id = set()
x = filter(lambda x: x[1] > NUM_PIC_ID, x)
for e in x:
    multiple_id.add(e[0])

name_id_map = {n: i for (i, n) in enumerate(multiple_id)}
num_id = len(name_id_map)
multiple_names = {}
c = 0
for i in files.items():
    name = i[1][2]
    if name in multiple_id:
        multiple_names[c] = (i[1][0], i[1][1], i[1][2], i[1][3], name_id_map[name])
        c = c + 1

files_critic = multiple_names
perm_map = np.random.permutation(len(files_critic))


def get_num_id_files():
    return len(files_critic)


loaded = {}


def load_data_id_critic(xmin, xmax):
    imgs_train = []
    labels_train = []
    labels_age = []
    img_shape = (img_rows, img_cols)
    for i in range(xmin, xmax):
        if i in loaded:  # the fix: each face read, resized and labelled once
            imgs_train.append(loaded[i][0]), labels_train.append(loaded[i][1]), labels_age.append(loaded[i][2])
            continue
        (filename, age, name, crop, name_id) = files_critic[perm_map[i]]
        ccrop = tuple(crop[0])  # noqa: F841  (the source's, unused)
        img = Image.open(os.path.join(DATA, "imdb_db", "aligned", filename))
        img = img.resize(img_shape, Image.BICUBIC)

        data = np.asarray(img, dtype="int32")
        if data.shape == img_shape:
            data = np.stack((data,) * 3, -1)
        imgs_train.append(data)
        test_img = (data * 255 / np.max(data)).astype("uint8")
        test = Image.fromarray(test_img)  # noqa: F841  (the source's, unused)
        labels_train.append(np.eye(len(name_id_map))[name_id])
        labels_age.append(age)
        loaded[i] = (data, labels_train[-1], age)
    im_train = np.asarray(imgs_train)
    im_train.astype("float32")
    im_train = im_train / 255.
    lbl_train = np.asarray(labels_train, dtype=np.float32)
    age_train = np.asarray(labels_age, dtype=np.int64)
    return (im_train, lbl_train, age_train)


# ----------------------------------------------------------------------------- networks_def_tf.py
def fire_layer(x, filters_squeeze, filters_1x1, filters_3x3,
               weight_cost, name_prefix, act="relu", init="glorot_uniform"):
    squeeze = Conv2D(filters_squeeze, (1, 1),
                     padding="same",
                     kernel_initializer=init,
                     activation=act,
                     kernel_regularizer=l1(weight_cost),
                     bias_regularizer=l1(weight_cost),
                     name="%s_squeeze" % name_prefix)(x)
    expand_1x1 = Conv2D(filters_1x1, (1, 1),
                        padding="same",
                        kernel_initializer=init,
                        activation=act,
                        kernel_regularizer=l1(weight_cost),
                        bias_regularizer=l1(weight_cost),
                        name="%s_expand_1x1" % name_prefix)(squeeze)
    expand_3x3 = Conv2D(filters_3x3, (3, 3),
                        padding="same",
                        kernel_initializer=init,
                        activation=act,
                        kernel_regularizer=l1(weight_cost),
                        bias_regularizer=l1(weight_cost),
                        name="%s_expand_3x3" % name_prefix)(squeeze)
    if filters_3x3 == 0:
        return expand_1x1
    else:
        return Concatenate(axis=3, name="%s_output" % name_prefix)([expand_1x1, expand_3x3])


def squeezenet(N_classes,
               inshape=(3, 224, 224),
               r=1e-3,
               simple_bypass=False,
               p_dropout=0.5,
               output="prob",
               init="glorot_uniform",
               FC_width=256):
    x = Input(shape=inshape)

    y = Conv2D(24, (7, 7),
               padding="same",
               activation="relu",
               strides=(2, 2),
               kernel_regularizer=l2(r),
               bias_regularizer=l2(r),
               name="conv1",
               kernel_initializer=init)(x)

    y = MaxPooling2D(pool_size=(3, 3), strides=(2, 2), padding="same")(y)

    y = fire_layer(y, 4, 16, 16, r, "fire2", act="relu", init=init)
    y = fire_layer(y, 4, 16, 16, r, "fire3", act="relu", init=init)
    y = fire_layer(y, 8, 32, 32, r, "fire4", act="relu", init=init)

    y = MaxPooling2D(pool_size=(3, 3), strides=(2, 2), padding="same")(y)

    y = fire_layer(y, 8, 32, 32, r, "fire5", act="relu", init=init)
    y = fire_layer(y, 12, 48, 48, r, "fire6", act="relu", init=init)
    y = fire_layer(y, 12, 48, 48, r, "fire7", act="relu", init=init)
    y = fire_layer(y, 16, 64, 64, r, "fire8", act="relu", init=init)

    y = MaxPooling2D(pool_size=(3, 3), strides=(2, 2), padding="same")(y)

    y = fire_layer(y, 16, 64, 64, r, "fire9", act="relu", init=init)

    y = AveragePooling2D((4, 4))(y)

    conv_feats = Flatten()(y)
    dense_feats = Dense(FC_width, activation="relu", kernel_initializer=init,
                        kernel_regularizer=l2(r), bias_regularizer=l2(r),
                        name="feats_out")(conv_feats)
    y = Dropout(p_dropout)(dense_feats)
    y = Dense(N_classes, activation="softmax", name="prob",
              kernel_regularizer=l2(r),
              bias_regularizer=l2(r),
              kernel_initializer=init)(y)

    if output == "prob":
        m = Model(x, y)
    elif output == "convFeatures":
        m = Model(x, conv_feats)
    elif output == "denseFeatures":
        m = Model(x, dense_feats)
    else:
        m = 1
    return m


# ----------------------------------------------------------------------------- train_squ.py
EPOCHS = 3
print(num_id)
sgd = SGD(learning_rate=0.001, momentum=0.9, nesterov=True)
squ = squeezenet(num_id, inshape=(img_rows, img_cols, 3), output="prob")
squ.compile(loss="categorical_crossentropy", optimizer=sgd, metrics=["accuracy"])

n = get_num_id_files()
batch_size = 64
for e in range(EPOCHS):
    for i in range(n // batch_size):
        (x, y, _) = load_data_id_critic(i * batch_size, (i + 1) * batch_size)
        loss = squ.train_on_batch(x, y)
        print(np.nonzero(y[0]))
        print("Epoch: ", str(e), " , Iteration: ", str(i), " , Loss: ", str(loss))
    squ.save_weights(os.path.join(tempfile.gettempdir(), "db_trained_squ.weights.h5"))
