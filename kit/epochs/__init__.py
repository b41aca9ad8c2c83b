"""One epoch of a loader: its order, its guard, and the record of what it holds.

This package has two halves, so that code without TensorFlow never imports it:

* here, in NumPy: ``epoch_order`` (the row order of one epoch, a permutation seeded by
  ``(seed, epoch)``), ``num_batches``, the ``Epoch`` a kit loader records (``record``,
  ``epoch_of``: examples, batch size, the pipeline without its guard, which
  ``kit.distribute`` reads), and ``not_resumable`` with the reason a loader cannot
  resume mid-epoch;
* ``kit.epochs.datasets``, in tf.data: ``order_dataset``, ``order_batches`` and
  ``block_order_dataset`` (orders computed per epoch, never buffered, so an iterator
  checkpoint holds a seed pair and a position), ``finish`` (``assert_cardinality`` then
  ``prefetch``: a pipeline that ends early fails loudly instead of a silently shorter
  epoch) and ``iterator_checkpoint``.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

#: What a user asks of a kit loader; the rest serves the kit's own loaders.
__all__ = ["Epoch", "epoch_of", "NotResumableError"]


def num_batches(n: int, batch_size: int) -> int:
    return math.ceil(n / batch_size)


def epoch_order(n: int, shuffle: bool, seed: int, epoch: int) -> np.ndarray:
    """Row order of one epoch: a permutation seeded by ``(seed, epoch)``, or 0..n-1."""
    if not shuffle:
        return np.arange(n)
    return np.random.default_rng([seed, epoch]).permutation(n)


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


def why_not_resumable(loader) -> str | None:
    entry = _NOT_RESUMABLE.get(id(loader))
    if entry is not None and entry[0]() is loader:
        return entry[1]
    if epoch_of(loader) is None or not hasattr(loader, "cardinality"):
        return (f"{type(loader).__name__} is not a kit tf.data loader: only a loader from a case's "
                f"make_loader (a tf.data variant) records an order it can resume from")
    return None
