"""FIXED COPY (the one fix: each image is opened and decoded once and kept in memory; the augmentation still runs for every pair).

Siamese network on Omniglot, training: train.py of bubbliiiing/Siamese-tf2 (its non-eager path), a VGG16 twin
fitted over Generator.generate, a Python generator that draws random same / different pairs, opens each image
with PIL and runs a PIL / OpenCV augmentation on it for every pair; a second stage fits again at a lower rate.

Source: https://github.com/bubbliiiing/Siamese-tf2 at b7437c1bcc862c374a686c490a43760ea11c9f53 (train.py,
nets/siamese_training.py, nets/siamese.py, nets/vgg.py). Re-written here in the source's structure and order,
not copied: Generator.load_dataset walks images_background/<alphabet>/<character>/ (one class per character),
shuffles the paths with a fixed seed and splits them 90/10 into train and validation; generate() draws, per
batch element, a class with at least three images, two same-class paths, a third of that class and one of
another class (four paths, two pairs: label 1, then 0), and _convert_path_list_to_images_and_labels opens each
image with PIL, runs get_random_data (random aspect jitter and scale, BICUBIC resize, paste on a white canvas at
a random place, a rotation of up to 5 degrees with cv2.warpAffine half the time, an HSV jitter through
cv2.cvtColor in float32), divides by 255 into float64 arrays and permutes the pairs; siamese() feeds both
images through one VGG16 (13 conv layers, 5 max pools, flatten), takes the absolute difference in a Lambda,
Dense(512, relu), Dense(1, sigmoid); train.py computes epoch_step = num_train // Batch_size, compiles with
binary cross-entropy / Adam / binary_accuracy and calls ``fit_generator(generator.generate(True),
steps_per_epoch, validation_data=generator.generate(False), validation_steps, epochs, initial_epoch,
callbacks=[checkpoint, ReduceLROnPlateau, EarlyStopping, TensorBoard])`` for a first stage (Lr 1e-4) and again
for a second stage (Lr 1e-5) with a new Generator.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/siamese_omniglot/datasets``: Omniglot's layout, 4 alphabets of 8
characters of 10 generated 105x105 drawings); input_shape 64x64x3 for 105x105x3 and the VGG16 filters / 8
(8..64 for 64..512) and Dense 64 for 512 (a step runs on 2 CPU cores); Batch_size 8 for 32; epochs: first stage
0..2 for 0..50, second stage 2..4 for 50..100; no pretrained VGG16 weights (model_path ''); ``fit_generator``
-> ``fit``, ``Adam(lr=)`` -> ``Adam(learning_rate=)``, ``np.object`` -> ``object``, ``K.abs`` -> ``ops.abs``
(Keras 3 / NumPy 2); the generator yields a tuple of the two image arrays (Keras 3 reads a list as one input);
utils.callbacks.ModelCheckpoint (the repository's own, with a period) -> keras ModelCheckpoint under a temporary
folder, ``.weights.h5``; TensorBoard left out; the eager branch (from_generator and a GradientTape loop) left out: it raises (off, as in the source).
"""

import os
import random
import tempfile
from random import shuffle

import cv2
import numpy as np
import tensorflow as tf
from keras import ops
from PIL import Image
from tensorflow.keras.callbacks import EarlyStopping, ModelCheckpoint, ReduceLROnPlateau
from tensorflow.keras.layers import Conv2D, Dense, Flatten, Input, Lambda, MaxPooling2D
from tensorflow.keras.models import Model
from tensorflow.keras.optimizers import Adam

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "siamese_omniglot")


