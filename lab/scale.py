"""``python -m lab.scale``: whole epochs at the user's size, warm and cold, against the machine's limits.

Every kit bench measures 20,000 frames sitting in the page cache and projects to a million. This
instrument generates the million (or ``--frames``), converts them to the ``memmap`` and ``tfrecord``
stores (and ``arrayrecord`` for ``grain``, where the peers extra is installed) and measures
**whole epochs** through the kit's public loaders (``kit.spectrogram.make_loader``):

* each loader **warm** (its store read into the page cache first; the median of ``--warm-epochs``)
  and **cold** (the median of ``--cold-epochs``, each after the store's pages are evicted; the
  basis says what share each eviction left cached, and ``scale_report.cold_warning`` flags a cold
  figure that was not one);
* ``memmap`` in block order and, cold, in the fully random order (one capped epoch, projected);
* the head trained from a feature cache of every frame, warm and cold; the generator over a
  bounded sample, projected;
* the limits, in the same run (``lab.scale_limits``): each store's own files read cold just
  before and after its cold epochs, the disk's sequential read (``lab.pagecache.cache_through``)
  and the page-in limit (``lab.pagecache.page_in``: each page also touched once), and the memory
  gather rate (random batches from a sample held in RAM). Each cold epoch is a
  ``fraction_of_limit`` of its store's page-in limit, each warm one of the memory gather;
* one pass over the tfrecord store's records with nothing decoded, warm and cold
  (``scale_data.read_records``): the reading alone, against which ``scale_report`` names the
  stage that holds a target short;
* the epoch projected from 20,000 frames the way ``bench spectrogram`` projects, beside the
  measured one (``info["projection_check"]``).

One row per measured thing, in ``scale_report.COLUMNS``. The data, stores and feature cache are
built once under ``--workdir`` (the kit cache) and reused; the free disk space is checked first.
``run(ScaleConfig(...))`` returns a ``kit.bench.BenchResult``.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import tensorflow as tf

from kit import timing
from kit.bench import BenchResult
from kit.bench import spectrogram as bench_spectrogram
from kit.bench.options import check_int, check_one_of, check_positive, option, optional_int, optional_path
from kit.cases import registry
from kit.models import audio
from kit.spectrogram import convert, features, make_loader
from kit.spectrogram.peers import available as grain_available
from kit.store.files import load_npy
from kit.store.folder import check_free_space, default_workdir
from kit.system.pagecache import cached_fraction, evict, proactive_reclaim
from kit.timing.rates import cpu_used
from kit.timing.rates import timed_epoch as epoch
from kit.util import positive_int, usable_cpus
from lab.pagecache import free_page_reporting, read_through
from lab.scale_data import (
    FRAME_SHAPE,
    data_folder,
    feature_cache,
    frame_bytes,
    make_data,
    memory_gather_rate,
    needed_bytes,
    read_records,
    read_records_streamed,
    store_files,
)
from lab.scale_data import row as _row
from lab.scale_limits import Limits
from lab.scale_report import (
    COLUMNS,
    STAGED,
    TARGETS,
    cold_stage,
    cold_warning,
    show,
    spread,
    targets_met,
    warm_stage,
    warm_warning,
)

__all__ = ["EPOCH", "PROJECTION_FRAMES", "WARM_EPOCHS", "COLD_EPOCHS", "COLUMNS", "ScaleConfig", "run", "show",
           "main"]

_SPECTROGRAM = registry.scale_of("spectrogram")  # the users' scale, declared by the case

#: The default spectrogram bench's size: the basis of the scale bench's checked projections.
PROJECTION_FRAMES = 20_000
#: Whole warm epochs per warm row, their median reported (warm epochs on 2 shared cores vary).
WARM_EPOCHS = 3
#: Whole cold epochs per cold row (the fully random memmap order: one), each after an eviction,
#: their median reported with their spread (cold epochs vary with the disk as well as the cores).
COLD_EPOCHS = 3


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
        cold_epochs: whole cold epochs per cold row of ``memmap`` (block order) and
            ``tfrecord``, each after an eviction; the row is their median, the basis lists
            each, their spread and what each eviction left cached.
        workers: parallel writers of the data.
        peers: measure the ``grain`` variant (Google Grain over an ArrayRecord store of the
            same frames: its store converted once, cold between its own limits' reads, then
            warm) where the peers extra is installed; the info says why not otherwise.
        workdir: where data, stores and caches go (the kit cache).
    """

    frames: int = option(_SPECTROGRAM.examples, "frames to generate and measure (1,000,000)", type=positive_int)
    dtype: str = option("float16", "of the data and the stores (float16: half the bytes; loaders deliver float32)",
                        choices=("float16", "float32"))
    batch_size: int = option(256, "global batch (default 256, the user's)", type=positive_int)
    seed: int = option(0, "seed of the generated data and of the epoch orders (default 0)", type=int)
    skip_extraction: bool = option(False, "do not run the backbone over every frame (~20 min on 2 cores): use its "
                                          "cache if built, else stand-in features of the same shape",
                                   action="store_true")
    generator_frames: int = option(2_000, "the generator's bounded sample (projected)", type=positive_int)
    random_seconds: float = option(60.0, "cap on the cold fully-random memmap epoch (then projected)", type=float)
    projection_frames: int = option(PROJECTION_FRAMES, "the basis of the projections checked against the "
                                                             "measured epochs", type=positive_int)
    warm_epochs: int = option(WARM_EPOCHS, "whole warm epochs per warm row, their median reported (3)",
                              type=positive_int)
    cold_epochs: int = option(COLD_EPOCHS, "whole cold epochs per cold row, each after an eviction, their "
                                                 "median reported (3)", type=positive_int)
    workers: int | None = option(None, "parallel writers of the data", type=positive_int)
    peers: bool = option(True, "leave out the grain variant (measured where the peers extra is installed)",
                         flag="--no-peers", action="store_false")
    workdir: Path | None = option(None, "where data, stores and caches go (kit cache)", type=Path)

    def __post_init__(self):
        check_one_of("dtype", self.dtype, ("float16", "float32"))
        for name in ("frames", "batch_size", "generator_frames", "projection_frames", "warm_epochs", "cold_epochs"):
            check_int(name, getattr(self, name))
        check_int("seed", self.seed, 0)
        check_positive("random_seconds", self.random_seconds)
        optional_int("workers", self.workers)
        optional_path(self, "workdir")
        if not isinstance(self.peers, bool):
            raise ValueError(f"peers must be True or False, got {self.peers!r}")


