"""FIXED COPY (the one fix: each image and mask decoded, cropped and one-hot encoded once (the seed's answer: save the pre-processed arrays), kept in memory).

The segmentation user's training script as they wrote it (seed 004, /work/shared/seeds/004_*.txt).

A keras.utils.Sequence DataGenerator whose __getitem__ collects a batch step by step on the CPU: for each
example load_image (cv2.imread(path, -1) then BGR -> RGB) of the image and of its colour-coded label, crop
to self.shape, image / 255, one_hot_it over the palette's colours (a loop over the class_dict.csv colours),
stack; batch 3; a U-Net compiled with the user's losses; model.fit(training_generator, validation_data=...).

Written for this corpus from the seed's code (no repository): load_image and the batch loop are the seed's;
one_hot_it and get_label_info follow the CamVid helper the seed calls; the class name's __init__, the
U-Net and the losses (a plain-function dice loss + categorical cross-entropy, and a plain-function mean-IoU
metric) are ours. Shrunk: 128x128 images instead of 512x512 (``$DOCTOR_SCRIPTS_DATA/segmentation_user``,
150 train and 12 val PNGs with CamVid-style masks, 6 classes), a U-Net of 8..32 filters, 3 epochs;
``fit_generator(..., workers=8, use_multiprocessing=True)`` is Keras 2: in Keras 3 the workers belong to
the Sequence, and the user's single CPU core is the case here, so none are set.
"""

import csv
import os

import cv2
import keras
import numpy as np
from keras import layers, ops

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "segmentation_user")


def get_label_info(csv_path):
    class_names, label_values = [], []
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            class_names.append(row["name"])
            label_values.append([int(row["r"]), int(row["g"]), int(row["b"])])
    return class_names, label_values


PREPARED = {}


class DataGenerator(keras.utils.Sequence):
    def __init__(self, image_filenames, label_filenames, label_values, batch_size=3, shape=(128, 128),
                 shuffle=True):
        super().__init__()
        self.image_filenames, self.label_filenames = image_filenames, label_filenames
        self.label_values = label_values
        self.batch_size = batch_size
        self.shape = shape
        self.shuffle = shuffle
        self.on_epoch_end()

    def __len__(self):
        return len(self.image_filenames) // self.batch_size

    def on_epoch_end(self):
        self.indexes = np.arange(len(self.image_filenames))
        if self.shuffle:
            np.random.shuffle(self.indexes)

    def load_image(self,path):
        image = cv2.cvtColor(cv2.imread(path,-1), cv2.COLOR_BGR2RGB)
        return image

    def one_hot_it(self, label, label_values):
        semantic_map = []
        for colour in label_values:
            equality = np.equal(label, colour)
            class_map = np.all(equality, axis=-1)
            semantic_map.append(class_map)
        semantic_map = np.stack(semantic_map, axis=-1)
        return semantic_map

    def __getitem__(self, index):
        idx = self.indexes[index * self.batch_size:(index + 1) * self.batch_size]
        image_filenames_tmp = [self.image_filenames[k] for k in idx]
        label_filenames_tmp = [self.label_filenames[k] for k in idx]
        label_values = self.label_values
        input_image_batch = []
        output_image_batch = []

        #Collect a batch of images on the CPU step by step (probably the bottlebeck of the whole computation)
        for i in range(len(image_filenames_tmp)):
            key = image_filenames_tmp[i]
            if key not in PREPARED:  # the fix: each pair decoded and one-hot encoded once
                input_image = self.load_image(image_filenames_tmp[i])[: self.shape[0], : self.shape[1]]
                output_image = self.load_image(label_filenames_tmp[i])[: self.shape[0], : self.shape[1]]

                # Prep the data. Make sure the labels are in one-hot format
                input_image = np.float32(input_image) / 255.0
                output_image = np.float32(self.one_hot_it(label=output_image, label_values=label_values))
                PREPARED[key] = (input_image, output_image)
            input_image, output_image = PREPARED[key]

            input_image_batch.append(np.expand_dims(input_image, axis=0))
            output_image_batch.append(np.expand_dims(output_image, axis=0))

        input_image_batch = np.squeeze(np.stack(input_image_batch, axis=1))
        output_image_batch = np.squeeze(np.stack(output_image_batch, axis=1))

        return input_image_batch, output_image_batch


def dice_loss(y_true, y_pred):
    y_true = ops.cast(y_true, y_pred.dtype)
    inter = ops.sum(y_true * y_pred, axis=[1, 2])
    union = ops.sum(y_true + y_pred, axis=[1, 2])
    return 1 - ops.mean((2 * inter + 1) / (union + 1))


def dice_ce_loss(y_true, y_pred):
    return dice_loss(y_true, y_pred) + keras.losses.categorical_crossentropy(y_true, y_pred)


def mean_iou(y_true, y_pred):
    y_true = ops.cast(y_true, y_pred.dtype)
    y_hard = ops.one_hot(ops.argmax(y_pred, axis=-1), ops.shape(y_pred)[-1])
    inter = ops.sum(y_true * y_hard, axis=[0, 1, 2])
    union = ops.sum(y_true + y_hard, axis=[0, 1, 2]) - inter
    return ops.mean((inter + 1) / (union + 1))


def unet(shape, n_classes):
    inp = keras.Input(shape)
    x, skips = inp, []
    for f in (8, 16, 32):
        x = layers.Conv2D(f, 3, padding="same", activation="relu")(x)
        skips.append(x)
        x = layers.MaxPooling2D()(x)
    x = layers.Conv2D(32, 3, padding="same", activation="relu")(x)
    for f, s in zip((32, 16, 8), reversed(skips)):
        x = layers.UpSampling2D()(x)
        x = layers.Concatenate()([x, s])
        x = layers.Conv2D(f, 3, padding="same", activation="relu")(x)
    return keras.Model(inp, layers.Conv2D(n_classes, 1, activation="softmax")(x))


if __name__ == "__main__":
    class_names, label_values = get_label_info(os.path.join(DATA, "class_dict.csv"))

    def files(split):
        names = sorted(os.listdir(os.path.join(DATA, split)))
        return ([os.path.join(DATA, split, n) for n in names],
                [os.path.join(DATA, split + "_labels", n.replace(".png", "_L.png")) for n in names])

    training_generator = DataGenerator(*files("train"), label_values, batch_size=3)
    validation_generator = DataGenerator(*files("val"), label_values, batch_size=3, shuffle=False)
    model = unet((128, 128, 3), len(class_names))
    model.compile(optimizer="adam", loss=dice_ce_loss, metrics=["accuracy", mean_iou])
    model.fit(training_generator, validation_data=validation_generator, epochs=3)
