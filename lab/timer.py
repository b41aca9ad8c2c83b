"""``python -m lab.timer``: the overhead of ``StepTimer`` on a training step.

Fits the same small model on the same in-memory data with no callback (``model.fit``),
with the callback alone (``kit.timing.fit(..., wait=False)``), and with the callback
plus ``timer.wrap`` (``wait=True``, which times each batch pull), interleaved over
several rounds with the order rotated. Two figures:

* ``overhead_pct``: end to end, the median over rounds of each round's step time
  against the same round's no-callback run (with its interquartile range: on a
  shared 2-core machine this is noisy); it includes building ``fit``'s table;
* ``hook_pct``: the time spent inside the callback's own batch hooks per step, as
  the callback records it (``hook_s``; the batch pull itself excluded: that is input
  wait), as a share of the no-callback step time. This one is stable.

``run(TimerConfig(...))`` returns a ``kit.bench.BenchResult``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kit import timing
from kit.bench import BenchResult, print_table
from kit.bench.options import check_int, option
from kit.models import small_model
from kit.util import positive_int

__all__ = ["TimerConfig", "run", "show", "main"]


@dataclass(frozen=True)
class TimerConfig:
    """What ``run`` measures: ``rounds`` interleaved rounds of ``steps`` training steps of ``batch_size``."""

    steps: int = option(100, "training steps per round (default 100)", type=positive_int)
    rounds: int = option(12, "interleaved rounds with and without the timer (default 12)", type=positive_int)
    batch_size: int = option(128, "examples per step (default 128)", type=positive_int)
    seed: int = 0

    def __post_init__(self):
        for name in ("steps", "rounds", "batch_size"):
            check_int(name, getattr(self, name))
        check_int("seed", self.seed, 0)


def run(config: TimerConfig, *, log=print) -> BenchResult:
    """Fits with and without the callback, interleaved: one row per setting, seconds per step
    and overhead against no callback (``log``: unused, as every bench's ``run`` takes it)."""
    rows = _measure(config.steps, config.rounds, config.batch_size, config.seed)
    return BenchResult("timer", rows, config)


def _measure(steps: int, rounds: int, batch_size: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((steps * batch_size, 96, 64, 1), dtype=np.float32)
    y = rng.integers(0, 5, size=len(x))
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size).cache().prefetch(2)
    model = small_model(x.shape[1:3], 5, seed=seed)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds, epochs=1, verbose=0)  # trace and warm up

    def plain() -> float:
        model.fit(ds, epochs=1, verbose=0)
        return 0.0  # no callback: no hook time

    settings = {  # name -> one fit of an epoch; returns the callback's own hook seconds
        "no_callback": plain,
        "step_timer": lambda: float(timing.fit(model, ds, wait=False)["hook_s"].sum()),
        "step_timer+wrap": lambda: float(timing.fit(model, ds, wait=True)["hook_s"].sum()),
    }
    for fit in settings.values():  # trace each input form once
        fit()
    times: dict[str, list[float]] = {k: [] for k in settings}
    hook_seconds = {k: 0.0 for k in settings}
    names = list(settings)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:  # rotate the order
            t0 = time.perf_counter()
            hook_seconds[name] += settings[name]()
            times[name].append((time.perf_counter() - t0) / steps)
    base = np.asarray(times["no_callback"])
    rows = []
    for name, per_round in times.items():
        ts = np.asarray(per_round)
        paired = 100 * (ts / base - 1)  # each round against the same round's no-callback run
        hook_s = hook_seconds[name] / (rounds * steps)
        rows.append({"variant": name, "step_ms": 1e3 * float(np.median(ts)),
                     "overhead_pct": float(np.median(paired)),
                     "overhead_pct_q25": float(np.percentile(paired, 25)),
                     "overhead_pct_q75": float(np.percentile(paired, 75)),
                     "hook_ms": 1e3 * hook_s,
                     "hook_pct": 100 * hook_s / float(np.median(base)),
                     "rounds": rounds, "steps": steps, "batch_size": batch_size})
    return pd.DataFrame(rows)


def show(res) -> None:
    print_table(res.rows)


def main(argv=None) -> int:
    """``python -m lab.timer [--steps N] [--rounds N] [--batch-size N]``."""
    from lab.command import main as command

    return command("timer", TimerConfig, run, show, argv, description=__doc__.split("\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
