"""The ``tfrecord`` variant's read of a store checked at open: each batch's records copied
once, from the page cache straight into the batch.

A window read through ``tf.data`` copies every byte several times on its way to the batch:
the read from the page cache into a record string, the window of strings batched, each
batch's records gathered from it, then decoded into frames (``scripts/tfrecord_stages.py``
times each stage). Here the epoch order is computed as record ids
(``kit.cases.stores.record_batches``: the same batches as the ``TFRecordDataset`` reader, for
the same seed), the shards are memory-mapped side by side in one range of addresses, each at
a multiple of the record's length, so that every record of the store is a row of one strided
array (their pages are the page cache's own: nothing of the store is held in the process, and
the shards are read from the page cache or the disk every epoch), and each batch's records are
copied once each, frames and labels straight into the batch's arrays (used again once nothing
refers to them: a fresh buffer faulted its pages in at its first write), by the kernel in one
call a batch (``process_vm_readv`` of the process's own mapping: the GIL let go once, not once a
record) or, where a sandbox refuses that call, by ``memcpy`` a piece. At the first batch of each
window, the runs of its records and of the next window's that are not in the page cache are
asked of the kernel (``POSIX_FADV_WILLNEED``), a range a run, so that a store read from disk is
read in large pieces, a window ahead of the copy.

Every record's framing states its length: it is read with the record and checked against
the layout before the batch is given out, and each shard's size against the manifest at
every batch, so a shard cut short or rewritten since the store was checked fails the epoch
with an error naming it, never a shorter epoch or a misread. (The CRCs are not computed again: the store's every byte
was compared with its SHA-256 when it was opened, ``kit.store.check_open``. A shard cut short
while a batch is being copied from it makes the kernel's copy come up short, an error naming
it; the piecewise copy, like any read through a memory map, ends the process there.)
"""

from __future__ import annotations

import ctypes
import math
import mmap
import os
import sys
import threading
import weakref
from pathlib import Path
from typing import Sequence

import numpy as np

from kit import store
from kit.cases import TFRECORD_FRAMING, TFRECORD_HEAD

__all__ = ["RecordReader", "ALIGN", "slot_bytes"]

#: TensorFlow takes an array returned by ``tf.numpy_function`` without a copy only where its
#: data is aligned to this many bytes (Eigen's largest alignment); malloc gives 16.
ALIGN = 64


