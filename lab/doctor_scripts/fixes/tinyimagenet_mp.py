"""FIXED COPY (the one fix: the flow iterators' eight workers as threads (use_multiprocessing=False): no pool of eight
processes forked for every training and validation pass, no 25 MB float32 batch pickled through a pipe every step).

Tiny ImageNet classification, training: tiny-imagenet/train.py (with data_utils.py and model.py) of blupig/recognizer
(yl-recognizer), a VGG-style CNN of six convolutions with BatchNormalization and a Dense 1024/512/200 head, fitted with
``fit_generator(..., workers=8, use_multiprocessing=True)`` on ImageDataGenerator.flow_from_directory iterators (Keras
Sequences) that open every JPEG of a 512-image batch with PIL (load_img) and, for training, draw a random rotation,
shift, shear, zoom and flip per image, in a pool of eight worker processes forked for each training and each
validation pass.

Source: https://github.com/blupig/recognizer at 0a3e4040dbf607bed54776d854f7f7ba5de43b48 (tiny-imagenet/train.py,
tiny-imagenet/data_utils.py, tiny-imagenet/model.py; the validation layout from
tiny-imagenet/utils/organize_validation_data.py). Re-written here in the source's structure and order, not copied:
train.py sets epochs 200, workers 8 and data_path 'tiny-imagenet-200' (Stanford CS231N's Tiny ImageNet: train/<wnid>/
images/<wnid>_<n>.JPEG, 500 64x64 JPEGs for each of 200 classes; val/ reorganised by organize_validation_data.py into
val/<wnid>/val_<n>.JPEG, 50 a class), builds ``data_utils.train_generators(data_path, x_samples=None)``: a training
``ImageDataGenerator(featurewise_center=False, rotation_range=45, width_shift_range=0.2, height_shift_range=0.2,
rescale=1./255, shear_range=0.2, zoom_range=0.2, horizontal_flip=True, fill_mode='nearest')`` and a validation
``ImageDataGenerator(featurewise_center=False, rescale=1./255)`` (no ``fit``: x_samples is None), each
``flow_from_directory(directory=path.join(base_path, 'train' | 'val'), target_size=(64, 64), batch_size=512,
class_mode='categorical')``; prints the first training batch's first image row (``for x_batch, y_batch in train_gen``,
then ``break``); ``model.build(gpus=0)`` makes a Sequential of Conv2D 96 5x5 (same), BatchNormalization, relu,
MaxPooling 2; Conv2D 128 3x3, BN, relu; Conv2D 192 3x3, BN, relu, MaxPooling 2; Conv2D 256 3x3, BN, relu; Conv2D 256
3x3, BN, relu; Conv2D 128 3x3 relu, MaxPooling 2; Flatten, Dense 1024 relu, Dropout 0.5, Dense 512 relu, Dense 200
softmax, compiled (no multi-GPU wrapper for gpus=0) with SGD(lr=0.01, momentum=0.9, nesterov=True), categorical
cross-entropy, accuracy and top_k_categorical_accuracy; a TensorBoard callback into logs/<date>_<comment>; then
``train_model.fit_generator(train_gen, validation_data=val_gen, epochs=epochs, workers=workers,
use_multiprocessing=True, verbose=2, callbacks=[tensorboard])`` and ``tmpl_model.save_weights('weights.h5')``.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/tinyimagenet_mp/tiny-imagenet-200/``: 6 generated 64x64 JPEGs for each of
the 200 classes in train/ and 1 in val/, for 500 and 50; val/ as organize_validation_data.py leaves it, without its
original images/ folder, which flow_from_directory would count as a 201st class); epochs 3 for 200; every
convolution's filters and the Dense widths a sixteenth of the source's (6, 8, 12, 16, 16, 8 and 64, 32; the 200
classes kept); Keras 2 -> Keras 3: fit_generator -> fit, its ``workers=8, use_multiprocessing=True`` set on both
flow iterators (Keras 3 takes them on the PyDataset; Keras 2's fit_generator ran the validation Sequence with the
same workers), SGD(lr=) -> learning_rate=, ImageDataGenerator from tensorflow.keras.preprocessing.image (Keras 3's
legacy class) with its affine step (scipy.ndimage there, not installed here) done by cv2.warpAffine with the matrix
Keras builds (rotation, shift, shear, zoom about the centre; bilinear; edges replicated for fill_mode 'nearest'),
the rest (random draws, flip, rescale) left to Keras; the TensorBoard callback and the GPU/multi_gpu_model branch
left out; the weights saved to weights.weights.h5 in a temporary folder.
"""

