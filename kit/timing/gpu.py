"""A model's training rate on the users' GPUs: **measured** where the ledger holds a ``bench compare``
run on a GPU machine (its ``compute`` rows on ``GPU`` devices), otherwise **assumed**: the model's
training FLOPs per example (``kit.models.audio.training_flops``) over a share of a named GPU's dense
FP32 peak, stated as a range (``UTILISATION``) and labelled assumed in every view.

``on_gpus`` puts that rate into the configurations, beside this machine's measured loaders. No TensorFlow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from kit.timing.epoch_model import Scaling, epoch_table, saved

#: The ``scenario`` label of this machine's rows in ``scenarios``.
THIS_MACHINE = "this machine"


@dataclass(frozen=True)
class GpuClass:
    """A GPU model and its dense FP32 peak, as its vendor's datasheet gives it."""

    name: str
    fp32_tflops: float
    source: str


#: Datasheet peaks (dense FP32, no tensor cores, no sparsity): what the estimate divides by.
GPU_CLASSES = {
    "T4": GpuClass("NVIDIA T4", 8.1, "NVIDIA T4 datasheet"),
    "V100": GpuClass("NVIDIA V100 SXM2", 15.7, "NVIDIA V100 datasheet"),
    "A100": GpuClass("NVIDIA A100 SXM4", 19.5, "NVIDIA A100 datasheet"),
    "H100": GpuClass("NVIDIA H100 SXM5", 67.0, "NVIDIA H100 datasheet"),
}

#: The share of the FP32 peak a training step is assumed to reach, (low, high): depthwise networks
#: on small frames run far below peak; a measured device run replaces it.
UTILISATION = (0.10, 0.40)


@dataclass(frozen=True)
class GpuRate:
    """Examples per second one GPU trains, fed from memory: ``per_replica`` (measured, or the geometric
    mean of the assumed range) within ``low``-``high``, its ``kind`` (measured or assumed), the ``gpu``,
    the ``basis`` it rests on, and the two-GPU ``efficiency`` where a device run measured one."""

    per_replica: float
    low: float
    high: float
    kind: str
    gpu: str
    basis: str
    efficiency: float | None = None

    def __str__(self) -> str:
        return (f"{self.per_replica:,.0f} examples/s per GPU ({self.low:,.0f}-{self.high:,.0f}; "
                f"{self.kind}: {self.basis})")


def assumed(flops_per_example: float, gpu: str = "V100", *, utilisation=UTILISATION) -> GpuRate:
    """The rate a GPU class (a key of ``GPU_CLASSES``) would train at, from the model's training FLOPs
    per example and the share of the FP32 peak assumed, ``utilisation=(low, high)``."""
    if gpu not in GPU_CLASSES:
        raise ValueError(f"unknown GPU class {gpu!r}; known: {', '.join(GPU_CLASSES)}")
    if not flops_per_example > 0:
        raise ValueError(f"flops_per_example must be positive, got {flops_per_example!r}")
    lo_u, hi_u = (float(u) for u in utilisation)
    if not 0 < lo_u <= hi_u <= 1:
        raise ValueError(f"utilisation must be (low, high) with 0 < low <= high <= 1, got {utilisation!r}")
    g = GPU_CLASSES[gpu]
    peak = g.fp32_tflops * 1e12
    low, high = lo_u * peak / flops_per_example, hi_u * peak / flops_per_example
    mflops = flops_per_example / 1e6
    basis = (f"{f'{mflops:,.0f}' if mflops >= 100 else f'{mflops:.3g}'} MFLOPs per example to train (the model's layers counted), at "
             f"{lo_u:.0%}-{hi_u:.0%} of the {g.name}'s {g.fp32_tflops:g} TFLOP/s FP32 peak ({g.source}); "
             f"the share of peak is assumed, not measured")
    return GpuRate(math.sqrt(low * high), low, high, "assumed", g.name, basis)


def measured(ledger: pd.DataFrame, *, case: str = "spectrogram", model: str = "backbone+head") -> GpuRate | None:
    """The latest GPU device run of ``model`` in ``ledger`` (``compute`` rows on ``GPU``), or None."""
    need = {"bench", "kind", "case", "variant", "devices", "replicas", "per_replica_examples_per_s",
            "machine_label", "run_id", "time"}
    if ledger is None or ledger.empty or not need <= set(ledger.columns):
        return None
    d = saved(ledger)  # each machine's latest full comparison
    d = d[(d["kind"] == "compute") & (d["case"] == case) & (d["variant"] == model)
          & (d["devices"].astype(str).str.upper() == "GPU")]
    if d.empty:
        return None
    run = d[d["run_id"] == d.sort_values("time")["run_id"].iloc[-1]]  # the newest of those machines' runs
    run = run.sort_values("replicas")
    one = run.iloc[0]
    rate = float(one["per_replica_examples_per_s"])
    r = int(one["replicas"])
    low = float(one["round_min"]) / r if pd.notna(one.get("round_min")) else rate
    high = float(one["round_max"]) / r if pd.notna(one.get("round_max")) else rate
    two = run[run["replicas"] == 2]
    eff = float(two["efficiency"].iloc[0]) if len(two) and pd.notna(two["efficiency"].iloc[0]) else None
    where = one["machine_label"]
    when = f" on {one['time']:%Y-%m-%d}" if pd.notna(one["time"]) else ""
    return GpuRate(rate, low, high, "measured", str(where),
                   f"measured by `bench compare` on {where}{when}, run {one['run_id']}: {one['basis']}", eff)


