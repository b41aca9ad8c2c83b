"""keras-io "Image classification from scratch": ``image_dataset_from_directory`` (its steps written
out), then a data
augmentation model (RandomFlip, RandomRotation) mapped over the batches with ``num_parallel_calls``, as
the example does. Planted: no ``cache()`` of the decoded images, which fit in memory, so every epoch
decodes and resizes every file again (the fix caches them ahead of the random augmentation)."""

from __future__ import annotations

from pathlib import Path

from doctor_corpus._common import done, mark, pattern_images, pooled_model, write_png_folders

SOURCE = ("keras-io 'Image classification from scratch' (image_dataset_from_directory + augmentation map): "
          "https://keras.io/examples/vision/image_classification_from_scratch/")
PLANTED = ("no_cache",)
VERDICT = "input-bound"
EXACT = False  # the augmentation is random in both

NAME = "keras_scratch"
N, SIZE, OUT, BATCH = 256, 96, 64, 32


def make_data(folder) -> None:
    if done(folder, NAME, n=N, size=SIZE):
        return
    images, labels = pattern_images(N, SIZE, seed=4)
    write_png_folders(Path(folder) / NAME, images, labels)
    mark(folder, NAME, n=N, size=SIZE)


def _pipeline(folder, *, cache: bool):
    import keras
    import tensorflow as tf

    # image_dataset_from_directory's steps (list the files, label by folder, decode, resize), written
    # out: its batched output, cached, read partly by one iterator, truncated the cache of the next
    # (TF 2.21; see the corpus README in lab/doctor_corpus.py).
    root = Path(folder) / NAME
    files = sorted(str(p) for p in root.glob("class_*/*.png"))
    labels = [int(Path(f).parent.name.split("_")[1]) for f in files]

    def load(path, label):
        img = tf.io.decode_png(tf.io.read_file(path), channels=3)
        return tf.image.resize(img, [OUT, OUT]), label

    ds = tf.data.Dataset.from_tensor_slices((files, labels)).map(load, num_parallel_calls=tf.data.AUTOTUNE)
    if cache:
        ds = ds.cache()
    augment = keras.Sequential([keras.layers.RandomFlip("horizontal"), keras.layers.RandomRotation(0.1)])
    ds = ds.batch(BATCH).map(lambda img, label: (augment(img), label), num_parallel_calls=tf.data.AUTOTUNE)
    return ds.prefetch(tf.data.AUTOTUNE)


def slow(folder):
    return _pipeline(folder, cache=False)


def fixed(folder, code=None):
    return _pipeline(folder, cache=True)


def model():
    return pooled_model((OUT, OUT, 3))
