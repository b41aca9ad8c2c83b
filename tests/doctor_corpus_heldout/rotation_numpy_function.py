"""The tf.data guide's "Applying arbitrary Python logic" pattern (a random rotation by a Python image
library, wrapped in ``tf.py_function``), as Kaggle and Stack Overflow users apply it for augmentation:
images in memory, rotated one at a time by PIL in a map that already runs in parallel
(``num_parallel_calls=AUTOTUNE``), batched, under a light convnet. Planted: that Python, which holds the
GIL, so the parallel map's threads take turns (the fix: the rotation in graph ops on whole batches,
``keras.layers.RandomRotation``). The guide's rotation is ``scipy.ndimage.rotate``; PIL's here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from doctor_corpus._common import conv_model, done, mark, pattern_images

SOURCE = ("TensorFlow guide 'tf.data: Build TensorFlow input pipelines', 'Applying arbitrary Python logic' "
          "(random rotation in tf.py_function): https://www.tensorflow.org/guide/data#applying_arbitrary_python_logic")
DOMAIN = "images"
PLANTED = ("python_in_pipeline",)
TOLERATED: tuple = ()
VERDICT = "input-bound"
EXACT = False  # random rotations: the same count and labels

NAME = "rotation_numpy_function"
N, SIZE, BATCH = 2048, 32, 64
_RNG = np.random.default_rng(0)


def make_data(folder) -> None:
    if done(folder, NAME, n=N, size=SIZE):
        return
    images, labels = pattern_images(N, SIZE, seed=111)
    (Path(folder) / NAME).mkdir(parents=True, exist_ok=True)
    np.savez(Path(folder) / NAME / "images.npz", images=images, labels=labels)
    mark(folder, NAME, n=N, size=SIZE)


def random_rotate_image(image):
    """Rotates one image by a random angle in [-30, 30] degrees, in Python (PIL)."""
    from PIL import Image

    angle = float(_RNG.uniform(-30, 30))
    return np.asarray(Image.fromarray(image.numpy()).rotate(angle, resample=Image.BILINEAR), np.uint8)


def _arrays(folder):
    import tensorflow as tf

    d = np.load(Path(folder) / NAME / "images.npz")
    return tf.data.Dataset.from_tensor_slices((d["images"], d["labels"]))


def slow(folder):
    import tensorflow as tf

    def rotate(image, label):
        im = tf.py_function(random_rotate_image, [image], tf.uint8)
        im.set_shape([SIZE, SIZE, 3])
        return im, label

    return _arrays(folder).map(rotate, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    import keras
    import tensorflow as tf

    rotation = keras.layers.RandomRotation(30 / 360, fill_mode="constant", seed=0)
    return _arrays(folder).batch(BATCH).map(
        lambda x, y: (tf.cast(rotation(x, training=True), tf.uint8), y),
        num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def model():
    return conv_model((SIZE, SIZE, 3), filters=8)
