"""The TensorFlow tutorial "Time series forecasting" (the Jena climate series: 14 features, hourly
windows of 24 steps, predict the next temperature, the tutorial's multi-step dense model), with its
``WindowGenerator`` rewritten as a ``keras.utils.PyDataset`` run by four thread workers, whose
``__getitem__`` builds each window in a Python loop (row by row, normalising each row). Planted: that
Python, which holds the GIL, so the four threads take turns (more workers do not help; the fix is
vectorising: the batch's windows gathered with one fancy index and normalised with one broadcast)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from doctor_corpus._common import done, mark

from doctor_corpus_heldout._heldout import compiled

SOURCE = ("TensorFlow tutorial 'Time series forecasting' (Jena climate, WindowGenerator, multi-step dense): "
          "https://www.tensorflow.org/tutorials/structured_data/time_series")
DOMAIN = "time series or tabular"
PLANTED = ("python_in_pipeline",)
TOLERATED: tuple = ()
VERDICT = "input-bound"
EXACT = True

NAME = "timeseries_pydataset"
STEPS, FEATURES, WIDTH, BATCH, WORKERS = 60000, 14, 24, 32, 4


def make_data(folder) -> None:
    if done(folder, NAME, steps=STEPS):
        return
    rng = np.random.default_rng(41)
    t = np.arange(STEPS)[:, None]
    series = (np.sin(2 * np.pi * t / 24 * rng.uniform(0.5, 2, FEATURES)) * rng.uniform(1, 10, FEATURES)
              + rng.normal(0, 1, (STEPS, FEATURES)) + rng.uniform(-5, 20, FEATURES))
    (Path(folder) / NAME).mkdir(parents=True, exist_ok=True)
    np.save(Path(folder) / NAME / "jena.npy", series.astype(np.float32))
    mark(folder, NAME, steps=STEPS)


def _windows(folder, *, vectorised: bool):
    import keras

    data = np.load(Path(folder) / NAME / "jena.npy")
    mean, std = data.mean(axis=0), data.std(axis=0)
    starts = np.arange(len(data) - WIDTH - 1)

    class WindowSequence(keras.utils.PyDataset):
        def __len__(self):
            return len(starts) // BATCH

        def __getitem__(self, index):
            batch = starts[index * BATCH:(index + 1) * BATCH]
            if vectorised:
                x = (data[batch[:, None] + np.arange(WIDTH)] - mean) / std
                y = (data[batch + WIDTH, 1] - mean[1]) / std[1]
                return x.astype(np.float32), y.astype(np.float32)
            xs, ys = [], []
            for s in batch:
                window = []
                for row in data[s:s + WIDTH]:
                    window.append([(v - m) / d for v, m, d in zip(row.tolist(), mean.tolist(), std.tolist())])
                xs.append(window)
                ys.append((data[s + WIDTH, 1] - mean[1]) / std[1])
            return np.asarray(xs, np.float32), np.asarray(ys, np.float32)

    return WindowSequence(workers=WORKERS, use_multiprocessing=False)


def slow(folder):
    return _windows(folder, vectorised=False)


def fixed(folder, code=None):
    return _windows(folder, vectorised=True)


def model():
    import keras

    keras.utils.set_random_seed(0)
    return compiled(keras.Sequential([keras.Input((WIDTH, FEATURES)), keras.layers.Flatten(),
                                      keras.layers.Dense(64, activation="relu"),
                                      keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]), loss="mse")
