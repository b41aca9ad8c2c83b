"""``python -m kit bench scale``: whole epochs at the user's size, warm and cold, against the machine's limits.

Every other bench measures 20,000 frames sitting in the page cache and projects to a
million. This one generates the million (or ``--frames``), converts them to the
``memmap`` and ``tfrecord`` stores and measures **whole epochs**:

* each loader **warm** (its store read into the page cache first; the median of
  ``--warm-epochs`` whole epochs, each listed in the basis) and **cold** (the
  store's pages evicted first with ``os.posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)``,
  which needs no root; the share of its pages still cached after, by ``mincore``, is in
  the row's basis and ``info["cached_after_evict"]``, and ``cold_warning`` flags a cold
  figure that was not one, or that outran the disk's reference reads);
* ``memmap`` in block order (``order="blocks"``: near-sequential reads, each window's
  blocks asked of the kernel two windows ahead) and, cold, in
  the fully random order for comparison (capped, then projected and labelled so);
* the head trained from a feature cache of every frame, warm and cold;
* the generator over a bounded sample, projected and labelled as projected;
* the physical limits in the same run: the disk's sequential read rate of each store's
  own files (cold, brought into the page cache 16 MB at a time with the next
  ``READ_AHEAD_CHUNKS`` asked for ahead, nothing copied: ``cache_through``), read just
  before and just after that store's cold epoch, the faster read its limit (rows
  ``disk_sequential_read``, the memmap store's file, and ``disk_sequential_read_tfrecord``;
  every read kept in ``info["disk_reads_bytes_per_s"][store]``, ``info["disk_note"]``
  saying so when a store's two differ by more than ``DISK_UNSTEADY``, ``info["cpu_note"]``
  when its faster read kept ``CPU_BOUND_READ`` of a core busy; a VM's disk can read a file
  faster each time it reads it, so each cold epoch is compared with reads of the same
  files in the same stretch of the run) and the memory gather rate (warm: random batches
  gathered from a sample held in RAM), and each loader as a ``fraction_of_limit``;
* the epoch projected from 20,000 frames of the same loader the way the default
  spectrogram bench projects (its rounds of warm-up then timed batches, the steady rate
  scaled to the whole epoch), beside the measured one, so the projection is checked
  rather than trusted (``info["projection_check"]`` also keeps the projection from whole
  20,000-frame epochs, which carries each epoch's fixed start 50 times over).

One row per measured thing: ``variant``, ``state`` (``"warm"``/``"cold"``), ``frames``,
``dtype``, ``epoch_s``, ``measured`` (True for a whole epoch, False for a projection),
``examples_per_s``, ``limit`` (``"disk"``/``"memory"``/None), ``fraction_of_limit``,
``cpu_cores`` (CPU seconds the process used per second of a measured read or epoch; None
for the other rows), and ``basis`` (what was read, in words). The limits are rows too
(``disk_sequential_read``, ``disk_sequential_read_tfrecord``, ``memory_gather``). A cold
fraction compares the store's bytes read per second with the disk's sequential rate of
that store's files; a warm one compares frames per second with the gather rate.

The data (``<workdir>/bench-scale-<files>x100-<dtype>-s<seed>``), the stores and the
feature cache are built once and reused by later runs; an interrupted generation or
conversion resumes. The free disk space is checked first.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import math
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["EPOCH", "TARGETS", "COLUMNS", "run", "disk_note", "cold_warning", "warm_warning", "proactive_reclaim",
           "free_page_reporting",
           "needed_bytes", "make_data", "evict", "cached_fraction", "read_through", "cache_through", "Residency",
           "epoch", "memory_gather_rate", "order_randomness", "epoch_orders",
           "add_arguments", "register", "main"]

EPOCH = 1_000_000
FRAMES_PER_FILE = 100
#: The default spectrogram bench's size: the basis of the projections checked here.
PROJECTION_FRAMES = 20_000
#: Whole warm epochs per warm row, their median reported.
WARM_EPOCHS = 3
FRAME_SHAPE = (96, 64)
#: Column order of the rows (the issue's form, then the basis).
COLUMNS = ["variant", "state", "frames", "dtype", "epoch_s", "measured", "examples_per_s", "limit",
           "fraction_of_limit", "cpu_cores", "basis"]
#: The disk's reference read (``cache_through``) and the warming read (``read_through``): 16 MB
#: chunks asked of the kernel this many ahead.
READ_AHEAD_CHUNKS = 8
#: The disk's reference read (``cache_through``): how often it asks whether a chunk is cached,
#: and how long a chunk may make no progress before it is read by hand.
POLL_S = 0.0005
STALL_S = 2.0
#: A cold read this many times the disk's measured sequential rate is not a cold figure (or the
#: disk's rate was measured low): flagged in its basis, and its target left without a verdict.
COLD_IMPLAUSIBLE = 1.1
#: A share of the store's pages still cached after its eviction (``cached_fraction``) at which a
#: "cold" epoch is not one: flagged in its basis, and its target left without a verdict.
CACHED_AFTER_EVICT = 0.05
#: A store's two reference reads (before and after its cold epoch) this many times apart: the
#: disk's rate moved during the run (a shared VM's disk read the same file at 454, then 1,275 MB/s), so
#: the cold fractions say as much about the disk as about the loaders (``disk_note``).
DISK_UNSTEADY = 1.5
#: The disk's reference read (one thread) used at least this much of a core: it was bound, or
#: nearly, by the kernel's work of bringing pages in (on this project's VM, 0.5-0.65 CPU-s per
#: GB; a read that also copied them, ``read_through``, took ~1), not by the disk alone; a loader
#: that decodes on the same cores shares that CPU (``cpu_note``).
CPU_BOUND_READ = 0.8
#: A reference read shorter than this says nothing of its CPU (the clock counts in 10 ms ticks).
CPU_NOTE_MIN_S = 1.0
#: A warm epoch that started with less than this share of its store's pages cached was partly
#: a cold one: flagged in its basis (``warm_warning``). On this project's VM a kernel thread
#: (DAMON, ``proactive_reclaim``) pages out file pages it has not seen used for a minute.
WARM_CACHED_MIN = 0.95
#: Targets of the issue (1,000,000 frames, float16, 2 cores).
TARGETS = {"memmap_warm_epoch_s_max": 10.0, "cold_fraction_of_disk_min": 0.7, "head_epoch_s_max": 15.0,
           "projection_error_max": 0.25}


# --------------------------------------------------------------------------- data and disk


def data_folder(frames: int, dtype: str, seed: int = 0, workdir=None) -> Path:
    from kit import store

    files = math.ceil(frames / FRAMES_PER_FILE)
    root = Path(workdir) if workdir is not None else store.default_workdir()
    return root / f"bench-scale-{files}x{FRAMES_PER_FILE}-{dtype}-s{seed}"


def frame_bytes(dtype: str) -> int:
    return int(np.prod(FRAME_SHAPE)) * np.dtype(dtype).itemsize


def needed_bytes(frames: int, dtype: str, *, seed: int = 0, workdir=None) -> dict:
    """Bytes each missing piece will take: ``{"data": ..., "memmap": ..., ...}`` (0 when built).

    The TFRecord store is counted at 1.02x the frames (record framing and labels), the
    feature cache at 1,024 float16 values per frame. A TFRecord store of an older layout
    counts as missing: the loader builds one of the current layout beside it.
    """
    from kit import store
    from kit.spectrogram.convert import TFRECORD_FORMAT

    def current_layout(m) -> bool:
        return m.meta.get("options", {}).get("format") == TFRECORD_FORMAT

    size = frames * frame_bytes(dtype)
    data = data_folder(frames, dtype, seed, workdir)
    need = {"data": 0 if (data / "index.csv").exists() else size}
    root = Path(workdir) if workdir is not None else store.default_workdir()
    source = str((data / "index.csv").resolve())
    built = set()
    for folder in root.glob("spectrogram-*"):
        m = store.complete(folder)
        if m is not None and m.meta.get("source") == source and m.meta.get("count", m.count) >= frames \
                and m.meta.get("dtype") == dtype and (m.kind != "spectrogram-tfrecord" or current_layout(m)):
            built.add(m.kind)
    need["memmap"] = 0 if "spectrogram-memmap" in built else size
    need["tfrecord"] = 0 if "spectrogram-tfrecord" in built else int(size * 1.02)
    # The feature cache (the backbone's or the stand-in's): 1,024 float16 values per frame.
    caches = (store.complete(p) for p in root.glob("features-*"))
    need["features"] = 0 if any(m is not None and m.meta.get("source") == source and m.count >= frames
                                for m in caches) else frames * 1024 * 2
    return need


def make_data(frames: int, dtype: str, *, seed: int = 0, workdir=None, workers=None, progress=True):
    """The bench's data (generated on first use, resumed if interrupted), as a ``FrameIndex``
    of exactly ``frames`` rows."""
    from kit import samples
    from kit.spectrogram import FrameIndex

    files = math.ceil(frames / FRAMES_PER_FILE)
    csv = samples.make_spectrogram_sharded(data_folder(frames, dtype, seed, workdir), files=files,
                                           frames_per_file=FRAMES_PER_FILE, seed=seed, dtype=dtype,
                                           workers=workers, progress=progress)
    index = FrameIndex.from_csv(csv)
    return index if len(index) == frames else index.subset(np.arange(frames))


def mapped(paths) -> list[str]:
    """Those of ``paths`` that this process has memory-mapped (from ``/proc/self/maps``;
    empty where that file does not exist)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    return [str(p) for p in paths if f" {Path(p).resolve()}\n" in maps]