# ----------------------------------------------------------------------------- nets/vgg.py
class VGG16:
    def __init__(self):
        self.block1_conv1 = Conv2D(8, (3, 3), activation="relu", padding="same", name="block1_conv1")
        self.block1_conv2 = Conv2D(8, (3, 3), activation="relu", padding="same", name="block1_conv2")
        self.block1_pool = MaxPooling2D((2, 2), strides=(2, 2), name="block1_pool")
        self.block2_conv1 = Conv2D(16, (3, 3), activation="relu", padding="same", name="block2_conv1")
        self.block2_conv2 = Conv2D(16, (3, 3), activation="relu", padding="same", name="block2_conv2")
        self.block2_pool = MaxPooling2D((2, 2), strides=(2, 2), name="block2_pool")
        self.block3_conv1 = Conv2D(32, (3, 3), activation="relu", padding="same", name="block3_conv1")
        self.block3_conv2 = Conv2D(32, (3, 3), activation="relu", padding="same", name="block3_conv2")
        self.block3_conv3 = Conv2D(32, (3, 3), activation="relu", padding="same", name="block3_conv3")
        self.block3_pool = MaxPooling2D((2, 2), strides=(2, 2), name="block3_pool")
        self.block4_conv1 = Conv2D(64, (3, 3), activation="relu", padding="same", name="block4_conv1")
        self.block4_conv2 = Conv2D(64, (3, 3), activation="relu", padding="same", name="block4_conv2")
        self.block4_conv3 = Conv2D(64, (3, 3), activation="relu", padding="same", name="block4_conv3")
        self.block4_pool = MaxPooling2D((2, 2), strides=(2, 2), name="block4_pool")
        self.block5_conv1 = Conv2D(64, (3, 3), activation="relu", padding="same", name="block5_conv1")
        self.block5_conv2 = Conv2D(64, (3, 3), activation="relu", padding="same", name="block5_conv2")
        self.block5_conv3 = Conv2D(64, (3, 3), activation="relu", padding="same", name="block5_conv3")
        self.block5_pool = MaxPooling2D((2, 2), strides=(2, 2), name="block5_pool")
        self.flatten = Flatten(name="flatten")

    def call(self, inputs):
        x = inputs
        x = self.block1_conv1(x)
        x = self.block1_conv2(x)
        x = self.block1_pool(x)
        x = self.block2_conv1(x)
        x = self.block2_conv2(x)
        x = self.block2_pool(x)
        x = self.block3_conv1(x)
        x = self.block3_conv2(x)
        x = self.block3_conv3(x)
        x = self.block3_pool(x)
        x = self.block4_conv1(x)
        x = self.block4_conv2(x)
        x = self.block4_conv3(x)
        x = self.block4_pool(x)
        x = self.block5_conv1(x)
        x = self.block5_conv2(x)
        x = self.block5_conv3(x)
        x = self.block5_pool(x)
        outputs = self.flatten(x)
        return outputs


# ----------------------------------------------------------------------------- nets/siamese.py
def siamese(input_shape):
    vgg_model = VGG16()

    input_image_1 = Input(shape=input_shape)
    input_image_2 = Input(shape=input_shape)

    encoded_image_1 = vgg_model.call(input_image_1)
    encoded_image_2 = vgg_model.call(input_image_2)

    l1_distance = Lambda(lambda tensors: ops.abs(tensors[0] - tensors[1]))([encoded_image_1, encoded_image_2])

    out = Dense(64, activation="relu")(l1_distance)
    out = Dense(1, activation="sigmoid")(out)

    model = Model([input_image_1, input_image_2], out)
    return model


# ----------------------------------------------------------------------------- nets/siamese_training.py
def rand(a=0, b=1):
    return np.random.rand() * (b - a) + a


