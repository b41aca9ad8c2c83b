"""The TensorFlow tutorial "Image segmentation" (Oxford pets: images and trimaps of many sizes, decoded
and cached, a random flip applied to image and mask together, an encoder-decoder that predicts a class
per pixel). The images differ in size, so the per-example map that crops and resizes them (randomly,
after the cache) has to run before ``batch``: a control, nothing planted; the encoder-decoder's
convolutions at full resolution are the limit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from doctor_corpus._common import done, mark

from doctor_corpus_heldout._heldout import compiled

SOURCE = ("TensorFlow tutorial 'Image segmentation' (Oxford-IIIT pets, image + mask, random flip, "
          "encoder-decoder): https://www.tensorflow.org/tutorials/images/segmentation")
DOMAIN = "images"
PLANTED: tuple = ()
TOLERATED: tuple = ()
VERDICT = "compute-bound"
EXACT = False  # random crops and flips: the same count

NAME = "segmentation"
N, OUT, BATCH, MASK_CLASSES = 192, 96, 16, 3


def make_data(folder) -> None:
    if done(folder, NAME, n=N):
        return
    from PIL import Image

    rng = np.random.default_rng(121)
    root = Path(folder) / NAME
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    for i in range(N):
        h, w = (int(v) for v in rng.integers(140, 260, 2))
        yy, xx = np.mgrid[0:h, 0:w]
        cy, cx, r = rng.uniform(0.3, 0.7) * h, rng.uniform(0.3, 0.7) * w, rng.uniform(0.2, 0.35) * min(h, w)
        d = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
        mask = np.where(d < r - 3, 0, np.where(d < r + 3, 2, 1)).astype(np.uint8)  # pet, background, border
        img = np.clip(60 + 80 * (mask == 0)[..., None] + rng.normal(0, 25, (h, w, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(img).save(root / "images" / f"pet_{i:04d}.jpg", quality=85)
        Image.fromarray(mask).save(root / "annotations" / f"pet_{i:04d}.png")
    mark(folder, NAME, n=N)


def slow(folder):
    import tensorflow as tf

    root = Path(folder) / NAME
    images = sorted(str(p) for p in (root / "images").glob("*.jpg"))
    masks = [str(root / "annotations" / (Path(p).stem + ".png")) for p in images]

    def load(image_path, mask_path):
        image = tf.io.decode_jpeg(tf.io.read_file(image_path), channels=3)
        mask = tf.io.decode_png(tf.io.read_file(mask_path), channels=1)
        return image, mask

    def augment(image, mask):
        both = tf.concat([tf.cast(image, tf.float32) / 255.0, tf.cast(mask, tf.float32)], axis=-1)
        side = tf.minimum(tf.shape(both)[0], tf.shape(both)[1])
        both = tf.image.random_crop(both, tf.stack([side, side, 4]))
        both = tf.image.resize(both, [OUT, OUT], method="nearest")
        both = tf.image.random_flip_left_right(both)
        return both[..., :3], tf.cast(both[..., 3], tf.int32)

    ds = tf.data.Dataset.from_tensor_slices((images, masks)).map(load, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.cache().shuffle(N).map(augment, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.batch(BATCH).prefetch(tf.data.AUTOTUNE)


def fixed(folder, code=None):
    return slow(folder)


def model():
    import keras

    keras.utils.set_random_seed(0)
    inp = keras.Input((OUT, OUT, 3))
    d1 = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(inp)
    d2 = keras.layers.Conv2D(64, 3, strides=2, padding="same", activation="relu")(d1)
    d2 = keras.layers.Conv2D(64, 3, padding="same", activation="relu")(d2)
    u1 = keras.layers.Conv2DTranspose(32, 3, strides=2, padding="same", activation="relu")(d2)
    x = keras.layers.concatenate([u1, d1])
    x = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(x)
    out = keras.layers.Conv2D(MASK_CLASSES, 1)(x)
    return compiled(keras.Model(inp, out))
