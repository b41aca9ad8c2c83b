"""The TensorFlow "Load and preprocess images" pipeline with ``shuffle`` placed before ``cache``
(a common reordering of the tutorial's ``configure_for_performance``; the tf.data performance guide
warns about it). Planted: the shuffled order is cached, so every epoch after the first repeats the first
epoch's order (the fix: ``cache()`` then ``shuffle()``)."""

from __future__ import annotations

from pathlib import Path

from doctor_corpus._common import conv_model, done, mark, pattern_images, write_png_folders

SOURCE = ("TensorFlow tutorial 'Load and preprocess images' (configure_for_performance) with shuffle before "
          "cache; see https://www.tensorflow.org/guide/data_performance#caching and "
          "https://www.tensorflow.org/tutorials/load_data/images")
PLANTED = ("shuffle_before_cache",)
VERDICT = "compute-bound"
EXACT = True  # the same examples, in another order

NAME = "shuffle_cache"
N, SIZE, BATCH = 768, 48, 32


def make_data(folder) -> None:
    if done(folder, NAME, n=N, size=SIZE):
        return
    images, labels = pattern_images(N, SIZE, seed=9)
    write_png_folders(Path(folder) / NAME, images, labels)
    mark(folder, NAME, n=N, size=SIZE)


def decoded(folder, name: str = NAME):
    """(image, label) per PNG under ``folder/name``, decoded in the graph."""
    import tensorflow as tf

    root = Path(folder) / name
    files = sorted(str(p) for p in root.glob("class_*/*.png"))
    labels = [int(Path(f).parent.name.split("_")[1]) for f in files]

    def load(path, label):
        return tf.io.decode_png(tf.io.read_file(path), channels=3), label

    return tf.data.Dataset.from_tensor_slices((files, labels)).map(load, num_parallel_calls=tf.data.AUTOTUNE)


def slow(folder):
    import tensorflow as tf

    return decoded(folder).shuffle(N).cache().batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    import tensorflow as tf

    return decoded(folder).cache().shuffle(N).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def model():
    # Two convolutions at full resolution: the step outweighs reading the cache, so the case is
    # compute-bound by measurement (the script's replayed batch), not by declaration (why two:
    # results/NOTES.md, the doctor's corpus).
    return conv_model((SIZE, SIZE, 3), filters=48, strides=1, second=24)
