"""A store's data files: ``.npy`` read safely (``load_npy``), memmaps with their blocks reserved
(``open_memmap``), page-cache read hints (``ask_to_read``)."""

from __future__ import annotations

import errno
import math
import os
import threading
from pathlib import Path

import numpy as np

#: One lock for every ``.npy`` header the kit parses (see ``load_npy``).
_NPY_HEADER_LOCK = threading.Lock()

#: What one ``POSIX_FADV_WILLNEED`` is sure to read where the device's limits are unknown:
#: Linux's default readahead window.
KERNEL_READ_DEFAULT = 128 << 10


def open_memmap(path: str | os.PathLike, *, dtype, shape):
    """``np.lib.format.open_memmap(path, "w+")`` with the file's blocks reserved up front: on a full
    disk a sparse mapping dies of SIGBUS when written; reserved, it raises ``OSError`` (ENOSPC) here."""
    mm = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    with open(path, "r+b") as f:
        try:
            os.posix_fallocate(f.fileno(), 0, os.fstat(f.fileno()).st_size)
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                del mm
                raise
    return mm


def read_npy_header(f) -> tuple:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` file open in ``f``, parsed under
    ``load_npy``'s lock; ``f`` is left at the first byte of the array's data."""
    fmt = np.lib.format
    with _NPY_HEADER_LOCK:
        version = fmt.read_magic(f)
        read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        return read_header(f)


def load_npy(path: str | os.PathLike, *, mmap: bool = True):
    """``np.load(path, allow_pickle=False)``, memory-mapped read-only (or, ``mmap=False``, read whole),
    safe from several threads at once: NumPy's header parse (``ast.literal_eval``) can fail in two
    threads at once on CPython 3.11 (python/cpython#106905), so it runs under one process-wide lock."""
    if mmap:
        with _NPY_HEADER_LOCK:
            return np.load(path, mmap_mode="r", allow_pickle=False)
    # Read as np.load reads (read() calls, which /proc/self/io counts), the header under the lock.
    with open(path, "rb") as f:
        shape, fortran_order, dtype = read_npy_header(f)
        if dtype.hasobject:
            raise ValueError(f"{path}: Object arrays cannot be loaded when allow_pickle=False")
        count = math.prod(shape)
        arr = np.fromfile(f, dtype=dtype, count=count)
        if arr.size != count:
            raise ValueError(f"{path}: truncated: {arr.size:,} of {count:,} values present")
    return arr.reshape(shape[::-1]).T if fortran_order else arr.reshape(shape)


def kernel_read_bytes(path: str | os.PathLike) -> int:
    """The most one ``posix_fadvise(..., POSIX_FADV_WILLNEED)`` on ``path`` reads: the larger of the
    device's ``read_ahead_kb`` and ``max_sectors_kb`` (``/sys/dev/block/MAJOR:MINOR/queue``, or its
    disk's for a partition); ``KERNEL_READ_DEFAULT`` where they cannot be read."""
    try:
        dev = os.stat(path).st_dev
        base = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    except (OSError, AttributeError):
        return KERNEL_READ_DEFAULT
    for queue in (f"{base}/queue", f"{base}/../queue"):
        try:
            kb = [int(Path(queue, name).read_text()) for name in ("read_ahead_kb", "max_sectors_kb")]
        except (OSError, ValueError):
            continue
        return max(max(kb) << 10, KERNEL_READ_DEFAULT)
    return KERNEL_READ_DEFAULT


def ask_to_read(fd: int, offset: int, length: int, piece: int) -> int:
    """Asks the kernel to read ``length`` bytes of ``fd`` from ``offset`` into the page cache in the
    background (``POSIX_FADV_WILLNEED``, one call per ``piece`` bytes, see ``kernel_read_bytes``).
    Returns the calls made; 0 where ``posix_fadvise`` does not exist."""
    if not hasattr(os, "posix_fadvise"):
        return 0
    calls = 0
    for start in range(offset, offset + length, piece):
        os.posix_fadvise(fd, start, min(piece, offset + length - start), os.POSIX_FADV_WILLNEED)
        calls += 1
    return calls