class RecordReader:
    """Reads records of a TFRecord store of records of ``block`` frames (format 4) by id, from
    its shards mapped side by side on first use (``release``, and
    ``kit.spectrogram.loaders.release_store_mappings``, unmap them; the next batch maps them
    again). Linux only (``available``).

    Args:
        paths: the shards whose every record is whole, then the tail's shard (one short
            record), if any.
        sizes: each path's size in the manifest.
        counts: frames in each path.
        block: frames a whole record holds.
        frame_shape: ``(H, W)``.
        dtype: the store's frames dtype (``"float32"`` or ``"float16"``).
        tail: whether the last path is the tail's shard.
    """

    def __init__(self, paths: Sequence[str], sizes: Sequence[int], counts: Sequence[int], *, block: int, frame_shape,
                 dtype: str, tail: bool):
        self.paths = [str(p) for p in paths]
        self.sizes = [int(b) for b in sizes]
        self.block = int(block)
        self.values = int(np.prod(frame_shape))
        self.dtype = np.dtype(dtype).newbyteorder("<")
        self.frame_bytes = self.values * self.dtype.itemsize
        body = len(self.paths) - 1 if tail else len(self.paths)
        #: Whole records in each shard but the tail's.
        self.records = [int(c) // self.block for c in counts[:body]]
        self.tail = tail
        self.tail_frames = int(counts[-1]) if tail else 0
        self.entry = self.block * (self.frame_bytes + 8) + TFRECORD_FRAMING
        self.starts = np.cumsum([0] + self.records)
        self.slot = slot_bytes(self.entry, max(self.sizes, default=1))
        self.grid = self.slot // self.entry  # rows a shard's slot holds
        self._holder: list = [None]  # the mapped region; None until mapped and once released
        self._buffers = _Buffers()
        self._memcpy = _COPY
        self._fds: list[int] = []  # opened at the first read; closed with this object
        self._lock = threading.Lock()
        self.piece = store.kernel_read_bytes(self.paths[0]) if self.paths else 0
        weakref.finalize(self, _close_all, self._fds, self._holder, self._lock)

    @staticmethod
    def available(paths: Sequence[str], sizes: Sequence[int], block: int, frame_shape, dtype: str) -> bool:
        """Whether a store's shards can be mapped side by side here: Linux, and the range of
        addresses they need (``slot_bytes`` each) well within the process's."""
        entry = block * (int(np.prod(frame_shape)) * np.dtype(dtype).itemsize + 8) + TFRECORD_FRAMING
        return sys.platform.startswith("linux") and slot_bytes(entry, max(sizes, default=1)) * len(paths) < 1 << 44

    @property
    def array(self):
        """The mapped region, None when not mapped (``release_store_mappings`` sets it to None)."""
        return self._holder[0]

    @array.setter
    def array(self, value) -> None:
        if value is not None:
            raise ValueError("only None (release) can be set")
        self.release()

    def release(self) -> bool:
        """Unmaps the shards (at once, or when the batches being copied are done); True if mapped."""
        with self._lock:
            region, self._holder[0] = self._holder[0], None
            if region is not None:
                region.retired = True
                if region.users == 0:
                    region.close()
        return region is not None

    def _use(self) -> "_Region":
        with self._lock:
            if not self._fds:
                self._fds.extend(os.open(p, os.O_RDONLY) for p in self.paths)
            region = self._holder[0]
            if region is None:
                region = self._holder[0] = _Region(self, self._fds)
            region.users += 1
            return region

    def _done(self, region: "_Region") -> None:
        with self._lock:
            region.users -= 1
            if region.retired and region.users == 0:
                region.close()

    def _check_size(self, s: int) -> None:
        size = _held.lseek(self._fds[s], 0, os.SEEK_END)  # its size, the GIL held (reads give their offsets)
        if size != self.sizes[s]:
            raise store.StoreError(f"{self.paths[s]}: {size} bytes where the manifest says {self.sizes[s]}: cut short "
                                   f"or rewritten since the store was checked; run `python -m kit verify "
                                   f"{Path(self.paths[s]).parent}` and reconvert")

    def _framing(self, s: int, offset: int, stated: int, want: int) -> store.StoreError:
        return store.StoreError(f"{self.paths[s]}: the record at byte {offset}: its framing states {stated} bytes, "
                                f"not {want}: not this store's layout; run `python -m kit verify "
                                f"{Path(self.paths[s]).parent}`")

    def take(self, ids: np.ndarray, later: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The frames ``(n, H*W)`` in the store's dtype and labels ``(n,)`` of the records
        ``ids`` (-1: none; the tail's record, id ``sum(records)``, only last), in that order;
        of the records ``later`` (-1 pads them; none when the first is -1), those not in the
        page cache are asked of the kernel.

        Raises:
            kit.store.StoreError: a shard of another size than its manifest's, or a record
                whose framing states another length, naming the shard.
        """
        ids = np.asarray(ids)
        ids = ids[ids >= 0]
        total = int(self.starts[-1])
        short = bool(len(ids)) and int(ids[-1]) == total  # the tail's short record, always last
        body = ids[:-1] if short else ids
        shard = np.searchsorted(self.starts, body, side="right") - 1
        rows = shard * self.grid + (body - self.starts[shard])
        k, n = self.block, len(body)
        x = self._buffers.get((n * k + (self.tail_frames if short else 0), self.values), self.dtype)
        y = _aligned((len(x),), np.dtype("<i8"))
        region = self._use()
        try:
            for s in set(shard.tolist()) | ({len(self.paths) - 1} if short else set()):
                self._check_size(s)
            heads = self._copy(region, rows, shard, x, y)
            if n and not (heads == self.entry - TFRECORD_FRAMING).all():
                j = int(np.flatnonzero(heads != self.entry - TFRECORD_FRAMING)[0])
                raise self._framing(int(shard[j]), int(body[j] - self.starts[shard[j]]) * self.entry, int(heads[j]),
                                    self.entry - TFRECORD_FRAMING)
            if short:
                self._tail(region, x[n * k:], y[n * k:])
        finally:
            self._done(region)
        if len(later) and later[0] >= 0 and hasattr(os, "posix_fadvise"):  # a window's first batch
            self._ask(later[later >= 0])
        return x, y

    def _copy(self, region: "_Region", rows: np.ndarray, shard: np.ndarray, x: np.ndarray,
              y: np.ndarray) -> np.ndarray:
        """Copies the records ``rows`` (of shards ``shard``) into ``x`` and ``y``, frames and
        labels each straight into its place; returns each record's stated length. Where the
        kernel copies for us (``process_vm_readv`` of this process's own mapping), one call a
        batch; else one ``memcpy`` a piece (``_COPY``)."""
        n, k = len(rows), self.block
        frames, labels = k * self.frame_bytes, 8 * k
        if n and _VM_READ.usable():
            heads = np.empty((n, TFRECORD_HEAD), np.uint8)
            at = np.arange(n, dtype=np.uint64)
            local = np.empty((n, 3, 2), np.uint64)  # struct iovec {base, length}: head, frames, labels
            local[:, 0, 0] = heads.ctypes.data + at * TFRECORD_HEAD
            local[:, 0, 1] = TFRECORD_HEAD
            local[:, 1, 0] = x.ctypes.data + at * frames
            local[:, 1, 1] = frames
            local[:, 2, 0] = y.ctypes.data + at * labels
            local[:, 2, 1] = labels
            remote = np.empty((n, 2), np.uint64)  # each record's head, frames and labels: one range
            remote[:, 0] = region.base + rows.astype(np.uint64) * self.entry
            remote[:, 1] = TFRECORD_HEAD + frames + labels
            for a in range(0, n, _VM_READ.RECORDS):
                m = min(_VM_READ.RECORDS, n - a)
                want = m * (TFRECORD_HEAD + frames + labels)
                got = _VM_READ(local[a:a + m], remote[a:a + m])
                if got != want:  # a shard cut short as it was read: the kernel's EFAULT, not a SIGBUS
                    j = a + max(0, got) // (TFRECORD_HEAD + frames + labels)
                    self._check_size(int(shard[j]))
                    raise store.StoreError(f"{self.paths[int(shard[j])]}: {max(0, got):,} of {want:,} bytes read "
                                           f"({os.strerror(ctypes.get_errno())}): cut short while it was read")
            return heads[:, :8].copy().view("<u8")[:, 0]
        heads = region.heads[rows]
        xp, yp = x.ctypes.data, y.ctypes.data
        for j, row in enumerate(rows.tolist()):
            data = region.base + row * self.entry + TFRECORD_HEAD
            self._memcpy(xp + j * frames, data, frames)
            self._memcpy(yp + j * labels, data + frames, labels)
        return heads

    def _tail(self, region: "_Region", x: np.ndarray, y: np.ndarray) -> None:
        s, m = len(self.paths) - 1, len(x)
        at = s * self.slot
        want = m * (self.frame_bytes + 8)
        stated = int(region.bytes[at:at + 8].view("<u8")[0])
        if stated != want:
            raise self._framing(s, 0, stated, want)
        data = at + TFRECORD_HEAD
        x[:] = region.bytes[data:data + m * self.frame_bytes].view(self.dtype).reshape(m, self.values)
        y[:] = region.bytes[data + m * self.frame_bytes:data + want].view("<i8")

    def _ask(self, later: np.ndarray) -> None:
        """Asks the kernel for the records ``later``: each run of consecutive records of a
        shard whose first page is not in the page cache (one probe a run), as one range
        twice the run's length (its shard's next records: the next window's from it)."""
        body = np.unique(later[later < int(self.starts[-1])])
        if not len(body):
            return
        shard = np.searchsorted(self.starts, body, side="right") - 1
        breaks = np.flatnonzero((np.diff(body) != 1) | (np.diff(shard) != 0)) + 1
        for run in np.split(np.arange(len(body)), breaks):
            s, first, last = int(shard[run[0]]), int(body[run[0]]), int(body[run[-1]])
            # Each run doubled, as far as its shard goes: the shards' reads a window further on.
            last = min(last + (last - first + 1), int(self.starts[s + 1]) - 1)
            offset = (first - int(self.starts[s])) * self.entry + TFRECORD_HEAD
            if not _cached(self._fds[s], offset):  # asked only where the page cache lacks it
                store.ask_to_read(self._fds[s], offset, (last - first + 1) * self.entry, self.piece)


def slot_bytes(entry: int, largest: int) -> int:
    """Bytes of addresses a shard takes when the shards are mapped side by side: the
    smallest multiple of both the page size and the record's length ``entry`` that holds the
    largest shard, so that every shard starts on a page (as a mapping must) and every record
    of the store is a row ``entry`` bytes from the previous one."""
    unit = entry * mmap.PAGESIZE // math.gcd(entry, mmap.PAGESIZE)
    return unit * max(1, -(-largest // unit))


class _Region:
    """A ``RecordReader``'s shards mapped side by side (``slot_bytes`` apart) in one range of
    addresses reserved for them: ``bytes``, and ``heads``, each record's stated length, as one
    strided array (record ``r`` of shard ``s`` is row ``s * grid + r``)."""

    def __init__(self, reader: RecordReader, fds: Sequence[int]):
        self.length = reader.slot * len(fds)
        base = _map(None, self.length, _PROT_NONE, _MAP_PRIVATE | _MAP_ANONYMOUS | _MAP_NORESERVE, -1)
        self.base: int | None = base
        self.users, self.retired = 0, False
        try:
            for i, (fd, size) in enumerate(zip(fds, reader.sizes)):
                if size:
                    _map(base + i * reader.slot, size, mmap.PROT_READ, mmap.MAP_SHARED | _MAP_FIXED, fd)
        except OSError:
            _munmap(base, self.length)  # what was mapped of it too
            raise
        self.bytes = np.ctypeslib.as_array((ctypes.c_uint8 * self.length).from_address(base))
        rows = reader.grid * len(fds)
        self.heads = np.lib.stride_tricks.as_strided(self.bytes, (rows, 8), (reader.entry, 1)).view("<u8")[:, 0]

    def close(self) -> None:
        if self.base is not None:
            _munmap(self.base, self.length)
            self.base = None


# mmap(2) and munmap(2) through the C library: Python's mmap module maps a file anywhere, never
# at a chosen address. The flags are Linux's.
_PROT_NONE, _MAP_PRIVATE, _MAP_FIXED, _MAP_ANONYMOUS, _MAP_NORESERVE = 0, 0x02, 0x10, 0x20, 0x4000
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
#: The C library called with the GIL held (ctypes.PyDLL): lseek, a call too short to let it go.
_held = ctypes.PyDLL(None)
_held.lseek.restype = ctypes.c_long
_held.lseek.argtypes = [ctypes.c_int, ctypes.c_long, ctypes.c_int]
_libc.memcpy.restype = ctypes.c_void_p
_libc.memcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
#: The copy of a record: memcpy letting the GIL go, so that the parallel calls copy at once
#: (holding it, they took turns: 0.35x of ``in_memory`` alone against 0.51x letting it go,
#: side by side; beside the bench's other loaders 0.62x and 0.67x).
_COPY = _libc.memcpy


class _VMRead:
    """``process_vm_readv(2)`` of this process's own memory: many ranges copied by the kernel
    in one call, the GIL let go once (not once a piece, as ``_COPY`` is: beside other
    Python threads each piece waited for the GIL back), and a range the mapping no longer
    backs (a shard cut short) a short count rather than a SIGBUS. Usable where a first call
    succeeds (a sandbox may refuse the system call: the copies are then ``_COPY``'s)."""

    RECORDS = 256  # records a call: 3 pieces each, within IOV_MAX (1,024)

    def __init__(self) -> None:
        self._usable: bool | None = None
        self._call = getattr(_libc, "process_vm_readv", None)
        if self._call is not None:
            self._call.restype = ctypes.c_ssize_t
            self._call.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                                   ctypes.c_ulong]

    def usable(self) -> bool:
        if self._usable is None:
            self._usable = self._call is not None and self._probe()
        return self._usable

    def _probe(self) -> bool:
        src, dst = np.arange(8, dtype=np.uint8), np.zeros(8, np.uint8)
        local = np.array([[dst.ctypes.data, 8]], np.uint64)
        remote = np.array([[src.ctypes.data, 8]], np.uint64)
        return self(local, remote) == 8 and bool((dst == src).all())

    def __call__(self, local: np.ndarray, remote: np.ndarray) -> int:
        """Copies ``remote``'s ranges into ``local``'s (``(n, 2)`` or ``(n, 3, 2)`` arrays of
        ``{address, length}``); returns the bytes copied, -1 on an error (``errno`` set)."""
        assert self._call is not None
        return self._call(os.getpid(), local.ctypes.data, local.size // 2, remote.ctypes.data, remote.size // 2, 0)


_VM_READ = _VMRead()


def _map(at, length: int, prot: int, flags: int, fd: int) -> int:
    got = _libc.mmap(at, length, prot, flags, fd, 0)
    if got is None or got == ctypes.c_void_p(-1).value or (at is not None and got != at):
        err = ctypes.get_errno()
        raise OSError(err, f"mmap of {length:,} bytes failed: {os.strerror(err)}")
    return got


def _munmap(base: int, length: int) -> None:
    _libc.munmap(base, length)


class _Buffers:
    """Batch buffers used again once TensorFlow (and whoever took the batch) has let go of
    them: a buffer is free when nothing but this pool refers to it. A batch's buffer fresh
    from malloc cost a page fault every few pages on its first write, about a third of the
    copy's CPU time beside the bench's other loaders (their threads' heaps)."""

    KEEP = 8  # buffers kept: the batches in flight (parallel calls, prefetch) and the consumer's

    def __init__(self):
        self._lock = threading.Lock()
        self._pool: list[np.ndarray] = []

    def get(self, shape: tuple, dtype: np.dtype) -> np.ndarray:
        size = int(np.prod(shape)) * dtype.itemsize + ALIGN
        with self._lock:
            for raw in self._pool:
                # the pool's reference, the loop's and getrefcount's own: nothing else holds it
                if len(raw) == size and sys.getrefcount(raw) <= 3:
                    return _view(raw, shape, dtype)
            raw = np.empty(size, np.uint8)
            if len(self._pool) < self.KEEP:
                self._pool.append(raw)
            return _view(raw, shape, dtype)


def _view(raw: np.ndarray, shape: tuple, dtype: np.dtype) -> np.ndarray:
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + int(np.prod(shape)) * dtype.itemsize].view(dtype).reshape(shape)


def _aligned(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """``np.empty(shape, dtype)`` whose data starts at a multiple of ``ALIGN`` bytes."""
    size = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(size + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start:start + size].view(dtype).reshape(shape)


def _cached(fd: int, offset: int) -> bool:
    """Whether the page of ``fd`` at ``offset`` is in the page cache: a one-byte read that
    returns at once rather than wait for the disk (``RWF_NOWAIT``). Asking the kernel for
    records already cached cost about a third of the warm rate (it walks their pages)."""
    if not hasattr(os, "RWF_NOWAIT"):
        return False
    try:
        os.preadv(fd, [bytearray(1)], offset, os.RWF_NOWAIT)
    except OSError:  # BlockingIOError: not cached; others: RWF_NOWAIT unsupported here. Either way, ask.
        return False
    return True


def _close_all(fds: list, holder: list, lock) -> None:
    with lock:
        region, holder[0] = holder[0], None
        if region is not None:
            region.close()
    while fds:
        os.close(fds.pop())
