"""How fast this machine's CPU reads pages just brought from disk, against the same pages
read again: the cost a cold loader pays per byte beside the disk's own time.

The store's file is evicted, brought into the page cache with nothing copied
(``kit.bench.scale.cache_through``, the bench's disk reference read), then copied from a
fresh mapping into a buffer already in memory, twice: the first copy touches pages no
process has read since the disk wrote them; the second, the same pages again. Each copy
reports GB/s and the CPU it took (user and kernel). On this project's 2-core VM
(2026-12-01, two runs, 2 GB each) the first copy ran at 0.79 and 0.39 GB/s, the second at
5.98 and 4.41 GB/s: there, reading a page the disk has just filled costs the reader far
more than reading it again (on a VM, the guest's first access to memory its host has just
filled can fault in the host), so a cold loader on 2 cores is bound by that, whatever the
disk's rate.

    PYTHONPATH=. python scripts/first_touch.py [--file PATH] [--gb 2] [--workdir DIR]

Without ``--file`` it uses the memmap store of ``bench scale``'s million float16 frames
(generated and converted once, then reused from ``--workdir``).
"""

import argparse
import resource
import time
from pathlib import Path

import numpy as np


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def copy(path, nbytes, out, piece=64 << 20):
    """Copies the first ``nbytes`` of ``path`` through a new read-only mapping into ``out``;
    returns ``(seconds, user CPU-s, kernel CPU-s)``."""
    mm = np.memmap(path, np.uint8, "r", shape=(nbytes,))
    u0, s0 = cpu()
    t0 = time.perf_counter()
    for i in range(0, nbytes, piece):
        out[i:i + piece] = mm[i:i + piece]
    seconds = time.perf_counter() - t0
    u1, s1 = cpu()
    del mm
    return seconds, u1 - u0, s1 - s0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--file", type=Path, default=None, help="a file of your own (default: bench scale's store)")
    p.add_argument("--gb", type=float, default=2.0, help="how much of it to copy")
    p.add_argument("--workdir", default=None, help="bench scale's --workdir (default: the kit's)")
    a = p.parse_args()
    from kit.bench import scale

    path = a.file
    if path is None:
        from kit.spectrogram import convert

        index = scale.make_data(1_000_000, "float16", workdir=a.workdir, progress=True)
        folder, _ = convert(index, "memmap", workdir=a.workdir, store_dtype="float16", progress=True)
        path = folder / "frames.npy"
    nbytes = min(int(a.gb * 1e9), path.stat().st_size)
    out = np.ones(nbytes, np.uint8)  # the buffer's own pages touched first: only the file's are new
    left = scale.evict([path])
    disk_bytes, disk_s = scale.cache_through([path])
    print(f"{path}: evicted ({left if left is None else f'{left:.1%}'} cached after), then brought into the page "
          f"cache in {disk_s:.1f} s ({disk_bytes / disk_s / 1e6:,.0f} MB/s), nothing copied")
    for label in ("first copy (pages new from the disk)", "second copy (the same pages)"):
        seconds, user, kernel = copy(path, nbytes, out)
        print(f"  {label}: {nbytes / seconds / 1e9:.2f} GB/s, {user:.2f} CPU-s user, {kernel:.2f} in the kernel "
              f"({nbytes / 1e9:.1f} GB)")
    scale.evict([path])


if __name__ == "__main__":
    main()
