"""The TensorFlow "Data augmentation" tutorial's tf.data route (random flips and brightness mapped over
the dataset) with ``cache()`` placed after the augmentation. Planted: the random augmentation runs once
and is cached, so every epoch sees the same augmented images (the fix: cache the decoded images, then
augment)."""

from __future__ import annotations

from pathlib import Path

from doctor_corpus._common import conv_model, done, mark, pattern_images, write_png_folders
from doctor_corpus.shuffle_cache import decoded

SOURCE = ("TensorFlow tutorial 'Data augmentation' (tf.image random ops mapped over the dataset) with the "
          "map before cache(): https://www.tensorflow.org/tutorials/images/data_augmentation")
PLANTED = ("random_before_cache",)
VERDICT = "compute-bound"
EXACT = False  # random augmentation

NAME = "augment_cache"
N, SIZE, BATCH = 768, 48, 32


def make_data(folder) -> None:
    if done(folder, NAME, n=N, size=SIZE):
        return
    images, labels = pattern_images(N, SIZE, seed=10)
    write_png_folders(Path(folder) / NAME, images, labels)
    mark(folder, NAME, n=N, size=SIZE)


def augment(image, label):
    import tensorflow as tf

    image = tf.image.random_flip_left_right(tf.cast(image, tf.float32))
    return tf.clip_by_value(tf.image.random_brightness(image, 32.0), 0, 255), label


def slow(folder):
    import tensorflow as tf

    ds = decoded(folder, NAME).map(augment, num_parallel_calls=tf.data.AUTOTUNE).cache()
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    import tensorflow as tf

    ds = decoded(folder, NAME).cache().map(augment, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def model():
    # Two convolutions at full resolution: the step outweighs reading the cache, so the case is
    # compute-bound by measurement (the script's replayed batch), not by declaration (why two:
    # results/NOTES.md, the doctor's corpus).
    return conv_model((SIZE, SIZE, 3), filters=48, strides=1, second=24)
