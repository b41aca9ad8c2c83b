"""What this machine can do, measured in the bench's own run: the limits a loader's rate is held against.

* ``memory_copy``: bytes per second that NumPy copies from one buffer in RAM to another
  (``np.copyto``, which lets go of the GIL), by one thread and by several at once. Every loader
  writes each frame it delivers at least once.
* ``tfdata_elements``: batches per second that tf.data itself passes through a pipeline that does
  nothing (one batch, repeated, prefetched), read as the bench reads the loaders: no tf.data
  loader delivers more batches than that.
* ``page_cache_read``: bytes per second read from files already in the page cache (plain reads
  into one buffer): what a loader that reads its files (``read``, not a memory map) pays per byte.
* ``disk_read`` (a bench run cold, ``--cold``): bytes per second read from a store's files just
  evicted from the page cache, by as many threads as ``memory_copy``'s, each its own contiguous part
  (``disk_read``): what a loader that reads that store cold gets from the disk per byte.

A bench reads them before and after its rounds and keeps the faster read of each (``Limits``), so
that a limit is not one hiccup of the machine.

Run cold, a bench evicts each store's files before each timed round of the variants that read it
(``Cold``), with ``posix_fadvise(POSIX_FADV_DONTNEED)`` on read-only descriptors (no root needed
for clean pages; nothing is written to or removed from the files, and only the kit's own stores
are evicted), and asks the kernel (``mincore``) how much stayed cached. Where the files' file
system keeps them in memory (tmpfs, ramfs, an overlay whose upper layer is one: ``filesystem``),
or an eviction leaves their pages cached, nothing is read cold and the reason is said instead
(``Cold.why_not``): a page-cache rate is never shown as the disk's.
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import numpy as np

from kit.system import pagecache
from kit.timing import iterate
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
    "disk_read": "the {what} read cold in {mb} MB pieces by {threads} thread(s) at once, each its own contiguous "
                 "part: evicted from the page cache (posix_fadvise DONTNEED) before each pass over them, the "
                 "eviction not timed",
}
#: File systems whose files are their pages in memory: nothing there is read from a disk.
IN_MEMORY = ("tmpfs", "ramfs")
#: The largest share of a store's pages that may stay cached after an eviction for a read to count
#: as cold (a page another process maps, or written and not yet on the disk, stays).
STAYED = 0.05


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


def _unescape(field: str) -> str:
    """A path of ``/proc/mounts`` as it is (spaces and the like are written as octal escapes there)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def filesystem(path, mounts: str = "/proc/mounts") -> str:
    """The type of the file system that holds ``path`` (the mount nearest above it in ``mounts``);
    an overlay's as ``"overlay on <its upper layer's type>"``; ``""`` where ``mounts`` cannot be read."""
    path = str(Path(path).resolve())
    best, kind, options = "", "", ""
    try:
        with open(mounts) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 4:
                    continue
                mount = _unescape(parts[1])
                inside = path == mount or path.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind, options = mount, parts[2], parts[3]
    except OSError:
        return ""
    if kind == "overlay":
        upper = next((o[len("upperdir="):] for o in options.split(",") if o.startswith("upperdir=")), None)
        if upper and Path(_unescape(upper)).resolve() != Path(path):
            return f"overlay on {filesystem(_unescape(upper), mounts) or 'an unknown file system'}"
    return kind


def in_memory(files, mounts: str = "/proc/mounts") -> str | None:
    """Why ``files`` cannot be read cold where they are (their file system keeps files in memory:
    ``IN_MEMORY``, or an overlay on one; ``mounts`` lists the mounts), or None."""
    for f in files:
        kind = filesystem(f, mounts)
        if kind.split(" on ")[-1] in IN_MEMORY:
            return (f"{f} is on {kind}, which keeps its files in memory: nothing is read from a disk there, so "
                    f"a cold read cannot be measured (put the kit cache, $KIT_CACHE or --workdir, on a disk)")
    return None


def evict(files) -> float | None:
    """Drops ``files``' pages from the page cache (``kit.system.pagecache.evict``: each file opened
    read-only, ``posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)``, the kit's own mappings of them
    released first; nothing written to a file or removed). Returns the share of their pages still
    cached after (``mincore``), None where that cannot be asked.

    Raises:
        RuntimeError: this process still maps one of them (its pages would stay cached)."""
    return pagecache.evict([Path(f) for f in files])


