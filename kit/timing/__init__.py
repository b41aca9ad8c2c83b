"""Measuring: loaders' rates, fits' step times, and the epoch they add up to.

* ``measure``, ``compare``, ``project_epoch`` (``kit.timing.rates``): the throughput and batch
  latency of any batch source, loaders compared interleaved, a rate projected to an epoch;
* ``iterate``, ``batch_size_of`` (``kit.timing.batches``): any source read the way ``model.fit``
  reads it;
* ``fit``, ``StepTimer``, ``resume_point`` (``kit.timing.fitting``): ``model.fit`` timed step by
  step, the wait for input split out, resumable mid-epoch;
* ``epoch_estimate``, ``epoch_table``, ``Scaling``, ``best_next_change`` (``kit.timing.epoch_model``):
  the epoch-time model every view computes from; ``user_scale``, ``configurations``, ``headline``:
  the users' scale, a comparison's rates paired into configurations, the index page's line;
* ``gpu_rate``, ``on_gpus``, ``scenarios`` (``kit.timing.gpu``): the user's model on the user's GPUs,
  measured on a device run or assumed from its FLOPs and a named GPU's peak, beside this machine.

Importing this package imports no TensorFlow: ``kit.timing.fitting`` (Keras) loads on the first
use of one of its names.
"""

import importlib

from kit.timing.batches import batch_size_of, iterate
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
from kit.timing.rates import add_ratios, compare, cpu_used, measure, project_epoch, timed_epoch
from kit.util import format_duration, usable_cpus

_FITTING = ("StepTimer", "fit", "resume_point")

__all__ = ["measure", "compare", "project_epoch", "format_duration", "usable_cpus",
           "timed_epoch", "cpu_used", "iterate",
           # the epoch model, and the users' scale it projects to
           "Scaling", "epoch_estimate", "epoch_table", "compute_rate_from_step", "best_next_change",
           "user_scale", "configurations", "headline", "sample", "saved", *_FITTING,
           # the user's GPUs beside this machine
           "GPU_CLASSES", "THIS_MACHINE", "GpuRate", "gpu_rate", "on_gpus", "scenarios",
           # what the kit's other packages call through this one
           "add_ratios", "batch_size_of"]


def __getattr__(name):
    if name in _FITTING:  # kit.timing.fitting imports Keras: loaded on first use
        return getattr(importlib.import_module("kit.timing.fitting"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
