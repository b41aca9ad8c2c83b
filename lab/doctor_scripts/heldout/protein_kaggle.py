"""Human Protein Atlas baseline (the "exploration and baseline" kernel's pipeline), training script: a keras
Sequence whose per-example load reads four PNG channels, keeps one, resizes, and looks its targets up in
a DataFrame.

Source: https://github.com/huutrinh68/kaggle-protein (data_generator.py at
01a9d0afc3f0732f2695fc5a65d971d9d34e87ff, preprocessing.py and pipline.py at
a640c7e018afe4a5916b07192dbbe52877f6e150). Kept as written: DataGenerator(keras.utils.Sequence) with
on_epoch_end, get_targets_per_image (``self.labels.loc[self.labels.Id==identifier].drop([...]).values`` for
every example), __data_generation, __len__ (floor) and __getitem__; ImagePreprocessor (load_image reads the
green, blue, red and yellow PNGs into a float64 array and returns the first n_channels; preprocess =
resize, reshape, normalize); the pipeline's 3-fold split of the Ids (first fold), the training and
validation generators built from the same labels, parameter and preprocessor.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/protein_kaggle``: 450 generated examples, 4 channels of 256x256
PNGs instead of 512x512); the images are read with PIL (the source's ``imread`` comes from its helper
imports) and skimage's resize (not installed) is cv2.resize; ModelParameter (model_parameter.py, not read)
is a small class with the kernel's fields: n_channels 1, scaled 64x64 (row/col scale factor 4), batch 16,
28 classes, shuffle False; RepeatedKFold -> the same first fold of a seeded 3-way split in NumPy; the
train_labels table (one column per target name, Target, number_of_targets) is built from train.csv as the
kernel does (fill_targets keeps Target a string: pandas 3 stores no array in a cell); BaseLineModel (not read) is a small CNN compiled with binary cross-entropy, and its learn() a
plain ``fit(training_generator, validation_data=validation_generator, epochs=3)``; the plots left out.
"""

import os

import cv2
import keras
import numpy as np
import pandas as pd
from PIL import Image

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "protein_kaggle")
train_path = DATA + "/train/"


def imread(path):
    return np.array(Image.open(path))


class ModelParameter:
    def __init__(self, basepath, num_classes=28, image_rows=256, image_cols=256, batch_size=16, n_channels=1,
                 row_scale_factor=4, col_scale_factor=4, shuffle=False, n_epochs=3):
        self.basepath = basepath
        self.num_classes = num_classes
        self.image_rows = image_rows
        self.image_cols = image_cols
        self.batch_size = batch_size
        self.n_channels = n_channels
        self.shuffle = shuffle
        self.row_scale_factor = row_scale_factor
        self.col_scale_factor = col_scale_factor
        self.scaled_row_dim = int(self.image_rows / self.row_scale_factor)
        self.scaled_col_dim = int(self.image_cols / self.col_scale_factor)
        self.n_epochs = n_epochs


class ImagePreprocessor:

    def __init__(self, modelparameter):
        self.parameter = modelparameter
        self.basepath = self.parameter.basepath
        self.scaled_row_dim = self.parameter.scaled_row_dim
        self.scaled_col_dim = self.parameter.scaled_col_dim
        self.n_channels = self.parameter.n_channels

    def preprocess(self, image):
        image = self.resize(image)
        image = self.reshape(image)
        image = self.normalize(image)
        return image

    def resize(self, image):
        image = cv2.resize(image, (self.scaled_col_dim, self.scaled_row_dim))
        return image

    def reshape(self, image):
        image = np.reshape(image, (image.shape[0], image.shape[1], self.n_channels))
        return image

    def normalize(self, image):
        image /= 255
        return image

    def load_image(self, image_id):
        image = np.zeros(shape=(256,256,4))
        image[:,:,0] = imread(self.basepath + image_id + "_green" + ".png")
        image[:,:,1] = imread(self.basepath + image_id + "_blue" + ".png")
        image[:,:,2] = imread(self.basepath + image_id + "_red" + ".png")
        image[:,:,3] = imread(self.basepath + image_id + "_yellow" + ".png")
        return image[:,:,0:self.parameter.n_channels]


