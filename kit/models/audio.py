"""An audio backbone for one-second spectrogram frames, a classifier head, and the transfer model.

``backbone()`` builds a YAMNet-like network: the layer layout of YAMNet (MobileNet v1
on ``(96, 64, 1)`` log-mel frames: one 3x3 convolution, then 13 depthwise-separable
blocks, each convolution followed by batch norm and ReLU, global average pooling to a
1,024-d embedding). About 3.2 million parameters and 69 million multiply-adds per
frame (see ``cost``): what the pretrained networks such users fine-tune cost, so
the timings mean what they would for them.

Weights come from a local file when one is given (``backbone(weights="x.weights.h5")``,
a file written by ``model.save_weights`` of this architecture); otherwise they are
random (seeded, so the same ``seed`` gives the same backbone). Nothing is downloaded.

``head()`` is the part that trains: a Dense classifier on the embedding (optionally
with one hidden layer). ``transfer_model(backbone, head)`` chains them with the
backbone frozen: the spectrogram user's model, trained end to end on frames.

TensorFlow and Keras are imported only when a model is built.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import keras
from keras import layers

from kit.util import check_int

__all__ = ["FRAME_SHAPE", "EMBEDDING_DIM", "LAYERS", "backbone", "head", "transfer_model", "compile_classifier", "Cost",
           "cost", "layer_macs", "training_flops", "leaf_layers"]

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
    """Builds the YAMNet-like backbone: frames ``(B, 96, 64, 1)`` -> embeddings ``(B, 1024)``.

    Args:
        weights: a local ``.weights.h5`` file saved from this architecture (same
            ``input_shape`` and ``alpha``), or None for random weights.
        input_shape: ``(H, W, 1)`` of a frame.
        alpha: width multiplier (MobileNet's): 1.0 is YAMNet's size; smaller is
            cheaper, for quick experiments. The embedding is ``1024 * alpha`` wide.
        seed: seeds the random initial weights (ignored when ``weights`` is given).
        name: the model's name.

    Returns:
        A ``keras.Model`` (not frozen; ``transfer_model`` freezes it).

    Raises:
        FileNotFoundError: ``weights`` names a file that does not exist.
        ValueError: the file's weights do not fit this architecture.
    """

    alpha = _check_alpha(alpha)
    if weights is not None and not Path(weights).is_file():
        raise FileNotFoundError(f"{weights}: backbone weights file not found (nothing is downloaded)")
    counter = iter(range(10_000))

    def he():  # ReLU nets keep their activation scale with He initialisation
        return keras.initializers.HeNormal(seed=seed * 1000 + next(counter))

    def depthwise_init():
        # Each depthwise filter sees 9 inputs; Keras's fan-in for a (3, 3, C, 1)
        # kernel would be 9 * C and shrink the activations layer after layer.
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
        hidden: units of one hidden ReLU layer, or None for a single Dense layer
            (the spectrogram user trains only that).
        dropout: dropout rate before the output layer.
        standardize: ``(mean, variance)`` per embedding dimension (from
            ``kit.features.embedding_stats``), applied first as fixed constants; or
            None. Embeddings of a frozen backbone vary little around large means;
            standardised, a Dense head learns in a few epochs instead of dozens.
        seed: seeds the initial weights.
        name: the model's name.

    Returns:
        A ``keras.Model`` producing logits (use ``from_logits=True`` losses).
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
    """Frozen backbone + head: frames -> logits; only the head's weights train.

    The backbone is set ``trainable = False`` and called with ``training=False``, so
    its batch-norm statistics stay fixed, exactly as when its features are cached.
    """

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


# --------------------------------------------------------------------------- cost


@dataclass(frozen=True)
class Cost:
    """What one frame costs a model: parameters and arithmetic.

    ``flops`` counts a multiply-add as 2 operations (``flops == 2 * macs``); batch
    norm, ReLU and pooling (element-wise, a few percent) are left out.
    """

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
    """Parameter count and multiply-adds per example of a Keras model.

    Counts Conv2D, DepthwiseConv2D, SeparableConv2D and Dense layers (nested
    models included) from their output shapes, so it works for any input size.
    """

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
    """Floating-point operations one training step spends per example (a multiply-add is 2).

    Each counted layer (``layer_macs``) costs its forward pass; a trainable one twice that again
    backwards (the gradients of its weights and of its input); a frozen one after a trainable one
    once again (its input's gradient only); a frozen one before every trainable layer nothing
    backwards, since no gradient flows into it. Layers are taken in the model's order, which is
    the order of a chain such as ``transfer_model``'s (frozen backbone, then the head).
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
