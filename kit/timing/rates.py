"""Measuring batch sources: throughput and latency (``measure``), loaders compared interleaved
(``compare``), a rate projected to an epoch (``project_epoch``). No TensorFlow here.
"""

from __future__ import annotations

import math
import os
import resource
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from kit.timing.batches import batch_size_of, iterate
from kit.util import check_int, format_duration

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss_mb() -> float:
    """Resident set size of this process now, in MB (peak so far where /proc is absent)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE / 1e6
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3


@dataclass
class Measurement:
    """What ``measure`` returns. Times are seconds, latencies milliseconds."""

    examples: int
    batches: int
    wall_s: float
    examples_per_s: float
    batches_per_s: float
    latency_p50_ms: float
    latency_p95_ms: float
    peak_rss_mb: float
    warmup_batches: int
    latencies_ms: list = field(default_factory=list, repr=False)
    #: per batch, the time spent waiting for it (``step_s``: the rest of its latency is the step)
    waits_ms: list = field(default_factory=list, repr=False)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("latencies_ms")
        d.pop("waits_ms")
        return d

    def steps(self) -> pd.DataFrame:
        """One row per timed batch: ``wait_s`` (waiting for it) and ``compute_s`` (the rest of its
        latency: the consumer's step), as ``StepTimer.steps()`` gives them (``kit.plots.step_breakdown``)."""
        lat, wait = np.asarray(self.latencies_ms) / 1e3, np.asarray(self.waits_ms) / 1e3
        return pd.DataFrame({"step": np.arange(len(lat)), "wait_s": wait, "compute_s": np.maximum(lat - wait, 0.0)})


def measure(batches: Any, *, num_batches: int | None = None, warmup: int = 2,
            max_seconds: float | None = None, step_s: float = 0.0, min_seconds: float | None = None) -> Measurement:
    """Measures how fast a batch source delivers batches.

    Args:
        batches: any batch source (``kit.timing.batches``); each batch an array or a nested
            tuple/dict whose first leaf has the batch dimension first.
        num_batches: batches to time after the warm-up; ``None`` reads to the end.
        warmup: batches read first and not timed (pipelines fill their buffers).
        max_seconds: stop timing after this long (at least one batch is timed).
        min_seconds: time at least this long: ``num_batches`` is then the fewest batches timed,
            and reading goes on past it until this many seconds have passed (or the source
            ends, or ``max_seconds`` stops it). None: exactly ``num_batches``.
        step_s: a consumer that works this long on each batch before asking for the next, as a
            training step on an accelerator does (a sleep: the CPU stays free for the loader,
            as TensorFlow's tf.data guide simulates it). 0: a consumer that does nothing.

    Returns:
        A ``Measurement``: examples/s, batches/s, latency p50/p95 (time between successive
        batches), the timed wall time, the peak resident memory seen while reading, and per
        batch the time spent waiting for it (``waits_ms``).
    """
    if not step_s >= 0:
        raise ValueError(f"step_s must be zero or positive, got {step_s!r}")
    if num_batches is not None:
        check_int("num_batches", num_batches)
    check_int("warmup", warmup, 0)
    if max_seconds is not None and not max_seconds > 0:
        raise ValueError(f"max_seconds must be positive, got {max_seconds!r}")
    if min_seconds is not None and not min_seconds > 0:
        raise ValueError(f"min_seconds must be positive, got {min_seconds!r}")
    it = iterate(batches)
    peak = rss_mb()
    try:
        for i in range(warmup):
            try:
                next(it)
            except StopIteration:
                raise ValueError(f"source ended during warm-up after {i} batches; lower warmup") from None
        examples = 0
        latencies: list[float] = []
        waits: list[float] = []
        start = last = time.perf_counter()
        while (num_batches is None or len(latencies) < num_batches
               or (min_seconds is not None and last - start < min_seconds)):
            asked = time.perf_counter()
            try:
                batch = next(it)
            except StopIteration:
                break
            got = time.perf_counter()
            waits.append(got - asked)
            examples += batch_size_of(batch)
            peak = max(peak, rss_mb())
            if step_s:
                time.sleep(step_s)  # the training step: the accelerator works, the CPU is free
            now = time.perf_counter()
            latencies.append(now - last)
            last = now
            if max_seconds is not None and now - start >= max_seconds:
                break
        wall = last - start
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()
    if not latencies:
        raise ValueError("source yielded no batches after the warm-up")
    lat_ms = np.asarray(latencies) * 1e3
    return Measurement(examples=examples, batches=len(latencies), wall_s=wall,
                       examples_per_s=examples / wall if wall > 0 else math.inf,
                       batches_per_s=len(latencies) / wall if wall > 0 else math.inf,
                       latency_p50_ms=float(np.percentile(lat_ms, 50)),
                       latency_p95_ms=float(np.percentile(lat_ms, 95)),
                       peak_rss_mb=peak, warmup_batches=warmup, latencies_ms=lat_ms.tolist(),
                       waits_ms=(np.asarray(waits) * 1e3).tolist())


@dataclass(frozen=True)
class Projection:
    """A measured rate projected to a full epoch."""

    examples_per_s: float
    epoch_examples: int
    measured_examples: int
    seconds: float

    @property
    def hours(self) -> float:
        return self.seconds / 3600

    @property
    def basis(self) -> str:
        return (f"{self.measured_examples:,} examples measured at {self.examples_per_s:,.1f}/s, "
                f"projected to {self.epoch_examples:,} examples")

    def __str__(self) -> str:
        return f"{format_duration(self.seconds)} per epoch ({self.basis})"


def project_epoch(examples_per_s: float, epoch_examples: int = 1_000_000, *, measured_examples: int) -> Projection:
    """Projects a rate to one epoch of ``epoch_examples``; ``measured_examples``: how many examples
    the rate was measured on (its basis)."""
    if not examples_per_s > 0:
        raise ValueError(f"examples_per_s must be positive, got {examples_per_s!r}")
    check_int("epoch_examples", epoch_examples)
    check_int("measured_examples", measured_examples)
    return Projection(float(examples_per_s), int(epoch_examples), int(measured_examples),
                      epoch_examples / examples_per_s)


def compare(loaders: Mapping[str, Any], *, baselines: Sequence[str] | str = (),
            num_batches: int | Mapping[str, int] | None = 20, warmup: int = 2, rounds: int = 3,
            max_seconds: float | Mapping[str, float] | None = None, epoch_examples: Sequence[int] = (),
            step_s: float = 0.0, min_seconds: float | Mapping[str, float] | None = None,
            ratio: str = "rates") -> pd.DataFrame:
    """Measures several loaders in one process, interleaved, and compares them.

    Each round measures every loader once, in turn, so slow drifts of a shared machine hit all
    alike; a loader's rate is its examples over its timed seconds summed over the rounds.

    Args:
        loaders: name -> a re-iterable batch source or a zero-argument callable returning one.
        baselines: names of loaders to add an ``x_<name>`` ratio column for.
        num_batches: timed batches per round, one number or per loader (None: to the end).
        warmup: untimed batches before each timed round.
        rounds: how many interleaved rounds.
        max_seconds: per-round time cap, one number or per loader.
        min_seconds: per-round least time, one number or per loader (``measure``): a round then
            times at least ``num_batches`` batches and at least this long, so that a fast loader's
            round is not a few milliseconds that one hiccup of another process moves.
        ratio: what ``x_<baseline>`` is: ``"rates"``, the two rates' ratio; ``"median"``, the median
            of the rounds' ratios (each round's rate over the baseline's in the same round), which a
            hiccup of another process in one round does not move.
        epoch_examples: adds an ``epoch_s_<N>`` column per N: projected epoch seconds.
        step_s: the consumer's work per batch (``measure``): with it, a rate is training steps'
            rate, and ``wait_share`` says what share of the time the consumer waited for input.

    Returns:
        One row per loader: ``variant``, ``examples_per_s``, ``round_min``/``round_max`` (the
        slowest and fastest round), ``batches_per_s``, ``latency_p50_ms``, ``latency_p95_ms``,
        ``peak_rss_mb``, ``examples``, ``batches``, ``wall_s``, then ratios and projections:
        ``x_<baseline>`` (see ``ratio``) with ``x_<baseline>_min`` and ``x_<baseline>_max``,
        the lowest and highest of the rounds' ratios (each round's rate over the baseline's in the
        same round).
    """
    if not loaders:
        raise ValueError("loaders must name at least one loader")
    if isinstance(baselines, str):
        baselines = (baselines,)
    for b in baselines:
        if b not in loaders:
            raise ValueError(f"baseline {b!r} is not among the loaders {list(loaders)}")
    check_int("rounds", rounds)
    if ratio not in ("rates", "median"):
        raise ValueError(f"ratio must be 'rates' or 'median', got {ratio!r}")

    def per(option, name):
        return option.get(name) if isinstance(option, Mapping) else option

    runs: dict[str, list[Measurement]] = {name: [] for name in loaders}
    for _ in range(rounds):
        for name, source in loaders.items():
            runs[name].append(measure(source, num_batches=per(num_batches, name), warmup=warmup,
                                      max_seconds=per(max_seconds, name), step_s=step_s,
                                      min_seconds=per(min_seconds, name)))
    rows = []
    for name, ms in runs.items():
        examples = sum(m.examples for m in ms)
        wall = sum(m.wall_s for m in ms)
        lat = np.concatenate([m.latencies_ms for m in ms])
        per_round = [m.examples_per_s for m in ms]
        rows.append({"variant": name, "examples_per_s": examples / wall if wall > 0 else math.inf,
                     "round_min": min(per_round), "round_max": max(per_round),
                     "batches_per_s": len(lat) / wall if wall > 0 else math.inf,
                     "latency_p50_ms": float(np.percentile(lat, 50)),
                     "latency_p95_ms": float(np.percentile(lat, 95)),
                     "peak_rss_mb": max(m.peak_rss_mb for m in ms), "examples": examples,
                     "batches": len(lat), "wall_s": wall,
                     "wait_share": sum(sum(m.waits_ms) for m in ms) / 1e3 / wall if wall > 0 else math.nan})
    df = pd.DataFrame(rows)
    add_ratios(df, baselines)
    rates = pd.DataFrame({name: [m.examples_per_s for m in ms] for name, ms in runs.items()})  # a column a loader
    for b in baselines:  # each round's ratio to the baseline's rate in the same round: the ratio's spread
        per_round = rates.div(rates[b], axis=0)
        if ratio == "median":
            df[f"x_{b}"] = per_round.median().to_numpy()
        df[f"x_{b}_min"] = per_round.min().to_numpy()
        df[f"x_{b}_max"] = per_round.max().to_numpy()
    for n in epoch_examples:
        df[f"epoch_s_{n}"] = n / df["examples_per_s"]
    return df


def add_ratios(df: pd.DataFrame, baselines: Iterable[str], *, column: str = "examples_per_s",
               key: str = "variant") -> pd.DataFrame:
    """Adds ``x_<baseline>`` columns (in place): each row's rate over the baseline's."""
    for b in baselines:
        base = df.loc[df[key] == b, column]
        if base.empty:
            raise ValueError(f"baseline {b!r} not found in column {key!r}")
        df[f"x_{b}"] = df[column] / float(base.iloc[0])
    return df


def cpu_used(fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, timed: ``(result, wall_s, cpu_s, kernel_s)``, the CPU seconds this
    process used meanwhile and their kernel part."""
    c0, t0 = os.times(), time.perf_counter()
    out = fn(*args, **kwargs)
    wall, c1 = time.perf_counter() - t0, os.times()
    return out, wall, (c1.user - c0.user) + (c1.system - c0.system), c1.system - c0.system


def timed_epoch(loader, *, expected: int, labels: np.ndarray | None = None, max_seconds: float | None = None):
    """Reads one epoch of ``loader``: ``(examples, seconds, whole)``. A whole epoch must deliver
    ``expected`` examples and, given the index's ``labels``, each class as often; with
    ``max_seconds`` the read may stop early (``whole`` False)."""
    counts = None
    n = 0
    classes = int(labels.max()) + 1 if labels is not None else 0
    t0 = time.perf_counter()
    for _x, y in loader:
        y = np.asarray(y)
        n += len(y)
        if labels is not None:
            c = np.bincount(y, minlength=classes)
            counts = c if counts is None else counts + c
        if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
            return n, time.perf_counter() - t0, False
    seconds = time.perf_counter() - t0
    if n != expected:
        raise RuntimeError(f"the epoch delivered {n:,} examples, the index holds {expected:,}")
    if labels is not None and (counts is None
                               or not np.array_equal(counts, np.bincount(labels, minlength=len(counts)))):
        raise RuntimeError("the epoch's labels differ from the index's: some frames came twice or never")
    return n, seconds, True
