"""``python -m kit bench spectrogram``: every spectrogram loader, side by side, interleaved.

Without ``--data`` it generates (once, cached) the default bench data: 200 files of
100 frames of 96x64 float32, 20,000 frames. Stores (memmap, TFRecord) are built (or
found) and, like the data's files, read into the page cache before timing; each variant
is then measured in interleaved rounds sized by time (each at least ``round_seconds`` and
``num_batches``), after a warm-up, and compared with ``"generator"`` (the user's pattern),
``"tfrecord_guide"`` (TensorFlow's guide) and ``"in_memory"`` (the in-RAM reference), each
ratio with its rounds' spread. This machine's limits (``kit.bench.limits``) are read before
and after the rounds, and each row is held against the one that binds it. Epoch times are
projected to the user's 1,000,000 frames. With ``cold`` (``--cold``) each store is evicted from the
page cache before each round of its variants, and a ``disk_read`` limit read cold binds them
(``kit.bench.limits.Cold``; docs/measuring.md).

``run(SpectrogramConfig(...))`` returns a ``kit.bench.BenchResult``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from kit import timing
from kit.bench import BenchResult, endless, print_table, ratio_cells
from kit.bench.configs import SpectrogramConfig
from kit.bench.limits import STAYED, Cold, Limits, fraction_of_limit
from kit.cases import check_shards, registry
from kit.spectrogram import VARIANTS, FrameIndex, convert, make_loader
from kit.spectrogram.case import default_data  # the default bench data (kit.spectrogram.default_data)
from kit.spectrogram.peers import available as grain_available
from kit.system.pagecache import warm_page_cache
from kit.util import format_duration

EPOCH = registry.scale_of("spectrogram").examples  # the users' scale, declared by the case
#: The user's global batch (128 per GPU on 2 GPUs).
DEFAULT_BATCH = registry.scale_of("spectrogram").global_batch


def plan(frames: int, *, batch_size: int | None, warmup: int, num_batches: int, where: str = "the data"):
    """A batch size and per-round batch counts that fit one epoch of ``frames``.

    Every round reads a fresh epoch: ``warmup`` untimed batches, then up to
    ``num_batches`` timed ones. ``batch_size=None`` takes the user's 256, or, when the
    data holds fewer than 4 such batches, the largest power of two that gives 4.

    Returns:
        ``(batch_size, warmup, timed_per_round, note)``; ``note`` says what was changed, or None.

    Raises:
        ValueError: an explicit ``batch_size`` larger than the data (names the option to change).
    """
    note = None
    if batch_size is None:
        batch_size = DEFAULT_BATCH
        if frames < 4 * DEFAULT_BATCH:
            batch_size = 1 << max(0, (max(1, frames // 4)).bit_length() - 1)
            note = (f"batch {batch_size}: {where} holds {frames:,} frames, fewer than 4 batches of the default "
                    f"{DEFAULT_BATCH} (--batch-size chooses)")
    elif batch_size > frames:
        raise ValueError(f"--batch-size {batch_size} is larger than {where} ({frames:,} frames): pass "
                         f"--batch-size {frames} or smaller, or leave it out to choose one that fits")
    per_epoch = math.ceil(frames / batch_size)
    fit_warmup = min(warmup, per_epoch - 1)
    timed = min(num_batches, per_epoch - fit_warmup)
    if fit_warmup < warmup or timed < num_batches:
        fit = (f"an epoch holds {per_epoch} batches of {batch_size}: each round reads {fit_warmup} warm-up and "
               f"{timed} timed batches (--warmup {warmup}, --batches {num_batches} asked)")
        note = f"{note}; {fit}" if note else fit
    return batch_size, fit_warmup, timed, note


#: Variants that read a store derived from the data (built once, then reused), and its format.
STORED = {"memmap": "memmap", "tfrecord_guide": "tfexample", "tfrecord": "tfrecord", "grain": "arrayrecord"}


def default_variants(log=print) -> list[str]:
    """Every variant, ``grain`` only where the peers extra is installed (else ``log`` says why not)."""
    why = grain_available()
    if why is not None:
        log(f"grain: not measured: {why}")
    return [v for v in VARIANTS if v != "grain" or why is None]


def warm_stores(index, variants, *, workdir=None) -> dict:
    """Reads each of ``variants``' stores (``STORED``) into the page cache, as the data's
    own files are, so that no variant's timed rounds read from disk; returns the bytes
    read per variant. A store reused from an earlier run can have left the page cache
    since (another job's reads, a reboot, or a kernel thread that pages out what it has
    not seen used: ``kit.system.pagecache.proactive_reclaim`` names one)."""
    read = {}
    for v in variants:
        # The loader's store: found, not built (the grain variant's is an ArrayRecord store).
        folder, manifest = convert(index, STORED[v], workdir=workdir, progress=False)
        files = check_shards(folder, manifest)
        warm_page_cache(files)
        read[v] = sum(s["bytes"] for s in manifest.shards)
    return read


#: Variants that read their files with ``read`` (the page-cache read binds them), not through a
#: memory map: the generator its data's whole files, the others their stores' shards.
READS = ("generator", "tfrecord_guide", "tfrecord", "grain")


def read_bytes_per_frame(index, variant: str, warmed: dict) -> float | None:
    """Bytes ``variant`` reads per frame delivered: a store's bytes over its frames, the generator
    its frame's whole file (it loads the file for every frame); None where it reads by memory map."""
    if variant == "generator":
        sizes = np.array([Path(f).stat().st_size for f in index.files], dtype=np.float64)
        return float(sizes[np.asarray(index.file_ids)].mean())
    if variant in READS and variant in warmed:
        return warmed[variant] / len(index)
    return None


