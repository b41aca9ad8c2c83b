"""Batch buffers kept in the process from one batch to the next (glibc malloc's thresholds).

Every batch a loader delivers is made of fresh buffers of a few MB: a gather's output,
a decoded block of records, a cast to float32, the batch Keras copies. glibc's malloc
gives such blocks back to the kernel when they are freed: a request of at least its
mmap threshold gets a mapping of its own, unmapped on free, and freed memory at the
top of a heap beyond its trim threshold is released. The next batch then faults the
same amount in again, zeroed by the kernel: minor page faults, kernel time on the
cores the loader needs. (glibc raises its mmap threshold as large blocks are freed,
but not for every thread's heap, and not its trim threshold far enough: TensorFlow's
many threads keep hitting both.)

``keep_freed_memory()`` sets both thresholds with ``mallopt(3)``: blocks up to
``MMAP_THRESHOLD`` (32 MB, the most glibc accepts) come from the heaps, and freed
memory stays mapped up to ``TRIM_THRESHOLD`` at the top of each, so the next batch
reuses pages that are already there. ``python -m kit`` and the kit's notebooks
(``kit.notebook.session``) call it first; a training script can call it too. It changes
nothing where the C library is not glibc, where another allocator is preloaded, where
``GLIBC_TUNABLES`` already sets malloc tunables (the caller chose), or where
``KIT_MALLOC=default``. ``malloc_setting()`` says which, and every bench result
records it with its machine (``kit.results.this_machine``), so figures measured
either way are never mixed up unawares.

The price: a process keeps up to ``TRIM_THRESHOLD`` of freed memory per heap instead of
returning it at once (glibc makes a heap per thread, up to 8 per core).
"""

from __future__ import annotations

import ctypes
import os
import resource

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "OPT_OUT", "keep_freed_memory", "malloc_setting", "minor_faults"]

#: Requests below this come from malloc's heaps (glibc refuses more than 32 MB on 64-bit).
MMAP_THRESHOLD = 32 << 20
#: Freed memory kept at the top of a heap before any is given back to the kernel.
TRIM_THRESHOLD = 128 << 20
#: ``KIT_MALLOC`` set to this leaves malloc as it is.
OPT_OUT = "default"

# mallopt(3) parameters (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_state: dict | None = None


def _glibc() -> str | None:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):
        return None
    return text if text and text.startswith("glibc") else None


def _untouched(why: str, libc: str | None) -> dict:
    return {"allocator": libc or "not glibc", "kept_by_kit": False, "why": why}


def keep_freed_memory(*, mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = TRIM_THRESHOLD) -> dict:
    """Keeps freed batch buffers mapped in this process (see the module's docstring).

    Safe to call more than once (the first call decides). Returns ``malloc_setting()``:
    ``{"allocator", "kept_by_kit", ...}`` with the thresholds set, or ``why`` not.

    Raises:
        ValueError: a threshold that is not a positive number of bytes, or an mmap
            threshold above 32 MB (glibc refuses it).
    """
    global _state
    for name, value in (("mmap_threshold", mmap_threshold), ("trim_threshold", trim_threshold)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive number of bytes, got {value!r}")
    if mmap_threshold > MMAP_THRESHOLD:
        raise ValueError(f"mmap_threshold must be at most {MMAP_THRESHOLD >> 20} MB (glibc's limit), "
                         f"got {mmap_threshold}")
    if _state is not None:
        return dict(_state)
    libc = _glibc()
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    preload = os.environ.get("LD_PRELOAD", "")
    if os.environ.get("KIT_MALLOC", "").strip().lower() == OPT_OUT:
        _state = _untouched(f"KIT_MALLOC={OPT_OUT}", libc)
    elif libc is None:
        _state = _untouched("the C library is not glibc", libc)
    elif "malloc" in preload.lower():
        _state = _untouched(f"another allocator is preloaded (LD_PRELOAD={preload})", libc)
    elif "glibc.malloc." in tunables:
        _state = _untouched(f"GLIBC_TUNABLES sets malloc's tunables ({tunables})", libc)
    else:
        mallopt = ctypes.CDLL(None).mallopt
        mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        if mallopt(_M_MMAP_THRESHOLD, mmap_threshold) == 1 and mallopt(_M_TRIM_THRESHOLD, trim_threshold) == 1:
            _state = {"allocator": libc, "kept_by_kit": True, "mmap_threshold": mmap_threshold,
                      "trim_threshold": trim_threshold}
        else:
            _state = _untouched("mallopt refused the thresholds", libc)
    return dict(_state)


def malloc_setting() -> dict:
    """What ``keep_freed_memory`` did in this process (``why`` it was not called, if not)."""
    return dict(_state) if _state is not None else _untouched("keep_freed_memory() not called", _glibc())


def minor_faults() -> int:
    """Minor page faults of this process so far (pages mapped in without a disk read:
    fresh memory, or pages already in the page cache)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
