"""FIXED COPY (the one fix: cache() after the deterministic numpy_function map, so the images are read and resized once).

Polyp segmentation U-Net, training script (tf.data over tf.numpy_function reading with OpenCV).

Source: https://github.com/nikhilroxtomar/Polyp-Segmentation-using-UNET-in-TensorFlow-2.0
(train.py, data.py and model.py at bd7b2c736feb4c39ddec305d627a4a29ff23c759), kept as written:
load_data, read_image/read_mask with cv2, tf_parse via tf.numpy_function, tf_dataset (map without
num_parallel_calls, batch, repeat), the plain-function ``iou`` metric (itself a tf.numpy_function), the
compile and fit calls with steps_per_epoch/validation_steps and the callbacks.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/polyp_unet``, 384x288 generated PNGs instead of CVC-612);
sklearn's train_test_split replaced by the same seeded permutation in NumPy (sklearn is not installed);
images resized to 96x96 instead of 256x256 and a smaller U-Net (model.py's conv_block/build_model with
filters [8, 16, 32, 64] instead of [16, 32, 48, 64]) so it runs on 2 CPU cores; epochs 20 -> 3; the
TensorBoard callback dropped (tensorboard is not installed);
the ModelCheckpoint and CSVLogger callbacks write under a temporary folder, not files/
(model.keras: Keras 3 saves no .h5 from ModelCheckpoint by default); ``iou``'s numpy_function output gets
``set_shape([])`` (Keras 3 needs the metric's rank).
"""

import os
import tempfile
from glob import glob

import cv2
import numpy as np
import tensorflow as tf
from tensorflow.keras.callbacks import CSVLogger, EarlyStopping, ModelCheckpoint, ReduceLROnPlateau
from tensorflow.keras.layers import Activation, BatchNormalization, Concatenate, Conv2D, Input, MaxPool2D, UpSampling2D
from tensorflow.keras.models import Model

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "polyp_unet")
SIZE = 96


def train_test_split(items, test_size, random_state):
    idx = np.random.RandomState(random_state).permutation(len(items))
    items = np.asarray(items)
    return list(items[idx[test_size:]]), list(items[idx[:test_size]])


# --------------------------------------------------------------------------- data.py

def load_data(path, split=0.1):
    images = sorted(glob(os.path.join(path, "images/*")))
    masks = sorted(glob(os.path.join(path, "masks/*")))

    total_size = len(images)
    valid_size = int(split * total_size)
    test_size = int(split * total_size)

    train_x, valid_x = train_test_split(images, test_size=valid_size, random_state=42)
    train_y, valid_y = train_test_split(masks, test_size=valid_size, random_state=42)

    train_x, test_x = train_test_split(train_x, test_size=test_size, random_state=42)
    train_y, test_y = train_test_split(train_y, test_size=test_size, random_state=42)

    return (train_x, train_y), (valid_x, valid_y), (test_x, test_y)


def read_image(path):
    path = path.decode()
    x = cv2.imread(path, cv2.IMREAD_COLOR)
    x = cv2.resize(x, (SIZE, SIZE))
    x = x/255.0
    return x


def read_mask(path):
    path = path.decode()
    x = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    x = cv2.resize(x, (SIZE, SIZE))
    x = x/255.0
    x = np.expand_dims(x, axis=-1)
    return x


def tf_parse(x, y):
    def _parse(x, y):
        x = read_image(x)
        y = read_mask(y)
        return x, y

    x, y = tf.numpy_function(_parse, [x, y], [tf.float64, tf.float64])
    x.set_shape([SIZE, SIZE, 3])
    y.set_shape([SIZE, SIZE, 1])
    return x, y


def tf_dataset(x, y, batch=8):
    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    dataset = dataset.map(tf_parse).cache()
    dataset = dataset.batch(batch)
    dataset = dataset.repeat()
    return dataset


# --------------------------------------------------------------------------- model.py

def conv_block(x, num_filters):
    x = Conv2D(num_filters, (3, 3), padding="same")(x)
    x = BatchNormalization()(x)
    x = Activation("relu")(x)

    x = Conv2D(num_filters, (3, 3), padding="same")(x)
    x = BatchNormalization()(x)
    x = Activation("relu")(x)

    return x


def build_model():
    size = SIZE
    num_filters = [8, 16, 32, 64]
    inputs = Input((size, size, 3))

    skip_x = []
    x = inputs
    ## Encoder
    for f in num_filters:
        x = conv_block(x, f)
        skip_x.append(x)
        x = MaxPool2D((2, 2))(x)

    ## Bridge
    x = conv_block(x, num_filters[-1])

    num_filters.reverse()
    skip_x.reverse()
    ## Decoder
    for i, f in enumerate(num_filters):
        x = UpSampling2D((2, 2))(x)
        xs = skip_x[i]
        x = Concatenate()([x, xs])
        x = conv_block(x, f)

    ## Output
    x = Conv2D(1, (1, 1), padding="same")(x)
    x = Activation("sigmoid")(x)

    return Model(inputs, x)


# --------------------------------------------------------------------------- train.py

def iou(y_true, y_pred):
    def f(y_true, y_pred):
        intersection = (y_true * y_pred).sum()
        union = y_true.sum() + y_pred.sum() - intersection
        x = (intersection + 1e-15) / (union + 1e-15)
        x = x.astype(np.float32)
        return x
    x = tf.numpy_function(f, [y_true, y_pred], tf.float32)
    x.set_shape([])  # Keras 3 reduces a metric by its rank: a numpy_function's output has none
    return x


if __name__ == "__main__":
    ## Dataset
    path = DATA
    (train_x, train_y), (valid_x, valid_y), (test_x, test_y) = load_data(path)

    ## Hyperparameters
    batch = 8
    lr = 1e-4
    epochs = 3

    train_dataset = tf_dataset(train_x, train_y, batch=batch)
    valid_dataset = tf_dataset(valid_x, valid_y, batch=batch)

    model = build_model()

    opt = tf.keras.optimizers.Adam(lr)
    metrics = ["acc", tf.keras.metrics.Recall(), tf.keras.metrics.Precision(), iou]
    model.compile(loss="binary_crossentropy", optimizer=opt, metrics=metrics)

    files = tempfile.mkdtemp(prefix="polyp_unet_files_")
    callbacks = [
        ModelCheckpoint(os.path.join(files, "model.keras")),
        ReduceLROnPlateau(monitor='val_loss', factor=0.1, patience=4),
        CSVLogger(os.path.join(files, "data.csv")),
        EarlyStopping(monitor='val_loss', patience=10, restore_best_weights=False)
    ]

    train_steps = len(train_x)//batch
    valid_steps = len(valid_x)//batch

    if len(train_x) % batch != 0:
        train_steps += 1
    if len(valid_x) % batch != 0:
        valid_steps += 1

    model.fit(train_dataset,
        validation_data=valid_dataset,
        epochs=epochs,
        steps_per_epoch=train_steps,
        validation_steps=valid_steps,
        callbacks=callbacks)
