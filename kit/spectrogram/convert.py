"""Converting spectrogram frames into fast formats, through ``kit.store``.

* ``memmap``: every frame in index order in one ``frames.npy`` (N, H, W) of the
  store's dtype, plus ``labels.npy`` (N,) int64: read by memory map, one gather per batch.
* ``tfrecord``: records that each hold a block of ``record_frames`` frames (format 5):
  the frames' raw bytes in the store's dtype, then their labels as little-endian int64,
  in shards of about ``shard_mb``. Each shard holds the frames of a seeded random set of
  files in a seeded random order (``_shard_rows``), so a record is a random set of those
  frames; the last record of the last shard may be short. The ``tfrecord`` variant reads
  them with ``tf.data.TFRecordDataset`` and decodes a whole batch of records at once
  (``decode_records``): no ``tf.train.Example`` to parse per frame.
* ``tfexample``: the TFRecord layout TensorFlow's TFRecord tutorial teaches, for the
  ``tfrecord_guide`` variant: one ``tf.train.Example`` a frame, its features ``frame`` (the
  frame's raw bytes in the store's dtype, little-endian, row-major, one ``bytes_list``
  entry) and ``label`` (one ``int64_list`` entry), in shards of about ``shard_mb`` holding
  the frames in the same seeded order as the ``tfrecord`` store's (``_shard_rows``).
  ``parse_examples`` parses a batch of them at once (``tf.io.parse_example``).
* ``arrayrecord``: ArrayRecord files (the format Google Grain reads; optional, the
  ``peers`` extra), one record per frame in index order, in shards of about
  ``shard_mb`` (``shard-00000-of-00003.array_record``), written with
  ``group_size:1,uncompressed`` so that each record is read on its own. A record is
  ``ARRAYRECORD_LAYOUT``: the frame's raw bytes (``H * W`` values of the store dtype,
  little-endian, row-major), then its label as one little-endian int64; nothing else,
  no pickle. Sharded like the TFRecord store: a build resumes shard by shard, ``verify``
  names the damaged shard, and no one file's index of records (an entry a record, at
  ``group_size:1``) grows with the whole store.

``store_dtype="float16"`` halves the bytes on disk and in the page cache; loaders cast
to float32 in the graph (``grain``: in NumPy, one batch at a time).

Each store is keyed by the index's content and the options; builds are atomic per
shard, resumable, and verified by ``kit.store.verify`` (with the deep checks here).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kit import store
from kit.cases import validate
from kit.cases.stores import shard_tags, store_folder
from kit.spectrogram.index import FrameIndex, open_frames
from kit.spectrogram.peers import available, require
from kit.store.checks import check_open, register_check
from kit.store.files import load_npy, open_memmap
from kit.store.folder import store_lock
from kit.store.manifest import FORMAT_VERSION
from kit.util import usable_cpus

FORMATS = ("memmap", "tfrecord", "tfexample", "arrayrecord")
#: 100 MB shards: a few shards per core keeps the interleaved reads busy while each file
#: stays large enough to stream.
DEFAULT_SHARD_MB = 100
#: 32 frames a record: a batch of 256 is 8 whole records, decoded at once
#: (results/NOTES.md has the records-per-batch measurements).
DEFAULT_RECORD_FRAMES = 32
#: The TFRecord layout, in the store's key, so a store of an older layout is rebuilt, never
#: misread: 1 was one tf.train.Example per frame; 2 to 4 records of a block of frames with a
#: separate tail shard and end records for the kit's own record reader; 5 records of a block
#: of frames, read by ``tf.data.TFRecordDataset`` alone.
TFRECORD_FORMAT = 5
#: The ``tfexample`` layout (in its key and manifest): 1, one ``tf.train.Example`` a frame,
#: features ``frame`` (raw bytes) and ``label`` (int64).
TFEXAMPLE_FORMAT = 1
STORE_DTYPES = ("float32", "float16")
#: The ArrayRecord layout (in the store's key and manifest: a store of another layout is
#: rebuilt, never misread). 1: one record per frame, ``ARRAYRECORD_LAYOUT``.
ARRAYRECORD_FORMAT = 1
#: One ArrayRecord record: the frame's raw bytes in the store dtype, then its label
#: (``record_dtype`` is it as a NumPy structured dtype).
ARRAYRECORD_LAYOUT = "frame: H*W values of the store dtype, little-endian, row-major; label: int64, little-endian"
#: ``group_size:1``: every record its own chunk, read without its neighbours (what Grain's
#: ArrayRecordDataSource asks for: it logs an error for any other group size);
#: ``uncompressed``: spectrogram floats hardly compress, and decompressing would cost
#: every read CPU time.
ARRAYRECORD_WRITER_OPTIONS = "group_size:1,uncompressed"
#: Each store format's layout version, kept in the manifest's options.
_LAYOUTS = {"tfrecord": TFRECORD_FORMAT, "tfexample": TFEXAMPLE_FORMAT, "arrayrecord": ARRAYRECORD_FORMAT}


def store_key(index: FrameIndex, fmt: str, **options) -> str:
    return store.fingerprint("spectrogram", fmt, index.fingerprint(), options, FORMAT_VERSION)


def default_folder(index: FrameIndex, fmt: str, workdir=None, **options) -> Path:
    """The content-keyed folder for a store of ``index`` under ``workdir``."""
    return store_folder("spectrogram", fmt, store_key(index, fmt, **options), workdir)


def convert(index: FrameIndex, to: str, out=None, *, workdir=None, shard_mb: float = DEFAULT_SHARD_MB,
            seed: int = 0, workers: int | None = None, progress: bool | str = True,
            adopt: bool = False, check: bool | None = None, nonfinite: str = "error",
            store_dtype: str = "float32", record_frames: int = DEFAULT_RECORD_FRAMES):
    """Converts ``index`` to a store (or reuses/resumes one). Returns ``(folder, manifest)``.

    Args:
        index: the validated frames.
        to: ``"memmap"``, ``"tfrecord"``, ``"tfexample"`` or ``"arrayrecord"`` (needs the ``peers`` extra:
            ``pip install 'kit[peers]'``; ``make test`` installs it).
        out: the store's folder; by default a content-keyed folder under ``workdir``.
        workdir: where default folders go (``kit.store.default_workdir()`` if None).
        shard_mb: target TFRecord or ArrayRecord shard size in MB.
        seed: TFRecord (and ``tfexample``) write order (an ArrayRecord store is in index order).
        workers: threads writing TFRecord or ArrayRecord shards (default: the usable CPUs).
        progress: show a tqdm bar.
        adopt: use a complete store already in ``out`` if it holds this index in this
            format (and TFRecord layout), whatever options it was built with (a loader
            given ``folder=``).
        check: compare a reused store's files with the manifest's SHA-256 at open (once
            per change of the file, see ``kit.store.check_open``); None: on unless
            ``$KIT_CHECK_STORES=0``.
        nonfinite: frames with NaN or inf are an ``"error"`` (DataError naming the file
            and frame) or, with ``"warn"``, a warning (``verify`` then accepts them too).
        store_dtype: ``"float32"`` or ``"float16"`` (half the bytes; a frame beyond
            float16's range is refused, naming it).
        record_frames: frames per TFRecord record.
    """
    if to not in FORMATS:
        raise ValueError(f"to must be one of {FORMATS}, got {to!r}")
    if not shard_mb > 0:
        raise ValueError(f"shard_mb must be positive, got {shard_mb!r}")
    if nonfinite not in validate.NONFINITE:
        raise ValueError(f"nonfinite must be one of {validate.NONFINITE}, got {nonfinite!r}")
    if store_dtype not in STORE_DTYPES:
        raise ValueError(f"store_dtype must be one of {STORE_DTYPES}, got {store_dtype!r}")
    if not isinstance(record_frames, (int, np.integer)) or record_frames <= 0:
        raise ValueError(f"record_frames must be a positive integer, got {record_frames!r}")
    if to == "arrayrecord":
        require("converting to arrayrecord")
    if to == "memmap":
        opts: dict = {"dtype": store_dtype}
    elif to == "arrayrecord":
        opts = {"shard_mb": float(shard_mb), "dtype": store_dtype, "format": ARRAYRECORD_FORMAT}
    elif to == "tfexample":
        opts = {"shard_mb": float(shard_mb), "seed": int(seed), "dtype": store_dtype, "format": TFEXAMPLE_FORMAT}
    else:
        opts = {"shard_mb": float(shard_mb), "seed": int(seed), "dtype": store_dtype,
                "record_frames": int(record_frames), "format": TFRECORD_FORMAT}
    key = store_key(index, to, **opts)
    folder = Path(out) if out is not None else default_folder(index, to, workdir, **opts)
    meta = {"module": __name__, "frame_shape": list(index.frame_shape), "dtype": store_dtype,
            "classes": list(index.classes), "source": str(index.csv_path),
            "index_key": index.fingerprint(), "options": opts, "nonfinite": nonfinite}
    if adopt and out is not None:
        m = store.complete(folder)
        if m is not None and m.kind == f"spectrogram-{to}" and m.meta.get("index_key") == meta["index_key"] \
                and (to == "memmap" or m.meta.get("options", {}).get("format") == _LAYOUTS[to]):
            with store_lock(folder, shared=True):
                check_open(folder, m, full=check, progress=progress)
            return folder, m
    if to == "memmap":
        return folder, _memmap(index, folder, key, meta, progress, check)
    if workers is None:
        workers = usable_cpus()
    if to == "arrayrecord":
        return folder, _arrayrecord(index, folder, key, meta, shard_mb, workers, progress, check, store_dtype)
    if to == "tfexample":
        return folder, _tfexample(index, folder, key, meta, shard_mb, seed, workers, progress, check, store_dtype)
    return folder, _tfrecord(index, folder, key, meta, shard_mb, seed, workers, progress, check,
                             store_dtype, int(record_frames))


def _frames_as(index: FrameIndex, k: int, frames: np.ndarray, rows: np.ndarray, dtype: str,
               nonfinite: str) -> np.ndarray:
    """Frames ``frames`` of file ``k`` (index rows ``rows``) in ``dtype``, checked finite
    (``nonfinite``); a frame that is finite but not in ``dtype`` (beyond float16's range)
    is refused, naming the file and the row."""
    data = open_frames(index.files[k])[frames]
    _check_finite(index, rows, data, nonfinite)
    if data.dtype == np.dtype(dtype):
        return data
    with np.errstate(over="ignore"):
        out = data.astype(dtype)
    bad = ~np.isfinite(out).reshape(len(out), -1).all(axis=1) & np.isfinite(data).reshape(len(data), -1).all(axis=1)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{index.files[k]} frame {frames[j]} (index row {rows[j]}): values beyond {dtype}'s "
                         f"range; convert with store_dtype='float32'")
    return out


# --------------------------------------------------------------------------- memmap


def _memmap(index: FrameIndex, folder: Path, key: str, meta: dict, progress, check) -> store.Manifest:
    n = len(index)

    def write(shard: store.Shard, tmp: Path, advance):
        if shard.name == "labels.npy":
            with open(tmp, "wb") as f:
                np.save(f, index.labels.astype(np.int64))
            return
        mm = open_memmap(tmp, dtype=meta["dtype"], shape=(n,) + index.frame_shape)
        for k, rows in index.rows_by_file():
            mm[rows] = _frames_as(index, k, index.frames[rows], rows, meta["dtype"], meta["nonfinite"])
            advance(len(rows))
        mm.flush()
        del mm

    shards = [store.Shard("frames.npy", n), store.Shard("labels.npy", 0)]
    return store.build(folder, kind="spectrogram-memmap", key=key, shards=shards, write=write,
                       sources=index.files, meta={**meta, "count": n}, check=check,
                       expected_bytes=n * (int(np.prod(index.frame_shape)) * np.dtype(meta["dtype"]).itemsize + 8),
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


@register_check("spectrogram-memmap")
def _check_memmap(folder: Path, manifest: store.Manifest, shard: store.ShardRecord) -> str | None:
    n = _count(manifest)
    try:
        arr = load_npy(folder / shard.name)
    except ValueError as e:
        return f"not a readable .npy ({e})"
    want = (n,) + tuple(manifest.meta["frame_shape"]) if shard.name == "frames.npy" else (n,)
    if arr.shape != want:
        return f"shape {arr.shape}, manifest implies {want}"
    if shard.name == "frames.npy" and arr.dtype != np.dtype(manifest.meta.get("dtype", "float32")):
        return f"dtype {arr.dtype}, manifest says {manifest.meta.get('dtype')}"
    return _nonfinite(arr, manifest) if shard.name == "frames.npy" else None


# --------------------------------------------------------------------------- tfrecord


def _tfrecord(index, folder, key, meta, shard_mb, seed, workers, progress, check, dtype, k) -> store.Manifest:
    import tensorflow as tf  # keeps kit.spectrogram light: TensorFlow

    n = len(index)
    frame_bytes = int(np.prod(index.frame_shape)) * np.dtype(dtype).itemsize
    per_shard = max(1, int(shard_mb * 1e6 // frame_bytes))
    k = min(k, per_shard)  # shards smaller than a record hold one record each
    per_shard = per_shard // k * k  # whole records; only the last shard's last record may be short
    meta["options"] = {**meta["options"], "record_frames": k}
    pieces = _shard_rows(index, per_shard, seed)
    shards = [store.Shard(f"shard-{tag}.tfrecord", len(rows), rows)
              for tag, rows in zip(shard_tags(len(pieces)), pieces)]

    def write(shard: store.Shard, tmp: Path, advance):
        rows = shard.task
        # Read each file once for this shard, then write records of k frames in shard order.
        data, labels = _shard_frames(index, rows, dtype, meta["nonfinite"])
        with tf.io.TFRecordWriter(str(tmp)) as w:
            for j in range(0, len(rows), k):
                w.write(data[j:j + k].tobytes() + labels[j:j + k].tobytes())
                advance(min(k, len(rows) - j))

    return store.build(folder, kind="spectrogram-tfrecord", key=key, shards=shards, write=write,
                       sources=index.files, meta=meta, workers=min(workers, len(shards)), check=check,
                       expected_bytes=n * (frame_bytes + 40),  # + record framing and the label
                       progress="tfrecord" if progress is True else progress)


def _shard_frames(index: FrameIndex, rows: np.ndarray, dtype: str, nonfinite: str) -> tuple[np.ndarray, np.ndarray]:
    """The frames of index rows ``rows`` (in that order) in ``dtype``, little-endian, each
    source file read once, and their labels as little-endian int64."""
    data = np.empty((len(rows),) + index.frame_shape, dtype)
    pos = np.arange(len(rows))
    by_file = index.file_ids[rows]
    for f in np.unique(by_file):
        sel = by_file == f
        data[pos[sel]] = _frames_as(index, int(f), index.frames[rows[sel]], rows[sel], dtype, nonfinite)
    return data.astype(data.dtype.newbyteorder("<"), copy=False), index.labels[rows].astype("<i8")


def _shard_rows(index: FrameIndex, per_shard: int, seed: int) -> list[np.ndarray]:
    """Rows of each shard: the source files in a seeded random order, cut into shards of
    ``per_shard`` rows, the rows of each shard in a seeded random order.

    A shard thus reads a few files once each, front to back, rather than a frame from
    every file (a global permutation opens every file once per shard). Frames of one file
    share a shard; the reader mixes shards through its interleave and its shuffle buffer.
    """
    rng = np.random.default_rng(seed)
    files = rng.permutation(len(index.files))
    rank = np.empty(len(files), np.int64)
    rank[files] = np.arange(len(files))
    order = np.lexsort((index.frames, rank[index.file_ids]))  # by shuffled file, then frame
    return [rng.permutation(order[i:i + per_shard]) for i in range(0, len(order), per_shard)]


def decode_records(records, frame_shape, dtype: str = "float32"):
    """Decodes one record or a batch of records (format 5) into their frames: ``(n, H, W, 1)``
    float32 and ``(n,)`` int64 labels, in record order.

    A record is ``k`` frames' raw bytes then their ``k`` labels as int64. Records of one
    length (a batch of whole records) are decoded by one ``decode_raw`` straight into the
    batch; a batch holding the store's one short record, by joining their frames first."""
    import tensorflow as tf  # keeps kit.spectrogram light: TensorFlow

    dt = tf.as_dtype(dtype)
    frame_bytes = int(np.prod(frame_shape)) * dt.size
    records = tf.reshape(records, [-1])
    length = tf.strings.length(records)
    tf.debugging.assert_equal(length % (frame_bytes + 8), 0,
                              message="a record that is not a whole block of frames and their labels")
    k = length // (frame_bytes + 8)
    raw_dt = tf.uint16 if dt == tf.float16 else dt  # decode_raw has no float16 kernel: a bitcast after

    def same_length():
        x = tf.io.decode_raw(records, raw_dt, fixed_length=tf.cast(k[0] * frame_bytes, tf.int32))
        y = tf.io.decode_raw(tf.strings.substr(records, k[0] * frame_bytes, k[0] * 8), tf.int64)
        return tf.reshape(x, [-1]), tf.reshape(y, [-1])

    def joined():
        x = tf.io.decode_raw(tf.strings.reduce_join(tf.strings.substr(records, tf.zeros_like(k), k * frame_bytes)),
                             raw_dt)
        y = tf.io.decode_raw(tf.strings.reduce_join(tf.strings.substr(records, k * frame_bytes, k * 8)), tf.int64)
        return x, y

    x, y = tf.cond(tf.reduce_all(tf.equal(k, k[0])), same_length, joined)
    if raw_dt != dt:
        x = tf.bitcast(x, dt)
    x = tf.reshape(x, (-1,) + tuple(frame_shape) + (1,))
    return (x if dt == tf.float32 else tf.cast(x, tf.float32)), y


def records_dtype(manifest: store.Manifest) -> str:
    if manifest.meta.get("options", {}).get("format") != TFRECORD_FORMAT:
        raise store.StoreError("a TFRecord store of an older layout; convert again to rebuild it")
    return manifest.meta.get("dtype", "float32")


@register_check("spectrogram-tfrecord")
def _check_tfrecord(folder: Path, manifest: store.Manifest, shard: store.ShardRecord) -> str | None:
    frame_shape = tuple(manifest.meta["frame_shape"])
    try:
        dtype = records_dtype(manifest)
    except store.StoreError as e:
        return str(e)

    def nonfinite(x, y, first):
        problem = _nonfinite(x.numpy(), manifest, first)
        return problem.replace("frame", "record frame", 1) if problem else None

    from kit.cases.tfrecords import check_tfrecord_shard  # imports TensorFlow

    # Records one at a time: each holds a block of frames (decode_records checks its length).
    return check_tfrecord_shard(folder / shard.name, shard.count,
                                lambda r: decode_records(r, frame_shape, dtype), batch=None, inspect=nonfinite)


# --------------------------------------------------------------------------- tfexample


def _tfexample(index, folder, key, meta, shard_mb, seed, workers, progress, check, dtype) -> store.Manifest:
    import tensorflow as tf  # keeps kit.spectrogram light: TensorFlow

    frame_bytes = int(np.prod(index.frame_shape)) * np.dtype(dtype).itemsize
    pieces = _shard_rows(index, max(1, int(shard_mb * 1e6 // frame_bytes)), seed)
    shards = [store.Shard(f"shard-{tag}.tfrecord", len(rows), rows) for tag, rows in zip(shard_tags(len(pieces)), pieces)]

    def write(shard: store.Shard, tmp: Path, advance):
        data, labels = _shard_frames(index, shard.task, dtype, meta["nonfinite"])
        with tf.io.TFRecordWriter(str(tmp)) as w:  # as the TFRecord tutorial writes them: an Example a frame
            for j in range(len(data)):
                example = tf.train.Example(features=tf.train.Features(feature={
                    "frame": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data[j].tobytes()])),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(labels[j])]))}))
                w.write(example.SerializeToString())
                if (j + 1) % 1024 == 0 or j + 1 == len(data):
                    advance((j % 1024) + 1)

    return store.build(folder, kind="spectrogram-tfexample", key=key, shards=shards, write=write,
                       sources=index.files, meta=meta, workers=min(workers, len(shards)), check=check,
                       expected_bytes=len(index) * (frame_bytes + 40),  # + the Example's and the record's framing
                       progress="tfexample" if progress is True else progress)


