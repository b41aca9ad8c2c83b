"""Where the TFRecord loader's time goes, stage by stage, side by side with ``in_memory``.

The ``tfrecord`` variant reads a store of records of 32 frames in fixed-length pieces, takes
them in windows, cuts each window into batches along a permutation and decodes each batch with
one ``decode_raw`` (``kit.cases.read_tfrecords``). This script times the same pipeline cut after
each stage, on the default spectrogram bench data (20,000 frames, batches of 256, the stores in
the page cache), interleaved over rounds:

* ``read``: the shards' pieces, interleaved as the loader reads them, batched 8 records at a
  time (a batch of 256 frames as 8 strings);
* ``read_permute``: the same, taken in windows and cut into batches along each window's
  permutation (the loader without its decode);
* ``read_permute_decode``: and each batch of records decoded (``decode_records``: one
  ``decode_raw`` for the frames, one for the labels, the framing's stated lengths checked);
* ``tfrecord``: the whole loader (the same, with ``kit.epochs.finish``: the epoch's length
  guarded, a final prefetch, tf.data's autotuner off, symbolic checkpointing);
* ``in_memory``: every frame in RAM, one gather a batch (the ceiling).

Each row: frames per second (a batch counts its 256 frames), and its share of ``in_memory``.

    .venv/bin/python scripts/tfrecord_stages.py [--rounds 5] [--batches 60] [--warmup 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batches", type=int, default=60, help="timed batches per stage per round (at most an epoch's)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)

    import tensorflow as tf

    from kit import store
    from kit.bench.spectrogram import DEFAULT_BATCH, default_data
    from kit.cases import check_shards
    from kit.cases.loaders import LoaderOptions
    from kit.cases.stores import FIXED_READ_BUFFER, SHARD_PREFETCH, TFRECORD_FRAMING, TFRECORD_HEAD, _whole_records
    from kit.epochs import order_dataset
    from kit.spectrogram import FrameIndex, convert, make_loader
    from kit.spectrogram.convert import decode_records
    from kit.system.pagecache import warm_page_cache

    index = FrameIndex.from_csv(default_data())
    batch = DEFAULT_BATCH
    folder, manifest = convert(index, "tfrecord", progress=False)
    paths = check_shards(folder, manifest)
    tail = [q for q in paths if q.endswith(manifest.meta.get("tail_shard") or "\0")]
    body = [q for q in paths if q not in tail]
    warm_page_cache(paths)
    block = int(manifest.meta["options"]["record_frames"])
    record_bytes = block * (96 * 64 * 4 + 8)
    k = batch // block
    opts = LoaderOptions(batch_size=batch, shuffle=True, seed=0)
    names = tf.constant(body)

    def pieces(f):
        return tf.data.FixedLengthRecordDataset(f, record_bytes + TFRECORD_FRAMING, header_bytes=TFRECORD_HEAD,
                                                footer_bytes=TFRECORD_FRAMING - TFRECORD_HEAD,
                                                buffer_size=FIXED_READ_BUFFER)

    def read(files, count, dataset=None):
        return files.interleave(lambda f: (dataset or pieces)(f).prefetch(SHARD_PREFETCH), cycle_length=min(4, count))

    def files():
        return order_dataset(len(body), opts).map(lambda i: tf.gather(names, i))

    stages = {
        "read": lambda: read(files(), len(body)).batch(k).prefetch(tf.data.AUTOTUNE),
        "read_permute": lambda: _whole_records(files(), len(body), [], lambda r: r, opts, block, 4096, None, read,
                                               record_bytes, lambda r: r, True).prefetch(tf.data.AUTOTUNE),
        "read_permute_decode": lambda: _whole_records(
            files(), len(body), [], lambda r: r, opts, block, 4096, None, read, record_bytes,
            lambda r: decode_records(r, index.frame_shape, "float32", framed=True), True).prefetch(tf.data.AUTOTUNE),
        "tfrecord": lambda: make_loader("tfrecord", index, batch_size=batch, progress=False),
        "in_memory": lambda: make_loader("in_memory", index, batch_size=batch, progress=False),
    }
    datasets = {name: make() for name, make in stages.items()}
    rates: dict[str, list[float]] = {name: [] for name in stages}

    per_epoch = -(-len(index) // batch)
    timed = min(a.batches, per_epoch - 1 - a.warmup)  # within one epoch: no epoch's start timed
    for _ in range(a.rounds):
        for name, ds in datasets.items():
            it = iter(ds)  # a new epoch each round, as the spectrogram bench reads them
            for _ in range(a.warmup):
                next(it)
            t0 = time.perf_counter()
            for _ in range(timed):
                next(it)
            rates[name].append(timed * batch / (time.perf_counter() - t0))
            del it
    ceiling = statistics.median(rates["in_memory"])
    out = {"frames": len(index), "batch": batch, "record_frames": block, "rounds": a.rounds, "batches": timed,
           "store": str(folder), "checked_at_open": store.checks_on(None),
           "stages": {name: {"frames_per_s": statistics.median(r), "min": min(r), "max": max(r),
                             "x_in_memory": statistics.median(r) / ceiling} for name, r in rates.items()}}
    print(f"{len(index):,} frames, batches of {batch} ({k} records of {block}), {a.rounds} interleaved rounds of "
          f"{timed} batches (each round a new epoch, after {a.warmup} warm-up batches), medians:")
    for name, s in out["stages"].items():
        print(f"  {name:13s} {s['frames_per_s']:>10,.0f} frames/s ({s['min']:,.0f}-{s['max']:,.0f})  "
              f"{s['x_in_memory']:.2f}x in_memory")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
