"""``python -m kit bench segmentation``: every segmentation loader, side by side, interleaved.

Without ``--data`` it generates (once, cached) the default bench data: 192 pairs of
512x512 RGB PNG images and colour-coded masks in the 12-colour CamVid-style palette.
The ``class_index`` store is built before timing; each variant is then measured in
rounds sized by time, in turn, after a warm-up, and compared with ``"sequence"`` (the user's
DataGenerator), each ratio with its rounds' lowest and highest. Epoch times are projected to the user's epoch: 140 steps of 3 pairs.
The optional ``dali`` variant is measured where DALI is installed.

With ``profile`` it also measures what one pair costs in each stage
(``kit.segmentation.profile``): the figures that explain the ranking.

``run(SegmentationConfig(...))`` returns a ``kit.bench.BenchResult``. The module imports no
TensorFlow (the loaders do, as they are built), nor OpenCV (the profile, only when asked).
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from kit import samples, timing
from kit.bench import BenchResult, endless, print_table, ratio_cells
from kit.bench.configs import SEGMENTATION_IMAGES as DEFAULT_IMAGES
from kit.bench.configs import SEGMENTATION_SIZE as DEFAULT_SIZE
from kit.bench.configs import SEGMENTATION_SLOW as SLOW
from kit.bench.configs import SegmentationConfig
from kit.cases import check_shards, registry
from kit.segmentation import VARIANTS, PairIndex, Palette, convert, make_loader
from kit.segmentation.dali import available as dali_available
from kit.segmentation.variants import default_x_dtype
from kit.system.pagecache import warm_page_cache
from kit.util import format_duration

#: The user's epoch: 140 steps of batch 3.
EPOCH = registry.scale_of("segmentation").examples  # the users' scale, declared by the case


def default_data(images: int = DEFAULT_IMAGES, size: int = DEFAULT_SIZE, seed: int = 0, workdir=None) -> Path:
    """The bench's sample pairs under the kit cache, generated on first use. Returns the CSV."""
    return samples.cached("segmentation", images=images, size=size, seed=seed, workdir=workdir)


def default_palette(csv) -> Path:
    """``class_dict.csv`` next to the index CSV."""
    return Path(csv).parent / "class_dict.csv"


def default_variants(log=print) -> list[str]:
    """Every variant, ``dali`` only where DALI is installed (else ``log`` says why not)."""
    why = dali_available()
    if why is not None:
        log(f"dali: not measured: {why}")
    return [v for v in VARIANTS if v != "dali" or why is None]


def run(config: SegmentationConfig, *, log=print) -> BenchResult:
    """Measures the variants interleaved, ``log`` taking the progress lines: a ``BenchResult`` whose
    rows (one per variant) are ``timing.compare``'s DataFrame with ``x_sequence``, ``epoch_s_420``
    and the output form of each row (``x_dtype``, ``y``), and whose info holds the batch, size and
    epoch (and, with ``config.profile``, the stage costs)."""
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
        loaders[v] = endless(ld)  # a round sized by time is never cut by an epoch's end
        log(f"  built {v:<17} in {time.perf_counter() - t0:6.1f} s")
    if "class_index" in loaders:  # its store, built or found, read in like the pairs' files
        folder, manifest = convert(index, pal, size=size, workdir=workdir, progress=False)
        warm_page_cache(check_shards(folder, manifest))
        log(f"  read into the page cache: class_index store {sum(s['bytes'] for s in manifest.shards) / 1e6:,.0f} MB")
    caps = {v: c.slow_seconds for v in loaders if v in SLOW}
    log(f"measuring {len(loaders)} variants, {c.rounds} interleaved rounds of at least {c.seconds:g} s and "
        f"{c.num_batches} batches each (capped at {c.slow_seconds:g} s per round for {', '.join(SLOW)}) ...")
    df = timing.compare(loaders, baselines=[b for b in ("sequence",) if b in loaders],
                        num_batches=c.num_batches, warmup=c.warmup, rounds=c.rounds, min_seconds=c.seconds,
                        ratio="median", max_seconds=caps, epoch_examples=(EPOCH,))
    df.insert(1, "description", [VARIANTS[v] for v in df["variant"]])
    df["x_dtype"] = [default_x_dtype(v) for v in df["variant"]]
    df["y"] = "one_hot float32" if c.one_hot else "class ids uint8"
    df["batch_size"] = c.batch_size
    info = {"batch_size": c.batch_size, "size": size, "epoch_examples": EPOCH, "y": df["y"].iloc[0]}
    if c.profile:
        from kit.segmentation.profile import pipeline_costs, stage_costs  # keeps kit.bench.segmentation light: OpenCV

        prof = stage_costs(csv, c.palette, size=size)
        info["profile"] = prof.to_dict(orient="records")
        info["pipeline_costs"] = pipeline_costs(prof).to_dict(orient="records")
    return BenchResult("segmentation", df, config, info)


def show(res) -> None:
    """Prints a result's table, with the user's epoch as a duration, its basis and, when
    profiled, the stage costs."""
    df, c = res.rows, res.config
    table, straddles = ratio_cells(df, ["sequence"])
    table["epoch_420"] = [format_duration(s) for s in df[f"epoch_s_{EPOCH}"]]
    print()
    print_table(table, ["variant", "examples_per_s", "x_sequence", "epoch_420", "latency_p50_ms",
                        "latency_p95_ms", "examples", "x_dtype"])
    for line in straddles:
        print(line)
    print(f"\nbasis: each rate is the pairs read over the seconds timed, summed over {c.rounds} interleaved rounds "
          f"of at least {c.seconds:g} s and {c.num_batches} batches (column 'examples'); x_sequence: the median of "
          f"the rounds' ratios [their lowest and highest]; epoch_420 projects the user's epoch (140 steps x 3).")
    for key in ("profile", "pipeline_costs"):
        if key in res.info:
            print()
            print_table(pd.DataFrame(res.info[key]))

