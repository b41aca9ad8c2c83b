"""``python -m lab.scale``'s data and what it reads it with: the generated frames and their
stores (the free space they need), the feature cache of every frame, the memory gather rate,
one pass over a TFRecord store's records with nothing decoded, and the form of a row.
"""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from kit import samples, store
from kit.models import audio
from kit.spectrogram import FrameIndex, features
from kit.store.folder import atomic_path, default_workdir
from kit.util import usable_cpus
from lab.pagecache import cache_through

__all__ = ["FRAMES_PER_FILE", "FRAME_SHAPE", "data_folder", "frame_bytes", "needed_bytes", "make_data",
           "store_files", "memory_gather_rate", "read_records", "read_records_streamed", "feature_cache", "row"]

FRAMES_PER_FILE = 100
FRAME_SHAPE = (96, 64)


def data_folder(frames: int, dtype: str, seed: int = 0, workdir=None) -> Path:
    files = math.ceil(frames / FRAMES_PER_FILE)
    root = Path(workdir) if workdir is not None else default_workdir()
    return root / f"bench-scale-{files}x{FRAMES_PER_FILE}-{dtype}-s{seed}"


def frame_bytes(dtype: str) -> int:
    return int(np.prod(FRAME_SHAPE)) * np.dtype(dtype).itemsize


def needed_bytes(frames: int, dtype: str, *, seed: int = 0, workdir=None) -> dict:
    """Bytes each missing piece will take: ``{"data": ..., "memmap": ..., ...}`` (0 when built).

    The TFRecord store is counted at 1.02x the frames (record framing and labels), the
    feature cache at 1,024 float16 values per frame.
    """
    size = frames * frame_bytes(dtype)
    data = data_folder(frames, dtype, seed, workdir)
    need = {"data": 0 if (data / "index.csv").exists() else size}
    root = Path(workdir) if workdir is not None else default_workdir()
    source = str((data / "index.csv").resolve())
    built = set()
    for folder in root.glob("spectrogram-*"):
        m = store.complete(folder)
        if m is not None and m.meta.get("source") == source and m.meta.get("count", m.count) >= frames \
                and m.meta.get("dtype") == dtype:
            built.add(m.kind)
    need["memmap"] = 0 if "spectrogram-memmap" in built else size
    need["tfrecord"] = 0 if "spectrogram-tfrecord" in built else int(size * 1.02)
    caches = (store.complete(p) for p in root.glob("features-*"))
    need["features"] = 0 if any(m is not None and m.meta.get("source") == source and m.count >= frames
                                for m in caches) else frames * 1024 * 2
    return need


def make_data(frames: int, dtype: str, *, seed: int = 0, workdir=None, workers=None, progress=True):
    """The bench's data (generated on first use, resumed if interrupted), as a ``FrameIndex``
    of exactly ``frames`` rows."""
    files = math.ceil(frames / FRAMES_PER_FILE)
    csv = make_spectrogram_sharded(data_folder(frames, dtype, seed, workdir), files=files,
                                           frames_per_file=FRAMES_PER_FILE, seed=seed, dtype=dtype,
                                           workers=workers, progress=progress)
    index = FrameIndex.from_csv(csv)
    return index if len(index) == frames else index.subset(np.arange(frames))


def store_files(folder: Path, manifest) -> list[Path]:
    return [folder / s["name"] for s in manifest.shards]


def memory_gather_rate(sample: np.ndarray, *, batch_size: int, seconds: float = 3.0) -> tuple[int, float]:
    """The memory limit: random batches gathered from ``sample`` held in RAM and cast to
    float32 in a tf.data map (the ``in_memory`` variant's work), for about ``seconds``.
    Returns ``(examples, seconds)``."""
    with tf.device("/CPU:0"):
        x = tf.Variable(sample, trainable=False)
    n = len(sample)

    def batch(i):  # batch_size random rows, drawn in the graph: no per-row element in tf.data
        rows = tf.random.stateless_uniform([batch_size], seed=tf.stack([i, 0]), maxval=n, dtype=tf.int64)
        return tf.cast(tf.gather(x, rows), tf.float32)

    ds = tf.data.Dataset.range(1 << 40).map(batch, num_parallel_calls=usable_cpus()).prefetch(2)
    options = tf.data.Options()
    options.autotune.enabled = False  # as the kit's loaders
    ds = ds.with_options(options)
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
    """One pass over a ``tfrecord`` store's records, in shard order, with nothing decoded,
    shuffled or batched (``tf.data.TFRecordDataset``, the shards read one after the other).
    Returns ``(records, bytes, seconds)``: the records' data and the seconds of the pass. The
    warm epoch less this pass is what the loader's order, decoding and the rest cost
    (``scale_report.warm_stage``)."""
    paths = [str(Path(folder) / s.name) for s in manifest.shards]
    ds = tf.data.TFRecordDataset(paths, buffer_size=8 << 20)
    t0 = time.perf_counter()
    count, nbytes = ds.reduce((np.int64(0), np.int64(0)), lambda acc, r: (
        acc[0] + 1, acc[1] + tf.cast(tf.strings.length(r), tf.int64)))
    seconds = time.perf_counter() - t0
    if int(count) == 0 and manifest.count:
        raise RuntimeError(f"{folder}: read no records, the manifest's shards hold {manifest.count:,} examples")
    return int(count), int(nbytes), seconds


