"""glibc's malloc thresholds, which TensorFlow's generator op changes for the whole process: the doctor's
measuring, not a fix for a user to copy.

TensorFlow's generator op (``tf.data.Dataset.from_generator``, and so ``model.fit`` on a PyDataset or a
Python generator, which Keras reads through it) calls ``mallopt(M_TRIM_THRESHOLD, 128 KB)`` at its first
batch, once per process, against the memory growth of tensorflow/tensorflow#37653 (its log says "Memory
patch applied"). Setting a threshold turns off glibc's dynamic thresholds for good: from then on every
block of 128 KB or more is mapped and unmapped on its own, so a training step whose tensors are larger pays
page faults every step, in system time. A process that never read a generator keeps the dynamic
thresholds, which grow to its largest freed block (at most 32 MB mapped and 64 MB trimmed).

The doctor fits several sources in one process, where the first generator read would set them for all: where
the user's fit reads a generator, each fit gets the thresholds its own process would have
(``as_own_process``: ``GENERATOR``, what TensorFlow's patch leaves a process whose thresholds had not grown,
both 128 KB; ``OWN``, glibc's dynamic ceiling), and ``generator_malloc`` times the real fit both ways. The
user's fix is the plain one: read the data through tf.data without a Python generator (a store, arrays),
which never sets them. Off glibc, ``use`` does nothing and returns False.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
from typing import NamedTuple

import numpy as np

from kit.doctor.findings import Finding
from kit.doctor.sources import feeds_generator, is_dataset, is_pydataset

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


#: The share of the doctor's budget for ``generator_malloc``'s A/B, and its rounds.
SHARE, ROUNDS = 0.1, 2


def as_own_process(source, generator: bool) -> None:
    """With ``generator`` (the user's fit reads a generator, ``feeds_generator``): the malloc thresholds a
    process fitting on ``source`` alone would run with : TensorFlow's after its
    generator op, or a process's own without one. The doctor fits several sources in one process, where
    the first generator read would set them for all."""
    if generator:
        use(GENERATOR if feeds_generator(source) else OWN)


def largest_output_bytes(model, batch_size: int) -> int | None:
    """The largest layer output of ``model`` on a batch of ``batch_size``, in bytes; None where a layer's
    output or its shape is unknown (a subclassed model)."""
    largest = 0
    for layer in getattr(model, "layers", None) or []:
        try:
            outputs = layer.output if isinstance(layer.output, (list, tuple)) else [layer.output]
            for o in outputs:
                dims = [int(d) for d in o.shape[1:]]  # None: unknown, raises
                largest = max(largest, batch_size * math.prod(dims) * np.dtype(o.dtype).itemsize)
        except (AttributeError, TypeError, ValueError):
            return None
    return largest if getattr(model, "layers", None) else None


def generator_malloc(copy, source, batch_size: int, budget, max_seconds: float, *,
                     per_epoch: bool = False) -> tuple[list[Finding], float]:
    """The real fit with TensorFlow's malloc thresholds (what its generator op leaves the process in)
    against a process's own, interleaved: ``generator_malloc`` where the second
    gains beyond the noise. Not run where the model's largest layer output is under the mapping
    threshold (none of the step's tensors is mapped on its own). Returns ``(findings, gain)``: the
    median gain where it is real, else 1.0."""
    largest = largest_output_bytes(copy, batch_size)
    if largest is not None and largest < GENERATOR.mmap:
        return [], 1.0  # no tensor of the step is mapped on its own, whatever the thresholds
    what = "the A/B of the malloc thresholds TensorFlow's generator sets"
    seconds = budget.take(SHARE * max_seconds, what, least=0.6)
    if not seconds:
        return [], 1.0

    from kit.doctor import trial  # noqa: PLC0415  (TensorFlow)
    from kit.doctor.measure import fit_once  # noqa: PLC0415  (measure imports this module)

    def rate(state, s):
        use(state)
        return fit_once(copy, source, batch_size=batch_size, max_seconds=s, per_epoch=per_epoch)["examples_per_s"]

    rounds = ROUNDS
    try:
        gain = trial.ab(GENERATOR, OWN, seconds=seconds / (2 * rounds), rounds=rounds, rate=rate)
    finally:
        use(GENERATOR)
    if not gain.real:
        return [], 1.0
    reader = "your PyDataset" if is_pydataset(source) else "your generator" if not is_dataset(source) else "from_generator"
    return [Finding(
        "generator_malloc",
        f"Keras reads {reader} through TensorFlow's generator op, which sets glibc's malloc thresholds for the "
        f"whole process (128 KB): the training step's larger tensors are then mapped and unmapped every step",
        gain.median, f"measured: the real fit with the thresholds a process without a generator keeps, against "
                     f"TensorFlow's, interleaved, {gain.text()}; reading through tf.data instead is what gives them "
                     f"(compute_once's A/B times that change itself)",
        gain_low=gain.low, gain_high=gain.high)], gain.median