def parse_examples(serialized, frame_shape, dtype: str = "float32"):
    """A batch of ``tfexample`` records parsed at once: ``(n, H, W, 1)`` float32 frames and
    ``(n,)`` int64 labels (``tf.io.parse_example``, then one ``decode_raw`` of the batch's frames)."""
    import tensorflow as tf  # keeps kit.spectrogram light: TensorFlow

    dt = tf.as_dtype(dtype)
    features = tf.io.parse_example(serialized, {"frame": tf.io.FixedLenFeature([], tf.string),
                                                "label": tf.io.FixedLenFeature([], tf.int64)})
    raw = tf.uint16 if dt == tf.float16 else dt  # decode_raw has no float16 kernel: a bitcast after
    x = tf.io.decode_raw(features["frame"], raw)
    tf.debugging.assert_equal(tf.shape(x)[-1], int(np.prod(frame_shape)),
                              message="an Example whose frame holds another number of values")
    if raw != dt:
        x = tf.bitcast(x, dt)
    x = tf.reshape(x, (-1,) + tuple(frame_shape) + (1,))
    return (x if dt == tf.float32 else tf.cast(x, tf.float32)), features["label"]


def examples_dtype(manifest: store.Manifest) -> str:
    if manifest.meta.get("options", {}).get("format") != TFEXAMPLE_FORMAT:
        raise store.StoreError("a tfexample store of another layout; convert again to rebuild it")
    return manifest.meta.get("dtype", "float32")


