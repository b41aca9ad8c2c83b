"""``python -m kit bench scale``: whole epochs at the user's size, warm and cold, against the machine's limits.

Every other bench measures 20,000 frames sitting in the page cache and projects to a
million. This one generates the million (or ``--frames``), converts them to the
``memmap`` and ``tfrecord`` stores and measures **whole epochs**:

* each loader **warm** (its store read into the page cache first; the median of
  ``--warm-epochs`` whole epochs, each listed in the basis) and **cold** (the
  store's pages evicted first with ``kit.pagecache.evict``, which needs no root; the
  share of its pages still cached after, by ``mincore``, is in the row's basis and
  ``info["cached_after_evict"]``, and ``scale_report.cold_warning`` flags a cold
  figure that was not one, or that outran the disk's reference reads);
* ``memmap`` in block order (``order="blocks"``: near-sequential reads, each window's
  blocks asked of the kernel two windows ahead) and, cold, in
  the fully random order for comparison (capped, then projected and labelled so);
* the head trained from a feature cache of every frame, warm and cold;
* the generator over a bounded sample, projected and labelled as projected;
* the physical limits in the same run: the disk's sequential read rate of each store's
  own files (cold, brought into the page cache 16 MB at a time with the next
  ``READ_AHEAD_CHUNKS`` asked for ahead, nothing copied: ``kit.pagecache.cache_through``), read just
  before and just after that store's cold epoch, the faster read its limit (rows
  ``disk_sequential_read``, the memmap store's file, and ``disk_sequential_read_tfrecord``;
  every read kept in ``info["disk_reads_bytes_per_s"][store]``, ``info["disk_note"]``
  saying so when a store's two differ by more than ``DISK_UNSTEADY``, ``info["cpu_note"]``
  when its faster read kept ``CPU_BOUND_READ`` of a core busy; a VM's disk can read a file
  faster each time it reads it, so each cold epoch is compared with reads of the same
  files in the same stretch of the run) and the memory gather rate (warm: random batches
  gathered from a sample held in RAM), and each loader as a ``fraction_of_limit``;
* the epoch projected from 20,000 frames of the same loader the way the default
  spectrogram bench projects (its rounds of warm-up then timed batches, the steady rate
  scaled to the whole epoch), beside the measured one, so the projection is checked
  rather than trusted (``info["projection_check"]`` also keeps the projection from whole
  20,000-frame epochs, which carries each epoch's fixed start 50 times over).

One row per measured thing: ``variant``, ``state`` (``"warm"``/``"cold"``), ``frames``,
``dtype``, ``epoch_s``, ``measured`` (True for a whole epoch, False for a projection),
``examples_per_s``, ``limit`` (``"disk"``/``"memory"``/None), ``fraction_of_limit``,
``cpu_cores`` (CPU seconds the process used per second of a measured read or epoch; None
for the other rows), and ``basis`` (what was read, in words). The limits are rows too
(``disk_sequential_read``, ``disk_sequential_read_tfrecord``, ``memory_gather``). A cold
fraction compares the store's bytes read per second with the disk's sequential rate of
that store's files; a warm one compares frames per second with the gather rate.

The data (``<workdir>/bench-scale-<files>x100-<dtype>-s<seed>``), the stores and the
feature cache are built once and reused by later runs; an interrupted generation or
conversion resumes. The free disk space is checked first.

``run(ScaleConfig(...))`` returns a ``kit.bench.BenchResult`` (its info: disk and memory
rates, projection checks, notes and verdicts); ``run(frames=..., ...)``, the config's fields
as keywords, returns ``(rows, info)`` as before (``kit.bench.config``). The page-cache
helpers it uses live in ``kit.pagecache``; its verdicts and notes in ``kit.bench.scale_report``.
"""

from __future__ import annotations

