"""The doctor's measurements of the loader alone: rate, latency, cores busy, bytes read and what reading
them costs here, the Python the graph calls, and batching alone on a replayed example."""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time

import tensorflow as tf

from kit import timing
from kit.doctor.sources import loop
from kit.timing.batches import batch_size_of
from kit.util import process_io, usable_cpus

#: Bytes read per example (``rchar``) from which a loader counts as reading files.
READS_FILE_BYTES = 4096


def cpu_seconds() -> float:
    """CPU seconds this process has used, user and system."""
    t = os.times()
    return t.user + t.system


def load_average() -> float:
    """The one-minute load average (NaN where the system has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return math.nan


def read_seconds(nbytes: int, *, repeats: int = 20) -> float:
    """Seconds to open, read whole and close a file of ``nbytes`` (at most 64 MiB) held in the page
    cache: the median of ``repeats`` reads of a temporary file."""
    import tempfile  # noqa: PLC0415  (used here only)

    nbytes = int(min(max(nbytes, 1), 64 << 20))
    with tempfile.NamedTemporaryFile() as f:
        f.write(os.urandom(min(nbytes, 1 << 20)) * (nbytes // (1 << 20)) + os.urandom(nbytes % (1 << 20)))
        f.flush()
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            with open(f.name, "rb") as g:
                g.read()
            times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


@contextlib.contextmanager
def python_seconds():
    """Times the Python the graph calls while open (``py_function``, ``numpy_function``,
    ``from_generator``: TensorFlow's ``script_ops.FuncRegistry``, whose ``__call__`` is wrapped).
    Yields ``[cpu seconds, calls, wall seconds]``, filled as calls end (CPU of the calling thread;
    wall time includes waits for the GIL); ``None`` where this TensorFlow has no such registry."""
    try:
        from tensorflow.python.ops import script_ops  # noqa: PLC0415  (TensorFlow's own callback registry)
        registry = script_ops.FuncRegistry
        original = registry.__call__
    except (ImportError, AttributeError):
        yield None
        return
    spent = [0.0, 0, 0.0]
    lock = threading.Lock()

    def timed(self, token, device, args):
        t0, w0 = time.thread_time(), time.perf_counter()
        try:
            return original(self, token, device, args)
        finally:
            dt, dw = time.thread_time() - t0, time.perf_counter() - w0
            with lock:
                spent[0] += dt
                spent[1] += 1
                spent[2] += dw

    registry.__call__ = timed
    try:
        yield spent
    finally:
        registry.__call__ = original


def measure_loader(source, *, max_seconds: float, warmup: int = 1) -> dict:
    """The loader alone, read epoch after epoch for ``max_seconds`` after ``warmup`` batches: rate,
    latency, cores kept busy, bytes read per example, and the CPU and wall seconds per example in the
    Python the graph calls (``python_s_per_example``, ``python_wall_s_per_example``)."""
    sizes: list[int] = []
    it = loop(source, sizes)
    try:
        try:
            for _ in range(warmup):
                next(it)
        except StopIteration:
            raise ValueError("the source ended during the warm-up") from None
        sizes.clear()
        with python_seconds() as python:
            io0, cpu0, t0 = process_io(), cpu_seconds(), time.perf_counter()
            m = timing.measure(it, warmup=0, max_seconds=max_seconds)
            io1, cpu1, wall = process_io(), cpu_seconds(), time.perf_counter() - t0
            python = list(python) if python is not None else None
    finally:
        it.close()  # the epoch being read ends here (a PyDataset's workers stop), not when collected
    examples = sum(sizes)
    out = {"loader_examples_per_s": m.examples_per_s, "loader_latency_p50_ms": m.latency_p50_ms,
           "loader_latency_p95_ms": m.latency_p95_ms, "loader_examples": m.examples,
           "cores_busy": (cpu1 - cpu0) / wall if wall > 0 else math.nan, "cores": usable_cpus()}
    if python is not None and python[1] and examples:
        out["python_s_per_example"] = python[0] / examples  # CPU in the graph's Python callbacks
        out["python_wall_s_per_example"] = python[2] / examples  # their threads' time inside them
    if io0 is not None and io1 is not None and examples:
        out["rchar_per_example"] = (io1.get("rchar", 0) - io0.get("rchar", 0)) / examples
        out["read_bytes_per_example"] = (io1.get("read_bytes", 0) - io0.get("read_bytes", 0)) / examples
        out["window_examples"] = examples
        if out["rchar_per_example"] >= READS_FILE_BYTES:
            out["read_s_per_example"] = read_seconds(int(out["rchar_per_example"]))
    return out


def batching_rate(batch, *, max_seconds: float) -> float:
    """Examples/s of batching alone: the first example of ``batch`` replayed from memory and batched."""
    size = batch_size_of(batch)
    example = tf.nest.map_structure(lambda t: t[0], batch)
    ds = tf.data.Dataset.from_tensors(example).repeat().batch(size)
    return timing.measure(loop(ds, [], "batching alone"), warmup=1, max_seconds=max_seconds).examples_per_s
