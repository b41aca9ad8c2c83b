"""The ``tfrecord`` variant's read of a store checked at open: each batch's records copied
once, from the page cache straight into the batch.

A window read through ``tf.data`` copies every byte several times on its way to the batch:
the read from the page cache into a record string, the window of strings batched, each
batch's records gathered from it, then decoded into frames (``scripts/tfrecord_stages.py``
times each stage). Here the epoch order is computed as record ids
(``kit.cases.stores.record_batches``: the same batches as the ``TFRecordDataset`` reader, for
the same seed), the shards are memory-mapped (their pages are the page cache's own: nothing of
the store is held in the process, and the shards are read from the page cache or the disk
every epoch), and each batch's records are copied once from the mapping, frames and labels
straight into the batch's arrays. Records of the batches ahead that are not in the page
cache are asked of the kernel (``POSIX_FADV_WILLNEED``) before they are copied.

Every record's framing states its length: it is checked against the layout before the
record is copied, and each shard's size against the manifest at every batch, so a shard cut
short or rewritten since the store was checked fails the epoch with an error naming it,
never a shorter epoch or a misread. (The CRCs are not computed again: the store's every byte
was compared with its SHA-256 when it was opened, ``kit.store.check_open``. As with any
memory map, a shard cut short while a batch is being copied from it ends the process.)
"""

from __future__ import annotations

import mmap
import os
import threading
import weakref
from pathlib import Path
from typing import Sequence

import numpy as np

from kit import store
from kit.cases import TFRECORD_FRAMING, TFRECORD_HEAD

__all__ = ["RecordReader", "READ_AHEAD_BATCHES", "ALIGN"]

#: Records of the next 2 batches of a window are asked of the kernel, where not cached,
#: before they are read: a store read from disk is then read many records at once.
READ_AHEAD_BATCHES = 2

#: TensorFlow takes an array returned by ``tf.numpy_function`` without a copy only where its
#: data is aligned to this many bytes (Eigen's largest alignment); malloc gives 16.
ALIGN = 64


class RecordReader:
    """Reads records of a TFRecord store of records of ``block`` frames (format 4) by id, from
    its shards mapped on first use (``kit.spectrogram.loaders.release_store_mappings``
    releases the mappings; the next batch maps them again).

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
        self.tail_frames = int(counts[-1]) if tail else 0
        self.entry = self.block * (self.frame_bytes + 8) + TFRECORD_FRAMING
        self.starts = np.cumsum([0] + self.records)
        #: Each shard's mapping, made on first use; None once released (``release``).
        self.array: list | None = None
        self._fds: list[int] = []  # opened at the first read; closed with this object
        self._lock = threading.Lock()
        self.piece = store.kernel_read_bytes(self.paths[0]) if self.paths else 0
        weakref.finalize(self, _close_all, self._fds)

    def _maps(self) -> list:
        maps = self.array
        if maps is None:
            with self._lock:
                if not self._fds:
                    self._fds.extend(os.open(p, os.O_RDONLY) for p in self.paths)
                if self.array is None:
                    self.array = [None] * len(self.paths)
                maps = self.array
        return maps

    def _mapped(self, maps: list, s: int) -> np.ndarray:
        size = os.fstat(self._fds[s]).st_size
        if size != self.sizes[s]:
            raise store.StoreError(f"{self.paths[s]}: {size} bytes where the manifest says {self.sizes[s]}: cut short "
                                   f"or rewritten since the store was checked; run `python -m kit verify "
                                   f"{Path(self.paths[s]).parent}` and reconvert")
        m = maps[s]
        if m is None:
            m = maps[s] = np.frombuffer(mmap.mmap(self._fds[s], 0, access=mmap.ACCESS_READ), np.uint8)
        return m

    def where(self, record: int) -> tuple[int, int, int]:
        """``(shard, byte offset of the record's framing, frames)`` of record id ``record``."""
        s = int(np.searchsorted(self.starts, record, side="right")) - 1
        if s < len(self.records):
            return s, (record - int(self.starts[s])) * self.entry, self.block
        return len(self.paths) - 1, 0, self.tail_frames  # the tail's short record

    def take(self, ids: np.ndarray, later: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The frames ``(n, H*W)`` in the store's dtype and labels ``(n,)`` of the records
        ``ids`` (-1: none), in that order; of the records ``later``, those not in the page
        cache are asked of the kernel.

        Raises:
            kit.store.StoreError: a shard of another size than its manifest's, or a record
                whose framing states another length, naming the shard.
        """
        maps = self._maps()
        where = [self.where(int(r)) for r in ids if r >= 0]
        frames = sum(n for _, _, n in where)
        x = _aligned((frames, self.values), self.dtype)
        y = _aligned((frames,), np.dtype("<i8"))
        at = 0
        for s, offset, n in where:
            m = self._mapped(maps, s)
            data, start = n * self.frame_bytes, offset + TFRECORD_HEAD
            stated = int(m[offset:offset + 8].view("<u8")[0])
            if stated != data + 8 * n:
                raise store.StoreError(f"{self.paths[s]}: the record at byte {offset}: its framing states {stated} "
                                       f"bytes, not {data + 8 * n} ({n} frames): not this store's layout; run "
                                       f"`python -m kit verify {Path(self.paths[s]).parent}`")
            x[at:at + n] = m[start:start + data].view(self.dtype).reshape(n, self.values)
            y[at:at + n] = m[start + data:start + data + 8 * n].view("<i8")
            at += n
        if len(later) and hasattr(os, "posix_fadvise"):
            for r in later[later >= 0].tolist():
                s, offset, n = self.where(int(r))
                if not _cached(self._fds[s], offset + TFRECORD_HEAD):  # asked only where the page cache lacks it
                    store.ask_to_read(self._fds[s], offset + TFRECORD_HEAD, n * (self.frame_bytes + 8), self.piece)
        return x, y


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


def _close_all(fds: list) -> None:
    while fds:
        os.close(fds.pop())
