"""The page cache, for the lab's instruments: the disk's sequential read and the page-in limit,
warming a store, the cost of a page's first touch, and whether the machine hands freed memory back.

* ``read_through`` reads files front to back with the next chunks asked for ahead (warming a
  store); ``cache_through`` brings them into the page cache with nothing copied (the disk's
  sequential rate); ``page_in`` does so and touches each page once (the page-in limit: the disk
  and this machine's cost of a page's first touch);
* ``first_touch`` copies a file's pages through a fresh mapping: the CPU a reader pays for pages
  new from the disk, against the same pages again;
* ``free_page_reporting`` says whether this machine hands the memory it frees back to its host.

Eviction and residency (``evict``, ``cached_fraction``, ``Residency``) are the kit's:
``kit.system.pagecache``.
"""

from __future__ import annotations

import mmap
import os
import resource
import time
from pathlib import Path

import numpy as np

from kit.store.files import ask_to_read, kernel_read_bytes
from kit.system.pagecache import Residency

__all__ = ["READ_AHEAD_CHUNKS", "POLL_S", "STALL_S", "read_through", "cache_through", "page_in", "first_touch",
           "free_page_reporting"]

#: ``read_through`` and ``cache_through`` read 16 MB chunks, the kernel asked for this many ahead.
READ_AHEAD_CHUNKS = 8
#: ``cache_through``: how often it asks whether a chunk is cached, and how long a chunk may
#: make no progress before it is read by hand.
POLL_S = 0.0005
STALL_S = 2.0


class _Chunks:
    """``paths`` as one stream of ``chunk``-sized pieces, file after file: ``self[j]`` is
    ``(file index, offset, length)``, and ``ask(j)`` asks the kernel to read piece ``j``
    into the page cache (``POSIX_FADV_WILLNEED``, in pieces of ``kit.store.kernel_read_bytes``;
    nothing past the last). ``read_through`` and ``cache_through`` ask ahead with it."""

    def __init__(self, paths, chunk: int):
        self.paths = [Path(p) for p in paths]
        sizes = [os.path.getsize(p) for p in self.paths]
        self.items = [(i, offset, min(chunk, size - offset))
                      for i, size in enumerate(sizes) for offset in range(0, size, chunk)]
        self.total = sum(sizes)
        self._pieces: dict[int, int] = {}  # file index -> the most one ask reads of it

    def __len__(self):
        return len(self.items)

    def __getitem__(self, j):
        return self.items[j]

    def ask(self, j):
        if j >= len(self.items):
            return
        i, offset, length = self.items[j]
        if i not in self._pieces:
            self._pieces[i] = kernel_read_bytes(self.paths[i])
        fd = os.open(self.paths[i], os.O_RDONLY)
        try:
            ask_to_read(fd, offset, length, self._pieces[i])
        finally:
            os.close(fd)  # what was asked for is read all the same


def read_through(paths, chunk: int = 16 << 20, ahead: int = READ_AHEAD_CHUNKS) -> tuple[int, float]:
    """Reads ``paths`` front to back, one after the other, in ``chunk`` reads, the kernel
    asked for the next ``ahead`` chunks (``POSIX_FADV_WILLNEED``) while each is read, so
    the disk works on many requests at once; returns ``(bytes, seconds)``. The chunks
    asked for run on into the next files: a store of many shards is read as one stream,
    with no pause at each shard's end. It warms a store before its warm epochs (its pages
    read as a reader reads them). It is not the disk's reference read (``cache_through``):
    one thread copying 16 MB reads into its buffer is bound by that copy as much as by the
    disk."""
    chunks = _Chunks(paths, chunk)

    def ask(j):  # the kernel asked for chunk j (of all the files', in order) to be read
        if ahead:
            chunks.ask(j)

    buf = bytearray(chunk)
    view = memoryview(buf)
    total = done = 0
    t0 = time.perf_counter()
    for j in range(min(ahead, len(chunks))):
        ask(j)
    for p in chunks.paths:
        with open(p, "rb", buffering=0) as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
            while n := f.readinto(view):
                total += n
                done += 1
                ask(done + ahead - 1)
    return total, time.perf_counter() - t0


