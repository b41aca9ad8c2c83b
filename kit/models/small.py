"""The small conv net the examples, the distribution demos and the benches train."""

from __future__ import annotations

import keras

from kit.util import check_int


def small_model(frame_shape, classes: int, *, seed: int = 0, width: int = 1, head_only: bool = False):
    """A small classifier of ``(H, W, 1)`` frames (``frame_shape``: ``(H, W)``), outputting logits: two
    strided convolutions (``width`` times the filters) and global pooling, or with ``head_only`` a
    Dense head on pooled frames, like a head on a frozen backbone. ``seed`` sets Keras's global seeds."""
    width = check_int("width", width)
    keras.utils.set_random_seed(seed)
    if head_only:
        body = [keras.layers.AveragePooling2D(4), keras.layers.Flatten()]
    else:
        body = [keras.layers.Conv2D(16 * width, 3, strides=2, activation="relu"),
                keras.layers.Conv2D(32 * width, 3, strides=2, activation="relu"),
                keras.layers.GlobalAveragePooling2D()]
    return keras.Sequential([keras.Input(tuple(frame_shape) + (1,)), *body, keras.layers.Dense(classes)])
