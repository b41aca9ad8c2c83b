"""The pipeline doctor: point the kit at any input pipeline (and model), get findings each backed by a measurement.

``diagnose(source, model=None, *, max_seconds=120)`` measures, within its budget, the loader alone
(rate, latency, cores busy, bytes read per example), and with a compiled Keras model (trained as a
copy) the compute ceiling against the real fit: the verdict comes from that headroom. On a
``tf.data`` pipeline it reads the graph, applies each fix worth trying to a copy, checks that it
yields the same elements and measures it against the original, interleaved; what it cannot apply
(PyDataset workers, a generator, a feature cache) gets a predicted gain with its basis and range.

It returns a ``Diagnosis``: the ``verdict``, the ``findings`` (one row per finding, codes below),
``fixed`` (the best measured pipeline), ``tried`` and ``skipped``. On the command line:
``python -m kit doctor MODULE:FUNCTION [--model MODULE:FUNCTION] [--apply --out FILE]`` or
``--index CSV --variant NAME``.

Finding codes (``CODES``), each with its kind and meaning:

"""

from __future__ import annotations

import importlib

from kit.doctor.cli import load_attr, register
from kit.doctor.findings import CODES, SYMPTOMS, Finding, table
from kit.doctor.report import Diagnosis

__doc__ = (__doc__ or "") + "\n".join(f"* ``{code}``, {kind}: {meaning}" for code, (meaning, kind, _) in CODES.items()) + "\n"

#: Names from the modules that import TensorFlow or Keras: loaded on first use, so that importing
#: this package (as ``python -m kit --help`` does) imports neither.
_LAZY = {
    "diagnose": "kit.doctor.diagnosis",
    "SHUFFLE_SHARE": "kit.doctor.graph",
    "pipeline_graph": "kit.doctor.graph",
    "pipeline_ops": "kit.doctor.graph",
    "compare_fits": "kit.doctor.measure",
    "measure_loader": "kit.doctor.loader",
    "record_trace": "kit.doctor.measure",
    "AMPLIFICATION_FACTOR": "kit.doctor.rules",
    "AMPLIFICATION_MIN_BYTES": "kit.doctor.rules",
    "COMPUTE_BOUND_HEADROOM": "kit.doctor.rules",
    "INPUT_BOUND_HEADROOM": "kit.doctor.rules",
}

__all__ = ["CODES", "SYMPTOMS", "Diagnosis", "Finding", "compare_fits", "diagnose", "load_attr", "register", "table"]


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_LAZY])
