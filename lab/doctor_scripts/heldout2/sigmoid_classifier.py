"""Sigmoid classifier, training: SigmoidClassifier.fit, model.fit over GeneratorFlow, a keras Sequence that
reads each batch's images with OpenCV on an 8-thread pool and resizes them one by one, with a triangular
cyclic learning-rate callback that evaluates the whole training and validation sets every cycle.

Source: https://github.com/inzapp/sigmoid-classifier at 5eaa401f8d6b542790edc04644700551f429c7d0
(2021-07-14: train.py, sigmoid_classifier.py, generator.py, model.py, triangular_cycle_lr.py). Re-written
here in the source's structure and order, not copied: image paths are globbed per class folder
(``*.jpg`` and ``*.png``; a folder named ``unknown`` gets an all-zero label); GeneratorFlow shuffles an
index once and again at each epoch end, and ``__getitem__`` submits ``cv2.imread`` of the batch's paths
to a ThreadPoolExecutor(8), then resizes each image with ``cv2.resize``, scales it by 1/255 and one-hots
its folder's class; the model is five conv blocks (Conv2D 3x3 he_uniform, BatchNormalization, ReLU,
MaxPool) closed by a 1x1 sigmoid conv and global average pooling; compile with Adam, binary
cross-entropy, Precision and Recall; TriangularCycleLR moves the learning rate up and down by a step each
batch and, every ``cycle_steps`` batches, calls ``model.evaluate`` on the training flow and on the
validation flow and saves the model.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/sigmoid_classifier``: train/ and validation/ class folders,
3 classes, 720 and 180 grayscale 256x256 PNGs); input 64x64x1 for 128x128x1 and the conv filters halved
(8..128 for 16..256) so a step runs on 2 CPU cores; cycle_steps 2000 kept (longer than this small set's
3 epochs of 22 batches: the first save cycle, with its two evaluations, never comes, as in the source's
first 2000 batches); epochs 3 for 1000;
``optimizer.lr`` -> ``optimizer.learning_rate`` and ``Adam(lr=)`` -> ``Adam(learning_rate=)`` (Keras 3);
``from cv2 import cv2`` -> ``import cv2``; ``tensorflow.python.keras...to_categorical`` ->
``keras.utils.to_categorical``; the model is saved under a temporary folder, not ``checkpoints/``.
"""

import os
import random
import tempfile
from concurrent.futures.thread import ThreadPoolExecutor
from glob import glob

import cv2
import numpy as np
import tensorflow as tf
from tensorflow.keras.utils import to_categorical

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "sigmoid_classifier")
CHECKPOINTS = os.path.join(tempfile.gettempdir(), "sigmoid_classifier_checkpoints")


class GeneratorFlow(tf.keras.utils.Sequence):
    def __init__(self, image_paths, class_names, input_shape, batch_size):
        self.image_paths = image_paths
        self.class_names = class_names
        self.num_classes = len(self.class_names)
        self.input_shape = input_shape
        self.batch_size = batch_size
        self.random_indexes = np.arange(len(self.image_paths))
        self.pool = ThreadPoolExecutor(8)
        np.random.shuffle(self.random_indexes)

    def __getitem__(self, index):
        batch_x, batch_y = [], []
        start_index = index * self.batch_size
        fs = [self.pool.submit(self._load_img, self.image_paths[self.random_indexes[i]])
              for i in range(start_index, start_index + self.batch_size)]
        for f in fs:
            cur_img_path, x = f.result()
            x = cv2.resize(x, (self.input_shape[1], self.input_shape[0]))
            x = np.asarray(x).reshape(self.input_shape).astype("float32") / 255.0
            batch_x.append(x)
            dir_name = cur_img_path.split("/")[-2]
            if dir_name == "unknown":
                y = np.zeros((self.num_classes,), dtype=np.float32)
            else:
                y = to_categorical(self.class_names.index(dir_name), self.num_classes)
            batch_y.append(y)
        batch_x = np.asarray(batch_x).reshape((self.batch_size,) + self.input_shape).astype("float32")
        batch_y = np.asarray(batch_y).reshape((self.batch_size, self.num_classes)).astype("float32")
        return batch_x, batch_y

    def __len__(self):
        return int(np.floor(len(self.image_paths) / self.batch_size))

    def on_epoch_end(self):
        np.random.shuffle(self.random_indexes)

    def _load_img(self, path):
        return path, cv2.imread(path, cv2.IMREAD_GRAYSCALE if self.input_shape[2] == 1 else cv2.IMREAD_COLOR)


class SigmoidClassifierDataGenerator:
    def __init__(self, image_paths, input_shape, batch_size, class_names):
        self.generator_flow = GeneratorFlow(image_paths, class_names, input_shape, batch_size)

    def flow(self):
        return self.generator_flow


class Model:
    def __init__(self, input_shape, num_classes, width=8):
        self.input_shape = input_shape
        self.num_classes = num_classes
        self.width = width

    def build(self):
        def conv(x, filters):
            x = tf.keras.layers.Conv2D(filters=filters, kernel_size=3, kernel_initializer="he_uniform",
                                       padding="same")(x)
            x = tf.keras.layers.BatchNormalization()(x)
            return tf.keras.layers.ReLU()(x)

        input_layer = tf.keras.layers.Input(shape=self.input_shape)
        x = tf.keras.layers.MaxPool2D()(conv(input_layer, self.width))
        for k in (2, 4, 8, 16):
            x = tf.keras.layers.MaxPool2D()(conv(conv(x, self.width * k), self.width * k))
        x = tf.keras.layers.Conv2D(filters=self.num_classes, kernel_size=1, activation="sigmoid")(x)
        x = tf.keras.layers.GlobalAveragePooling2D()(x)
        return tf.keras.models.Model(input_layer, x)


