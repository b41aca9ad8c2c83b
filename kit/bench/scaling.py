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

``run(ScalingConfig(...))`` returns a ``kit.bench.BenchResult``; ``run(replicas=..., ...)``, the
config's fields as keywords, returns its rows (a DataFrame) as before (``kit.bench.config``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from kit import distribute, samples, timing
from kit.bench import BenchResult, print_table, save
from kit.bench.config import check_int, check_one_of, configure, optional_path
from kit.models import small_model
from kit.spectrogram import VARIANTS, FrameIndex, make_loader
from kit.util import positive_int

__all__ = ["MODELS", "DEVICES", "ScalingConfig", "run", "add_arguments", "register", "config_from_args", "show",
           "main"]

MODELS = {
    "conv": "a small conv net (compute per example grows with --width)",
    "head": "a Dense head on pooled frames, like training a head on frozen features",
}

#: Where the replicas go (``kit.distribute.make_strategy``).
DEVICES = ("auto", "gpu", "cpu")


@dataclass(frozen=True)
class ScalingConfig:
    """What ``run`` measures.

    Attributes:
        replicas: the replica counts to compare.
        variant: a ``tf.data`` loader variant of the spectrogram case.
        csv: the spectrogram index (default: the embedded sample, or a generated one
            of at least 8 global batches when the embedded one is smaller).
        per_replica_batch: examples per replica per step (global = this x replicas).
        steps: timed training steps per count per round.
        rounds: interleaved rounds.
        model: ``"conv"`` (a small conv net) or ``"head"`` (a Dense head on pooled frames:
            little compute per example, like training a head on frozen features).
        width: filter multiplier of the conv model (wider: more compute per example).
        devices: ``auto``, ``gpu`` or ``cpu`` (see ``kit.distribute.make_strategy``).
        workdir: where a generated index and the stores go (the kit cache if None).
        seed: of a generated index, the loaders' order and the model.
    """

    replicas: tuple[int, ...] = (1, 2)
    variant: str = "in_memory"
    csv: Path | None = None
    per_replica_batch: int = 32
    steps: int = 20
    rounds: int = 3
    model: str = "conv"
    width: int = 1
    devices: str = "auto"
    workdir: Path | None = None
    seed: int = 0

    def __post_init__(self):
        replicas = (self.replicas,) if isinstance(self.replicas, int) else tuple(self.replicas)
        if not replicas:
            raise ValueError(f"replicas must name at least one count, got {self.replicas!r}")
        object.__setattr__(self, "replicas", tuple(check_int("replicas", r) for r in replicas))
        optional_path(self, "csv", "workdir")
        check_one_of("model", self.model, tuple(MODELS))
        if self.variant not in VARIANTS or self.variant == "pydataset":
            raise ValueError(f"the scaling bench takes a tf.data variant of "
                             f"{', '.join(v for v in VARIANTS if v != 'pydataset')}, got {self.variant!r} "
                             f"(a PyDataset goes to model.fit as is)")
        for name in ("per_replica_batch", "steps", "rounds", "width"):
            check_int(name, getattr(self, name))
        check_one_of("devices", self.devices, DEVICES)
        check_int("seed", self.seed, 0)


def run(config: ScalingConfig | None = None, /, **options):
    """Measures training throughput per replica count; one row per count.

    Returns:
        A ``BenchResult`` for ``run(config)``; the rows (a DataFrame) for ``run(**options)``,
        the config's fields as keywords.
    """
    config, as_arguments = configure(ScalingConfig, config, (), options)
    res = _run(config)
    return res.rows if as_arguments else res


def _run(config: ScalingConfig):
    return BenchResult("scaling", _measure(config), config, {"variant": config.variant})


def _measure(config: ScalingConfig) -> pd.DataFrame:
    c = config
    variant, csv, per_replica_batch, steps, rounds = c.variant, c.csv, c.per_replica_batch, c.steps, c.rounds
    model, width, devices, workdir, seed = c.model, c.width, c.devices, c.workdir, c.seed
    counts = sorted(set(c.replicas))
    # Splits the CPU (when there is no GPU) before anything else initialises TensorFlow.
    distribute.make_strategy(counts[-1], devices=devices)

    import keras  # heavy: python -m kit --help imports this module

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
    if distribute.is_simulated(strategy):
        return "CPU (simulated)"
    return "GPU" if any("GPU" in d.upper() for d in strategy.extended.worker_devices) else "CPU"


def add_arguments(p) -> None:
    p.add_argument("--replicas", default="1,2", help="comma-separated replica counts (default 1,2)")
    p.add_argument("--variant", default="in_memory", help="tf.data loader variant (default in_memory)")
    p.add_argument("--csv", default=None, help="spectrogram index CSV (default: the embedded sample, "
                                                "or a generated one when the batches need more)")
    p.add_argument("--per-replica-batch", type=positive_int, default=32,
                   help="examples per replica per step; the global batch is this x replicas (default 32)")
    p.add_argument("--steps", type=positive_int, default=20, help="timed training steps per count per round (default 20)")
    p.add_argument("--rounds", type=positive_int, default=3, help="interleaved rounds over the replica counts (default 3)")
    p.add_argument("--model", choices=list(MODELS), default="conv",
                   help="; ".join(f"{k}: {v}" for k, v in MODELS.items()))
    p.add_argument("--width", type=positive_int, default=1, help="filter multiplier of the conv model")
    p.add_argument("--devices", choices=list(DEVICES), default="auto",
                   help="auto: GPUs when present, else the CPU split into logical devices (default auto)")
    p.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")


def register(bench_sub) -> None:
    p = bench_sub.add_parser("scaling", help="training throughput and efficiency per replica count")
    add_arguments(p)
    p.set_defaults(func=main)


def _parse_counts(text: str) -> list[int]:
    try:
        counts = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"--replicas expects comma-separated integers like 1,2,4, got {text!r}") from None
    if not counts or min(counts) <= 0:
        raise ValueError(f"--replicas expects positive integers, got {text!r}")
    return counts


def config_from_args(args) -> ScalingConfig:
    return ScalingConfig(replicas=tuple(_parse_counts(args.replicas)), variant=args.variant, csv=args.csv,
                         per_replica_batch=args.per_replica_batch, steps=args.steps, rounds=args.rounds,
                         model=args.model, width=args.width, devices=args.devices)


def show(res) -> None:
    df = res.rows
    print_table(df, ["replicas", "devices", "global_batch", "examples_per_s", "step_ms", "speedup",
                     "efficiency", "input_examples_per_s", "input_headroom"])
    if (df["devices"] == "CPU (simulated)").any():
        print("note: simulated replicas are logical devices sharing one CPU's cores: this checks the "
              "multi-replica code path; any speed-up only shows cores one replica left idle, not what "
              "N GPUs would give")


def main(args) -> int:
    res = run(config_from_args(args))
    show(res)
    save(res, args.json)
    return 0
