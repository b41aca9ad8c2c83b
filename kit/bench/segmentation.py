"""``python -m kit bench segmentation``: every segmentation loader, side by side, interleaved.

Without ``--data`` it generates (once, cached) the default bench data: 192 pairs of
512x512 RGB PNG images and colour-coded masks in the 12-colour CamVid-style palette.
The ``class_index`` store is built before timing; each variant is then measured in
rounds, in turn, after a warm-up, and compared with ``"sequence"`` (the user's
DataGenerator). Epoch times are projected to the user's epoch: 140 steps of 3 pairs.
The optional ``dali`` variant is measured where DALI is installed.

``profile`` measures what one pair costs in each stage (decode, float conversion,
the per-colour loop, the vectorised lookup), in NumPy/OpenCV and in a tf.data map,
on one core: the figures that explain the ranking.

``run(SegmentationConfig(...))`` returns a ``kit.bench.BenchResult``; ``run(data, palette,
variants=..., ...)``, the config's fields as arguments, returns its rows (a DataFrame) as
before (``kit.bench.config``).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kit.bench.config import check_int, check_names, check_positive, configure, optional_int, optional_path
from kit.cases import registry
from kit.system.pagecache import warm_page_cache

__all__ = ["EPOCH", "USER_REPORT", "SLOW", "DEFAULT_IMAGES", "DEFAULT_SIZE", "PIPELINES", "SegmentationConfig",
           "default_data", "default_palette", "default_variants", "run", "profile", "pipeline_costs",
           "add_arguments", "register", "config_from_args", "show", "main"]

#: The user's epoch: 140 steps of batch 3.
EPOCH = registry.scale_of("segmentation").examples  # the users' scale, declared by the case
#: What the user reported (seed 004), model included: 3 epochs took 126 s with their
#: DataGenerator and 208 s with their tf.data rewrite.
USER_REPORT = {"epochs": 3, "pairs_per_epoch": EPOCH, "datagenerator_s": 126.0, "tfdata_s": 208.0}
DEFAULT_IMAGES, DEFAULT_SIZE = 192, 512
#: Variants whose one pair costs tens of ms: capped in seconds per round, not batches.
SLOW = ("sequence", "sequence_workers", "tfdata_naive")


def default_data(images: int = DEFAULT_IMAGES, size: int = DEFAULT_SIZE, seed: int = 0, workdir=None) -> Path:
    """The bench's sample pairs under the kit cache, generated on first use. Returns the CSV."""
    from kit import samples

    return samples.cached("segmentation", images=images, size=size, seed=seed, workdir=workdir)


def default_palette(csv) -> Path:
    """``class_dict.csv`` next to the index CSV."""
    return Path(csv).parent / "class_dict.csv"


def default_variants(log=print) -> list[str]:
    """Every variant, ``dali`` only where DALI is installed (else ``log`` says why not)."""
    from kit.segmentation import VARIANTS
    from kit.segmentation.dali import available

    why = available()
    if why is not None:
        log(f"dali: not measured: {why}")
    return [v for v in VARIANTS if v != "dali" or why is None]


@dataclass(frozen=True)
class SegmentationConfig:
    """What ``run`` measures.

    Attributes:
        data: index CSV; the default bench data if None.
        palette: ``class_dict.csv``; the one next to ``data`` if None.
        variants: names from ``VARIANTS`` (a sequence or a comma-separated string; None:
            all, ``dali`` only where DALI is installed).
        batch_size: pairs per batch.
        size: target size (one int or ``(height, width)``).
        rounds: interleaved rounds.
        num_batches: timed batches per variant per round, at most.
        seconds: per-round time cap of the fast variants.
        slow_seconds: per-round time cap of the variants in ``SLOW``.
        warmup: untimed batches before each timed round.
        one_hot: every variant delivers one-hot masks instead of class ids.
        ignore_label: the palette's ignore label.
        profile: also measure what each stage costs per pair (``profile``, ``pipeline_costs``).
        workdir: where stores are built (the kit cache if None).
    """

    data: Path | None = None
    palette: Path | None = None
    _: KW_ONLY
    variants: tuple[str, ...] | None = None
    batch_size: int = 8
    size: int | tuple[int, int] = DEFAULT_SIZE
    rounds: int = 3
    num_batches: int = 200
    seconds: float = 3.0
    slow_seconds: float = 8.0
    warmup: int = 2
    one_hot: bool = False
    ignore_label: int | None = None
    profile: bool = False
    workdir: Path | None = None

    def __post_init__(self):
        from kit.segmentation import VARIANTS

        optional_path(self, "data", "palette", "workdir")
        check_names(self, "variants", VARIANTS)
        size = tuple(self.size) if isinstance(self.size, (list, tuple)) else self.size
        parts = size if isinstance(size, tuple) else (size,)
        if len(parts) not in (1, 2) or any(isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p <= 0
                                           for p in parts):
            raise ValueError(f"size must be a positive int or (height, width), got {self.size!r}")
        object.__setattr__(self, "size", size)
        for name in ("batch_size", "rounds", "num_batches"):
            check_int(name, getattr(self, name))
        check_int("warmup", self.warmup, 0)
        check_positive("seconds", self.seconds)
        check_positive("slow_seconds", self.slow_seconds)
        optional_int("ignore_label", self.ignore_label, 0)


