"""Histopathologic Cancer Detection (Kaggle, PatchCamelyon tiles), training: cancer_detection/model.py (with
cancer_detection/data_utils.py) of cmpatino/Histopathological-Cancer-Detection, a NASNetMobile classifier with a
max-pool, average-pool and flatten head, fitted with fit_generator on a keras.utils.Sequence whose __getitem__ reads
each batch's 96x96 TIFF tiles with ``cv2.imread``, swaps BGR to RGB with cv2.split/cv2.merge and scales them to
[0, 1] (no augmentation), every batch of every epoch, in two worker processes (use_multiprocessing=True, workers=2).

Source: https://github.com/cmpatino/Histopathological-Cancer-Detection at 06dac016b4c4e5ec6454a0ce7b41a61c3dc12f49
(cancer_detection/model.py; cancer_detection/data_utils.py as stored at b082f37965cc0b122fb841b658aedac960e6b064).
Re-written here in the source's structure and order, not copied: under ``__main__`` model.py asks on stdin for T
(train), TP (train, then predict) or P (predict); train_model globs ``../input/train/*.tif`` (220025 tiles), splits
the paths with sklearn's ``train_test_split(test_size=0.1, random_state=42)``, maps each to its id (the file name
without .tif), reads ``../input/train_labels.csv`` (id, label) into an id -> label dict, builds
``DataGenerator(partition['train'], labels, TRAIN_DIR, dim=(96, 96), n_channels=3, n_classes=1, shuffle=True)`` and
the same for the validation ids (shuffle=True too), builds get_model_classif_nasnet (Input (96, 96, 3),
``NASNetMobile(include_top=False, input_tensor=inputs, weights='imagenet')`` called on the input, GlobalMaxPooling2D,
GlobalAveragePooling2D and Flatten of its output concatenated, Dropout 0.5, Dense 1 sigmoid; Adam(0.0001), binary
cross-entropy, metrics 'acc' and a TF1 ``tf.metrics.auc`` run through ``K.get_session()``), and calls
``model.fit_generator(generator=train_gen, validation_data=val_gen, epochs=2, callbacks=[ModelCheckpoint('model.h5',
monitor='val_acc', save_best_only=True, mode='max'), ReduceLROnPlateau(monitor='val_acc', factor=0.5, patience=2,
mode='max', min_lr=0.00001)], use_multiprocessing=True, workers=2)``, then pickles history.history to history.pkl.
data_utils.py's DataGenerator (batch_size 32): ``__len__`` floor(ids / 32); ``on_epoch_end`` shuffles an index
array; ``__getitem__`` takes the batch's ids and ``__data_generation`` fills a float64 ``np.empty((32, 96, 96, 3))``
with ``cv2.imread(path + ID + '.tif')`` split and merged to RGB and divided by 255, and an int label array.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/histo_pcam/input/``: 900 generated 96x96 RGB tiles as uncompressed
TIFFs named by a hex id, and train_labels.csv, for the 220025 tiles); the stdin prompt answered 'T' (train only:
no test folder, no submission); NASNetMobile replaced by a small CNN of the same role (Conv2D 8, 16, 32, each
before a 2x2 max-pooling, its 12x12x32 output fed to the same three-way head): NASNetMobile does not build and trace in reasonable time
here (about 80 s for its first step on this machine, even cut to one block), and weights='imagenet' cannot be
downloaded; epochs 3 for 2; Keras 2 -> Keras 3: fit_generator -> fit, with use_multiprocessing and workers (the
source's values) moved to DataGenerator's ``super().__init__`` (Keras 3's PyDataset takes them there, ``**kwargs``
passed through), keras.utils.Sequence kept; the TF1 ``tf.metrics.auc``/``K.get_session`` metric as
``keras.metrics.AUC(name='auc')``; monitor 'val_acc' kept (Keras 3 logs the 'acc' metric under that name); the
checkpoint to model.keras and history.pkl in a temporary folder (Keras 3 saves whole models only to .keras or .h5);
sklearn's train_test_split as the NumPy permutation it draws (RandomState(42), the first ceil(10 %) to test); the
prediction functions (never called in training) kept as written, predict_generator -> predict.
"""

import os
import pickle
import tempfile
from glob import glob

import cv2
import keras
import numpy as np
import pandas as pd
from keras.callbacks import ModelCheckpoint, ReduceLROnPlateau
from keras.layers import (
    Concatenate,
    Conv2D,
    Dense,
    Dropout,
    Flatten,
    GlobalAveragePooling2D,
    GlobalMaxPooling2D,
    Input,
    MaxPooling2D,
)
from keras.losses import binary_crossentropy
from keras.models import Model
from keras.optimizers import Adam
from keras.utils import Sequence

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "histo_pcam")
OUT = os.path.join(tempfile.gettempdir(), "histo_pcam_out")


