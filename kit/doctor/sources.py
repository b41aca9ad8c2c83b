"""What the doctor accepts as a batch source: the checks, the kind of source, its first batch, counted re-reads."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from kit import timing
from kit.batches import known_length as _known_length


def is_dataset(obj) -> bool:
    """Whether ``obj`` is a ``tf.data.Dataset`` (told without importing TensorFlow)."""
    return any(c.__name__ == "DatasetV2" and c.__module__.startswith("tensorflow")
               for c in type(obj).__mro__)


def is_pydataset(obj) -> bool:
    """Whether ``obj`` is a ``keras.utils.PyDataset``."""
    return any(c.__name__ == "PyDataset" for c in type(obj).__mro__)


def is_model(obj) -> bool:
    """Whether ``obj`` is a Keras model."""
    return any(c.__name__ == "Model" and c.__module__.startswith("keras") for c in type(obj).__mro__)


def check_source(source, name: str = "source"):
    """Raises ``ValueError`` (naming ``name``) unless ``source`` is a re-readable batch source."""
    if source is None or isinstance(source, (str, bytes, int, float, np.ndarray)):
        raise ValueError(f"{name} is of type {type(source).__name__!r}, not a batch source (a "
                         f"tf.data.Dataset, a keras.utils.PyDataset or a function returning a generator "
                         f"of batches)")
    if isinstance(source, Iterator):
        raise ValueError(f"{name} is a one-shot iterator ({type(source).__name__}); the doctor reads it "
                         f"several times: pass a tf.data.Dataset, a PyDataset or a function returning "
                         f"a fresh generator")
    if not (is_pydataset(source) or callable(source) or hasattr(source, "__iter__")):
        raise ValueError(f"{name} is of type {type(source).__name__!r}, not a batch source (a "
                         f"tf.data.Dataset, a keras.utils.PyDataset or a function returning a generator "
                         f"of batches)")


def first_batch(source, name: str):
    """The first batch of ``source`` and its size; ``ValueError`` naming ``name`` if there is none."""
    it = timing.iterate(source)
    try:
        batch = next(it)
    except StopIteration:
        raise ValueError(f"{name} yielded no batches") from None
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()
    try:
        n = timing.batch_size_of(batch)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{name} does not yield batches: {e}") from None
    return batch, n


class Counted:
    """A re-iterable view of a batch source that records each epoch's batch sizes."""

    def __init__(self, source):
        self.source = source
        self.epochs: list[list[int]] = []

    def __iter__(self):
        sizes: list[int] = []
        self.epochs.append(sizes)
        for batch in timing.iterate(self.source):
            sizes.append(timing.batch_size_of(batch))
            yield batch

    def __len__(self):
        n = _known_length(self.source)
        if n is None:
            raise TypeError("length unknown")
        return n


def loop(source, sizes: list):
    """Batches of ``source`` epoch after epoch (for timing beyond one short epoch)."""
    while True:
        empty = True
        for batch in timing.iterate(source):
            empty = False
            sizes.append(timing.batch_size_of(batch))
            yield batch
        if empty:
            return


def nbytes(batch) -> int:
    """Bytes of a batch's arrays (tuples, lists and dicts followed)."""
    leaves = batch if isinstance(batch, (tuple, list)) else [batch]
    total = 0
    for leaf in leaves:
        if isinstance(leaf, dict):
            total += sum(nbytes(v) for v in leaf.values())
        elif isinstance(leaf, (tuple, list)):
            total += nbytes(leaf)
        else:
            total += int(np.asarray(leaf).nbytes)
    return total


def as_xy(batch):
    """``(x, (y, ...))``: a batch's inputs and the rest."""
    if isinstance(batch, (tuple, list)) and len(batch) >= 2:
        return batch[0], batch[1:]
    return batch, ()


def shapes(batch) -> str:
    """A batch's shapes for an error message: ``batches of 16x16, 16``."""
    def shape(leaf):
        return "x".join(str(d) for d in np.shape(leaf)) or "scalar"

    leaves = batch if isinstance(batch, (tuple, list)) else [batch]
    return "batches of " + ", ".join(shape(v) if not isinstance(v, (dict, tuple, list)) else type(v).__name__
                                     for v in leaves)


def one_line(e: BaseException) -> str:
    """An exception as one line of at most 300 characters, its type first."""
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:300]}{'...' if len(text) > 300 else ''}"
