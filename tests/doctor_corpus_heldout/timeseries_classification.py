"""keras-io "Timeseries classification from scratch" (FordA: univariate series of 500 steps, two
classes, three Conv1D + BatchNormalization + ReLU blocks of 64 filters, global average pooling). The
arrays are in memory and sliced into shuffled batches. A control: nothing planted; the convolutions are
the limit (BatchNormalization's moving statistics are non-trainable weights, not a frozen backbone)."""

from __future__ import annotations

import numpy as np

from doctor_corpus_heldout._heldout import compiled

SOURCE = ("keras-io 'Timeseries classification from scratch' (FordA, Conv1D+BatchNorm blocks): "
          "https://keras.io/examples/timeseries/timeseries_classification_from_scratch/")
DOMAIN = "time series or tabular"
PLANTED: tuple = ()
TOLERATED: tuple = ()
VERDICT = "compute-bound"
EXACT = False  # shuffled each epoch: the same examples in another order

NAME = "timeseries_classification"
N, LENGTH, BATCH = 1024, 500, 32


def make_data(folder) -> None:
    """Nothing on disk: the example loads FordA's arrays into memory; these are generated there."""


def _arrays():
    rng = np.random.default_rng(51)
    y = np.arange(N) % 2
    t = np.arange(LENGTH)
    x = np.sin(2 * np.pi * t[None, :] / (20 + 15 * y[:, None]) + rng.uniform(0, 6.3, (N, 1)))
    x = x + rng.normal(0, 0.5, (N, LENGTH))
    return x[..., None].astype(np.float32), y.astype(np.int64)


def slow(folder):
    import tensorflow as tf

    x, y = _arrays()
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(N).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    return slow(folder)


def model():
    import keras

    keras.utils.set_random_seed(0)
    inp = keras.Input((LENGTH, 1))
    x = inp
    for _ in range(3):
        x = keras.layers.Conv1D(64, 3, padding="same")(x)
        x = keras.layers.BatchNormalization()(x)
        x = keras.layers.ReLU()(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    out = keras.layers.Dense(2)(x)
    return compiled(keras.Model(inp, out))
