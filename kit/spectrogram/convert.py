"""Converting spectrogram frames into fast formats, through ``kit.store``.

* ``memmap``: every frame in index order in one ``frames.npy`` (N, H, W) float32,
  plus ``labels.npy`` (N,) int64: read by memory map, one gather per batch.
* ``tfrecord``: ``tf.train.Example`` records (``x`` raw float32 bytes, ``y`` int64)
  in shards of about ``shard_mb``; examples are written in a seeded random order so
  that reading shuffled shards through a shuffle buffer mixes the whole set.

Each store is keyed by the index's content and the options; builds are atomic per
shard, resumable, and verified by ``kit.store.verify`` (with the deep checks here).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kit import store, validate
from kit.cases import check_tfrecord_shard, shard_tags, store_folder
from kit.spectrogram.index import FrameIndex, open_frames
from kit.util import usable_cpus

__all__ = ["convert", "parse_batch", "store_key", "default_folder", "FORMATS", "DEFAULT_SHARD_MB"]

FORMATS = ("memmap", "tfrecord")
#: 100 MB shards: a few shards per core keeps parallel interleave busy on the
#: default bench data (491 MB) while each file stays large enough to stream.
DEFAULT_SHARD_MB = 100


def store_key(index: FrameIndex, fmt: str, **options) -> str:
    return store.fingerprint("spectrogram", fmt, index.fingerprint(), options, store.FORMAT_VERSION)


def default_folder(index: FrameIndex, fmt: str, workdir=None, **options) -> Path:
    """The content-keyed folder for a store of ``index`` under ``workdir``."""
    return store_folder("spectrogram", fmt, store_key(index, fmt, **options), workdir)


def convert(index: FrameIndex, to: str, out=None, *, workdir=None, shard_mb: float = DEFAULT_SHARD_MB,
            seed: int = 0, workers: int | None = None, progress: bool | str = True,
            adopt: bool = False, check: bool | None = None, nonfinite: str = "error"):
    """Converts ``index`` to a store (or reuses/resumes one). Returns ``(folder, manifest)``.

    Args:
        index: the validated frames.
        to: ``"memmap"`` or ``"tfrecord"``.
        out: the store's folder; by default a content-keyed folder under ``workdir``.
        workdir: where default folders go (``kit.store.default_workdir()`` if None).
        shard_mb: target TFRecord shard size in MB.
        seed: TFRecord write order.
        workers: threads writing TFRecord shards (default: the usable CPUs).
        progress: show a tqdm bar.
        adopt: use a complete store already in ``out`` if it holds this index in this
            format, whatever options it was built with (a loader given ``folder=``).
        check: compare a reused store's files with the manifest's SHA-256 at open (once
            per change of the file, see ``kit.store.check_open``); None: on unless
            ``$KIT_CHECK_STORES=0``.
        nonfinite: frames with NaN or inf are an ``"error"`` (DataError naming the file
            and frame) or, with ``"warn"``, a warning (``verify`` then accepts them too).
    """
    if to not in FORMATS:
        raise ValueError(f"to must be one of {FORMATS}, got {to!r}")
    if not shard_mb > 0:
        raise ValueError(f"shard_mb must be positive, got {shard_mb!r}")
    if nonfinite not in validate.NONFINITE:
        raise ValueError(f"nonfinite must be one of {validate.NONFINITE}, got {nonfinite!r}")
    opts = {} if to == "memmap" else {"shard_mb": float(shard_mb), "seed": int(seed)}
    key = store_key(index, to, **opts)
    folder = Path(out) if out is not None else default_folder(index, to, workdir, **opts)
    meta = {"module": __name__, "frame_shape": list(index.frame_shape), "dtype": "float32",
            "classes": list(index.classes), "source": str(index.csv_path),
            "index_key": index.fingerprint(), "options": opts, "nonfinite": nonfinite}
    if adopt and out is not None:
        m = store.complete(folder)
        if m is not None and m.kind == f"spectrogram-{to}" and m.meta.get("index_key") == meta["index_key"]:
            with store.store_lock(folder, shared=True):
                store.check_open(folder, m, full=check, progress=progress)
            return folder, m
    if to == "memmap":
        return folder, _memmap(index, folder, key, meta, progress, check)
    if workers is None:
        workers = usable_cpus()
    return folder, _tfrecord(index, folder, key, meta, shard_mb, seed, workers, progress, check)


# --------------------------------------------------------------------------- memmap


def _memmap(index: FrameIndex, folder: Path, key: str, meta: dict, progress, check) -> store.Manifest:
    n = len(index)

    def write(shard: store.Shard, tmp: Path, advance):
        if shard.name == "labels.npy":
            with open(tmp, "wb") as f:
                np.save(f, index.labels.astype(np.int64))
            return
        mm = store.open_memmap(tmp, dtype=np.float32, shape=(n,) + index.frame_shape)
        for k, rows in index.rows_by_file():
            block = open_frames(index.files[k])[index.frames[rows]]
            _check_finite(index, rows, block, meta["nonfinite"])
            mm[rows] = block
            advance(len(rows))
        mm.flush()
        del mm

    shards = [store.Shard("frames.npy", n), store.Shard("labels.npy", 0)]
    return store.build(folder, kind="spectrogram-memmap", key=key, shards=shards, write=write,
                       sources=index.files, meta={**meta, "count": n}, check=check,
                       expected_bytes=n * (int(np.prod(index.frame_shape)) * 4 + 8),
                       progress="memmap" if progress is True else progress)


def _check_finite(index: FrameIndex, rows, block, nonfinite: str) -> None:
    def where(k: int) -> str:
        r = int(rows[k])
        return f"{index.files[index.file_ids[r]]} frame {index.frames[r]} (index row {r})"
    validate.check_finite(block, where, nonfinite=nonfinite)


def _nonfinite(arr, manifest: store.Manifest, first: int = 0) -> str | None:
    """A problem if ``arr`` (frames) holds NaN or inf and the store was not converted to allow it."""
    if manifest.meta.get("nonfinite", "error") == "warn":
        return None
    for a in range(0, len(arr), 4096):
        ok = np.isfinite(np.asarray(arr[a:a + 4096]).reshape(min(4096, len(arr) - a), -1)).all(axis=1)
        if not ok.all():
            return f"frame {first + a + int(np.flatnonzero(~ok)[0])} holds NaN or inf"
    return None


def _count(manifest: store.Manifest) -> int:
    return int(manifest.meta.get("count", manifest.count))


@store.register_check("spectrogram-memmap")
def _check_memmap(folder: Path, manifest: store.Manifest, shard: dict) -> str | None:
    n = _count(manifest)
    try:
        arr = np.load(folder / shard["name"], mmap_mode="r", allow_pickle=False)
    except ValueError as e:
        return f"not a readable .npy ({e})"
    want = (n,) + tuple(manifest.meta["frame_shape"]) if shard["name"] == "frames.npy" else (n,)
    if arr.shape != want:
        return f"shape {arr.shape}, manifest implies {want}"
    return _nonfinite(arr, manifest) if shard["name"] == "frames.npy" else None


# --------------------------------------------------------------------------- tfrecord


def _tfrecord(index, folder, key, meta, shard_mb, seed, workers, progress, check) -> store.Manifest:
    import tensorflow as tf

    n = len(index)
    frame_bytes = int(np.prod(index.frame_shape)) * 4
    per_shard = max(1, int(shard_mb * 1e6 // frame_bytes))
    order = np.random.default_rng(seed).permutation(n)
    pieces = [order[i:i + per_shard] for i in range(0, n, per_shard)]
    shards = [store.Shard(f"shard-{tag}.tfrecord", len(rows), rows)
              for tag, rows in zip(shard_tags(len(pieces)), pieces)]

    def write(shard: store.Shard, tmp: Path, advance):
        rows = shard.task
        # Read each file once for this shard, then write records in shard order.
        data = np.empty((len(rows),) + index.frame_shape, np.float32)
        pos = np.arange(len(rows))
        by_file = index.file_ids[rows]
        for k in np.unique(by_file):
            sel = by_file == k
            data[pos[sel]] = open_frames(index.files[k])[index.frames[rows[sel]]]
        _check_finite(index, rows, data, meta["nonfinite"])
        labels = index.labels[rows]
        with tf.io.TFRecordWriter(str(tmp)) as w:
            for j in range(len(rows)):
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data[j].tobytes()])),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(labels[j])])),
                }))
                w.write(ex.SerializeToString())
                if (j + 1) % 256 == 0:
                    advance(256)
            advance(len(rows) % 256)

    return store.build(folder, kind="spectrogram-tfrecord", key=key, shards=shards, write=write,
                       sources=index.files, meta=meta, workers=min(workers, len(shards)), check=check,
                       expected_bytes=n * (frame_bytes + 40),  # + record framing and the label
                       progress="tfrecord" if progress is True else progress)


def parse_batch(serialized, frame_shape):
    """Parses a batch of serialized examples at once: ``(B, H, W, 1)`` float32, ``(B,)`` int64."""
    import tensorflow as tf

    feats = tf.io.parse_example(serialized, {
        "x": tf.io.FixedLenFeature([], tf.string),
        "y": tf.io.FixedLenFeature([], tf.int64),
    })
    x = tf.io.decode_raw(feats["x"], tf.float32)
    x = tf.reshape(x, (-1,) + tuple(frame_shape) + (1,))
    return x, feats["y"]


@store.register_check("spectrogram-tfrecord")
def _check_tfrecord(folder: Path, manifest: store.Manifest, shard: dict) -> str | None:
    frame_shape = tuple(manifest.meta["frame_shape"])

    def nonfinite(x, y, first):
        problem = _nonfinite(x.numpy(), manifest, first)
        return problem.replace("frame", "record", 1) if problem else None

    return check_tfrecord_shard(folder / shard["name"], shard["count"], lambda s: parse_batch(s, frame_shape),
                                batch=1024, inspect=nonfinite)
