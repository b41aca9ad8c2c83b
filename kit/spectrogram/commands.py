"""``python -m kit convert spectrogram``: frames into a memmap or TFRecord store."""

from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    p = sub["convert"].add_parser(
        "spectrogram", help="frames of an index CSV into TFRecord shards or one memmap (resumable)")
    p.add_argument("--index", required=True, type=Path, help="index CSV: path,frame,label[,split]")
    p.add_argument("--to", required=True, choices=["tfrecord", "memmap"])
    p.add_argument("--out", required=True, type=Path, help="the store's folder")
    from kit.cli import non_negative_int, positive_float, positive_int

    p.add_argument("--shard-mb", type=positive_float, default=None,
                   help="target TFRecord shard size in MB (default 100)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="TFRecord write order")
    p.add_argument("--workers", type=positive_int, default=None, help="threads writing shards (default: CPUs)")
    p.add_argument("--allow-nonfinite", action="store_true",
                   help="warn about frames with NaN or inf instead of refusing them")
    p.set_defaults(func=_convert)


def _convert(args) -> int:
    from kit.spectrogram import FrameIndex, convert
    from kit.spectrogram.convert import DEFAULT_SHARD_MB

    if args.to == "memmap" and args.shard_mb is not None:
        raise ValueError("--shard-mb applies to --to tfrecord only")
    index = FrameIndex.from_csv(args.index)
    folder, m = convert(index, args.to, args.out, shard_mb=DEFAULT_SHARD_MB if args.shard_mb is None else args.shard_mb,
                        seed=args.seed, workers=args.workers,
                        nonfinite="warn" if args.allow_nonfinite else "error")
    size = sum(s["bytes"] for s in m.shards)
    print(f"{folder}: {m.count:,} frames in {len(m.shards)} file(s), {size / 1e6:,.1f} MB; "
          f"check with: python -m kit verify {folder}")
    return 0