import argparse
import gc
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kit import features, store, timing
from kit.bench import BenchResult, save
from kit.bench import spectrogram as bench_spectrogram
from kit.bench.config import check_int, check_one_of, check_positive, configure, optional_int, optional_path
from kit.bench.scale_data import (
    FRAME_SHAPE,
    cpu_used,
    data_folder,
    epoch,
    feature_cache,
    frame_bytes,
    make_data,
    memory_gather_rate,
    needed_bytes,
    store_files,
)
from kit.bench.scale_report import (
    COLUMNS,
    TARGETS,
    cold_warning,
    disk_note,
    reference_cpu_note,
    show,
    targets_met,
    warm_warning,
)
from kit.cases import registry
from kit.epochs import block_order_dataset
from kit.models import audio
from kit.pagecache import (
    READ_AHEAD_CHUNKS,
    cache_through,
    cached_fraction,
    evict,
    free_page_reporting,
    proactive_reclaim,
    read_through,
)
from kit.spectrogram import convert, make_loader
from kit.util import positive_int

__all__ = ["EPOCH", "PROJECTION_FRAMES", "WARM_EPOCHS", "COLUMNS", "ScaleConfig", "run", "order_randomness",
           "epoch_orders", "add_arguments", "register", "config_from_args", "main"]

EPOCH = registry.scale_of("spectrogram").examples  # the users' scale, declared by the case
#: The default spectrogram bench's size: the basis of the projections checked here.
PROJECTION_FRAMES = 20_000
#: Whole warm epochs per warm row, their median reported (warm epochs on 2 shared cores vary).
WARM_EPOCHS = 3


@dataclass(frozen=True)
class ScaleConfig:
    """What ``run`` generates and measures.

    Attributes:
        frames: frames in the data (the user's 1,000,000).
        dtype: of the data and the stores (``"float16"``: half the bytes; loaders deliver float32).
        batch_size: the user's global batch.
        seed: of the data and of the epochs' order.
        skip_extraction: do not run the backbone over every frame: use its cache if one
            is built, else a stand-in cache of the same shape (frames average-pooled to
            1,024 values), so the head's epoch is still measured at full size.
        generator_frames: the generator's bounded sample (it would take half an hour).
        random_seconds: cap on the cold epoch of ``memmap`` in fully random order (then projected).
        projection_frames: the basis of the checked projections (20,000: the default bench).
        warm_epochs: whole warm epochs per warm row (the head: after its first, traced,
            epoch); the row is their median, the basis lists each.
        workdir: where data, stores and caches go (the kit cache).
        workers: parallel writers of the data.
    """

    frames: int = EPOCH
    dtype: str = "float16"
    batch_size: int = 256
    seed: int = 0
    skip_extraction: bool = False
    generator_frames: int = 2_000
    random_seconds: float = 60.0
    projection_frames: int = PROJECTION_FRAMES
    warm_epochs: int = WARM_EPOCHS
    workdir: Path | None = None
    workers: int | None = None

    def __post_init__(self):
        check_one_of("dtype", self.dtype, ("float16", "float32"))
        for name in ("frames", "batch_size", "generator_frames", "projection_frames", "warm_epochs"):
            check_int(name, getattr(self, name))
        check_int("seed", self.seed, 0)
        check_positive("random_seconds", self.random_seconds)
        optional_int("workers", self.workers)
        optional_path(self, "workdir")


def _row(variant, state, frames, dtype, epoch_s, measured, basis, limit=None, fraction=None, cpu_cores=None):
    return {"variant": variant, "state": state, "frames": int(frames), "dtype": dtype, "epoch_s": float(epoch_s),
            "measured": bool(measured), "examples_per_s": frames / epoch_s, "limit": limit,
            "fraction_of_limit": None if fraction is None else float(fraction),
            "cpu_cores": None if cpu_cores is None else float(cpu_cores), "basis": basis}


# --------------------------------------------------------------------------- the run


def run(config: ScaleConfig | None = None, /, *, progress=True, log=print, **options):
    """Generates, converts and measures.

    Args:
        config: a ``ScaleConfig``; or, as keywords in ``options``, its fields
            (``run(frames=..., dtype=...)``).
        progress: progress bars.
        log: where progress lines go.

    Returns:
        For ``run(config)``, a ``BenchResult`` (rows in ``COLUMNS``, and the info);
        called with the fields, ``(rows, info)``.
    """
    config, as_arguments = configure(ScaleConfig, config, (), options)
    rows, info = _Run(config, progress=progress, log=log).measure()
    return (rows, info) if as_arguments else BenchResult("scale", rows, config, info)