def cache_through(paths, chunk: int = 16 << 20, ahead: int = READ_AHEAD_CHUNKS,
                  stall_s: float = STALL_S) -> tuple[int, float]:
    """The disk's sequential read rate, with nothing copied: asks the kernel to read
    ``paths`` front to back, one after the other, into the page cache, ``chunk`` at a
    time (``POSIX_FADV_WILLNEED``, in pieces of ``kit.store.kernel_read_bytes``), and
    waits (``mincore``) for each chunk's pages to be there, with the next ``ahead`` chunks
    (on into the next files) asked for while it waits; returns ``(bytes, seconds)``.

    Why not ``read_through``: one thread copying what it reads into its buffer is bound
    by that copy as much as by the disk, and a loader that maps the pages and copies
    nothing can then outrun "the disk". A chunk whose pages the kernel does not bring
    within ``stall_s`` seconds of no progress (a hint may be dropped) is read with
    ``pread``; ``read_through`` is used where ``mincore`` cannot be asked."""
    paths = [Path(p) for p in paths]
    try:
        residency = [Residency(p) for p in paths]
    except OSError:
        return read_through(paths, chunk, ahead)
    try:
        chunks = _Chunks(paths, chunk)
        ask = chunks.ask

        def wait(j):  # until chunk j is cached; read it where the kernel stops bringing it
            i, offset, length = chunks[j]
            seen, since = -1, time.perf_counter()
            while True:
                cached, pages = residency[i].cached(offset, length)
                if cached == pages:
                    return
                now = time.perf_counter()
                if cached != seen:
                    seen, since = cached, now
                elif now - since > stall_s:
                    with open(paths[i], "rb", buffering=0) as f:
                        os.pread(f.fileno(), length, offset)
                    return
                time.sleep(POLL_S)

        t0 = time.perf_counter()
        for j in range(min(max(ahead, 1), len(chunks))):
            ask(j)
        for j in range(len(chunks)):
            wait(j)
            ask(j + max(ahead, 1))
        return chunks.total, time.perf_counter() - t0
    finally:
        for r in residency:
            r.close()


def page_in(paths, chunk: int = 16 << 20, ahead: int = READ_AHEAD_CHUNKS) -> tuple[int, float]:
    """The page-in limit: the fastest a cold reader can have ``paths`` in its hands. Asks the
    kernel for them front to back ``chunk`` at a time, the next ``ahead`` chunks asked for
    ahead (as ``cache_through`` does), and touches each page of each chunk once, in order,
    through a read-only mapping (one byte a page), doing nothing else; returns
    ``(bytes, seconds)``.

    Against ``cache_through`` (the disk alone) it also pays what touching a page new from the
    disk costs this machine: on a VM whose host backs guest memory only when it is first
    used, about a CPU-second per GB here (``results/NOTES.md``), which no loader avoids."""

    paths = [Path(p) for p in paths]
    chunks = _Chunks(paths, chunk)
    maps: dict[int, np.memmap] = {}
    step = mmap.PAGESIZE
    sink = 0
    t0 = time.perf_counter()
    for j in range(min(max(ahead, 1), len(chunks))):
        chunks.ask(j)
    for j in range(len(chunks)):
        i, offset, length = chunks[j]
        if i not in maps:
            maps.clear()  # one file mapped at a time
            maps[i] = np.memmap(paths[i], np.uint8, "r")
        sink ^= int(maps[i][offset:offset + length:step].sum())  # one byte a page
        chunks.ask(j + max(ahead, 1))
    seconds = time.perf_counter() - t0
    maps.clear()
    del sink
    return chunks.total, seconds


def first_touch(path, nbytes: int, out: np.ndarray, piece: int = 64 << 20) -> tuple[float, float, float]:
    """Copies the first ``nbytes`` of ``path`` through a new read-only mapping into ``out``
    (a buffer whose pages are touched already); returns ``(seconds, user CPU-s, kernel
    CPU-s)``. Right after ``cache_through`` of an evicted file, the copy touches pages no
    process has read since the disk filled them; a second copy touches the same pages again.
    The difference is what a cold reader pays per byte beside the disk's own time."""

    mm = np.memmap(path, np.uint8, "r", shape=(nbytes,))
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    for i in range(0, nbytes, piece):
        out[i:i + piece] = mm[i:i + piece]
    seconds = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    del mm
    return seconds, r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime


def free_page_reporting(root: str = "/sys") -> str | None:
    """Whether this machine hands the memory it frees back to its host, in words, or None:
    a virtio balloon with free page reporting (feature bit 5 in
    ``/sys/bus/virtio/devices/*/features``). There, an evicted store's pages go back to the
    host, and the pages a cold epoch then reads into are new to it: the first read of each
    costs a fault in the host, CPU time a machine without it does not pay
    (``first_touch``, ``python -m lab.experiments.first_touch``, measures the cost)."""

    base = Path(root)
    for dev in sorted(base.glob("bus/virtio/devices/*")):
        try:
            device = int((dev / "device").read_text().strip(), 16)
            features = (dev / "features").read_text().strip()
        except (OSError, ValueError):
            continue
        if device != 5 or len(features) <= 5 or features[5] != "1":  # 5: balloon; bit 5: reporting
            continue
        what = "a virtio balloon hands freed memory back to the host (free page reporting"
        try:
            order = int((base / "module/page_reporting/parameters/page_reporting_order").read_text())
            what += f", in blocks of {(mmap.PAGESIZE << order) / 2**20:g} MB"
        except (OSError, ValueError):
            pass
        return what + ")"
    return None
