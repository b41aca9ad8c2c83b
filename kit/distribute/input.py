"""Input for N replicas, both of TensorFlow's patterns (``PATTERNS``), from any case's loader factory
``make(index, batch_size=...)`` returning a ``tf.data.Dataset``."""

from __future__ import annotations

from typing import Callable

import numpy as np
import tensorflow as tf

from kit.distribute.strategy import global_batch_size

#: The two input patterns of ``distributed_loader``.
PATTERNS = {
    "global": "one pipeline batched at the global batch; experimental_distribute_dataset splits each batch",
    "per_replica": "distribute_datasets_from_function: each input pipeline reads its shard, per-replica batches",
}


def shard_rows(n: int, num_shards: int, shard: int) -> np.ndarray:
    """Rows ``shard, shard + num_shards, ...`` of ``n``: one input pipeline's share."""
    if not 0 <= shard < num_shards:
        raise ValueError(f"shard must be in 0..{num_shards - 1}, got {shard}")
    return np.arange(shard, n, num_shards)


def _dataset(make: Callable, index, batch_size: int):
    ds = make(index, batch_size=batch_size)
    if not isinstance(ds, tf.data.Dataset):
        raise ValueError(f"the loader factory returned a {type(ds).__name__}, not a tf.data.Dataset: a "
                         "keras.utils.PyDataset goes to model.fit under strategy.scope() (Keras distributes it)")
    return ds


def distributed_loader(strategy, make: Callable, index, *, per_replica_batch: int, pattern: str = "global"):
    """A ``tf.distribute.DistributedDataset`` feeding the strategy's replicas, by either input pattern.

    Args:
        strategy: a ``tf.distribute`` strategy.
        make: the loader factory, ``make(index, batch_size=...)`` -> ``tf.data.Dataset``
            (e.g. ``functools.partial(kit.spectrogram.make_loader, "in_memory", shuffle=False)``).
        index: the case's index (with ``subset``).
        per_replica_batch: examples per replica per step.
        pattern: ``"global"``: one loader batched at the global batch, each batch split over the
            replicas. ``"per_replica"``: each input pipeline (one per worker) builds the loader over
            its shard of the index, batched at the per-replica batch.
    """
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}")
    global_batch = global_batch_size(per_replica_batch, strategy)

    if pattern == "global":
        return strategy.experimental_distribute_dataset(_dataset(make, index, global_batch))

    def per_pipeline(ctx):
        part = index
        if ctx.num_input_pipelines > 1:
            part = index.subset(shard_rows(len(index), ctx.num_input_pipelines, ctx.input_pipeline_id))
        return _dataset(make, part, ctx.get_per_replica_batch_size(global_batch))

    return strategy.distribute_datasets_from_function(per_pipeline)


def local_batches(strategy, batch) -> list:
    """The per-replica parts of one distributed batch, as NumPy structures, in replica order."""
    flat = [strategy.experimental_local_results(t) for t in tf.nest.flatten(batch)]
    return [tf.nest.pack_sequence_as(batch, [np.asarray(f[i]) for f in flat]) for i in range(len(flat[0]))]
