"""One epoch of a loader: its order, its guard, and the record of what it holds.

* ``epoch_order``: the row order of one epoch in NumPy, a permutation seeded by
  ``(seed, epoch)`` (Python-side variants);
* ``order_dataset``: the same idea in tf.data, reshuffled on every iteration;
  ``order_batches`` and ``block_order_dataset``: such orders already cut into batches
  (a stream of batches, not of single rows: far cheaper under symbolic checkpointing);
* ``finish``: ``assert_cardinality`` then ``prefetch``, so a pipeline that ends early
  (a truncated shard, a file gone mid-epoch) fails loudly instead of yielding a
  silently shorter epoch; it records an ``Epoch`` on the loader it returns, and sets
  tf.data's symbolic checkpointing, so that an iterator checkpoint holds positions;
* ``epoch_of``: that record (examples, batch size, batches, the pipeline without its
  guard), which ``kit.distribute.through_service`` reads to move the guard to the
  reading side;
* ``iterator_checkpoint``: a ``tf.train.Checkpoint`` of a kit loader's iterator (a
  few KB: the epoch's seeds and the position, never the data), or one clear error for
  a loader that cannot resume mid-epoch, saying why and what to use instead.

Mid-epoch resume: every epoch order is computed, never buffered. ``order_dataset``
draws a seed pair per iteration from ``tf.data.Dataset.random`` (whose state travels
with the iterator's checkpoint, so the epochs after a resumed one keep their orders
too) and permutes the row positions with ``stateless_shuffle``; with
``experimental_symbolic_checkpoint`` the checkpoint of map, batch, interleave and
prefetch is their position in that order, not their buffers. A shuffle buffer,
``cache`` or a Python generator holds what it has read: a loader built on one is
marked (``not_resumable``) with the reason.

This module sits below the cases and ``kit.distribute``; it imports neither.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Epoch", "num_batches", "epoch_order", "order_dataset", "order_batches", "block_order_dataset",
           "BLOCK_FRAMES", "WINDOW_BLOCKS", "window_seeds", "finish", "record", "epoch_of", "not_resumable",
           "iterator_checkpoint", "NotResumableError", "untuned_options"]


def num_batches(n: int, batch_size: int) -> int:
    return math.ceil(n / batch_size)


def epoch_order(n: int, shuffle: bool, seed: int, epoch: int) -> np.ndarray:
    """Row order of one epoch: a permutation seeded by ``(seed, epoch)``, or 0..n-1."""
    if not shuffle:
        return np.arange(n)
    return np.random.default_rng([seed, epoch]).permutation(n)


def order_dataset(n: int, opts, *, splittable: bool = False):
    """Row positions 0..n-1 as a ``tf.data.Dataset``, reshuffled every iteration when
    ``opts.shuffle`` (seeded by ``opts.seed``).

    The permutation is computed from a seed pair drawn afresh per iteration (not a
    shuffle buffer of ``n`` positions): an iterator checkpoint holds the pair and the
    position, a few bytes whatever ``n`` is, and restores the exact remaining order.
    ``splittable``: for what tf.data service runs (``finish(..., body=)``): its
    distributed epochs split the pipeline's one source among the workers, which a
    computed permutation is not; there, ``Dataset.range`` through a shuffle buffer.
    """
    import tensorflow as tf  # keeps kit.epochs light: TensorFlow (kit.cases and the CLI import it)

    if not opts.shuffle:
        return tf.data.Dataset.range(n)
    if splittable:
        return tf.data.Dataset.range(n).shuffle(n, seed=opts.seed, reshuffle_each_iteration=True)

    def permuted(pair):
        return tf.data.Dataset.from_tensor_slices(
            tf.random.experimental.stateless_shuffle(tf.range(n, dtype=tf.int64), seed=pair))

    # flat_map hides the length: state it, so batch counts stay known downstream.
    return _epoch_seeds(opts.seed).flat_map(permuted).apply(tf.data.experimental.assert_cardinality(n))


def _epoch_seeds(seed: int):
    """One stateless seed pair per iteration, drawn afresh every iteration from ``seed``."""
    import tensorflow as tf  # keeps kit.epochs light: TensorFlow (kit.cases and the CLI import it)

    return tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).take(2).batch(2)


def window_seeds(seed: int):
    """An endless stream of stateless seed pairs, one per window of an epoch, drawn afresh
    every iteration from ``seed`` (after the pair that ``order_dataset`` takes, so the two
    never share one). Zipped with an epoch's windows, it permutes each window differently
    every epoch, and its state travels with the iterator's checkpoint."""
    import tensorflow as tf  # keeps kit.epochs light: TensorFlow (kit.cases and the CLI import it)

    return tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).skip(2).batch(2)


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