import datetime
import os
import sys
import tempfile
from os import path

import cv2
import numpy as np
from keras import metrics, optimizers
from keras.layers import Activation, BatchNormalization, Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from keras.models import Sequential
from tensorflow.keras.preprocessing.image import ImageDataGenerator as KerasImageDataGenerator

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "tinyimagenet_mp")
OUT = os.path.join(tempfile.gettempdir(), "tinyimagenet_mp_out")


# ----------------------------------------------------------------------------- ImageDataGenerator without scipy
class ImageDataGenerator(KerasImageDataGenerator):
    """Keras's ImageDataGenerator, its affine step (scipy.ndimage there) done with cv2.warpAffine."""

    def apply_transform(self, x, transform_parameters):
        p = dict(transform_parameters)
        m = np.eye(3)
        if p.get("theta", 0):
            t = np.deg2rad(p["theta"])
            m = m @ np.array([[np.cos(t), -np.sin(t), 0], [np.sin(t), np.cos(t), 0], [0, 0, 1]])
        if p.get("tx", 0) or p.get("ty", 0):
            m = m @ np.array([[1, 0, p.get("tx", 0)], [0, 1, p.get("ty", 0)], [0, 0, 1]])
        if p.get("shear", 0):
            s = np.deg2rad(p["shear"])
            m = m @ np.array([[1, -np.sin(s), 0], [0, np.cos(s), 0], [0, 0, 1]])
        if p.get("zx", 1) != 1 or p.get("zy", 1) != 1:
            m = m @ np.array([[p.get("zx", 1), 0, 0], [0, p.get("zy", 1), 0], [0, 0, 1]])
        if not np.allclose(m, np.eye(3)):
            h, w = x.shape[0], x.shape[1]
            o_x, o_y = h / 2 + 0.5, w / 2 + 0.5  # Keras's transform_matrix_offset_center
            m = np.array([[1, 0, o_x], [0, 1, o_y], [0, 0, 1]]) @ m @ np.array([[1, 0, -o_x], [0, 1, -o_y], [0, 0, 1]])
            # Keras builds the matrix in (x, y) terms (it swaps rows and columns for scipy): cv2 takes it as it is.
            x = cv2.warpAffine(x, m[:2], (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                               borderMode=cv2.BORDER_REPLICATE)
        p.update(theta=0, tx=0, ty=0, shear=0, zx=1, zy=1)
        return super().apply_transform(x, p)


# ----------------------------------------------------------------------------- data_utils.py
# Create data generators with augmentation from directories
def train_generators(base_path, x_samples):

    train_datagen = ImageDataGenerator(
        featurewise_center=False,
        # zca_whitening=True,
        rotation_range=45,
        width_shift_range=0.2,
        height_shift_range=0.2,
        rescale=1./255,
        shear_range=0.2,
        zoom_range=0.2,
        horizontal_flip=True,
        fill_mode='nearest')

    val_datagen = ImageDataGenerator(
        featurewise_center=False,
        rescale=1./255)

    # Fit generator if x samples provided
    if x_samples is not None:
        train_datagen.fit(x_samples / 255)
        val_datagen.fit(x_samples / 255)

    train_gen = train_datagen.flow_from_directory(
        directory=path.join(base_path, 'train'),
        target_size=(64, 64),
        batch_size=512,
        class_mode='categorical')

    val_gen = val_datagen.flow_from_directory(
        directory=path.join(base_path, 'val'),
        target_size=(64, 64),
        batch_size=512,
        class_mode='categorical')

    return train_gen, val_gen


# ----------------------------------------------------------------------------- model.py (filters / 16)
# Build model
def build(gpus=1):
    # Create new template model
    tmpl_model = Sequential()

    # In: [-1, 64, 64, 3]
    tmpl_model.add(Conv2D(filters=6, kernel_size=[5, 5], padding='same', input_shape=(64, 64, 3)))
    tmpl_model.add(BatchNormalization())
    tmpl_model.add(Activation('relu'))

    tmpl_model.add(MaxPooling2D(pool_size=[2, 2]))

    # In: [-1, 32, 32, 96]
    tmpl_model.add(Conv2D(8, [3, 3], padding='same'))
    tmpl_model.add(BatchNormalization())
    tmpl_model.add(Activation('relu'))

    tmpl_model.add(Conv2D(12, [3, 3], padding='same'))
    tmpl_model.add(BatchNormalization())
    tmpl_model.add(Activation('relu'))

    tmpl_model.add(MaxPooling2D([2, 2]))

    # In: [-1, 16, 16, 192]
    tmpl_model.add(Conv2D(16, [3, 3], padding='same'))
    tmpl_model.add(BatchNormalization())
    tmpl_model.add(Activation('relu'))

    tmpl_model.add(Conv2D(16, [3, 3], padding='same'))
    tmpl_model.add(BatchNormalization())
    tmpl_model.add(Activation('relu'))

    tmpl_model.add(Conv2D(8, [3, 3], padding='same', activation='relu'))
    tmpl_model.add(MaxPooling2D([2, 2]))

    # Flatten to 1-D vector
    # In: [-1, 8, 8, 192]
    tmpl_model.add(Flatten())

    # Dense
    tmpl_model.add(Dense(units=64, activation='relu'))

    # Dropout
    tmpl_model.add(Dropout(0.5))

    # Dense
    tmpl_model.add(Dense(units=32, activation='relu'))

    # Logits layer
    tmpl_model.add(Dense(units=200, activation='softmax'))

    # Optimizers
    adadelta = optimizers.Adadelta()  # noqa: F841
    adam = optimizers.Adam(learning_rate=0.001)  # noqa: F841
    rmsprop = optimizers.RMSprop(learning_rate=0.001)  # noqa: F841

    # lr = self.lr * (1. / (1. + self.decay * self.iterations))
    sgd = optimizers.SGD(learning_rate=0.01, momentum=0.9, nesterov=True)

    # The tmpl_model to be trained
    train_model = tmpl_model

    # Compile modle
    train_model.compile(optimizer=sgd,
                        loss='categorical_crossentropy',
                        metrics=['accuracy', metrics.top_k_categorical_accuracy])

    return train_model, tmpl_model


# ----------------------------------------------------------------------------- train.py
if __name__ == "__main__":
    # Config
    epochs = 3
    workers = 8
    data_path = os.path.join(DATA, 'tiny-imagenet-200')

    # Build data generators
    train_gen, val_gen = train_generators(data_path, x_samples=None)
    for x_batch, y_batch in train_gen:  # noqa: B007
        for n in x_batch[0][0]:
            print(n, end=' ')
        print()  # New line
        break

    # Build and compile model
    train_model, tmpl_model = build(gpus=0)

    # Tensorboard
    run_comment = '0'
    if len(sys.argv) > 1:
        run_comment = sys.argv[1]

    datetime_str = '{0:%y%m%d_%H%M}'.format(datetime.datetime.now())

    # Train (fit_generator(workers=workers, use_multiprocessing=True): Keras 3 takes them on the PyDataset)
    for gen in (train_gen, val_gen):
        gen.workers = workers
        gen.use_multiprocessing = False  # FIX: thread workers, not a process pool forked every pass
    train_model.fit(
        train_gen,
        validation_data=val_gen,
        epochs=epochs,
        verbose=2)

    # Save model
    os.makedirs(OUT, exist_ok=True)
    tmpl_model.save_weights(os.path.join(OUT, 'weights.weights.h5'))
