"""Trying a fix: does the fixed pipeline yield the same elements, and is it faster, measured interleaved with the original?"""

from __future__ import annotations

import hashlib
import math
import statistics
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from kit import timing
from kit.doctor.sources import PROGRESS, loop
from kit.timing.batches import iterate

#: A fix counts as a gain only when every round was faster and the median by at least this much.
MIN_GAIN = 1.05
#: A median gain this large is real even where one round was not faster (a busy round may dip under 1x).
CLEAR_GAIN = 1.25


def _digest(arrays) -> str:
    h = hashlib.blake2b(digest_size=12)
    for v in arrays:
        h.update(np.ascontiguousarray(v).tobytes())
    return h.hexdigest()


def example_digests(element, *, labels_only: bool = False) -> list[str]:
    """One digest per example of a batch (its leaves' rows, or only the last leaf's with
    ``labels_only``); one for the whole element when its leaves do not share a first dimension."""
    leaves = [np.asarray(v) for v in tf.nest.flatten(element)]
    if labels_only:  # the labels (the last leaf); with none, only the count of examples
        leaves = leaves[-1:] if len(leaves) > 1 else [np.zeros(len(leaves[0]) if leaves[0].ndim else 1)]
    rows = {int(v.shape[0]) if v.ndim else -1 for v in leaves}
    if len(rows) != 1 or -1 in rows:
        return [_digest(leaves)]
    return [_digest(v[i] for v in leaves) for i in range(next(iter(rows)))]


def epoch_digests(ds, *, labels_only: bool, deadline: float) -> list[str] | None:
    """The digests of one epoch of ``ds`` in order, or None when it did not end by ``deadline``
    (``time.perf_counter()``) or does not end (infinite)."""
    if hasattr(ds, "cardinality") and int(ds.cardinality()) == -1:  # INFINITE
        return None
    out: list[str] = []
    PROGRESS.start("an epoch read to check a fix")
    for element in iterate(ds):
        PROGRESS.arrived()
        out += example_digests(element, labels_only=labels_only)
        if time.perf_counter() > deadline:
            return None
    return out


@dataclass(frozen=True)
class Check:
    """Whether a fixed pipeline yields what the original yields."""

    same: bool | None  # None: not checked
    how: str  # what was compared, or why nothing was


# The original's digests, read once for all the candidates of one diagnosis: (id, random) -> (original, digests).
_ORIGINAL: dict = {}


def same_elements(original, fixed, *, ordered: bool, random: bool, seconds: float) -> Check:
    """One epoch of each compared, example by example: the same sequence where the original is
    deterministic (``ordered``), the same multiset where it shuffles; where it draws random
    numbers, the labels' multiset (the last leaf of each element) and the count."""
    deadline = time.perf_counter() + seconds
    key = (id(original), random)
    of, a = _ORIGINAL.get(key, (None, None))
    if a is None or of is not original:
        a = epoch_digests(original, labels_only=random, deadline=deadline)
        if a is not None:
            _ORIGINAL.clear()
            _ORIGINAL[key] = (original, a)
    try:
        b = epoch_digests(fixed, labels_only=random, deadline=deadline + seconds) if a is not None else None
    except Exception as e:  # noqa: BLE001  (TensorFlow's many error types: the fix does not run here)
        return Check(False, f"the fixed pipeline fails: {type(e).__name__}: {' '.join(str(e).split())[:200]}")
    if a is None or b is None:
        return Check(None, f"not checked: an epoch did not end within {seconds:.0f} s, or never ends")
    what = "labels and count, the pipeline drawing random numbers," if random else "examples"
    if ordered and not random:
        same = a == b
        if not same and Counter(a) == Counter(b):
            # The same examples in another order: where the original's own order changes from epoch to
            # epoch (a generator that shuffles inside), order is no test.
            again = epoch_digests(original, labels_only=False, deadline=deadline + 2 * seconds)
            if again is not None and again != a:
                return Check(True, f"the same {len(a):,} {what} per epoch, as a multiset: the original's own "
                                   "order changes from epoch to epoch")
        return Check(same, f"{len(a):,} {what} in the same order" if same else
                     f"the {what} differ or come in another order: {len(a):,} against {len(b):,}")
    same = Counter(a) == Counter(b)
    return Check(same, f"the same {len(a):,} {what} per epoch, as a multiset" if same else
                 f"the {what} differ: {len(a):,} against {len(b):,} per epoch")


def loader_rate(ds, seconds: float) -> float:
    """Examples/s of ``ds`` read for ``seconds`` (epoch after epoch), the first batch left out."""
    return timing.measure(loop(ds, []), warmup=1, max_seconds=seconds).examples_per_s


def warm(ds, seconds: float) -> bool:
    """Reads one epoch of ``ds`` (a cache fills); False when it did not end within ``seconds``."""
    deadline = time.perf_counter() + seconds
    PROGRESS.start("an epoch read to fill a cache")
    for _ in iterate(ds):
        PROGRESS.arrived()
        if time.perf_counter() > deadline:
            return False
    return True


@dataclass(frozen=True)
class Gain:
    """A fix's measured gain over the original: each round's fixed over original, interleaved."""

    median: float
    low: float  # the slowest round's
    high: float  # the fastest round's
    rounds: int

    @property
    def real(self) -> bool:
        """A gain beyond the noise: a median of at least ``MIN_GAIN`` with every round faster, or of ``CLEAR_GAIN``."""
        return self.median >= MIN_GAIN and (self.low > 1.0 or self.median >= CLEAR_GAIN)

    def text(self) -> str:
        return f"{self.median:,.2f}x (rounds {self.low:,.2f}-{self.high:,.2f}x, {self.rounds} rounds)"


def ab(original, fixed, *, seconds: float, rounds: int = 3, rate=loader_rate) -> Gain:
    """The fixed pipeline against the original, A, B, A, B ... over ``rounds`` rounds of
    ``seconds`` each side; ``rate(source, seconds)`` measures one side."""
    ratios = []
    for _ in range(rounds):
        a, b = rate(original, seconds), rate(fixed, seconds)  # A then B
        ratios.append(b / a if a > 0 else math.nan)
    ratios = [r for r in ratios if math.isfinite(r)] or [math.nan]
    return Gain(statistics.median(ratios), min(ratios), max(ratios), len(ratios))
