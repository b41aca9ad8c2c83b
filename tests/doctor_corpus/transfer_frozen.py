"""The TensorFlow tutorial "Transfer learning and fine-tuning", feature-extraction part: a frozen
convolutional base (a small one here, random weights standing in for MobileNetV2's) under a pooling +
dense head, trained on images already in memory. Planted: the frozen base recomputed on every step of
every epoch (the fix: run it once into a feature cache and train the head on the features)."""

from __future__ import annotations

import numpy as np

from doctor_corpus._common import pattern_images

SOURCE = ("TensorFlow tutorial 'Transfer learning and fine-tuning' (frozen base + new head): "
          "https://www.tensorflow.org/tutorials/images/transfer_learning")
PLANTED = ("frozen_backbone_recomputed",)
VERDICT = "compute-bound"
EXACT = False  # the fix delivers features, not images: same count and labels

NAME = "transfer_frozen"
N, SIZE, BATCH = 256, 64, 32


def make_data(folder) -> None:
    """Nothing on disk: the images are generated in memory (the tutorial's are decoded once, cached)."""


def _images():
    return pattern_images(N, SIZE, seed=8)


def base(light: bool = False):
    """The frozen base: four convolutions (weights seeded, standing in for pretrained ones); ``light``:
    two strided ones with the same output shape, for a case whose input work must outweigh it."""
    import keras

    keras.utils.set_random_seed(0)
    convs = [keras.layers.Conv2D(16, 3, strides=2, padding="same", activation="relu")] if light else [
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        keras.layers.Conv2D(64, 3, strides=2, padding="same", activation="relu")]
    b = keras.Sequential([keras.Input((SIZE, SIZE, 3)), *convs,
                          keras.layers.Conv2D(64, 3, strides=2, padding="same", activation="relu")],
                         name="base")
    b.trainable = False
    return b


def _compile(m):
    import keras

    m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def model(light: bool = False):
    import keras

    inputs = keras.Input((SIZE, SIZE, 3))
    x = keras.layers.Rescaling(1 / 127.5, offset=-1)(inputs)  # preprocess_input
    x = base(light)(x, training=False)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return _compile(keras.Model(inputs, keras.layers.Dense(4)(x)))


def head(shape):
    import keras

    keras.utils.set_random_seed(0)
    return _compile(keras.Sequential([keras.Input(shape), keras.layers.GlobalAveragePooling2D(),
                                      keras.layers.Dense(4)]))


def features(images, light: bool = False):
    """The frozen part (preprocessing and base) run once over ``images``."""
    b = base(light)
    out = [np.asarray(b(images[i:i + 64].astype(np.float32) / 127.5 - 1, training=False))
           for i in range(0, len(images), 64)]
    return np.concatenate(out)


def slow(folder):
    import tensorflow as tf

    images, labels = _images()
    return tf.data.Dataset.from_tensor_slices((images, labels)).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    import tensorflow as tf

    images, labels = _images()
    feats = features(images)
    return tf.data.Dataset.from_tensor_slices((feats, labels)).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed_model(code=None):
    """The model that takes ``fixed``'s batches: the head alone."""
    return head((SIZE // 4, SIZE // 4, 64))
