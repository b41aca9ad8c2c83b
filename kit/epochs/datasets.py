"""The tf.data half of ``kit.epochs``: epoch orders computed per epoch, the epoch guard, checkpoints.

* ``order_dataset``: row positions reshuffled every iteration; ``order_batches`` and
  ``block_order_dataset``: such orders already cut into batches (a stream of batches, not of
  rows: far cheaper under symbolic checkpointing);
* ``finish``: ``assert_cardinality`` then ``prefetch``; records an ``Epoch`` on the loader and
  sets tf.data's symbolic checkpointing, so that an iterator checkpoint holds positions;
* ``iterator_checkpoint``: a ``tf.train.Checkpoint`` of a kit loader's iterator (a few KB: the
  epoch's seeds and position, never the data), or one clear error for a loader that cannot
  resume mid-epoch.

Every epoch order here is computed from a seed pair drawn per iteration from
``tf.data.Dataset.random`` (whose state travels with the iterator's checkpoint) and
``stateless_shuffle``; a shuffle buffer, ``cache`` or a Python generator holds what it has
read, and a loader built on one is marked ``not_resumable`` with the reason.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kit.epochs import NotResumableError, num_batches, record, why_not_resumable


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
    return tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).take(2).batch(2)


def finish(ds, examples: int, batch_size: int, *, prefetch: bool = True, body=None):
    """Guards the epoch's length (``assert_cardinality``), prefetches, and records the epoch.

    ``body``: what tf.data service is to run instead of ``ds`` (the same pipeline over
    ``order_dataset(..., splittable=True)``); default ``ds``.

    Also sets ``experimental_symbolic_checkpoint``: an iterator checkpoint then saves
    each step's position (which element of the order it reached) instead of the
    batches its parallel maps and prefetch buffer hold; and turns tf.data's autotuner
    off (parallel steps run on every core; see the comment below).
    """
    body = ds if body is None else body
    ds = ds.apply(tf.data.experimental.assert_cardinality(num_batches(examples, batch_size)))
    if prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    options = untuned_options()
    options.experimental_symbolic_checkpoint = True
    return record(ds.with_options(options), examples, batch_size, body)


def untuned_options():
    """``tf.data.Options`` with tf.data's autotuner off: every ``AUTOTUNE`` parallelism is
    then the machine's cores (the autotuner can settle on one core for a loader that needs
    all of them; results/NOTES.md has the measurements). ``finish`` sets these."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return options


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
    why = why_not_resumable(loader)
    if why is not None:
        raise NotResumableError(f"cannot checkpoint this loader's position to resume mid-epoch: {why}")
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
    single rows costs an order of magnitude more per epoch.
    """
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
    full = n // batch_size
    ds = tf.data.Dataset.from_tensor_slices(tf.reshape(order[:full * batch_size], (full, batch_size)))
    if n % batch_size:
        ds = ds.concatenate(tf.data.Dataset.from_tensors(order[full * batch_size:]))
    return ds


def _in_order_batches(n: int, batch_size: int):
    return tf.data.Dataset.range(num_batches(n, batch_size)).map(
        lambda b: tf.range(b * batch_size, tf.minimum((b + 1) * batch_size, n)))
