"""FIXED COPY (the one fix: each face is read and resized once and kept in memory; the augmentation still runs on every epoch).

Age estimation (APPA-REAL), training: age_estimation/train.py, fit over FaceGenerator, a keras Sequence
that reads each face with OpenCV, resizes it and runs a per-image PIL augmentation pipeline, with
ValGenerator (read and resize only) as validation_data.

Source: https://github.com/yu4u/age-gender-estimation at f96dd5bebe6e02e076dbeee4d93e97ffdfc0571c (2018-11-13; age_estimation/train.py,
age_estimation/generator.py, age_estimation/model.py). Re-written here in the source's structure and order,
not copied: FaceGenerator loads (path, age) pairs from gt_avg_train.csv with pandas ``iterrows`` (ages
capped at 100), draws a permutation at start and at each epoch end, and ``__getitem__`` fills a uint8
batch: ``cv2.imread``, ``cv2.resize`` to image_size, then transform_image (an Augmentor pipeline:
flip_left_right p=0.5, rotate +-5 degrees p=1, zoom_random 95% area p=0.5, random_distortion p=0.5,
random_color / random_contrast / random_brightness 0.8..1.2 p=1, random_erasing 20% area p=0.5; each
operation runs when ``round(random.uniform(0, 1), 1) <= probability``) on a PIL image; the age jittered by
a rounded N(0, 2) and clipped, one-hot over 101 ages; ValGenerator reads and resizes in order, no
augmentation; the model is a backbone with average pooling and a 101-way softmax Dense (he_normal, no bias);
compile with SGD(lr, momentum 0.9, nesterov) or Adam, categorical cross-entropy and age_mae; callbacks:
LearningRateScheduler (the step Schedule) and ModelCheckpoint on val_age_mae; ``fit_generator(train_gen,
epochs, validation_data=val_gen)``.

Changed: data path (``$DOCTOR_SCRIPTS_DATA/age_estimation``: APPA-REAL's layout, 640 train and 128 valid
256x256 JPEG faces, generated); the Augmentor package (not installed) -> the same operations written with
PIL (ImageOps.mirror, Image.rotate, a centred crop resized back, ImageEnhance Color/Contrast/Brightness,
a random grey rectangle); random_distortion (Augmentor's elastic grid warp) left out; ResNet50 with
ImageNet weights (not downloadable here) -> a small CNN backbone (4 conv blocks, 16..128 filters) with the
same average pooling and head; image_size 64 for 224; epochs 3 for 30; batch size 32 kept;
``fit_generator`` -> ``fit``; ``SGD(lr=)`` -> ``SGD(learning_rate=)``; ``K.arange`` -> ``keras.ops.arange`` and age_mae casts y_true to float32;
the checkpoints under a temporary folder and monitored on val_loss (Keras 3 names the custom metric's log
key after the function: kept, but the checkpoint file name keeps only epoch and val_loss); the history
saved with np.savez left out; better_exceptions (not installed) left out.
"""
# ruff: noqa: B007  (the source's loops, kept as written)

import argparse
import math
import os
import random
import tempfile
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
from keras import ops
from PIL import Image, ImageEnhance, ImageOps
from tensorflow import keras
from tensorflow.keras.callbacks import LearningRateScheduler, ModelCheckpoint
from tensorflow.keras.layers import Conv2D, Dense, GlobalAveragePooling2D, Input, MaxPooling2D
from tensorflow.keras.models import Model
from tensorflow.keras.optimizers import SGD, Adam
from tensorflow.keras.utils import Sequence, to_categorical

DATA = os.path.join(os.environ.get("DOCTOR_SCRIPTS_DATA", "/tmp/kit-doctor-scripts"), "age_estimation")