class Residency:
    """Which pages of one file are in the page cache: ``mincore(2)`` over a read-only
    mapping of it (mapping reads nothing). ``cached(offset, length)`` counts the cached
    pages of a range and all its pages; ``close()`` drops the mapping. Raises OSError
    where that cannot be asked (no ``mincore``, a mapping refused); an empty file has no
    pages."""

    def __init__(self, path):
        import ctypes
        import mmap

        libc = ctypes.CDLL(None, use_errno=True)
        try:
            self._map, self._unmap, self._mincore = libc.mmap, libc.munmap, libc.mincore
        except AttributeError as e:
            raise OSError(f"no mmap/mincore here: {e}") from None
        self._map.restype = ctypes.c_void_p
        self._map.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        self._unmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self._mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
        self._ctypes, self.page = ctypes, mmap.PAGESIZE
        self.size = os.path.getsize(path)
        self._addr = None
        if not self.size:
            return
        fd = os.open(path, os.O_RDONLY)
        try:
            addr = self._map(None, self.size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        finally:
            os.close(fd)  # the mapping keeps the file
        if addr is None or addr == ctypes.c_void_p(-1).value:
            raise OSError(f"cannot map {path}")
        self._addr = addr

    def cached(self, offset: int = 0, length: int | None = None) -> tuple[int, int]:
        """``(cached pages, pages)`` of ``length`` bytes (to the end) from ``offset``."""
        if self._addr is None:
            return 0, 0
        length = self.size - offset if length is None else min(length, self.size - offset)
        first = offset // self.page
        count = (offset + length + self.page - 1) // self.page - first
        if count <= 0:
            return 0, 0
        vec = (self._ctypes.c_ubyte * count)()
        if self._mincore(self._addr + first * self.page, count * self.page, vec) != 0:
            raise OSError(self._ctypes.get_errno(), "mincore failed")
        return int(np.count_nonzero(np.frombuffer(vec, np.uint8) & 1)), count

    def close(self):
        if self._addr is not None:
            self._unmap(self._addr, self.size)
            self._addr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def cached_fraction(paths) -> float | None:
    """The share of ``paths``' pages in the page cache now (``Residency``). None where
    that cannot be asked (no ``mincore``, a mapping refused) or the files are empty."""
    cached = total = 0
    for p in paths:
        try:
            with Residency(p) as r:
                c, t = r.cached()
        except OSError:
            return None
        cached += c
        total += t
    return cached / total if total else None


def evict(paths) -> float | None:
    """Drops ``paths``' pages from the page cache (written back first: dirty pages stay)
    and returns the share still cached after (``cached_fraction``: None where it cannot
    be asked). Pages that a process maps stay cached whatever ``posix_fadvise`` says, so
    the memmap loaders' mappings are released first (``release_store_mappings``); a file
    still mapped after that is an error, not a cold epoch measured on cached pages."""
    from kit.spectrogram.loaders import release_store_mappings

    release_store_mappings()
    gc.collect()
    still = mapped(paths)
    if still:
        raise RuntimeError(f"cannot evict {', '.join(still)} from the page cache: this process still maps it, "
                           "so a 'cold' epoch would read cached pages")
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return cached_fraction(paths)


class _Chunks:
    """``paths`` as one stream of ``chunk``-sized pieces, file after file: ``self[j]`` is
    ``(file index, offset, length)``, and ``ask(j)`` asks the kernel to read piece ``j``
    into the page cache (``POSIX_FADV_WILLNEED``, in pieces of ``kit.store.kernel_read_bytes``;
    nothing past the last). ``read_through`` and ``cache_through`` ask ahead with it."""

    def __init__(self, paths, chunk: int):
        self.paths = [Path(p) for p in paths]
        sizes = [os.path.getsize(p) for p in self.paths]
        self.items = [(i, offset, min(chunk, size - offset))
                      for i, size in enumerate(sizes) for offset in range(0, size, chunk)]
        self.total = sum(sizes)
        self._pieces = {}

    def __len__(self):
        return len(self.items)

    def __getitem__(self, j):
        return self.items[j]

    def ask(self, j):
        from kit import store

        if j >= len(self.items):
            return
        i, offset, length = self.items[j]
        if i not in self._pieces:
            self._pieces[i] = store.kernel_read_bytes(self.paths[i])
        fd = os.open(self.paths[i], os.O_RDONLY)
        try:
            store.ask_to_read(fd, offset, length, self._pieces[i])
        finally:
            os.close(fd)  # what was asked for is read all the same


def read_through(paths, chunk: int = 16 << 20, ahead: int = READ_AHEAD_CHUNKS) -> tuple[int, float]:
    """Reads ``paths`` front to back, one after the other, in ``chunk`` reads, the kernel
    asked for the next ``ahead`` chunks (``POSIX_FADV_WILLNEED``) while each is read, so
    the disk works on many requests at once; returns ``(bytes, seconds)``. The chunks
    asked for run on into the next files: a store of many shards is read as one stream,
    with no pause at each shard's end. It warms a store before its warm epochs (its pages
    read as a reader reads them). It was the disk's reference read until ``cache_through``:
    one thread copying 16 MB reads into its buffer is bound by that copy as much as by the
    disk (0.8-0.98 of a core in the kernel on this project's VM)."""
    chunks = _Chunks(paths, chunk)

    def ask(j):  # the kernel asked for chunk j (of all the files', in order) to be read
        if ahead:
            chunks.ask(j)

    buf = bytearray(chunk)
    view = memoryview(buf)
    total = done = 0
    t0 = time.perf_counter()
    for j in range(min(ahead, len(chunks))):
        ask(j)
    for p in chunks.paths:
        with open(p, "rb", buffering=0) as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
            while n := f.readinto(view):
                total += n
                done += 1
                ask(done + ahead - 1)
    return total, time.perf_counter() - t0


def cache_through(paths, chunk: int = 16 << 20, ahead: int = READ_AHEAD_CHUNKS,
                  stall_s: float = STALL_S) -> tuple[int, float]:
    """The disk's sequential read rate, with nothing copied: asks the kernel to read
    ``paths`` front to back, one after the other, into the page cache, ``chunk`` at a
    time (``POSIX_FADV_WILLNEED``, in pieces of ``kit.store.kernel_read_bytes``), and
    waits (``mincore``) for each chunk's pages to be there, with the next ``ahead`` chunks
    (on into the next files) asked for while it waits; returns ``(bytes, seconds)``.

    Why not ``read_through``: one thread copying what it reads into its buffer is bound
    by that copy as much as by the disk (0.8-0.98 of a core in the kernel on this
    project's VM), and the memmap loader, which maps the pages and copies nothing, then
    ran 1.13x faster than "the disk". A chunk whose pages the kernel does not bring
    within ``stall_s`` seconds of no progress (a hint may be dropped) is read with
    ``pread``; ``read_through`` is used where ``mincore`` cannot be asked."""
    paths = [Path(p) for p in paths]
    try:
        residency = [Residency(p) for p in paths]
    except OSError:
        return read_through(paths, chunk, ahead)
    try:
        chunks = _Chunks(paths, chunk)
        ask = chunks.ask

        def wait(j):  # until chunk j is cached; read it where the kernel stops bringing it
            i, offset, length = chunks[j]
            seen, since = -1, time.perf_counter()
            while True:
                cached, pages = residency[i].cached(offset, length)
                if cached == pages:
                    return
                now = time.perf_counter()
                if cached != seen:
                    seen, since = cached, now
                elif now - since > stall_s:
                    with open(paths[i], "rb", buffering=0) as f:
                        os.pread(f.fileno(), length, offset)
                    return
                time.sleep(POLL_S)

        t0 = time.perf_counter()
        for j in range(min(max(ahead, 1), len(chunks))):
            ask(j)
        for j in range(len(chunks)):
            wait(j)
            ask(j + max(ahead, 1))
        return chunks.total, time.perf_counter() - t0
    finally:
        for r in residency:
            r.close()


def store_files(folder: Path, manifest) -> list[Path]:
    return [folder / s["name"] for s in manifest.shards]


# --------------------------------------------------------------------------- measuring


def epoch(loader, *, expected: int, labels: np.ndarray | None = None, max_seconds: float | None = None):
    """Reads one epoch of ``loader``; returns ``(examples, seconds, whole)``.

    A whole epoch is checked: exactly ``expected`` examples and, given ``labels`` (the
    index's), the same count of every class. With ``max_seconds`` the read stops early
    (``whole`` False) and the caller projects.
    """
    counts = None
    n = 0
    classes = int(labels.max()) + 1 if labels is not None else 0  # once: per batch it cost seconds an epoch
    t0 = time.perf_counter()
    for _x, y in loader:
        y = np.asarray(y)
        n += len(y)
        if labels is not None:
            c = np.bincount(y, minlength=classes)
            counts = c if counts is None else counts + c
        if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
            return n, time.perf_counter() - t0, False
    seconds = time.perf_counter() - t0
    if n != expected:
        raise RuntimeError(f"the epoch delivered {n:,} examples, the index holds {expected:,}")
    if labels is not None and not np.array_equal(counts, np.bincount(labels, minlength=len(counts))):
        raise RuntimeError("the epoch's labels differ from the index's: some frames came twice or never")
    return n, seconds, True


def memory_gather_rate(sample: np.ndarray, *, batch_size: int, seconds: float = 3.0) -> tuple[int, float]:
    """The memory limit: random batches gathered from ``sample`` held in RAM and cast to
    float32 in a tf.data map (the ``in_memory`` variant's work), for about ``seconds``.
    Returns ``(examples, seconds)``."""
    import tensorflow as tf

    from kit.epochs import untuned_options
    from kit.util import usable_cpus

    with tf.device("/CPU:0"):
        x = tf.Variable(sample, trainable=False)
    n = len(sample)

    def batch(i):  # batch_size random rows, drawn in the graph: no per-row element in tf.data
        rows = tf.random.stateless_uniform([batch_size], seed=tf.stack([i, 0]), maxval=n, dtype=tf.int64)
        return tf.cast(tf.gather(x, rows), tf.float32)

    ds = tf.data.Dataset.range(1 << 40).map(batch, num_parallel_calls=usable_cpus()).prefetch(2)
    ds = ds.with_options(untuned_options())  # as the kit's loaders
    it = iter(ds)
    for _ in range(3):
        next(it)
    count = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        count += int(next(it).shape[0])
    took = time.perf_counter() - t0
    del it, ds, x
    return count, took


def _row(variant, state, frames, dtype, epoch_s, measured, basis, limit=None, fraction=None, cpu_cores=None):
    return {"variant": variant, "state": state, "frames": int(frames), "dtype": dtype, "epoch_s": float(epoch_s),
            "measured": bool(measured), "examples_per_s": frames / epoch_s, "limit": limit,
            "fraction_of_limit": None if fraction is None else float(fraction),
            "cpu_cores": None if cpu_cores is None else float(cpu_cores), "basis": basis}


def cpu_used(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, timed: ``(result, wall_s, cpu_s, kernel_s)``, the CPU
    seconds this process's threads used meanwhile (user and kernel), and the kernel's part."""
    c0, t0 = os.times(), time.perf_counter()
    out = fn(*args, **kwargs)
    wall, c1 = time.perf_counter() - t0, os.times()
    return out, wall, (c1.user - c0.user) + (c1.system - c0.system), c1.system - c0.system


# --------------------------------------------------------------------------- the run


def run(*, frames: int = EPOCH, dtype: str = "float16", batch_size: int = 256, seed: int = 0,
        skip_extraction: bool = False, generator_frames: int = 2_000, random_seconds: float = 60.0,
        projection_frames: int = PROJECTION_FRAMES, warm_epochs: int = WARM_EPOCHS, workdir=None, workers=None,
        progress=True, log=print) -> tuple[pd.DataFrame, dict]:
    """Generates, converts and measures; returns ``(rows, info)``.

    Args:
        frames: frames in the data (the user's 1,000,000).
        dtype: of the data and the stores (``"float16"``: half the bytes; loaders deliver float32).
        batch_size: the user's global batch.
        seed: of the data and of the epochs' order.
        skip_extraction: do not run the backbone over every frame: use its cache if one
            is built, else a stand-in cache of the same shape (frames average-pooled to
            1,024 values), so the head's epoch is still measured at full size.
        generator_frames: the generator's bounded sample (it would take half an hour).
        random_seconds: cap on the cold epoch of ``memmap`` in fully random order (then projected).
        projection_frames: the basis of the checked projections (20,000: the default bench).
        warm_epochs: whole warm epochs per warm row (the head: after its first, traced,
            epoch); the row is their median, the basis lists each (a 2-core VM's warm
            epochs vary from one to the next by up to 2x).
        workdir: where data, stores and caches go (the kit cache).
        workers: parallel writers of the data.
        progress: progress bars.
        log: where progress lines go.
    """
    import tensorflow as tf

    from kit import features, store, timing
    from kit.models import audio
    from kit.spectrogram import convert, make_loader

    if dtype not in ("float16", "float32"):
        raise ValueError(f"dtype must be 'float16' or 'float32', got {dtype!r}")
    for name, v in (("frames", frames), ("batch_size", batch_size), ("generator_frames", generator_frames),
                    ("projection_frames", projection_frames), ("warm_epochs", warm_epochs)):
        if not isinstance(v, (int, np.integer)) or v <= 0:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    root = Path(workdir) if workdir is not None else store.default_workdir()
    need = needed_bytes(frames, dtype, seed=seed, workdir=workdir)
    parts = ", ".join(f"{k} {v / 1e9:.1f} GB" for k, v in need.items() if v)
    store.check_free_space(root, sum(need.values()),
                           what=f"bench scale at {frames:,} {dtype} frames ({parts or 'all built'})")
    fb = frame_bytes(dtype)
    log(f"data: {frames:,} frames of {FRAME_SHAPE} {dtype} ({frames * fb / 1e9:.1f} GB) "
        f"under {data_folder(frames, dtype, seed, workdir)}")
    t0 = time.perf_counter()
    index = make_data(frames, dtype, seed=seed, workdir=workdir, workers=workers, progress=progress)
    log(f"  ready in {time.perf_counter() - t0:.0f} s ({len(index.files):,} files)")
    n, labels = len(index), index.labels
    info = {"frames": n, "dtype": dtype, "batch_size": batch_size, "warm_epochs": warm_epochs, "targets": TARGETS}

    stores = {}
    for fmt in ("memmap", "tfrecord"):
        t0 = time.perf_counter()
        folder, m = convert(index, fmt, workdir=workdir, store_dtype=dtype, progress=progress)
        stores[fmt] = (folder, m, store_files(folder, m))
        log(f"  {fmt} store: {folder} ({sum(s['bytes'] for s in m.shards) / 1e9:.1f} GB, "
            f"ready in {time.perf_counter() - t0:.0f} s)")
    rows = []

    def loader(fmt, ix=index, **kw):
        return make_loader(fmt, ix, batch_size=batch_size, shuffle=True, seed=seed, workdir=workdir,
                           store_dtype=dtype, progress=False, **kw)

    def measured(variant, state, ld, limit, basis_extra="", cached_after=None, files=None, **kw):
        gc.collect()
        if cached_after is not None:  # what the eviction left in the page cache (mincore)
            basis_extra += f"; {cached_after:.1%} of the store's pages cached after the eviction"
        cached_before = []  # warm: the share of the store's pages cached as each epoch starts

        def one(**kw):
            if state == "warm" and files:
                cached_before.append(cached_fraction(files))
            return cpu_used(epoch, ld, expected=n, labels=labels, **kw)

        (got, s, whole), wall, cpu, _ = one(**kw)
        if whole and state == "warm" and warm_epochs > 1:
            more = [one() for _ in range(warm_epochs - 1)]
            times = [s] + [m[0][1] for m in more]
            cores = (cpu + sum(m[2] for m in more)) / (wall + sum(m[1] for m in more))
            return {"variant": variant, "state": state, "epoch_s": float(np.median(times)), "measured": True,
                    "limit": limit, "cpu_cores": cores, "cached_after": cached_after,
                    "cached_before": cached_before,
                    "basis": f"the median of {len(times)} whole epochs of {n:,} frames "
                             f"({', '.join(f'{t:.1f}' for t in times)} s){basis_extra}"}
        if whole:
            return {"variant": variant, "state": state, "epoch_s": s, "measured": True, "limit": limit,
                    "cpu_cores": cpu / wall, "cached_after": cached_after, "cached_before": cached_before,
                    "basis": f"a whole epoch of {n:,} frames{basis_extra}"}
        return {"variant": variant, "state": state, "epoch_s": s * n / got, "measured": False, "limit": limit,
                "cpu_cores": cpu / wall, "cached_after": cached_after, "cached_before": cached_before,
                "basis": f"projected from {got:,} frames read in {s:.0f} s (capped){basis_extra}"}

    # The disk's sequential read rate of each store's own files, cold, front to back, read just
    # before and just after that store's cold epoch: the faster of the two is its limit. A VM's
    # disk can read a file faster each time it reads it (its host may cache it: 381, 498, then
    # 697 MB/s for three cold reads of one file), so a limit read of other files, or far from
    # the epoch in the run, compares the epoch with a disk in another state.
    mm_folder, mm_manifest, mm_files = stores["memmap"]
    frames_file = mm_folder / "frames.npy"
    tf_files = stores["tfrecord"][2]
    reference = {"memmap": [frames_file], "tfrecord": tf_files}
    disk_reads = {fmt: [] for fmt in reference}

    def read_disk(fmt, when):  # appends (bytes, seconds, CPU seconds, of which in the kernel)
        evict(reference[fmt])
        (nbytes, s), _, cpu, kernel = cpu_used(cache_through, reference[fmt])
        log(f"disk sequential read of the {fmt} store (cold, {when} its cold epoch): {nbytes / 1e9:.1f} GB in "
            f"{s:.1f} s = {nbytes / s / 1e6:,.0f} MB/s ({cpu / s:.2f} CPU-s per s, {kernel / s:.2f} in the kernel)")
        disk_reads[fmt].append((nbytes, s, cpu, kernel))

    found = []
    # memmap, block order: cold between its reference reads, then the fully random order, cold;
    # then warm.
    read_disk("memmap", "before")
    left = evict(mm_files)
    found.append(measured("memmap", "cold", loader("memmap", order="blocks"), "disk", " (block order)",
                          cached_after=left))
    read_disk("memmap", "after")
    left = evict(mm_files)
    found.append(measured("memmap_random", "cold", loader("memmap", order="random"), "disk",
                          " (fully random order)", max_seconds=random_seconds, cached_after=left))
    read_through(mm_files)
    found.append(measured("memmap", "warm", loader("memmap", order="blocks"), "memory", " (block order)",
                          files=mm_files))
    log("  " + "; ".join(f"{r['variant']} {r['state']} {r['epoch_s']:.1f} s" for r in found[-3:]))

    # The memory gather limit, from a sample of the store held in RAM.
    sample_n = min(n, 65_536)
    sample = np.array(store.load_npy(frames_file)[:sample_n])
    got, s = memory_gather_rate(sample, batch_size=batch_size)
    del sample
    gather = got / s
    log(f"memory gather (warm): {gather:,.0f} frames/s")
    rows.append(_row("memory_gather", "warm", n, dtype, n / gather, False,
                     f"projected from {got:,} frames gathered at random in batches of {batch_size} from "
                     f"{sample_n:,} frames in RAM", "memory", 1.0))

    # tfrecord, cold between its reference reads, then warm (the memmap store's pages dropped,
    # to make room).
    evict(mm_files)
    read_disk("tfrecord", "before")
    left = evict(tf_files)
    found.append(measured("tfrecord", "cold", loader("tfrecord"), "disk", cached_after=left))
    read_disk("tfrecord", "after")
    read_through(tf_files)
    found.append(measured("tfrecord", "warm", loader("tfrecord"), "memory", files=tf_files))
    log("  " + "; ".join(f"{r['variant']} {r['state']} {r['epoch_s']:.1f} s" for r in found[-2:]))

    disk = {}  # the limit of each store: its faster reference read, bytes per second
    limit_rows = []
    for fmt, variant in (("memmap", "disk_sequential_read"), ("tfrecord", "disk_sequential_read_tfrecord")):
        nbytes, s, disk_cpu, _ = min(disk_reads[fmt], key=lambda r: r[1] / r[0])
        disk[fmt] = nbytes / s
        what = (f"{nbytes / 1e9:.2f} GB of {frames_file.name}, the memmap store's file" if fmt == "memmap" else
                f"{nbytes / 1e9:.2f} GB of the tfrecord store's {len(tf_files)} shards, in order")
        # As an epoch: the time the read of the store's whole file (or shards) took.
        limit_rows.append(_row(
            variant, "cold", n, dtype, s, True,
            f"{what}, brought into the page cache cold 16 MB at a time, the next {READ_AHEAD_CHUNKS} asked for "
            f"ahead, nothing copied, the faster of "
            f"{len(disk_reads[fmt])} reads just before and after the {fmt} store's cold epoch "
            f"({', '.join(f'{r[0] / r[1] / 1e6:,.0f}' for r in disk_reads[fmt])} MB/s)", "disk", 1.0,
            disk_cpu / s))
    rows[:0] = limit_rows
    info["cpu_note"] = "; ".join(f"{fmt} store: {note}" for fmt in disk_reads
                                 if (note := reference_cpu_note(disk_reads[fmt]))) or None

    reclaim = proactive_reclaim()
    store_bytes = {"memmap": frames_file.stat().st_size, "memmap_random": frames_file.stat().st_size,
                   "tfrecord": sum(p.stat().st_size for p in tf_files)}
    limit_of = {"memmap": "memmap", "memmap_random": "memmap", "tfrecord": "tfrecord"}
    for r in found:
        rate = n / r["epoch_s"]
        frac = (store_bytes[r["variant"]] / r["epoch_s"] / disk[limit_of[r["variant"]]] if r["limit"] == "disk"
                else rate / gather)
        basis = r["basis"]
        if r["state"] == "cold":
            warning = cold_warning(frac, r.get("cached_after"))
            basis += f" ({warning})" if warning else ""
        elif r["cached_before"] and None not in r["cached_before"]:
            basis += ("; the share of the store's pages cached as each epoch started: "
                      f"{', '.join(f'{c:.1%}' for c in r['cached_before'])}")
            warning = warm_warning(r["cached_before"], reclaim)
            basis += f" ({warning})" if warning else ""
        rows.append(_row(r["variant"], r["state"], n, dtype, r["epoch_s"], r["measured"], basis, r["limit"], frac,
                         r["cpu_cores"]))

    # The projections from projection_frames frames, beside the measured epochs, made the way the
    # default spectrogram bench makes them (timing.compare: each round a fresh epoch, warm-up batches,
    # then timed batches; the steady rate projected to n). The median whole small epoch, projected
    # the same way, is kept beside it: it carries each epoch's start (iterator, order, pipeline fill)
    # 50 times over when projected from 20,000 frames to a million.
    checks = {}
    if projection_frames < n:
        from kit.bench import spectrogram as bench_spectrogram

        bench = {k: v.default for k, v in inspect.signature(bench_spectrogram.run).parameters.items()
                 if k in ("num_batches", "warmup", "rounds")}
        # As the bench, fewer warm-up and timed batches where an epoch holds fewer.
        _, bench["warmup"], bench["num_batches"], _ = bench_spectrogram.plan(
            projection_frames, batch_size=batch_size, warmup=bench["warmup"], num_batches=bench["num_batches"])
        small = index.subset(np.arange(projection_frames))
        for fmt, kw in (("memmap", {"order": "blocks"}), ("tfrecord", {})):
            convert(small, fmt, workdir=workdir, store_dtype=dtype, progress=False)
            ld = loader(fmt, small, **kw)
            epoch(ld, expected=projection_frames)  # warms the small store and traces
            times = [epoch(ld, expected=projection_frames, labels=small.labels)[1] for _ in range(warm_epochs)]
            whole = float(np.median(times)) * n / projection_frames
            small_df = timing.compare({fmt: ld}, epoch_examples=(n,), **bench)
            projected = float(small_df[f"epoch_s_{n}"].iloc[0])
            timed = int(small_df["examples"].iloc[0])
            rows.append(_row(fmt, "warm", n, dtype, projected, False,
                             f"projected as the default bench does, from {projection_frames:,} frames: "
                             f"{bench['rounds']} rounds of {bench['warmup']} warm-up and {bench['num_batches']} "
                             f"timed batches ({timed:,} frames timed)", "memory", n / projected / gather))
            full = next(r for r in found if r["variant"] == fmt and r["state"] == "warm")
            checks[fmt] = {"projected_s": projected, "measured_s": full["epoch_s"],
                           "error": projected / full["epoch_s"] - 1,
                           "whole_small_epochs_projected_s": whole,
                           "whole_small_epochs_error": whole / full["epoch_s"] - 1}
        log("projection check (the default bench's method): " + "; ".join(
            f"{k} projected {v['projected_s']:.1f} s vs measured {v['measured_s']:.1f} s ({v['error']:+.0%}; "
            f"from whole {projection_frames:,}-frame epochs {v['whole_small_epochs_projected_s']:.1f} s, "
            f"{v['whole_small_epochs_error']:+.0%})" for k, v in checks.items()))
    info["projection_check"] = checks

    # The head, trained from a feature cache of every frame.
    cache, how = _feature_cache(index, batch_size=batch_size, skip_extraction=skip_extraction,
                                workdir=workdir, progress=progress, log=log)
    info["features"] = how
    head = audio.compile_classifier(audio.head(index.num_classes, embedding_dim=cache.dim, seed=0),
                                    steps_per_execution=features.DEFAULT_STEPS_PER_EXECUTION)
    feat_files = store_files(cache.folder, cache.manifest)
    read_through(feat_files)
    t0 = time.perf_counter()
    warm_cache = features.FeatureCache.open(cache.folder)
    data = features.head_loader(warm_cache, batch_size=batch_size, shuffle=True, seed=seed)
    load_s = time.perf_counter() - t0
    fit = timing.fit(head, data, epochs=1 + warm_epochs, examples=n, wait=False)  # the first traces the step
    warm_times = [float(t) for t in fit["seconds"].iloc[1:]]
    warm_s = float(np.median(warm_times))
    del data, warm_cache
    gc.collect()
    evict(feat_files)
    t0 = time.perf_counter()
    cold_cache = features.FeatureCache.open(cache.folder)
    data = features.head_loader(cold_cache, batch_size=batch_size, shuffle=True, seed=seed)
    cold_load = time.perf_counter() - t0
    fit = timing.fit(head, data, epochs=1, examples=n, wait=False)
    cold_s = cold_load + float(fit["seconds"].iloc[-1])
    del data, cold_cache
    what = f"{how['kind']} features, {cache.dim}-d {cache.dtype}"
    rows.append(_row("head_from_cache", "warm", n, dtype, warm_s, True,
                     f"the median of {len(warm_times)} whole training epochs of {n:,} frames "
                     f"({', '.join(f'{t:.1f}' for t in warm_times)} s; {what}; the first, traced, epoch and "
                     f"loading the cache into RAM, {load_s:.1f} s, not counted)"))
    rows.append(_row("head_from_cache", "cold", n, dtype, cold_s, True,
                     f"reading the cache from disk ({cold_load:.1f} s) and a whole training epoch of "
                     f"{n:,} frames ({what})"))
    log(f"  head from the cache: warm {warm_s:.1f} s, cold {cold_s:.1f} s ({what})")

    # The user's generator, over a bounded sample (its files warm), projected.
    g = min(generator_frames, n)
    sample_index = index.subset(np.arange(g))
    read_through(sample_index.files)
    gen = make_loader("generator", sample_index, batch_size=batch_size, shuffle=True, seed=seed)
    got, s, _ = epoch(gen, expected=g, labels=sample_index.labels)
    rows.append(_row("generator", "warm", n, dtype, s * n / got, False,
                     f"projected from a whole epoch of a {got:,}-frame sample"))
    log(f"  generator: {got / s:,.0f} frames/s over {got:,} frames")

    df = pd.DataFrame(rows, columns=COLUMNS)
    info["disk_bytes_per_s"] = disk
    info["disk_reads_bytes_per_s"] = {fmt: [r[0] / r[1] for r in reads] for fmt, reads in disk_reads.items()}
    info["disk_reads_cpu_cores"] = {fmt: [r[2] / r[1] for r in reads] for fmt, reads in disk_reads.items()}
    info["disk_note"] = "; ".join(f"{fmt} store: {note}" for fmt, rates in info["disk_reads_bytes_per_s"].items()
                                  if (note := disk_note(rates))) or None
    info["memory_gather_frames_per_s"] = gather
    info["cached_before_warm"] = {r["variant"]: r["cached_before"] for r in found if r["state"] == "warm"}
    info["reclaim"] = reclaim
    info["free_page_reporting"] = free_page_reporting()
    info["cached_after_evict"] = {r["variant"]: r["cached_after"] for r in found if r["state"] == "cold"}
    info["met"] = _targets(df, checks, info["cached_after_evict"]) if n >= EPOCH else None
    tf.keras.backend.clear_session()
    return df, info


def _feature_cache(index, *, batch_size, skip_extraction, workdir, progress, log):
    """The feature cache of every frame: extracted by the backbone once (timed, cached), or
    with ``skip_extraction`` that cache when built, else a stand-in of the same shape."""
    from kit import features
    from kit.models import audio

    backbone = audio.backbone(None, input_shape=tuple(index.frame_shape) + (1,))
    key = features.cache_key(backbone, index)
    folder = features.default_folder(key, workdir)
    done = features.store.complete(folder, key)
    if done is not None or not skip_extraction:
        if done is None:
            log(f"extracting features of {len(index):,} frames (one time; --skip-extraction skips it) ...")
        cache = features.extract_features(backbone, index, loader="memmap", batch_size=batch_size,
                                          workdir=workdir, progress=progress,
                                          loader_options={"store_dtype": str(index.file_dtype)})
        ex = cache.extraction
        how = {"kind": "backbone", "backbone": backbone.name, "reused": cache.reused,
               "extraction_s": ex["seconds"], "extraction_frames_per_s": ex["frames_per_s"]}
        log(f"  {cache}")
        return cache, how
    standin = _pooling_backbone(index.frame_shape)
    cache = features.extract_features(standin, index, loader="memmap", batch_size=1024, workdir=workdir,
                                      progress=progress, loader_options={"store_dtype": str(index.file_dtype)})
    log(f"  stand-in features (extraction skipped): {cache}")
    return cache, {"kind": "stand-in", "backbone": standin.name, "reused": cache.reused,
                   "extraction_s": None, "extraction_frames_per_s": None}


def _pooling_backbone(frame_shape):
    """A stand-in for the backbone when the extraction is skipped: frames average-pooled to
    1,024 values (96x64 -> 32x32), which a Dense head can learn from. Only the cache's shape
    matters to the head's epoch time."""
    import keras

    h, w = frame_shape
    ph, pw = max(1, h // 32), max(1, w // 32)
    inputs = keras.Input((h, w, 1))
    x = keras.layers.AveragePooling2D((ph, pw))(inputs)
    return keras.Model(inputs, keras.layers.Flatten()(x), name="pooled_frames")


def disk_note(reads_bytes_per_s) -> str | None:
    """What to say of the disk's reference reads: None when they agree within
    ``DISK_UNSTEADY``; otherwise that its rate moved during the run (the cold fractions
    are against the faster read, and their verdicts stand, but rest on an unsteady disk)."""
    rates = [float(r) for r in reads_bytes_per_s]
    if len(rates) < 2 or max(rates) <= DISK_UNSTEADY * min(rates):
        return None
    return (f"the disk's reference reads differ {max(rates) / min(rates):.1f}x "
            f"({', '.join(f'{r / 1e6:,.0f}' for r in rates)} MB/s): its rate moved during the run, so the cold "
            f"fractions (against the faster read) say as much about the disk as about the loaders")


def cpu_note(cores: float, kernel_cores: float, bytes_per_cpu_s: float | None,
             seconds: float = CPU_NOTE_MIN_S) -> str | None:
    """What to say of the CPU the disk's (faster) reference read used: None below
    ``CPU_BOUND_READ`` of a core or for a read shorter than ``CPU_NOTE_MIN_S``; otherwise
    that the read was bound, or nearly, by the CPU (the kernel's work of bringing pages
    in: it copies nothing) rather than by the disk alone, so the cold fractions also weigh
    how much CPU a loader has left for reading beside its own work on the same cores."""
    if cores < CPU_BOUND_READ or seconds < CPU_NOTE_MIN_S:
        return None
    per_gb = f", about {1e9 / bytes_per_cpu_s:.1f} CPU-s per GB" if bytes_per_cpu_s else ""
    return (f"the disk's reference read, one thread, kept {cores:.2f} of a core busy ({kernel_cores:.2f} in the "
            f"kernel{per_gb}): it was bound by the CPU bringing pages in as much as by the disk, so a cold loader "
            f"pays that CPU too, beside its own decoding on the same cores (see each row's cpu_cores)")


def reference_cpu_note(reads) -> str | None:
    """``cpu_note`` of the faster of the disk's reference reads, each ``(bytes, seconds,
    CPU seconds, of which in the kernel)``."""
    nbytes, s, cpu, kernel = min(reads, key=lambda r: r[1] / r[0])
    return cpu_note(cpu / s, kernel / s, nbytes / cpu if cpu > 0 else None, s)


def proactive_reclaim(root: str = "/sys") -> str | None:
    """What on this machine drops cached file pages by itself, in words, or None: DAMON's
    ``pageout`` schemes (``/sys/kernel/mm/damon/admin``: a kernel thread that samples
    which memory is used and pages out what it has not seen used for a while, as some
    cloud VMs run to hand memory back to their host) and the ``damon_reclaim`` module. A
    warm store's pages can go between its epochs there (``warm_warning``)."""
    base = Path(root)
    found = []

    def read(path):
        try:
            return path.read_text().strip()
        except OSError:
            return None

    for kd in sorted(base.glob("kernel/mm/damon/admin/kdamonds/[0-9]*")):
        if read(kd / "state") != "on":
            continue
        for ctx in sorted(kd.glob("contexts/[0-9]*")):
            try:
                aggr_us = int(read(ctx / "monitoring_attrs/intervals/aggr_us") or 0)
            except ValueError:
                aggr_us = 0
            for scheme in sorted(ctx.glob("schemes/[0-9]*")):
                if read(scheme / "action") != "pageout":
                    continue
                kinds = [f"{'only' if read(f / 'allow') == 'Y' else 'not'} {read(f / 'type')}"
                         for f in sorted(scheme.glob("ops_filters/[0-9]*")) if read(f / "type")]
                what = f"DAMON (kdamond {kd.name}) pages out memory"
                if kinds:
                    what += " (" + ", ".join(kinds) + " pages)"
                try:
                    age = int(read(scheme / "access_pattern/age/min") or 0) * aggr_us / 1e6
                    quota = int(read(scheme / "quotas/bytes") or 0)
                    every = int(read(scheme / "quotas/reset_interval_ms") or 0)
                except ValueError:
                    age, quota, every = 0, 0, 0
                if age:
                    what += f" it has not seen used for {age:.0f} s"
                if quota and every:
                    what += f", up to {quota / 1e6:,.0f} MB every {every / 1e3:g} s"
                found.append(what)
    if read(base / "module/damon_reclaim/parameters/enabled") == "Y":
        found.append("DAMON_RECLAIM (the damon_reclaim module) pages out memory it has not seen used")
    return "; ".join(found) or None


def free_page_reporting(root: str = "/sys") -> str | None:
    """Whether this machine hands the memory it frees back to its host, in words, or None:
    a virtio balloon with free page reporting (feature bit 5 in
    ``/sys/bus/virtio/devices/*/features``). There, an evicted store's pages go back to the
    host, and the pages a cold epoch then reads into are new to it: the first read of each
    costs a fault in the host, CPU time a machine without it does not pay (on this
    project's VM, 5.3 GB of a 12.3 GB eviction were handed back within 10 s;
    ``scripts/first_touch.py`` measures the cost)."""
    import mmap

    base = Path(root)
    for dev in sorted(base.glob("bus/virtio/devices/*")):
        try:
            device = int((dev / "device").read_text().strip(), 16)
            features = (dev / "features").read_text().strip()
        except (OSError, ValueError):
            continue
        if device != 5 or len(features) <= 5 or features[5] != "1":  # 5: balloon; bit 5: reporting
            continue
        what = "a virtio balloon hands freed memory back to the host (free page reporting"
        try:
            order = int((base / "module/page_reporting/parameters/page_reporting_order").read_text())
            what += f", in blocks of {(mmap.PAGESIZE << order) / 2**20:g} MB"
        except (OSError, ValueError):
            pass
        return what + ")"
    return None


def warm_warning(cached_before, reclaim: str | None = None) -> str | None:
    """What a warm row's basis warns of: None when every epoch started with at least
    ``WARM_CACHED_MIN`` of its store's pages cached; else that some were not, so the warm
    figure is partly a cold one (and what on this machine drops pages, if known)."""
    low = min(cached_before)
    if low >= WARM_CACHED_MIN:
        return None
    why = f": {reclaim}" if reclaim else ""
    return (f"WARNING: an epoch started with only {low:.0%} of the store's pages cached, so this warm figure is "
            f"partly a cold one; the machine dropped pages between the epochs{why}")


def cold_warning(fraction: float, cached_after: float | None) -> str | None:
    """What a cold epoch's basis warns of: None for a plausible cold figure; else whether
    the store's pages stayed cached (``cached_after``, the share the eviction left, from
    ``cached_fraction``) or, evicted, the disk's rate moved between its reference reads
    and the epoch (a fraction above ``COLD_IMPLAUSIBLE``). Either way, no verdict."""
    if cached_after is not None and cached_after >= CACHED_AFTER_EVICT:
        return (f"WARNING: {cached_after:.0%} of the store's pages stayed cached after the eviction, so this is "
                f"not a cold figure")
    if fraction <= COLD_IMPLAUSIBLE:
        return None
    head = f"WARNING: {fraction:.2f}x the disk's sequential read"
    if cached_after is None:
        return (f"{head}: the store's pages were cached, or the disk's rate moved between its reference reads "
                f"and this epoch; no verdict")
    return (f"{head}, with the store evicted ({cached_after:.1%} of its pages cached after): the disk's rate "
            f"moved between its reference reads and this epoch, so no verdict")


def _targets(df: pd.DataFrame, checks: dict, cached_after: dict | None = None) -> dict:
    def get(variant, state):
        sel = df[(df["variant"] == variant) & (df["state"] == state) & df["measured"]]
        return sel.iloc[0] if len(sel) else None

    met = {}
    mw = get("memmap", "warm")
    ok = None if mw is None else bool(mw["epoch_s"] <= TARGETS["memmap_warm_epoch_s_max"])
    # Missed with the store's pages dropped between the epochs: not a warm figure, no verdict.
    met["memmap_warm_epoch_s"] = None if ok is False and "WARNING" in mw["basis"] else ok
    for v in ("memmap", "tfrecord"):
        c = get(v, "cold")
        left = (cached_after or {}).get(v)
        # Above COLD_IMPLAUSIBLE the disk's rate or the eviction failed this run, and with the
        # store's pages left cached the epoch was not cold: no verdict (cold_warning says which).
        met[f"{v}_cold_fraction_of_disk"] = (
            None if c is None or cold_warning(c["fraction_of_limit"], left) is not None else
            bool(c["fraction_of_limit"] >= TARGETS["cold_fraction_of_disk_min"]))
    h = get("head_from_cache", "warm")
    met["head_epoch_s"] = None if h is None else bool(h["epoch_s"] <= TARGETS["head_epoch_s_max"])
    for k, v in checks.items():
        met[f"{k}_projection"] = bool(abs(v["error"]) <= TARGETS["projection_error_max"])
    return met


# --------------------------------------------------------------------------- command


def add_arguments(p: argparse.ArgumentParser) -> None:
    from kit.util import positive_int

    p.add_argument("--frames", type=positive_int, default=EPOCH, help="frames to generate and measure (1,000,000)")
    p.add_argument("--dtype", choices=["float16", "float32"], default="float16",
                   help="of the data and the stores (float16: half the bytes; loaders deliver float32)")
    p.add_argument("--batch-size", type=positive_int, default=256, help="global batch (default 256, the user's)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated data and of the epoch orders (default 0)")
    p.add_argument("--skip-extraction", action="store_true",
                   help="do not run the backbone over every frame (~20 min on 2 cores): use its cache if "
                        "built, else stand-in features of the same shape")
    p.add_argument("--generator-frames", type=positive_int, default=2_000,
                   help="the generator's bounded sample (projected)")
    p.add_argument("--random-seconds", type=float, default=60.0,
                   help="cap on the cold fully-random memmap epoch (then projected)")
    p.add_argument("--projection-frames", type=positive_int, default=PROJECTION_FRAMES,
                   help="the basis of the projections checked against the measured epochs")
    p.add_argument("--warm-epochs", type=positive_int, default=WARM_EPOCHS,
                   help="whole warm epochs per warm row, their median reported (3)")
    p.add_argument("--workers", type=positive_int, default=None, help="parallel writers of the data")
    p.add_argument("--workdir", type=Path, default=None, help="where data, stores and caches go (kit cache)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")


def register(bench_sub) -> None:
    p = bench_sub.add_parser("scale", help="whole epochs at the user's size, warm and cold, against the "
                                           "disk's and memory's limits")
    add_arguments(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from kit.bench import print_table, result
    from kit.util import write_json

    df, info = run(frames=args.frames, dtype=args.dtype, batch_size=args.batch_size, seed=args.seed,
                   skip_extraction=args.skip_extraction, generator_frames=args.generator_frames,
                   random_seconds=args.random_seconds, projection_frames=args.projection_frames,
                   warm_epochs=args.warm_epochs, workdir=args.workdir, workers=args.workers,
                   progress=not args.no_progress)
    print()
    print_table(df, COLUMNS[:-1])
    print("\nbasis per row:")
    for r in df.itertuples():
        print(f"  {r.variant} {r.state}: {r.basis}")
    if info.get("met"):
        print("targets: " + ", ".join(f"{k} {'no verdict' if v is None else 'met' if v else 'NOT met'}"
                                      for k, v in info["met"].items()))
    for key in ("disk_note", "cpu_note"):
        if info.get(key):
            print(f"note: {info[key]}")
    if info.get("reclaim"):
        print(f"note: this machine drops cached pages by itself ({info['reclaim']}): each warm row's basis says "
              f"how much of its store was cached as each epoch started")
    if info.get("free_page_reporting"):
        print(f"note: on this machine {info['free_page_reporting']}: an evicted store's pages go back to the host, "
              f"so a cold epoch reads into memory new to it, and the first read of each page costs CPU that a "
              f"re-read does not (PYTHONPATH=. python scripts/first_touch.py measures how much)")
    if args.json and args.json != "-":
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    out = df.astype(object).where(pd.notna(df), None)
    write_json(args.json, result("scale", out, **info))
    return 0


def order_randomness(rows: np.ndarray, *, batch_size: int, n: int, previous: np.ndarray | None = None) -> dict:
    """How random one epoch's order is, in numbers (notebook 03).

    Returns:
        ``batch_span``: the median stretch of the file a batch draws from, as a fraction of
        the file (about 1 for a fully random order, the window's share for a block order);
        ``neighbours_kept``: the share of frames whose next frame in the epoch is within
        ``batch_size`` rows of it in the file (0 for random, near 1 for file order);
        ``batch_mates_kept`` (with ``previous``, the epoch before): the share of frame pairs
        sharing a batch in both epochs, against the share a fully random order keeps.
    """
    rows = np.asarray(rows)
    batches = [rows[i:i + batch_size] for i in range(0, len(rows), batch_size)]
    spans = [(b.max() - b.min() + 1) / n for b in batches if len(b) > 1]
    out = {"batch_span": float(np.median(spans)),
           "neighbours_kept": float(np.mean(np.abs(np.diff(rows)) <= batch_size))}
    if previous is not None:
        def batch_of(order):
            b = np.empty(n, np.int64)
            b[np.asarray(order)] = np.arange(len(order)) // batch_size
            return b

        now, before = batch_of(rows), batch_of(previous)
        rng = np.random.default_rng(0)
        a, c = rng.integers(0, n, 200_000), rng.integers(0, n, 200_000)
        together = (before[a] == before[c]) & (a != c)
        kept = float(np.mean(now[a][together] == now[c][together])) if together.any() else 0.0
        out["batch_mates_kept"] = kept
        out["batch_mates_kept_if_random"] = batch_size / n
    return out


def epoch_orders(order: str, n: int, *, batch_size: int, seed: int = 0, epochs: int = 2, **blocks) -> list:
    """The row order of ``epochs`` successive epochs of the memmap variant's ``order``
    (``"random"`` or ``"blocks"``, with ``block``/``window`` in ``blocks``), as arrays."""
    from kit.epochs import block_order_dataset

    if order == "blocks":
        ds = block_order_dataset(n, batch_size, seed=seed, **blocks)
    elif order == "random":
        import tensorflow as tf

        ds = tf.data.Dataset.range(n).shuffle(n, seed=seed, reshuffle_each_iteration=True).batch(batch_size)
    else:
        raise ValueError(f"order must be 'random' or 'blocks', got {order!r}")
    return [np.concatenate([b.numpy() for b in ds]) for _ in range(epochs)]
