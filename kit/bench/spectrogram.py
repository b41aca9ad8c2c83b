"""``python -m kit bench spectrogram``: every spectrogram loader, side by side, interleaved.

Without ``--data`` it generates (once, cached) the default bench data: 200 files of
100 frames of 96x64 float32, 20,000 frames. Stores (memmap, TFRecord) are built
before timing; each variant is then measured in rounds, in turn, after a warm-up,
and compared with ``"generator"`` (the user's pattern) and ``"in_memory"`` (the
ceiling). Epoch times are projected to the user's 1,000,000 frames.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

EPOCH = 1_000_000
#: The default bench data: 20,000 frames in 200 files (491 MB as float32).
DEFAULT_FILES, DEFAULT_FRAMES_PER_FILE = 200, 100


def default_data(files: int = DEFAULT_FILES, frames_per_file: int = DEFAULT_FRAMES_PER_FILE,
                 seed: int = 0, workdir=None) -> Path:
    """The bench's sample data under the kit cache, generated on first use. Returns the CSV."""
    from kit import samples
    from kit.bench import cached_data

    return cached_data(f"bench-spectrogram-{files}x{frames_per_file}-s{seed}",
                       lambda folder: samples.make_spectrogram(
                           folder, files=files, frames_per_file=frames_per_file, seed=seed),
                       workdir=workdir)


def _warm_page_cache(index) -> None:
    """Reads every file once, so all variants start with the data in the page cache."""
    for f in index.files:
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass


def run(data=None, *, variants=None, batch_size: int = 256, rounds: int = 3, num_batches: int = 20,
        generator_seconds: float = 8.0, warmup: int = 2, workdir=None, log=print) -> pd.DataFrame:
    """Measures the variants interleaved; one row per variant.

    Args:
        data: index CSV; the default bench data if None.
        variants: names from ``VARIANTS`` (default all).
        batch_size: the user's global batch (256).
        rounds: interleaved rounds.
        num_batches: timed batches per variant per round.
        generator_seconds: per-round time cap for the slow variants (the generator
            would need minutes for ``num_batches`` of 256).
        warmup: untimed batches before each timed round.
    """
    from kit import timing
    from kit.spectrogram import VARIANTS, FrameIndex, make_loader

    variants = list(variants or VARIANTS)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}")
    csv = Path(data) if data is not None else default_data(workdir=workdir)
    index = FrameIndex.from_csv(csv)
    log(f"data: {csv} ({len(index):,} frames of {index.frame_shape}, {len(index.files)} files)")
    _warm_page_cache(index)
    loaders = {}
    for v in variants:  # conversions happen here, before any timing
        t0 = time.perf_counter()
        loaders[v] = make_loader(v, index, batch_size=batch_size, shuffle=True, seed=0, workdir=workdir)
        log(f"  built {v:<15} in {time.perf_counter() - t0:6.1f} s")
    slow = {"generator": generator_seconds, "pydataset": generator_seconds,
            "numpy_function": generator_seconds}
    baselines = [b for b in ("generator", "in_memory") if b in loaders]
    log(f"measuring {len(loaders)} variants, {rounds} interleaved rounds of {num_batches} batches of "
        f"{batch_size} (slow ones capped at {generator_seconds:g} s per round) ...")
    df = timing.compare(loaders, baselines=baselines, num_batches=num_batches, warmup=warmup,
                        rounds=rounds, max_seconds={k: v for k, v in slow.items() if k in loaders},
                        epoch_examples=(EPOCH,))
    df.insert(1, "description", [VARIANTS[v] for v in df["variant"]])
    df["batch_size"] = batch_size
    return df


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, default=None,
                   help="index CSV (default: generate 200 files x 100 frames, 20,000 frames)")
    p.add_argument("--variants", default=None, help="comma-separated subset of the variants")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--batches", type=int, default=20, help="timed batches per variant per round")
    p.add_argument("--generator-seconds", type=float, default=8.0,
                   help="time cap per round for the Python-bound variants")
    p.add_argument("--workdir", type=Path, default=None, help="where stores are built (kit cache)")
    p.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")


def register(bench_sub) -> None:
    p = bench_sub.add_parser("spectrogram", help="every spectrogram loader variant, interleaved")
    add_arguments(p)
    p.set_defaults(func=main)


def defaults(**overrides) -> argparse.Namespace:
    """The command's arguments with their defaults (and ``overrides``), for the demo."""
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args([])
    for k, v in overrides.items():
        setattr(args, k, v)
    return args


def main(args) -> int:
    from kit.bench import print_table, result
    from kit.cli import write_json
    from kit.timing import format_duration

    variants = args.variants.split(",") if args.variants else None
    df = run(args.data, variants=variants, batch_size=args.batch_size, rounds=args.rounds,
             num_batches=args.batches, generator_seconds=args.generator_seconds, workdir=args.workdir)
    show = df.copy()
    show[f"epoch_{EPOCH // 1000}k"] = [format_duration(s) for s in df[f"epoch_s_{EPOCH}"]]
    print()
    print_table(show, ["variant", "examples_per_s", "x_generator", "x_in_memory",
                       f"epoch_{EPOCH // 1000}k", "latency_p50_ms", "latency_p95_ms", "examples"])
    print(f"\nbasis: each rate is the examples read over the seconds timed, summed over "
          f"{args.rounds} interleaved rounds (column 'examples'); epochs projected to {EPOCH:,} frames.")
    if args.json and args.json != "-":
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    write_json(args.json, result("spectrogram", df, batch_size=args.batch_size,
                                 epoch_examples=EPOCH))
    return 0
