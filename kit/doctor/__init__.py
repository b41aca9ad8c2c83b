"""The pipeline doctor: point the kit at any input pipeline (and model), get findings each backed by a measurement.

``diagnose(source, model=None, *, max_seconds=120)`` measures, in one run and within its budget:

* the loader alone: examples/s, batch latency, the CPU cores it kept busy (under half a core: it
  waits on files rather than computes) and the bytes it read per example (``/proc/self/io``);
* with a compiled Keras model (trained as a copy): the compute ceiling (one real batch replayed
  from memory) interleaved with the real fit. The verdict comes from the headroom, the ceiling over
  the real fit, so a loader that takes the step's CPU counts as much as one that makes it wait;
  the wait share and the cores the model's own step keeps busy are shown beside it;
* a ``tf.data`` pipeline's graph: what TensorFlow does anyway (its options and default static
  optimisations: stateless maps run in parallel, a prefetch is injected), and the fixes worth
  trying (``candidates``). Each is applied to a copy of the graph (``rewrite``), checked to yield
  the same elements over an epoch and measured against the original, A, B, A, B (``trial``); the
  ones that gained again on the real fit. A fix within the noise is "checked: no gain here";
* what the doctor cannot apply (PyDataset workers, a generator, a feature cache) gets a predicted
  gain with its basis and range.

It returns a ``Diagnosis``: the ``verdict``, ``findings`` (one row per finding: ``code``, ``kind``
(symptom, correctness, speed, order), ``status`` (measured, predicted, no gain, unmeasured) and
``list`` (findings, checked: no gain here, not measured), ``where`` (the user's code), ``evidence``,
``fix`` in the user's own terms, ``expected_gain`` end to end with ``gain_low``/``gain_high``,
``loader_gain``, ``basis``, ``learn_more``), ``fixed`` (the best measured pipeline: train on it),
``tried`` and ``skipped``.

Finding codes (``CODES`` in ``kit.doctor.findings``, with each one's general fix):

====================================  ============================================================
``input_bound``                       symptom: the training step waits for input, or shares its CPU with the loader
``compute_bound``                     symptom: the loader keeps up; the model's step is the limit
``random_before_cache``               correctness: a random op before cache(): every epoch sees the first epoch's random draws
``shuffle_before_cache``              correctness: shuffle() before cache(): the order freezes after the first epoch
``python_in_pipeline``                speed: Python in the input pipeline (a generator, py_function, a PyDataset's __getitem__ holding the GIL)
``serial_map``                        speed: a map TensorFlow leaves serial
``map_before_batch``                  speed: a per-example map that gives the same output on whole batches
``serial_interleave``                 speed: Dataset.interleave without num_parallel_calls
``no_prefetch``                       speed: no prefetch at the end, and TensorFlow injects none
``options_off``                       speed: tf.data's automatic optimisations turned off in the pipeline's options
``no_cache``                          speed: decoded data that fits in memory, decoded again every epoch
``read_amplification``                speed: far more bytes read than the examples hold
``pydataset_single_worker``           speed: a keras.utils.PyDataset with one worker
``frozen_backbone_recomputed``        speed: frozen layers recomputed on every step
``augment_before_frozen_backbone``    speed: random augmentation computed ahead of a frozen backbone
``small_shuffle_buffer``              order: an example shuffle buffer much smaller than the dataset
====================================  ============================================================

On the command line: ``python -m kit doctor MODULE:FUNCTION [--model MODULE:FUNCTION] [--apply --out FILE]`` or ``--index CSV --variant NAME``.

The package: ``sources`` (what counts as a batch source), ``loader`` (the loader alone: its rate,
cores, bytes read, the Python the graph calls), ``measure`` (the fits, the frozen head, the trace,
``compare_fits``), ``graph`` (reading a tf.data pipeline),
``candidates`` (the fixes worth trying on it), ``rewrite`` (applying them to its graph), ``trial``
(checking and timing a fix), ``rules`` (the verdict and the predicted findings), ``findings`` (the
codes and ``Finding``), ``diagnosis`` (``diagnose``), ``report`` (``Diagnosis``), ``cli``.
"""

from __future__ import annotations

import importlib

from kit.doctor.cli import load_attr, register
from kit.doctor.findings import CODES, SYMPTOMS, Finding, table
from kit.doctor.report import Diagnosis

#: The names of the modules that import TensorFlow or Keras (the doctor's measurements, the
#: pipeline graph and its rewrites): loaded on first use, so that importing this package (as
#: ``python -m kit --help`` does) imports neither.
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
