"""A Kaggle-style pipeline: a pandas DataFrame of image paths and labels, each image read from the
dataset's (network) disk with OpenCV and resized inside ``tf.numpy_function``, mapped without
``num_parallel_calls``. A ``numpy_function`` is stateful to TensorFlow, which then runs the map one
element at a time. Planted: that serial map (the fix: ``num_parallel_calls=tf.data.AUTOTUNE``); each
file read waits 2 ms on the disk (``time.sleep``, which releases the GIL as a real read does), so the
fix pays even on a busy two-core machine. The Python in the map is real too, but its fix (read in the
graph) cannot be timed against a simulated disk: ``python_in_pipeline`` is tolerated, not planted.
``no_cache`` is tolerated too: the decoded images (7 MB) would fit in memory, but the first, filling
epoch takes longer than a short measuring round, so its gain did not show in the fits (1.03x)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from doctor_corpus._common import done, mark, pattern_images, pooled_model, write_png_folders

SOURCE = ("Kaggle-style DataFrame of paths + tf.numpy_function(cv2.imread) decoding (the common pattern of "
          "Kaggle notebooks; https://www.tensorflow.org/api_docs/python/tf/numpy_function)")
PLANTED = ("serial_map",)
TOLERATED = ("python_in_pipeline", "no_cache")
VERDICT = "input-bound"
EXACT = True

NAME = "kaggle_numpy_function"
N, SIZE, OUT, BATCH = 256, 192, 96, 32
LATENCY_S = 0.002  # per file read: a network disk's latency (as sequence_npy)


def make_data(folder) -> None:
    if done(folder, NAME, n=N, size=SIZE):
        return
    import pandas as pd

    images, labels = pattern_images(N, SIZE, seed=6)
    paths = write_png_folders(Path(folder) / NAME, images, labels)
    pd.DataFrame({"path": [str(p) for p in paths], "label": labels}).to_csv(Path(folder) / NAME / "train.csv",
                                                                           index=False)
    mark(folder, NAME, n=N, size=SIZE)


def load_image(path):
    import cv2

    time.sleep(LATENCY_S)
    img = cv2.imread(path.decode())
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB).astype(np.float32)
    img = cv2.resize(img, (OUT, OUT), interpolation=cv2.INTER_AREA)
    return img / np.float32(255)


def _pipeline(folder, *, parallel: bool):
    import pandas as pd
    import tensorflow as tf

    df = pd.read_csv(Path(folder) / NAME / "train.csv")
    ds = tf.data.Dataset.from_tensor_slices((df["path"].values, df["label"].values))

    def with_python(path, label):
        img = tf.numpy_function(load_image, [path], tf.float32)
        img.set_shape([OUT, OUT, 3])
        return img, label

    ds = ds.map(with_python, num_parallel_calls=tf.data.AUTOTUNE if parallel else None)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def slow(folder):
    return _pipeline(folder, parallel=False)


def fixed(folder, code=None):
    return _pipeline(folder, parallel=True)


def model():
    return pooled_model((OUT, OUT, 3), rescale=False)
