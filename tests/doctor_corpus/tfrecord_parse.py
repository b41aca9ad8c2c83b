"""The TensorFlow tutorial "TFRecord and tf.train.Example": serialized ``tf.train.Example`` records
read back with ``parse_single_example`` mapped over each record before ``batch``. Planted: the
per-record parse (batch, then ``parse_example`` on the whole batch, is the fix), and a 32-record shuffle
buffer on 8192 records (an order finding)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from doctor_corpus._common import CLASSES, dense_model, done, mark

SOURCE = ("TensorFlow tutorial 'TFRecord and tf.train.Example' (TFRecordDataset, parse_single_example "
          "per record): https://www.tensorflow.org/tutorials/load_data/tfrecord")
PLANTED = ("map_before_batch", "small_shuffle_buffer")
VERDICT = "input-bound"
EXACT = True

NAME = "tfrecord_parse"
N, WIDTH, BATCH, BUFFER = 8192, 16, 256, 32  # batches of 256: the per-record parse outweighs the step
FEATURES = None  # built on first use: the parse spec needs TensorFlow


def make_data(folder) -> None:
    if done(folder, NAME, n=N, width=WIDTH):
        return
    import tensorflow as tf

    root = Path(folder) / NAME
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    labels = np.arange(N) % CLASSES
    x = rng.normal(0, 1, (N, WIDTH)).astype(np.float32) + labels[:, None]
    with tf.io.TFRecordWriter(str(root / "data.tfrecord")) as w:
        for xi, yi in zip(x, labels):
            ex = tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=xi)),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(yi)])),
            }))
            w.write(ex.SerializeToString())
    mark(folder, NAME, n=N, width=WIDTH)


def _spec():
    import tensorflow as tf

    return {"x": tf.io.FixedLenFeature([WIDTH], tf.float32), "label": tf.io.FixedLenFeature([], tf.int64)}


def _pipeline(folder, *, batched_parse: bool, buffer: int):
    import tensorflow as tf

    spec = _spec()

    def parse(record):
        ex = tf.io.parse_single_example(record, spec)
        return ex["x"], ex["label"]

    def parse_batch(records):
        ex = tf.io.parse_example(records, spec)
        return ex["x"], ex["label"]

    ds = tf.data.TFRecordDataset(str(Path(folder) / NAME / "data.tfrecord")).shuffle(buffer, seed=0)
    if batched_parse:
        ds = ds.batch(BATCH).map(parse_batch, num_parallel_calls=tf.data.AUTOTUNE)
    else:
        ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH)
    return ds.prefetch(tf.data.AUTOTUNE)


def slow(folder):
    return _pipeline(folder, batched_parse=False, buffer=BUFFER)


def fixed(folder, code=None):
    return _pipeline(folder, batched_parse=code in (None, "map_before_batch"),
                     buffer=N if code in (None, "small_shuffle_buffer") else BUFFER)


def model():
    return dense_model((WIDTH,), width=16)
