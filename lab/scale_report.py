"""``python -m lab.scale``'s verdicts and notes: what a row's basis warns of, which
targets a run met, which stage holds back a target still short, and what the command
prints about the machine.

The instrument itself (``lab.scale``) measures; this module judges. A cold figure that
was not one (the store's pages stayed cached, or the epochs outran the store's page-in
limit), a warm figure whose store was dropped between its epochs, a disk whose rate moved
during the run or a reference read bound by the CPU: each is said in words, and a
target it touches gets no verdict. A target missed is explained by the run's own
figures (``cold_stage``, ``warm_stage``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from kit.bench import print_table

__all__ = ["COLUMNS", "TARGETS", "STAGED", "COLD_IMPLAUSIBLE", "CACHED_AFTER_EVICT", "DISK_UNSTEADY",
           "CPU_BOUND_READ", "CPU_NOTE_MIN_S", "READ_LIKE", "WARM_CACHED_MIN", "WARM_BOUND", "CPU_BUSY", "disk_note",
           "cpu_note", "reference_cpu_note", "warm_warning", "cold_warning", "spread", "cold_stage", "warm_stage",
           "targets_met", "show"]

#: Column order of the bench's rows (the issue's form, then the basis); ``lab.scale`` makes them.
COLUMNS = ["variant", "state", "frames", "dtype", "epoch_s", "measured", "examples_per_s", "limit",
           "fraction_of_limit", "cpu_cores", "basis"]
#: Targets of the issue (1,000,000 frames, float16, 2 cores). A cold epoch is held against its
#: store's page-in limit (``lab.pagecache.page_in``: the disk and the first touch of each page,
#: which every cold reader pays), a warm one against the memory gather.
TARGETS = {"memmap_warm_epoch_s_max": 10.0, "memmap_cold_fraction_of_page_in_min": 0.8,
           "tfrecord_cold_fraction_of_page_in_min": 0.7, "tfrecord_warm_fraction_of_gather_min": 0.5,
           "head_epoch_s_max": 15.0, "projection_error_max": 0.25}
#: The targets whose shortfall the bench explains by stage: target -> (variant, state) of its row.
STAGED = {"memmap_cold_fraction_of_page_in": ("memmap", "cold"),
          "tfrecord_cold_fraction_of_page_in": ("tfrecord", "cold"),
          "tfrecord_warm_fraction_of_gather": ("tfrecord", "warm")}
#: A cold read this many times its store's page-in limit is not a cold figure (or the limit
#: was measured low): flagged in its basis, and its target left without a verdict.
COLD_IMPLAUSIBLE = 1.1
#: A share of the store's pages still cached after its eviction (``kit.system.pagecache.cached_fraction``)
#: at which a "cold" epoch is not one: flagged in its basis, and its target left without a verdict.
CACHED_AFTER_EVICT = 0.05
#: A store's two reference reads (before and after its cold epochs) this many times apart: the
#: disk's rate moved during the run, so the cold fractions say as much about the disk as about
#: the loaders (``disk_note``).
DISK_UNSTEADY = 1.5
#: The disk's reference read (one thread) used at least this much of a core: it was bound, or
#: nearly, by the kernel's work of bringing pages in, not by the disk alone; a loader that
#: decodes on the same cores shares that CPU (``cpu_note``).
CPU_BOUND_READ = 0.8
#: A reference read shorter than this says nothing of its CPU (the clock counts in 10 ms ticks).
CPU_NOTE_MIN_S = 1.0
#: A warm epoch that started with less than this share of its store's pages cached was partly
#: a cold one: flagged in its basis (``warm_warning``).
WARM_CACHED_MIN = 0.95
#: A warm epoch (no disk) at least this share of the cold one: the loader's own CPU work, not
#: the reading, bounds the cold epoch (``cold_stage``).
WARM_BOUND = 0.8
#: Cold epochs that kept at least this share of the usable cores busy were bound by the CPU
#: (``cold_stage``): on 2 cores, 1.7 of them.
CPU_BUSY = 0.85


def disk_note(reads_bytes_per_s, what: str = "the disk's reference reads") -> str | None:
    """What to say of a store's reference reads (``what``: the disk's, or the page-in
    limit's): None when they agree within ``DISK_UNSTEADY``; otherwise that the disk's rate
    moved during the run (the cold fractions are against the faster read, and their
    verdicts stand, but rest on an unsteady disk)."""
    rates = [float(r) for r in reads_bytes_per_s]
    if len(rates) < 2 or max(rates) <= DISK_UNSTEADY * min(rates):
        return None
    return (f"{what} differ {max(rates) / min(rates):.1f}x "
            f"({', '.join(f'{r / 1e6:,.0f}' for r in rates)} MB/s): the disk's rate moved during the run, so the "
            f"cold fractions (against the faster read) say as much about the disk as about the loaders")


def cpu_note(cores: float, kernel_cores: float, bytes_per_cpu_s: float | None,
             seconds: float = CPU_NOTE_MIN_S) -> str | None:
    """What to say of the CPU the disk's (faster) reference read used: None below
    ``CPU_BOUND_READ`` of a core or for a read shorter than ``CPU_NOTE_MIN_S``; otherwise
    that the read was bound, or nearly, by the CPU (the kernel's work of bringing pages
    in: it copies nothing) rather than by the disk alone, so the cold fractions also weigh
    how much CPU a loader has left for reading beside its own work on the same cores."""
    if cores < CPU_BOUND_READ or seconds < CPU_NOTE_MIN_S:
        return None
    per_gb = f", about {1e9 / bytes_per_cpu_s:.1f} CPU-s per GB" if bytes_per_cpu_s else ""
    return (f"the disk's reference read, one thread, kept {cores:.2f} of a core busy ({kernel_cores:.2f} in the "
            f"kernel{per_gb}): it was bound by the CPU bringing pages in as much as by the disk, so a cold loader "
            f"pays that CPU too, beside its own decoding on the same cores (see each row's cpu_cores)")


def reference_cpu_note(reads) -> str | None:
    """``cpu_note`` of the faster of the disk's reference reads, each ``(bytes, seconds,
    CPU seconds, of which in the kernel)``."""
    nbytes, s, cpu, kernel = min(reads, key=lambda r: r[1] / r[0])
    return cpu_note(cpu / s, kernel / s, nbytes / cpu if cpu > 0 else None, s)



def warm_warning(cached_before, reclaim: str | None = None) -> str | None:
    """What a warm row's basis warns of: None when every epoch started with at least
    ``WARM_CACHED_MIN`` of its store's pages cached; else that some were not, so the warm
    figure is partly a cold one (and what on this machine drops pages, if known)."""
    low = min(cached_before)
    if low >= WARM_CACHED_MIN:
        return None
    why = f": {reclaim}" if reclaim else ""
    return (f"WARNING: an epoch started with only {low:.0%} of the store's pages cached, so this warm figure is "
            f"partly a cold one; the machine dropped pages between the epochs{why}")


def cold_warning(fraction: float, cached_after: float | None) -> str | None:
    """What a cold row's basis warns of: None for a plausible cold figure; else whether
    the store's pages stayed cached (``cached_after``, the largest share an eviction before
    its epochs left, from ``kit.system.pagecache.cached_fraction``) or, evicted, the epochs outran
    the store's page-in limit (a ``fraction`` of it above ``COLD_IMPLAUSIBLE``: the disk's
    rate moved between the limit's reads and the epochs). Either way, no verdict."""
    if cached_after is not None and cached_after >= CACHED_AFTER_EVICT:
        return (f"WARNING: {cached_after:.0%} of the store's pages stayed cached after the eviction, so this is "
                f"not a cold figure")
    if fraction <= COLD_IMPLAUSIBLE:
        return None
    head = f"WARNING: {fraction:.2f}x the store's page-in limit"
    if cached_after is None:
        return (f"{head}: the store's pages were cached, or the disk's rate moved between its reference reads "
                f"and this epoch; no verdict")
    return (f"{head}, with the store evicted ({cached_after:.1%} of its pages cached after): the disk's rate "
            f"moved between its reference reads and this epoch, so no verdict")


