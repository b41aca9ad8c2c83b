"""The small conv net the examples, the distribution demos and the benches train.

Keras is imported only when a model is built.
"""

from __future__ import annotations

import keras

from kit.util import check_int

__all__ = ["small_model"]


def small_model(frame_shape, classes: int, *, seed: int = 0, width: int = 1, head_only: bool = False):
    """A small classifier of ``(H, W, 1)`` frames, outputting logits.

    Two strided convolutions and global pooling: tens of ms per step of 128 frames on
    2 CPU cores, like a light model on a GPU.

    Args:
        frame_shape: ``(H, W)`` of the frames (inputs are ``(H, W, 1)``).
        classes: outputs (logits).
        seed: initialises the weights (this sets Keras's global seeds).
        width: multiplies the conv filters (more compute per example).
        head_only: only a Dense head on pooled frames: little compute per example, like
            training a head on a frozen backbone (the spectrogram user's case).
    """

    width = check_int("width", width)
    keras.utils.set_random_seed(seed)
    if head_only:
        body = [keras.layers.AveragePooling2D(4), keras.layers.Flatten()]
    else:
        body = [keras.layers.Conv2D(16 * width, 3, strides=2, activation="relu"),
                keras.layers.Conv2D(32 * width, 3, strides=2, activation="relu"),
                keras.layers.GlobalAveragePooling2D()]
    return keras.Sequential([keras.Input(tuple(frame_shape) + (1,)), *body, keras.layers.Dense(classes)])
