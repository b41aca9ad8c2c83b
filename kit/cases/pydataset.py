"""The epoch-reshuffling ``keras.utils.PyDataset`` every case's Python-side variant builds on.

``epoch_pydataset()`` returns the base class (built on first use, so that importing
this module does not import Keras). A case writes a plain mixin with
``load(rows) -> (x, y)``, the batch of the index rows ``rows``, and gets its class
from ``pydataset_class(mixin, name)``; the base serves every row exactly once per
epoch, in an order seeded by ``(seed, epoch)``, reshuffled at every epoch's end.
``module_getattr`` lets the case's module name that class, so that it pickles by
reference (worker processes started by ``spawn`` import it by name).
"""

from __future__ import annotations

import functools

from kit.epochs import epoch_order, num_batches

__all__ = ["epoch_pydataset", "pydataset_class", "module_getattr"]


@functools.cache
def epoch_pydataset():
    """The base class (see the module docstring)."""
    import keras  # heavy: kit.plots and the CLI import this module

    class EpochPyDataset(keras.utils.PyDataset):
        """Batches of an index's rows; reshuffles at every epoch's end.

        Args:
            index: the case's index.
            opts: its ``LoaderOptions``.
            **kwargs: ``workers``, ``use_multiprocessing``, ``max_queue_size`` (Keras's).
        """

        def __init__(self, index, opts, **kwargs):
            super().__init__(**kwargs)
            self.index, self.opts = index, opts
            self.epoch = 0
            self._order = epoch_order(len(index), opts.shuffle, opts.seed, 0)

        def __len__(self):
            return num_batches(len(self.index), self.opts.batch_size)

        def __getitem__(self, i):
            if not 0 <= i < len(self):
                raise IndexError(f"batch {i} out of range (0..{len(self) - 1})")
            bs = self.opts.batch_size
            return self.load(self._order[i * bs:(i + 1) * bs])

        def load(self, rows):
            """The batch ``(x, y)`` of index rows ``rows``."""
            raise NotImplementedError

        def on_epoch_end(self):
            self.epoch += 1
            self._order = epoch_order(len(self.index), self.opts.shuffle, self.opts.seed, self.epoch)

    EpochPyDataset.__module__, EpochPyDataset.__qualname__ = __name__, "EpochPyDataset"  # see __getattr__
    return EpochPyDataset


def __getattr__(name):
    if name == "EpochPyDataset":
        return epoch_pydataset()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def pydataset_class(mixin: type, name: str) -> type:
    """The case's PyDataset class ``name``: ``mixin`` (its ``load``) over the base, named as
    an attribute of the mixin's module (see ``module_getattr``)."""
    return type(name, (mixin, epoch_pydataset()),
                {"__module__": mixin.__module__, "__qualname__": name, "__doc__": mixin.__doc__})


def module_getattr(module: str, mixins: dict):
    """A module-level ``__getattr__`` that builds ``pydataset_class(mixins[name], name)`` on
    first use: importing the case's module does not import Keras."""
    def __getattr__(name):
        if name in mixins:
            return pydataset_class(mixins[name], name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
