"""The ``grain`` variant: Google Grain over an ArrayRecord store, the peer a user would pick instead.

Optional (``pip install 'kit[peers]'``: ``grain`` and ``array-record``; ``make test`` installs
them). The pipeline, built the way Grain's documentation builds one:

1. ``convert(index, "arrayrecord")``: the frames in sharded ArrayRecord files, one record a
   frame (its bytes in the store dtype, then its label: ``kit.spectrogram.convert``),
   built once and checked at open like every kit store;
2. ``grain.MapDataset.source(ArrayRecordDataSource(shards))`` (through ``NamedRecords``, whose
   read errors name the shard and the index row); ``.shuffle(seed=...)``: a
   global shuffle, a permutation of every record computed index by index (nothing
   buffered); ``.batch(batch_size, batch_fn=DecodeBatch(...))``: a batch's records
   decoded at once (``np.frombuffer`` with the layout's structured dtype, float16 frames
   cast to float32), the last partial batch kept; ``.repeat()``: endless epochs, each
   shuffled with its own seed (Grain folds the epoch into the shuffle's seed);
3. read through ``to_iter_dataset(grain.ReadOptions(num_threads=threads,
   prefetch_buffer_size=prefetch))``: ``threads`` threads each read and decode a whole
   batch, ``prefetch`` batches ahead; with ``processes`` > 0, then
   ``mp_prefetch(grain.MultiprocessingOptions(num_workers=processes))``.

``make_loader("grain", ...)`` returns a ``GrainLoader``, a ``grain.IterDataset`` whose every
iteration is the next epoch (a slice of the endless dataset): ``kit.timing.measure``,
``kit.timing.batches.iterate`` and ``model.fit(loader, epochs=...)`` each see every frame once an
epoch, in a new order every epoch. Its iterators (``EpochIterator``) save and restore their
position with Grain's ``get_state``/``set_state``, and inside a ``tf.train.Checkpoint``
(``kit.epochs.iterator_checkpoint``, ``kit.timing.fitting.fit(checkpoint_dir=...)``) as the kit's
tf.data loaders do.

The fit pitfall: Keras's Grain adapter (``keras.src.trainers.data_adapters.grain_dataset_adapter``,
for a ``MapDataset``, ``IterDataset`` or ``DataLoader``) iterates what it is given afresh at
every epoch when ``steps_per_epoch`` is not set. A plain ``MapDataset``
(``source.shuffle(seed).batch(...)``, ``GrainLoader.one_epoch``) starts again from its index 0,
which is the same order every epoch. Grain's own answer is ``.repeat()`` with
``steps_per_epoch``: ``model.fit(loader.endless(), steps_per_epoch=loader.steps_per_epoch,
epochs=...)``, one iterator across the epochs (``mp_prefetch``'s processes started once).
The loader itself, a new epoch at every iteration, is right without either:
``model.fit(loader, epochs=...)``, never with ``steps_per_epoch`` (Keras then keeps one
iterator across the epochs, and the second epoch finds it spent: epochs of 96, 0 and 96
frames on the embedded sample, as for the kit's tf.data loaders). Keras warns "Your input
ran out of data; interrupting training" at the end of each epoch of a finite Grain dataset
(its adapter does not know the epoch's length); the epochs are whole all the same
(tests/test_spectrogram_grain.py counts them). The endless form gives no such warning.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kit.cases import VariantOptions, check_shards
from kit.spectrogram.convert import DEFAULT_SHARD_MB, STORE_DTYPES, arrayrecord_dtype, record_dtype
from kit.store import StoreError
from kit.util import check_int, usable_cpus

__all__ = ["GrainOptions", "available", "require", "make_grain", "loader_class", "iterator_class", "DecodeBatch",
           "NamedRecords", "shuffle_seed", "PREFETCH_PER_THREAD"]

#: Batches read ahead per reading thread (``prefetch`` by default): each thread has the
#: next batch to start on when it finishes one. Grain's own default (500 elements) is
#: meant for elements of a few KB; ours are whole batches (6 MB at 256 float32 frames of
#: 96 x 64), so 500 would hold 3 GB.
PREFETCH_PER_THREAD = 2


class _NoJaxProfiler(logging.Filter):
    """Drops Grain's import-time warning that JAX's profiler is missing (this kit uses
    TensorFlow's): it printed an absl WARNING line into every command that imports Grain."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Failed to load jax profiler" not in record.getMessage()


@functools.cache
def available() -> str | None:
    """None if Grain and ArrayRecord import, else why not (one line, with the fix). The first
    import of Grain happens here, its JAX-profiler warning dropped (``_NoJaxProfiler``)."""
    quiet = _NoJaxProfiler()
    logging.getLogger("absl").addFilter(quiet)
    try:
        import grain  # noqa: F401  # optional: the peers extra, probed here
    except ImportError as e:
        return f"Google Grain is not installed ({e}); pip install 'kit[peers]' (make test installs it)"
    finally:
        logging.getLogger("absl").removeFilter(quiet)
    try:
        from array_record.python import array_record_module  # noqa: F401  # optional: the peers extra
    except ImportError as e:
        return f"ArrayRecord is not installed ({e}); pip install 'kit[peers]' (make test installs it)"
    return None


def require(what: str) -> None:
    """Raises ``ImportError`` saying what to install when the peers extra is missing."""
    why = available()
    if why is not None:
        raise ImportError(f"{what} needs the peers extra (grain, array-record): {why}")


@dataclass(frozen=True)
class GrainOptions(VariantOptions):
    """``grain``: its store, and how Grain reads it.

    Attributes:
        folder: the ArrayRecord store's folder (default: a content-keyed folder under ``workdir``).
        store_dtype: ``"float32"`` or ``"float16"`` (half the bytes); frames come back as float32.
        check_store: compare a reused store's files with their SHA-256 at open (once per
            change of a file; None follows ``$KIT_CHECK_STORES``).
        shard_mb: ArrayRecord shard size in MB.
        threads: Grain's reading threads, ``ReadOptions(num_threads=...)`` (None: the usable CPUs).
        processes: ``mp_prefetch`` worker processes (0: none, all reading in this process's
            threads). They are spawned: a script that sets it needs the
            ``if __name__ == "__main__":`` guard (a notebook or pytest does not).
        prefetch: batches read ahead, ``ReadOptions(prefetch_buffer_size=...)``
            (None: ``PREFETCH_PER_THREAD`` per thread).

    The defaults, measured on 2 shared cores (20,000 float16 frames of 96 x 64 in 3 shards,
    batches of 256, 3 interleaved rounds of 50 batches, ``prefetch=8``, 2026-12-02): 1, 2, 4,
    8 and 16 threads read 23.7k, 20.5k, 19.5k, 24.0k and 16.4k frames/s (rounds 11k-29k: no
    count better than another), 2 processes 13.0k; ``tfrecord`` 132k, ``in_memory`` 222k in
    the same run. The reads are Python-bound: in a synchronous epoch (cProfile), the Python
    around each frame's read (Grain's source and shuffle steps, its telemetry, the data
    source's lookup) took about half the time, ArrayRecord's reads 28%, the batch's join and
    float16 cast 22%; threads share one GIL, and processes add a copy of each batch between
    processes.
    """

    POSITIVE = ("threads", "prefetch")
    FLAGS = ("check_store",)
    folder: str | None = None
    store_dtype: str = "float32"
    check_store: bool | None = None
    shard_mb: float = DEFAULT_SHARD_MB
    threads: int | None = None
    processes: int = 0
    prefetch: int | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.store_dtype not in STORE_DTYPES:
            raise ValueError(f"store_dtype must be one of {STORE_DTYPES}, got {self.store_dtype!r}")
        if isinstance(self.shard_mb, bool) or not isinstance(self.shard_mb, (int, float)) or not self.shard_mb > 0:
            raise ValueError(f"shard_mb must be positive, got {self.shard_mb!r}")
        check_int("processes", self.processes, 0)

    def read_threads(self) -> int:
        """The reading threads: ``threads``, else the usable CPUs."""
        return self.threads or usable_cpus()

    def read_ahead(self) -> int:
        """Batches read ahead: ``prefetch``, else ``PREFETCH_PER_THREAD`` per thread."""
        return self.prefetch or PREFETCH_PER_THREAD * self.read_threads()


def shuffle_seed(seed: int) -> int:
    """Grain's shuffle seed for the kit's ``seed``, spread over 32 bits: Grain shuffles epoch
    ``e`` with ``seed + e``, so seeds 3 and 4 used as they are would share orders a step apart."""
    return int(np.random.SeedSequence(seed).generate_state(1, dtype=np.uint32)[0])


class DecodeBatch:
    """The pipeline's ``batch_fn``: a batch's records (``ARRAYRECORD_LAYOUT``) -> ``(x, y)``,
    ``x`` float32 ``(B, H, W, 1)``, ``y`` int64 ``(B,)``. Picklable: ``mp_prefetch``'s processes
    each get a copy."""

    def __init__(self, frame_shape, dtype: str, store: str | Path):
        self.record = record_dtype(frame_shape, dtype)
        self.store = str(store)

    def __call__(self, records) -> tuple[np.ndarray, np.ndarray]:
        size = self.record.itemsize
        for r in records:
            if len(r) != size:
                raise StoreError(f"{self.store}: a record of {len(r)} bytes where the layout has {size}; "
                                 f"run `python -m kit verify {self.store}`")
        block = np.frombuffer(b"".join(records), self.record)
        return block["x"].astype(np.float32)[..., None], block["y"].astype(np.int64)


class NamedRecords:
    """Grain's ``ArrayRecordDataSource`` over a store's shards, whose read errors name the shard,
    the record and the index row (ArrayRecord's own say "chunk data hash mismatch ... at byte
    N", naming no file). The store holds the frames in index order: record ``key`` of the
    store is index row ``key``. Picklable, as the source it wraps."""

    def __init__(self, source, paths, counts, folder):
        self.source, self.paths, self.folder = source, [str(p) for p in paths], str(folder)
        self.starts = np.cumsum([0, *counts])

    def __len__(self) -> int:
        return len(self.source)

    def __getitem__(self, key):
        try:
            return self.source[key]
        except (RuntimeError, OSError) as e:
            k = int(np.searchsorted(self.starts, key, side="right")) - 1
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise StoreError(f"{self.paths[k]}: record {int(key) - int(self.starts[k])} (index row {int(key)}) "
                             f"unreadable ({first}); run `python -m kit verify {self.folder}`") from None

    def __repr__(self) -> str:
        return f"NamedRecords({self.folder}, {len(self.paths)} shards)"


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
    import grain  # optional: the peers extra

    from kit.spectrogram.convert import convert

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
    return loader_class()(ds, examples=len(index), batch_size=opts.batch_size, read_options=read,
                          processes=vopts.processes, folder=folder)


@functools.cache
def iterator_class() -> type:
    """The ``EpochIterator`` class (a ``grain.DatasetIterator`` that is also a
    ``tf.train.experimental.PythonState``), built on the first call like ``loader_class``."""
    import grain  # optional: the peers extra
    import tensorflow as tf  # heavy: python -m kit --help imports this module

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

    EpochIterator.__module__, EpochIterator.__qualname__ = __name__, EpochIterator.__name__
    return EpochIterator


@functools.cache
def loader_class() -> type:
    """The ``GrainLoader`` class (a ``grain.IterDataset``), built on the first call: importing
    this module imports neither Grain nor TensorFlow."""
    import grain  # optional: the peers extra

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
            return iterator_class()(self, e)

        def __str__(self) -> str:
            return (f"GrainLoader({self.examples} examples in batches of {self.batch_size}, "
                    f"{self.settings()})")

    GrainLoader.__module__, GrainLoader.__qualname__ = __name__, GrainLoader.__name__
    return GrainLoader


def __getattr__(name):
    # GrainLoader and EpochIterator subclass Grain's classes: built on first use (loader_class,
    # iterator_class), so that importing this module imports neither Grain nor TensorFlow.
    if name == "GrainLoader":
        return loader_class()
    if name == "EpochIterator":
        return iterator_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
