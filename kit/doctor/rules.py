"""The rules on measured numbers: the verdict, read amplification, PyDataset workers, the frozen prefix."""

from __future__ import annotations

import math

import numpy as np

from kit.doctor.findings import Cap, Finding, Measured
from kit.doctor.sources import is_pydataset

#: Verdict thresholds on the share of each step spent waiting for input.
INPUT_BOUND_SHARE = 0.25
COMPUTE_BOUND_SHARE = 0.10
#: Read amplification worth reporting: this many times the example bytes, and at
#: least this many surplus bytes read in the measured window (noise: stray reads).
AMPLIFICATION_FACTOR = 4.0
AMPLIFICATION_MIN_BYTES = 1 << 20


def cores_available(cores: int, busy: float, load: float) -> float:
    """Cores a parallel loader could use: this machine's, less what other processes keep busy
    (the one-minute load average beyond this loader's own cores), at least one."""
    others = max(0.0, load - busy) if math.isfinite(load) else 0.0
    return float(min(cores, max(1.0, cores - others)))


def parallel(cores: int, busy: float, load: float) -> tuple[float, float, str]:
    """What parallel work could give: ``(cores available, gain, basis)``."""
    free = cores_available(cores, busy, load)
    basis = (f"the loader kept {busy:.2f} of {cores} CPU cores busy; parallel work can use the "
             f"{free:.1f} the rest of the machine leaves free (load average {load:.1f})")
    return free, max(1.0, free / max(busy, 1.0)), basis


def cap(fits: dict) -> Cap:
    """The cap on input gains: the compute ceiling over the real fit (none without ``fits``)."""
    if not fits:
        return Cap()
    factor = max(1.0, fits["ceiling_examples_per_s"] / fits["fit_examples_per_s"])
    return Cap(factor, f"capped at the compute ceiling, {factor:,.1f}x the real fit")


def loader_summary(loader: dict) -> str:
    """The summary without a model: the loader's rate and latency."""
    return (f"no model given: the loader alone delivers {loader['loader_examples_per_s']:,.1f} examples/s "
            f"(batch latency p50 {loader['loader_latency_p50_ms']:.1f} ms)")


def verdict(fits: dict, loader_rate: float) -> tuple[str, str, list[Finding]]:
    """The verdict from the share of each step spent waiting for input: ``(verdict, summary, findings)``.

    Args:
        fits: what ``measure.measure_fits`` returned.
        loader_rate: examples/s of the loader alone.
    """
    F, C, share, L = (fits["fit_examples_per_s"], fits["ceiling_examples_per_s"], fits["input_share"],
                      loader_rate)
    summary = (f"the fit ran at {F:,.1f} examples/s with steps waiting for input {share:.0%} of "
               f"the time; the model alone (one batch replayed from memory) at {C:,.1f}/s; the "
               f"loader alone at {L:,.1f}/s")
    if share >= INPUT_BOUND_SHARE:
        return "input-bound", summary, [Finding(
            "input_bound", f"steps wait for input {share:.0%} of the time; fit {F:,.1f} examples/s against "
            f"a ceiling of {C:,.1f}/s", cap(fits).factor, "compute ceiling over real fit, measured side by side")]
    if share <= COMPUTE_BOUND_SHARE:
        return "compute-bound", summary, [Finding(
            "compute_bound", f"steps wait for input only {share:.0%} of the time; the loader alone delivers "
            f"{L:,.1f}/s against a fit of {F:,.1f}/s", max(1.0, L / F),
            "loader alone over real fit: how much faster the step may get before input limits it")]
    return "balanced", summary, []


def frozen_backbone(prefix: list, fits: dict, *, head_rate: float | None, why: str) -> Finding:
    """The frozen prefix's finding: the head's rate on cached features over the real fit.

    Args:
        prefix: the frozen layers in front of the trained ones.
        fits: what ``measure.measure_fits`` returned.
        head_rate: examples/s of the rest trained on the prefix's output (None: not measured).
        why: why it was not measured.
    """
    params = sum(int(np.prod(w.shape)) for layer in prefix for w in layer.weights)
    names = f"{prefix[0].name}" + (f" .. {prefix[-1].name}" if len(prefix) > 1 else "")
    evidence = f"{len(prefix)} frozen layer(s) ({names}, {params:,} weights) run on every step"
    if head_rate is None:
        return Finding("frozen_backbone_recomputed", evidence, math.nan,
                       f"not measured: the model does not split into frozen part + head ({why})")
    return Finding(
        "frozen_backbone_recomputed",
        f"{evidence}; the rest trains at {head_rate:,.1f} examples/s on their cached output, the whole model "
        f"at {fits['ceiling_examples_per_s']:,.1f}/s on the same batch",
        head_rate / fits["fit_examples_per_s"],
        "the layers after the frozen part trained on its output replayed from memory (a feature cache's "
        "ceiling), over the real fit; the one-off extraction pass is not counted")


def read_amplification(loader: dict, example_bytes: float, *, capped: Cap) -> tuple[float | None, list[Finding]]:
    """Bytes read per example over the example's bytes: ``(factor or None, findings)``.

    Args:
        loader: what ``measure.measure_loader`` returned.
        example_bytes: the bytes of one example as delivered.
        capped: the cap on input gains.
    """
    per_example = max(loader.get("rchar_per_example", 0.0), loader.get("read_bytes_per_example", 0.0))
    if not (per_example and example_bytes):
        return None, []
    k = per_example / example_bytes
    surplus = (per_example - example_bytes) * loader.get("window_examples", 0)
    if not (k >= AMPLIFICATION_FACTOR and surplus >= AMPLIFICATION_MIN_BYTES):
        return k, []
    return k, [Finding(
        "read_amplification",
        f"{per_example / 1e3:,.1f} kB read (/proc/self/io) per example of {example_bytes / 1e3:,.1f} kB: "
        f"{k:,.1f}x", capped(k),
        capped.explain(f"reading {k:,.1f}x less, if reading dominates the loader (an upper bound)"))]


def pydataset_workers(source, m: Measured) -> list[Finding]:
    """A ``keras.utils.PyDataset`` with one worker."""
    if not is_pydataset(source):
        return []
    workers = getattr(source, "workers", 1) or 1
    if workers > 1:
        return []
    return [Finding(
        "pydataset_single_worker",
        f"workers={workers}, use_multiprocessing={getattr(source, 'use_multiprocessing', False)}; "
        f"{m.cores_busy:.2f} of {m.cores} cores busy", m.cap(m.parallel_gain), m.cap.explain(m.parallel_basis))]