def train_test_split(*arrays, test_size=0.25, random_state=None):
    # sklearn's ShuffleSplit draw: RandomState(random_state).permutation, the first ceil(test_size * n) to test
    n = len(arrays[0])
    n_test = int(np.ceil(test_size * n))
    permutation = np.random.RandomState(random_state).permutation(n)
    test, train = permutation[:n_test], permutation[n_test:]
    out = []
    for a in arrays:
        out += [[a[i] for i in train], [a[i] for i in test]]
    return out


# ----------------------------------------------------------------------------- cancer_detection/data_utils.py
class DataGenerator(Sequence):
    'Generates data for Keras'
    def __init__(self, list_IDs, labels, path, batch_size=32, dim=(32, 32),
                 n_channels=3, n_classes=10, shuffle=True, **kwargs):
        'Initialization'
        super().__init__(**kwargs)
        self.dim = dim
        self.batch_size = batch_size
        self.labels = labels
        self.list_IDs = list_IDs
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.shuffle = shuffle
        self.path = path
        self.on_epoch_end()

    def __len__(self):
        'Denotes the number of batches per epoch'
        return int(np.floor(len(self.list_IDs) / self.batch_size))

    def __getitem__(self, index):
        'Generate one batch of data'
        # Generate indexes of the batch
        indexes = self.indexes[index*self.batch_size:(index+1)*self.batch_size]

        # Find list of IDs
        list_IDs_temp = [self.list_IDs[k] for k in indexes]

        # Generate data
        X, y = self.__data_generation(list_IDs_temp)

        return X, y

    def on_epoch_end(self):
        'Updates indexes after each epoch'
        self.indexes = np.arange(len(self.list_IDs))
        if self.shuffle is True:
            np.random.shuffle(self.indexes)

    def __data_generation(self, list_IDs_temp):
        'Generates data containing batch_size samples' # X : (n_samples, *dim, n_channels)
        # Initialization
        X = np.empty((self.batch_size, *self.dim, self.n_channels))
        y = np.empty((self.batch_size), dtype=int)

        # Generate data
        for i, ID in enumerate(list_IDs_temp):
            # Store sample
            bgr_img = cv2.imread(self.path + ID + '.tif')
            b, g, r = cv2.split(bgr_img)
            rgb_img = cv2.merge([r, g, b])
            X[i, ] = rgb_img/255

            # Store class
            y[i] = self.labels[ID]

        return X, y


# ----------------------------------------------------------------------------- cancer_detection/model.py
DATA_PATH = DATA + '/input/'
TRAIN_DIR = DATA_PATH + 'train/'
TEST_DIR = DATA_PATH + 'test/test/'
MODEL_FILEPATH = os.path.join(OUT, 'model.keras')
HISTORY_FILEPATH = os.path.join(OUT, 'history.pkl')
SUBMISSIONS_DIR = os.path.join(OUT, 'submission_files/')

IMAGE_SIZE = 96


def auc():
    """Calculate the AUC-ROC score for predictions (Keras 3: the built-in streaming AUC)"""
    return keras.metrics.AUC(name='auc')


def map_id_label(df_train):
    """creates a mapping between the ID of an image and its label

    Arguments:
        df_train {pd.DataFrame} -- DataFrame whose rows are the id and the
                                   label for each image

    Returns:
        dict -- mapping between images IDs and labels
    """

    id_label_map = {k: v for k, v in zip(df_train.id.values,
                                         df_train.label.values)}

    return id_label_map


def extract_id(img_path):
    """Extract image ID from filename

    Arguments:
        img_path {str} -- path to image file

    Returns:
        str -- image id
    """

    img_id = img_path.split('/')[-1].split('.')[0]

    return img_id


def small_cnn_base(inputs):
    """Stands in for NASNetMobile(include_top=False, input_tensor=inputs): a small convolutional feature map"""
    x = inputs
    for filters in (8, 16, 32):
        x = Conv2D(filters, 3, padding='same', activation='relu')(x)
        x = MaxPooling2D(2)(x)
    return Model(inputs, x, name='base_model')


