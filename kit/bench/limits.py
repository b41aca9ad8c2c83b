"""What this machine can do, measured in the bench's own run: the limits a loader's rate is held against.

* ``memory_copy``: bytes per second that NumPy copies from one buffer in RAM to another
  (``np.copyto``, which lets go of the GIL), by one thread and by several at once. Every loader
  writes each frame it delivers at least once.
* ``tfdata_elements``: batches per second that tf.data itself passes through a pipeline that does
  nothing (one batch, repeated, prefetched), read as the bench reads the loaders: no tf.data
  loader delivers more batches than that.
* ``page_cache_read``: bytes per second read from files already in the page cache (plain reads
  into one buffer): what a loader that reads its files (``read``, not a memory map) pays per byte.

``measure`` reads them all; a bench reads them before and after its rounds and keeps the faster
read of each (``Limits``), so that a limit is not one hiccup of the machine.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from kit.util import usable_cpus

#: Bytes each thread copies at a time: larger than this machine's caches, so RAM is measured.
COPY_BYTES = 64 << 20
#: The read buffer of ``page_cache_read`` (bytes).
READ_CHUNK = 8 << 20

HOW = {
    "memory_copy": "np.copyto of {mb} MB buffers in RAM, by {threads} thread(s) at once",
    "tfdata_elements": "tf.data.Dataset.from_tensors(one batch).repeat().prefetch(AUTOTUNE), read as the loaders "
                       "are (kit.timing.measure)",
    "page_cache_read": "the {what} read in {mb} MB pieces into one buffer, from the page cache",
}


def memory_copy(threads: int = 1, *, seconds: float = 0.3, nbytes: int = COPY_BYTES) -> float:
    """Bytes per second copied in RAM by ``threads`` threads at once, each copying its own
    ``nbytes`` buffer into another (already written once, so no page is new) for ``seconds``."""
    bufs = [(np.ones(nbytes, np.uint8), np.zeros(nbytes, np.uint8)) for _ in range(threads)]

    def copy(pair):
        src, dst = pair
        np.copyto(dst, src)  # every page of both written once before the clock starts
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            np.copyto(dst, src)
            n += nbytes
        return n, time.perf_counter() - t0

    with ThreadPoolExecutor(threads) as pool:
        return sum(n / s for n, s in pool.map(copy, bufs))


def tfdata_elements(batch, *, seconds: float = 0.3) -> float:
    """Batches per second through tf.data doing nothing: ``batch`` (one batch, any structure of
    arrays) from ``from_tensors``, repeated and prefetched, timed by ``kit.timing.measure``."""
    import tensorflow as tf  # keeps kit.bench.limits light: TensorFlow

    from kit import timing

    ds = tf.data.Dataset.from_tensors(batch).repeat().prefetch(tf.data.AUTOTUNE)
    return timing.measure(ds, num_batches=10, warmup=5, min_seconds=seconds).batches_per_s


def page_cache_read(files, *, seconds: float = 0.3, chunk: int = READ_CHUNK) -> float:
    """Bytes per second read from ``files`` (in the page cache: the bench has read them in) into
    one buffer of ``chunk`` bytes, file after file, for at least ``seconds``."""
    files = [Path(f) for f in files]
    if not files:
        raise ValueError("page_cache_read needs at least one file")
    buf = bytearray(chunk)
    n, t0 = 0, time.perf_counter()
    while True:
        for f in files:
            with open(f, "rb", buffering=0) as fh:
                while got := fh.readinto(buf):
                    n += got
            if time.perf_counter() - t0 >= seconds:
                return n / (time.perf_counter() - t0)


class Limits:
    """The limits of one bench run, each read ``read()`` times (before and after the rounds).

    Args:
        batch: one batch as the loaders deliver it (for ``tfdata_elements``).
        files: files to read from the page cache (a store's shards), or None: no read limit.
        what: what ``files`` are, for the ``how`` line.
        seconds: how long each limit is read each time.
    """

    def __init__(self, batch, files=None, *, what: str = "store's files", seconds: float = 0.3):
        self.batch, self.files, self.seconds = batch, files, seconds
        self.threads = max(2, usable_cpus())
        self.reads: dict[str, list[float]] = {}
        self.how: dict[str, str] = {
            "memory_copy_1_thread": HOW["memory_copy"].format(mb=COPY_BYTES >> 20, threads=1),
            f"memory_copy_{self.threads}_threads": HOW["memory_copy"].format(mb=COPY_BYTES >> 20,
                                                                             threads=self.threads),
            "tfdata_elements": HOW["tfdata_elements"]}
        if files:
            self.how["page_cache_read"] = HOW["page_cache_read"].format(what=what, mb=READ_CHUNK >> 20)

    def read(self) -> None:
        """Reads every limit once more."""
        got = {"memory_copy_1_thread": memory_copy(1, seconds=self.seconds),
               f"memory_copy_{self.threads}_threads": memory_copy(self.threads, seconds=self.seconds),
               "tfdata_elements": tfdata_elements(self.batch, seconds=self.seconds)}
        if self.files:
            got["page_cache_read"] = page_cache_read(self.files, seconds=self.seconds)
        for k, v in got.items():
            self.reads.setdefault(k, []).append(v)

    def rate(self, name: str) -> float:
        """The faster read of the limit ``name``."""
        return max(self.reads[name])

    @property
    def copy(self) -> str:
        """The name of the memory copy by every thread: the copy limit the loaders are held against."""
        return f"memory_copy_{self.threads}_threads"

    def to_json(self) -> dict:
        """``{name: {"rate", "unit", "reads", "how"}}``: the faster read, its unit, every read, how it was read."""
        return {k: {"rate": self.rate(k), "unit": "elements/s" if k == "tfdata_elements" else "bytes/s",
                    "reads": list(self.reads[k]), "how": self.how[k]} for k in self.reads}


def fraction_of_limit(rate: float, limits: dict[str, float]) -> tuple[str, float, float]:
    """The limit that binds a loader: of ``limits`` (name -> the examples per second it allows
    that loader), the lowest. Returns ``(name, examples_per_s, rate / examples_per_s)``."""
    name = min(limits, key=lambda k: limits[k])
    return name, limits[name], rate / limits[name]