def run(config: SegmentationConfig | None = None, /, *args, log=print, **options):
    """Measures the variants interleaved; one row per variant.

    Args:
        config: a ``SegmentationConfig``; or, with ``args`` and ``options``, its fields
            (``run(data, palette, variants=..., batch_size=...)``).
        log: where progress lines go.

    Returns:
        For ``run(config)``, a ``BenchResult`` whose rows are ``timing.compare``'s
        DataFrame with ``x_sequence``, ``epoch_s_420`` and the output form of each row
        (``x_dtype``, ``y``), and whose info holds the batch, size and epoch (and, with
        ``config.profile``, the stage costs). Called with the fields, those rows alone.
    """
    config, as_arguments = configure(SegmentationConfig, config, args, options)
    res = _run(config, log)
    return res.rows if as_arguments else res


def _run(config: SegmentationConfig, log):
    from kit import timing
    from kit.bench import BenchResult
    from kit.segmentation import VARIANTS, PairIndex, Palette, default_x_dtype, make_loader

    c, workdir, size = config, config.workdir, config.size
    variants = list(c.variants or default_variants(log))
    csv = c.data if c.data is not None else default_data(workdir=workdir)
    index = PairIndex.from_csv(csv)
    pal = Palette.from_csv(c.palette if c.palette is not None else default_palette(csv), ignore_label=c.ignore_label)
    log(f"data: {csv} ({len(index):,} pairs, {pal.num_classes} classes), size {size}, batch {c.batch_size}")
    warm_page_cache(index.images + index.labels)
    loaders = {}
    for v in variants:  # the class_index conversion happens here, before any timing
        t0 = time.perf_counter()
        ld = make_loader(v, index, pal, batch_size=c.batch_size, size=size, shuffle=True, seed=0,
                         workdir=workdir, one_hot=c.one_hot)
        # tf.data loaders repeat, so a round is never cut by an epoch's end; a PyDataset
        # round ends at its epoch's end (the slow variants never get that far).
        loaders[v] = ld.repeat() if hasattr(ld, "repeat") else ld
        log(f"  built {v:<17} in {time.perf_counter() - t0:6.1f} s")
    if "class_index" in loaders:  # its store, built or found, read in like the pairs' files
        from kit.cases import check_shards
        from kit.segmentation import convert

        folder, manifest = convert(index, pal, size=size, workdir=workdir, progress=False)
        warm_page_cache(check_shards(folder, manifest))
        log(f"  read into the page cache: class_index store {sum(s['bytes'] for s in manifest.shards) / 1e6:,.0f} MB")
    caps = {v: (c.slow_seconds if v in SLOW else c.seconds) for v in loaders}
    log(f"measuring {len(loaders)} variants, {c.rounds} interleaved rounds of up to {c.num_batches} batches "
        f"(capped at {c.seconds:g} s per round, {c.slow_seconds:g} s for {', '.join(SLOW)}) ...")
    df = timing.compare(loaders, baselines=[b for b in ("sequence",) if b in loaders],
                        num_batches=c.num_batches, warmup=c.warmup, rounds=c.rounds, max_seconds=caps,
                        epoch_examples=(EPOCH,))
    df.insert(1, "description", [VARIANTS[v] for v in df["variant"]])
    df["x_dtype"] = [default_x_dtype(v) for v in df["variant"]]
    df["y"] = "one_hot float32" if c.one_hot else "class ids uint8"
    df["batch_size"] = c.batch_size
    info = {"batch_size": c.batch_size, "size": size, "epoch_examples": EPOCH, "y": df["y"].iloc[0]}
    if c.profile:
        prof = profile(c.data, c.palette, size=size, workdir=workdir)
        info["profile"] = prof.to_dict(orient="records")
        info["pipeline_costs"] = pipeline_costs(prof).to_dict(orient="records")
    return BenchResult("segmentation", df, config, info)


# --------------------------------------------------------------------------- profile