class Generator:
    def __init__(self, input_shape, dataset_path, batch_size, train_ratio=0.9, train_own_data=True):
        self.dataset_path = dataset_path
        self.image_height = input_shape[0]
        self.image_width = input_shape[1]
        self.channel = input_shape[2]
        self.batch_size = batch_size
        self.train_lines = []
        self.train_labels = []
        self.val_lines = []
        self.val_labels = []
        self.types = 0
        self.train_ratio = train_ratio
        self.train_own_data = train_own_data
        self.load_dataset()
        self.decoded = {}  # the fix: each image opened and decoded once

    def open(self, path):
        if path not in self.decoded:
            with Image.open(path) as im:
                self.decoded[path] = im.copy()
        return self.decoded[path]

    def load_dataset(self):
        train_path = os.path.join(self.dataset_path, "images_background")
        if self.train_own_data:
            for character in os.listdir(train_path):
                character_path = os.path.join(train_path, character)
                for image in os.listdir(character_path):
                    self.train_lines.append(os.path.join(character_path, image))
                    self.train_labels.append(self.types)
                self.types += 1
        else:
            for alphabet in os.listdir(train_path):
                alphabet_path = os.path.join(train_path, alphabet)
                for character in os.listdir(alphabet_path):
                    character_path = os.path.join(alphabet_path, character)
                    for image in os.listdir(character_path):
                        self.train_lines.append(os.path.join(character_path, image))
                        self.train_labels.append(self.types)
                    self.types += 1

        random.seed(1)
        shuffle_index = np.arange(len(self.train_lines), dtype=np.int32)
        shuffle(shuffle_index)
        random.seed(None)
        self.train_lines = np.array(self.train_lines, dtype=object)
        self.train_labels = np.array(self.train_labels)
        self.train_lines = self.train_lines[shuffle_index]
        self.train_labels = self.train_labels[shuffle_index]

        num_train = int(len(self.train_lines) * self.train_ratio)
        self.val_lines = self.train_lines[num_train:]
        self.val_labels = self.train_labels[num_train:]
        self.train_lines = self.train_lines[:num_train]
        self.train_labels = self.train_labels[:num_train]

    def get_random_data(self, image, input_shape, jitter=.3, hue=.1, sat=1.5, val=1.5, flip_signal=False):
        if self.channel == 1:
            image = image.convert("RGB")

        h, w = input_shape
        rand_jit1 = rand(1 - jitter, 1 + jitter)
        rand_jit2 = rand(1 - jitter, 1 + jitter)
        new_ar = w / h * rand_jit1 / rand_jit2

        scale = rand(0.75, 1.25)
        if new_ar < 1:
            nh = int(scale * h)
            nw = int(nh * new_ar)
        else:
            nw = int(scale * w)
            nh = int(nw / new_ar)
        image = image.resize((nw, nh), Image.BICUBIC)

        flip = rand() < .5
        if flip and flip_signal:
            image = image.transpose(Image.FLIP_LEFT_RIGHT)

        dx = int(rand(0, w - nw))
        dy = int(rand(0, h - nh))
        new_image = Image.new("RGB", (w, h), (255, 255, 255))
        new_image.paste(image, (dx, dy))
        image = new_image

        rotate = rand() < .5
        if rotate:
            angle = np.random.randint(-5, 5)
            a, b = w / 2, h / 2
            M = cv2.getRotationMatrix2D((a, b), angle, 1)
            image = cv2.warpAffine(np.array(image), M, (w, h), borderValue=[255, 255, 255])

        hue = rand(-hue, hue)
        sat = rand(1, sat) if rand() < .5 else 1 / rand(1, sat)
        val = rand(1, val) if rand() < .5 else 1 / rand(1, val)
        x = cv2.cvtColor(np.array(image, np.float32) / 255, cv2.COLOR_RGB2HSV)
        x[..., 0] += hue * 360
        x[..., 0][x[..., 0] > 1] -= 1
        x[..., 0][x[..., 0] < 0] += 1
        x[..., 1] *= sat
        x[..., 2] *= val
        x[x[:, :, 0] > 360, 0] = 360
        x[:, :, 1:][x[:, :, 1:] > 1] = 1
        x[x < 0] = 0
        image_data = cv2.cvtColor(x, cv2.COLOR_HSV2RGB) * 255

        if self.channel == 1:
            image_data = Image.fromarray(np.uint8(image_data)).convert("L")
        return image_data

    def _convert_path_list_to_images_and_labels(self, path_list):
        number_of_pairs = int(len(path_list) / 2)
        pairs_of_images = [np.zeros((number_of_pairs, self.image_height, self.image_width, self.channel))
                           for i in range(2)]
        labels = np.zeros((number_of_pairs, 1))

        for pair in range(number_of_pairs):
            image = self.open(path_list[pair * 2])
            image = self.get_random_data(image, [self.image_height, self.image_width])
            image = np.asarray(image).astype(np.float64)
            image = image / 255
            if self.channel == 1:
                pairs_of_images[0][pair, :, :, 0] = image
            else:
                pairs_of_images[0][pair, :, :, :] = image

            image = self.open(path_list[pair * 2 + 1])
            image = self.get_random_data(image, [self.image_height, self.image_width])
            image = np.asarray(image).astype(np.float64)
            image = image / 255
            if self.channel == 1:
                pairs_of_images[1][pair, :, :, 0] = image
            else:
                pairs_of_images[1][pair, :, :, :] = image

            if (pair + 1) % 2 == 0:
                labels[pair] = 0
            else:
                labels[pair] = 1

        random_permutation = np.random.permutation(number_of_pairs)
        labels = labels[random_permutation]
        pairs_of_images[0][:, :, :, :] = pairs_of_images[0][random_permutation, :, :, :]
        pairs_of_images[1][:, :, :, :] = pairs_of_images[1][random_permutation, :, :, :]
        return pairs_of_images, labels

    def generate(self, train=True):
        while 1:
            if train:
                lines = self.train_lines
                labels = self.train_labels
            else:
                lines = self.val_lines
                labels = self.val_labels
            batch_images_path = []
            for _ in range(self.batch_size):
                c = random.randint(0, self.types - 1)
                selected_path = lines[labels[:] == c]
                while len(selected_path) < 3:
                    c = random.randint(0, self.types - 1)
                    selected_path = lines[labels[:] == c]
                image_indexes = random.sample(range(0, len(selected_path)), 3)
                batch_images_path.append(selected_path[image_indexes[0]])
                batch_images_path.append(selected_path[image_indexes[1]])
                batch_images_path.append(selected_path[image_indexes[2]])

                different_c = list(range(self.types))
                different_c.pop(c)
                different_c_index = np.random.choice(range(0, self.types - 1), 1)
                current_c = different_c[different_c_index[0]]
                selected_path = lines[labels == current_c]
                while len(selected_path) < 1:
                    different_c_index = np.random.choice(range(0, self.types - 1), 1)
                    current_c = different_c[different_c_index[0]]
                    selected_path = lines[labels == current_c]
                image_indexes = random.sample(range(0, len(selected_path)), 1)
                batch_images_path.append(selected_path[image_indexes[0]])

            images, labels = self._convert_path_list_to_images_and_labels(batch_images_path)
            yield tuple(images), labels


