"""``python -m kit bench scale``'s data and what it reads it with: the generated frames and
their stores (the free space they need), the feature cache of every frame, one whole
epoch, the memory gather rate, one pass over a TFRecord store's records with nothing
decoded, the CPU a call used, and the form of a row; how random an epoch's order is
(notebook 03, through ``kit.bench.scale``). ``kit.bench.scale`` runs the bench.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from kit import features, samples, store
from kit.cases.stores import DEFAULT_READ_BUFFER, FIXED_READ_BUFFER, SHARD_PREFETCH, TFRECORD_FRAMING, TFRECORD_HEAD
from kit.epochs import untuned_options
from kit.models import audio
from kit.spectrogram import FrameIndex
from kit.spectrogram.convert import TFRECORD_FORMAT
from kit.spectrogram.loaders import TFRecordOptions
from kit.spectrogram.records import RecordReader
from kit.util import usable_cpus

__all__ = ["FRAMES_PER_FILE", "FRAME_SHAPE", "data_folder", "frame_bytes", "needed_bytes", "make_data",
           "store_files", "memory_gather_rate", "read_records", "read_records_streamed", "feature_cache", "row"]

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


def read_records(folder: Path, manifest, *, convert: bool = False) -> tuple[int, int, float] | None:
    """One pass over a ``tfrecord`` store's records read as its loader reads them, and nothing
    else: for a store checked at open, every record copied once into batches of 8 records from
    the mapped shards (``kit.spectrogram.records``), in shard order (with ``convert``, each
    batch's frames then converted to float32 as the loader converts a float16 store's); else the shards
    ``TFRecordOptions().cycle_length`` at a time through ``TFRecordDataset``, each read ahead
    in its own thread, the tail's short record after them, nothing decoded; no shuffle.
    Returns ``(records, bytes, seconds)`` (the records' data, framing included for
    fixed-length pieces; the seconds of the pass, not of building it). The warm epoch less
    this pass is what the loader's order, guard and the rest cost (``scale_report.warm_stage``).
    None with ``convert`` where the store is not read record by record."""
    opts = TFRecordOptions()
    tail_name = manifest.meta.get("tail_shard")
    body = [s for s in manifest.shards if s.name != tail_name]
    tail = [str(Path(folder) / s.name) for s in manifest.shards if s.name == tail_name]
    block = int(manifest.meta["options"]["record_frames"])
    checked = store.checks_on(opts.check_store)  # as the loader: fixed-length pieces when checked
    shards = body + [s for s in manifest.shards if s.name == tail_name]
    paths = [str(Path(folder) / s.name) for s in shards]
    shape, dtype = tuple(manifest.meta["frame_shape"]), manifest.meta.get("dtype", "float32")
    if checked and body and RecordReader.available(paths, [s.bytes for s in shards], block, shape, dtype):
        return _copy_records(paths, shards, block, shape, dtype, bool(tail), convert=convert)
    if convert:
        return None

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


#: The longest the bench waits for ``read_records_streamed``'s read-ahead thread to end after the
#: copy: its read of the whole store (seconds at a disk's rate; far longer means it is stuck).
STREAM_JOIN_S = 600.0


def read_records_streamed(folder: Path, manifest, files) -> tuple[int, int, float] | None:
    """``read_records`` of a cold store, with the page-in limit's read-ahead streaming ``files``
    (its shards, in the order the pass copies them) beside it in a thread
    (``kit.system.pagecache.cache_through``: the kernel asked for 8 pieces of 16 MB ahead,
    nothing copied): the copy's own rate where what it reads next is asked for in time,
    in the order it reads. None where the store is not read record by record."""
    import threading

    from kit.system.pagecache import cache_through

    tail_name = manifest.meta.get("tail_shard")
    ordered = sorted(files, key=lambda f: Path(f).name == tail_name)  # the tail's shard last, as copied
    ahead = threading.Thread(target=cache_through, args=(ordered,), daemon=True, name="kit-read-ahead")
    ahead.start()
    try:
        got = read_records(folder, manifest)
    finally:
        ahead.join(timeout=STREAM_JOIN_S)
    if ahead.is_alive():
        raise RuntimeError(f"the read-ahead beside the cold copy of {folder} did not end in {STREAM_JOIN_S:g} s")
    return got


def _copy_records(paths, shards, block, shape, dtype, tail, *, convert=False) -> tuple[int, int, float]:
    """``read_records`` for a store the loader reads record by record (``kit.spectrogram.records``):
    every record copied once into batches of the loader's 8 records, in shard order, on the
    loader's parallel calls (with ``convert``, the frames then cast to float32 in the same
    call, as the loader does); nothing permuted, guarded or prefetched."""
    reader = RecordReader(paths, [s.bytes for s in shards], [s.count for s in shards], block=block,
                          frame_shape=shape, dtype=dtype, tail=tail)
    total = int(reader.starts[-1]) + (1 if tail else 0)  # the tail's short record last
    k = max(1, 256 // block)  # the records of a batch of the bench's 256 frames
    item = tf.as_dtype(dtype).size

    def take(ids):
        x, y = tf.numpy_function(reader.take, [ids, tf.zeros([0], tf.int64)], (tf.as_dtype(dtype), tf.int64),
                                 stateful=False)
        # Converted, the float32 frames are the element (computed, as a dataset's elements are).
        return (tf.cast(x, tf.float32) if convert else x), y

    ds = tf.data.Dataset.range(total).batch(k).map(take, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.with_options(untuned_options())  # as the kit's loaders
    t0 = time.perf_counter()
    nbytes = ds.reduce(np.int64(0), lambda acc, b: acc + tf.cast(tf.size(b[0]) * item + tf.size(b[1]) * 8, tf.int64))
    seconds = time.perf_counter() - t0
    reader.release()
    return total, int(nbytes), seconds


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


# --------------------------------------------------------------------------- the epoch order (notebook 03)