def _per_pair_ms(fn, items, repeat: int) -> float:
    fn(items[0])
    t0 = time.perf_counter()
    for _ in range(repeat):
        for it in items:
            fn(it)
    return 1e3 * (time.perf_counter() - t0) / (repeat * len(items))


def _tf_per_pair_ms(make_ds, n: int) -> float:
    """ms per element of a sequential tf.data map, one intra-op thread, minus tf.data's own cost."""
    import tensorflow as tf

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


def profile(data=None, palette=None, *, pairs: int = 8, size=DEFAULT_SIZE, repeat: int = 3,
            workdir=None) -> pd.DataFrame:
    """What one pair costs in each stage, in ms, on one core.

    NumPy/OpenCV stages are timed in a plain loop; TensorFlow stages inside a
    sequential ``tf.data`` map limited to one intra-op thread (tf.data's own cost
    per element, measured with an identity map, is subtracted). Decoding reads the
    files (from the page cache); the other stages work on decoded arrays.

    Returns:
        One row per stage: ``library``, ``stage``, ``ms_per_pair``, ``variants`` (where
        the stage is used).
    """
    import cv2

    from kit.segmentation import PairIndex, Palette
    from kit.segmentation.index import as_size, crop_or_pad

    csv = Path(data) if data is not None else default_data(workdir=workdir)
    index = PairIndex.from_csv(csv)
    pal = Palette.from_csv(palette if palette is not None else default_palette(csv))
    size = as_size(size)
    n = min(pairs, len(index))
    imgs, labs = list(index.images[:n]), list(index.labels[:n])
    warm_page_cache(imgs + labs)
    x8 = [crop_or_pad(_read_rgb(cv2, p), size) for p in imgs]
    m8 = [crop_or_pad(_read_rgb(cv2, p), size) for p in labs]
    rows = _numpy_stages(imgs, labs, x8, m8, pal, repeat=repeat)
    rows += _tf_stages(imgs, labs, x8, m8, pal, repeat=repeat)
    return pd.DataFrame(rows)


