"""The TensorFlow guide "Better performance with the tf.data API", its naive pipeline: files read one
after the other through ``interleave`` without ``num_parallel_calls`` ("sequential interleave"), each
file a ``from_generator`` reader that waits to open the file and to read each record (the guide's
``ArtificialDataset``; here the records are real rows of a .npy shard, the waits those of a network
disk: ``time.sleep``, which releases the GIL as a real read does). Planted: the sequential interleave
(the guide's fix: ``num_parallel_calls=tf.data.AUTOTUNE``). The reader is Python, as in the guide: a
``python_in_pipeline`` finding is tolerated, not planted (the waits are the disk's, not Python's)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from doctor_corpus._common import CLASSES, dense_model, done, mark

SOURCE = ("TensorFlow guide 'Better performance with the tf.data API' (naive pipeline; sequential vs "
          "parallel interleave of ArtificialDataset): https://www.tensorflow.org/guide/data_performance")
PLANTED = ("serial_interleave",)
TOLERATED = ("python_in_pipeline",)
VERDICT = "input-bound"
EXACT = True

NAME = "data_performance"
SHARDS, PER_SHARD, WIDTH, BATCH = 8, 32, 64, 32
OPEN_S, READ_S = 0.02, 0.002  # the guide uses 30 ms and 15 ms: scaled down to keep an epoch short


def make_data(folder) -> None:
    if done(folder, NAME, shards=SHARDS, rows=PER_SHARD, width=WIDTH, fmt="npy"):
        return
    root = Path(folder) / NAME
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(5)
    for s in range(SHARDS):
        labels = (np.arange(PER_SHARD) + s) % CLASSES
        np.save(root / f"shard-{s:02d}.npy", rng.normal(0, 1, (PER_SHARD, WIDTH)).astype(np.float32)
                + labels[:, None])
        np.save(root / f"shard-{s:02d}.labels.npy", labels)
    mark(folder, NAME, shards=SHARDS, rows=PER_SHARD, width=WIDTH, fmt="npy")


def _pipeline(folder, *, parallel: bool):
    import tensorflow as tf

    root = Path(folder) / NAME
    signature = (tf.TensorSpec([WIDTH], tf.float32), tf.TensorSpec([], tf.int64))

    def read_shard(shard):
        time.sleep(OPEN_S)  # opening the file
        rows = np.load(root / f"shard-{int(shard):02d}.npy", mmap_mode="r")
        labels = np.load(root / f"shard-{int(shard):02d}.labels.npy")
        for i in range(PER_SHARD):
            time.sleep(READ_S)  # reading a record from the file
            yield np.array(rows[i]), labels[i]

    def artificial_dataset(shard):
        return tf.data.Dataset.from_generator(read_shard, output_signature=signature, args=(shard,))

    ds = tf.data.Dataset.range(SHARDS).interleave(artificial_dataset, cycle_length=4,
                                                  num_parallel_calls=tf.data.AUTOTUNE if parallel else None)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def slow(folder):
    return _pipeline(folder, parallel=False)


def fixed(folder, code=None):
    return _pipeline(folder, parallel=True)


def model():
    return dense_model((WIDTH,))