def finish(ds, examples: int, batch_size: int, *, prefetch: bool = True, body=None):
    """Guards the epoch's length (``assert_cardinality``), prefetches, and records the epoch.

    ``body``: what tf.data service is to run instead of ``ds`` (the same pipeline over
    ``order_dataset(..., splittable=True)``); default ``ds``.

    Also sets ``experimental_symbolic_checkpoint``: an iterator checkpoint then saves
    each step's position (which element of the order it reached) instead of the
    batches its parallel maps and prefetch buffer hold; and turns tf.data's autotuner
    off (parallel steps run on every core; see the comment below).
    """
    import tensorflow as tf  # keeps kit.epochs light: TensorFlow (kit.cases and the CLI import it)

    body = ds if body is None else body
    ds = ds.apply(tf.data.experimental.assert_cardinality(num_batches(examples, batch_size)))
    if prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    options = untuned_options()
    options.experimental_symbolic_checkpoint = True
    return record(ds.with_options(options), examples, batch_size, body)


def untuned_options():
    """``tf.data.Options`` with tf.data's autotuner off: every ``AUTOTUNE`` parallelism is
    then the machine's cores. On 2 cores at a million frames the autotuner ran memmap's
    gather on both cores one epoch and on one the next (6.0 s, then 10.3 s, in turn, the
    same CPU time), and the TFRecord reader on one: 41.1 s every epoch, against
    20.9-22.4 s with it off. Every kit loader has these (``finish``)."""
    import tensorflow as tf  # keeps kit.epochs light: TensorFlow (kit.cases and the CLI import it)

    options = tf.data.Options()
    options.autotune.enabled = False
    return options


#: id(loader) -> (a weak reference, why it cannot resume mid-epoch).
_NOT_RESUMABLE: dict[int, tuple] = {}


class NotResumableError(ValueError):
    """A loader whose iterator cannot be checkpointed to resume mid-epoch (the message says why)."""


def not_resumable(loader, why: str):
    """Marks ``loader`` (returned as is) as one that cannot resume mid-epoch, and why:
    ``iterator_checkpoint`` (and ``kit.timing.fit(checkpoint_dir=...)``) refuse it with ``why``."""
    key = id(loader)
    _NOT_RESUMABLE[key] = (weakref.ref(loader, lambda _: _NOT_RESUMABLE.pop(key, None)), why)
    return loader


def _why_not_resumable(loader) -> str | None:
    entry = _NOT_RESUMABLE.get(id(loader))
    if entry is not None and entry[0]() is loader:
        return entry[1]
    if epoch_of(loader) is None or not hasattr(loader, "cardinality"):
        return (f"{type(loader).__name__} is not a kit tf.data loader: only a loader from a case's "
                f"make_loader (a tf.data variant) records an order it can resume from")
    return None


def iterator_checkpoint(loader, iterator, **more):
    """A ``tf.train.Checkpoint`` of ``iterator`` (an ``iter(loader)``), plus ``more`` trackables.

    The iterator's part is a few KB: the epoch's seed pair and the position in its
    order (``finish`` set symbolic checkpointing), never the data. Restored into an
    iterator of a loader built the same way, the iterator yields exactly the batches
    the saved one had not yet yielded, and the epochs after it keep their orders.

    Raises:
        NotResumableError: a loader that cannot resume mid-epoch (a Python generator, a
            shuffle buffer of examples, a loader that is not a kit tf.data loader), saying
            why and what to use instead.
    """
    why = _why_not_resumable(loader)
    if why is not None:
        raise NotResumableError(f"cannot checkpoint this loader's position to resume mid-epoch: {why}")
    import tensorflow as tf  # keeps kit.epochs light: TensorFlow (kit.cases and the CLI import it)

    return tf.train.Checkpoint(iterator=iterator, **more)
#: The memmap ``"blocks"`` order's defaults: blocks of 256 consecutive frames (one batch;
#: 3 MB at float16 x 96 x 64), shuffled within windows of 32 blocks (8,192 frames, 100 MB):
#: a cold epoch then reads each window's stretch of the file, in whole blocks asked of the
#: kernel ahead of use (``read_ahead``), instead of one frame at a time anywhere in it.
BLOCK_FRAMES, WINDOW_BLOCKS = 256, 32


