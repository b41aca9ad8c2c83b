"""``python -m kit convert spectrogram`` (frames into a memmap, TFRecord or ArrayRecord store) and
``python -m kit multiworker`` (one worker of a multi-worker run on spectrogram frames)."""

from __future__ import annotations

import functools
from pathlib import Path

from kit import distribute, models, samples
from kit.spectrogram import FrameIndex, convert, make_loader
from kit.spectrogram.convert import DEFAULT_SHARD_MB
from kit.util import non_negative_int, positive_float, positive_int, write_json


def register(sub) -> None:
    p = sub["convert"].add_parser(
        "spectrogram", help="frames of an index CSV into TFRecord or ArrayRecord shards or one memmap (resumable)")
    p.add_argument("--index", required=True, type=Path, help="index CSV: path,frame,label[,split]")
    p.add_argument("--to", required=True, choices=["tfrecord", "tfexample", "memmap", "arrayrecord"],
                   help="tfrecord: sharded, checksummed records of 32 frames; tfexample: one tf.train.Example a "
                        "frame, as TensorFlow's TFRecord tutorial writes them (variant tfrecord_guide); memmap: "
                        "one memory-mapped array; arrayrecord: "
                        "sharded ArrayRecord files, one record a frame, for Google Grain (needs the peers extra: "
                        "pip install 'kit[peers]')")
    p.add_argument("--out", required=True, type=Path, help="the store's folder")
    p.add_argument("--shard-mb", type=positive_float, default=None,
                   help="target TFRecord or ArrayRecord shard size in MB (default 100)")
    p.add_argument("--seed", type=non_negative_int, default=0,
                   help="TFRecord write order (an ArrayRecord store is in index order)")
    p.add_argument("--workers", type=positive_int, default=None, help="threads writing shards (default: CPUs)")
    p.add_argument("--allow-nonfinite", action="store_true",
                   help="warn about frames with NaN or inf instead of refusing them")
    p.add_argument("--store-dtype", choices=["float32", "float16"], default="float32",
                   help="dtype of the stored frames (float16: half the bytes; loaders deliver float32)")
    p.set_defaults(func=_convert)

    m = sub["root"].add_parser(
        "multiworker", help="one worker of a MultiWorkerMirroredStrategy run (start one per machine)")
    m.add_argument("--workers", required=True, help="HOST:PORT,HOST:PORT,... the same list on every worker")
    m.add_argument("--index", type=non_negative_int, required=True, help="this worker's position in --workers")
    m.add_argument("--csv", default=None, help="spectrogram index CSV (default: the embedded sample)")
    m.add_argument("--variant", default="in_memory", help="tf.data loader variant")
    m.add_argument("--per-replica-batch", type=positive_int, default=8, help="examples per replica per step (default 8)")
    m.add_argument("--steps", type=positive_int, default=3, help="training steps to run (default 3)")
    m.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")
    m.set_defaults(func=_multiworker)


def _convert(args) -> int:
    if args.to == "memmap" and args.shard_mb is not None:
        raise ValueError("--shard-mb applies to --to tfrecord and --to arrayrecord only")
    index = FrameIndex.from_csv(args.index)
    folder, m = convert(index, args.to, args.out, shard_mb=DEFAULT_SHARD_MB if args.shard_mb is None else args.shard_mb,
                        seed=args.seed, workers=args.workers, store_dtype=args.store_dtype,
                        nonfinite="warn" if args.allow_nonfinite else "error")
    size = sum(s["bytes"] for s in m.shards)
    print(f"{folder}: {m.count:,} frames in {len(m.shards)} file(s), {size / 1e6:,.1f} MB; "
          f"check with: python -m kit verify {folder}")
    return 0


def _multiworker(args) -> int:
    from kit.distribute.multiworker import run_multiworker  # imports TensorFlow: not at the command line's start

    frames = FrameIndex.from_csv(args.csv or samples.embedded("spectrogram"))
    make = functools.partial(make_loader, args.variant, shuffle=False, progress=False)
    out = run_multiworker(
        workers=args.workers, index=args.index, per_replica_batch=args.per_replica_batch, steps=args.steps,
        make_data=lambda strategy: distribute.distributed_loader(
            strategy, make, frames, per_replica_batch=args.per_replica_batch, pattern="per_replica"),
        make_model=lambda: models.small_model(frames.frame_shape, frames.num_classes))
    print(f"worker {out['worker']}: {out['replicas']} replicas, global batch {out['global_batch']}, "
          f"losses {', '.join(f'{v:.4f}' for v in out['losses'])}, weights {out['digest']}")
    write_json(args.json, out)
    return 0
