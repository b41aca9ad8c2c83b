"""The page cache: eviction, residency, warming and reclaim.

* ``evict`` drops files' pages (``posix_fadvise(DONTNEED)``, no root needed) and says how
  much stayed; ``Residency`` and ``cached_fraction`` ask which pages are cached
  (``mincore(2)``); ``mapped`` lists the files this process maps (mapped pages stay cached);
  a module that maps files registers its release with ``on_evict``;
* ``warm_page_cache`` reads files once, so that what is measured next starts with them cached;
* ``proactive_reclaim`` names what on this machine drops cached pages by itself.
"""

from __future__ import annotations

import ctypes
import gc
import mmap
import os
from pathlib import Path
from typing import Callable, Iterable

import numpy as np


def mapped(paths) -> list[str]:
    """Those of ``paths`` that this process has memory-mapped (from ``/proc/self/maps``;
    empty where that file does not exist)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    return [str(p) for p in paths if f" {Path(p).resolve()}\n" in maps]


class Residency:
    """Which pages of one file are in the page cache: ``mincore(2)`` over a read-only
    mapping of it (mapping reads nothing). ``cached(offset, length)`` counts the cached
    pages of a range and all its pages; ``close()`` drops the mapping. Raises OSError
    where that cannot be asked (no ``mincore``, a mapping refused); an empty file has no
    pages."""

    def __init__(self, path):
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            self._map, self._unmap, self._mincore = libc.mmap, libc.munmap, libc.mincore
        except AttributeError as e:
            raise OSError(f"no mmap/mincore here: {e}") from None
        self._map.restype = ctypes.c_void_p
        self._map.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        self._unmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self._mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
        self._ctypes, self.page = ctypes, mmap.PAGESIZE
        self.size = os.path.getsize(path)
        self._addr = None
        if not self.size:
            return
        fd = os.open(path, os.O_RDONLY)
        try:
            addr = self._map(None, self.size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        finally:
            os.close(fd)  # the mapping keeps the file
        if addr is None or addr == ctypes.c_void_p(-1).value:
            raise OSError(f"cannot map {path}")
        self._addr = addr

    def cached(self, offset: int = 0, length: int | None = None) -> tuple[int, int]:
        """``(cached pages, pages)`` of ``length`` bytes (to the end) from ``offset``."""
        if self._addr is None:
            return 0, 0
        length = self.size - offset if length is None else min(length, self.size - offset)
        first = offset // self.page
        count = (offset + length + self.page - 1) // self.page - first
        if count <= 0:
            return 0, 0
        vec = (self._ctypes.c_ubyte * count)()
        if self._mincore(self._addr + first * self.page, count * self.page, vec) != 0:
            raise OSError(self._ctypes.get_errno(), "mincore failed")
        return int(np.count_nonzero(np.frombuffer(vec, np.uint8) & 1)), count

    def close(self):
        if self._addr is not None:
            self._unmap(self._addr, self.size)
            self._addr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def cached_fraction(paths) -> float | None:
    """The share of ``paths``' pages in the page cache now (``Residency``). None where
    that cannot be asked (no ``mincore``, a mapping refused) or the files are empty."""
    cached = total = 0
    for p in paths:
        try:
            with Residency(p) as r:
                c, t = r.cached()
        except OSError:
            return None
        cached += c
        total += t
    return cached / total if total else None


_ON_EVICT: list[Callable[[], object]] = []


def on_evict(callback: Callable[[], object]) -> Callable[[], object]:
    """Registers ``callback`` for ``evict`` to call before it drops pages: a module whose
    objects keep files mapped releases the mappings there (the spectrogram memmap loaders
    register ``release_store_mappings`` when imported). Registering the same callback again
    does nothing. Returns ``callback``."""
    if callback not in _ON_EVICT:
        _ON_EVICT.append(callback)
    return callback


def evict(paths) -> float | None:
    """Drops ``paths``' pages from the page cache (written back first: dirty pages stay)
    and returns the share still cached after (``cached_fraction``: None where it cannot
    be asked). Pages that a process maps stay cached whatever ``posix_fadvise`` says, so
    the mappings the kit holds are released first (the callbacks of ``on_evict``: the
    memmap loaders' ``release_store_mappings``); a file still mapped after that is an
    error, not a cold epoch measured on cached pages."""
    for release in list(_ON_EVICT):
        release()
    gc.collect()
    still = mapped(paths)
    if still:
        raise RuntimeError(f"cannot evict {', '.join(still)} from the page cache: this process still maps it, "
                           "so a 'cold' epoch would read cached pages")
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return cached_fraction(paths)


def warm_page_cache(paths: Iterable[str | os.PathLike]) -> None:
    """Reads every file once, so that what is measured next starts with them in the page cache."""
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def proactive_reclaim(root: str = "/sys") -> str | None:
    """What on this machine drops cached file pages by itself, in words, or None: DAMON's
    ``pageout`` schemes (``/sys/kernel/mm/damon/admin``: a kernel thread that samples
    which memory is used and pages out what it has not seen used for a while, as some
    cloud VMs run to hand memory back to their host) and the ``damon_reclaim`` module. A
    warm store's pages can go between its epochs there."""
    base = Path(root)
    found = []

    def read(path):
        try:
            return path.read_text().strip()
        except OSError:
            return None

    for kd in sorted(base.glob("kernel/mm/damon/admin/kdamonds/[0-9]*")):
        if read(kd / "state") != "on":
            continue
        for ctx in sorted(kd.glob("contexts/[0-9]*")):
            try:
                aggr_us = int(read(ctx / "monitoring_attrs/intervals/aggr_us") or 0)
            except ValueError:
                aggr_us = 0
            for scheme in sorted(ctx.glob("schemes/[0-9]*")):
                if read(scheme / "action") != "pageout":
                    continue
                kinds = [f"{'only' if read(f / 'allow') == 'Y' else 'not'} {read(f / 'type')}"
                         for f in sorted(scheme.glob("ops_filters/[0-9]*")) if read(f / "type")]
                what = f"DAMON (kdamond {kd.name}) pages out memory"
                if kinds:
                    what += " (" + ", ".join(kinds) + " pages)"
                try:
                    age = int(read(scheme / "access_pattern/age/min") or 0) * aggr_us / 1e6
                    quota = int(read(scheme / "quotas/bytes") or 0)
                    every = int(read(scheme / "quotas/reset_interval_ms") or 0)
                except ValueError:
                    age, quota, every = 0, 0, 0
                if age:
                    what += f" it has not seen used for {age:.0f} s"
                if quota and every:
                    what += f", up to {quota / 1e6:,.0f} MB every {every / 1e3:g} s"
                found.append(what)
    if read(base / "module/damon_reclaim/parameters/enabled") == "Y":
        found.append("DAMON_RECLAIM (the damon_reclaim module) pages out memory it has not seen used")
    return "; ".join(found) or None


