"""Where the TFRecord loader's time goes, beside ``in_memory``: its store's records read alone, then
the whole loader, the guide's pipeline and the frames held in RAM, interleaved over rounds on the
default spectrogram bench data (20,000 frames, batches of 256, the stores in the page cache):

* ``read``: the ``tfrecord`` store's shards read with ``tf.data.TFRecordDataset``, nothing decoded,
  shuffled or parsed (a batch counts the frames its records hold);
* ``tfrecord``: the whole ``tfrecord`` loader (``kit.spectrogram.make_loader``);
* ``tfrecord_guide``: the guide's pipeline over a ``tf.train.Example``-per-frame store;
* ``in_memory``: every frame in RAM, one gather a batch (the ceiling).

Each row: frames per second and its share of ``in_memory``. (The stages of the earlier record
reader, which copied records from the mapped shards, are in git: ``scripts/tfrecord_stages.py``
at 35c6706.)

    python -m lab.tfrecord_stages [--rounds 5] [--batches 60] [--warmup 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(prog="python -m lab.tfrecord_stages", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batches", type=int, default=60, help="timed batches per stage per round (at most an epoch's)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--data", default=None, help="index CSV (default: the spectrogram bench's data)")
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)

    import tensorflow as tf

    from kit.bench.spectrogram import DEFAULT_BATCH, default_data, warm_stores
    from kit.spectrogram import FrameIndex, convert, make_loader

    index = FrameIndex.from_csv(a.data or default_data())
    batch = min(DEFAULT_BATCH, len(index))
    folder, manifest = convert(index, "tfrecord", progress=False)
    paths = [str(folder / s.name) for s in manifest.shards]
    records = sum(1 for _ in tf.data.TFRecordDataset(paths))
    per_record = len(index) / records  # frames a record holds, on average
    per_batch = max(1, round(batch / per_record))

    def read():
        return tf.data.TFRecordDataset(paths, buffer_size=8 << 20).repeat().batch(per_batch).prefetch(2)

    stages = {
        "read": read,
        "tfrecord": lambda: make_loader("tfrecord", index, batch_size=batch, progress=False),
        "tfrecord_guide": lambda: make_loader("tfrecord_guide", index, batch_size=batch, progress=False),
        "in_memory": lambda: make_loader("in_memory", index, batch_size=batch, progress=False),
    }
    datasets = {name: make() for name, make in stages.items()}
    warm_stores(index, ["tfrecord", "tfrecord_guide"])  # the shards read into the page cache, after the builds
    rates: dict[str, list[float]] = {name: [] for name in stages}

    per_epoch = -(-len(index) // batch)
    timed = max(1, min(a.batches, per_epoch - 1 - a.warmup))  # within one epoch: no epoch's start timed
    for _ in range(a.rounds):
        for name, ds in datasets.items():
            it = iter(ds)  # a new epoch each round, as the spectrogram bench reads them
            for _ in range(a.warmup):
                next(it)
            t0 = time.perf_counter()
            frames = 0.0
            for _ in range(timed):
                x = next(it)
                x = x[0] if isinstance(x, tuple) else x
                frames += int(x.shape[0]) * (per_record if x.dtype == tf.string else 1)
            rates[name].append(frames / (time.perf_counter() - t0))
            del it
    ceiling = statistics.median(rates["in_memory"])
    out = {"frames": len(index), "batch": batch, "frames_per_record": per_record, "rounds": a.rounds,
           "batches": timed, "store": str(folder),
           "stages": {name: {"frames_per_s": statistics.median(r), "min": min(r), "max": max(r),
                             "x_in_memory": statistics.median(r) / ceiling} for name, r in rates.items()}}
    print(f"{len(index):,} frames, batches of {batch} ({per_record:g} frames a record), {a.rounds} interleaved "
          f"rounds of {timed} batches (each round a new epoch, after {a.warmup} warm-up batches), medians:")
    for name, s in out["stages"].items():
        print(f"  {name:14s} {s['frames_per_s']:>10,.0f} frames/s ({s['min']:,.0f}-{s['max']:,.0f})  "
              f"{s['x_in_memory']:.2f}x in_memory")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
