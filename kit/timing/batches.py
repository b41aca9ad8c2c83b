"""Reading any batch source the way ``model.fit`` does: a ``tf.data.Dataset``, a ``keras.utils.PyDataset``,
a generator or any iterable of batches (or a zero-argument callable returning one). Keras is
imported only where a source needs it.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from kit.util import VERSION_FLOORS


def batch_size_of(batch: Any) -> int:
    """Number of examples in a batch: the leading dimension of its first array leaf."""
    leaf = batch
    while isinstance(leaf, (tuple, list, dict)):
        if not leaf:
            raise ValueError("cannot count examples in an empty batch structure")
        leaf = next(iter(leaf.values())) if isinstance(leaf, dict) else leaf[0]
    shape = getattr(leaf, "shape", None)
    if shape is None:
        shape = np.shape(leaf)
    if len(shape) == 0:
        raise ValueError(f"batch leaf has no batch dimension (shape {tuple(shape)})")
    return int(shape[0])


def _is_pydataset(obj) -> bool:
    return any(c.__name__ == "PyDataset" for c in type(obj).__mro__)


def pydataset_adapter():
    """Keras's private ``PyDatasetAdapter`` class, which reads a ``PyDataset`` as ``model.fit`` does
    (workers and processes included): the kit's one import of it. Raises ``ImportError`` naming
    what moved when a Keras upgrade moved it."""
    try:
        from keras.src.trainers.data_adapters.py_dataset_adapter import (
            PyDatasetAdapter,  # keeps kit.timing light: Keras
        )
    except ImportError as e:
        import keras  # keeps kit.timing light: Keras

        raise ImportError(
            f"kit.timing.batches reads a keras.utils.PyDataset through Keras's private PyDatasetAdapter "
            f"(keras.src.trainers.data_adapters.py_dataset_adapter), tested with Keras {VERSION_FLOORS['keras']}; "
            f"Keras {keras.__version__} does not have it there ({e}). Install keras=={VERSION_FLOORS['keras']}.* "
            f"or update kit.timing.batches.pydataset_adapter") from None
    return PyDatasetAdapter


def iterate(source: Any) -> Iterator:
    """One pass over a batch source; a ``PyDataset`` through Keras's adapter, so that its ``workers``
    and ``use_multiprocessing`` apply."""
    if _is_pydataset(source):
        adapter = pydataset_adapter()(source, shuffle=False)
        adapter.on_epoch_begin()

        def run():
            try:
                yield from adapter.get_numpy_iterator()
            finally:
                adapter.on_epoch_end()

        return run()
    if callable(source) and not hasattr(source, "__iter__"):
        source = source()
    return iter(source)


def known_length(data) -> int | None:
    """Batches per epoch of a source, where it knows: a tf.data cardinality (None when infinite
    or unknown), a PyDataset's ``num_batches``, else ``len()``; None when none of them says."""
    card = getattr(data, "cardinality", None)
    if card is not None:
        count = int(card())
        return count if count >= 0 else None
    try:
        n = getattr(data, "num_batches", None)
    except NotImplementedError:  # a PyDataset with neither num_batches nor __len__
        n = None
    if n is not None and not callable(n):
        return int(n)
    try:
        return len(data)
    except TypeError:
        return None

