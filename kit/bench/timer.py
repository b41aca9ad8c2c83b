"""``python -m kit bench timer``: the overhead of ``StepTimer`` on a training step.

Fits the same small model on the same in-memory data with no callback, with the
callback alone, and with the callback plus ``timer.wrap`` (which times each batch
pull), interleaved over several rounds with the order rotated. Two figures:

* ``overhead_pct``: end to end, the median over rounds of each round's step time
  against the same round's no-callback run (with its interquartile range: on a
  shared 2-core machine this is noisy);
* ``hook_pct``: the time spent inside the callback's own batch hooks per step,
  measured directly (the batch pull itself excluded: that is input wait), as a
  share of the no-callback step time. This one is stable.
"""

from __future__ import annotations

import time

import pandas as pd


def _model(shape, classes):
    import keras

    # A small conv net: tens of ms per step on 2 CPU cores, like a light model on a GPU.
    return keras.Sequential([
        keras.Input(shape),
        keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
        keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
        keras.layers.GlobalAveragePooling2D(),
        keras.layers.Dense(classes),
    ])


def run(*, steps: int = 100, rounds: int = 12, batch_size: int = 128, seed: int = 0) -> pd.DataFrame:
    """Returns one row per setting: seconds per step and overhead against no callback."""
    import keras
    import numpy as np
    import tensorflow as tf

    from kit.timing import StepTimer

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((steps * batch_size, 96, 64, 1), dtype=np.float32)
    y = rng.integers(0, 5, size=len(x))
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size).cache().prefetch(2)
    model = _model(x.shape[1:], 5)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds, epochs=1, verbose=0)  # trace and warm up

    hooks = _HookClock()
    settings = {
        "no_callback": lambda: (ds, []),
        "step_timer": lambda: (ds, [hooks.instrument(StepTimer())]),
        "step_timer+wrap": lambda: ((t := hooks.instrument(StepTimer())).wrap(ds), [t]),
    }
    for make in settings.values():  # trace each input form once
        data, cbs = make()
        model.fit(data, epochs=1, verbose=0, callbacks=cbs)
    hooks.reset()
    times = {k: [] for k in settings}
    names = list(settings)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:  # rotate the order
            data, cbs = settings[name]()
            hooks.current = name
            t0 = time.perf_counter()
            model.fit(data, epochs=1, verbose=0, callbacks=cbs)
            times[name].append((time.perf_counter() - t0) / steps)
    base = np.asarray(times["no_callback"])
    rows = []
    for name, ts in times.items():
        ts = np.asarray(ts)
        paired = 100 * (ts / base - 1)  # each round against the same round's no-callback run
        hook_s = hooks.seconds.get(name, 0.0) / (rounds * steps)
        rows.append({"variant": name, "step_ms": 1e3 * float(np.median(ts)),
                     "overhead_pct": float(np.median(paired)),
                     "overhead_pct_q25": float(np.percentile(paired, 25)),
                     "overhead_pct_q75": float(np.percentile(paired, 75)),
                     "hook_ms": 1e3 * hook_s,
                     "hook_pct": 100 * hook_s / float(np.median(base)),
                     "rounds": rounds, "steps": steps, "batch_size": batch_size})
    return pd.DataFrame(rows)


class _HookClock:
    """Adds up the time spent inside a callback's batch hooks (its direct cost per step),
    leaving out the batch pull, which is input wait and not overhead."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.current = None

    def reset(self):
        self.seconds.clear()

    def instrument(self, cb):
        begin, end = cb.on_train_batch_begin, cb.on_train_batch_end
        clock = self

        def timed_begin(batch, logs=None):
            t0 = time.perf_counter()
            begin(batch, logs)
            spent = time.perf_counter() - t0
            wait = cb._pending_wait if cb._pending_wait == cb._pending_wait else 0.0  # NaN: not wrapped
            clock._add(spent - wait)

        def timed_end(batch, logs=None):
            t0 = time.perf_counter()
            end(batch, logs)
            clock._add(time.perf_counter() - t0)

        cb.on_train_batch_begin, cb.on_train_batch_end = timed_begin, timed_end
        return cb

    def _add(self, seconds):
        if self.current is not None:
            self.seconds[self.current] = self.seconds.get(self.current, 0.0) + seconds


def register(bench_sub) -> None:
    p = bench_sub.add_parser("timer", help="overhead of the StepTimer callback on a training step")
    from kit.cli import positive_int

    p.add_argument("--steps", type=positive_int, default=100)
    p.add_argument("--rounds", type=positive_int, default=12)
    p.add_argument("--batch-size", type=positive_int, default=128)
    p.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")
    p.set_defaults(func=_main)


def _main(args) -> int:
    from kit.bench import print_table, result
    from kit.cli import write_json

    df = run(steps=args.steps, rounds=args.rounds, batch_size=args.batch_size)
    print_table(df)
    write_json(args.json, result("timer", df))
    return 0
