"""Cold whole epochs of the ``memmap`` store in block order, with the kernel asked for each
window's blocks ahead (``read_ahead``, default 2 windows) and without (``read_ahead=0``), in
pairs side by side in one process: the store's pages evicted before every epoch
(``kit.system.pagecache.evict``, which also says how much stayed cached). The data is
``lab.scale``'s (generated and converted once, then reused from ``--workdir``). Prints
seconds and MB/s per epoch and, per pair, without / with.

    python -m lab.experiments.read_ahead_pairs [--frames 1000000] [--dtype float16] [--pairs 3]
        [--workdir DIR] [--ahead 2]
"""

import argparse
import time


def cold_epoch(index, files, *, ahead, workdir, dtype, batch_size=256):
    from kit.spectrogram import make_loader
    from kit.system import pagecache
    from kit.timing.rates import timed_epoch
    from lab.scale_data import frame_bytes

    loader = make_loader("memmap", index, batch_size=batch_size, shuffle=True, seed=0, workdir=workdir,
                         store_dtype=dtype, progress=False, order="blocks", read_ahead=ahead)
    left = pagecache.evict(files)
    n, seconds, whole = timed_epoch(loader, expected=len(index), labels=index.labels)  # every frame, once
    return {"read_ahead": ahead, "epoch_s": seconds, "MB_per_s": n * frame_bytes(dtype) / seconds / 1e6,
            "cached_after_evict": left}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--frames", type=int, default=1_000_000)
    p.add_argument("--dtype", default="float16", choices=["float16", "float32"])
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--ahead", type=int, default=2, help="windows asked for ahead in the 'with' epochs")
    p.add_argument("--workdir", default=None, help="lab.scale's --workdir (default: the kit's)")
    a = p.parse_args()
    import pandas as pd

    from kit.spectrogram import convert
    from lab.scale_data import make_data, store_files

    index = make_data(a.frames, a.dtype, workdir=a.workdir, progress=True)
    folder, manifest = convert(index, "memmap", workdir=a.workdir, store_dtype=a.dtype, progress=True)
    files = store_files(folder, manifest)
    rows = []
    for pair in range(1, a.pairs + 1):
        for ahead in (a.ahead, 0):
            t0 = time.perf_counter()
            rows.append({"pair": pair, **cold_epoch(index, files, ahead=ahead, workdir=a.workdir, dtype=a.dtype)})
            print(rows[-1], f"({time.perf_counter() - t0:.0f} s with the eviction)", flush=True)
    df = pd.DataFrame(rows)
    print("\n" + df.round(3).to_string(index=False))
    s = df.pivot(index="pair", columns="read_ahead", values="epoch_s")
    print(f"\nepoch without / with read_ahead={a.ahead}, per pair:\n" + (s[0] / s[a.ahead]).round(2).to_string())


if __name__ == "__main__":
    main()
