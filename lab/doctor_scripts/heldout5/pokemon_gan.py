"""Pokemon image generation with a DCGAN, training: image-generation/train.py and gan.py of Deep-Learning-PokeMon, a
custom loop of ``train_on_batch`` calls (the discriminator on a half batch of real images, then on a half batch of
generated ones, then the adversarial model on noise), the real images drawn each batch from an ImageDataGenerator's
``flow`` (random zoom, shifts and rotation of each image) and the fake ones by ``generator.predict``.

Source: https://github.com/Avinashpathapati/Deep-Learning-PokeMon at 081be9a31e82b3025d3729ac6cefd4982c0b265a
(image-generation/train.py, gan.py, preprocessing.py; utility.py's load_images and randomize). Re-written here in the
source's structure and order, not copied: train.py loads the images of one species with cv2.imread, shuffles them
(random.Random(1)), preprocesses them (cv2.resize to 64x64 INTER_AREA, to [-1, 1]), builds GAN(64, 64, 3) and
trains it with ``ImageDataGenerator(zoom_range=0.2, width_shift_range=0.2, height_shift_range=0.2,
rotation_range=10)``, epochs 15000, batch 32, save_interval 20; GAN.train takes ``data_generator.flow(images,
batch_size=16)`` and for each of len(images) // 32 batches per epoch: ``next()`` real images (again if short),
``generator.predict`` on 16 noise vectors, ``discriminator.train_on_batch`` on the real then the fake half,
``adversarial.train_on_batch`` on 32 noise vectors labelled real; the discriminator is Conv2D 128/256/512/1024 5x5
stride 2 with BatchNorm and LeakyReLU(0.2), Dense 1 sigmoid, compiled with Adam(0.0002, 0.5) and binary cross-entropy;
the generator Dense to 4x4x1024, Conv2DTranspose 512/256/128 with BatchNorm and ReLU, Conv2DTranspose 3 tanh; the
adversarial model the generator then the frozen discriminator.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/pokemon_gan/pokemon-data/Charmander``: 256 generated 96x96 JPEGs);
epochs 3 for 15000 (save_interval 20 kept: no save in 3 epochs); the filters an eighth of the source's
(discriminator 16/32/64/128, generator 128/64/32/16); ImageDataGenerator (gone from Keras 3) re-written in
NumPy/cv2 as Keras 2 draws it (per image a rotation in +-10 degrees, shifts in +-20 %, zooms in 0.8-1.2 on each axis,
fill 'nearest'; applied with cv2.warpAffine where Keras used scipy.ndimage, not installed here; ``flow`` shuffles once
per pass and yields batches of 16); Keras 1/2 names ported to Keras 3 (keras.layers.convolutional/core ->
keras.layers, ``K.set_image_dim_ordering("tf")`` dropped, Adam(lr=) -> learning_rate=, LeakyReLU(alpha=) ->
negative_slope=, Dense(input_dim=100) -> an Input); ``discriminator.trainable`` set True before the discriminator's
two train_on_batch calls and False before the adversarial's (Keras 3 reads it when a model's train step is first
traced: the source's one ``trainable = False`` before compiling the adversarial model would leave the discriminator
with no trainable weights of its own); the adversarial model compiled with an Adam of its own, the same settings
(a Keras 3 optimizer serves only the variables it was built with); utility's normalize written in place; the history plots and
model saving every save_interval epochs kept but never reached.
"""

import os
import random

import cv2 as cv
import numpy as np
from keras.layers import (
    Activation,
    BatchNormalization,
    Conv2D,
    Conv2DTranspose,
    Dense,
    Flatten,
    Input,
    LeakyReLU,
    Reshape,
)
from keras.models import Model, Sequential
from keras.optimizers import Adam

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "pokemon_gan")


# ----------------------------------------------------------------------------- keras.preprocessing.image (Keras 2)
class ImageDataGenerator:
    def __init__(self, zoom_range=0.0, width_shift_range=0.0, height_shift_range=0.0, rotation_range=0):
        self.zoom_range = [1 - zoom_range, 1 + zoom_range]
        self.width_shift_range = width_shift_range
        self.height_shift_range = height_shift_range
        self.rotation_range = rotation_range

    def random_transform(self, x):
        h, w = x.shape[0], x.shape[1]
        theta = np.random.uniform(-self.rotation_range, self.rotation_range)
        tx = np.random.uniform(-self.height_shift_range, self.height_shift_range) * h
        ty = np.random.uniform(-self.width_shift_range, self.width_shift_range) * w
        zx, zy = np.random.uniform(self.zoom_range[0], self.zoom_range[1], 2)
        m = cv.getRotationMatrix2D((w / 2, h / 2), theta, 1.0)
        m[:, :2] = m[:, :2] @ np.diag([1 / zy, 1 / zx])
        m[:, 2] = (np.eye(2) - m[:, :2]) @ np.array([w / 2, h / 2]) + np.array([ty, tx])
        return cv.warpAffine(x, m, (w, h), flags=cv.INTER_LINEAR, borderMode=cv.BORDER_REPLICATE)

    def flow(self, x, batch_size=32):
        return NumpyArrayIterator(x, self, batch_size)


class NumpyArrayIterator:
    def __init__(self, x, image_data_generator, batch_size):
        self.x, self.gen, self.batch_size = x, image_data_generator, batch_size
        self.index_array, self.position = None, 0

    def next(self):
        if self.index_array is None or self.position >= len(self.x):
            self.index_array, self.position = np.random.permutation(len(self.x)), 0
        index = self.index_array[self.position:self.position + self.batch_size]
        self.position += self.batch_size
        return np.array([self.gen.random_transform(self.x[j]) for j in index], np.float32)


