"""``python -m kit bench scale``'s data and what it reads it with: the generated frames and
their stores (the free space they need), the feature cache of every frame, one whole
epoch, the memory gather rate, one pass over a TFRecord store's records with nothing
decoded, the CPU a call used, and the form of a row; how random an epoch's order is
(notebook 03, through ``kit.bench.scale``). ``kit.bench.scale`` runs the bench.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np

from kit import features, samples, store
from kit.epochs import block_order_dataset, untuned_options
from kit.models import audio
from kit.spectrogram import FrameIndex
from kit.spectrogram.convert import TFRECORD_FORMAT
from kit.util import usable_cpus

__all__ = ["FRAMES_PER_FILE", "FRAME_SHAPE", "data_folder", "frame_bytes", "needed_bytes", "make_data",
           "store_files", "epoch", "memory_gather_rate", "read_records", "cpu_used", "feature_cache", "row",
           "order_randomness", "epoch_orders"]

FRAMES_PER_FILE = 100
FRAME_SHAPE = (96, 64)


def data_folder(frames: int, dtype: str, seed: int = 0, workdir=None) -> Path:
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
    files = math.ceil(frames / FRAMES_PER_FILE)
    csv = samples.make_spectrogram_sharded(data_folder(frames, dtype, seed, workdir), files=files,
                                           frames_per_file=FRAMES_PER_FILE, seed=seed, dtype=dtype,
                                           workers=workers, progress=progress)
    index = FrameIndex.from_csv(csv)
    return index if len(index) == frames else index.subset(np.arange(frames))



def store_files(folder: Path, manifest) -> list[Path]:
    return [folder / s["name"] for s in manifest.shards]


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
    if labels is not None and (counts is None
                               or not np.array_equal(counts, np.bincount(labels, minlength=len(counts)))):
        raise RuntimeError("the epoch's labels differ from the index's: some frames came twice or never")
    return n, seconds, True


def memory_gather_rate(sample: np.ndarray, *, batch_size: int, seconds: float = 3.0) -> tuple[int, float]:
    """The memory limit: random batches gathered from ``sample`` held in RAM and cast to
    float32 in a tf.data map (the ``in_memory`` variant's work), for about ``seconds``.
    Returns ``(examples, seconds)``."""
    import tensorflow as tf  # heavy: python -m kit --help imports this module

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
    del it, ds
    return count, took


def read_records(folder: Path, manifest) -> tuple[int, int, float]:
    """One pass over a ``tfrecord`` store's records read as its loader reads them, and nothing
    else: the shards ``TFRecordOptions().cycle_length`` at a time, each read ahead in its own
    thread, in the loader's pieces (fixed-length, without the CRCs, for a store checked at
    open; else ``TFRecordDataset``), the tail's short record after them; no decode, no
    shuffle, no batch. Returns ``(records, bytes, seconds)`` (the records' data, framing
    included for fixed-length pieces; the seconds of the pass, not of building it). The warm epoch less this pass is what the loader's decode,
    shuffle and batch cost (``scale_report.warm_stage``)."""
    import tensorflow as tf  # heavy: python -m kit --help imports this module

    from kit.cases.stores import (
        DEFAULT_READ_BUFFER,
        FIXED_READ_BUFFER,
        SHARD_PREFETCH,
        TFRECORD_FRAMING,
        TFRECORD_HEAD,
    )
    from kit.spectrogram.loaders import TFRecordOptions

    opts = TFRecordOptions()
    tail_name = manifest.meta.get("tail_shard")
    body = [s for s in manifest.shards if s.name != tail_name]
    tail = [str(Path(folder) / s.name) for s in manifest.shards if s.name == tail_name]
    block = int(manifest.meta["options"]["record_frames"])
    checked = store.checks_on(opts.check_store)  # as the loader: fixed-length pieces when checked

    def records(names, fixed):
        if fixed:  # every body shard: whole records of one length, then an empty end record
            first = body[0]
            entry = (first.bytes - TFRECORD_FRAMING) // (first.count // block)
            return tf.data.FixedLengthRecordDataset(names, entry, header_bytes=TFRECORD_HEAD,
                                                    footer_bytes=TFRECORD_FRAMING - TFRECORD_HEAD,
                                                    buffer_size=opts.read_buffer or FIXED_READ_BUFFER)
        ds = tf.data.TFRecordDataset(names, buffer_size=opts.read_buffer or DEFAULT_READ_BUFFER)
        return ds.filter(lambda r: tf.strings.length(r) > 0)  # the empty end records

    parts = []
    if body:
        names = tf.data.Dataset.from_tensor_slices([str(Path(folder) / s.name) for s in body])
        parts.append(names.interleave(lambda f: records(f, checked).prefetch(SHARD_PREFETCH),
                                      cycle_length=min(opts.cycle_length, len(body))))
    if tail:
        parts.append(records(tail, False))
    ds = parts[0]
    for more in parts[1:]:
        ds = ds.concatenate(more)
    ds = ds.with_options(untuned_options())  # as the kit's loaders
    t0 = time.perf_counter()
    count, nbytes = ds.reduce((np.int64(0), np.int64(0)), lambda acc, r: (
        acc[0] + 1, acc[1] + tf.cast(tf.strings.length(r), tf.int64)))
    seconds = time.perf_counter() - t0
    want = sum(s.count // block for s in body) + sum(-(-s.count // block) for s in manifest.shards
                                                      if s.name == tail_name)
    if int(count) != want:
        raise RuntimeError(f"{folder}: read {int(count):,} records, the manifest's shards hold {want:,}")
    return int(count), int(nbytes), seconds


def row(variant, state, frames, dtype, epoch_s, measured, basis, limit=None, fraction=None, cpu_cores=None) -> dict:
    """One row of the bench, in ``scale_report.COLUMNS``."""
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


def feature_cache(index, *, batch_size, skip_extraction, workdir, progress, log):
    """The feature cache of every frame: extracted by the backbone once (timed, cached), or
    with ``skip_extraction`` that cache when built, else a stand-in of the same shape."""
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
    import keras  # heavy: python -m kit --help imports this module

    h, w = frame_shape
    ph, pw = max(1, h // 32), max(1, w // 32)
    inputs = keras.Input((h, w, 1))
    x = keras.layers.AveragePooling2D((ph, pw))(inputs)
    return keras.Model(inputs, keras.layers.Flatten()(x), name="pooled_frames")


# --------------------------------------------------------------------------- the epoch order (notebook 03)


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
    if order == "blocks":
        ds = block_order_dataset(n, batch_size, seed=seed, **blocks)
    elif order == "random":
        import tensorflow as tf  # heavy: python -m kit --help imports this module

        ds = tf.data.Dataset.range(n).shuffle(n, seed=seed, reshuffle_each_iteration=True).batch(batch_size)
    else:
        raise ValueError(f"order must be 'random' or 'blocks', got {order!r}")
    return [np.concatenate([b.numpy() for b in ds]) for _ in range(epochs)]
