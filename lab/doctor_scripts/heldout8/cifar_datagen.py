"""CIFAR-10 classification with real-time augmentation, training: Chapter04/chapter_04_003.py of Packt's Python Deep
Learning (second edition), a six-convolution ELU/BatchNormalization CNN fitted on
``ImageDataGenerator.flow(X_train, Y_train, batch_size=50)``, which rotates (up to 90 degrees), shifts and flips every
32x32 image of a batch at random and standardises it with the training set's mean and deviation, one image at a time
in Python, in four worker threads, every batch of every epoch; the validation set is standardised once, in a Python
loop, and passed as arrays.

Source: https://github.com/PacktPublishing/Python-Deep-Learning-Second-Edition at
e8f305bedbbdcce5236287c589ac134f0b698015 (Chapter04/chapter_04_003.py). Re-written here in the source's structure and
order, not copied: batch_size 50; ``cifar10.load_data()``; both image sets to float32 and divided by 255, the labels
one-hot (``keras.utils.to_categorical(., 10)``); ``ImageDataGenerator(rotation_range=90, width_shift_range=0.1,
height_shift_range=0.1, featurewise_center=True, featurewise_std_normalization=True, horizontal_flip=True)``,
``data_generator.fit(X_train)`` (the per-channel mean and deviation), then ``X_test[i] =
data_generator.standardize(X_test[i])`` for every test image; a Sequential of Conv2D 32, 32, 64, 64, 128, 128 (3x3,
same), each followed by ELU and BatchNormalization, 2x2 max pooling and Dropout 0.2, 0.2, 0.5 after each pair, Flatten
and Dense 10 softmax; compiled with adam, categorical cross-entropy and accuracy; ``model.fit_generator(generator=
data_generator.flow(x=X_train, y=Y_train, batch_size=batch_size), steps_per_epoch=len(X_train) // batch_size,
epochs=100, validation_data=(X_test, Y_test), workers=4)``.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/cifar_datagen/``: ``cifar10.load_data()`` -> ``np.load`` of x_train.npy,
y_train.npy, x_test.npy and y_test.npy, generated CIFAR-style arrays (uint8 32x32x3 images, uint8 labels of shape
(N, 1), as load_data returns them): 2000 training and 500 test images for 50000 and 10000); epochs 3 for 100;
fit_generator -> fit, its ``workers=4`` set on the flow's iterator (Keras 3 takes workers on the PyDataset the
iterator is, not on fit); the rotation and shift (ImageDataGenerator's apply_affine_transform uses scipy.ndimage, not
installed here) applied with cv2.warpAffine, the same matrix as Keras builds, bilinear, edges replicated (fill_mode
'nearest'), in a subclass of ImageDataGenerator that leaves the rest (random draws, flip, standardisation) to Keras;
ImageDataGenerator imported from tensorflow.keras.preprocessing.image (Keras 3's legacy class); an Input layer for
``input_shape=`` on the first Conv2D (Keras 3).
"""

import os

import cv2
import keras
import numpy as np
from keras.layers import Activation, BatchNormalization, Conv2D, Dense, Dropout, Flatten, MaxPooling2D
from keras.models import Sequential
from tensorflow.keras.preprocessing.image import ImageDataGenerator as KerasImageDataGenerator

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "cifar_datagen")


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
            # Keras maps output (row, col) to input (row, col); cv2 wants (x=col, y=row): swap rows and columns.
            s = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1]])
            m = s @ m @ s
            x = cv2.warpAffine(x, m[:2], (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                               borderMode=cv2.BORDER_REPLICATE)
        p.update(theta=0, tx=0, ty=0, shear=0, zx=1, zy=1)
        return super().apply_transform(x, p)


# ----------------------------------------------------------------------------- chapter_04_003.py
batch_size = 50

(X_train, Y_train), (X_test, Y_test) = ((np.load(os.path.join(DATA, 'x_train.npy')),
                                         np.load(os.path.join(DATA, 'y_train.npy'))),
                                        (np.load(os.path.join(DATA, 'x_test.npy')),
                                         np.load(os.path.join(DATA, 'y_test.npy'))))

X_train = X_train.astype('float32')
X_test = X_test.astype('float32')
X_train /= 255
X_test /= 255

Y_train = keras.utils.to_categorical(Y_train, 10)
Y_test = keras.utils.to_categorical(Y_test, 10)

data_generator = ImageDataGenerator(rotation_range=90,
                                    width_shift_range=0.1,
                                    height_shift_range=0.1,
                                    featurewise_center=True,
                                    featurewise_std_normalization=True,
                                    horizontal_flip=True)

data_generator.fit(X_train)

# standardize the test set
for i in range(len(X_test)):
    X_test[i] = data_generator.standardize(X_test[i])

model = Sequential()
model.add(keras.Input(shape=X_train.shape[1:]))
model.add(Conv2D(32, (3, 3), padding='same'))
model.add(Activation('elu'))
model.add(BatchNormalization())
model.add(Conv2D(32, (3, 3), padding='same'))
model.add(Activation('elu'))
model.add(BatchNormalization())
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.2))

model.add(Conv2D(64, (3, 3), padding='same'))
model.add(Activation('elu'))
model.add(BatchNormalization())
model.add(Conv2D(64, (3, 3), padding='same'))
model.add(Activation('elu'))
model.add(BatchNormalization())
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.2))

model.add(Conv2D(128, (3, 3), padding='same'))
model.add(Activation('elu'))
model.add(BatchNormalization())
model.add(Conv2D(128, (3, 3), padding='same'))
model.add(Activation('elu'))
model.add(BatchNormalization())
model.add(MaxPooling2D(pool_size=(2, 2)))
model.add(Dropout(0.5))

model.add(Flatten())
model.add(Dense(10, activation='softmax'))

model.compile(loss='categorical_crossentropy', optimizer='adam', metrics=['accuracy'])

generator = data_generator.flow(x=X_train,
                                y=Y_train,
                                batch_size=batch_size)
generator.workers = 4  # fit_generator(workers=4): Keras 3 takes it on the PyDataset
model.fit(
    generator,
    steps_per_epoch=len(X_train) // batch_size,
    epochs=3,
    validation_data=(X_test, Y_test))
