"""Sign-language video frames, training: inceptionv3_classifier.py of final-project-src, a frozen InceptionV3 with a new
head (global average pooling, Dense 100, Dense 48 softmax) fitted on DataGenerator, a keras Sequence that opens,
decodes and scales every frame of a batch with ``keras.preprocessing.image.load_img`` (PIL) each time the batch is
asked for, every epoch, and validated on the test frames read the same way.

Source: https://github.com/fabianaferreira/final-project-src at ddd2aba43c492ba09e9940c6c22bc066b5ff33ba
(Classifier/inceptionv3_classifier.py, Classifier/DataGenerator.py). Re-written here in the source's structure and
order, not copied: createModel builds ``InceptionV3(weights='imagenet', include_top=False)``, GlobalAveragePooling2D,
Dense 100 relu, Dense 48 softmax, freezes every layer of the base model and compiles with rmsprop and categorical
cross-entropy; the frame lists and their one-hot labels are np.load-ed from datasets/CNN/*_no_edge_frames.npy
(written by cnn_dataset_generator.py); ``DataGenerator(X_train, y_train, 128, grayscale=False)`` and the same for the
test frames; DataGenerator.__getitem__ slices the batch's file names and labels and returns
``np.array([load_image(f, grayscale) for f in batch_x]), np.array(batch_y)``, load_image being ``img_to_array(
load_img(path, color_mode='rgb')) / 255.0``; callbacks EarlyStopping(patience 10), ModelCheckpoint (best val_loss, .h5
under ./models) and CSVLogger (./logs); ``model.fit_generator(generator=train_gen, steps_per_epoch=len(train_gen),
epochs=1000, verbose=1, validation_data=test_gen, validation_steps=len(test_gen), callbacks=callbacks)``.

Changed: data paths (``$DOCTOR_SCRIPTS_DATA/libras_frames/``: 40 generated words of 8 kept 88x120 RGB frames for the
crawled videos' 176x240 ones, 256 training and 64 test frames; the lists' frame paths are relative to that folder and
joined to it after np.load, where the source's were absolute); InceptionV3 weights=None for 'imagenet' (no download
here; the frozen layers cost the same either way); batch 32 for 128; epochs 3 for 1000; fit_generator -> fit (gone
from Keras 3); the models and logs folders under the temporary folder (created: the source's TODO); np.int -> int
(gone from NumPy); ``super().__init__()`` added to DataGenerator (Keras 3's PyDataset wants it); the unused imports
(sklearn, KerasClassifier, gone from Keras 3, layers and optimizers never used) left out.
"""

import os
import tempfile

import numpy as np
from tensorflow.keras.applications.inception_v3 import InceptionV3
from tensorflow.keras.callbacks import CSVLogger, EarlyStopping, ModelCheckpoint
from tensorflow.keras.layers import Dense, GlobalAveragePooling2D
from tensorflow.keras.models import Model
from tensorflow.keras.preprocessing import image
from tensorflow.keras.utils import Sequence

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "libras_frames")
OUT = os.path.join(tempfile.gettempdir(), "libras_frames_out")


# ----------------------------------------------------------------------------- DataGenerator.py
class DataGenerator(Sequence):

    def __init__(self, image_filenames, labels, batch_size, grayscale=True):
        super().__init__()
        self.image_filenames = image_filenames
        self.labels = labels
        self.batch_size = batch_size
        self.grayscale = grayscale

    def __len__(self):
        return (np.ceil(len(self.image_filenames) / float(self.batch_size))).astype(int)

    def __getitem__(self, idx):
        batch_x = self.image_filenames[idx *
                                       self.batch_size: (idx + 1) * self.batch_size]
        batch_y = self.labels[idx * self.batch_size: (idx + 1) * self.batch_size]

        return (
            np.array([load_image(file_name, self.grayscale) for file_name in batch_x]),
            np.array(batch_y)
        )


def load_image(image_path, grayscale=True):
    color_mode = 'grayscale' if grayscale else 'rgb'
    img = image.load_img(image_path, color_mode=color_mode)
    img = image.img_to_array(img) / 255.0
    return img


# ----------------------------------------------------------------------------- inceptionv3_classifier.py
def createModel():
    # create the base pre-trained model
    base_model = InceptionV3(weights=None, include_top=False)

    # add a global spatial average pooling layer
    x = base_model.output
    x = GlobalAveragePooling2D()(x)
    # let's add a fully-connected layer
    x = Dense(100, activation='relu')(x)
    # and a logistic layer -- let's say we have 200 classes
    predictions = Dense(48, activation='softmax')(x)

    # this is the model we will train
    model = Model(inputs=base_model.input, outputs=predictions)

    # first: train only the top layers (which were randomly initialized)
    # i.e. freeze all convolutional InceptionV3 layers
    for layer in base_model.layers:
        layer.trainable = False

    # compile the model (should be done *after* setting layers to non-trainable)
    model.compile(optimizer='rmsprop', loss='categorical_crossentropy')

    return model


# Loading data
X_train = np.load(os.path.join(DATA, 'Classifier/datasets/CNN/X_train_no_edge_frames.npy'))
X_test = np.load(os.path.join(DATA, 'Classifier/datasets/CNN/X_test_no_edge_frames.npy'))
y_train = np.load(os.path.join(DATA, 'Classifier/datasets/CNN/y_train_no_edge_frames.npy'))
y_test = np.load(os.path.join(DATA, 'Classifier/datasets/CNN/y_test_no_edge_frames.npy'))
X_train = np.array([os.path.join(DATA, f) for f in X_train])
X_test = np.array([os.path.join(DATA, f) for f in X_test])

# Creating model
model = createModel()

train_gen = DataGenerator(X_train, y_train, 32, grayscale=False)
test_gen = DataGenerator(X_test, y_test, 32, grayscale=False)

# Defining callbacks
epochs_to_wait_for_improvement = 10
logging_path = os.path.join(OUT, 'logs')
models_path = os.path.join(OUT, 'models')
os.makedirs(logging_path, exist_ok=True)
os.makedirs(models_path, exist_ok=True)
model_name = 'InceptionV3_no_edge_frames'

early_stopping = EarlyStopping(monitor='val_loss', patience=epochs_to_wait_for_improvement)
checkpoint = ModelCheckpoint(f'{models_path}/{model_name}.h5', monitor='val_loss', save_best_only=True, mode='min')
csv_logger = CSVLogger(f'{logging_path}/{model_name}.log')

callbacks = [early_stopping, checkpoint, csv_logger]

print('Training model... You should get a coffee...')
# Fit the model
model.fit(
    train_gen,
    steps_per_epoch=len(train_gen),
    epochs=3,
    verbose=1,
    validation_data=test_gen,
    validation_steps=len(test_gen),
    callbacks=callbacks
)
