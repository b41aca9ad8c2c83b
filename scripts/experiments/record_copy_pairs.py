"""The ``tfrecord`` record read's two copies side by side: the kernel's (one ``process_vm_readv``
call a batch, the GIL let go once) and the piecewise one (one ``memcpy`` a piece, the GIL let
go for each), toggled in one process (``kit.spectrogram.records._VM_READ``).

* ``take``: one thread calling ``RecordReader.take`` on batches of 1, 2 and 8 random records
  of a warm store: the copy's own cost a batch, without the pipeline;
* default: interleaved rounds of the default bench's data (``kit.timing.measure``): the
  ``tfrecord`` loader with each copy, beside ``in_memory``;
* ``--scale``: whole warm epochs of ``bench scale``'s data (generated and converted once, then
  reused from ``--workdir``), the store read into the page cache first, in pairs.

    PYTHONPATH=. python scripts/experiments/record_copy_pairs.py [--rounds 9] [--batches 60]
    PYTHONPATH=. python scripts/experiments/record_copy_pairs.py --scale [--frames 1000000] [--dtype float16]
        [--pairs 3] [--workdir DIR]
"""

import argparse
import time
from pathlib import Path

import numpy as np


def take_costs(loader_reader, repeats=2000, seed=0):
    """Microseconds a batch for ``take`` of 1, 2 and 8 random records, with each copy."""
    from kit.spectrogram import records

    total = int(loader_reader.starts[-1])
    rng = np.random.default_rng(seed)
    none = np.array([], np.int64)
    out = {}
    for n in (1, 2, 8):
        batches = [np.sort(rng.choice(total, n, replace=False)) for _ in range(repeats)]
        for copy in ("kernel", "piece"):
            records._VM_READ._usable = copy == "kernel"
            for ids in batches[:50]:
                loader_reader.take(ids, none)
            t0 = time.perf_counter()
            for ids in batches:
                loader_reader.take(ids, none)
            out[f"{n}_{copy}"] = (time.perf_counter() - t0) / repeats * 1e6
    return out


def reader_of(folder, manifest, frame_shape):
    from kit.spectrogram.records import RecordReader

    tail = manifest.meta.get("tail_shard")
    shards = [s for s in manifest.shards if s.name != tail] + [s for s in manifest.shards if s.name == tail]
    return RecordReader([folder / s.name for s in shards], [s.bytes for s in shards], [s.count for s in shards],
                        block=int(manifest.meta["options"]["record_frames"]), frame_shape=frame_shape,
                        dtype=manifest.meta.get("dtype", "float32"), tail=bool(tail))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--batches", type=int, default=60)
    p.add_argument("--scale", action="store_true", help="whole warm epochs of bench scale's data")
    p.add_argument("--frames", type=int, default=1_000_000)
    p.add_argument("--dtype", default="float16")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--workdir", default=None)
    a = p.parse_args()

    from kit import store
    from kit.spectrogram import FrameIndex, make_loader, records

    if not records._VM_READ.usable():
        raise SystemExit("process_vm_readv is refused here: only the piecewise copy runs")
    if a.scale:
        from kit.bench.scale_data import make_data
        from kit.system.pagecache import read_through
        from kit.timing.rates import timed_epoch

        index = make_data(a.frames, a.dtype, workdir=a.workdir)
        loader = make_loader("tfrecord", index, batch_size=256, seed=0, workdir=a.workdir, store_dtype=a.dtype,
                             progress=False)
    else:
        from kit.bench.spectrogram import default_data
        from kit.timing import measure

        index = FrameIndex.from_csv(default_data(workdir=a.workdir))
        loader = make_loader("tfrecord", index, batch_size=256, seed=0, workdir=a.workdir, progress=False)
    from kit.spectrogram.convert import TFRECORD_FORMAT

    root = Path(store.default_workdir() if a.workdir is None else a.workdir)
    dtype = a.dtype if a.scale else "float32"
    found = [(f, m) for f in sorted(root.glob("spectrogram-tfrecord-*"), key=lambda f: f.stat().st_mtime)
             if (m := store.complete(f)) is not None and m.count == len(index)
             and m.meta.get("source") == str(index.csv_path.resolve()) and m.meta.get("dtype", "float32") == dtype
             and m.meta["options"].get("record_frames") == 32 and m.meta["options"].get("format") == TFRECORD_FORMAT]
    folder, manifest = found[-1]  # the loader's store: built (or found) by make_loader above
    if a.scale:
        read_through([str(folder / s.name) for s in manifest.shards])
    costs = take_costs(reader_of(folder, manifest, index.frame_shape))
    print("take alone, one thread, us a batch: " + ", ".join(
        f"{n} records {costs[f'{n}_kernel']:,.0f} (kernel) / {costs[f'{n}_piece']:,.0f} (piece)" for n in (1, 2, 8)))
    if a.scale:
        for pair in range(a.pairs):
            got = {}
            for copy in ("kernel", "piece"):
                records._VM_READ._usable = copy == "kernel"
                n, seconds, _ = timed_epoch(loader, expected=len(index), labels=index.labels)
                got[copy] = seconds
            print(f"pair {pair + 1}: warm epoch {got['kernel']:.2f} s (kernel) / {got['piece']:.2f} s (piece), "
                  f"piece / kernel {got['piece'] / got['kernel']:.2f}", flush=True)
        return
    in_memory = make_loader("in_memory", index, batch_size=256, progress=False)
    rates: dict = {"kernel": [], "piece": [], "in_memory": []}
    for _ in range(a.rounds):
        for name in rates:
            records._VM_READ._usable = name == "kernel"
            rates[name].append(measure(in_memory if name == "in_memory" else loader, num_batches=a.batches,
                                       warmup=3).examples_per_s)
    med = {k: float(np.median(v)) for k, v in rates.items()}
    print(f"{a.rounds} interleaved rounds of {a.batches} batches, medians: kernel {med['kernel']:,.0f} frames/s "
          f"({med['kernel'] / med['in_memory']:.2f}x in_memory), piece {med['piece']:,.0f} "
          f"({med['piece'] / med['in_memory']:.2f}x), in_memory {med['in_memory']:,.0f}; kernel / piece "
          f"{med['kernel'] / med['piece']:.2f}")


if __name__ == "__main__":
    main()
