"""The ``grain`` variant's pipeline and Grain's subclasses (``GrainLoader``, ``EpochIterator``):
imports Grain and TensorFlow, so only ``kit.spectrogram.grain.make_grain`` (once the peers extra
is known to be installed) and what uses the variant import it. What the pipeline is, and the
fit pitfall: ``kit.spectrogram.grain``'s docstring.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grain
import tensorflow as tf

from kit.cases import check_shards
from kit.spectrogram.convert import arrayrecord_dtype, convert
from kit.spectrogram.grain_options import DecodeBatch, GrainOptions, NamedRecords, shuffle_seed
from kit.spectrogram.peers import require
from kit.store import StoreError


class EpochIterator(grain.DatasetIterator, tf.train.experimental.PythonState):
    """One epoch of a ``GrainLoader``: its batches, then ``StopIteration``.

    ``get_state()`` is a small JSON-able dict (the epoch, the batches delivered, Grain's
    own iterator state); ``set_state(state)`` on an iterator of a loader built the same
    way continues from there: the rest of that epoch, exactly the batches not yet
    delivered, and the loader's next iteration is the epoch after it. As a
    ``tf.train.experimental.PythonState`` it goes into a ``tf.train.Checkpoint``.
    """

    def __init__(self, loader, epoch: int):
        super().__init__()
        self._loader, self._epoch, self._done = loader, epoch, 0
        self._inner: Any = None  # Grain's iterator over this epoch's slice, opened on first use
        self._pending: Any = None  # Grain's state to restore into it when it opens

    @property
    def epoch(self) -> int:
        return self._epoch

    def __next__(self):
        self._assert_not_closed()
        steps = self._loader.steps_per_epoch
        if self._done >= steps:
            raise StopIteration
        if self._inner is None:
            self._inner = iter(self._loader.epoch(self._epoch))
            if self._pending is not None:
                self._inner.set_state(self._pending)
                self._pending = None
        try:
            batch = next(self._inner)
        except StopIteration:
            self._close_inner()
            raise StoreError(f"{self._loader.folder}: epoch {self._epoch} of the grain loader ended after "
                             f"{self._done} of {steps} batches") from None
        self._done += 1
        if self._done == steps:
            self._close_inner()  # its threads (and processes) are not needed any more
        return batch

    def get_state(self) -> dict:
        inner = self._inner.get_state() if self._inner is not None else self._pending
        return {"epoch": self._epoch, "batches": self._done, "grain": inner,
                "examples": self._loader.examples, "batch_size": self._loader.batch_size}

    def set_state(self, state: dict) -> None:
        want = (self._loader.examples, self._loader.batch_size)
        got = (state.get("examples"), state.get("batch_size"))
        if got != want:
            raise ValueError(f"a grain loader state for {got[0]} examples in batches of {got[1]}; this loader "
                             f"has {want[0]} in batches of {want[1]}")
        self._close_inner()
        self._epoch, self._done, self._pending = int(state["epoch"]), int(state["batches"]), state["grain"]
        self._loader.next_epoch = self._epoch + 1  # the epochs after it keep their orders

    def serialize(self) -> str:
        return json.dumps(self.get_state())

    def deserialize(self, string_value) -> None:
        self.set_state(json.loads(string_value))

    def _close_inner(self) -> None:
        if self._inner is not None:
            self._inner.close()
            self._inner = None

    def close(self) -> None:
        self._close_inner()
        super().close()


class GrainLoader(grain.IterDataset):
    """The ``grain`` variant's loader: each iteration the next epoch of every frame, once,
    in batches (the last partial), as ``(x, y)`` NumPy arrays.

    Attributes:
        one_epoch: the ``MapDataset`` of one epoch (source, shuffle, batch): the same
            order every time it is iterated (the fit pitfall, see the module docstring).
        epochs: ``one_epoch.repeat()``: endless, each epoch in its own order.
        steps_per_epoch: batches an epoch.
        examples, batch_size: frames an epoch, frames a batch.
        read_options: Grain's ``ReadOptions`` (threads, batches read ahead).
        processes: ``mp_prefetch`` processes (0: none).
        folder: the ArrayRecord store.
        next_epoch: the epoch the next iteration reads (from 0).
    """

    def __init__(self, one_epoch, *, examples: int, batch_size: int, read_options, processes: int, folder):
        super().__init__()
        self.one_epoch = one_epoch
        self.epochs = one_epoch.repeat()
        self.steps_per_epoch = len(one_epoch)
        self.examples, self.batch_size = int(examples), int(batch_size)
        self.read_options, self.processes, self.folder = read_options, int(processes), Path(folder)
        self.next_epoch = 0

    def settings(self) -> dict:
        """How it reads: threads, batches read ahead, processes, shards (for a bench's row)."""
        return {"threads": int(self.read_options.num_threads),
                "prefetch": int(self.read_options.prefetch_buffer_size),
                "processes": self.processes, "store": str(self.folder)}

    def __len__(self) -> int:
        return self.steps_per_epoch

    def cardinality(self) -> int:
        """Batches an epoch (as a tf.data loader's ``cardinality()``)."""
        return self.steps_per_epoch

    def _read(self, ds):
        ds = ds.to_iter_dataset(self.read_options)
        if self.processes:
            ds = ds.mp_prefetch(grain.MultiprocessingOptions(num_workers=self.processes))
        return ds

    def epoch(self, e: int):
        """The batches of epoch ``e`` (from 0), as a ``grain.IterDataset`` read with the loader's options."""
        b = self.steps_per_epoch
        return self._read(self.epochs[e * b:(e + 1) * b])

    def endless(self, start_epoch: int = 0):
        """Every epoch from ``start_epoch`` on, endless, as a ``grain.IterDataset``: for
        ``model.fit(loader.endless(), steps_per_epoch=loader.steps_per_epoch, epochs=...)``."""
        return self._read(self.epochs[start_epoch * self.steps_per_epoch:])

    def __iter__(self):
        e, self.next_epoch = self.next_epoch, self.next_epoch + 1
        return EpochIterator(self, e)

    def __str__(self) -> str:
        return (f"GrainLoader({self.examples} examples in batches of {self.batch_size}, "
                f"{self.settings()})")


def make_grain(index, opts, vopts: GrainOptions):
    """The ``grain`` loader over ``index`` (see the module docstring).

    Args:
        index: the ``FrameIndex``.
        opts: the ``LoaderOptions`` (batch size, shuffle, seed, workdir, progress).
        vopts: the variant's ``GrainOptions``.

    Returns:
        A ``GrainLoader``.
    """
    require("the grain variant")
    folder, manifest = convert(index, "arrayrecord", vopts.folder, workdir=opts.workdir, shard_mb=vopts.shard_mb,
                               progress=opts.progress, adopt=True, store_dtype=vopts.store_dtype,
                               check=vopts.check_store)
    dtype = arrayrecord_dtype(manifest)  # the store's, whatever was asked
    paths = check_shards(folder, manifest)  # a shard cut short or replaced is refused before reading
    source = NamedRecords(grain.sources.ArrayRecordDataSource(paths), paths, [s.count for s in manifest.shards],
                          folder)
    if len(source) != len(index):
        raise StoreError(f"{folder}: its shards hold {len(source)} records, the index {len(index)} frames; "
                         f"run `python -m kit verify {folder}`")
    ds = grain.MapDataset.source(source)
    if opts.shuffle:
        ds = ds.shuffle(seed=shuffle_seed(opts.seed))
    ds = ds.batch(opts.batch_size, batch_fn=DecodeBatch(index.frame_shape, dtype, folder))
    read = grain.ReadOptions(num_threads=vopts.read_threads(), prefetch_buffer_size=vopts.read_ahead())
    return GrainLoader(ds, examples=len(index), batch_size=opts.batch_size, read_options=read,
                          processes=vopts.processes, folder=folder)
