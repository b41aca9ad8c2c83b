"""How fast this machine's CPU reads pages just brought from disk, against the same pages
read again: the cost a cold loader pays per byte beside the disk's own time.

The store's file is evicted, brought into the page cache with nothing copied
(``lab.pagecache.cache_through``, ``lab.scale``'s disk reference read), then copied from a
fresh mapping into a buffer already in memory, twice (``lab.pagecache.first_touch``): the
first copy touches pages no process has read since the disk wrote them; the second, the
same pages again. Each copy reports GB/s and the CPU it took (user and kernel). On a VM the
guest's first access to memory its host has just filled can fault in the host, so reading
a page the disk has just filled can cost the reader far more than reading it again, and a
cold loader on few cores is bound by that, whatever the disk's rate (this project's VM:
``results/NOTES.md``).

    python -m lab.experiments.first_touch [--file PATH] [--gb 2] [--workdir DIR]

Without ``--file`` it uses the memmap store of ``lab.scale``'s million float16 frames
(generated and converted once, then reused from ``--workdir``).
"""

import argparse
from pathlib import Path

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--file", type=Path, default=None, help="a file of your own (default: lab.scale's store)")
    p.add_argument("--gb", type=float, default=2.0, help="how much of it to copy")
    p.add_argument("--workdir", default=None, help="lab.scale's --workdir (default: the kit's)")
    a = p.parse_args()
    from kit.system.pagecache import evict
    from lab import pagecache

    path = a.file
    if path is None:
        from kit.spectrogram import convert
        from lab.scale_data import make_data

        index = make_data(1_000_000, "float16", workdir=a.workdir, progress=True)
        folder, _ = convert(index, "memmap", workdir=a.workdir, store_dtype="float16", progress=True)
        path = folder / "frames.npy"
    nbytes = min(int(a.gb * 1e9), path.stat().st_size)
    out = np.ones(nbytes, np.uint8)  # the buffer's own pages touched first: only the file's are new
    left = evict([path])
    disk_bytes, disk_s = pagecache.cache_through([path])
    print(f"{path}: evicted ({left if left is None else f'{left:.1%}'} cached after), then brought into the page "
          f"cache in {disk_s:.1f} s ({disk_bytes / disk_s / 1e6:,.0f} MB/s), nothing copied")
    for label in ("first copy (pages new from the disk)", "second copy (the same pages)"):
        seconds, user, kernel = pagecache.first_touch(path, nbytes, out)
        print(f"  {label}: {nbytes / seconds / 1e9:.2f} GB/s, {user:.2f} CPU-s user, {kernel:.2f} in the kernel "
              f"({nbytes / 1e9:.1f} GB)")
    evict([path])


if __name__ == "__main__":
    main()
