"""kit: find and remove the data-input bottleneck in TensorFlow/Keras training.

The names a user calls are here; each comes from the module that owns it, imported on first use,
so ``import kit`` sets no seeds or devices and imports no TensorFlow:

* the two users' scenarios, declared once, and the spectrogram user's epochs measured once per run:
  ``scenario``;
* sample data: ``samples`` (``make_spectrogram``, ``make_segmentation``, ``embedded``, ``cached``);
* the two cases: ``spectrogram`` and ``segmentation`` (their indexes ``FrameIndex``, ``PairIndex``
  and ``Palette``; each case's ``make_loader`` and ``convert``), ``verify`` for a converted store,
  ``DataError`` for bad input (it names the file and the row);
* measuring: ``measure``, ``compare``, ``project_epoch``; fitting: ``fit``, ``StepTimer``;
* the epoch model: ``epoch_estimate``, ``epoch_table``, ``Scaling``;
* the doctor: ``diagnose``; the frozen-backbone feature cache: ``extract_features`` (the rest of
  it through ``spectrogram``: ``train_head``, ``head_loader``, ...);
* several devices: ``make_strategy``, ``distributed_loader``;
* figures: ``plots``; the results ledger: ``results``; the benchmarks: ``run_bench(name, config)``
  (``python -m kit bench NAME`` runs the same; ``kit.bench`` holds the benches themselves).

The subpackages (``kit.timing``, ``kit.doctor``, ``kit.distribute``, ``kit.store``, ...) list
the rest of what users call in their own ``__all__``, never a module of theirs; docs/api.md lists
the whole face.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what mypy and editors see; at run time each name loads on first use (below)
    from kit import bench, plots, results, samples, scenario, segmentation, spectrogram
    from kit.bench import run as run_bench
    from kit.distribute import distributed_loader, make_strategy
    from kit.doctor import diagnose
    from kit.errors import DataError
    from kit.segmentation import PairIndex, Palette
    from kit.spectrogram import FrameIndex, extract_features
    from kit.store import verify
    from kit.timing import (
        Scaling,
        StepTimer,
        compare,
        epoch_estimate,
        epoch_table,
        fit,
        measure,
        project_epoch,
    )

__version__ = "0.1.0"

#: name -> (module, attribute; None: the module itself), as the TYPE_CHECKING block imports it.
_FACE = {
    "samples": ("kit.samples", None),
    "spectrogram": ("kit.spectrogram", None),
    "segmentation": ("kit.segmentation", None),
    "FrameIndex": ("kit.spectrogram", "FrameIndex"),
    "PairIndex": ("kit.segmentation", "PairIndex"),
    "Palette": ("kit.segmentation", "Palette"),
    "verify": ("kit.store", "verify"),
    "DataError": ("kit.errors", "DataError"),
    "measure": ("kit.timing", "measure"),
    "compare": ("kit.timing", "compare"),
    "project_epoch": ("kit.timing", "project_epoch"),
    "fit": ("kit.timing", "fit"),
    "StepTimer": ("kit.timing", "StepTimer"),
    "epoch_estimate": ("kit.timing", "epoch_estimate"),
    "epoch_table": ("kit.timing", "epoch_table"),
    "Scaling": ("kit.timing", "Scaling"),
    "diagnose": ("kit.doctor", "diagnose"),
    "extract_features": ("kit.spectrogram", "extract_features"),
    "make_strategy": ("kit.distribute", "make_strategy"),
    "distributed_loader": ("kit.distribute", "distributed_loader"),
    "plots": ("kit.plots", None),
    "results": ("kit.results", None),
    "run_bench": ("kit.bench", "run"),
    "bench": ("kit.bench", None),
    "scenario": ("kit.scenario", None),
}

__all__ = ["samples", "spectrogram", "segmentation", "FrameIndex", "PairIndex", "Palette", "verify", "DataError",
           "measure", "compare", "project_epoch", "fit", "StepTimer", "epoch_estimate", "epoch_table", "Scaling",
           "diagnose", "extract_features", "make_strategy", "distributed_loader", "plots", "results", "run_bench",
           "bench", "scenario"]


def lazy_face(package: str, names: dict):
    """``__getattr__`` and ``__dir__`` for a package whose face loads its heavier names on first use.

    ``names`` maps a name to ``(module, attribute)`` (attribute None: the module itself) or to a
    module (its attribute of the same name). Each package lists the same names in a
    ``TYPE_CHECKING`` block, so that mypy and editors see them."""

    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = (names[name], name) if isinstance(names[name], str) else names[name]
        value = importlib.import_module(module)
        return value if attr is None else getattr(value, attr)

    def __dir__():
        return sorted([*vars(importlib.import_module(package)), *names])

    return __getattr__, __dir__


__getattr__, __dir__ = lazy_face(__name__, _FACE)
