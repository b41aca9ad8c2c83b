"""The epoch-reshuffling ``keras.utils.PyDataset`` every case's Python-side variant builds on.

Imports Keras: the case's loaders module (which imports TensorFlow anyway) imports it, never
``import kit.cases`` (which names it lazily). A case writes a plain mixin with
``load(rows) -> (x, y)``, the batch of the index rows ``rows``, and its class on the base,
``class FramePyDataset(_FrameBatches, EpochPyDataset)``, in its loaders module: a plain class
there pickles by reference (worker processes started by ``spawn`` import it by name). The base
serves every row exactly once per epoch, in an order seeded by ``(seed, epoch)``, reshuffled at
every epoch's end.
"""

from __future__ import annotations

import keras

from kit.epochs import epoch_order, num_batches


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
