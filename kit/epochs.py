"""One epoch of a loader: its order, its guard, and the record of what it holds.

* ``epoch_order``: the row order of one epoch in NumPy, a permutation seeded by
  ``(seed, epoch)`` (Python-side variants);
* ``order_dataset``: the same idea in tf.data, reshuffled on every iteration;
* ``finish``: ``assert_cardinality`` then ``prefetch``, so a pipeline that ends early
  (a truncated shard, a file gone mid-epoch) fails loudly instead of yielding a
  silently shorter epoch; it records an ``Epoch`` on the loader it returns;
* ``epoch_of``: that record (examples, batch size, batches, the pipeline without its
  guard), which ``kit.distribute.through_service`` reads to move the guard to the
  reading side.

This module sits below the cases and ``kit.distribute``; it imports neither.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Epoch", "num_batches", "epoch_order", "order_dataset", "block_order_dataset", "BLOCK_FRAMES",
           "WINDOW_BLOCKS", "finish", "record", "epoch_of"]


def num_batches(n: int, batch_size: int) -> int:
    return math.ceil(n / batch_size)


def epoch_order(n: int, shuffle: bool, seed: int, epoch: int) -> np.ndarray:
    """Row order of one epoch: a permutation seeded by ``(seed, epoch)``, or 0..n-1."""
    if not shuffle:
        return np.arange(n)
    return np.random.default_rng([seed, epoch]).permutation(n)


def order_dataset(n: int, opts):
    """Row positions 0..n-1 as a ``tf.data.Dataset``, reshuffled every iteration when
    ``opts.shuffle`` (seeded by ``opts.seed``)."""
    import tensorflow as tf

    ds = tf.data.Dataset.range(n)
    if opts.shuffle:
        ds = ds.shuffle(n, seed=opts.seed, reshuffle_each_iteration=True)
    return ds


@dataclass(frozen=True)
class Epoch:
    """What one epoch of a kit loader holds.

    Attributes:
        examples: examples per epoch, exactly.
        batch_size: examples per batch (the last batch may be smaller).
        body: for a ``tf.data`` loader, the pipeline before its epoch guard (what
            tf.data service workers run); None for other loaders.
    """

    examples: int
    batch_size: int
    body: Any = None

    @property
    def batches(self) -> int:
        return num_batches(self.examples, self.batch_size)


#: id(loader) -> (a weak reference to the loader, its Epoch); an entry goes with its loader.
_RECORDS: dict[int, tuple] = {}


def record(loader, examples: int, batch_size: int, body=None):
    """Attaches an ``Epoch`` to ``loader`` (returned as is); ``loader`` must allow weak references."""
    key = id(loader)
    _RECORDS[key] = (weakref.ref(loader, lambda _: _RECORDS.pop(key, None)),
                     Epoch(int(examples), int(batch_size), body))
    return loader


def epoch_of(loader) -> Epoch | None:
    """The ``Epoch`` a kit loader was built with; None for anything else (a derived
    dataset, ``loader.repeat()`` for one, is a new pipeline with no record)."""
    entry = _RECORDS.get(id(loader))
    if entry is None or entry[0]() is not loader:
        return None
    return entry[1]


def finish(ds, examples: int, batch_size: int, *, prefetch: bool = True):
    """Guards the epoch's length (``assert_cardinality``), prefetches, and records the epoch."""
    import tensorflow as tf

    body = ds
    ds = ds.apply(tf.data.experimental.assert_cardinality(num_batches(examples, batch_size)))
    if prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    return record(ds, examples, batch_size, body)
#: The memmap ``"blocks"`` order's defaults: blocks of 256 consecutive frames (one batch;
#: 3 MB at float16 x 96 x 64), shuffled within windows of 32 blocks (8,192 frames, 100 MB):
#: a cold epoch then reads each window's stretch of the file, in its readahead's large
#: chunks, instead of one frame at a time anywhere in it.
BLOCK_FRAMES, WINDOW_BLOCKS = 256, 32


def block_order_dataset(n: int, batch_size: int, *, block: int = BLOCK_FRAMES, window: int = WINDOW_BLOCKS,
                        shuffle: bool = True, seed: int = 0):
    """Batches of row positions in a near-sequential epoch order, as a ``tf.data.Dataset``.

    The rows are cut into blocks of ``block`` consecutive rows; the blocks are shuffled,
    taken ``window`` at a time, and the rows of each window shuffled together, then cut
    into batches of ``batch_size`` (the last may be smaller). This is what TFRecord
    shards read through a shuffle buffer give, without the per-row cost: every row
    exactly once per epoch, reshuffled every epoch, deterministic by ``seed``; each batch
    draws from one window of ``block * window`` consecutive-in-blocks rows instead of the
    whole set. Without ``shuffle``: rows in order.
    """
    import tensorflow as tf

    for name, v in (("n", n), ("batch_size", batch_size), ("block", block), ("window", window)):
        if not isinstance(v, (int, np.integer)) or v <= 0:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not shuffle:
        return tf.data.Dataset.range(n).batch(batch_size)
    count = -(-n // block)
    blocks = tf.data.Dataset.range(count).shuffle(count, seed=seed, reshuffle_each_iteration=True)
    offsets = tf.range(block, dtype=tf.int64)

    def rows_of(ids, pair):
        rows = tf.reshape(ids[:, None] * block + offsets[None, :], [-1])
        rows = tf.boolean_mask(rows, rows < n)  # the last block may be short
        return tf.random.experimental.stateless_shuffle(rows, seed=pair)

    # One stateless seed pair per window, drawn afresh every epoch from ``seed``.
    pairs = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    ds = tf.data.Dataset.zip(blocks.batch(window), pairs).map(rows_of)
    return ds.rebatch(batch_size)