class DataGenerator(keras.utils.Sequence):

    def __init__(self, list_IDs, labels, modelparameter, imagepreprocessor):
        super().__init__()
        self.params = modelparameter
        self.labels = labels
        self.list_IDs = list_IDs
        self.dim = (self.params.scaled_row_dim, self.params.scaled_col_dim)
        self.batch_size = self.params.batch_size
        self.n_channels = self.params.n_channels
        self.num_classes = self.params.num_classes
        self.shuffle = self.params.shuffle
        self.preprocessor = imagepreprocessor
        self.on_epoch_end()

    def on_epoch_end(self):
        self.indexes = np.arange(len(self.list_IDs))
        if self.shuffle == True:
            np.random.shuffle(self.indexes)

    def get_targets_per_image(self, identifier):
        return self.labels.loc[self.labels.Id==identifier].drop(
                ["Id", "Target", "number_of_targets"], axis=1).values

    def __data_generation(self, list_IDs_temp):
        'Generates data containing batch_size samples' # X : (n_samples, *dim, n_channels)
        # Initialization
        X = np.empty((self.batch_size, *self.dim, self.n_channels))
        y = np.empty((self.batch_size, self.num_classes), dtype=int)
        # Generate data
        for i, identifier in enumerate(list_IDs_temp):
            # Store sample
            image = self.preprocessor.load_image(identifier)
            image = self.preprocessor.preprocess(image)
            X[i] = image
            # Store class
            y[i] = self.get_targets_per_image(identifier)
        return X, y

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


class BaseLineModel:
    def __init__(self, modelparameter):
        self.params = modelparameter
        self.input_shape = (self.params.scaled_row_dim, self.params.scaled_col_dim, self.params.n_channels)

    def build_model(self):
        L = keras.layers
        self.model = keras.Sequential([
            keras.Input(self.input_shape),
            L.Conv2D(16, kernel_size=(3, 3), activation="relu"),
            L.Conv2D(32, (3, 3), activation="relu"),
            L.MaxPooling2D(pool_size=(2, 2)),
            L.Dropout(0.25),
            L.Flatten(),
            L.Dense(64, activation="relu"),
            L.Dropout(0.5),
            L.Dense(self.params.num_classes, activation="sigmoid"),
        ])

    def compile_model(self):
        self.model.compile(loss=keras.losses.binary_crossentropy, optimizer=keras.optimizers.Adadelta(),
                           metrics=["accuracy"])

    def set_generators(self, train_generator, validation_generator):
        self.training_generator = train_generator
        self.validation_generator = validation_generator

    def learn(self):
        return self.model.fit(self.training_generator, validation_data=self.validation_generator,
                              epochs=self.params.n_epochs)


if __name__ == "__main__":
    label_names = {i: f"class_{i}" for i in range(28)}
    train_labels = pd.read_csv(DATA + "/train.csv")
    for key in label_names.keys():
        train_labels[label_names[key]] = 0

    def fill_targets(row):
        targets = np.array(row.Target.split(" ")).astype(int)  # pandas 3 keeps no array in a cell
        for num in targets:
            name = label_names[int(num)]
            row.loc[name] = 1
        return row

    train_labels = train_labels.apply(fill_targets, axis=1)
    train_labels["number_of_targets"] = train_labels.drop(["Id", "Target"], axis=1).sum(axis=1)

    # K-Fold Cross-Validation (first fold of three)
    idx = np.random.RandomState(0).permutation(len(train_labels))
    test_idx, train_idx = idx[: len(idx) // 3], idx[len(idx) // 3:]
    partition = {"train": train_labels.Id.values[train_idx], "validation": train_labels.Id.values[test_idx]}

    parameter = ModelParameter(train_path)
    preprocessor = ImagePreprocessor(parameter)
    labels = train_labels

    training_generator = DataGenerator(partition['train'], labels, parameter, preprocessor)
    validation_generator = DataGenerator(partition['validation'], labels, parameter, preprocessor)

    model = BaseLineModel(parameter)
    model.build_model()
    model.compile_model()
    model.set_generators(training_generator, validation_generator)
    history = model.learn()
