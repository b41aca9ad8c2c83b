"""``python -m kit bench timer``: the overhead of ``StepTimer`` on a training step.

Fits the same small model on the same in-memory data with no callback, with the
callback alone, and with the callback plus ``timer.wrap`` (which times each batch
pull), interleaved over several rounds, and reports each as a share of step time.
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


def run(*, steps: int = 100, rounds: int = 6, batch_size: int = 128, seed: int = 0) -> pd.DataFrame:
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

    settings = {
        "no_callback": lambda: (ds, []),
        "step_timer": lambda: (ds, [StepTimer()]),
        "step_timer+wrap": lambda: ((t := StepTimer()).wrap(ds), [t]),
    }
    for make in settings.values():  # trace each input form once
        data, cbs = make()
        model.fit(data, epochs=1, verbose=0, callbacks=cbs)
    times = {k: [] for k in settings}
    names = list(settings)
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:  # rotate the order
            make = settings[name]
            data, cbs = make()
            t0 = time.perf_counter()
            model.fit(data, epochs=1, verbose=0, callbacks=cbs)
            times[name].append((time.perf_counter() - t0) / steps)
    base = float(np.median(times["no_callback"]))
    rows = []
    for name, ts in times.items():
        med = float(np.median(ts))
        rows.append({"variant": name, "step_ms": 1e3 * med, "overhead_pct": 100 * (med - base) / base,
                     "rounds": rounds, "steps": steps, "batch_size": batch_size})
    return pd.DataFrame(rows)


def register(bench_sub) -> None:
    p = bench_sub.add_parser("timer", help="overhead of the StepTimer callback on a training step")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")
    p.set_defaults(func=_main)


def _main(args) -> int:
    from kit.bench import print_table, result
    from kit.cli import write_json

    df = run(steps=args.steps, rounds=args.rounds, batch_size=args.batch_size)
    print_table(df)
    write_json(args.json, result("timer", df))
    return 0
