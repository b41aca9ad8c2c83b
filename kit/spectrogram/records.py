"""The ``tfrecord`` variant's read of a store checked at open: each batch's records read
straight into the batch, one copy from the page cache.

A window read through ``tf.data`` copies every byte several times on its way to the batch:
the read from the page cache into a record string, the window of strings batched, each
batch's records gathered from it, then decoded into frames (``scripts/tfrecord_stages.py``
times each stage). Here the epoch order is computed as record ids
(``kit.cases.stores.record_batches``: the same batches as the ``TFRecordDataset`` reader, for
the same seed) and each batch's records are read with one ``preadv`` each, their frames and
labels straight into the batch's arrays: the kernel's copy from the page cache is the only
one, and nothing of the store is held in the process (the shards are read from the page
cache or the disk every epoch). Records of the batches ahead that are not in the page cache
are asked of the kernel (``POSIX_FADV_WILLNEED``) before they are read.

Every record's framing states its length: it is read with the record and checked against
the layout, and a read that comes back short (a shard cut short since it was checked)
fails the epoch with an error naming the shard, never a shorter epoch or a misread. (The
CRCs are not computed again: the store's every byte was compared with its SHA-256 when it
was opened, ``kit.store.check_open``.)
"""

from __future__ import annotations

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
    """Reads records of a TFRecord store of records of ``block`` frames (format 4) by id.

    Args:
        paths: the shards whose every record is whole, then the tail's shard (one short
            record), if any.
        counts: frames in each path.
        block: frames a whole record holds.
        frame_shape: ``(H, W)``.
        dtype: the store's frames dtype (``"float32"`` or ``"float16"``).
        tail: whether the last path is the tail's shard.
    """

    def __init__(self, paths: Sequence[str], counts: Sequence[int], *, block: int, frame_shape, dtype: str,
                 tail: bool):
        self.paths = [str(p) for p in paths]
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
        self._fds: list[int] = []  # opened at the first read; closed with this object
        self._lock = threading.Lock()
        self.piece = store.kernel_read_bytes(self.paths[0]) if self.paths else 0
        weakref.finalize(self, _close_all, self._fds)

    def _open(self) -> list[int]:
        if not self._fds:
            with self._lock:
                if not self._fds:
                    self._fds.extend(os.open(p, os.O_RDONLY) for p in self.paths)
        return self._fds

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
            kit.store.StoreError: a record read short or whose framing states another
                length, naming the shard.
        """
        fds = self._open()
        where = [self.where(int(r)) for r in ids if r >= 0]
        frames = sum(n for _, _, n in where)
        x = _aligned((frames, self.values), self.dtype)
        y = _aligned((frames,), np.dtype("<i8"))
        xb, yb = memoryview(x.data).cast("B"), memoryview(y.data).cast("B")
        head = bytearray(TFRECORD_HEAD)
        at = 0
        for s, offset, n in where:
            data = n * self.frame_bytes
            want = TFRECORD_HEAD + data + 8 * n
            got = os.preadv(fds[s], [head, xb[at * self.frame_bytes:at * self.frame_bytes + data],
                                     yb[at * 8:(at + n) * 8]], offset)
            stated = int.from_bytes(head[:8], "little")
            if got != want or stated != data + 8 * n:
                path = self.paths[s]
                why = (f"{got} of its {want} bytes read: cut short since the store was checked" if got != want
                       else f"its framing states {stated} bytes, not {data + 8 * n} ({n} frames): not this "
                            f"store's layout")
                raise store.StoreError(f"{path}: the record at byte {offset}: {why}; run `python -m kit verify "
                                       f"{Path(path).parent}` and reconvert")
            at += n
        if len(later) and hasattr(os, "posix_fadvise"):
            for r in later[later >= 0].tolist():
                s, offset, n = self.where(int(r))
                if not _cached(fds[s], offset + TFRECORD_HEAD):  # asked only where the page cache lacks it
                    store.ask_to_read(fds[s], offset + TFRECORD_HEAD, n * (self.frame_bytes + 8), self.piece)
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