@register_check("spectrogram-tfexample")
def _check_tfexample(folder: Path, manifest: store.Manifest, shard: store.ShardRecord) -> str | None:
    frame_shape = tuple(manifest.meta["frame_shape"])
    try:
        dtype = examples_dtype(manifest)
    except store.StoreError as e:
        return str(e)

    def nonfinite(x, y, first):
        return _nonfinite(x.numpy(), manifest, first)

    from kit.cases.tfrecords import check_tfrecord_shard  # imports TensorFlow

    return check_tfrecord_shard(folder / shard.name, shard.count, lambda r: parse_examples(r, frame_shape, dtype),
                                inspect=nonfinite)


# --------------------------------------------------------------------------- arrayrecord


def record_dtype(frame_shape, dtype: str = "float32") -> np.dtype:
    """One ArrayRecord record (``ARRAYRECORD_LAYOUT``) as a NumPy structured dtype: ``x``
    the frame (``frame_shape`` values of ``dtype``, little-endian), ``y`` its label
    (little-endian int64). ``np.frombuffer(b"".join(records), record_dtype(...))`` reads a
    batch of records in one step."""
    return np.dtype([("x", np.dtype(dtype).newbyteorder("<"), tuple(frame_shape)), ("y", "<i8")])


def arrayrecord_dtype(manifest: store.Manifest) -> str:
    """The frames' dtype in an ArrayRecord store of the current layout; ``StoreError`` for another layout."""
    if manifest.meta.get("options", {}).get("format") != ARRAYRECORD_FORMAT:
        raise store.StoreError("an ArrayRecord store of another layout; convert again to rebuild it")
    return manifest.meta.get("dtype", "float32")


