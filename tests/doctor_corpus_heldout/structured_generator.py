"""keras-io "Structured data classification from scratch" (the heart-disease CSV: numeric and
categorical columns, one model input per column, a string column looked up inside the model), fed the
way many users first write it: a Python generator over ``DataFrame.iterrows()`` yielding one record at
a time through ``tf.data.Dataset.from_generator``. Planted: that per-record Python (the fix: the
DataFrame's columns as tensors, ``from_tensor_slices((dict(df), target)).batch()``, as the example does)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from doctor_corpus._common import done, mark

from doctor_corpus_heldout._heldout import compiled

SOURCE = ("keras-io 'Structured data classification from scratch' (heart-disease CSV via pandas, "
          "one input per column): https://keras.io/examples/structured_data/structured_data_classification_from_scratch/")
DOMAIN = "time series or tabular"
PLANTED = ("python_in_pipeline",)
TOLERATED = ("no_cache",)  # a cache after the generator would also remove the Python from later epochs
VERDICT = "input-bound"
EXACT = True

NAME = "structured_generator"
ROWS, BATCH = 6000, 32
NUMERIC = ("age", "trestbps", "chol", "thalach", "oldpeak", "slope")
INTEGER = ("sex", "cp", "fbs", "restecg", "exang", "ca")
THAL = ("fixed", "normal", "reversible")


def make_data(folder) -> None:
    if done(folder, NAME, rows=ROWS):
        return
    import pandas as pd

    rng = np.random.default_rng(31)
    df = pd.DataFrame({c: rng.normal(50, 10, ROWS).round(1) for c in NUMERIC})
    for c, k in zip(INTEGER, (2, 4, 2, 3, 2, 4)):
        df[c] = rng.integers(0, k, ROWS)
    df["thal"] = rng.choice(THAL, ROWS)
    df["target"] = ((df["age"] + 10 * df["cp"] + rng.normal(0, 10, ROWS)) > 65).astype(int)
    (Path(folder) / NAME).mkdir(parents=True, exist_ok=True)
    df.to_csv(Path(folder) / NAME / "heart.csv", index=False)
    mark(folder, NAME, rows=ROWS)


def _frame(folder):
    import pandas as pd

    df = pd.read_csv(Path(folder) / NAME / "heart.csv")
    return df, df.pop("target")


def _signature():
    import tensorflow as tf

    spec = {c: tf.TensorSpec([], tf.float64) for c in NUMERIC}
    spec.update({c: tf.TensorSpec([], tf.int64) for c in INTEGER})
    spec["thal"] = tf.TensorSpec([], tf.string)
    return spec, tf.TensorSpec([], tf.int64)


def slow(folder):
    import tensorflow as tf

    df, target = _frame(folder)

    def records():
        for i, row in df.iterrows():
            features = {c: float(row[c]) for c in NUMERIC}
            features.update({c: int(row[c]) for c in INTEGER})
            features["thal"] = str(row["thal"])
            yield features, int(target[i])

    ds = tf.data.Dataset.from_generator(records, output_signature=_signature())
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    import tensorflow as tf

    df, target = _frame(folder)
    columns = {c: df[c].to_numpy(np.float64) for c in NUMERIC}
    columns.update({c: df[c].to_numpy(np.int64) for c in INTEGER})
    columns["thal"] = df["thal"].to_numpy(str)
    ds = tf.data.Dataset.from_tensor_slices((columns, target.to_numpy(np.int64)))
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def model():
    import keras

    keras.utils.set_random_seed(0)
    inputs, encoded = {}, []
    for c in NUMERIC:
        inputs[c] = keras.Input((), name=c, dtype="float64")
        x = keras.layers.Reshape((1,))(keras.ops.cast(inputs[c], "float32"))
        encoded.append(keras.layers.Normalization(mean=50.0, variance=100.0)(x))
    for c, k in zip(INTEGER, (2, 4, 2, 3, 2, 4)):
        inputs[c] = keras.Input((), name=c, dtype="int64")
        encoded.append(keras.layers.CategoryEncoding(k, output_mode="one_hot")(inputs[c]))
    inputs["thal"] = keras.Input((), name="thal", dtype="string")
    lookup = keras.layers.StringLookup(vocabulary=list(THAL), output_mode="one_hot")
    encoded.append(lookup(inputs["thal"]))
    x = keras.layers.concatenate(encoded)
    x = keras.layers.Dense(32, activation="relu")(x)
    x = keras.layers.Dropout(0.5)(x)
    out = keras.layers.Dense(1, activation="sigmoid")(x)
    return compiled(keras.Model(inputs, out), loss="binary_crossentropy")
