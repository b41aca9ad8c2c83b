"""FIXED COPY (the one fix: each voxel grid is np.load-ed once and kept in memory).

VoxNet on ModelNet10 voxel grids, training: DeepLearning/VoxNet/model.py of PFIAir, a 3D CNN fitted over
MY_Generator, a keras Sequence that ``np.load``s each example's .npy occupancy grid for every batch.

Source: https://github.com/drexelsystemslab/PFIAir at 3ba9ad081432b5c7b86f1323b0db1d114a28857e
(DeepLearning/VoxNet/model.py and DeepLearning/VoxNet/sequence.py; the .npy files and the label CSVs are
written by DeepLearning/VoxNet/convertShapenet.py). Re-written here in the source's structure and order, not
copied: the Sequential model (Conv3D 32 filters 5^3 stride 2, Conv3D 32 filters 3^3, MaxPooling3D 2, Flatten,
Dense 128 softmax, Dense num_classes relu: the source's activations, kept as written) compiled with rmsprop,
categorical cross-entropy and accuracy; train_labels.csv and test_labels.csv read with csv.reader, the header
skipped, the rows shuffled with random.shuffle, labels one-hot by to_categorical; MY_Generator.__len__ is
ceil(n / batch_size) and __getitem__ slices the file names and labels and returns
``np.array([np.load(f) for f in batch_x]), np.array(batch_y)``; ``fit_generator(generator, steps_per_epoch=n //
batch_size, epochs, verbose=1, validation_data=None, validation_steps=None, use_multiprocessing=True)``.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/voxnet_modelnet``: ModelNet10's layout, 1280 train and 320 test
generated 32^3 grids; the CSVs hold paths relative to that folder, joined to it when read, for the source's
absolute paths); the Conv3D filters 8 for 32 and Dense 64 for 128 (a step runs on 2 CPU cores); batch_size 128
for 512; epochs 3 for 10; ``K.set_learning_phase(1)`` left out (gone from Keras 3; fit sets the training phase);
``fit_generator(..., use_multiprocessing=True)`` -> ``fit(...)`` (Keras 3 has no fit_generator and takes
workers and use_multiprocessing on the PyDataset, not on fit; with the source's default of one worker, the
flag changed nothing); ``super().__init__()`` added to MY_Generator (Keras 3's PyDataset wants it); the
plots, model.save, to_json and the evaluation after the fit left out (not part of the fit).
"""

import csv
import os
import random

import numpy as np
import tensorflow.keras as keras
import tensorflow.keras.utils as utils
from tensorflow.keras.initializers import glorot_uniform
from tensorflow.keras.layers import Conv3D, Dense, Flatten, Input, MaxPooling3D
from tensorflow.keras.models import Sequential

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "voxnet_modelnet")


# ----------------------------------------------------------------------------- sequence.py
class MY_Generator(keras.utils.Sequence):

    def __init__(self, filenames, labels, batch_size):
        super().__init__()
        self.filenames, self.labels = filenames, labels
        self.batch_size = batch_size
        self.loaded = {}  # the fix: each grid loaded once

    def __len__(self):
        return int(np.ceil(len(self.filenames) / float(self.batch_size)))

    def __getitem__(self, idx):
        batch_x = self.filenames[idx * self.batch_size:(idx + 1) * self.batch_size]
        batch_y = self.labels[idx * self.batch_size:(idx + 1) * self.batch_size]

        for file_name in batch_x:
            if file_name not in self.loaded:
                self.loaded[file_name] = np.load(os.path.join(DATA, file_name))
        return np.array([self.loaded[file_name] for file_name in batch_x]), np.array(batch_y)


# ----------------------------------------------------------------------------- model.py
num_classes = 10
input_shape = (32, 32, 32, 1)
model = Sequential()
model.add(Input(input_shape))
model.add(Conv3D(8, (5, 5, 5), strides=(2, 2, 2), data_format="channels_last", name="conv1",
                 kernel_initializer=glorot_uniform(seed=0)))
model.add(Conv3D(8, (3, 3, 3), strides=(1, 1, 1), data_format="channels_last", name="conv2",
                 kernel_initializer=glorot_uniform(seed=0)))
model.add(MaxPooling3D(pool_size=(2, 2, 2), strides=None, padding="valid"))
model.add(Flatten())
model.add(Dense(64, activation="softmax", name="fc3", kernel_initializer=glorot_uniform(seed=0)))
model.add(Dense(num_classes, activation="relu", name="fc3_" + str(num_classes), kernel_initializer=glorot_uniform(seed=0)))

model.compile(optimizer="rmsprop", loss="categorical_crossentropy", metrics=["accuracy"])


with open(os.path.join(DATA, "train_labels.csv")) as csvfile:
    readCSV = csv.reader(csvfile, delimiter=",")
    next(readCSV)
    filelist = list(readCSV)
    random.shuffle(filelist)
    train_filelist = np.array(filelist)
    train_filenames = train_filelist[:, 0]
    train_labels = train_filelist[:, 1]
    train_labels = train_labels.astype(int)
    train_labels = utils.to_categorical(train_labels, num_classes=num_classes)

with open(os.path.join(DATA, "test_labels.csv")) as csvfile:
    readCSV = csv.reader(csvfile, delimiter=",")
    next(readCSV)
    filelist = list(readCSV)
    random.shuffle(filelist)
    test_filelist = np.array(filelist)
    test_filenames = test_filelist[:, 0]
    test_labels = test_filelist[:, 1]
    test_labels = test_labels.astype(int)
    test_labels = utils.to_categorical(test_labels, num_classes=num_classes)

batch_size = 128
num_epochs = 3
my_training_batch_generator = MY_Generator(train_filenames, train_labels, batch_size)
my_test_batch_generator = MY_Generator(test_filenames, test_labels, batch_size)
my_validation_batch_generator = MY_Generator(test_filenames, test_labels, batch_size)

num_training_samples = train_filenames.shape[0]
num_validation_samples = test_filenames.shape[0]

print(num_training_samples // batch_size)
history = model.fit(my_training_batch_generator,
                    steps_per_epoch=(num_training_samples // batch_size),
                    epochs=num_epochs,
                    verbose=1,
                    validation_data=None,
                    validation_steps=None)

print(history.history.keys())