def _parts(files: list[Path], threads: int) -> list[list[tuple[Path, int, int]]]:
    """``files``' bytes, one after another, cut into ``threads`` contiguous parts of about the same
    size, each a list of ``(file, start, end)``."""
    sizes = [f.stat().st_size for f in files]
    total = sum(sizes)
    share = -(-total // threads)
    parts: list[list[tuple[Path, int, int]]] = [[] for _ in range(threads)]
    at = 0  # offset in the files' bytes one after another
    for f, size in zip(files, sizes):
        start = 0
        while start < size:
            k = min(at // share, threads - 1)
            end = min(size, start + (k + 1) * share - at) if k < threads - 1 else size
            parts[k].append((f, start, end))
            at += end - start
            start = end
    return [p for p in parts if p]


def disk_read(files, *, seconds: float = 0.3, threads: int = 1, chunk: int = READ_CHUNK,
              evictor: Callable[[list], float | None] | None = None) -> tuple[float, float | None]:
    """Bytes per second read from ``files`` cold: evicted by ``evictor`` (``evict``), then read by ``threads``
    threads at once, each its own contiguous part of them in order (``os.preadv`` of ``chunk`` bytes
    into its one buffer: the kernel's read-ahead works as for a reader of whole files, and several
    requests are in flight, as a parallel loader's are), for at least ``seconds`` of reading; each
    pass over them starts with another eviction, which is not timed. Files are opened read-only.
    Returns ``(rate, share)``: ``share`` the largest share of their pages an eviction left cached
    (None where it could not be asked)."""
    evictor = evictor or evict
    files = [Path(f) for f in files]
    parts = _parts(files, max(1, threads))
    if not parts:
        raise ValueError(f"disk_read: {', '.join(map(str, files)) or 'no files'}: no bytes to read")
    n, timed, shares = 0, 0.0, []

    def read(part, deadline):
        buf, got = bytearray(chunk), 0
        for f, start, end in part:
            fd = os.open(f, os.O_RDONLY)
            try:
                at = start
                while at < end:
                    k = os.preadv(fd, [memoryview(buf)[:min(chunk, end - at)]], at)
                    if not k:
                        break
                    at += k
                    got += k
                    if time.perf_counter() >= deadline:
                        return got
            finally:
                os.close(fd)
        return got

    with ThreadPoolExecutor(len(parts)) as pool:
        while timed < seconds:
            shares.append(evictor(files))
            t0 = time.perf_counter()
            n += sum(pool.map(read, parts, [t0 + seconds - timed] * len(parts)))
            timed += time.perf_counter() - t0
    known = [s for s in shares if s is not None]
    return n / timed, max(known) if known else None


class Cold:
    """A bench run cold: each store's files evicted before each timed round of the variants that
    read it (``source``), and the ``disk_read`` limit's files before each of its reads.

    Args:
        stores: variant -> the files of the store it reads (files the kit made: its stores; never
            a user's data).

    Attributes:
        why_not: None, or why nothing could be read cold here (the files' file system keeps them
            in memory, a first eviction left them cached, or no variant reads a store): the rows
            are then read warm, and the ``disk_read`` limit says why it has no rate.
        left: variant -> the share of its store's pages found cached after each of its evictions
            (None where ``mincore`` could not be asked).
    """

    def __init__(self, stores: dict[str, list]):
        self.stores = {v: [Path(f) for f in files] for v, files in stores.items() if files}
        self.left: dict[str, list[float | None]] = {v: [] for v in self.stores}
        self.why_not = None if self.stores else "no variant measured reads a store of the kit's"
        everything = [f for files in self.stores.values() for f in files]
        if self.why_not is None:
            self.why_not = in_memory(everything)
        if self.why_not is None:  # one eviction of every store, to see that it works here
            try:
                share = evict(everything)
            except RuntimeError as e:
                self.why_not = str(e)
            else:
                if share is not None and share > STAYED:
                    kind = filesystem(everything[0]) or "an unknown file system"
                    self.why_not = (f"the stores' pages stayed in the page cache after an eviction ({share:.0%} of "
                                    f"them; file system: {kind}), so a cold read cannot be measured here")

    @property
    def variants(self) -> list[str]:
        """The variants read cold: every one with a store, or none where ``why_not``."""
        return [] if self.why_not else list(self.stores)

    def evict(self, variant: str) -> float | None:
        """Evicts ``variant``'s store; returns (and keeps, in ``left``) the share of it still cached."""
        share = evict(self.stores[variant])
        self.left[variant].append(share)
        return share

    def source(self, variant: str, source):
        """``source`` (a batch source for ``kit.timing``) as a callable that evicts ``variant``'s store
        each time it is asked for a fresh pass, before its warm-up and timed batches; ``source``
        itself where ``variant`` is not read cold."""
        if variant not in self.variants:
            return source
        def cold_pass():
            self.evict(variant)
            return iterate(source)

        return cold_pass

    def to_json(self) -> dict[str, Any]:
        """``{"variants", "why_not", "left_cached"}``: the variants read cold, why none (or None), and
        per variant the largest share of its store an eviction left cached (None: not asked)."""
        def most(shares):
            known = [s for s in shares if s is not None]
            return max(known) if known else None

        return {"variants": self.variants, "why_not": self.why_not,
                "left_cached": {v: most(s) for v, s in self.left.items() if s}}


class Limits:
    """The limits of one bench run, each read ``read()`` times (before and after the rounds).

    Args:
        batch: one batch as the loaders deliver it (for ``tfdata_elements``).
        files: files to read from the page cache (a store's shards), or None: no read limit.
        what: what ``files`` are, for the ``how`` line.
        seconds: how long each limit is read each time.
        cold: a run cold (``Cold``), or None: no ``disk_read`` limit.
        cold_files: the store's files ``disk_read`` reads, and what they are (for its ``how``).
    """

    def __init__(self, batch, files=None, *, what: str = "store's files", seconds: float = 0.3,
                 cold: Cold | None = None, cold_files: tuple[list, str] | None = None):
        self.batch, self.files, self.seconds = batch, files, seconds
        self.cold, self.cold_files = cold, cold_files
        self.disk_left: list[float | None] = []
        self.threads = max(2, usable_cpus())
        self.reads: dict[str, list[float]] = {}
        self.how: dict[str, str] = {
            "memory_copy_1_thread": HOW["memory_copy"].format(mb=COPY_BYTES >> 20, threads=1),
            f"memory_copy_{self.threads}_threads": HOW["memory_copy"].format(mb=COPY_BYTES >> 20,
                                                                             threads=self.threads),
            "tfdata_elements": HOW["tfdata_elements"]}
        if files:
            self.how["page_cache_read"] = HOW["page_cache_read"].format(what=what, mb=READ_CHUNK >> 20)
        if cold is not None:
            self.how["disk_read"] = HOW["disk_read"].format(what=cold_files[1] if cold_files else "store's files",
                                                            mb=READ_CHUNK >> 20, threads=self.threads)

    @property
    def why_not_cold(self) -> str | None:
        """Why ``disk_read`` has no rate in a run cold (None where it has one, or the run is warm)."""
        return None if self.cold is None else self.cold.why_not

    def read(self) -> None:
        """Reads every limit once more (``disk_read`` first, its files then read back into the page
        cache, so that ``page_cache_read`` reads them warm)."""
        got = {}
        if self.cold is not None and self.cold.why_not is None and self.cold_files:
            got["disk_read"], left = disk_read(self.cold_files[0], seconds=self.seconds, threads=self.threads)
            self.disk_left.append(left)
            pagecache.warm_page_cache(self.cold_files[0])
        got.update({"memory_copy_1_thread": memory_copy(1, seconds=self.seconds),
                    f"memory_copy_{self.threads}_threads": memory_copy(self.threads, seconds=self.seconds),
                    "tfdata_elements": tfdata_elements(self.batch, seconds=self.seconds)})
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
        """``{name: {"rate", "unit", "reads", "how"}}``: the faster read, its unit, every read, how it was read.

        Run cold, ``disk_read`` is there too, with ``left_cached`` (the largest share of its files an
        eviction left cached; None: not asked) and ``note`` (None, or why its rate may not be the
        disk's); or, where nothing could be read cold, with ``rate`` None and ``why_not``."""
        out: dict[str, dict[str, Any]] = {k: {"rate": self.rate(k), "unit": "elements/s" if k == "tfdata_elements" else "bytes/s",
                   "reads": list(self.reads[k]), "how": self.how[k]} for k in self.reads if k != "disk_read"}
        if self.cold is None:
            return out
        if "disk_read" not in self.reads:
            out["disk_read"] = {"rate": None, "unit": "bytes/s", "reads": [], "how": self.how["disk_read"],
                                "why_not": self.cold.why_not or "not read"}
            return out
        known = [s for s in self.disk_left if s is not None]
        left = max(known) if known else None
        out["disk_read"] = {"rate": self.rate("disk_read"), "unit": "bytes/s", "reads": list(self.reads["disk_read"]),
                            "how": self.how["disk_read"], "left_cached": left, "note": self.cold_note(left)}
        return out

    def cold_note(self, left: float | None) -> str | None:
        """None, or why ``disk_read``'s rate may not be the disk's: the evictions could not be checked,
        left pages cached, or the cold read was about as fast as the page cache's (a cache below this
        machine's, a VM host's, can serve a disk's reads)."""
        if left is None:
            return "the evictions could not be checked (mincore not available): the rate may be the page cache's"
        if left > STAYED:
            return f"an eviction left {left:.0%} of the files cached: the rate is partly the page cache's"
        warm = self.reads.get("page_cache_read")
        if warm and self.rate("disk_read") >= 0.8 * max(warm):
            return ("read cold about as fast as from the page cache: the evicted pages came back from a cache "
                    "below this machine's (a VM host's, a disk's own) rather than from the medium")
        return None


def fraction_of_limit(rate: float, limits: dict[str, float]) -> tuple[str, float, float]:
    """The limit that binds a loader: of ``limits`` (name -> the examples per second it allows
    that loader), the lowest. Returns ``(name, examples_per_s, rate / examples_per_s)``."""
    name = min(limits, key=lambda k: limits[k])
    return name, limits[name], rate / limits[name]
