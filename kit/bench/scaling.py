"""``python -m kit bench scaling``: training throughput against the number of replicas.

For each replica count the same model trains on the same loader variant at the same
per-replica batch, so the global batch grows with the replicas (per-replica x N),
the counts interleaved over several rounds. Reported per count: examples/s, the
speed-up over the smallest count and the scaling efficiency (speed-up divided by the
growth in replicas; 1.0 is linear). Next to it, the loader alone at the same global
batch (``input_examples_per_s``): when the loader cannot deliver much more than the
training consumes, more replicas cannot go faster.

With GPUs it uses them (``MirroredStrategy`` over the first N). Without, the CPU
split into logical devices: a simulation on the same cores. It checks the code path,
not the hardware: a "speed-up" there only means one replica left some cores idle
(small models on 2 cores do), never what N accelerators would give.

``run(ScalingConfig(...))`` returns a ``kit.bench.BenchResult``.
"""

from __future__ import annotations

import math

import keras
import pandas as pd

from kit import distribute, samples, timing
from kit.bench import BenchResult, print_table
from kit.bench.configs import ScalingConfig
from kit.distribute.strategy import is_simulated
from kit.models import small_model
from kit.spectrogram import FrameIndex, make_loader


def run(config: ScalingConfig, *, log=print) -> BenchResult:
    """Measures training throughput per replica count; one row per count (``log``: unused, as
    every bench's ``run`` takes it)."""
    return BenchResult("scaling", _measure(config), config, {"variant": config.variant})


def _measure(config: ScalingConfig) -> pd.DataFrame:
    c = config
    variant, csv, per_replica_batch, steps, rounds = c.variant, c.csv, c.per_replica_batch, c.steps, c.rounds
    model, width, devices, workdir, seed = c.model, c.width, c.devices, c.workdir, c.seed
    counts = sorted(set(c.replicas))
    # Splits the CPU (when there is no GPU) before anything else initialises TensorFlow.
    distribute.make_strategy(counts[-1], devices=devices)
    index = FrameIndex.from_csv(csv or samples.embedded("spectrogram"))
    largest = per_replica_batch * counts[-1]  # the largest global batch
    if csv is None and len(index) < 8 * largest:
        # The embedded sample is too small for these batches: at least 8 full global batches.
        files = math.ceil(8 * largest / 32)
        index = FrameIndex.from_csv(samples.cached("spectrogram", files=files, frames_per_file=32, seed=seed,
                                                   workdir=workdir))
    setups = {}
    for r in counts:
        strategy = distribute.make_strategy(r, devices=devices)
        global_batch = distribute.global_batch_size(per_replica_batch, strategy)
        loader = make_loader(variant, index, batch_size=global_batch, shuffle=True, seed=seed,
                             workdir=workdir, progress=False).repeat()
        data = strategy.experimental_distribute_dataset(loader)
        with strategy.scope():
            net = small_model(index.frame_shape, index.num_classes, seed=seed, width=width,
                                         head_only=model == "head")
            net.compile(keras.optimizers.SGD(0.01),
                        keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        net.fit(data, steps_per_epoch=3, epochs=1, verbose=0)  # trace and warm up
        feed = timing.measure(loader, num_batches=steps, warmup=2)
        setups[r] = dict(strategy=strategy, model=net, data=data, global_batch=global_batch,
                         input_rate=feed.examples_per_s)

    seconds: dict[int, list[float]] = {r: [] for r in counts}  # each round's seconds
    for k in range(rounds):
        for r in counts[k % len(counts):] + counts[:k % len(counts)]:  # rotate the order
            # steps + 1 steps, timed from the end of the first (``steady_s``): the fit call's
            # own set-up (iterator, callbacks) is not a training step.
            fitted = timing.fit(setups[r]["model"], setups[r]["data"], steps_per_epoch=steps + 1, wait=False)
            seconds[r].append(float(fitted["steady_s"].sum()))
    rows = []
    base_r = counts[0]
    base_rate = None
    # Examples per step on average: an epoch's last batch may be partial (the loader repeats).
    per_step = {r: len(index) / math.ceil(len(index) / setups[r]["global_batch"]) for r in counts}
    for r in counts:
        s = setups[r]
        step_s = sum(seconds[r]) / (steps * rounds)
        rate = per_step[r] / step_s
        # each round's speed-up against the smallest count's run in the same round: the spread
        per_round = [(per_step[r] / x) / (per_step[base_r] / b) for x, b in zip(seconds[r], seconds[base_r])]
        base_rate = rate if r == base_r else base_rate
        speedup = rate / base_rate
        rows.append({
            "variant": variant,
            "model": model,
            "replicas": r,
            "devices": _devices(s["strategy"]),
            "per_replica_batch": per_replica_batch,
            "global_batch": s["global_batch"],
            "examples_per_s": rate,
            "step_ms": 1e3 * step_s,
            "speedup": speedup,
            "speedup_min": min(per_round),
            "speedup_max": max(per_round),
            "efficiency": speedup / (r / base_r),
            "input_examples_per_s": s["input_rate"],
            "input_headroom": s["input_rate"] / rate,
            "steps": steps,
            "rounds": rounds,
        })
    return pd.DataFrame(rows)


def _devices(strategy) -> str:
    if is_simulated(strategy):
        return "CPU (simulated)"
    return "GPU" if any("GPU" in d.upper() for d in strategy.extended.worker_devices) else "CPU"


def show(res) -> None:
    df = res.rows
    print_table(df, ["replicas", "devices", "global_batch", "examples_per_s", "step_ms", "speedup",
                     "efficiency", "input_examples_per_s", "input_headroom"])
    if (df["devices"] == "CPU (simulated)").any():
        print("note: simulated replicas are logical devices sharing one CPU's cores: this checks the "
              "multi-replica code path; any speed-up only shows cores one replica left idle, not what "
              "N GPUs would give")