def block_order_dataset(n: int, batch_size: int, *, block: int = BLOCK_FRAMES, window: int = WINDOW_BLOCKS,
                        shuffle: bool = True, seed: int = 0, read_ahead: int = 0):
    """Batches of row positions in a near-sequential epoch order, as a ``tf.data.Dataset``.

    The rows are cut into blocks of ``block`` consecutive rows; the blocks are shuffled,
    taken ``window`` at a time, and the rows of each window shuffled together, then cut
    into batches of ``batch_size`` (the last may be smaller). This is what TFRecord
    shards read through a shuffle buffer give, without the per-row cost: every row
    exactly once per epoch, reshuffled every epoch, deterministic by ``seed``; each batch
    draws from one window of ``block * window`` consecutive-in-blocks rows instead of the
    whole set. Without ``shuffle``: rows in order.

    With ``read_ahead`` (a count of windows), each element is ``(rows, blocks)``:
    ``blocks`` the ids of the blocks (block ``b`` holds rows ``b * block`` up to
    ``(b + 1) * block``) that a reader should ask for now, to have them by the time its
    batches reach them, padded with -1 to ``(read_ahead + 1) * window``. The first batch
    lists the first ``read_ahead + 1`` windows' blocks, and the batch where window ``w``
    begins lists window ``w + read_ahead``'s; the other batches list none (all -1). Every
    block once per epoch, in the order the epoch reaches them.

    The whole epoch's order is computed at once from its seed pair (the block order, then
    a sort by window and a random key) and cut into batches there, so the pipeline's
    elements are batches, not rows: under symbolic checkpointing (``finish``) a stream of
    a million single rows cost 4-6 s an epoch on 2 cores, a stream of batches 0.4 s.
    """
    import tensorflow as tf  # keeps kit.epochs light: TensorFlow (kit.cases and the CLI import it)

    for name, v in (("n", n), ("batch_size", batch_size), ("block", block), ("window", window)):
        if not isinstance(v, (int, np.integer)) or v <= 0:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if isinstance(read_ahead, bool) or not isinstance(read_ahead, (int, np.integer)) or read_ahead < 0:
        raise ValueError(f"read_ahead must be a whole number of windows, got {read_ahead!r}")
    count = -(-n // block)
    offsets = tf.range(block, dtype=tf.int64)
    window_of_block = tf.range(count, dtype=tf.int64) // window

    def epoch_of(ids, rows_seed):
        rows = tf.reshape(ids[:, None] * block + offsets[None, :], [-1])
        windows = tf.reshape(tf.tile(window_of_block[:, None], [1, block]), [-1])
        keep = rows < n  # the last block may be short
        rows, windows = tf.boolean_mask(rows, keep), tf.boolean_mask(windows, keep)
        if rows_seed is None:
            order = rows
        else:  # window by window, and in a random order within each: the window plus a key in [0, 1)
            key = tf.cast(windows, tf.float64) + tf.random.stateless_uniform([n], seed=rows_seed, dtype=tf.float64)
            order = tf.gather(rows, tf.argsort(key, stable=True))
        batches = _cut(order, n, batch_size)
        if not read_ahead:
            return batches
        # Window w's rows start at position starts[w] of the order: in batch starts[w] // batch_size.
        sizes = tf.math.bincount(windows, minlength=window_of_block[-1] + 1, dtype=tf.int64)
        first_batch = (tf.cumsum(sizes) - sizes) // batch_size
        # Window w is asked for where window w - read_ahead begins (the first windows at once).
        ask_at = tf.concat([tf.zeros([read_ahead], tf.int64), first_batch], 0)[:tf.size(first_batch)]
        blocks = tf.RaggedTensor.from_value_rowids(ids, tf.gather(ask_at, window_of_block),
                                                   nrows=num_batches(n, batch_size))
        blocks = blocks.to_tensor(default_value=-1, shape=[None, (read_ahead + 1) * window])
        return tf.data.Dataset.zip((batches, tf.data.Dataset.from_tensor_slices(blocks)))

    if not shuffle:
        if not read_ahead:
            return _in_order_batches(n, batch_size)
        return epoch_of(tf.range(count, dtype=tf.int64), None)

    def batches(pair):
        blocks_seed, rows_seed = tf.unstack(tf.random.experimental.stateless_split(pair, 2))
        ids = tf.random.experimental.stateless_shuffle(tf.range(count, dtype=tf.int64), seed=blocks_seed)
        return epoch_of(ids, rows_seed)

    return _epoch_seeds(seed).flat_map(batches).apply(
        tf.data.experimental.assert_cardinality(num_batches(n, batch_size)))


def order_batches(n: int, batch_size: int, opts, *, splittable: bool = False):
    """``order_dataset(n, opts).batch(batch_size)``: the same batches of row positions, in
    the same order for a seed, with each epoch's permutation cut into batches at once
    (elements that are batches, not rows: see ``block_order_dataset``)."""
    import tensorflow as tf  # keeps kit.epochs light: TensorFlow (kit.cases and the CLI import it)

    if splittable:
        return order_dataset(n, opts, splittable=True).batch(batch_size)
    if not opts.shuffle:
        return _in_order_batches(n, batch_size)

    def batches(pair):
        return _cut(tf.random.experimental.stateless_shuffle(tf.range(n, dtype=tf.int64), seed=pair), n,
                    batch_size)

    return _epoch_seeds(opts.seed).flat_map(batches).apply(
        tf.data.experimental.assert_cardinality(num_batches(n, batch_size)))


def _cut(order, n: int, batch_size: int):
    """The ``n`` positions of ``order`` as a dataset of batches (the last may be smaller)."""
    import tensorflow as tf  # keeps kit.epochs light: TensorFlow (kit.cases and the CLI import it)

    full = n // batch_size
    ds = tf.data.Dataset.from_tensor_slices(tf.reshape(order[:full * batch_size], (full, batch_size)))
    if n % batch_size:
        ds = ds.concatenate(tf.data.Dataset.from_tensors(order[full * batch_size:]))
    return ds


def _in_order_batches(n: int, batch_size: int):
    import tensorflow as tf  # keeps kit.epochs light: TensorFlow (kit.cases and the CLI import it)

    return tf.data.Dataset.range(num_batches(n, batch_size)).map(
        lambda b: tf.range(b * batch_size, tf.minimum((b + 1) * batch_size, n)))
