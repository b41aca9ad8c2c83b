"""The ``grain`` variant's options and its picklable pieces (``GrainOptions``, ``DecodeBatch``,
``NamedRecords``, ``shuffle_seed``): neither Grain nor TensorFlow, so that ``kit.spectrogram.grain``
and the loaders name them where the peers extra is missing. ``kit.spectrogram.grain`` (the face)
re-exports them; ``kit.spectrogram.grain_loader`` (Grain's subclasses) builds on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kit.cases import VariantOptions
from kit.spectrogram.convert import DEFAULT_SHARD_MB, STORE_DTYPES, record_dtype
from kit.store import StoreError
from kit.util import check_int, usable_cpus

#: Batches read ahead per reading thread (``prefetch`` by default): each thread has the
#: next batch to start on when it finishes one. Grain's own default (500 elements) is
#: meant for elements of a few KB; ours are whole batches (6 MB at 256 float32 frames of
#: 96 x 64), so 500 would hold 3 GB.
PREFETCH_PER_THREAD = 2


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

    The defaults: no thread count read clearly faster than another on 2 cores, and processes
    add a copy of each batch between them (measured: results/NOTES.md). The reads are
    Python-bound (Grain's source and shuffle steps around each frame's read), so threads
    share one GIL.
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