# ----------------------------------------------------------------------------- generator.py
class Pipeline:
    """Augmentor.Pipeline's operations used by the source, each a (probability, PIL image -> PIL image)."""

    def __init__(self):
        self.operations = []

    def add(self, probability, fn):
        self.operations.append((probability, fn))

    def flip_left_right(self, probability):
        self.add(probability, ImageOps.mirror)

    def rotate(self, probability, max_left_rotation, max_right_rotation):
        self.add(probability, lambda im: im.rotate(random.uniform(-max_left_rotation, max_right_rotation),
                                                   resample=Image.BICUBIC))

    def zoom_random(self, probability, percentage_area):
        def zoom(im):
            w, h = im.size
            cw, ch = int(w * math.sqrt(percentage_area)), int(h * math.sqrt(percentage_area))
            x0, y0 = random.randint(0, w - cw), random.randint(0, h - ch)
            return im.crop((x0, y0, x0 + cw, y0 + ch)).resize((w, h), resample=Image.BICUBIC)
        self.add(probability, zoom)

    def enhance(self, probability, enhancer, min_factor, max_factor):
        self.add(probability, lambda im: enhancer(im).enhance(random.uniform(min_factor, max_factor)))

    def random_erasing(self, probability, rectangle_area):
        def erase(im):
            a = np.array(im)
            h, w = a.shape[:2]
            eh, ew = int(h * random.uniform(0.1, rectangle_area)), int(w * random.uniform(0.1, rectangle_area))
            y0, x0 = random.randint(0, h - eh), random.randint(0, w - ew)
            a[y0:y0 + eh, x0:x0 + ew] = np.random.randint(0, 256, (eh, ew, a.shape[2]), dtype=np.uint8)
            return Image.fromarray(a)
        self.add(probability, erase)


def get_transform_func():
    p = Pipeline()
    p.flip_left_right(probability=0.5)
    p.rotate(probability=1, max_left_rotation=5, max_right_rotation=5)
    p.zoom_random(probability=0.5, percentage_area=0.95)
    p.enhance(1, ImageEnhance.Color, min_factor=0.8, max_factor=1.2)
    p.enhance(1, ImageEnhance.Contrast, min_factor=0.8, max_factor=1.2)
    p.enhance(1, ImageEnhance.Brightness, min_factor=0.8, max_factor=1.2)
    p.random_erasing(probability=0.5, rectangle_area=0.2)

    def transform_image(image):
        image = Image.fromarray(image)
        for probability, operation in p.operations:
            r = round(random.uniform(0, 1), 1)
            if r <= probability:
                image = operation(image)
        return image
    return transform_image


class FaceGenerator(Sequence):
    def __init__(self, appa_dir, utk_dir=None, batch_size=32, image_size=224):
        self.image_path_and_age = []
        self._load_appa(appa_dir)
        self.image_num = len(self.image_path_and_age)
        self.batch_size = batch_size
        self.image_size = image_size
        self.indices = np.random.permutation(self.image_num)
        self.transform_image = get_transform_func()
        self.resized = {}

    def __len__(self):
        return self.image_num // self.batch_size

    def __getitem__(self, idx):
        batch_size = self.batch_size
        image_size = self.image_size
        x = np.zeros((batch_size, image_size, image_size, 3), dtype=np.uint8)
        y = np.zeros((batch_size, 1), dtype=np.int32)
        sample_indices = self.indices[idx * batch_size:(idx + 1) * batch_size]
        for i, sample_id in enumerate(sample_indices):
            image_path, age = self.image_path_and_age[sample_id]
            if image_path not in self.resized:  # the fix: read and resize each face once
                self.resized[image_path] = cv2.resize(cv2.imread(str(image_path)), (image_size, image_size))
            x[i] = self.transform_image(self.resized[image_path])
            age += math.floor(np.random.randn() * 2 + 0.5)
            y[i] = np.clip(age, 0, 100)
        return x, to_categorical(y, 101)

    def on_epoch_end(self):
        self.indices = np.random.permutation(self.image_num)

    def _load_appa(self, appa_dir):
        appa_root = Path(appa_dir)
        train_image_dir = appa_root.joinpath("train")
        df = pd.read_csv(str(appa_root.joinpath("gt_avg_train.csv")))
        for i, row in df.iterrows():
            age = min(100, int(row.apparent_age_avg))
            image_path = train_image_dir.joinpath(row.file_name + "_face.jpg")
            if image_path.is_file():
                self.image_path_and_age.append([str(image_path), age])


