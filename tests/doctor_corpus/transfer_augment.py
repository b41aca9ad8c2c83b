"""The TensorFlow tutorial "Transfer learning and fine-tuning" with its data augmentation (RandomFlip,
RandomRotation) moved into the tf.data pipeline, ahead of the frozen base. Planted: the frozen base
recomputed every step, and augmentation ahead of it, so its features cannot be cached as they are. The
fix: cache the features of a few augmented views of each image (two here) and pick one per epoch."""

from __future__ import annotations

import numpy as np

from doctor_corpus import transfer_frozen as tf_case

SOURCE = ("TensorFlow tutorial 'Transfer learning and fine-tuning' with data augmentation in the pipeline: "
          "https://www.tensorflow.org/tutorials/images/transfer_learning")
PLANTED = ("augment_before_frozen_backbone",)  # the twin caches the features of several augmented views
VERDICT = "input-bound"  # the augmentation outweighs the light frozen base it feeds
EXACT = False  # random augmentation; the fix delivers features

NAME = "transfer_augment"
VIEWS = 2
BATCH = tf_case.BATCH


def make_data(folder) -> None:
    """Nothing on disk: the images are generated in memory."""


def _augment():
    import keras

    return keras.Sequential([keras.layers.RandomFlip("horizontal"), keras.layers.RandomRotation(0.2)])


def slow(folder):
    import tensorflow as tf

    images, labels = tf_case._images()
    augment = _augment()
    ds = tf.data.Dataset.from_tensor_slices((images, labels)).batch(BATCH)
    ds = ds.map(lambda x, y: (augment(tf.cast(x, tf.float32)), y), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    import tensorflow as tf

    images, labels = tf_case._images()
    augment = _augment()
    views = np.stack([tf_case.features(np.asarray(augment(images.astype(np.float32))), light=True)
                      for _ in range(VIEWS)], axis=1)  # (N, VIEWS, h, w, c)

    def pick(v, y):
        return v[tf.random.uniform([], 0, VIEWS, tf.int32)], y

    ds = tf.data.Dataset.from_tensor_slices((views, labels)).map(pick, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def model():
    # The light base: the augmentation outweighs it, so the case is input-bound by measurement, not
    # on a line (results/NOTES.md, the doctor's corpus).
    return tf_case.model(light=True)


def fixed_model(code=None):
    return tf_case.fixed_model(code)