class _Run:
    """One run of the bench: its data and stores, and what it has measured so far."""

    def __init__(self, config: ScaleConfig, *, progress, log):
        self.c, self.progress, self.log = config, progress, log
        self.rows: list[dict] = []  # finished rows
        self.found: list[dict] = []  # the loaders' epochs, judged at the end
        # store -> its reference reads (bytes, seconds, CPU seconds, of which in the kernel)
        self.disk_reads: dict[str, list[tuple]] = {}

    def measure(self) -> tuple[pd.DataFrame, dict]:
        import tensorflow as tf  # heavy: python -m kit --help imports this module

        self.prepare()
        info = self.info
        self.memmap_epochs()
        self.gather = self.memory_gather()
        self.tfrecord_epochs()
        disk = self.disk_limits()
        info["cpu_note"] = "; ".join(f"{fmt} store: {note}" for fmt in self.disk_reads
                                     if (note := reference_cpu_note(self.disk_reads[fmt]))) or None
        reclaim = proactive_reclaim()
        self.loader_rows(disk, reclaim)
        checks = self.projections()
        info["projection_check"] = checks
        self.head()
        self.generator()
        df = pd.DataFrame(self.rows, columns=COLUMNS)
        reads = self.disk_reads
        info["disk_bytes_per_s"] = disk
        info["disk_reads_bytes_per_s"] = {fmt: [r[0] / r[1] for r in rs] for fmt, rs in reads.items()}
        info["disk_reads_cpu_cores"] = {fmt: [r[2] / r[1] for r in rs] for fmt, rs in reads.items()}
        info["disk_note"] = "; ".join(f"{fmt} store: {note}" for fmt, rates in info["disk_reads_bytes_per_s"].items()
                                      if (note := disk_note(rates))) or None
        info["memory_gather_frames_per_s"] = self.gather
        info["cached_before_warm"] = {r["variant"]: r["cached_before"] for r in self.found if r["state"] == "warm"}
        info["reclaim"] = reclaim
        info["free_page_reporting"] = free_page_reporting()
        info["cached_after_evict"] = {r["variant"]: r["cached_after"] for r in self.found if r["state"] == "cold"}
        info["met"] = targets_met(df, checks, info["cached_after_evict"]) if self.n >= EPOCH else None
        tf.keras.backend.clear_session()
        return df, info

    def prepare(self) -> None:
        """The free space checked, the data generated (or found) and both stores converted."""
        c, log = self.c, self.log
        frames, dtype, seed, workdir = c.frames, c.dtype, c.seed, c.workdir
        root = Path(workdir) if workdir is not None else store.default_workdir()
        need = needed_bytes(frames, dtype, seed=seed, workdir=workdir)
        parts = ", ".join(f"{k} {v / 1e9:.1f} GB" for k, v in need.items() if v)
        store.check_free_space(root, sum(need.values()),
                               what=f"bench scale at {frames:,} {dtype} frames ({parts or 'all built'})")
        fb = frame_bytes(dtype)
        log(f"data: {frames:,} frames of {FRAME_SHAPE} {dtype} ({frames * fb / 1e9:.1f} GB) "
            f"under {data_folder(frames, dtype, seed, workdir)}")
        t0 = time.perf_counter()
        self.index = make_data(frames, dtype, seed=seed, workdir=workdir, workers=c.workers, progress=self.progress)
        log(f"  ready in {time.perf_counter() - t0:.0f} s ({len(self.index.files):,} files)")
        self.n, self.labels = len(self.index), self.index.labels
        self.info: dict[str, Any] = {"frames": self.n, "dtype": dtype, "batch_size": c.batch_size,
                                     "warm_epochs": c.warm_epochs, "targets": TARGETS}
        self.stores = {}
        for fmt in ("memmap", "tfrecord"):
            t0 = time.perf_counter()
            folder, m = convert(self.index, fmt, workdir=workdir, store_dtype=dtype, progress=self.progress)
            self.stores[fmt] = (folder, m, store_files(folder, m))
            log(f"  {fmt} store: {folder} ({sum(s['bytes'] for s in m.shards) / 1e9:.1f} GB, "
                f"ready in {time.perf_counter() - t0:.0f} s)")
        # The disk's sequential read rate of each store's own files, cold, front to back, read just
        # before and just after that store's cold epoch: the faster of the two is its limit. A VM's
        # disk can read a file faster each time it reads it, so a limit read of other files, or far
        # from the epoch in the run, compares the epoch with a disk in another state.
        self.frames_file = self.stores["memmap"][0] / "frames.npy"
        self.reference = {"memmap": [self.frames_file], "tfrecord": self.stores["tfrecord"][2]}
        self.disk_reads = {fmt: [] for fmt in self.reference}

    def loader(self, fmt, ix=None, **kw):
        c = self.c
        return make_loader(fmt, self.index if ix is None else ix, batch_size=c.batch_size, shuffle=True,
                           seed=c.seed, workdir=c.workdir, store_dtype=c.dtype, progress=False, **kw)

    def epochs(self, variant, state, ld, limit, basis_extra="", cached_after=None, files=None, **kw) -> dict:
        """A loader's epoch (warm: the median of ``warm_epochs`` whole ones), as a dict for
        ``loader_rows``; ``max_seconds`` in ``kw`` caps it (then projected)."""
        n, warm_epochs = self.n, self.c.warm_epochs
        gc.collect()
        if cached_after is not None:  # what the eviction left in the page cache (mincore)
            basis_extra += f"; {cached_after:.1%} of the store's pages cached after the eviction"
        cached_before = []  # warm: the share of the store's pages cached as each epoch starts

        def one(**kw):
            if state == "warm" and files:
                cached_before.append(cached_fraction(files))
            return cpu_used(epoch, ld, expected=n, labels=self.labels, **kw)

        (got, s, whole), wall, cpu, _ = one(**kw)
        if whole and state == "warm" and warm_epochs > 1:
            more = [one() for _ in range(warm_epochs - 1)]
            times = [s] + [m[0][1] for m in more]
            cores = (cpu + sum(m[2] for m in more)) / (wall + sum(m[1] for m in more))
            return {"variant": variant, "state": state, "epoch_s": float(np.median(times)), "measured": True,
                    "limit": limit, "cpu_cores": cores, "cached_after": cached_after,
                    "cached_before": cached_before,
                    "basis": f"the median of {len(times)} whole epochs of {n:,} frames "
                             f"({', '.join(f'{t:.1f}' for t in times)} s){basis_extra}"}
        if whole:
            return {"variant": variant, "state": state, "epoch_s": s, "measured": True, "limit": limit,
                    "cpu_cores": cpu / wall, "cached_after": cached_after, "cached_before": cached_before,
                    "basis": f"a whole epoch of {n:,} frames{basis_extra}"}
        return {"variant": variant, "state": state, "epoch_s": s * n / got, "measured": False, "limit": limit,
                "cpu_cores": cpu / wall, "cached_after": cached_after, "cached_before": cached_before,
                "basis": f"projected from {got:,} frames read in {s:.0f} s (capped){basis_extra}"}

    def read_disk(self, fmt, when) -> None:
        """The disk's reference read of a store's files, cold, kept in ``disk_reads``."""
        evict(self.reference[fmt])
        (nbytes, s), _, cpu, kernel = cpu_used(cache_through, self.reference[fmt])
        self.log(f"disk sequential read of the {fmt} store (cold, {when} its cold epoch): {nbytes / 1e9:.1f} GB in "
                 f"{s:.1f} s = {nbytes / s / 1e6:,.0f} MB/s ({cpu / s:.2f} CPU-s per s, {kernel / s:.2f} in the "
                 f"kernel)")
        self.disk_reads[fmt].append((nbytes, s, cpu, kernel))

    def memmap_epochs(self) -> None:
        """memmap, block order: cold between its reference reads, then the fully random order,
        cold; then warm."""
        mm_files = self.stores["memmap"][2]
        self.read_disk("memmap", "before")
        left = evict(mm_files)
        self.found.append(self.epochs("memmap", "cold", self.loader("memmap", order="blocks"), "disk",
                                      " (block order)", cached_after=left))
        self.read_disk("memmap", "after")
        left = evict(mm_files)
        self.found.append(self.epochs("memmap_random", "cold", self.loader("memmap", order="random"), "disk",
                                      " (fully random order)", max_seconds=self.c.random_seconds, cached_after=left))
        read_through(mm_files)
        self.found.append(self.epochs("memmap", "warm", self.loader("memmap", order="blocks"), "memory",
                                      " (block order)", files=mm_files))
        self.log("  " + "; ".join(f"{r['variant']} {r['state']} {r['epoch_s']:.1f} s" for r in self.found[-3:]))

    def memory_gather(self) -> float:
        """The memory gather limit, from a sample of the store held in RAM: frames per second."""
        n, batch_size = self.n, self.c.batch_size
        sample_n = min(n, 65_536)
        sample = np.array(store.load_npy(self.frames_file)[:sample_n])
        got, s = memory_gather_rate(sample, batch_size=batch_size)
        del sample
        gather = got / s
        self.log(f"memory gather (warm): {gather:,.0f} frames/s")
        self.rows.append(_row("memory_gather", "warm", n, self.c.dtype, n / gather, False,
                              f"projected from {got:,} frames gathered at random in batches of {batch_size} from "
                              f"{sample_n:,} frames in RAM", "memory", 1.0))
        return gather

    def tfrecord_epochs(self) -> None:
        """tfrecord, cold between its reference reads, then warm (the memmap store's pages
        dropped, to make room)."""
        tf_files = self.stores["tfrecord"][2]
        evict(self.stores["memmap"][2])
        self.read_disk("tfrecord", "before")
        left = evict(tf_files)
        self.found.append(self.epochs("tfrecord", "cold", self.loader("tfrecord"), "disk", cached_after=left))
        self.read_disk("tfrecord", "after")
        read_through(tf_files)
        self.found.append(self.epochs("tfrecord", "warm", self.loader("tfrecord"), "memory", files=tf_files))
        self.log("  " + "; ".join(f"{r['variant']} {r['state']} {r['epoch_s']:.1f} s" for r in self.found[-2:]))

    def disk_limits(self) -> dict:
        """The limit rows (first in the table): each store's faster reference read. Returns
        that read's rate per store, bytes per second."""
        disk, limit_rows = {}, []
        tf_files = self.stores["tfrecord"][2]
        for fmt, variant in (("memmap", "disk_sequential_read"), ("tfrecord", "disk_sequential_read_tfrecord")):
            reads = self.disk_reads[fmt]
            nbytes, s, disk_cpu, _ = min(reads, key=lambda r: r[1] / r[0])
            disk[fmt] = nbytes / s
            what = (f"{nbytes / 1e9:.2f} GB of {self.frames_file.name}, the memmap store's file" if fmt == "memmap"
                    else f"{nbytes / 1e9:.2f} GB of the tfrecord store's {len(tf_files)} shards, in order")
            # As an epoch: the time the read of the store's whole file (or shards) took.
            limit_rows.append(_row(
                variant, "cold", self.n, self.c.dtype, s, True,
                f"{what}, brought into the page cache cold 16 MB at a time, the next {READ_AHEAD_CHUNKS} asked for "
                f"ahead, nothing copied, the faster of "
                f"{len(reads)} reads just before and after the {fmt} store's cold epoch "
                f"({', '.join(f'{r[0] / r[1] / 1e6:,.0f}' for r in reads)} MB/s)", "disk", 1.0,
                disk_cpu / s))
        self.rows[:0] = limit_rows
        return disk

    def loader_rows(self, disk: dict, reclaim: str | None) -> None:
        """The loaders' epochs as rows, each against its limit, with what its basis warns of."""
        n, tf_files = self.n, self.stores["tfrecord"][2]
        store_bytes = {"memmap": self.frames_file.stat().st_size, "memmap_random": self.frames_file.stat().st_size,
                       "tfrecord": sum(p.stat().st_size for p in tf_files)}
        limit_of = {"memmap": "memmap", "memmap_random": "memmap", "tfrecord": "tfrecord"}
        for r in self.found:
            rate = n / r["epoch_s"]
            frac = (store_bytes[r["variant"]] / r["epoch_s"] / disk[limit_of[r["variant"]]] if r["limit"] == "disk"
                    else rate / self.gather)
            basis = r["basis"]
            if r["state"] == "cold":
                warning = cold_warning(frac, r.get("cached_after"))
                basis += f" ({warning})" if warning else ""
            elif r["cached_before"] and None not in r["cached_before"]:
                basis += ("; the share of the store's pages cached as each epoch started: "
                          f"{', '.join(f'{c:.1%}' for c in r['cached_before'])}")
                warning = warm_warning(r["cached_before"], reclaim)
                basis += f" ({warning})" if warning else ""
            self.rows.append(_row(r["variant"], r["state"], n, self.c.dtype, r["epoch_s"], r["measured"], basis,
                                  r["limit"], frac, r["cpu_cores"]))

    def projections(self) -> dict:
        """The projections from ``projection_frames`` frames, beside the measured epochs, made the
        way the default spectrogram bench makes them (``timing.compare``: each round a fresh
        epoch, warm-up batches, then timed batches; the steady rate projected to n). The median
        whole small epoch, projected the same way, is kept beside it: it carries each epoch's
        start (iterator, order, pipeline fill) 50 times over when projected from 20,000 frames
        to a million. Returns the checks by store."""
        c, n = self.c, self.n
        checks: dict[str, dict] = {}
        if c.projection_frames >= n:
            return checks
        defaults = bench_spectrogram.SpectrogramConfig()
        rounds = defaults.rounds
        # As the bench, fewer warm-up and timed batches where an epoch holds fewer.
        _, warmup, num_batches, _ = bench_spectrogram.plan(
            c.projection_frames, batch_size=c.batch_size, warmup=defaults.warmup, num_batches=defaults.num_batches)
        small = self.index.subset(np.arange(c.projection_frames))
        for fmt, kw in (("memmap", {"order": "blocks"}), ("tfrecord", {})):
            convert(small, fmt, workdir=c.workdir, store_dtype=c.dtype, progress=False)
            ld = self.loader(fmt, small, **kw)
            epoch(ld, expected=c.projection_frames)  # warms the small store and traces
            times = [epoch(ld, expected=c.projection_frames, labels=small.labels)[1] for _ in range(c.warm_epochs)]
            whole = float(np.median(times)) * n / c.projection_frames
            small_df = timing.compare({fmt: ld}, epoch_examples=(n,), num_batches=num_batches, warmup=warmup,
                                      rounds=rounds)
            projected = float(small_df[f"epoch_s_{n}"].iloc[0])
            timed = int(small_df["examples"].iloc[0])
            self.rows.append(_row(fmt, "warm", n, c.dtype, projected, False,
                                  f"projected as the default bench does, from {c.projection_frames:,} frames: "
                                  f"{rounds} rounds of {warmup} warm-up and {num_batches} "
                                  f"timed batches ({timed:,} frames timed)", "memory", n / projected / self.gather))
            full = next(r for r in self.found if r["variant"] == fmt and r["state"] == "warm")
            checks[fmt] = {"projected_s": projected, "measured_s": full["epoch_s"],
                           "error": projected / full["epoch_s"] - 1,
                           "whole_small_epochs_projected_s": whole,
                           "whole_small_epochs_error": whole / full["epoch_s"] - 1}
        self.log("projection check (the default bench's method): " + "; ".join(
            f"{k} projected {v['projected_s']:.1f} s vs measured {v['measured_s']:.1f} s ({v['error']:+.0%}; "
            f"from whole {c.projection_frames:,}-frame epochs {v['whole_small_epochs_projected_s']:.1f} s, "
            f"{v['whole_small_epochs_error']:+.0%})" for k, v in checks.items()))
        return checks

    def head(self) -> None:
        """The head, trained from a feature cache of every frame, warm and cold."""
        c, n, index = self.c, self.n, self.index
        cache, how = feature_cache(index, batch_size=c.batch_size, skip_extraction=c.skip_extraction,
                                    workdir=c.workdir, progress=self.progress, log=self.log)
        self.info["features"] = how
        head = audio.compile_classifier(audio.head(index.num_classes, embedding_dim=cache.dim, seed=0),
                                        steps_per_execution=features.DEFAULT_STEPS_PER_EXECUTION)
        feat_files = store_files(cache.folder, cache.manifest)
        read_through(feat_files)
        t0 = time.perf_counter()
        warm_cache = features.FeatureCache.open(cache.folder)
        data = features.head_loader(warm_cache, batch_size=c.batch_size, shuffle=True, seed=c.seed)
        load_s = time.perf_counter() - t0
        fit = timing.fit(head, data, epochs=1 + c.warm_epochs, examples=n, wait=False)  # the first traces the step
        warm_times = [float(t) for t in fit["seconds"].iloc[1:]]
        warm_s = float(np.median(warm_times))
        del data, warm_cache
        gc.collect()
        evict(feat_files)
        t0 = time.perf_counter()
        cold_cache = features.FeatureCache.open(cache.folder)
        data = features.head_loader(cold_cache, batch_size=c.batch_size, shuffle=True, seed=c.seed)
        cold_load = time.perf_counter() - t0
        fit = timing.fit(head, data, epochs=1, examples=n, wait=False)
        cold_s = cold_load + float(fit["seconds"].iloc[-1])
        del data, cold_cache
        what = f"{how['kind']} features, {cache.dim}-d {cache.dtype}"
        self.rows.append(_row("head_from_cache", "warm", n, c.dtype, warm_s, True,
                              f"the median of {len(warm_times)} whole training epochs of {n:,} frames "
                              f"({', '.join(f'{t:.1f}' for t in warm_times)} s; {what}; the first, traced, epoch "
                              f"and loading the cache into RAM, {load_s:.1f} s, not counted)"))
        self.rows.append(_row("head_from_cache", "cold", n, c.dtype, cold_s, True,
                              f"reading the cache from disk ({cold_load:.1f} s) and a whole training epoch of "
                              f"{n:,} frames ({what})"))
        self.log(f"  head from the cache: warm {warm_s:.1f} s, cold {cold_s:.1f} s ({what})")

    def generator(self) -> None:
        """The user's generator, over a bounded sample (its files warm), projected."""
        c, n = self.c, self.n
        g = min(c.generator_frames, n)
        sample_index = self.index.subset(np.arange(g))
        read_through(sample_index.files)
        gen = make_loader("generator", sample_index, batch_size=c.batch_size, shuffle=True, seed=c.seed)
        got, s, _ = epoch(gen, expected=g, labels=sample_index.labels)
        self.rows.append(_row("generator", "warm", n, c.dtype, s * n / got, False,
                              f"projected from a whole epoch of a {got:,}-frame sample"))
        self.log(f"  generator: {got / s:,.0f} frames/s over {got:,} frames")


