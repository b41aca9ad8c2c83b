"""The pipeline doctor: point the kit at any input pipeline (and model), get findings each backed by a measurement.

``diagnose(source, model=None, *, max_seconds=120)`` measures, within its budget, the loader alone
(rate, latency, cores busy, bytes read per example), and with a compiled Keras model (trained as a
copy) the compute ceiling against the real fit: the verdict comes from that headroom. On a
``tf.data`` pipeline it reads the graph, applies each fix worth trying to a copy, checks that it
yields the same elements and measures it against the original, interleaved; what it cannot apply
(PyDataset workers, a generator, a feature cache) gets a predicted gain with its basis and range.

It returns a ``Diagnosis``: the ``verdict``, the ``findings`` (one row per finding, codes below),
``fixed`` (the best measured pipeline), ``tried`` and ``skipped``. ``watch()`` diagnoses the first
``model.fit`` in its ``with`` block, as written; ``python -m kit doctor run train.py`` a script's. On the command line:
``python -m kit doctor MODULE:FUNCTION [--model MODULE:FUNCTION] [--apply --out FILE]`` or
``--index CSV --variant NAME``.

Finding codes (``CODES``), each with its kind and meaning:

"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit import lazy_face
from kit.doctor.cli import load_attr
from kit.doctor.findings import CODES, Finding
from kit.doctor.report import Diagnosis

if TYPE_CHECKING:
    from kit.doctor.diagnosis import diagnose
    from kit.doctor.measure import compare_fits
    from kit.doctor.run import watch

__doc__ = (__doc__ or "") + "\n".join(f"* ``{code}``, {kind}: {meaning}" for code, (meaning, kind, _) in CODES.items()) + "\n"

#: Names from the modules that import TensorFlow or Keras: loaded on first use, so that importing
#: this package imports neither.
_LAZY = {"diagnose": "kit.doctor.diagnosis", "compare_fits": "kit.doctor.measure", "watch": "kit.doctor.run"}

__all__ = ["diagnose", "compare_fits", "watch", "Diagnosis", "Finding", "CODES", "load_attr"]


__getattr__, __dir__ = lazy_face(__name__, _LAZY)