def get_model_classif_nasnet():
    """Creates model architecture

    Returns:
        keras.model.Model -- compiled model
    """
    inputs = Input((IMAGE_SIZE, IMAGE_SIZE, 3))
    base_model = small_cnn_base(inputs)
    x = base_model(inputs)
    out1 = GlobalMaxPooling2D()(x)
    out2 = GlobalAveragePooling2D()(x)
    out3 = Flatten()(x)
    out = Concatenate(axis=-1)([out1, out2, out3])
    out = Dropout(0.5)(out)
    out = Dense(1, activation="sigmoid", name="3_")(out)
    model = Model(inputs, out)
    model.compile(optimizer=Adam(0.0001),
                  loss=binary_crossentropy, metrics=['acc', auc()])
    model.summary()

    return model


def generate_prediction(model, test_gen, test_files):
    """Generates predictions for submissions

    Arguments:
        model {keras.models.Model} -- trained model
        test_gen {DataGenerator} -- data generator with test set
        test_files {list} -- image filenames for test set

    Returns:
        pd.DataFrame -- DataFrame with image ID and predicted labels
    """

    predictions = model.predict(test_gen, verbose=1)
    df_preds = pd.DataFrame(predictions,
                            columns=['has_tumor_tissue'])

    df_preds['file_names'] = test_files
    df_preds['id'] = df_preds['file_names'].str.split('/')\
                                           .str.get(-1)\
                                           .str.split('.').str.get(0)

    submission_df = pd.DataFrame({'id': df_preds['id'],
                                  'label': df_preds['has_tumor_tissue'],
                                  }).set_index('id')
    return submission_df


def train_model():
    """Train model and save weights in file

    Returns:
        keras.model.Model -- model architecture object
    """

    labeled_files = glob(TRAIN_DIR + '*.tif')

    partition = {}
    train, val = train_test_split(labeled_files, test_size=0.1,
                                  random_state=42)

    partition['train'] = list(map(extract_id, train))
    partition['val'] = list(map(extract_id, val))

    df_train = pd.read_csv(DATA_PATH + "train_labels.csv")
    labels = map_id_label(df_train)

    print('Creating Generators')
    train_gen = DataGenerator(partition['train'], labels, TRAIN_DIR,
                              dim=(IMAGE_SIZE, IMAGE_SIZE),
                              n_channels=3, n_classes=1, shuffle=True,
                              use_multiprocessing=True, workers=2)
    val_gen = DataGenerator(partition['val'], labels, TRAIN_DIR,
                            dim=(IMAGE_SIZE,  IMAGE_SIZE),
                            n_channels=3, n_classes=1, shuffle=True,
                            use_multiprocessing=True, workers=2)

    model = get_model_classif_nasnet()
    model_filepath = MODEL_FILEPATH
    checkpoint = ModelCheckpoint(model_filepath, monitor='val_acc',
                                 save_best_only=True, mode='max')
    reduce_lr = ReduceLROnPlateau(monitor='val_acc', factor=0.5, patience=2,
                                  mode='max', min_lr=0.00001)
    print('Fitting Model')
    history = model.fit(train_gen,
                        validation_data=val_gen,
                        epochs=3,
                        callbacks=[checkpoint, reduce_lr],
                        )
    with open(HISTORY_FILEPATH, 'wb') as hist_file:
        pickle.dump(history.history, hist_file)

    return model


def predict(submission_filename, model=None):
    """Predict and generate submission file using a trained model

    Arguments:
        submission_filename {str} -- name for the Kaggle submission file

    Keyword Arguments:
        model {keras.models.Model} -- model object to use in predictions
                                      (default: {None})
    """

    test_files = glob(TEST_DIR + '*.tif')
    test_ids = list(map(extract_id, test_files))
    test_labels = {i: 0 for i in test_ids}

    test_gen = DataGenerator(test_ids, test_labels, TEST_DIR,
                             dim=(IMAGE_SIZE,  IMAGE_SIZE), batch_size=2,
                             n_channels=3, n_classes=1, shuffle=False)

    if model:
        model.load_weights(MODEL_FILEPATH)
    else:
        model = get_model_classif_nasnet()
        model.load_weights(MODEL_FILEPATH)

    print('Creating Submission Predictions')
    submission = generate_prediction(model, test_gen, test_files)

    submission.to_csv(SUBMISSIONS_DIR + submission_filename)


if __name__ == '__main__':

    print('Press T for training')
    print('Press TP for train and predict')
    print('Press P to predict')

    os.makedirs(OUT, exist_ok=True)
    choice = 'T'  # the source reads input('Select option: ')

    if choice == 'T':
        _ = train_model()
    elif choice == 'TP':
        submission_filename = input('Submission filename: ')
        model = train_model()
        predict(submission_filename, model)
    elif choice == 'P':
        submission_filename = input('Submission filename: ')
        predict(submission_filename)