def gpu_rate(flops_per_example: float, ledger: pd.DataFrame | None = None, *, gpu: str = "V100",
             case: str = "spectrogram", model: str = "backbone+head") -> GpuRate:
    """A device run's rate from the ledger when there is one, otherwise ``assumed``."""
    return measured(ledger, case=case, model=model) or assumed(flops_per_example, gpu)


def on_gpus(configs: pd.DataFrame, rates: dict[str, GpuRate], *, efficiency: float = 0.9) -> pd.DataFrame:
    """Configurations (``kit.timing.configurations``, of one case) with each model's GPU rate
    (``rates``: ``{model: GpuRate}``) in place of this machine's: ``compute_rate`` (the middle value),
    ``compute_low``, ``compute_high``, ``compute_kind``, ``compute_basis`` and ``scaling`` (``efficiency``
    assumed where the device run measured none)."""
    missing = sorted(set(configs["model"]) - set(rates))
    if missing:
        raise ValueError(f"no GPU rate for model(s) {missing}; have {sorted(rates)}")
    d = configs.copy()
    d["compute_rate"] = [rates[m].per_replica for m in d["model"]]
    d["compute_low"] = [rates[m].low for m in d["model"]]
    d["compute_high"] = [rates[m].high for m in d["model"]]
    d["compute_kind"] = [rates[m].kind for m in d["model"]]
    d["compute_basis"] = [rates[m].basis for m in d["model"]]
    if not 0 < efficiency <= 1:
        raise ValueError(f"efficiency must be in (0, 1], got {efficiency!r}")
    assumed_scaling = Scaling(assumed=float(efficiency),
                              source=f"efficiency {efficiency:.2f} assumed on GPUs (MirroredStrategy all-reduces "
                                     f"only the trainable weights' gradients)")

    def scaling(model: str) -> Scaling:
        measured_two = rates[model].efficiency
        if measured_two is None:
            return assumed_scaling
        return Scaling.measured({2: measured_two}, source=f"device run of {model}")

    d["scaling"] = [scaling(m) for m in d["model"]]
    for col in ("compute_round_min", "compute_round_max", "efficiency_min", "efficiency_max"):
        if col in d.columns:
            d[col] = None  # the CPU's rounds say nothing about the GPU
    return d


def scenarios(configs: pd.DataFrame, rates: dict[str, GpuRate], *, examples: int, replicas: int,
              efficiency: float = 0.9) -> pd.DataFrame:
    """The epoch of each configuration on the user's GPUs (first) and on this machine, both with this
    machine's loader rates: ``epoch_table`` rows with ``scenario`` (the GPUs' label, or ``THIS_MACHINE``),
    ``compute_kind``, ``epoch_min_s``/``epoch_max_s`` over the GPU rate's range and ``bound_range``
    (``input or compute`` where the range straddles the loader's rate)."""
    g = on_gpus(configs, rates, efficiency=efficiency)
    mid = epoch_table(g, examples=examples, replicas=replicas)
    fast = epoch_table(g.assign(compute_rate=g["compute_high"]), examples=examples, replicas=replicas)
    slow = epoch_table(g.assign(compute_rate=g["compute_low"]), examples=examples, replicas=replicas)
    mid["epoch_min_s"], mid["epoch_max_s"] = fast["epoch_s"].to_numpy(), slow["epoch_s"].to_numpy()
    mid["bound_range"] = [a if a == b else "input or compute" for a, b in zip(fast["bound"], slow["bound"])]
    kinds = sorted(set(mid["compute_kind"]))
    names = sorted({rates[m].gpu for m in g["model"]})
    mid["scenario"] = f"the user's {replicas} GPUs ({', '.join(names)}; compute {' and '.join(kinds)})"
    here = epoch_table(configs, examples=examples, replicas=replicas)
    here = here.assign(scenario=THIS_MACHINE, compute_kind="measured", epoch_min_s=here["epoch_s"],
                       epoch_max_s=here["epoch_s"], bound_range=here["bound"])
    return pd.concat([mid, here], ignore_index=True)