def _read_rgb(cv2, path: str) -> np.ndarray:
    """A PNG decoded by OpenCV, as RGB (``cv2`` passed in: imported once, outside the timing)."""
    bgr = cv2.imread(path, cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError(f"{path}: OpenCV cannot read this image")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def _stage(library: str, stage: str, ms: float, variants: str) -> dict:
    return {"library": library, "stage": stage, "ms_per_pair": ms, "variants": variants}


def _numpy_stages(imgs: list[str], labs: list[str], x8: list, m8: list, pal, *, repeat: int) -> list[dict]:
    """``profile``'s NumPy/OpenCV rows: each stage timed in a plain loop, decoding on one OpenCV thread."""
    import cv2

    colours = pal.colours

    def read(p):
        return _read_rgb(cv2, p)

    def loop_one_hot(m):  # the user's one_hot_it
        return np.float32(np.stack([np.all(m == c, axis=-1) for c in colours], axis=-1))

    def loop_ids(m):
        ids = np.full(m.shape[:2], 255, np.uint8)
        for k, c in enumerate(colours):
            ids[np.all(m == c, axis=-1)] = k
        return ids

    rows = []
    cv2.setNumThreads(1)
    try:
        rows.append(_stage("NumPy/OpenCV", "decode image", _per_pair_ms(read, imgs, repeat), "sequence"))
        rows.append(_stage("NumPy/OpenCV", "decode mask", _per_pair_ms(read, labs, repeat), "sequence"))
    finally:
        cv2.setNumThreads(-1)
    rows.append(_stage("NumPy/OpenCV", "image to float32 / 255",
                       _per_pair_ms(lambda x: np.float32(x) / 255.0, x8, repeat), "sequence"))
    rows.append(_stage("NumPy/OpenCV", f"colour loop -> one-hot float32 ({len(colours)} colours)",
                       _per_pair_ms(loop_one_hot, m8, repeat), "sequence (one_hot)"))
    rows.append(_stage("NumPy/OpenCV", f"colour loop -> class ids ({len(colours)} colours)",
                       _per_pair_ms(loop_ids, m8, repeat), "sequence"))
    _ = pal.lut  # build the table outside the timing
    rows.append(_stage("NumPy/OpenCV", "vectorised lookup -> class ids", _per_pair_ms(lambda m: pal.lut[
        (m[..., 0].astype(np.int32) << 16) | (m[..., 1].astype(np.int32) << 8) | m[..., 2]], m8, repeat),
        "conversion (class_index)"))
    return rows


def _tf_stages(imgs: list[str], labs: list[str], x8: list, m8: list, pal, *, repeat: int) -> list[dict]:
    """``profile``'s TensorFlow rows: each stage in a sequential ``tf.data`` map on one intra-op
    thread, tf.data's own cost per element subtracted (``_tf_per_pair_ms``)."""
    import tensorflow as tf

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
    """Adds up ``profile``'s stages per variant: ms per pair, the colour loop's share, pairs/s per core.

    Returns:
        One row per variant of ``PIPELINES``: ``ms_per_pair``, ``decode_ms``, ``colour_loop_ms``,
        ``colour_loop_share`` and ``pairs_per_s_one_core`` (1000 / ms_per_pair: what one
        core could deliver if nothing else cost anything).
    """
    rows = []
    for variant, (library, stages) in PIPELINES.items():
        sub = costs[costs["library"] == library]
        picked = {s: float(sub.loc[sub["stage"].str.startswith(s), "ms_per_pair"].sum()) for s in stages}
        total = sum(picked.values())
        loop = picked.get("colour loop -> class ids", 0.0)
        rows.append({"variant": variant, "ms_per_pair": total,
                     "decode_ms": picked["decode image"] + picked["decode mask"], "colour_loop_ms": loop,
                     "colour_loop_share": loop / total if total else float("nan"),
                     "pairs_per_s_one_core": 1e3 / total if total else float("inf")})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- command


def add_arguments(p: argparse.ArgumentParser) -> None:
    from kit.util import positive_float, positive_int, size_arg

    p.add_argument("--data", type=Path, default=None,
                   help=f"index CSV image,label (default: generate {DEFAULT_IMAGES} pairs of "
                        f"{DEFAULT_SIZE}x{DEFAULT_SIZE})")
    p.add_argument("--palette", type=Path, default=None, help="class_dict.csv (default: next to the index)")
    p.add_argument("--variants", default=None, help="comma-separated subset of the variants")
    p.add_argument("--batch-size", type=positive_int, default=8, help="pairs per batch (default 8)")
    p.add_argument("--size", type=size_arg, default=DEFAULT_SIZE, help="SIZE or HEIGHTxWIDTH (default 512)")
    p.add_argument("--rounds", type=positive_int, default=3,
                   help="interleaved rounds: each measures every variant once, in turn (default 3)")
    p.add_argument("--batches", type=positive_int, default=200, help="timed batches per variant per round, at most")
    p.add_argument("--seconds", type=positive_float, default=3.0, help="time cap per round, fast variants")
    p.add_argument("--slow-seconds", type=positive_float, default=8.0,
                   help=f"time cap per round for {', '.join(SLOW)}")
    p.add_argument("--one-hot", action="store_true", help="every variant delivers one-hot masks")
    p.add_argument("--ignore-label", type=int, default=None, help="the palette's ignore label (e.g. 255)")
    p.add_argument("--profile", action="store_true", help="also print what each stage costs per pair")
    p.add_argument("--workdir", type=Path, default=None, help="where stores are built (kit cache)")
    p.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")


def register(bench_sub) -> None:
    p = bench_sub.add_parser("segmentation", help="every segmentation loader variant, interleaved")
    add_arguments(p)
    p.set_defaults(func=main)


def config_from_args(args) -> SegmentationConfig:
    return SegmentationConfig(args.data, args.palette, variants=args.variants, batch_size=args.batch_size,
                              size=args.size, rounds=args.rounds, num_batches=args.batches, seconds=args.seconds,
                              slow_seconds=args.slow_seconds, one_hot=args.one_hot, ignore_label=args.ignore_label,
                              profile=args.profile, workdir=args.workdir)


def show(res) -> None:
    """Prints a result's table, with the user's epoch as a duration, its basis and, when
    profiled, the stage costs."""
    from kit.bench import print_table
    from kit.util import format_duration

    df = res.rows
    table = df.copy()
    table["epoch_420"] = [format_duration(s) for s in df[f"epoch_s_{EPOCH}"]]
    print()
    print_table(table, ["variant", "examples_per_s", "x_sequence", "epoch_420", "latency_p50_ms",
                        "latency_p95_ms", "examples", "x_dtype"])
    print(f"\nbasis: each rate is the pairs read over the seconds timed, summed over {res.config.rounds} "
          f"interleaved rounds (column 'examples'); epoch_420 projects the user's epoch (140 steps x 3).")
    for key in ("profile", "pipeline_costs"):
        if key in res.info:
            print()
            print_table(pd.DataFrame(res.info[key]))


def main(args) -> int:
    from kit.bench import save

    res = run(config_from_args(args))
    show(res)
    save(res, args.json)
    return 0