# --------------------------------------------------------------------------- command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--frames", type=positive_int, default=EPOCH, help="frames to generate and measure (1,000,000)")
    p.add_argument("--dtype", choices=["float16", "float32"], default="float16",
                   help="of the data and the stores (float16: half the bytes; loaders deliver float32)")
    p.add_argument("--batch-size", type=positive_int, default=256, help="global batch (default 256, the user's)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated data and of the epoch orders (default 0)")
    p.add_argument("--skip-extraction", action="store_true",
                   help="do not run the backbone over every frame (~20 min on 2 cores): use its cache if "
                        "built, else stand-in features of the same shape")
    p.add_argument("--generator-frames", type=positive_int, default=2_000,
                   help="the generator's bounded sample (projected)")
    p.add_argument("--random-seconds", type=float, default=60.0,
                   help="cap on the cold fully-random memmap epoch (then projected)")
    p.add_argument("--projection-frames", type=positive_int, default=PROJECTION_FRAMES,
                   help="the basis of the projections checked against the measured epochs")
    p.add_argument("--warm-epochs", type=positive_int, default=WARM_EPOCHS,
                   help="whole warm epochs per warm row, their median reported (3)")
    p.add_argument("--workers", type=positive_int, default=None, help="parallel writers of the data")
    p.add_argument("--workdir", type=Path, default=None, help="where data, stores and caches go (kit cache)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")


