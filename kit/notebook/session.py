"""The setup every notebook runs first, ``FAST = kit.notebook.setup(fast=FAST)`` (its ``parameters``
cell holds ``FAST = None``, which papermill's ``-p FAST True`` sets), and its headline line.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import plotly.io as pio

import kit
from kit.cache.reuse import record_for_life
from kit.notebook.records import fast, shell, show
from kit.report.noise import keep_stderr_quiet
from kit.util import VERSION_FLOORS

#: Keras warnings that do not apply to the kit's loaders.
_IGNORED = (
    ".*shuffle=True.*",      # kit loaders shuffle themselves (every epoch, seeded)
    ".*ran out of data.*",   # Keras learns the epoch's length from the first epoch
)


_fast_mode = fast  # setup's argument ``fast`` hides the function there

#: How a fast-mode figure is marked, in the notebook and on the index page (``kit.report``).
FAST_NOTE = "FAST MODE"


def headline(text: str, *, sample: str, figures=(), summary: str | None = None) -> str:
    """Shows a notebook's headline, the line its index row shows; in fast mode marked as a
    demonstration, with its sample. Returns the line.

    Args:
        text: the headline, its figures rounded and with their units.
        sample: what the figures were measured on ("200 frames, 5 batches a round").
        figures: ``kit.notebook.records.figure`` / ``shared`` records of the figures it states
            (gathered into ``reports/headlines.json``).
        summary: the index's one sentence for this notebook (about 160 characters; None: the line).
    """
    line = f"{text} [{FAST_NOTE}: {sample}; a demonstration, not a measurement at scale]" if fast() else text
    if summary is not None and len(summary) > 180:
        raise ValueError(f"a headline's summary is one sentence for the index, about 160 characters; got {len(summary)}")
    return show(line, {"kind": "headline", "text": line, "summary": summary, "figures": list(figures), "fast": fast()})


def _older(version: str, floor: str) -> bool:
    def parts(v):
        out = []
        for p in v.split(".")[:3]:
            digits = "".join(ch for ch in p if ch.isdigit())
            out.append(int(digits) if digits else 0)
        return tuple(out)

    return parts(version) < parts(floor)


def versions() -> dict:
    """The installed versions of what the kit depends on most: ``{"kit", "tensorflow", "keras", "numpy"}``."""
    import keras  # keeps kit.notebook light: Keras, after setup sets its logging
    import tensorflow as tf  # keeps kit.notebook light: TensorFlow, after setup sets its logging

    return {"kit": kit.__version__, "tensorflow": tf.__version__, "keras": keras.__version__,
            "numpy": np.__version__}


def _in_kernel() -> bool:
    """Whether this is a Jupyter kernel (whose file descriptor 2 goes to the notebook)."""
    return type(shell()).__name__ == "ZMQInteractiveShell"


def setup(*, fast: bool | None = None, gpu_hint: str | None = None, log_level: str = "2",
          quiet: bool = True) -> bool:
    """Prepares this kernel for a kit notebook; returns ``FAST``.

    Sets TensorFlow's log levels, drops its start-up lines from a kernel's stderr
    (``kit.report.noise``), filters the Keras warnings that do not apply to kit loaders, sets the
    plotly renderer (``$PLOTLY_RENDERER``, else ``plotly_mimetype``: figures as JSON only), prints
    the versions (warning below ``kit.util.VERSION_FLOORS``) and the GPUs TensorFlow sees, without
    initialising it.

    Args:
        fast: sets ``KIT_FAST`` for this kernel and what it starts; None keeps it as it is.
        gpu_hint: what to print when there is no GPU.
        log_level: ``TF_CPP_MIN_LOG_LEVEL`` (``"2"``: errors only).
        quiet: drop the start-up lines from the kernel's stderr.
    """
    if fast is not None:
        os.environ["KIT_FAST"] = "1" if fast else "0"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", log_level)
    if quiet and _in_kernel():  # before TensorFlow loads: what it prints then ignores the log level
        keep_stderr_quiet()
    record_for_life()  # under `python -m kit demo`: which cache entries this notebook reused
    for message in _IGNORED:
        warnings.filterwarnings("ignore", message=message)
    import tensorflow as tf  # keeps kit.notebook light: TensorFlow, after setup sets its logging

    tf.get_logger().setLevel("ERROR")
    pio.renderers.default = os.environ.get("PLOTLY_RENDERER", "plotly_mimetype")
    have = versions()
    print(", ".join(f"{name} {v}" for name, v in have.items()))
    for name, floor in VERSION_FLOORS.items():
        if _older(have[name], floor):
            warnings.warn(f"{name} {have[name]} is older than {floor}, the oldest the kit was tested with; "
                          f"pip install '{name}>={floor}'", stacklevel=2)
    gpus = tf.config.list_physical_devices("GPU")
    print(f"GPUs: {len(gpus)}" if gpus else
          gpu_hint or "No GPU found: everything below runs on the CPU (loader speeds are what matter here).")
    if _fast_mode():
        print(f"{FAST_NOTE} (KIT_FAST=1): small samples and short measurements, so the notebook runs in seconds; "
              f"its figures show the path, not your scale. Unset KIT_FAST for the full run.")
    return _fast_mode()