#: Measured after the other variants' interleaved rounds, in rounds of their own (beside ``ANCHOR``
#: again, which the generator's rounds did not slow): the generator's
#: ``np.load`` of whole files in tf.data's threads leaves the C allocator in a state that slowed every
#: TFRecord reader measured after it in the same process, to half in some runs (results/NOTES.md,
#: issues 53 and 56); a training script runs one loader, not the generator before it.
AFTER = ("generator",)


#: The variant measured again beside the later ones (``AFTER``), through which their ratios are chained.
ANCHOR = "in_memory"


def joined(parts, baselines, anchor: str = ANCHOR):
    """``timing.compare`` tables measured one after the other, as one.

    Where every table measured ``anchor`` (with its ``x_<anchor>`` ratios), a ratio between rows of
    two tables is chained through it: each row's ratio to the anchor in its own rounds, over the
    baseline's (spread: the lowest over the highest, and the reverse); the anchor's later rows are
    dropped. Otherwise it is their rates' ratio, and its spread the widest their rounds allow (the
    lowest round over the baseline's highest, and the reverse), as their rounds were not paired."""
    chained = len(parts) > 1 and all(anchor in set(p["variant"]) and f"x_{anchor}" in p for p in parts)
    if chained:  # the anchor's row of the first table stays
        parts = [parts[0]] + [p[p["variant"] != anchor] for p in parts[1:]]
    part = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
    df = pd.concat(parts, ignore_index=True)
    for b in baselines:
        i = int(np.flatnonzero(df["variant"] == b)[0])
        base, other = df.iloc[i], part != part[i]
        if chained:
            x, lo, hi = f"x_{anchor}", f"x_{anchor}_min", f"x_{anchor}_max"
        else:
            x, lo, hi = "examples_per_s", "round_min", "round_max"
        df.loc[other, f"x_{b}"] = df.loc[other, x] / base[x]
        df.loc[other, f"x_{b}_min"] = df.loc[other, lo] / base[hi]
        df.loc[other, f"x_{b}_max"] = df.loc[other, hi] / base[lo]
    return df


