"""The setup every notebook runs first: ``FAST = kit.notebook.setup(fast=FAST)``.

A notebook's ``parameters`` cell holds plain values (``FAST = None``), so that papermill's
``-p FAST True`` reaches them; the next cell calls ``setup(fast=FAST)`` and derives the sizes.

One call instead of a setup cell copied into every notebook: TensorFlow's log level
and its start-up lines kept out of the cell's output, the warning filters the kit's
loaders call for, the installed versions checked against the floors the kit was tested
with, the plotly renderer (so that an HTML export keeps its figures, offline), and a
line on the GPUs (a hint, never a failure).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import plotly.io as pio

import kit
from kit.cache.reuse import record_for_life
from kit.notebook.records import shell, show
from kit.report.noise import keep_stderr_quiet
from kit.util import VERSION_FLOORS

__all__ = ["setup", "versions", "fast", "headline", "FAST_NOTE"]

#: Keras warnings that do not apply to the kit's loaders.
_IGNORED = (
    ".*shuffle=True.*",      # kit loaders shuffle themselves (every epoch, seeded)
    ".*ran out of data.*",   # Keras learns the epoch's length from the first epoch
)


def fast() -> bool:
    """True when ``KIT_FAST=1`` (``make test``): the notebooks shrink to seconds."""
    return os.environ.get("KIT_FAST") == "1"


_fast_mode = fast  # setup's argument ``fast`` hides the function there


#: How a fast-mode figure is marked, in the notebook and on the index page (``kit.report``).
FAST_NOTE = "FAST MODE"


def headline(text: str, *, sample: str, figures=(), summary: str | None = None) -> str:
    """Prints a notebook's headline figure, one line; in fast mode marked as such, with its sample.

    The index page (``kit.report``) shows the first line the cell tagged ``headline`` prints,
    so that line is this one. Fast mode (``KIT_FAST=1``) measures small samples in seconds:
    a demonstration of the path, not a figure to quote, and the line says so.

    Args:
        text: the headline, its figures rounded and with their units.
        sample: what the figures were measured on ("200 frames, 5 batches a round").
        figures: ``kit.notebook.records.figure`` / ``shared`` records of the figures the line states,
            which ``python -m kit demo`` gathers into ``reports/headlines.json``.
        summary: the index's one sentence for this notebook (about 160 characters at most;
            None: the index shows the line).

    Returns:
        The line shown.
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

    ``fast`` True or False sets ``KIT_FAST`` for this kernel (and what it starts), so that
    ``papermill NB OUT -p FAST True`` runs fast mode as ``KIT_FAST=1`` does; None keeps
    ``KIT_FAST`` as it is.

    Sets TensorFlow's C++ log level (unless already set) and its Python logger to
    errors; in a Jupyter kernel, drops from its stderr the lines TensorFlow prints
    whatever the level (``kit.report.noise.NOISE``: the absl banner, oneDNN's and the CUDA
    probes' lines) while every other line, errors included, still shows; filters
    the Keras warnings that do not apply to kit loaders, sets the plotly renderer
    (``$PLOTLY_RENDERER``, else ``plotly_mimetype``: each figure is its JSON, which JupyterLab
    draws with its own plotly.js and ``kit.report`` with the reports folder's one copy, so an
    executed notebook carries no copy of the library), prints the
    versions and warns when one is older than the floors the kit was tested with
    (``kit.util.VERSION_FLOORS``), and prints how many GPUs TensorFlow sees (without
    initialising it: a strategy can still be made after).

    Args:
        fast: fast mode (small samples, short measurements); None: ``KIT_FAST=1`` decides.
        gpu_hint: what to print when there is no GPU (a default line otherwise).
        log_level: ``TF_CPP_MIN_LOG_LEVEL`` (``"2"``: errors only; ``"0"`` everything).
        quiet: drop the ``kit.report.noise.NOISE`` lines from the kernel's stderr (False: keep them).

    Returns:
        ``fast()``.
    """
    if fast is not None:
        os.environ["KIT_FAST"] = "1" if fast else "0"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", log_level)
    if quiet and _in_kernel():
        # Before TensorFlow loads: what it prints at load time ignores the log level.
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