class ValGenerator(Sequence):
    def __init__(self, appa_dir, batch_size=32, image_size=224):
        self.image_path_and_age = []
        self._load_appa(appa_dir)
        self.image_num = len(self.image_path_and_age)
        self.batch_size = batch_size
        self.image_size = image_size

    def __len__(self):
        return self.image_num // self.batch_size

    def __getitem__(self, idx):
        batch_size = self.batch_size
        image_size = self.image_size
        x = np.zeros((batch_size, image_size, image_size, 3), dtype=np.uint8)
        y = np.zeros((batch_size, 1), dtype=np.int32)
        for i in range(batch_size):
            image_path, age = self.image_path_and_age[idx * batch_size + i]
            image = cv2.imread(str(image_path))
            x[i] = cv2.resize(image, (image_size, image_size))
            y[i] = age
        return x, to_categorical(y, 101)

    def _load_appa(self, appa_dir):
        appa_root = Path(appa_dir)
        val_image_dir = appa_root.joinpath("valid")
        df = pd.read_csv(str(appa_root.joinpath("gt_avg_valid.csv")))
        for i, row in df.iterrows():
            age = min(100, int(row.apparent_age_avg))
            image_path = val_image_dir.joinpath(row.file_name + "_face.jpg")
            if image_path.is_file():
                self.image_path_and_age.append([str(image_path), age])


# ----------------------------------------------------------------------------- model.py
def age_mae(y_true, y_pred):
    y_true = ops.cast(y_true, "float32")  # to_categorical's float64 labels reach the metric uncast in Keras 3
    true_age = ops.sum(y_true * ops.arange(0, 101, dtype="float32"), axis=-1)
    pred_age = ops.sum(y_pred * ops.arange(0, 101, dtype="float32"), axis=-1)
    return ops.mean(ops.abs(true_age - pred_age))


def get_model(model_name="ResNet50", image_size=224):
    inputs = Input((image_size, image_size, 3))
    x = keras.layers.Rescaling(1 / 255.0)(inputs)
    for filters in (16, 32, 64, 128):
        x = Conv2D(filters, 3, padding="same", activation="relu")(x)
        x = MaxPooling2D()(x)
    x = GlobalAveragePooling2D()(x)
    prediction = Dense(units=101, kernel_initializer="he_normal", use_bias=False, activation="softmax",
                       name="pred_age")(x)
    return Model(inputs=inputs, outputs=prediction)


# ----------------------------------------------------------------------------- train.py
class Schedule:
    def __init__(self, nb_epochs, initial_lr):
        self.epochs = nb_epochs
        self.initial_lr = initial_lr

    def __call__(self, epoch_idx):
        if epoch_idx < self.epochs * 0.25:
            return self.initial_lr
        elif epoch_idx < self.epochs * 0.50:
            return self.initial_lr * 0.2
        elif epoch_idx < self.epochs * 0.75:
            return self.initial_lr * 0.04
        return self.initial_lr * 0.008


def get_optimizer(opt_name, lr):
    if opt_name == "sgd":
        return SGD(learning_rate=lr, momentum=0.9, nesterov=True)
    elif opt_name == "adam":
        return Adam(learning_rate=lr)
    raise ValueError("optimizer name should be 'sgd' or 'adam'")


def get_args():
    parser = argparse.ArgumentParser(description="This script trains the CNN model for age estimation.")
    parser.add_argument("--appa_dir", type=str, default=DATA)
    parser.add_argument("--utk_dir", type=str, default=None)
    parser.add_argument("--output_dir", type=str, default=os.path.join(tempfile.gettempdir(), "age_estimation_ckpt"))
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--nb_epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--opt", type=str, default="sgd")
    parser.add_argument("--model_name", type=str, default="ResNet50")
    return parser.parse_args()


def main():
    args = get_args()
    image_size = 64
    train_gen = FaceGenerator(args.appa_dir, utk_dir=args.utk_dir, batch_size=args.batch_size, image_size=image_size)
    val_gen = ValGenerator(args.appa_dir, batch_size=args.batch_size, image_size=image_size)
    model = get_model(model_name=args.model_name, image_size=image_size)
    model.compile(optimizer=get_optimizer(args.opt, args.lr), loss="categorical_crossentropy", metrics=[age_mae])
    model.summary()
    output_dir = Path(args.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    callbacks = [LearningRateScheduler(schedule=Schedule(args.nb_epochs, initial_lr=args.lr)),
                 ModelCheckpoint(str(output_dir) + "/weights.{epoch:03d}-{val_loss:.3f}.keras",
                                 monitor="val_loss", verbose=1, save_best_only=True, mode="min")]
    model.fit(train_gen, epochs=args.nb_epochs, validation_data=val_gen, verbose=1, callbacks=callbacks)


if __name__ == "__main__":
    main()
