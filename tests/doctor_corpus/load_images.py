"""The TensorFlow tutorial "Load and preprocess images", its tf.data part: list the files, read, decode,
resize, batch. Planted: no ``cache()`` although the decoded images fit in memory, so every epoch
decodes every PNG again (the tutorial's ``configure_for_performance`` caches)."""

from __future__ import annotations

from pathlib import Path

from doctor_corpus._common import conv_model, done, mark, pattern_images, write_png_folders

SOURCE = ("TensorFlow tutorial 'Load and preprocess images' (tf.data: list files, read_file, decode, resize, "
          "batch): https://www.tensorflow.org/tutorials/load_data/images")
PLANTED = ("no_cache",)
VERDICT = "input-bound"
EXACT = True  # slow and fixed deliver the same examples

NAME = "load_images"
N, SIZE, OUT, BATCH = 320, 96, 48, 32


def make_data(folder) -> None:
    if done(folder, NAME, n=N, size=SIZE):
        return
    images, labels = pattern_images(N, SIZE, seed=1)
    write_png_folders(Path(folder) / NAME, images, labels)
    mark(folder, NAME, n=N, size=SIZE)


def _pipeline(folder, *, cache: bool):
    import tensorflow as tf

    root = Path(folder) / NAME
    class_names = sorted(p.name for p in root.iterdir() if p.is_dir())
    files = tf.data.Dataset.list_files(str(root / "*" / "*.png"), shuffle=False)

    def get_label(path):
        one_hot = tf.strings.split(path, "/")[-2] == class_names
        return tf.argmax(tf.cast(one_hot, tf.int64))

    def process_path(path):
        img = tf.io.decode_png(tf.io.read_file(path), channels=3)
        return tf.image.resize(img, [OUT, OUT]), get_label(path)

    ds = files.map(process_path, num_parallel_calls=tf.data.AUTOTUNE)
    if cache:
        ds = ds.cache()
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def slow(folder):
    return _pipeline(folder, cache=False)


def fixed(folder, code=None):
    return _pipeline(folder, cache=True)


def model():
    return conv_model((OUT, OUT, 3))
