"""The TensorFlow tutorial "Load NumPy data" (MNIST arrays from an .npz, ``from_tensor_slices``, shuffle,
batch) with a noise augmentation added the way it is often added: mapped before ``cache()``. Planted:
the random op before the cache, so every epoch after the first sees the first epoch's noise (the fix:
``cache()`` first, then the random map). The model (a widened convnet) is the limit either way."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from doctor_corpus._common import done, mark, pattern_images

from doctor_corpus_heldout._heldout import compiled

SOURCE = ("TensorFlow tutorial 'Load NumPy data' (an .npz of MNIST arrays, from_tensor_slices, shuffle, batch): "
          "https://www.tensorflow.org/tutorials/load_data/numpy")
DOMAIN = "images"
PLANTED = ("random_before_cache",)
TOLERATED: tuple = ()
VERDICT = "compute-bound"
EXACT = False  # random noise: the same count and labels

NAME = "load_numpy"
N, SIZE, BATCH = 1024, 28, 64


def make_data(folder) -> None:
    if done(folder, NAME, n=N):
        return
    images, labels = pattern_images(N, SIZE, seed=131, channels=1)
    (Path(folder) / NAME).mkdir(parents=True, exist_ok=True)
    np.savez(Path(folder) / NAME / "mnist.npz", x_train=images, y_train=labels)
    mark(folder, NAME, n=N)


def _arrays(folder):
    import tensorflow as tf

    with np.load(Path(folder) / NAME / "mnist.npz") as d:
        x, y = d["x_train"].astype(np.float32) / 255, d["y_train"]
    return tf.data.Dataset.from_tensor_slices((x, y))


def _noise(x, y):
    import tensorflow as tf

    return x + tf.random.normal(tf.shape(x), stddev=0.1), y


def slow(folder):
    import tensorflow as tf

    ds = _arrays(folder).map(_noise, num_parallel_calls=tf.data.AUTOTUNE).cache()
    return ds.shuffle(N).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    import tensorflow as tf

    ds = _arrays(folder).cache().map(_noise, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.shuffle(N).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def model():
    import keras

    keras.utils.set_random_seed(0)
    return compiled(keras.Sequential([
        keras.Input((SIZE, SIZE, 1)),
        keras.layers.Conv2D(96, 3, activation="relu"), keras.layers.Conv2D(96, 3, activation="relu"),
        keras.layers.MaxPooling2D(2), keras.layers.Flatten(), keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(4)]))
