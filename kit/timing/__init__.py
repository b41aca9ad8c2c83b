"""Measuring: loaders' rates (``rates``), any source read as ``model.fit`` reads it (``batches``),
fits timed step by step (``fitting``), the epoch-time model (``epoch_model``) and the user's GPUs
beside this machine (``gpu``).

Importing this package imports no TensorFlow: ``kit.timing.fitting`` (Keras) loads on the first
use of one of its names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit import lazy_face
from kit.timing.batches import iterate
from kit.timing.epoch_model import (
    Scaling,
    best_next_change,
    compute_rate_from_step,
    configurations,
    epoch_estimate,
    epoch_table,
    headline,
    sample,
    saved,
    user_scale,
)
from kit.timing.gpu import GPU_CLASSES, THIS_MACHINE, GpuRate, gpu_rate, on_gpus, scenarios
from kit.timing.rates import compare, cpu_used, measure, project_epoch, timed_epoch
from kit.util import format_duration, usable_cpus

if TYPE_CHECKING:
    from kit.timing.fitting import StepTimer, fit, resume_point

_FITTING = ("StepTimer", "fit", "resume_point")

__all__ = ["measure", "compare", "project_epoch", "format_duration", "usable_cpus",
           "timed_epoch", "cpu_used", "iterate",
           # the epoch model, and the users' scale it projects to
           "Scaling", "epoch_estimate", "epoch_table", "compute_rate_from_step", "best_next_change",
           "user_scale", "configurations", "headline", "sample", "saved", "StepTimer", "fit", "resume_point",
           # the user's GPUs beside this machine
           "GPU_CLASSES", "THIS_MACHINE", "GpuRate", "gpu_rate", "on_gpus", "scenarios"]


__getattr__, __dir__ = lazy_face(__name__, {name: "kit.timing.fitting" for name in _FITTING})
