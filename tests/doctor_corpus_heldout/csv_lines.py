"""The TensorFlow tutorial "Load CSV data", its low-level part: a CSV read line by line with
``tf.data.TextLineDataset`` and each line parsed with ``tf.io.decode_csv`` in a map before ``batch``,
under the tutorial's small regression model (abalone: normalise, one hidden layer). Planted: the
per-line map, which gives the same output on whole batches of lines (the fix: ``batch`` first, then
``decode_csv`` on the batch, as ``CsvDataset`` and ``make_csv_dataset`` do in C++)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from doctor_corpus._common import done, mark

from doctor_corpus_heldout._heldout import compiled

SOURCE = ("TensorFlow tutorial 'Load CSV data' (TextLineDataset + decode_csv per line; abalone regression): "
          "https://www.tensorflow.org/tutorials/load_data/csv")
DOMAIN = "time series or tabular"
PLANTED = ("map_before_batch",)
TOLERATED = ("no_cache",)  # the parsed rows fit in memory: caching them would also remove the parsing
VERDICT = "input-bound"
EXACT = True

NAME = "csv_lines"
ROWS, FEATURES, BATCH = 40000, 8, 256
COLUMNS = ["length", "diameter", "height", "whole", "shucked", "viscera", "shell", "sex_code", "age"]


def make_data(folder) -> None:
    if done(folder, NAME, rows=ROWS):
        return
    import pandas as pd

    rng = np.random.default_rng(21)
    x = rng.normal(0, 1, (ROWS, FEATURES)).astype(np.float32)
    age = x @ rng.normal(0, 1, FEATURES) + 10 + rng.normal(0, 0.5, ROWS)
    df = pd.DataFrame(np.column_stack([x, age]).round(4), columns=COLUMNS)
    (Path(folder) / NAME).mkdir(parents=True, exist_ok=True)
    df.to_csv(Path(folder) / NAME / "abalone_train.csv", index=False)
    mark(folder, NAME, rows=ROWS)


def _lines(folder):
    import tensorflow as tf

    return tf.data.TextLineDataset(str(Path(folder) / NAME / "abalone_train.csv")).skip(1)


def _decode(lines):
    import tensorflow as tf

    fields = tf.io.decode_csv(lines, record_defaults=[0.0] * (FEATURES + 1))
    return tf.stack(fields[:FEATURES], axis=-1), fields[FEATURES]


def slow(folder):
    import tensorflow as tf

    return _lines(folder).map(_decode).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    import tensorflow as tf

    return _lines(folder).batch(BATCH).map(_decode).prefetch(tf.data.AUTOTUNE)


def model():
    import keras

    keras.utils.set_random_seed(0)
    norm = keras.layers.Normalization(mean=np.zeros(FEATURES), variance=np.ones(FEATURES))
    return compiled(keras.Sequential([keras.Input((FEATURES,)), norm, keras.layers.Dense(64, activation="relu"),
                                      keras.layers.Dense(1)]), loss="mse")
