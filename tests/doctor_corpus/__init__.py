"""A corpus of foreign pipelines for the pipeline doctor (issue 30, item 6): each module reimplements a
well-known public pipeline on generated data, with bottlenecks planted in ``slow`` and fixed in its twin.

Each case module has:

* ``SOURCE``: the public pipeline it follows, with its URL;
* ``make_data(folder)``: writes its generated data under ``folder`` (idempotent);
* ``slow(folder)``: the pipeline with the planted finding(s); ``model()``: the compiled model it feeds;
* ``fixed(folder, code=None)``: the twin with ``code`` fixed (all planted codes when None); where the fix
  changes the model too (a feature cache), ``fixed_model(code=None)`` gives the model its batches need;
* ``PLANTED``: the finding codes planted; ``VERDICT``: the verdict measured on ``slow``;
* ``EXACT``: whether ``slow`` and ``fixed()`` deliver the same examples (False where the examples are
  random or the fix delivers features: then the same count and labels).

``python -m lab.doctor_corpus`` measures the ground truth and scores ``kit.doctor.diagnose`` on it.
"""

from __future__ import annotations

import hashlib
import importlib
from collections import Counter

#: The cases, in the order the script runs them.
CASES = (
    "load_images",
    "data_performance",
    "keras_scratch",
    "sequence_npy",
    "tfrecord_parse",
    "kaggle_numpy_function",
    "spectrogram_generator",
    "transfer_frozen",
    "transfer_augment",
    "shuffle_cache",
    "augment_cache",
    "compute_bound",
)

SYMPTOMS = ("input_bound", "compute_bound")
CORRECTNESS = ("random_before_cache", "shuffle_before_cache")
ORDER = ("small_shuffle_buffer",)
#: Speed codes whose fix changes the model, not the loader.
MODEL_FIXES = ("frozen_backbone_recomputed",)
#: Codes planted by structure: no speed of their own to measure.
STRUCTURAL = CORRECTNESS + ORDER + ("augment_before_frozen_backbone",)
SPEED = ("python_in_pipeline", "serial_map", "map_before_batch", "serial_interleave", "no_prefetch", "no_cache",
         "read_amplification", "pydataset_single_worker", "frozen_backbone_recomputed",
         "augment_before_frozen_backbone")
NAMES = ("SOURCE", "make_data", "slow", "fixed", "model", "PLANTED", "VERDICT", "EXACT")
VERDICTS = ("input-bound", "compute-bound", "balanced")


def load(name: str):
    """The case module ``name``."""
    if name not in CASES:
        raise ValueError(f"case must be one of {', '.join(CASES)}, got {name!r}")
    return importlib.import_module(f"doctor_corpus.{name}")


def kind(code: str) -> str:
    """The kind of a code where the doctor's table has none: symptom, correctness, order or speed."""
    if code in SYMPTOMS:
        return "symptom"
    if code in CORRECTNESS:
        return "correctness"
    return "order" if code in ORDER else "speed"


def measured_codes(case) -> list[str]:
    """The planted codes whose fix has a speed to measure."""
    return [c for c in case.PLANTED if c not in STRUCTURAL]


def fixed_pair(case, folder, code=None):
    """``(source, model)`` of the twin with ``code`` fixed (all when None)."""
    make = getattr(case, "fixed_model", None)
    return case.fixed(folder, code), (make(code) if make is not None else case.model())


def examples(source) -> Counter:
    """One epoch of ``source`` as a multiset of (example digest, label): values rounded to 4 decimals."""
    import numpy as np

    from kit import timing

    out: Counter = Counter()
    for batch in timing.iterate(source):
        x, y = batch[0], batch[1]
        x, y = np.asarray(x), np.asarray(y)
        for xi, yi in zip(x, y):
            digest = hashlib.sha1(np.round(xi.astype(np.float64), 4).tobytes()).hexdigest()[:16]
            out[(digest, int(yi))] += 1
    return out
