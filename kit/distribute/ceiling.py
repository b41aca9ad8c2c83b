"""What several replicas can and cannot change, in numbers (notebook 04): the batch arithmetic of a
global batch split across replicas, and the input ceiling, the shortest epoch a loader allows
whatever the replica count. Plain Python: no TensorFlow.
"""

from __future__ import annotations

import math

from kit.util import format_duration


def batch_arithmetic(frames: int, global_batch: int, replicas: int) -> dict:
    """``{"per_replica_batch", "steps_per_epoch"}`` of ``frames`` at ``global_batch`` on
    ``replicas``. Raises ``ValueError`` when the global batch does not split evenly."""
    for name, v in (("frames", frames), ("global_batch", global_batch), ("replicas", replicas)):
        if v < 1:
            raise ValueError(f"{name} must be positive, got {v}")
    if global_batch % replicas:
        raise ValueError(f"global batch {global_batch} does not split into {replicas} equal replica batches")
    return {"per_replica_batch": global_batch // replicas, "steps_per_epoch": math.ceil(frames / global_batch)}


def epoch_floor_s(frames: int, loader_rate: float) -> float:
    """The shortest epoch of ``frames`` a loader delivering ``loader_rate`` examples/s allows, however
    many replicas it feeds: each step's global batch must come through it (frames / rate)."""
    if not loader_rate > 0:
        raise ValueError(f"loader_rate must be positive, got {loader_rate}")
    return frames / loader_rate


def ceiling_line(*, frames: int, global_batch: int, replicas: int, loader_rates: dict[str, float],
                 where: str = "") -> str:
    """The headline of notebook 04: the batch arithmetic, then each loader's measured rate and the
    epoch floor it sets (``where``: what the loaders read, when it is not the user's data)."""
    b = batch_arithmetic(frames, global_batch, replicas)
    floors = "; ".join(f"{name} {rate:,.0f} frames/s, so no epoch under {format_duration(epoch_floor_s(frames, rate))}"
                       for name, rate in loader_rates.items())
    return (f"global batch {global_batch} on {replicas} replicas: {b['per_replica_batch']} per replica, "
            f"{b['steps_per_epoch']:,} steps per {frames:,}-frame epoch; the input ceiling, each loader alone"
            f"{' ' + where if where else ''}, whatever the replica count: {floors}")


def ceiling_summary(*, frames: int, loader: str, loader_rate: float) -> str:
    """The index's sentence for notebook 04: one loader's input ceiling."""
    return (f"The input ceiling: {loader} alone delivers {loader_rate:,.0f} frames/s, so no number of replicas "
            f"trains a {frames:,}-frame epoch in under {format_duration(epoch_floor_s(frames, loader_rate))}")
