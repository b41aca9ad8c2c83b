"""glibc's malloc thresholds, which TensorFlow's generator op changes for the whole process: the team's
instrument (lab/experiments/generator_malloc.py, tests/test_malloc.py), not part of the kit.

TensorFlow's generator op (``tf.data.Dataset.from_generator``, and so ``model.fit`` on a PyDataset or a
Python generator, which Keras reads through it) calls ``mallopt(M_TRIM_THRESHOLD, 128 KB)`` at its first
batch, once per process, against the memory growth of tensorflow/tensorflow#37653 (its log says "Memory
patch applied"). Setting a threshold turns off glibc's dynamic thresholds for good: from then on every
block of 128 KB or more is mapped and unmapped on its own, so a training step whose tensors are larger pays
page faults every step, in system time. A process that never read a generator keeps the dynamic
thresholds, which grow to its largest freed block (at most 32 MB mapped and 64 MB trimmed).

The user's fix is the plain one: read the data through tf.data without a Python generator (a store,
arrays), which never sets them. Off glibc, ``use`` does nothing and returns False.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import NamedTuple

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


class Thresholds(NamedTuple):
    mmap: int  # blocks this size and larger are mapped on their own
    trim: int  # free memory at the heap's top beyond this is given back


#: What TensorFlow's generator op leaves a process in (128 KB: glibc's default mapping threshold, and the
#: trim threshold TensorFlow sets).
GENERATOR = Thresholds(mmap=128 * 1024, trim=128 * 1024)
#: A process without a generator, its dynamic thresholds grown to their ceiling (glibc's
#: DEFAULT_MMAP_THRESHOLD_MAX on 64-bit, and twice that, as glibc trims at).
OWN = Thresholds(mmap=32 * 1024 * 1024, trim=64 * 1024 * 1024)


@functools.cache
def _mallopt():
    """glibc's ``mallopt``, or None (another C library, another system)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018  (glibc only: musl has a mallopt that ignores these)
        return libc.mallopt
    except (OSError, AttributeError):
        return None


def available() -> bool:
    """Whether this process's malloc is glibc's, whose thresholds ``use`` sets."""
    return _mallopt() is not None


def use(state: Thresholds) -> bool:
    """Sets glibc's mapping and trim thresholds to ``state`` for the whole process; False where this is
    not glibc (nothing set)."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, int(state.mmap))) and bool(mallopt(_M_TRIM_THRESHOLD, int(state.trim)))
