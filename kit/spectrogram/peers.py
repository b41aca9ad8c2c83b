"""Whether the peers extra (Google Grain and ArrayRecord: ``pip install 'kit[peers]'``) is here.

``available()`` probes both (the first import of Grain happens there, its JAX-profiler warning
dropped); ``require(what)`` raises one clear ``ImportError`` naming the fix. Standard library
only: ``kit.spectrogram.convert`` (``convert --to arrayrecord``) and ``kit.spectrogram.grain``
ask it before they touch either library.
"""

from __future__ import annotations

import functools
import logging


class _NoJaxProfiler(logging.Filter):
    """Drops Grain's import-time warning that JAX's profiler is missing (this kit uses
    TensorFlow's): it printed an absl WARNING line into every command that imports Grain."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Failed to load jax profiler" not in record.getMessage()


@functools.cache
def available() -> str | None:
    """None if Grain and ArrayRecord import, else why not (one line, with the fix). The first
    import of Grain happens here, its JAX-profiler warning dropped (``_NoJaxProfiler``)."""
    quiet = _NoJaxProfiler()
    logging.getLogger("absl").addFilter(quiet)
    try:
        import grain  # noqa: F401  # optional extra: grain (probed here)
    except ImportError as e:
        return f"Google Grain is not installed ({e}); pip install 'kit[peers]' or make demo WITH_PEERS=1 (make test installs it)"
    finally:
        logging.getLogger("absl").removeFilter(quiet)
    try:
        from array_record.python import array_record_module  # noqa: F401  # optional extra: array_record (probed here)
    except ImportError as e:
        return f"ArrayRecord is not installed ({e}); pip install 'kit[peers]' or make demo WITH_PEERS=1 (make test installs it)"
    return None


def require(what: str) -> None:
    """Raises ``ImportError`` saying what to install when the peers extra is missing."""
    why = available()
    if why is not None:
        raise ImportError(f"{what} needs the peers extra (grain, array-record): {why}")
