"""What one segmentation pair costs in each stage (decode, float conversion, the per-colour loop, the
vectorised lookup), in NumPy/OpenCV and in a tf.data map, on one core: what explains the loaders'
ranking. Imports OpenCV and TensorFlow: ``kit.segmentation`` does not load it.
"""

from __future__ import annotations

import time
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import tensorflow as tf

from kit.segmentation.index import PairIndex, Palette, as_size, crop_or_pad
from kit.system.pagecache import warm_page_cache


def _per_pair_ms(fn, items, repeat: int) -> float:
    fn(items[0])
    t0 = time.perf_counter()
    for _ in range(repeat):
        for it in items:
            fn(it)
    return 1e3 * (time.perf_counter() - t0) / (repeat * len(items))


def _tf_per_pair_ms(make_ds, n: int) -> float:
    """ms per element of a sequential tf.data map, one intra-op thread, minus tf.data's own cost."""
    def timed(ds):
        opts = tf.data.Options()
        opts.threading.max_intra_op_parallelism = 1
        ds = ds.with_options(opts)
        for _ in ds.take(1):
            pass
        t0 = time.perf_counter()
        for _ in ds:
            pass
        return 1e3 * (time.perf_counter() - t0) / n

    base = timed(make_ds(lambda a: a))
    return max(timed(make_ds(None)) - base, 0.0)


def stage_costs(data, palette=None, *, pairs: int = 8, size=512, repeat: int = 3) -> pd.DataFrame:
    """What one pair of the index CSV ``data`` costs in each stage, in ms, on one core: NumPy/OpenCV
    stages in a plain loop, TensorFlow's in a sequential ``tf.data`` map (its own cost per element
    subtracted); decoding reads the files from the page cache.

    Returns:
        One row per stage: ``library``, ``stage``, ``ms_per_pair``, ``variants`` (where it is used).
    """
    csv = Path(data)
    index = PairIndex.from_csv(csv)
    pal = Palette.from_csv(palette if palette is not None else csv.parent / "class_dict.csv")
    size = as_size(size)
    n = min(pairs, len(index))
    imgs, labs = list(index.images[:n]), list(index.labels[:n])
    warm_page_cache(imgs + labs)
    x8 = [crop_or_pad(_read_rgb(p), size) for p in imgs]
    m8 = [crop_or_pad(_read_rgb(p), size) for p in labs]
    rows = _numpy_stages(imgs, labs, x8, m8, pal, repeat=repeat)
    rows += _tf_stages(imgs, labs, x8, m8, pal, repeat=repeat)
    return pd.DataFrame(rows)