#: The longest ``read_records_streamed`` waits for its read-ahead thread to end after the pass:
#: its read of the whole store (seconds at a disk's rate; far longer means it is stuck).
STREAM_JOIN_S = 600.0


def read_records_streamed(folder: Path, manifest, files) -> tuple[int, int, float]:
    """``read_records`` of a cold store, with the page-in limit's read-ahead streaming ``files``
    (its shards, in the order the pass reads them) beside it in a thread (``cache_through``: the
    kernel asked for 8 pieces of 16 MB ahead, nothing copied): the reading's own rate where what
    it reads next is asked for in time."""
    ahead = threading.Thread(target=cache_through, args=(list(files),), daemon=True, name="lab-read-ahead")
    ahead.start()
    try:
        got = read_records(folder, manifest)
    finally:
        ahead.join(timeout=STREAM_JOIN_S)
    if ahead.is_alive():
        raise RuntimeError(f"the read-ahead beside the cold pass over {folder} did not end in {STREAM_JOIN_S:g} s")
    return got


def row(variant, state, frames, dtype, epoch_s, measured, basis, limit=None, fraction=None, cpu_cores=None) -> dict:
    """One row of the bench, in ``scale_report.COLUMNS``."""
    return {"variant": variant, "state": state, "frames": int(frames), "dtype": dtype, "epoch_s": float(epoch_s),
            "measured": bool(measured), "examples_per_s": frames / epoch_s, "limit": limit,
            "fraction_of_limit": None if fraction is None else float(fraction),
            "cpu_cores": None if cpu_cores is None else float(cpu_cores), "basis": basis}


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
    h, w = frame_shape
    ph, pw = max(1, h // 32), max(1, w // 32)
    inputs = keras.Input((h, w, 1))
    x = keras.layers.AveragePooling2D((ph, pw))(inputs)
    return keras.Model(inputs, keras.layers.Flatten()(x), name="pooled_frames")


# The million-frame data, generated for scale (moved from kit.samples: only this instrument uses it).


def _labels(spec: samples.SpectrogramSpec, file_no: int) -> np.ndarray:
    """The labels of file ``file_no`` without drawing its frames (they are its first draw)."""
    rng = np.random.default_rng([spec.seed, file_no])
    return rng.integers(0, spec.num_classes, size=spec.frames_per_file)


def make_spectrogram_sharded(out: str | os.PathLike, *, files: int, frames_per_file: int, seed: int = 0,
                             height: int = 96, width: int = 64, num_classes: int = len(samples.SPECTROGRAM_CLASSES),
                             dtype: str = "float32", workers: int | None = None, progress: bool | str = True) -> Path:
    """The same data as ``kit.samples.make_spectrogram``, written for scale through ``kit.store.build``: in place,
    by ``workers`` threads (default: the usable CPUs), resumable at the first unfinished file; a
    finished folder (``index.csv`` is written last) is reused. Returns the path of ``out/index.csv``."""
    spec = samples.SpectrogramSpec(files, frames_per_file, height, width, num_classes, dtype, seed)
    out = Path(out)
    csv_path = out / "index.csv"
    workers = usable_cpus() if workers is None else workers
    key = store.fingerprint("spectrogram-samples", spec.__dict__, 1)
    manifest = store.complete(out, key)
    if manifest is not None and csv_path.exists():
        return csv_path
    patterns = samples._class_patterns(height, width, num_classes, seed)
    width_ = max(6, len(str(spec.files - 1)))
    shards = [store.Shard(f"frames/clip_{i:0{width_}d}.npy", spec.frames_per_file, i)
              for i in range(spec.files)]

    def write(shard, tmp: Path, advance):
        frames, _labels = samples._spectrogram_file(spec, patterns, shard.task)
        with open(tmp, "wb") as f:
            np.save(f, frames)
        advance(shard.count)

    manifest = store.build(out, kind="spectrogram-samples", key=key, shards=shards, write=write,
                           meta={"spec": spec.__dict__}, workers=workers,
                           progress="samples" if progress is True else progress)
    names = samples.SPECTROGRAM_CLASSES[:num_classes]
    with atomic_path(csv_path) as tmp:
        samples._write_csv(tmp, ["path", "frame", "label"], ((s.name, j, names[lab]) for s in shards
                                                    for j, lab in enumerate(_labels(spec, s.task))))
    return csv_path