def spread(times) -> float:
    """The spread of repeated epochs: (slowest - fastest) / median."""
    times = [float(t) for t in times]
    return (max(times) - min(times)) / float(np.median(times))


#: A cold read of the records in shard order, its pages asked for in time, at most this many times
#: the cold epochs' rate reads no faster than the epochs do: their order is not what holds them back.
READ_LIKE = 1.05


def cold_stage(variant: str, *, cold_s: float, warm_s: float, cpu_cores: float, kernel_cores: float,
               warm_kernel_cores: float, usable: int, store_bytes: int, page_in_bytes_per_s: float,
               disk_bytes_per_s: float, read_cold_bytes_per_s: float | None = None) -> str:
    """The stage that holds a cold row short of its target, named from the run's own figures.

    Args:
        variant: ``"memmap"`` or ``"tfrecord"``.
        cold_s: the cold epochs' median; ``warm_s``: the warm epochs' (every page cached).
        cpu_cores, kernel_cores: CPU seconds per second of the cold epochs, all and the kernel's.
        warm_kernel_cores: the kernel's CPU seconds per second of the warm epochs.
        usable: the cores this process may use (``kit.util.usable_cpus``).
        store_bytes: the store's size; page_in_bytes_per_s, disk_bytes_per_s: its limits.
        read_cold_bytes_per_s: tfrecord's records alone read cold, in shard order with the
            page-in limit's read-ahead streaming beside them (``scale_data.read_records_streamed``
            after an eviction), where measured.

    Returns:
        In order: the warm epoch at least ``WARM_BOUND`` of the cold one: the loader's own
        CPU work (``"CPU-bound decode"`` of the records, the memmap ``"window gather"``); the
        cold epochs at least ``CPU_BUSY`` of the usable cores busy: ``"CPU-bound"``, with the
        kernel's CPU beyond the warm epoch's (bringing pages in) as its share; else
        ``"read-ahead"``: neither the disk nor the CPU used fully. Each with its numbers.
    """
    if warm_s >= WARM_BOUND * cold_s:
        stage, work = (("CPU-bound decode", "decoding the records into batches") if variant == "tfrecord"
                       else ("window gather", "gathering each window's frames"))
        return (f"{stage}: the warm epoch, every page cached, takes {warm_s:.1f} s, {warm_s / cold_s:.2f} of the "
                f"cold median's {cold_s:.1f} s, so the loader's own CPU work ({work}) bounds the cold epoch, "
                f"not the reading")
    rate = store_bytes / cold_s
    if cpu_cores >= CPU_BUSY * usable:
        paging = max(0.0, kernel_cores - warm_kernel_cores * warm_s / cold_s)  # the kernel's CPU beyond the warm epoch's
        return (f"CPU-bound: the cold epochs kept {cpu_cores:.2f} of the {usable} usable cores busy, "
                f"{kernel_cores:.2f} in the kernel; bringing pages in (the kernel's CPU beyond the warm epoch's) took "
                f"{paging:.2f} cores, {paging / cpu_cores:.0%} of the CPU used, about "
                f"{paging * cold_s / store_bytes * 1e9:.1f} CPU-s per GB")
    sentence = (f"read-ahead: neither the disk nor the CPU is used fully: the cold epochs read {rate / 1e6:,.0f} "
                f"MB/s, {rate / page_in_bytes_per_s:.2f} of the page-in limit's {page_in_bytes_per_s / 1e6:,.0f} MB/s "
                f"(the disk alone {disk_bytes_per_s / 1e6:,.0f} MB/s), with {cpu_cores:.2f} of the {usable} usable "
                f"cores busy")
    if read_cold_bytes_per_s is None:
        return sentence
    c = read_cold_bytes_per_s
    why = ("so the reading itself, not the epoch's order, holds the epoch back" if c <= READ_LIKE * rate
           else "so the epoch's order (records permuted in windows of interleaved shards) costs the rest")
    return (f"{sentence}; the records alone, read cold in shard order with the limit's read-ahead streaming beside "
            f"them, read {c / 1e6:,.0f} MB/s ({c / page_in_bytes_per_s:.2f} of the limit), {why}")


