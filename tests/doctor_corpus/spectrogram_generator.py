"""A spectrogram loader as often written by hand: ``tf.data.Dataset.from_generator`` over (file, frame)
pairs, the generator ``np.load``-ing the whole spectrogram file for every frame it yields. Planted: the
whole file read per example (read amplification: load each file once, or memory-map it) and Python in
the pipeline (the frames can be read in the graph: ``tf.io.read_file`` + ``tf.io.decode_raw``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from doctor_corpus._common import CLASSES, dense_model, done, mark

SOURCE = ("Hand-written from_generator spectrogram loader (np.load per frame), the pattern of the TF "
          "'Simple audio recognition' tutorial's users: https://www.tensorflow.org/tutorials/audio/simple_audio "
          "and https://www.tensorflow.org/api_docs/python/tf/data/Dataset#from_generator")
PLANTED = ("read_amplification", "python_in_pipeline")
VERDICT = "input-bound"
EXACT = True

NAME = "spectrogram_generator"
FILES, FRAMES, BINS, BATCH = 4, 256, 512, 32


def make_data(folder) -> None:
    if done(folder, NAME, files=FILES, frames=FRAMES, bins=BINS):
        return
    root = Path(folder) / NAME
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    for f in range(FILES):
        spec = rng.normal(0, 1, (FRAMES, BINS)).astype(np.float32) + (f % CLASSES)
        np.save(root / f"spec-{f:02d}.npy", spec)
    mark(folder, NAME, files=FILES, frames=FRAMES, bins=BINS)


def _files(folder):
    return [str(Path(folder) / NAME / f"spec-{f:02d}.npy") for f in range(FILES)]


def _signature():
    import tensorflow as tf

    return (tf.TensorSpec([BINS], tf.float32), tf.TensorSpec([], tf.int64))


def _per_frame(folder):
    import tensorflow as tf

    files = _files(folder)

    def frames():
        for f, path in enumerate(files):
            for i in range(FRAMES):
                yield np.load(path)[i], f % CLASSES

    return tf.data.Dataset.from_generator(frames, output_signature=_signature()).batch(BATCH)


def _per_file(folder):
    import tensorflow as tf

    files = _files(folder)

    def frames():
        for f, path in enumerate(files):
            whole = np.load(path, mmap_mode="r")
            for i in range(FRAMES):
                yield np.array(whole[i]), f % CLASSES

    return tf.data.Dataset.from_generator(frames, output_signature=_signature()).batch(BATCH)


def _in_graph(folder):
    import tensorflow as tf

    files = _files(folder)
    header = Path(files[0]).stat().st_size - FRAMES * BINS * 4  # .npy: header, then the float32 data

    def read(path, label):
        raw = tf.io.read_file(path)
        spec = tf.reshape(tf.io.decode_raw(tf.strings.substr(raw, header, FRAMES * BINS * 4), tf.float32),
                          [FRAMES, BINS])
        return tf.data.Dataset.from_tensor_slices((spec, tf.fill([FRAMES], label)))

    labels = np.arange(FILES, dtype=np.int64) % CLASSES
    ds = tf.data.Dataset.from_tensor_slices((files, labels)).flat_map(read)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def slow(folder):
    return _per_frame(folder)


def fixed(folder, code=None):
    return _per_file(folder) if code == "read_amplification" else _in_graph(folder)


def model():
    return dense_model((BINS,))