class TriangularCycleLR(tf.keras.callbacks.Callback):
    def __init__(self, max_lr=0.1, min_lr=1e-4, batch_size=32, cycle_steps=2000,
                 train_data_generator_flow=None, validation_data_generator_flow=None):
        self.batch_count = 0
        self.batch_sum = 0
        self.lr = min_lr
        self.max_lr = max_lr
        self.min_lr = min_lr
        self.cycle_step = cycle_steps
        self.lr_offset = (max_lr - min_lr) / float(cycle_steps / 2.0)
        self.batch_size = batch_size
        self.train_data_generator_flow = train_data_generator_flow
        self.validation_data_generator_flow = validation_data_generator_flow
        self.increasing = True
        super().__init__()

    def on_train_begin(self, logs=None):
        self.model.optimizer.learning_rate.assign(self.min_lr)
        os.makedirs(CHECKPOINTS, exist_ok=True)

    def on_train_batch_end(self, batch, logs=None):
        self.batch_sum += 1
        self.batch_count += 1
        if self.batch_count == self.cycle_step:
            self.save_model()
        if self.batch_count == int(self.cycle_step / 2 + 1):
            self.increasing = False
        elif self.batch_count == self.cycle_step + 1:
            self.increasing = True
            self.batch_count = 1
            self.max_lr *= 0.9
            self.lr_offset = (self.max_lr - self.min_lr) / float((self.cycle_step - 2) / 2.0)
        self.lr = self.lr + self.lr_offset if self.increasing else self.lr - self.lr_offset
        self.model.optimizer.learning_rate.assign(self.lr)

    def save_model(self):
        recall = self.model.evaluate(x=self.train_data_generator_flow, batch_size=self.batch_size,
                                     return_dict=True)["recall"]
        val_recall = self.model.evaluate(x=self.validation_data_generator_flow, batch_size=self.batch_size,
                                         return_dict=True)["recall"]
        print(f"{self.batch_sum} batch => recall: {recall:.4f}, val_recall: {val_recall:.4f}\n")
        self.model.save(os.path.join(CHECKPOINTS, f"model_{self.batch_sum}_batch.keras"))


class SigmoidClassifier:
    def __init__(self, train_image_path, input_shape, max_lr, min_lr, cycle_steps, batch_size, epochs,
                 validation_image_path="", validation_split=0.2):
        self.input_shape = input_shape
        self.batch_size = batch_size
        self.epochs = epochs
        if validation_image_path != "":
            self.train_image_paths, _, self.class_names = self.__init_image_paths(train_image_path)
            self.validation_image_paths, _, self.class_names = self.__init_image_paths(validation_image_path)
        else:
            self.train_image_paths, self.validation_image_paths, self.class_names = \
                self.__init_image_paths(train_image_path, validation_split)
        self.train_data_generator = SigmoidClassifierDataGenerator(
            self.train_image_paths, self.input_shape, self.batch_size, self.class_names)
        self.validation_data_generator = SigmoidClassifierDataGenerator(
            self.validation_image_paths, self.input_shape, self.batch_size, self.class_names)
        self.model = Model(input_shape=self.input_shape, num_classes=len(self.class_names)).build()
        self.model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=min_lr),
                           loss=tf.keras.losses.BinaryCrossentropy(),
                           metrics=[tf.keras.metrics.Precision(), tf.keras.metrics.Recall()])
        self.callbacks = [TriangularCycleLR(
            max_lr=max_lr, min_lr=max_lr, cycle_steps=cycle_steps, batch_size=batch_size,
            train_data_generator_flow=self.train_data_generator.flow(),
            validation_data_generator_flow=self.validation_data_generator.flow())]

    @staticmethod
    def __init_image_paths(image_path, validation_split=0.0):
        dir_paths = sorted(glob(f"{image_path}/*"))
        class_name_set = set()
        train_image_paths, validation_image_paths = [], []
        for dir_path in dir_paths:
            if not os.path.isdir(dir_path):
                continue
            dir_name = dir_path.split("/")[-1]
            if dir_name != "unknown":
                class_name_set.add(dir_name)
            cur_class_image_paths = glob(f"{dir_path}/*.jpg") + glob(f"{dir_path}/*.png")
            if validation_split == 0.0:
                train_image_paths += cur_class_image_paths
                continue
            random.shuffle(cur_class_image_paths)
            num_cur_class_train_images = int(len(cur_class_image_paths) * (1.0 - validation_split))
            train_image_paths += cur_class_image_paths[:num_cur_class_train_images]
            validation_image_paths += cur_class_image_paths[num_cur_class_train_images:]
        return train_image_paths, validation_image_paths, sorted(class_name_set)

    def fit(self):
        self.model.summary()
        self.model.fit(x=self.train_data_generator.flow(), batch_size=self.batch_size, epochs=self.epochs,
                       callbacks=self.callbacks)


if __name__ == "__main__":
    SigmoidClassifier(
        train_image_path=os.path.join(DATA, "train"),
        validation_image_path=os.path.join(DATA, "validation"),
        input_shape=(64, 64, 1),
        max_lr=0.01,
        min_lr=1e-4,
        cycle_steps=2000,
        batch_size=32,
        epochs=3).fit()
