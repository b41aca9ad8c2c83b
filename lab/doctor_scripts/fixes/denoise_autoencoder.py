"""FIXED COPY (the one fix: each image pair is read once and kept in memory; no pool once all are read).

Image denoising with a convolutional autoencoder, training: NeuralNetworkTraining.ipynb of Le Debruiteur, the
autoencoder fitted over DataGenerator, a keras Sequence whose ``__getitem__`` opens a ``multiprocessing.Pool`` for
every batch and reads the batch's clean and noised images with ``cv2.imread`` in it.

Source: https://github.com/RomainCapo/ledebruiteur at 7f4d83aeba7054204770d45e1bb02d9039fa6a64
(debruiteur/generator/datagenerator.py; the training cells of NeuralNetworkTraining.ipynb at 284796c3b008,
build_conv_autoencoder of debruiteur/models/autoencoders.py at 3488641d24fa, split_train_val_df of
debruiteur/utils/utils.py). Re-written here in the source's structure and order, not copied: DataGenerator(
images_paths, img_shape=(100, 100, 1), batch_size=32, shuffle=False) keeps the DataFrame of (original, noised)
paths; __len__ is floor(n / batch_size); on_epoch_end re-computes the indexes (shuffled only if shuffle, which the
notebook leaves False); __getitem__ slices the indexes and, ``with mp.Pool() as pool``, ``pool.starmap(cv2.imread,
zip(paths, [cv2.IMREAD_GRAYSCALE] * batch_size))`` for the originals and again for the noised images, divides by
255 and adds the channel axis, returning (noised, original); split_train_val_df masks ``np.random.rand(len(df)) <
0.8``; build_conv_autoencoder is Conv2D 64/32/16/16 (3x3, relu, same) with MaxPool2D 2 after the first three, then
UpSampling2D 2 + Conv2D 32, UpSampling2D 2 + Conv2D 64 (valid), UpSampling2D 2 + Conv2D 1 sigmoid, compiled with
adam and mse; the notebook fits ``ae_model.fit_generator(train_gen, validation_data=val_gen, epochs=10)``.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/denoise_autoencoder``: 80 generated 100x100 images and their 6 noised
copies, 480 pairs, listed in dataframes/noised.csv with paths relative to that folder, joined to it when read, for
the notebook's make_original/resized/noised_dataframe over Caltech-101, which write the images and build the same
DataFrame); the DataFrame read with ``pandas.read_csv``; the autoencoder's filters a quarter of the source's
(16/8/4/4, 8/16 for 64/32/16/16, 32/64: a step of the source's took 450 ms on 2 CPU cores); epochs 3 for 10; ``fit_generator`` -> ``fit`` (Keras 3
has none); ``super().__init__()`` added to DataGenerator (Keras 3's PyDataset wants it); plot_model_loss and
save_model after the fit left out (no matplotlib here; not part of the fit).
"""

import multiprocessing as mp
import os

import cv2
import numpy as np
import pandas as pd
from tensorflow.keras.layers import Conv2D, MaxPool2D, UpSampling2D
from tensorflow.keras.models import Sequential
from tensorflow.keras.utils import Sequence

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "denoise_autoencoder")


# ----------------------------------------------------------------------------- debruiteur/generator/datagenerator.py
class DataGenerator(Sequence):
    """Keras Sequence image data generator"""

    def __init__(self,
                 images_paths,
                 img_shape=(100, 100, 1),
                 batch_size=32,
                 shuffle=False):
        super().__init__()
        self.images_paths = images_paths
        self.img_shape = img_shape
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.loaded = {}
        self.on_epoch_end()

    def __len__(self):
        return int(np.floor(len(self.images_paths) / self.batch_size))

    def on_epoch_end(self):
        """Compute indexes on epoch end"""
        self.indexes = np.arange(len(self.images_paths))
        if self.shuffle:
            np.random.shuffle(self.indexes)

    def __getitem__(self, index):
        indexes = self.indexes[index *
                               self.batch_size: (index + 1) * self.batch_size]

        if not all(k in self.loaded for k in indexes):  # the fix: each pair read once, kept in memory
            with mp.Pool() as pool:
                images = pool.starmap(
                    cv2.imread, zip([self.images_paths.iloc[k, 0] for k in indexes], [cv2.IMREAD_GRAYSCALE] * self.batch_size))
                noised_images = pool.starmap(
                    cv2.imread, zip([self.images_paths.iloc[k, 1] for k in indexes], [cv2.IMREAD_GRAYSCALE] * self.batch_size))
            self.loaded.update(zip(indexes, zip(images, noised_images)))
        images = [self.loaded[k][0] for k in indexes]
        noised_images = [self.loaded[k][1] for k in indexes]

        images = np.array(images, np.float32) / 255
        noised_images = np.array(noised_images, np.float32) / 255

        y = images[..., np.newaxis]
        x = noised_images[..., np.newaxis]

        return x, y


# ----------------------------------------------------------------------------- debruiteur/models/autoencoders.py
def build_conv_autoencoder(input_shape=(100, 100, 1), optimizer="adam", loss="mse"):
    ae_model = Sequential()

    # Encoder
    ae_model.add(Conv2D(16, (3, 3), input_shape=input_shape,
                        activation="relu", padding="same"))
    ae_model.add(MaxPool2D((2, 2), padding="same"))
    ae_model.add(Conv2D(8, (3, 3), activation="relu", padding="same"))
    ae_model.add(MaxPool2D((2, 2), padding="same"))
    ae_model.add(Conv2D(4, (3, 3), activation="relu", padding="same"))
    ae_model.add(MaxPool2D((2, 2), padding="same"))
    ae_model.add(Conv2D(4, (3, 3), activation="relu", padding="same"))

    # Decoder
    ae_model.add(UpSampling2D((2, 2)))
    ae_model.add(Conv2D(8, (3, 3), activation="relu", padding="same"))
    ae_model.add(UpSampling2D((2, 2)))
    ae_model.add(Conv2D(16, (3, 3), activation="relu"))
    ae_model.add(UpSampling2D((2, 2)))
    ae_model.add(Conv2D(1, (3, 3), padding="same", activation="sigmoid"))

    ae_model.compile(optimizer=optimizer, loss=loss)

    return ae_model


# ----------------------------------------------------------------------------- debruiteur/utils/utils.py
def split_train_val_df(df, p=0.8):
    if type(df) != pd.DataFrame:
        raise ValueError("Df must be panda's DataFrame")
    if 0 <= p >= 1:
        raise ValueError("p must be a probability in ]0;1[")

    msk = np.random.rand(len(df)) < p
    return df[msk], df[~msk]


# ----------------------------------------------------------------------------- NeuralNetworkTraining.ipynb
if __name__ == "__main__":
    df_noised = pd.read_csv(os.path.join(DATA, "dataframes", "noised.csv"))
    df_noised["original"] = [os.path.join(DATA, p) for p in df_noised["original"]]
    df_noised["noised"] = [os.path.join(DATA, p) for p in df_noised["noised"]]
    df_train, df_val = split_train_val_df(df_noised)

    train_gen = DataGenerator(df_train)
    val_gen = DataGenerator(df_val)

    ae_model = build_conv_autoencoder()
    ae_model.summary()

    history = ae_model.fit(train_gen, validation_data=val_gen, epochs=3)
