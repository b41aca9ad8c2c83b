"""An audio backbone for one-second spectrogram frames, a classifier head, and the transfer model.

``backbone()`` has YAMNet's layer layout (MobileNet v1 on ``(96, 64, 1)`` log-mel frames, a 1,024-d
embedding): what the pretrained networks such users fine-tune cost (``cost``), with seeded random
weights or a local ``.weights.h5`` file; nothing is downloaded. ``head()`` is the Dense classifier
that trains; ``transfer_model`` chains them with the backbone frozen: the spectrogram user's model.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import keras
from keras import layers

from kit.util import check_int

#: Input frame of YAMNet: 96 time steps of 10 ms by 64 mel bands, one channel.
FRAME_SHAPE = (96, 64, 1)
#: Width of the embedding (the output of global average pooling).
EMBEDDING_DIM = 1024

#: YAMNet's layer layout: (kind, stride, filters); every kernel is 3x3.
LAYERS = (
    ("conv", 2, 32),
    ("separable", 1, 64),
    ("separable", 2, 128),
    ("separable", 1, 128),
    ("separable", 2, 256),
    ("separable", 1, 256),
    ("separable", 2, 512),
    ("separable", 1, 512),
    ("separable", 1, 512),
    ("separable", 1, 512),
    ("separable", 1, 512),
    ("separable", 1, 512),
    ("separable", 2, 1024),
    ("separable", 1, 1024),
)


def _check_alpha(alpha: float) -> float:
    if not (isinstance(alpha, (int, float)) and 0 < alpha <= 4):
        raise ValueError(f"alpha must be in (0, 4], got {alpha!r}")
    return float(alpha)


def backbone(weights: str | os.PathLike | None = None, *, input_shape=FRAME_SHAPE,
             alpha: float = 1.0, seed: int = 0, name: str = "audio_backbone"):
    """Builds the YAMNet-like backbone: frames ``(B, 96, 64, 1)`` -> embeddings ``(B, 1024 * alpha)``.

    Args:
        weights: a local ``.weights.h5`` file saved from this architecture (same ``input_shape`` and
            ``alpha``), or None for random weights seeded by ``seed``.
        input_shape: ``(H, W, 1)`` of a frame.
        alpha: MobileNet's width multiplier: 1.0 is YAMNet's size; smaller is cheaper.
        name: the model's name.

    Returns:
        A ``keras.Model``, not frozen; ``FileNotFoundError`` if ``weights`` does not exist.
    """
    alpha = _check_alpha(alpha)
    if weights is not None and not Path(weights).is_file():
        raise FileNotFoundError(f"{weights}: backbone weights file not found (nothing is downloaded)")
    counter = iter(range(10_000))

    def he():  # ReLU nets keep their activation scale with He initialisation
        return keras.initializers.HeNormal(seed=seed * 1000 + next(counter))

    def depthwise_init():
        # Each depthwise filter sees 9 inputs, not Keras's fan-in of 9 * C.
        return keras.initializers.RandomNormal(stddev=math.sqrt(2.0 / 9.0), seed=seed * 1000 + next(counter))

    def bn(x, label):
        # YAMNet's batch norm: centre, no scale, epsilon 1e-4.
        return layers.BatchNormalization(scale=False, epsilon=1e-4, name=f"{label}_bn")(x)

    inputs = keras.Input(input_shape, name="frames")
    x = inputs
    for i, (kind, stride, filters) in enumerate(LAYERS, start=1):
        filters = max(8, int(filters * alpha))
        label = f"layer{i}"
        if kind == "conv":
            x = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False,
                              kernel_initializer=he(), name=f"{label}_conv")(x)
            x = layers.ReLU(name=f"{label}_relu")(bn(x, f"{label}_conv"))
        else:
            x = layers.DepthwiseConv2D(3, strides=stride, padding="same", use_bias=False,
                                       depthwise_initializer=depthwise_init(), name=f"{label}_depthwise")(x)
            x = layers.ReLU(name=f"{label}_depthwise_relu")(bn(x, f"{label}_depthwise"))
            x = layers.Conv2D(filters, 1, padding="same", use_bias=False, kernel_initializer=he(),
                              name=f"{label}_pointwise")(x)
            x = layers.ReLU(name=f"{label}_pointwise_relu")(bn(x, f"{label}_pointwise"))
    outputs = layers.GlobalAveragePooling2D(name="embedding")(x)
    model = keras.Model(inputs, outputs, name=name)
    if weights is not None:
        model.load_weights(weights)
    return model


def head(num_classes: int, *, embedding_dim: int = EMBEDDING_DIM, hidden: int | None = None,
         dropout: float = 0.0, standardize=None, seed: int = 0, name: str = "head"):
    """The classifier that trains: embeddings ``(B, D)`` -> logits ``(B, num_classes)``.

    Args:
        num_classes: output classes.
        embedding_dim: width of the backbone's embedding.
        hidden: units of one hidden ReLU layer, or None for a single Dense layer.
        dropout: dropout rate before the output layer.
        standardize: ``(mean, variance)`` per embedding dimension (``kit.spectrogram.features.embedding_stats``),
            applied first as constants: a frozen backbone's embeddings vary little around large
            means, and a head learns them standardised in a few epochs instead of dozens.
        seed: seeds the initial weights.
        name: the model's name.
    """
    check_int("num_classes", num_classes)
    check_int("embedding_dim", embedding_dim)
    if hidden is not None:
        check_int("hidden", hidden)
    if not 0 <= dropout < 1:
        raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
    inputs = keras.Input((embedding_dim,), name="embedding")
    x = inputs
    if standardize is not None:
        mean, variance = standardize
        x = layers.Normalization(mean=mean, variance=variance, name="standardize")(x)
    if hidden is not None:
        x = layers.Dense(hidden, activation="relu", name="hidden",
                         kernel_initializer=keras.initializers.HeNormal(seed=seed))(x)
    if dropout:
        x = layers.Dropout(dropout, seed=seed, name="dropout")(x)
    outputs = layers.Dense(num_classes, name="logits",
                           kernel_initializer=keras.initializers.GlorotUniform(seed=seed + 1))(x)
    return keras.Model(inputs, outputs, name=name)


def transfer_model(backbone_model, head_model, *, name: str = "transfer"):
    """Frozen backbone + head: frames -> logits; only the head trains, and the backbone's batch-norm
    statistics stay fixed (``training=False``), as when its features are cached."""
    backbone_model.trainable = False
    inputs = keras.Input(backbone_model.input_shape[1:], name="frames")
    features = backbone_model(inputs, training=False)
    return keras.Model(inputs, head_model(features), name=name)


def compile_classifier(model, *, learning_rate: float = 1e-3, steps_per_execution: int = 1):
    """Compiles a classifier producing logits: Adam, sparse cross-entropy, accuracy."""
    model.compile(optimizer=keras.optimizers.Adam(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                  steps_per_execution=steps_per_execution)
    return model


@dataclass(frozen=True)
class Cost:
    """What one frame costs a model: parameters and multiply-adds (``flops == 2 * macs``; element-wise
    layers left out)."""

    params: int
    trainable_params: int
    macs: int
    input_shape: tuple
    output_shape: tuple

    @property
    def flops(self) -> int:
        return 2 * self.macs

    def __str__(self) -> str:
        return (f"{self.params / 1e6:.2f} M parameters, {self.macs / 1e6:.1f} M multiply-adds "
                f"({self.flops / 1e6:.0f} MFLOPs) per frame {self.input_shape} -> {self.output_shape}")

    def as_dict(self) -> dict:
        return {"params": self.params, "trainable_params": self.trainable_params, "macs": self.macs,
                "flops": self.flops, "input_shape": list(self.input_shape),
                "output_shape": list(self.output_shape)}


def cost(model) -> Cost:
    """Parameter count and multiply-adds per example of a Keras model (``layer_macs`` over its layers,
    nested models included)."""
    macs = sum(layer_macs(layer) for layer in leaf_layers(model))
    trainable = sum(math.prod(w.shape) for w in model.trainable_weights)
    return Cost(params=int(model.count_params()), trainable_params=int(trainable), macs=int(macs),
                input_shape=tuple(model.input_shape[1:]), output_shape=tuple(model.output_shape[1:]))


def layer_macs(layer) -> int:
    """Multiply-adds per example of one Conv2D, DepthwiseConv2D, SeparableConv2D or Dense layer; 0 for others."""
    if not isinstance(layer, (keras.layers.Conv2D, keras.layers.DepthwiseConv2D,
                              keras.layers.SeparableConv2D, keras.layers.Dense)):
        return 0
    out = layer.output.shape
    cin = layer.input.shape[-1]
    positions = math.prod(out[1:-1]) if len(out) > 2 else 1
    if isinstance(layer, keras.layers.DepthwiseConv2D):
        return positions * math.prod(layer.kernel_size) * cin * layer.depth_multiplier
    if isinstance(layer, keras.layers.SeparableConv2D):
        mid = cin * layer.depth_multiplier
        return positions * (math.prod(layer.kernel_size) * mid + mid * layer.filters)
    if isinstance(layer, keras.layers.Conv2D):
        return positions * math.prod(layer.kernel_size) * cin * layer.filters // layer.groups
    return positions * cin * layer.units


def training_flops(model) -> int:
    """Floating-point operations one training step spends per example: each layer's forward pass
    (``layer_macs``), backwards twice that for a trainable layer (weights' and input's gradients),
    once for a frozen one after a trainable one, nothing for a frozen one before every trainable
    layer. Layers in the model's order, as in a chain such as ``transfer_model``'s.
    """
    flops, seen_trainable = 0, False
    for layer in leaf_layers(model):
        forward = 2 * layer_macs(layer)
        trains = bool(layer.trainable and layer.trainable_weights)
        seen_trainable = seen_trainable or trains
        flops += forward * (3 if trains else 2 if seen_trainable else 1)
    return int(flops)


def leaf_layers(model):
    for layer in model.layers:
        if hasattr(layer, "layers") and layer.layers:
            yield from leaf_layers(layer)
        else:
            yield layer
