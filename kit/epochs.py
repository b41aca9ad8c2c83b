"""What every loader variant of every case shares: one epoch's order and its guard.

* ``epoch_order``: the row order of one epoch in NumPy, a permutation seeded by
  ``(seed, epoch)`` (Python-side variants);
* ``order_dataset``: the same idea in tf.data, reshuffled on every iteration;
* ``finish``: ``assert_cardinality`` then ``prefetch``, so a pipeline that ends early
  (a truncated shard, a file gone mid-epoch) fails loudly instead of yielding a
  silently shorter epoch;
* ``reject``: one clear error for options a variant does not take.
"""

from __future__ import annotations

import math

import numpy as np


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


def finish(ds, n_batches: int):
    """Guards the epoch's length (``assert_cardinality``) and prefetches."""
    import tensorflow as tf

    ds = ds.apply(tf.data.experimental.assert_cardinality(n_batches))
    return ds.prefetch(tf.data.AUTOTUNE)


def reject(name: str, options: dict) -> None:
    """Raises ``ValueError`` naming the options variant ``name`` does not take."""
    if options:
        raise ValueError(f"variant {name!r} takes no option(s) {', '.join(sorted(options))}")
