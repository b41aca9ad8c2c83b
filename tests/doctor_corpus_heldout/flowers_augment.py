"""The TensorFlow tutorial "Image classification" (flowers photos in class folders, random flips and
brightness as augmentation, a small convnet), with its loader written by hand as users often do: one
function that reads, decodes and resizes each JPEG and then augments it with ``tf.image.random_*`` ops,
mapped without ``num_parallel_calls`` and without a cache. Planted: the missing cache (the decoded,
resized photos fit in memory; the fix: read, decode and resize, then ``cache()``, then the random ops in
their own map, so that each epoch still draws new ones: a cache after the augmentation would be
``random_before_cache``). The map is serial too (its random ops make it stateful, so TensorFlow does not
parallelise it itself), but on two shared cores its fix alone measured 1.07x to 1.30x over the rounds
of one run (median 1.17x): ``serial_map`` is tolerated, not planted."""

from __future__ import annotations

from pathlib import Path

from doctor_corpus._common import CLASSES, done, mark, pattern_images

from doctor_corpus_heldout._heldout import compiled

SOURCE = ("TensorFlow tutorial 'Image classification' (flowers JPEGs, random flip/brightness augmentation, "
          "small convnet): https://www.tensorflow.org/tutorials/images/classification")
DOMAIN = "images"
PLANTED = ("no_cache",)
TOLERATED = ("serial_map",)
VERDICT = "input-bound"
EXACT = False  # random flips and brightness: the same count and labels

NAME = "flowers_augment"
N, SIZE, OUT, BATCH = 512, 224, 64, 32


def make_data(folder) -> None:
    if done(folder, NAME, n=N, size=SIZE):
        return
    from PIL import Image

    for start in range(0, N, 64):
        images, _ = pattern_images(64, SIZE, seed=140 + start)
        for j, img in enumerate(images):
            i = start + j
            path = Path(folder) / NAME / f"flower_{i % CLASSES}" / f"photo_{i:05d}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(img).save(path, quality=80)
    mark(folder, NAME, n=N, size=SIZE)


def _files(folder):
    import tensorflow as tf

    files = sorted(str(p) for p in (Path(folder) / NAME).glob("flower_*/*.jpg"))
    labels = [int(Path(f).parent.name.split("_")[1]) for f in files]
    return tf.data.Dataset.from_tensor_slices((files, labels))


def _read(path, label):
    import tensorflow as tf

    img = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
    return tf.image.resize(img, [OUT, OUT]) / 255.0, label


def _augment(img, label):
    import tensorflow as tf

    img = tf.image.random_flip_left_right(img)
    return tf.clip_by_value(tf.image.random_brightness(img, 0.2), 0.0, 1.0), label


def _pipeline(folder, *, parallel: bool, cache: bool):
    import tensorflow as tf

    calls = tf.data.AUTOTUNE if parallel else None
    if cache:
        ds = _files(folder).map(_read, num_parallel_calls=calls).cache().map(_augment, num_parallel_calls=calls)
    else:
        ds = _files(folder).map(lambda p, y: _augment(*_read(p, y)), num_parallel_calls=calls)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def slow(folder):
    return _pipeline(folder, parallel=False, cache=False)


def fixed(folder, code=None):
    """``code`` "serial_map" (tolerated, not planted): the map made parallel alone; "no_cache": the cache
    alone; None: both."""
    return _pipeline(folder, parallel=code in (None, "serial_map"), cache=code in (None, "no_cache"))


def model():
    import keras

    keras.utils.set_random_seed(0)
    return compiled(keras.Sequential([
        keras.Input((OUT, OUT, 3)), keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
        keras.layers.MaxPooling2D(), keras.layers.Flatten(), keras.layers.Dense(CLASSES)]))
