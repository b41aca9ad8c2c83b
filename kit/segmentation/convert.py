"""The ``class_index`` conversion: each pair decoded once (the reference decode) into uint8 image and
class-id shards through ``kit.store``, so the loader needs no decoding and no palette lookup:

* ``memmap`` (default): per shard of rows in index order, ``images-K-of-N.npy`` ``(n, H, W, 3)`` and
  ``labels-K-of-N.npy`` ``(n, H, W)``, read by memory map, one gather per batch;
* ``tfrecord``: ``tf.train.Example`` records (``x`` image bytes, ``y`` id bytes) in a seeded random
  order, for pure-graph pipelines (tf.data service).

A store is keyed by the index's content, the palette, the size and the options; builds are atomic
per shard and resumable; ``kit.store.verify`` runs the deep checks registered here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kit import store
from kit.cases.stores import shard_tags, store_folder
from kit.segmentation.index import PairIndex, Palette, as_size
from kit.store.checks import register_check
from kit.store.files import load_npy, open_memmap
from kit.store.manifest import FORMAT_VERSION
from kit.util import check_int, usable_cpus

FORMATS = ("memmap", "tfrecord")
#: 100 MB shards (about 95 pairs at 512x512): large enough to stream, small enough that an
#: interrupted conversion loses little.
DEFAULT_SHARD_MB = 100


def store_key(index: PairIndex, palette: Palette, size, fmt: str, **options) -> str:
    return store.fingerprint("segmentation", fmt, index.fingerprint(), palette.fingerprint(),
                             list(as_size(size)), options, FORMAT_VERSION)


def default_folder(index: PairIndex, palette: Palette, size, fmt: str, workdir=None, **options) -> Path:
    """The content-keyed folder for a store of ``index`` under ``workdir``."""
    return store_folder("segmentation", fmt, store_key(index, palette, size, fmt, **options), workdir)


def convert(index: PairIndex, palette: Palette, to: str = "memmap", out=None, *, size=(512, 512),
            workdir=None, shard_mb: float = DEFAULT_SHARD_MB, seed: int = 0, workers: int | None = None,
            progress: bool | str = True, check: bool | None = None):
    """Converts ``index`` into a class-index store (or reuses or resumes one): ``(folder, manifest)``.

    Args:
        index, palette: the validated pairs and the masks' colour code.
        to: ``"memmap"`` or ``"tfrecord"``.
        out: the store's folder (a store of other content there is rebuilt); by default a
            content-keyed folder under ``workdir`` (``kit.store.default_workdir()`` if None).
        size: ``(height, width)`` every pair is cropped or padded to.
        shard_mb: target shard size in MB.
        seed: TFRecord write order.
        workers: threads decoding and writing shards (default: the usable CPUs).
        progress: show a tqdm bar (a string sets its description).
        check: compare a reused store's files with the manifest's SHA-256 at open (``kit.store.check_open``;
            None: unless ``$KIT_CHECK_STORES=0``).

    A pair that cannot be decoded raises ``DataError``; the shards finished before it are kept.
    """
    if to not in FORMATS:
        raise ValueError(f"to must be one of {FORMATS}, got {to!r}")
    if not shard_mb > 0:
        raise ValueError(f"shard_mb must be positive, got {shard_mb!r}")
    size = index.check_size(size, palette)
    workers = usable_cpus() if workers is None else check_int("workers", workers)
    opts = {"shard_mb": float(shard_mb)} if to == "memmap" else {"shard_mb": float(shard_mb), "seed": int(seed)}
    key = store_key(index, palette, size, to, **opts)
    folder = Path(out) if out is not None else default_folder(index, palette, size, to, workdir, **opts)
    meta = {"module": __name__, "size": list(size), "count": len(index), "classes": list(palette.names),
            "colours": palette.colours.tolist(), "ignore_label": palette.ignore_label,
            "source": str(index.csv_path)}
    per_shard = max(1, int(shard_mb * 1e6 // (size[0] * size[1] * 4)))
    bar = progress if isinstance(progress, str) else ("convert" if progress else False)
    # uint8 image (3 bytes a pixel) and class ids (1), plus a little per record or file.
    extra = {"check": check, "expected_bytes": len(index) * (size[0] * size[1] * 4 + 64)}
    if to == "memmap":
        return folder, _memmap(index, palette, size, folder, key, meta, per_shard, workers, bar, extra)
    return folder, _tfrecord(index, palette, size, folder, key, meta, per_shard, seed, workers, bar, extra)


def _pieces(rows: np.ndarray, per_shard: int) -> list[np.ndarray]:
    return [rows[i:i + per_shard] for i in range(0, len(rows), per_shard)]


def _memmap(index, palette, size, folder, key, meta, per_shard, workers, progress, extra) -> store.Manifest:
    pieces = _pieces(np.arange(len(index)), per_shard)
    shards = []
    for tag, rows in zip(shard_tags(len(pieces)), pieces):  # the rows counted once, on the image shard
        shards.append(store.Shard(f"images-{tag}.npy", len(rows), ("images", rows)))
        shards.append(store.Shard(f"labels-{tag}.npy", 0, ("labels", rows)))

    def write(shard: store.Shard, tmp: Path, advance):
        what, rows = shard.task
        shape = (len(rows),) + size + ((3,) if what == "images" else ())
        mm = open_memmap(tmp, dtype=np.uint8, shape=shape)
        for j, r in enumerate(rows):
            if what == "images":
                mm[j] = index.read_image(int(r), size)
                advance(1)
            else:
                mm[j] = index.read_ids(int(r), palette, size)
        mm.flush()
        del mm

    meta = {**meta, "shard_rows": [[int(p[0]), int(p[-1]) + 1] for p in pieces]}
    return store.build(folder, kind="segmentation-memmap", key=key, shards=shards, write=write,
                       meta=meta, workers=min(workers, len(shards)), progress=progress, **extra)


def open_memmap_store(folder: Path, manifest: store.Manifest):
    """Memory-maps a memmap store: ``(images, labels, starts)``, one array per shard."""
    images: list[np.ndarray] = []
    labels: list[np.ndarray] = []
    for s in manifest.shards:
        arr = load_npy(Path(folder) / s.name)
        (images if s.name.startswith("images-") else labels).append(arr)
    starts = np.array([a for a, _ in manifest.meta["shard_rows"]] + [manifest.meta["count"]])
    return images, labels, starts


@register_check("segmentation-memmap")
def _check_memmap(folder: Path, manifest: store.Manifest, shard: store.ShardRecord) -> str | None:
    name = shard.name
    k = [s.name for s in manifest.shards if s.name.startswith(name.split("-")[0])].index(name)
    a, b = manifest.meta["shard_rows"][k]
    size = tuple(manifest.meta["size"])
    try:
        arr = load_npy(folder / name)
    except ValueError as e:
        return f"not a readable .npy ({e})"
    want = (b - a,) + size + ((3,) if name.startswith("images-") else ())
    if arr.shape != want or arr.dtype != np.uint8:
        return f"{arr.dtype} {arr.shape}, manifest implies uint8 {want}"
    if name.startswith("labels-"):
        return _bad_ids(arr, manifest)
    return None


def _bad_ids(ids: np.ndarray, manifest: store.Manifest) -> str | None:
    valid = np.zeros(256, bool)
    valid[:len(manifest.meta["classes"])] = True
    if manifest.meta.get("ignore_label") is not None:
        valid[manifest.meta["ignore_label"]] = True
    seen = np.flatnonzero(np.bincount(np.asarray(ids).ravel(), minlength=256))
    bad = seen[~valid[seen]]
    return f"class ids {bad.tolist()} out of range" if len(bad) else None


def _tfrecord(index, palette, size, folder, key, meta, per_shard, seed, workers, progress,
              extra) -> store.Manifest:
    import tensorflow as tf  # keeps kit.segmentation light: TensorFlow

    order = np.random.default_rng(seed).permutation(len(index))
    pieces = _pieces(order, per_shard)
    shards = [store.Shard(f"shard-{tag}.tfrecord", len(rows), rows)
              for tag, rows in zip(shard_tags(len(pieces)), pieces)]

    def feature(b: bytes):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[b]))

    def write(shard: store.Shard, tmp: Path, advance):
        with tf.io.TFRecordWriter(str(tmp)) as wr:
            for r in shard.task:
                image, ids = index.read_image(int(r), size), index.read_ids(int(r), palette, size)
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "x": feature(image.tobytes()), "y": feature(ids.tobytes())}))
                wr.write(ex.SerializeToString())
                advance(1)

    return store.build(folder, kind="segmentation-tfrecord", key=key, shards=shards, write=write,
                       meta=meta, workers=min(workers, len(shards)), progress=progress, **extra)


def parse_batch(serialized, size):
    """Parses a batch of serialized records at once: ``(B, H, W, 3)`` uint8, ``(B, H, W)`` uint8."""
    import tensorflow as tf  # keeps kit.segmentation light: TensorFlow

    feats = tf.io.parse_example(serialized, {"x": tf.io.FixedLenFeature([], tf.string),
                                             "y": tf.io.FixedLenFeature([], tf.string)})
    h, w = size
    x = tf.reshape(tf.io.decode_raw(feats["x"], tf.uint8), (-1, h, w, 3))
    y = tf.reshape(tf.io.decode_raw(feats["y"], tf.uint8), (-1, h, w))
    return x, y


@register_check("segmentation-tfrecord")
def _check_tfrecord(folder: Path, manifest: store.Manifest, shard: store.ShardRecord) -> str | None:
    size = tuple(manifest.meta["size"])
    from kit.cases.tfrecords import check_tfrecord_shard  # imports TensorFlow

    return check_tfrecord_shard(folder / shard.name, shard.count, lambda s: parse_batch(s, size),
                                batch=64, inspect=lambda x, y, first: _bad_ids(y.numpy(), manifest))
