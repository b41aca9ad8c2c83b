"""The held-out half of the pipeline doctor's corpus (issue 44): reimplemented public pipelines from
sources the development half (``tests/doctor_corpus``) does not use, written apart from the doctor's
code so that they are not fitted to it, and scored only at the end.

Each case module has the interface of ``tests/doctor_corpus`` (its ``__init__`` documents it):
``SOURCE`` (with its URL), ``make_data(folder)`` (idempotent, by a marker), ``slow(folder)``,
``fixed(folder, code=None)``, ``model()``, optionally ``fixed_model(code=None)``, ``PLANTED`` (codes from
docs/doctor.md's table; empty for a control), ``TOLERATED`` (codes neither right nor wrong), ``VERDICT``
(the verdict measured by ``python -m lab.doctor_truth``, checked there, never used in its place), ``EXACT``,
``NAME``, plus ``DOMAIN`` (one of ``DOMAINS``).

The ground truth is measured by ``python -m lab.doctor_truth --corpus heldout`` (no kit code):
lab/results/doctor_truth_heldout.json.
"""

from __future__ import annotations

import importlib

#: The cases, in the order the scripts run them.
CASES = (
    "simple_audio",
    "audio_nocache",
    "csv_lines",
    "structured_generator",
    "timeseries_pydataset",
    "timeseries_classification",
    "text_scratch",
    "load_text",
    "multi_input",
    "subclassed_jpeg",
    "rotation_numpy_function",
    "segmentation",
    "load_numpy",
    "flowers_augment",
)

#: The issue's five domains.
DOMAINS = ("images", "audio", "text", "time series or tabular", "multi-input or subclassed")
NAMES = ("SOURCE", "make_data", "slow", "fixed", "model", "PLANTED", "TOLERATED", "VERDICT", "EXACT", "NAME",
         "DOMAIN")


def load(name: str):
    """The case module ``name``."""
    if name not in CASES:
        raise ValueError(f"case must be one of {', '.join(CASES)}, got {name!r}")
    return importlib.import_module(f"doctor_corpus_heldout.{name}")
