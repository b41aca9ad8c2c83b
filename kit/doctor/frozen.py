"""A frozen backbone: where a model's frozen part ends (``frozen_prefix``), and the layers after it
trained on its output held in memory (``head_rate``), which predicts what a feature cache gives."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from kit.doctor.copying import compile_like
from kit.doctor.measure import EPOCH_START_ROUNDS, plain_fit, pooled, replay, timed_fit
from kit.doctor.sources import as_xy, describe_error, nbytes
from kit.timing.batches import batch_size_of


def frozen_prefix(model):
    """Top-level layers before the first trainable one, when they hold frozen weights."""
    layers = [layer for layer in model.layers if type(layer).__name__ != "InputLayer"]
    prefix = []
    for layer in layers:
        if layer.trainable_weights:
            break
        prefix.append(layer)
    if len(prefix) == len(layers):
        return [], layers  # nothing trains
    # Weightless layers just before the head stay in it, while the head stays one chain of layers (a functional
    # model's backbone ends in branches joined by weightless layers: the split is after the join).
    while prefix and not prefix[-1].weights and _chained(layers[len(prefix) - 1:], prefix[-2] if len(prefix) > 1 else None):
        prefix.pop()
    if not any(layer.weights and not is_preprocessing(layer) for layer in prefix):
        return [], layers  # only preprocessing (Normalization's statistics, Resizing): no backbone
    return prefix, layers[len(prefix):]


def is_preprocessing(layer) -> bool:
    """A Keras preprocessing layer (Normalization, Rescaling, ...): its weights are statistics, not a
    frozen backbone."""
    return any(".preprocessing." in c.__module__ or ".preprocessing" == c.__module__[-14:]
               for c in type(layer).__mro__ if c.__module__.startswith("keras"))


def _chained(layers, before) -> bool:
    """Whether each of ``layers`` takes one tensor, the output of the layer before it (``before`` for the
    first; None: the model's input); True where the graph cannot be read (a subclassed model's layers)."""
    try:
        for layer in layers:
            inp = layer.input
            if isinstance(inp, (list, tuple, dict)) or (before is not None and inp is not before.output):
                return False
            before = layer
    except (AttributeError, ValueError):
        return True
    return True


def _features(copy, prefix, shape):
    """The frozen ``prefix`` as a model: a functional model's own graph up to its last layer's output (a
    backbone of branches), else its layers applied one after the other."""
    try:
        inputs = copy.inputs
        return keras.Model(inputs[0] if len(inputs) == 1 else inputs, prefix[-1].output)
    except (AttributeError, ValueError, TypeError):
        return _chain(prefix, shape)


def _chain(layers, shape):
    """``layers`` applied one after the other, as a model taking inputs of ``shape``."""
    inp = keras.Input(shape)
    h = inp
    for layer in layers:
        h = layer(h)
    return keras.Model(inp, h)


#: Batches of features a predicted feature cache holds in memory (tiled from one batch; at most
#: ``CACHE_BYTES``), read again to make longer epochs.
CACHE_BATCHES, CACHE_BYTES = 32, 256e6


def cache_of(batch, batch_size: int, epoch_batches: int | None):
    """A feature cache as a user keeps one in memory: ``batch`` (features and targets) tiled to
    ``CACHE_BATCHES`` batches (fewer where they would pass ``CACHE_BYTES``), read through
    ``from_tensor_slices``, ``batch`` and ``prefetch``; epochs of ``epoch_batches`` batches where given (else
    one pass of what it holds, which the fit repeats)."""
    fit_in = max(1, int(CACHE_BYTES // max(1, nbytes(batch))))
    held = min(CACHE_BATCHES, fit_in, epoch_batches or CACHE_BATCHES)
    tiled = tf.nest.map_structure(lambda a: np.concatenate([np.asarray(a)] * held), batch)
    ds = tf.data.Dataset.from_tensor_slices(tiled).batch(batch_size)
    if epoch_batches:
        ds = ds.repeat(-(-epoch_batches // held)).take(epoch_batches)
    return ds.prefetch(tf.data.AUTOTUNE)


def head_rate(copy, prefix, rest, batch, *, max_seconds: float, plain: bool = False,
              epoch_batches: int | None = None) -> tuple[float | None, str]:
    """Examples/s of the layers after the frozen prefix trained on its output replayed from memory
    (with ``plain_fit`` where ``plain``, as the real fit was, through an in-memory ``tf.data`` cache,
    ``cache_of``; in epochs of ``epoch_batches`` batches where the real fit reads its source epoch by epoch,
    each epoch's start paid as a cache's would be):
    ``(rate, "")``, or ``(None, why)`` where the model does not split into frozen part + head giving the
    whole model's output."""
    x, ys = as_xy(batch)
    whole = np.asarray(copy(x, training=False))
    try:
        features = np.asarray(_features(copy, prefix, np.shape(x)[1:])(x, training=False))
        head = _chain(rest, features.shape[1:])
        chained = np.asarray(head(features, training=False))
    except (ValueError, TypeError) as e:
        chained, why = None, describe_error(e)
    else:
        why = "its layers after the frozen part do not form a chain"
    if chained is None or chained.shape != whole.shape or not np.allclose(whole, chained, rtol=1e-3, atol=1e-4):
        return None, why
    compile_like(head, copy)
    if plain:
        size = batch_size_of(batch)
        cached = cache_of((features, *ys), size, epoch_batches)
        if epoch_batches:
            return plain_fit(head, cached, batch_size=size, max_seconds=max_seconds,
                             per_epoch=True, epoch_start=EPOCH_START_ROUNDS * max_seconds)["examples_per_s"], ""
        return plain_fit(head, cached, batch_size=size, max_seconds=max_seconds)["examples_per_s"], ""
    return pooled([timed_fit(head, replay((features, *ys)), max_seconds=max_seconds)]), ""