def run(config: SpectrogramConfig, *, log=print) -> BenchResult:
    """Measures the variants interleaved, and this machine's limits in the same run; one row per variant.

    Args:
        config: what to measure.
        log: where progress lines go.

    Returns:
        A ``BenchResult`` whose rows are ``timing.compare``'s DataFrame (rates, each ratio with its
        rounds' lowest and highest) plus ``description``, ``batch_size``, ``batches_announced`` (rounds
        x the fewest timed batches per round; ``batches`` is what was measured, fewer where a time cap
        stopped a round), ``epoch_examples``, and ``limit``, ``limit_examples_per_s`` and
        ``fraction_of_limit`` (the limit that binds the loader, ``kit.bench.limits``); whose info
        holds the batch size, the epoch projected to and ``limits`` (``Limits.to_json``).
    """
    import tensorflow as tf  # keeps kit.bench.spectrogram light until it runs

    c, workdir = config, config.workdir
    variants = list(c.variants or default_variants(log))
    csv = c.data if c.data is not None else default_data(workdir=workdir)
    index = FrameIndex.from_csv(csv)
    log(f"data: {csv} ({len(index):,} frames of {index.frame_shape} {index.file_dtype}, {len(index.files)} files)")
    batch_size, warmup, num_batches, note = plan(len(index), batch_size=c.batch_size, warmup=c.warmup,
                                                 num_batches=c.num_batches, where=str(csv))
    if note:
        log(f"note: {note}")
    epoch_examples = c.epoch_examples
    if epoch_examples is None:
        epoch_examples = EPOCH if c.data is None else len(index)
    warm_page_cache(index.files)
    loaders = {}
    for v in variants:  # conversions happen here, before any timing
        t0 = time.perf_counter()
        loaders[v] = make_loader(v, index, batch_size=batch_size, shuffle=True, seed=0, workdir=workdir)
        log(f"  built {v:<15} in {time.perf_counter() - t0:6.1f} s")
    warmed = warm_stores(index, [v for v in loaders if v in STORED], workdir=workdir)
    if warmed:
        log("  read into the page cache: " + ", ".join(f"{v} store {b / 1e6:,.0f} MB" for v, b in warmed.items()))
    h, w = index.frame_shape
    # The limits: a batch as the loaders deliver it, and the files of the store the taught loader reads.
    readers = [v for v in ("tfrecord", "tfrecord_guide", "grain") if v in warmed]
    files, what = (index.files, "data's .npy files") if not readers else (
        check_shards(*convert(index, STORED[readers[0]], workdir=workdir, progress=False)), f"{readers[0]} store's shards")
    # --cold: each store (the kit's files, never the user's data) evicted before its variants' rounds,
    # and the disk read of the store the page-cache read reads (else the memmap store's file).
    cold = cold_files = None
    if c.cold:
        cold = Cold({v: check_shards(*convert(index, STORED[v], workdir=workdir, progress=False)) for v in warmed})
        first = next((v for v in (*readers, "memmap") if v in cold.stores), None)
        cold_files = (cold.stores[first], f"{first} store's {'shards' if first != 'memmap' else 'file'}") if first else None
        log(f"cold: {', '.join(cold.variants)} read cold" if not cold.why_not else f"cold: not measured: {cold.why_not}")
    limits = Limits((np.zeros((batch_size, h, w, 1), np.float32), np.zeros(batch_size, np.int64)), files, what=what,
                    seconds=c.limit_seconds, cold=cold, cold_files=cold_files)
    limits.read()
    slow = {"generator": c.generator_seconds, "pydataset": c.generator_seconds,
            "numpy_function": c.generator_seconds}
    # tfrecord_guide: the pipeline TensorFlow's guide builds, what the kit's tfrecord is measured against.
    baselines = [b for b in ("generator", "tfrecord_guide", "in_memory") if b in loaders]
    log(f"measuring {len(loaders)} variants, {c.rounds} interleaved rounds of at least {c.round_seconds:g} s and "
        f"{num_batches} batches of {batch_size} each (slow ones capped at {c.generator_seconds:g} s per round"
        f"{'; the generator after the others' if 'generator' in loaders and len(loaders) > 1 else ''}) ...")
    # The generator after the others, beside the anchor (in_memory) measured again: its ratios are
    # chained through the anchor's, each measured in paired rounds.
    later = [v for v in loaders if v in AFTER]
    groups = [[v for v in loaders if v not in AFTER], later + ([ANCHOR] if later and ANCHOR in loaders else [])]
    # Read cold, a round reads --batches batches, not on by time past its epoch into pages it brought in.
    read_cold = cold.variants if cold else []
    least = {v: c.round_seconds for v in loaders if v not in read_cold} if read_cold else c.round_seconds
    parts = [timing.compare({v: cold.source(v, endless(loaders[v])) if cold else endless(loaders[v]) for v in group},
                            baselines=[b for b in baselines if b in group],
                            num_batches=num_batches, warmup=warmup, rounds=c.rounds, min_seconds=least,
                            ratio="median", max_seconds={k: v for k, v in slow.items() if k in group}, epoch_examples=(epoch_examples,))
             for group in groups if group]
    df = joined(parts, baselines).set_index("variant").loc[list(loaders)].reset_index()
    limits.read()
    df.insert(1, "description", [VARIANTS[v] for v in df["variant"]])
    df["batch_size"] = batch_size
    df["batches_announced"] = c.rounds * num_batches
    df["epoch_examples"] = epoch_examples
    # Each loader against what binds it: it writes every float32 frame it delivers at least once
    # (memory copy); a tf.data loader passes no more batches than tf.data itself; a reader no more
    # bytes than the page cache gives.
    frame_bytes = h * w * 4
    bound = []
    for v, rate in zip(df["variant"], df["examples_per_s"]):
        allowed = {limits.copy: limits.rate(limits.copy) / frame_bytes}
        if isinstance(loaders[v], tf.data.Dataset):
            allowed["tfdata_elements"] = limits.rate("tfdata_elements") * batch_size
        per_frame = read_bytes_per_frame(index, v, warmed)
        if per_frame and "page_cache_read" in limits.reads:
            allowed["page_cache_read"] = limits.rate("page_cache_read") / per_frame
        if v in read_cold and "disk_read" in limits.reads:  # read cold, a store's bytes per frame come from the disk
            allowed["disk_read"] = limits.rate("disk_read") / (warmed[v] / len(index))
        bound.append(fraction_of_limit(rate, allowed))
    df["limit"], df["limit_examples_per_s"], df["fraction_of_limit"] = zip(*bound)
    info = {"batch_size": int(batch_size), "epoch_examples": int(epoch_examples), "limits": limits.to_json()}
    if cold is not None:
        df["read_cold"] = [v in read_cold for v in df["variant"]]
        info["cold"] = cold.to_json()
    return BenchResult("spectrogram", df, config, info)


