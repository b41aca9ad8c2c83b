"""Where the TFRecord loader's time goes, stage by stage, side by side with ``in_memory``.

The ``tfrecord`` variant reads a checked store of records of 32 frames by record id: the
epoch's order computed (shards in a per-epoch order, interleaved, records permuted in
windows, ``kit.cases.stores.record_batches``), then each batch's 8 records copied once from the
mapped shards straight into the batch (``kit.spectrogram.records``). This script times
the pipeline cut after each stage, beside the earlier window read through ``tf.data`` and
the guide's pipeline, on the default spectrogram bench data (20,000 frames, batches of 256,
the stores in the page cache), interleaved over rounds:

* ``tfdata_read``: the shards read through ``tf.data`` in fixed-length pieces (a record and
  its framing), interleaved, batched 8 records at a time (a batch of 256 frames as 8 strings);
* ``tfdata_window``: the earlier loader without its guard: those pieces taken in windows,
  each window cut into batches along its permutation (``tf.gather``), each batch decoded with
  one ``decode_raw`` (four copies of every byte);
* ``order``: the record ids of each batch alone, as the loader computes them;
* ``read_records``: and each batch's records read into the batch (one copy);
* ``tfrecord``: the whole loader (the same, with ``kit.epochs.finish``: the epoch's length
  guarded, a final prefetch, tf.data's autotuner off, symbolic checkpointing);
* ``tfrecord_guide``: the guide's pipeline over a ``tf.train.Example``-per-frame store;
* ``in_memory``: every frame in RAM, one gather a batch (the ceiling).

Each row: frames per second (a batch counts its 256 frames; ``order`` counts the frames its ids
name), and its share of ``in_memory``. Freed batch buffers are kept as ``python -m kit`` keeps them
(``kit.system.memory.keep_freed_memory``).

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

    from kit.system.memory import keep_freed_memory

    keep_freed_memory()  # as python -m kit does, before any batch
    import tensorflow as tf

    from kit import store
    from kit.bench.spectrogram import DEFAULT_BATCH, default_data, warm_stores
    from kit.cases import check_shards
    from kit.cases.loaders import LoaderOptions
    from kit.cases.stores import (
        FIXED_READ_BUFFER,
        SHARD_PREFETCH,
        TFRECORD_FRAMING,
        TFRECORD_HEAD,
        _whole_records,
        record_batches,
        window_records,
    )
    from kit.epochs import order_dataset
    from kit.spectrogram import FrameIndex, convert, make_loader
    from kit.spectrogram.convert import decode_records
    from kit.spectrogram.records import RecordReader

    index = FrameIndex.from_csv(default_data())
    batch = DEFAULT_BATCH
    folder, manifest = convert(index, "tfrecord", progress=False)
    paths = check_shards(folder, manifest)
    tail = [q for q in paths if q.endswith(manifest.meta.get("tail_shard") or "\0")]
    body = [q for q in paths if q not in tail]
    block = int(manifest.meta["options"]["record_frames"])
    record_bytes = block * (96 * 64 * 4 + 8)
    k = batch // block
    opts = LoaderOptions(batch_size=batch, shuffle=True, seed=0)
    names = tf.constant(body)
    shards = {s.name: s for s in manifest.shards}
    reader = RecordReader(body + tail, [shards[q.rsplit("/", 1)[-1]].bytes for q in body + tail],
                          [shards[q.rsplit("/", 1)[-1]].count for q in body + tail], block=block,
                          frame_shape=index.frame_shape, dtype="float32", tail=bool(tail))

    def pieces(f):
        return tf.data.FixedLengthRecordDataset(f, record_bytes + TFRECORD_FRAMING, header_bytes=TFRECORD_HEAD,
                                                footer_bytes=TFRECORD_FRAMING - TFRECORD_HEAD,
                                                buffer_size=FIXED_READ_BUFFER)

    def read(files, count, dataset=None):
        return files.interleave(lambda f: (dataset or pieces)(f).prefetch(SHARD_PREFETCH), cycle_length=min(4, count))

    def files():
        return order_dataset(len(body), opts).map(lambda i: tf.gather(names, i))

    def ids():
        return record_batches(reader.records, opts, per_batch=k, window=window_records(4096, block, k), cycle_length=4,
                              tail=bool(tail), read_ahead=True)

    def take(rows, later):
        x, y = tf.numpy_function(reader.take, [rows, later], (tf.float32, tf.int64), stateful=False)
        return tf.reshape(x, (-1,) + index.frame_shape + (1,)), y

    def named(rows, later):  # the frames the ids name, so the row counts them like a batch
        return tf.zeros([tf.reduce_sum(tf.cast(rows >= 0, tf.int32)) * block, 1]), rows

    stages = {
        "tfdata_read": lambda: read(files(), len(body)).batch(k).prefetch(tf.data.AUTOTUNE),
        "tfdata_window": lambda: _whole_records(
            files(), len(body), [], lambda r: r, opts, block, 4096, None, read, record_bytes,
            lambda r: decode_records(r, index.frame_shape, "float32", framed=True), True).prefetch(tf.data.AUTOTUNE),
        "order": lambda: ids().map(named).prefetch(tf.data.AUTOTUNE),
        "read_records": lambda: ids().map(take, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE),
        "tfrecord": lambda: make_loader("tfrecord", index, batch_size=batch, progress=False),
        "tfrecord_guide": lambda: make_loader("tfrecord_guide", index, batch_size=batch, progress=False),
        "in_memory": lambda: make_loader("in_memory", index, batch_size=batch, progress=False),
    }
    datasets = {name: make() for name, make in stages.items()}
    warm_stores(index, ["tfrecord", "tfrecord_guide"])  # the shards read into the page cache, after the builds
    rates: dict[str, list[float]] = {name: [] for name in stages}

    per_epoch = -(-len(index) // batch)
    timed = min(a.batches, per_epoch - 1 - a.warmup)  # within one epoch: no epoch's start timed
    for _ in range(a.rounds):
        for name, ds in datasets.items():
            it = iter(ds)  # a new epoch each round, as the spectrogram bench reads them
            for _ in range(a.warmup):
                next(it)
            t0 = time.perf_counter()
            frames = 0
            for _ in range(timed):
                x = next(it)
                x = x[0] if isinstance(x, tuple) else x  # tfdata_read: a batch of record strings
                frames += int(x.shape[0]) * (block if x.dtype == tf.string else 1)
            rates[name].append(frames / (time.perf_counter() - t0))
            del it
    ceiling = statistics.median(rates["in_memory"])
    out = {"frames": len(index), "batch": batch, "record_frames": block, "rounds": a.rounds, "batches": timed,
           "store": str(folder), "checked_at_open": store.checks_on(None),
           "stages": {name: {"frames_per_s": statistics.median(r), "min": min(r), "max": max(r),
                             "x_in_memory": statistics.median(r) / ceiling} for name, r in rates.items()}}
    print(f"{len(index):,} frames, batches of {batch} ({k} records of {block}), {a.rounds} interleaved rounds of "
          f"{timed} batches (each round a new epoch, after {a.warmup} warm-up batches), medians:")
    for name, s in out["stages"].items():
        print(f"  {name:14s} {s['frames_per_s']:>10,.0f} frames/s ({s['min']:,.0f}-{s['max']:,.0f})  "
              f"{s['x_in_memory']:.2f}x in_memory")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