# ----------------------------------------------------------------------------- train.py
def get_image_num(path, train_own_data):
    num = 0
    if train_own_data:
        train_path = os.path.join(path, "images_background")
        for character in os.listdir(train_path):
            character_path = os.path.join(train_path, character)
            num += len(os.listdir(character_path))
    else:
        train_path = os.path.join(path, "images_background")
        for alphabet in os.listdir(train_path):
            alphabet_path = os.path.join(train_path, alphabet)
            for character in os.listdir(alphabet_path):
                character_path = os.path.join(alphabet_path, character)
                num += len(os.listdir(character_path))
    return num


gpus = tf.config.experimental.list_physical_devices(device_type="GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)

if __name__ == "__main__":
    eager = False
    dataset_path = os.path.join(DATA, "datasets")
    log_dir = os.path.join(tempfile.gettempdir(), "siamese_logs") + "/"
    input_shape = [64, 64, 3]
    train_own_data = False
    model_path = ""

    model = siamese(input_shape)
    if model_path != "":
        model.load_weights(model_path, by_name=True, skip_mismatch=True)

    os.makedirs(log_dir, exist_ok=True)
    checkpoint_period = ModelCheckpoint(log_dir + "ep{epoch:03d}-loss{loss:.3f}-val_loss{val_loss:.3f}.weights.h5",
                                        monitor="val_loss", save_weights_only=True, save_best_only=False)
    reduce_lr = ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=3, verbose=1)
    early_stopping = EarlyStopping(monitor="val_loss", min_delta=0, patience=10, verbose=1)

    train_ratio = 0.9
    images_num = get_image_num(dataset_path, train_own_data)
    num_train = int(images_num * train_ratio)
    num_val = images_num - num_train

    if True:
        Batch_size = 8
        Lr = 1e-4
        Init_epoch = 0
        Freeze_epoch = 2

        epoch_step = num_train // Batch_size
        epoch_step_val = num_val // Batch_size

        if epoch_step == 0 or epoch_step_val == 0:
            raise ValueError("The dataset is too small to train on; add more data.")

        generator = Generator(input_shape, dataset_path, Batch_size, train_ratio, train_own_data)

        print("Train with batch size {}.".format(Batch_size))
        if eager:
            raise NotImplementedError("the eager branch (utils_fit.fit_one_epoch) is not part of this copy")
        else:
            model.compile(loss="binary_crossentropy", optimizer=Adam(learning_rate=Lr), metrics=["binary_accuracy"])

            model.fit(
                generator.generate(True),
                steps_per_epoch=epoch_step,
                validation_data=generator.generate(False),
                validation_steps=epoch_step_val,
                epochs=Freeze_epoch,
                initial_epoch=Init_epoch,
                callbacks=[checkpoint_period, reduce_lr, early_stopping]
            )

    if True:
        Batch_size = 8
        Lr = 1e-5
        Freeze_epoch = 2
        Epoch = 4

        epoch_step = num_train // Batch_size
        epoch_step_val = num_val // Batch_size

        if epoch_step == 0 or epoch_step_val == 0:
            raise ValueError("The dataset is too small to train on; add more data.")

        generator = Generator(input_shape, dataset_path, Batch_size, train_ratio, train_own_data)

        print("Train with batch size {}.".format(Batch_size))
        if eager:
            raise NotImplementedError("the eager branch (utils_fit.fit_one_epoch) is not part of this copy")
        else:
            model.compile(loss="binary_crossentropy", optimizer=Adam(learning_rate=Lr), metrics=["binary_accuracy"])

            model.fit(
                generator.generate(True),
                steps_per_epoch=epoch_step,
                validation_data=generator.generate(False),
                validation_steps=epoch_step_val,
                epochs=Epoch,
                initial_epoch=Freeze_epoch,
                callbacks=[checkpoint_period, reduce_lr, early_stopping]
            )