# ----------------------------------------------------------------------------- utility.py, preprocessing.py
def read_image(path):
    return cv.imread(path, cv.IMREAD_COLOR)


def load_images(path, name):
    print("loading images...")
    images = []
    for filename in os.listdir(path + "/" + name + "/"):
        images.append(read_image(path + "/" + name + "/" + filename))
    return images


def randomize(images):
    print("shuffling images...")
    random.Random(1).shuffle(images)


def normalize(images, pixel_range=(-1, 1)):
    return (images / 255.0) * (pixel_range[1] - pixel_range[0]) + pixel_range[0]


def preprocess(images):
    print("preprocessing images...")
    images = [cv.resize(x, (64, 64), interpolation=cv.INTER_AREA) for x in images]
    images = np.array(images)
    images = normalize(images, pixel_range=(-1, 1))
    return images


# ----------------------------------------------------------------------------- gan.py
class GAN():
    def __init__(self, height, width, depth):
        self.height = height
        self.width = width
        self.depth = depth
        self.__build()

    def __build(self):
        optimizer = Adam(learning_rate=0.0002, beta_1=0.5)

        # Build the generator and discriminator and compile the discriminator.
        self.generator = self.__build_generator()
        self.discriminator = self.__build_discriminator()
        self.discriminator.compile(loss="binary_crossentropy", optimizer=optimizer, metrics=["accuracy"])

        # Build and compile the adversarial network.
        self.discriminator.trainable = False
        noise = Input(shape=(100,))
        fake_image = self.generator(noise)
        label = self.discriminator(fake_image)
        self.adversarial = Model(noise, label)
        self.adversarial.compile(loss="binary_crossentropy", optimizer=Adam(learning_rate=0.0002, beta_1=0.5))

    def __build_discriminator(self):
        input_shape = (self.height, self.width, self.depth)
        model = Sequential()
        model.add(Input(shape=input_shape))
        for filters in (16, 32, 64, 128):
            model.add(Conv2D(filters, kernel_size=5, strides=2, padding="same"))
            model.add(BatchNormalization())
            model.add(LeakyReLU(negative_slope=0.2))
        model.add(Flatten())
        model.add(Dense(1, activation="sigmoid"))
        return model

    def __build_generator(self):
        height = int(self.height / 16)
        width = int(self.width / 16)
        model = Sequential()
        model.add(Input(shape=(100,)))
        model.add(Dense(height * width * 128))
        model.add(Reshape((height, width, 128)))
        for filters in (64, 32, 16):
            model.add(Conv2DTranspose(filters, kernel_size=5, strides=2, padding="same"))
            model.add(BatchNormalization())
            model.add(Activation("relu"))
        model.add(Conv2DTranspose(self.depth, kernel_size=5, strides=2, padding="same"))
        model.add(Activation("tanh"))
        return model

    def train(self, images, epochs, batch_size, output_path, save_interval, data_generator):
        if batch_size > images.shape[0]:
            raise ValueError("batch size should be less than size of data")

        batches = int(images.shape[0] / batch_size)
        training_generator = data_generator.flow(images, batch_size=int(batch_size / 2))

        discriminator_history_real = []
        discriminator_history_fake = []
        generator_history = []
        for epoch in range(1, epochs + 1):
            discriminator_statistics_real = []
            discriminator_statistics_fake = []
            generator_statistics = []
            for _ in range(batches):
                real_images = training_generator.next()
                if real_images.shape[0] != int(batch_size / 2):
                    real_images = training_generator.next()
                real_labels = np.ones((int(batch_size / 2), 1))

                noise = np.random.normal(0, 1, (int(batch_size / 2), 100))
                fake_images = self.generator.predict(noise, verbose=0)
                fake_labels = np.zeros((int(batch_size / 2), 1))

                self.discriminator.trainable = True  # Keras 3: see the docstring
                discriminator_statistics_real.append(self.discriminator.train_on_batch(real_images, real_labels))
                discriminator_statistics_fake.append(self.discriminator.train_on_batch(fake_images, fake_labels))

                noise = np.random.normal(0, 1, (batch_size, 100))
                real_labels = np.ones((batch_size, 1))

                self.discriminator.trainable = False
                generator_statistics.append(self.adversarial.train_on_batch(noise, real_labels))

            discriminator_history_real.append(np.average(discriminator_statistics_real, axis=0))
            discriminator_history_fake.append(np.average(discriminator_statistics_fake, axis=0))
            generator_history.append(np.average(generator_statistics, axis=0))

            print("Epoch %d/%d" % (epoch, epochs))
            print("Discriminator: [loss real: %f, acc real: %.2f%%, loss fake: %f, acc fake: %.2f%%]"
                  % (discriminator_history_real[-1][0], 100 * discriminator_history_real[-1][1],
                     discriminator_history_fake[-1][0], 100 * discriminator_history_fake[-1][1]))
            print("Generator: [loss: %f]" % generator_history[-1])

            if epoch % save_interval == 0:
                self.save_models(output_path + "/epoch-" + str(epoch))

    def save_models(self, path):
        os.makedirs(str(path), exist_ok=True)
        self.generator.save(str(path) + "/generator.keras")
        self.discriminator.save(str(path) + "/discriminator.keras")


# ----------------------------------------------------------------------------- train.py
if __name__ == "__main__":
    images = load_images(os.path.join(DATA, "pokemon-data"), "Charmander")

    randomize(images)
    images = preprocess(images)

    gan = GAN(images.shape[1], images.shape[2], images.shape[3])

    data_generator = ImageDataGenerator(zoom_range=0.2, width_shift_range=0.2, height_shift_range=0.2, rotation_range=10)

    gan.train(images, epochs=3, batch_size=32, output_path="./output", save_interval=20, data_generator=data_generator)
