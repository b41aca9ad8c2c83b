"""The deep check of a TFRecord shard (``kit.store.verify`` runs it): the TensorFlow half of
``kit.cases.stores``."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import tensorflow as tf


def check_tfrecord_shard(path: Path, count: int, parse: Callable, *, batch: int | None = 256,
                         inspect: Callable | None = None) -> str | None:
    """Reads a TFRecord shard through ``parse``: None when it holds ``count`` readable examples
    (and ``inspect(x, y, first)`` finds nothing in any batch, ``first`` the position of its
    first example), else what is wrong. ``batch=None`` passes the records one at a time
    (records that each hold a block of examples)."""
    seen = 0
    records = tf.data.TFRecordDataset(str(path))
    try:
        for serialized in (records if batch is None else records.batch(batch)):
            x, y = parse(serialized)
            problem = inspect(x, y, seen) if inspect is not None else None
            if problem:
                return problem
            seen += int(y.shape[0])
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as e:
        return f"unreadable records ({e.message.splitlines()[0]})"
    if seen != count:
        return f"{seen} records, manifest says {count}"
    return None
