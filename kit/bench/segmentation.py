"""``python -m kit bench segmentation``: every segmentation loader, side by side, interleaved.

Without ``--data`` it generates (once, cached) the default bench data: 192 pairs of
512x512 RGB PNG images and colour-coded masks in the 12-colour CamVid-style palette.
The ``class_index`` store is built before timing; each variant is then measured in
rounds, in turn, after a warm-up, and compared with ``"sequence"`` (the user's
DataGenerator). Epoch times are projected to the user's epoch: 140 steps of 3 pairs.
The optional ``dali`` variant is measured where DALI is installed.

With ``profile`` it also measures what one pair costs in each stage
(``kit.segmentation.profile``): the figures that explain the ranking.

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

__all__ = ["EPOCH", "SLOW", "DEFAULT_IMAGES", "DEFAULT_SIZE", "SegmentationConfig",
           "default_data", "default_palette", "default_variants", "run",
           "add_arguments", "register", "config_from_args", "show", "main"]

#: The user's epoch: 140 steps of batch 3.
EPOCH = registry.scale_of("segmentation").examples  # the users' scale, declared by the case
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
        from kit.segmentation.profile import pipeline_costs, profile  # OpenCV and TensorFlow: only when asked

        prof = profile(csv, c.palette, size=size)
        info["profile"] = prof.to_dict(orient="records")
        info["pipeline_costs"] = pipeline_costs(prof).to_dict(orient="records")
    return BenchResult("segmentation", df, config, info)


# --------------------------------------------------------------------------- profile




















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