def register(bench_sub) -> None:
    p = bench_sub.add_parser("scale", help="whole epochs at the user's size, warm and cold, against the "
                                           "disk's and memory's limits")
    add_arguments(p)
    p.set_defaults(func=main)


def config_from_args(args) -> ScaleConfig:
    return ScaleConfig(frames=args.frames, dtype=args.dtype, batch_size=args.batch_size, seed=args.seed,
                       skip_extraction=args.skip_extraction, generator_frames=args.generator_frames,
                       random_seconds=args.random_seconds, projection_frames=args.projection_frames,
                       warm_epochs=args.warm_epochs, workdir=args.workdir, workers=args.workers)


def main(args) -> int:
    res = run(config_from_args(args), progress=not args.no_progress)
    show(res)
    save(res, args.json)
    return 0


# --------------------------------------------------------------------------- the epoch order (notebook 03)


def order_randomness(rows: np.ndarray, *, batch_size: int, n: int, previous: np.ndarray | None = None) -> dict:
    """How random one epoch's order is, in numbers (notebook 03).

    Returns:
        ``batch_span``: the median stretch of the file a batch draws from, as a fraction of
        the file (about 1 for a fully random order, the window's share for a block order);
        ``neighbours_kept``: the share of frames whose next frame in the epoch is within
        ``batch_size`` rows of it in the file (0 for random, near 1 for file order);
        ``batch_mates_kept`` (with ``previous``, the epoch before): the share of frame pairs
        sharing a batch in both epochs, against the share a fully random order keeps.
    """
    rows = np.asarray(rows)
    batches = [rows[i:i + batch_size] for i in range(0, len(rows), batch_size)]
    spans = [(b.max() - b.min() + 1) / n for b in batches if len(b) > 1]
    out = {"batch_span": float(np.median(spans)),
           "neighbours_kept": float(np.mean(np.abs(np.diff(rows)) <= batch_size))}
    if previous is not None:
        def batch_of(order):
            b = np.empty(n, np.int64)
            b[np.asarray(order)] = np.arange(len(order)) // batch_size
            return b

        now, before = batch_of(rows), batch_of(previous)
        rng = np.random.default_rng(0)
        a, c = rng.integers(0, n, 200_000), rng.integers(0, n, 200_000)
        together = (before[a] == before[c]) & (a != c)
        kept = float(np.mean(now[a][together] == now[c][together])) if together.any() else 0.0
        out["batch_mates_kept"] = kept
        out["batch_mates_kept_if_random"] = batch_size / n
    return out


def epoch_orders(order: str, n: int, *, batch_size: int, seed: int = 0, epochs: int = 2, **blocks) -> list:
    """The row order of ``epochs`` successive epochs of the memmap variant's ``order``
    (``"random"`` or ``"blocks"``, with ``block``/``window`` in ``blocks``), as arrays."""
    if order == "blocks":
        ds = block_order_dataset(n, batch_size, seed=seed, **blocks)
    elif order == "random":
        import tensorflow as tf  # heavy: python -m kit --help imports this module

        ds = tf.data.Dataset.range(n).shuffle(n, seed=seed, reshuffle_each_iteration=True).batch(batch_size)
    else:
        raise ValueError(f"order must be 'random' or 'blocks', got {order!r}")
    return [np.concatenate([b.numpy() for b in ds]) for _ in range(epochs)]
