"""Mutation realness discriminator, training: discriminator_keras.py of perception_fuzzing, a DAVE-2-style CNN (five
Conv2D + ELU, three Dense + Dropout + ELU, a sigmoid) that tells mutated Cityscapes frames (*_edit.png) from the
originals (*_orig.png), fitted on DatasetGenerator, a keras Sequence whose ``__getitem__`` opens and decodes every
full-frame PNG of its batch with ``cv2.imread`` each time the batch is asked for, in one worker (the source passes
``workers=1, use_multiprocessing=False, max_queue_size=10``), every epoch.

Source: https://github.com/less-lab-uva/perception_fuzzing at cefc0252704ee5709cb66861553da1924a764f2e
(src/images/discriminator_keras.py). Re-written here in the source's structure and order, not copied: get_model is a
Sequential with no Input, Conv2D 24, 36, 48 (5x5, stride 2) and 64, 64 (3x3, stride 1) each followed by ELU, Flatten,
Dense 100 / 50 / 10 each with Dropout 0.5 and ELU, Dense 1 sigmoid, compiled with binary cross-entropy, adam and
accuracy; DatasetGenerator globs ``src/images/**/*_edit.png`` (label 1) then ``**/*_orig.png`` (label 0) (no
recursive=True: one folder level), batch_size 100, ``__len__`` is ceil(n / batch_size) and ``__getitem__`` returns
``np.array([cv2.imread(f) for f in batch_x], dtype=np.float32), np.array(batch_y)`` (the edits first, the originals
after: no shuffling); main runs under ``tf.device("gpu:0")``: ``model.fit_generator(data_generator,
steps_per_epoch=None, epochs=1, verbose=1, callbacks=None, validation_data=None, validation_steps=None,
validation_freq=1, class_weight=None, max_queue_size=10, workers=1, use_multiprocessing=False, shuffle=False,
initial_epoch=0)``, then save_weights('realness_classifier.h5').

Changed: the glob root is ``$DOCTOR_SCRIPTS_DATA/realness_discriminator/images/`` (two run folders of 240 generated
256x128 street frames and their edits, a pasted box, for the source's 2048x1024 Cityscapes PNGs) for
/home/adwiii/git/perception_fuzzing/src/images; the Conv2D filters a quarter of the source's (6, 9, 12, 16, 16 for
24, 36, 48, 64, 64); batch_size 50 for 100; epochs 3 for 1; fit_generator -> fit (gone from Keras 3), and with it
max_queue_size, workers and use_multiprocessing (the source's values, Keras 3's defaults) moved to DatasetGenerator's
``super().__init__`` (Keras 3's PyDataset takes them there); save_weights left out (it wrote to the repository, and
Keras 3 wants a .weights.h5 name); the unused imports (MaxPooling2D, Activation, Lambda, Input) left out.
"""

import glob
import math
import os

import cv2
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import Sequential
from tensorflow.keras.layers import ELU, Conv2D, Dense, Dropout, Flatten

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "realness_discriminator")


def get_model():
    model = Sequential()
    # 5x5 Convolutional layers with stride of 2x2

    # 5x5 Convolutional layers with stride of 2x2
    model.add(Conv2D(6, 5, 2, name='conv1'))
    model.add(ELU(name='elu1'))
    model.add(Conv2D(9, 5, 2, name='conv2'))
    model.add(ELU(name='elu2'))
    model.add(Conv2D(12, 5, 2, name='conv3'))
    model.add(ELU(name='elu3'))

    # 3x3 Convolutional layers with stride of 1x1
    model.add(Conv2D(16, 3, 1, name='conv4'))
    model.add(ELU(name='elu4'))
    model.add(Conv2D(16, 3, 1, name='conv5'))
    model.add(ELU(name='elu5'))

    # Flatten before passing to the fully connected layers
    model.add(Flatten())
    # Three fully connected layers
    model.add(Dense(100, name='fc1'))
    model.add(Dropout(.5, name='do1'))
    model.add(ELU(name='elu6'))
    model.add(Dense(50, name='fc2'))
    model.add(Dropout(.5, name='do2'))
    model.add(ELU(name='elu7'))
    model.add(Dense(10, name='fc3'))
    model.add(Dropout(.5, name='do3'))
    model.add(ELU(name='elu8'))
    model.add(Dense(1, input_dim=1, activation='sigmoid'))
    model.compile(loss='binary_crossentropy', optimizer='adam', metrics=['accuracy'])
    return model


class DatasetGenerator(keras.utils.Sequence):
    def __init__(self, batch_size=50):
        super().__init__(workers=1, use_multiprocessing=False, max_queue_size=10)
        self.x = []
        self.y = []
        for img_file in glob.glob(os.path.join(DATA, "images/**/*_edit.png")):
            self.x.append(img_file)
            self.y.append(1)  # edit class is 1
        for img_file in glob.glob(os.path.join(DATA, "images/**/*_orig.png")):
            self.x.append(img_file)
            self.y.append(0)  # orig class is 1
        self.batch_size = batch_size

    def __len__(self):
        return math.ceil(len(self.x) / self.batch_size)

    def __getitem__(self, idx):
        batch_x = self.x[idx * self.batch_size:(idx + 1) * self.batch_size]
        batch_y = self.y[idx * self.batch_size:(idx + 1) * self.batch_size]
        x_arr = np.array([cv2.imread(file_name) for file_name in batch_x], dtype=np.float32)
        y_arr = np.array(batch_y)
        # print(x_arr.shape, x_arr.dtype)
        # print(y_arr.shape, y_arr.dtype)
        return x_arr, y_arr


def main():
    with tf.device("gpu:0"):
        data_generator = DatasetGenerator()
        model = get_model()
        model.fit(data_generator, steps_per_epoch=None, epochs=3, verbose=1,
                  callbacks=None, validation_data=None, validation_steps=None,
                  validation_freq=1, class_weight=None, shuffle=False, initial_epoch=0)


if __name__ == '__main__':
    main()