def warm_stage(*, warm_s: float, read_s: float, frames: int, gather_frames_per_s: float,
               minimum: float = TARGETS["tfrecord_warm_fraction_of_gather_min"]) -> str:
    """The stage that holds the tfrecord warm row short of ``minimum`` of the memory gather: its
    warm epoch ``warm_s`` split into reading its records (``read_s``: one warm pass over them in
    shard order, ``scale_data.read_records``) and the rest (the epoch's order, decoding, the
    prefetch), the larger share named."""
    target_s = frames / (minimum * gather_frames_per_s)
    rest = max(0.0, warm_s - read_s)
    stage = "reading the records" if read_s >= rest else "order/decode"
    alone = (f"; reading alone takes longer than the {target_s:.1f} s the target allows" if read_s > target_s
             else f"; the target allows {target_s:.1f} s")
    return (f"{stage}: reading the records alone (in shard order, nothing decoded) takes {read_s:.1f} s, "
            f"{read_s / warm_s:.0%} of the warm epoch's {warm_s:.1f} s; the epoch's order, decoding and "
            f"prefetch the other {rest:.1f} s ({rest / warm_s:.0%}){alone}")


def targets_met(df: pd.DataFrame, checks: dict, cached_after: dict | None = None) -> dict:
    """Each of ``TARGETS`` met (True), missed (False) or without a verdict (None), from a
    run's rows, its projection checks and what the evictions left cached (by variant, the
    largest share)."""
    def get(variant, state):
        sel = df[(df["variant"] == variant) & (df["state"] == state) & df["measured"]]
        return sel.iloc[0] if len(sel) else None

    met = {}
    mw = get("memmap", "warm")
    ok = None if mw is None else bool(mw["epoch_s"] <= TARGETS["memmap_warm_epoch_s_max"])
    # Missed with the store's pages dropped between the epochs: not a warm figure, no verdict.
    met["memmap_warm_epoch_s"] = None if ok is False and "WARNING" in mw["basis"] else ok
    for v in ("memmap", "tfrecord"):
        c = get(v, "cold")
        left = (cached_after or {}).get(v)
        # Above COLD_IMPLAUSIBLE the disk's rate or the eviction failed this run, and with the
        # store's pages left cached the epoch was not cold: no verdict (cold_warning says which).
        met[f"{v}_cold_fraction_of_page_in"] = (
            None if c is None or cold_warning(c["fraction_of_limit"], left) is not None else
            bool(c["fraction_of_limit"] >= TARGETS[f"{v}_cold_fraction_of_page_in_min"]))
    tw = get("tfrecord", "warm")
    ok = None if tw is None else bool(tw["fraction_of_limit"] >= TARGETS["tfrecord_warm_fraction_of_gather_min"])
    met["tfrecord_warm_fraction_of_gather"] = None if ok is False and "WARNING" in tw["basis"] else ok
    h = get("head_from_cache", "warm")
    met["head_epoch_s"] = None if h is None else bool(h["epoch_s"] <= TARGETS["head_epoch_s_max"])
    for k, v in checks.items():
        met[f"{k}_projection"] = bool(abs(v["error"]) <= TARGETS["projection_error_max"])
    return met


def show(res) -> None:
    """Prints a scale result: its table, each row's basis, the targets and the notes."""
    df, info = res.rows, res.info
    print()
    print_table(df, COLUMNS[:-1])
    print("\nbasis per row:")
    for r in df.itertuples():
        print(f"  {r.variant} {r.state}: {r.basis}")
    if info.get("met"):
        print("targets: " + ", ".join(f"{k} {'no verdict' if v is None else 'met' if v else 'NOT met'}"
                                      for k, v in info["met"].items()))
    for what, sentence in (info.get("short") or {}).items():
        print(f"short of its target, {what}: {sentence}")
    for key in ("disk_note", "page_in_note", "cpu_note"):
        if info.get(key):
            print(f"note: {info[key]}")
    if info.get("reclaim"):
        print(f"note: this machine drops cached pages by itself ({info['reclaim']}): each warm row's basis says "
              f"how much of its store was cached as each epoch started")
    if info.get("free_page_reporting"):
        print(f"note: on this machine {info['free_page_reporting']}: an evicted store's pages go back to the host, "
              f"so a cold epoch reads into memory new to it, and the first read of each page costs CPU that a "
              f"re-read does not (python -m lab.experiments.first_touch measures how much)")