EPOCH = registry.scale_of("spectrogram").examples  # the users' scale, declared by the case


def _worst(shares: list) -> float | None:
    """The largest share the evictions left cached; None where one could not be asked."""
    return None if not shares or None in shares else max(shares)


# --------------------------------------------------------------------------- the run


def run(config: ScaleConfig, *, progress=True, log=print) -> BenchResult:
    """Generates, converts and measures.

    Args:
        config: what to generate and measure.
        progress: progress bars.
        log: where progress lines go.

    Returns:
        A ``BenchResult`` (rows in ``COLUMNS``, and the info).
    """
    rows, info = _Run(config, progress=progress, log=log).measure()
    return BenchResult("scale", rows, config, info)


class _Run:
    """One run of the bench: its data and stores, and what it has measured so far."""

    def __init__(self, config: ScaleConfig, *, progress, log):
        self.c, self.progress, self.log = config, progress, log
        self.rows: list[dict] = []  # finished rows
        self.found: list[dict] = []  # the loaders' epochs, judged at the end

    def measure(self) -> tuple[pd.DataFrame, dict]:
        self.prepare()
        info = self.info
        self.memmap_epochs()
        self.gather = self.memory_gather()
        self.tfrecord_epochs()
        self.grain_epochs()
        self.rows[:0] = self.limits.rows(self.n, self.c.dtype)  # the limit rows first in the table
        info.update(self.limits.info())
        reclaim = proactive_reclaim()
        self.loader_rows(reclaim)
        checks = self.projections()
        info["projection_check"] = checks
        self.head()
        self.generator()
        df = pd.DataFrame(self.rows, columns=COLUMNS)
        info["memory_gather_frames_per_s"] = self.gather
        info["tfrecord_read"] = self.read_pass
        info["grain"] = self.grain
        info["cached_before_warm"] = {r["variant"]: r["cached_before"] for r in self.found if r["state"] == "warm"}
        info["reclaim"] = reclaim
        info["free_page_reporting"] = free_page_reporting()
        cold = [r for r in self.found if r["state"] == "cold"]
        info["cold_epochs_s"] = {r["variant"]: r["times"] for r in cold}
        info["cold_spread"] = {r["variant"]: spread(r["times"]) if len(r["times"]) > 1 else None for r in cold}
        info["cached_after_evicts"] = {r["variant"]: r["cached_after"] for r in cold}
        info["cached_after_evict"] = {r["variant"]: _worst(r["cached_after"]) for r in cold}
        info["cold_fraction_of_disk"] = self.of_disk
        verdicts = targets_met(df, checks, info["cached_after_evict"])
        info["short"] = self.stages(df, verdicts)  # at any size: what holds a figure short of its target
        info["met"] = verdicts if self.n >= EPOCH else None
        tf.keras.backend.clear_session()
        return df, info

    def prepare(self) -> None:
        """The free space checked, the data generated (or found) and both stores converted."""
        c, log = self.c, self.log
        frames, dtype, seed, workdir = c.frames, c.dtype, c.seed, c.workdir
        root = Path(workdir) if workdir is not None else default_workdir()
        need = needed_bytes(frames, dtype, seed=seed, workdir=workdir)
        parts = ", ".join(f"{k} {v / 1e9:.1f} GB" for k, v in need.items() if v)
        check_free_space(root, sum(need.values()),
                               what=f"bench scale at {frames:,} {dtype} frames ({parts or 'all built'})")
        fb = frame_bytes(dtype)
        log(f"data: {frames:,} frames of {FRAME_SHAPE} {dtype} ({frames * fb / 1e9:.1f} GB) "
            f"under {data_folder(frames, dtype, seed, workdir)}")
        t0 = time.perf_counter()
        self.index = make_data(frames, dtype, seed=seed, workdir=workdir, workers=c.workers, progress=self.progress)
        log(f"  ready in {time.perf_counter() - t0:.0f} s ({len(self.index.files):,} files)")
        self.n, self.labels = len(self.index), self.index.labels
        self.info: dict[str, Any] = {"frames": self.n, "dtype": dtype, "batch_size": c.batch_size,
                                     "warm_epochs": c.warm_epochs, "cold_epochs": c.cold_epochs, "targets": TARGETS}
        self.stores = {}
        for fmt in ("memmap", "tfrecord"):
            t0 = time.perf_counter()
            folder, m = convert(self.index, fmt, workdir=workdir, store_dtype=dtype, progress=self.progress)
            self.stores[fmt] = (folder, m, store_files(folder, m))
            log(f"  {fmt} store: {folder} ({sum(s['bytes'] for s in m.shards) / 1e9:.1f} GB, "
                f"ready in {time.perf_counter() - t0:.0f} s)")
        self.grain = self.grain_store()
        # The limits of reading each store cold are reads of its own files (lab.scale_limits).
        self.frames_file = self.stores["memmap"][0] / "frames.npy"
        self.limits = Limits({"memmap": [self.frames_file], "tfrecord": self.stores["tfrecord"][2],
                              **({"arrayrecord": self.stores["arrayrecord"][2]} if "arrayrecord" in self.stores
                                 else {})}, log=log)
        self.store_bytes = {fmt: sum(p.stat().st_size for p in files) for fmt, files in self.limits.reference.items()}

    def grain_store(self) -> dict:
        """The ArrayRecord store of the grain variant, converted once (or found), where the peers
        extra is installed and ``peers`` asks for it; returns what ``info["grain"]`` says."""
        why = grain_available() if self.c.peers else "not asked for (--no-peers)"
        if why is not None:
            self.log(f"grain: not measured: {why}")
            return {"measured": False, "why": why}
        t0 = time.perf_counter()
        folder, m = convert(self.index, "arrayrecord", workdir=self.c.workdir, store_dtype=self.c.dtype,
                            progress=self.progress)
        self.stores["arrayrecord"] = (folder, m, store_files(folder, m))
        self.log(f"  arrayrecord store: {folder} ({sum(s['bytes'] for s in m.shards) / 1e9:.1f} GB, "
                 f"ready in {time.perf_counter() - t0:.0f} s)")
        return {"measured": True, "store": str(folder)}

    def loader(self, fmt, ix=None, **kw):
        c = self.c
        return make_loader(fmt, self.index if ix is None else ix, batch_size=c.batch_size, shuffle=True,
                           seed=c.seed, workdir=c.workdir, store_dtype=c.dtype, progress=False, **kw)

    def epochs(self, variant, state, ld, limit, files, basis_extra="", repeats=1, **kw) -> dict:
        """``repeats`` whole epochs of a loader, as a dict for ``loader_rows``: their median,
        each epoch's time, and per epoch (cold) the share of ``files`` each eviction before it
        left cached, or (warm) the share cached as it started. ``max_seconds`` in ``kw`` caps
        an epoch (then projected, and the only one)."""
        n = self.n
        gc.collect()
        times: list[float] = []
        cached_after: list = []  # cold: what each eviction left in the page cache (mincore)
        cached_before: list = []  # warm: the share of the store's pages cached as each epoch starts
        wall = cpu = kernel = 0.0
        for _ in range(repeats):
            if state == "cold":
                cached_after.append(evict(files))
            else:
                cached_before.append(cached_fraction(files))
            (got, s, whole), w, c, k = cpu_used(epoch, ld, expected=n, labels=self.labels, **kw)
            wall, cpu, kernel = wall + w, cpu + c, kernel + k
            times.append(s if whole else s * n / got)
            if not whole:
                break
        if cached_after and None not in cached_after:
            basis_extra += (f"; {', '.join(f'{a:.1%}' for a in cached_after)} of the store's pages cached after "
                            f"{'the eviction' if len(cached_after) == 1 else 'each eviction'}")
        if not whole:
            basis = f"projected from {got:,} frames read in {s:.0f} s (capped){basis_extra}"
        elif len(times) == 1:
            basis = f"a whole epoch of {n:,} frames{basis_extra}"
        else:
            each = ", each after an eviction" if state == "cold" else ""
            basis = (f"the median of {len(times)} whole epochs of {n:,} frames{each} "
                     f"({', '.join(f'{t:.1f}' for t in times)} s; spread {spread(times):.0%} of the median)"
                     f"{basis_extra}")
        return {"variant": variant, "state": state, "epoch_s": float(np.median(times)), "measured": whole,
                "limit": limit, "cpu_cores": cpu / wall, "kernel_cores": kernel / wall, "times": times,
                "cached_after": cached_after, "cached_before": cached_before, "basis": basis}

    def memmap_epochs(self) -> None:
        """memmap, block order: cold between its limits' reads, then the fully random order,
        cold; then warm."""
        c, mm_files = self.c, self.stores["memmap"][2]
        self.limits.read("memmap", "before")
        self.found.append(self.epochs("memmap", "cold", self.loader("memmap", order="blocks"), "page-in", mm_files,
                                      " (block order)", repeats=c.cold_epochs))
        self.limits.read("memmap", "after")
        self.found.append(self.epochs("memmap_random", "cold", self.loader("memmap", order="random"), "page-in",
                                      mm_files, " (fully random order)", max_seconds=c.random_seconds))
        read_through(mm_files)
        self.found.append(self.epochs("memmap", "warm", self.loader("memmap", order="blocks"), "memory", mm_files,
                                      " (block order)", repeats=c.warm_epochs))
        self.log("  " + "; ".join(f"{r['variant']} {r['state']} {r['epoch_s']:.1f} s" for r in self.found[-3:]))

    def memory_gather(self) -> float:
        """The memory gather limit, from a sample of the store held in RAM: frames per second."""
        n, batch_size = self.n, self.c.batch_size
        sample_n = min(n, 65_536)
        sample = np.array(load_npy(self.frames_file)[:sample_n])
        got, s = memory_gather_rate(sample, batch_size=batch_size)
        del sample
        gather = got / s
        self.log(f"memory gather (warm): {gather:,.0f} frames/s")
        self.rows.append(_row("memory_gather", "warm", n, self.c.dtype, n / gather, False,
                              f"projected from {got:,} frames gathered at random in batches of {batch_size} from "
                              f"{sample_n:,} frames in RAM", "memory", 1.0))
        return gather

    def tfrecord_epochs(self) -> None:
        """tfrecord, cold between its limits' reads (the memmap store's pages dropped, to make
        room), one cold pass over its records in shard order (a read-ahead stream beside it),
        then warm, then one warm pass over its records with nothing decoded."""
        c, (folder, manifest, tf_files) = self.c, self.stores["tfrecord"]
        evict(self.stores["memmap"][2])
        self.limits.read("tfrecord", "before")
        self.found.append(self.epochs("tfrecord", "cold", self.loader("tfrecord"), "page-in", tf_files,
                                      repeats=c.cold_epochs))
        self.limits.read("tfrecord", "after")
        # Its records alone, read cold in shard order, the page-in limit's read-ahead streaming
        # beside them: what the reading costs when its pages are asked for in time (cold_stage).
        evict(tf_files)
        cold_read, _, _, _ = cpu_used(read_records_streamed, folder, manifest, tf_files)
        read_through(tf_files)
        self.found.append(self.epochs("tfrecord", "warm", self.loader("tfrecord"), "memory", tf_files,
                                      repeats=c.warm_epochs))
        cached = cached_fraction(tf_files)
        (records, nbytes, s), wall, cpu, _ = cpu_used(read_records, folder, manifest)
        self.read_pass = {"records": records, "bytes": nbytes, "seconds": s, "cpu_cores": cpu / wall,
                          "cached_before": cached, "cold_seconds": cold_read[2], "cold_bytes": cold_read[1]}
        self.log("  " + "; ".join(f"{r['variant']} {r['state']} {r['epoch_s']:.1f} s" for r in self.found[-2:])
                 + f"; its records alone (nothing decoded) {s:.1f} s warm, {cold_read[2]:.1f} s cold in shard "
                 f"order with a read-ahead stream beside them")

    def grain_epochs(self) -> None:
        """grain, where measured: cold between its store's limits' reads (the TFRecord store's
        pages dropped, to make room), then warm; the loader's threads and processes in the info."""
        if "arrayrecord" not in self.stores:
            return
        c, files = self.c, self.stores["arrayrecord"][2]
        evict(self.stores["tfrecord"][2])
        self.limits.read("arrayrecord", "before")
        cold = self.loader("grain")
        self.grain.update(cold.settings())
        self.found.append(self.epochs("grain", "cold", cold, "page-in", files, repeats=c.cold_epochs))
        self.limits.read("arrayrecord", "after")
        read_through(files)
        self.found.append(self.epochs("grain", "warm", self.loader("grain"), "memory", files,
                                      repeats=c.warm_epochs))
        self.log("  " + "; ".join(f"{r['variant']} {r['state']} {r['epoch_s']:.1f} s" for r in self.found[-2:]))

    def loader_rows(self, reclaim: str | None) -> None:
        """The loaders' epochs as rows, each against its limit, with what its basis warns of."""
        n, limits = self.n, self.limits
        self.of_disk: dict[str, float] = {}
        for r in self.found:
            fmt = {"tfrecord": "tfrecord", "grain": "arrayrecord"}.get(r["variant"], "memmap")
            basis = r["basis"]
            if r["state"] == "cold":
                rate, page_in = self.store_bytes[fmt] / r["epoch_s"], limits.rate("page-in", fmt)
                frac, disk = rate / page_in, limits.rate("disk", fmt)
                self.of_disk[r["variant"]] = rate / disk
                each = [self.store_bytes[fmt] / t / page_in for t in r["times"]]
                over = f"; {min(each):.2f}-{max(each):.2f} over the epochs" if len(each) > 1 else ""
                basis += (f"; {rate / 1e6:,.0f} MB/s: {frac:.2f} of the {fmt} store's page-in limit "
                          f"({page_in / 1e6:,.0f} MB/s{over}), {rate / disk:.2f} of the disk's sequential read "
                          f"({disk / 1e6:,.0f} MB/s)")
                warning = cold_warning(frac, _worst(r["cached_after"]))
                basis += f" ({warning})" if warning else ""
            else:
                frac = n / r["epoch_s"] / self.gather
                if r["cached_before"] and None not in r["cached_before"]:
                    basis += ("; the share of the store's pages cached as each epoch started: "
                              f"{', '.join(f'{c:.1%}' for c in r['cached_before'])}")
                    warning = warm_warning(r["cached_before"], reclaim)
                    basis += f" ({warning})" if warning else ""
                if r["variant"] == "tfrecord":
                    p = self.read_pass
                    basis += (f"; its records alone, read warm with nothing decoded, shuffled or batched: "
                              f"{p['seconds']:.1f} s ({p['bytes'] / p['seconds'] / 1e6:,.0f} MB/s, "
                              f"{p['cpu_cores']:.2f} CPU-s per s)")
            self.rows.append(_row(r["variant"], r["state"], n, self.c.dtype, r["epoch_s"], r["measured"], basis,
                                  r["limit"], frac, r["cpu_cores"]))

    def stages(self, df: pd.DataFrame, verdicts: dict) -> dict:
        """For each target of ``STAGED`` missed (its verdict False), the stage that holds it back,
        named from this run's figures: added to its row's basis in ``df``; returns
        ``{"<variant> <state>": sentence}``."""
        short = {}
        for target, (variant, state) in STAGED.items():
            if verdicts.get(target) is not False:
                continue
            r = next(f for f in self.found if f["variant"] == variant and f["state"] == state)
            if state == "cold":
                w = next(f for f in self.found if f["variant"] == variant and f["state"] == "warm")
                sentence = cold_stage(variant, cold_s=r["epoch_s"], warm_s=w["epoch_s"], cpu_cores=r["cpu_cores"],
                                      kernel_cores=r["kernel_cores"], warm_kernel_cores=w["kernel_cores"],
                                      usable=usable_cpus(), store_bytes=self.store_bytes[variant],
                                      page_in_bytes_per_s=self.limits.rate("page-in", variant),
                                      disk_bytes_per_s=self.limits.rate("disk", variant),
                                      read_cold_bytes_per_s=(self.read_pass["cold_bytes"] / self.read_pass["cold_seconds"]
                                                             if variant == "tfrecord" else None))
            else:
                sentence = warm_stage(warm_s=r["epoch_s"], read_s=self.read_pass["seconds"], frames=self.n,
                                      gather_frames_per_s=self.gather)
            short[f"{variant} {state}"] = sentence
            sel = (df["variant"] == variant) & (df["state"] == state) & df["measured"]
            df.loc[sel, "basis"] = df.loc[sel, "basis"] + f"; short of its target ({target}): {sentence}"
        return short

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


def main(argv=None) -> int:
    """``python -m lab.scale [--frames N] ...``: the run, its table, the ledger and ``--json``."""
    from lab.command import main as command

    return command("scale", ScaleConfig, run, show, argv, description=__doc__.split("\n")[0], progress=True)


if __name__ == "__main__":
    raise SystemExit(main())