def _array_record_module():
    """``array_record.python.array_record_module`` (the peers extra: ``kit.spectrogram.peers.require`` first)."""
    from array_record.python import array_record_module  # optional extra: array_record

    return array_record_module


def _arrayrecord(index: FrameIndex, folder: Path, key: str, meta: dict, shard_mb: float, workers: int, progress,
                 check, dtype: str) -> store.Manifest:
    module = _array_record_module()
    n = len(index)
    rec = record_dtype(index.frame_shape, dtype)
    per_shard = max(1, int(shard_mb * 1e6 // rec.itemsize))
    # Index order, cut into shards: a shard reads a stretch of the index, each of its files once.
    pieces = [np.arange(a, min(a + per_shard, n)) for a in range(0, n, per_shard)]
    shards = [store.Shard(f"shard-{tag}.array_record", len(rows), rows)
              for tag, rows in zip(shard_tags(len(pieces)), pieces)]
    meta["record_bytes"] = rec.itemsize
    meta["layout"] = ARRAYRECORD_LAYOUT

    def write(shard: store.Shard, tmp: Path, advance):
        rows = shard.task
        data, labels = _shard_frames(index, rows, dtype, meta["nonfinite"])
        records = np.empty(len(rows), rec)
        records["x"], records["y"] = data, labels
        raw, size = records.tobytes(), rec.itemsize
        writer = module.ArrayRecordWriter(str(tmp), ARRAYRECORD_WRITER_OPTIONS)
        try:
            for j in range(len(rows)):
                writer.write(raw[j * size:(j + 1) * size])
                if (j + 1) % 1024 == 0 or j + 1 == len(rows):
                    advance((j % 1024) + 1)
        finally:
            writer.close()

    return store.build(folder, kind="spectrogram-arrayrecord", key=key, shards=shards, write=write,
                       sources=index.files, meta=meta, workers=min(workers, len(shards)), check=check,
                       expected_bytes=n * (rec.itemsize + 16),  # + ArrayRecord's chunk framing and index
                       progress="arrayrecord" if progress is True else progress)


@register_check("spectrogram-arrayrecord")
def _check_arrayrecord(folder: Path, manifest: store.Manifest, shard: store.ShardRecord) -> str | None:
    """Every record of the shard read back: the manifest's count of them, each of the
    layout's length, written one record a chunk, labels among the classes, frames finite."""
    try:
        dtype = arrayrecord_dtype(manifest)
    except store.StoreError as e:
        return str(e)
    why = available()
    if why is not None:
        return f"not checked: reading ArrayRecord files needs the peers extra ({why})"
    rec = record_dtype(manifest.meta["frame_shape"], dtype)
    classes = len(manifest.meta.get("classes", ())) or None
    module = _array_record_module()
    try:
        reader = module.ArrayRecordReader(str(folder / shard.name))
    except (OSError, RuntimeError, ValueError) as e:
        return f"not a readable ArrayRecord file ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
    try:
        options = reader.writer_options_string()
        if "group_size:1," not in options + ",":
            return f"written with options {options!r}, not one record a chunk (group_size:1)"
        count = reader.num_records()
        if count != shard.count:
            return f"{count} records, manifest says {shard.count}"
        for start in range(0, count, 1024):
            records = reader.read(start, min(start + 1024, count))
            lengths = {len(r) for r in records}
            if lengths != {rec.itemsize}:
                bad = next(j for j, r in enumerate(records) if len(r) != rec.itemsize)
                return (f"record {start + bad} holds {len(records[bad])} bytes, the layout "
                        f"{rec.itemsize} ({ARRAYRECORD_LAYOUT})")
            block = np.frombuffer(b"".join(records), rec)
            if classes is not None and not ((block["y"] >= 0) & (block["y"] < classes)).all():
                bad = int(np.flatnonzero((block["y"] < 0) | (block["y"] >= classes))[0])
                return f"record {start + bad} has label {int(block['y'][bad])}, not one of the {classes} classes"
            problem = _nonfinite(block["x"], manifest, start)
            if problem:
                return problem.replace("frame", "record", 1)
    except (OSError, RuntimeError, ValueError, IndexError) as e:
        return f"unreadable records ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
    finally:
        reader.close()
    return None