def _read_rgb(path: str) -> np.ndarray:
    """A PNG decoded by OpenCV, as RGB."""
    bgr = cv2.imread(path, cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError(f"{path}: OpenCV cannot read this image")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def _stage(library: str, stage: str, ms: float, variants: str) -> dict:
    return {"library": library, "stage": stage, "ms_per_pair": ms, "variants": variants}


def _numpy_stages(imgs: list[str], labs: list[str], x8: list, m8: list, pal, *, repeat: int) -> list[dict]:
    """``profile``'s NumPy/OpenCV rows: each stage timed in a plain loop, decoding on one OpenCV thread."""
    colours = pal.colours

    def loop_one_hot(m):  # the user's one_hot_it
        return np.float32(np.stack([np.all(m == c, axis=-1) for c in colours], axis=-1))

    def loop_ids(m):
        ids = np.full(m.shape[:2], 255, np.uint8)
        for k, c in enumerate(colours):
            ids[np.all(m == c, axis=-1)] = k
        return ids

    def lookup(m):
        return pal.lut[(m[..., 0].astype(np.int32) << 16) | (m[..., 1].astype(np.int32) << 8) | m[..., 2]]

    def row(stage, fn, items, used):
        return _stage("NumPy/OpenCV", stage, _per_pair_ms(fn, items, repeat), used)

    cv2.setNumThreads(1)
    try:
        rows = [row("decode image", _read_rgb, imgs, "sequence"), row("decode mask", _read_rgb, labs, "sequence")]
    finally:
        cv2.setNumThreads(-1)
    _ = pal.lut  # build the table outside the timing
    return rows + [row("image to float32 / 255", lambda x: np.float32(x) / 255.0, x8, "sequence"),
                   row(f"colour loop -> one-hot float32 ({len(colours)} colours)", loop_one_hot, m8,
                       "sequence (one_hot)"),
                   row(f"colour loop -> class ids ({len(colours)} colours)", loop_ids, m8, "sequence"),
                   row("vectorised lookup -> class ids", lookup, m8, "conversion (class_index)")]


def _tf_stages(imgs: list[str], labs: list[str], x8: list, m8: list, pal, *, repeat: int) -> list[dict]:
    """``profile``'s TensorFlow rows (``_tf_per_pair_ms``)."""
    colours = pal.colours
    paths_img, paths_lab = tf.constant(imgs * repeat), tf.constant(labs * repeat)
    xs = tf.constant(np.stack(x8 * repeat))
    ms = tf.constant(np.stack(m8 * repeat))
    lut = tf.constant(pal.lut)
    tf_colours = [tuple(int(v) for v in c) for c in colours]

    def over(source, fn):
        def make(f):
            ds = tf.data.Dataset.from_tensor_slices(source)
            return ds.map(f if f is not None else fn)
        return make

    def tf_loop(y):
        return tf.stack([tf.reduce_all(tf.equal(y, c), axis=-1) for c in tf_colours], axis=-1)

    def tf_loop_ids(y):
        ids = tf.fill(tf.shape(y)[:2], tf.constant(255, tf.uint8))
        for k, c in enumerate(tf_colours):
            ids = tf.where(tf.reduce_all(tf.equal(y, c), axis=-1), tf.constant(k, tf.uint8), ids)
        return ids

    def tf_lookup(y):
        y = tf.cast(y, tf.int32)
        return tf.gather(lut, y[..., 0] * 65536 + y[..., 1] * 256 + y[..., 2])

    total = len(imgs) * repeat
    rows = []
    for stage, source, fn, used in [
        ("decode image", paths_img, lambda p: tf.io.decode_png(tf.io.read_file(p), channels=3),
         "tfdata_naive, tfdata_tuned"),
        ("decode mask", paths_lab, lambda p: tf.io.decode_png(tf.io.read_file(p), channels=3),
         "tfdata_naive, tfdata_tuned"),
        ("convert_image_dtype to float32", xs, lambda x: tf.image.convert_image_dtype(x, tf.float32),
         "tfdata_naive"),
        (f"colour loop -> one-hot float32 ({len(colours)} colours)", ms,
         lambda y: tf.cast(tf_loop(y), tf.float32), "tfdata_naive (one_hot)"),
        (f"colour loop -> class ids ({len(colours)} colours)", ms, tf_loop_ids, "tfdata_naive"),
        ("vectorised lookup -> class ids", ms, tf_lookup, "tfdata_tuned"),
    ]:
        rows.append(_stage("TensorFlow", stage, _tf_per_pair_ms(over(source, fn), total), used))
    return rows


#: The stages each decoding variant runs per pair (stage names as in ``profile``, by prefix).
PIPELINES = {
    "sequence": ("NumPy/OpenCV", ("decode image", "decode mask", "image to float32", "colour loop -> class ids")),
    "tfdata_naive": ("TensorFlow", ("decode image", "decode mask", "convert_image_dtype", "colour loop -> class ids")),
    "tfdata_tuned": ("TensorFlow", ("decode image", "decode mask", "vectorised lookup")),
}


def pipeline_costs(costs: pd.DataFrame) -> pd.DataFrame:
    """Adds up ``stage_costs``' stages per variant of ``PIPELINES``: ``ms_per_pair``, ``decode_ms``,
    ``colour_loop_ms``, ``colour_loop_share`` and ``pairs_per_s_one_core`` (1000 / ms_per_pair)."""
    rows = []
    for variant, (library, stages) in PIPELINES.items():
        sub = costs[costs["library"] == library]
        picked = {s: float(sub.loc[sub["stage"].str.startswith(s), "ms_per_pair"].sum()) for s in stages}
        total = sum(picked.values())
        loop = picked.get("colour loop -> class ids", 0.0)
        rows.append({"variant": variant, "ms_per_pair": total,
                     "decode_ms": picked["decode image"] + picked["decode mask"], "colour_loop_ms": loop,
                     # a total below the timer's resolution has no loop in it either: a share of 0, not NaN
                     "colour_loop_share": loop / total if total > 0 else 0.0,
                     "pairs_per_s_one_core": 1e3 / total if total else float("inf")})
    return pd.DataFrame(rows)