def show(res) -> None:
    """Prints a result's table, with the epoch as a duration, each ratio with its rounds' spread,
    the limits and the basis of its rates."""
    df, c = res.rows, res.config
    n = int(df["epoch_examples"].iloc[0])
    label = f"epoch_{n // 1000}k" if n >= 10_000 and n % 1000 == 0 else f"epoch_{n}"
    baselines = [b for b in ("generator", "tfrecord_guide", "in_memory") if f"x_{b}" in df]
    table, straddles = ratio_cells(df, baselines)
    table[label] = [format_duration(s) for s in df[f"epoch_s_{n}"]]
    announced = int(df["batches_announced"].iloc[0])
    # Where a time cap cut rounds short, say how many batches the row rests on.
    table["batches"] = [f"{b} of {announced}" if b < announced else f"{b}" for b in df["batches"]]
    print()
    print_table(table, ["variant", "examples_per_s", *[f"x_{b}" for b in baselines], "limit", "fraction_of_limit",
                        "read_cold", label, "latency_p50_ms", "examples", "batches"])
    for line in straddles:
        print(line)
    cold = res.info.get("cold")
    if cold is not None:
        if cold["why_not"]:
            print(f"cold: not measured, every row read warm: {cold['why_not']}")
        else:
            print(f"cold (read_cold): {', '.join(cold['variants'])}: the store evicted from the page cache before "
                  f"each round, which reads --batches batches; the other rows read warm")
            for v, left in cold["left_cached"].items():
                if left is not None and left > STAYED:
                    print(f"  {v}: an eviction left {left:.0%} of its store cached: its rate is partly warm")
    limits = res.info.get("limits", {})
    if limits:
        print("\nlimits, measured in this run (the faster of the reads before and after the rounds):")
        for name, lim in limits.items():
            if lim["rate"] is None:
                print(f"  {name:<22} {'not measured':<32} {lim.get('why_not')}")
                continue
            rate = (f"{lim['rate'] / 1e9:,.2f} GB/s" if lim["unit"] == "bytes/s"
                    else f"{lim['rate']:,.0f} batches/s ({lim['rate'] * int(df['batch_size'].iloc[0]):,.0f} frames/s)")
            print(f"  {name:<22} {rate:<32} {lim['how']}")
            if lim.get("note"):
                print(f"  {'':<22} {'':<32} note: {lim['note']}")
        print("fraction_of_limit: each rate over the lowest of the limits that bind its loader (column 'limit', "
              "in frames/s: the copy of each float32 frame, tf.data's batches for a tf.data loader, the page-cache "
              "read of the bytes it reads a frame for a loader that reads its files"
              + ("; run cold, the disk read of its store's bytes per frame for a row read cold)"
                 if "disk_read" in limits and limits["disk_read"]["rate"] is not None else ")"))
    short = df[df["batches"] < announced]
    print(f"\nbasis: each rate is the examples read over the seconds timed, summed over {c.rounds} interleaved "
          f"rounds of at least {c.round_seconds:g} s and {announced // c.rounds} batches of "
          f"{int(df['batch_size'].iloc[0])} (columns 'examples', 'batches'); each ratio the median of its "
          f"rounds' ratios [their lowest and highest]; epochs projected to {n:,} frames.")
    if len(short):
        print(f"fewer batches than announced ({announced}) for {', '.join(short['variant'])}: "
              f"the per-round time cap (--generator-seconds {c.generator_seconds:g}) stopped them.")
