"""``python -m kit convert segmentation``: image/mask pairs into a class-index store."""

from __future__ import annotations

from pathlib import Path

from kit.segmentation import PairIndex, Palette, convert
from kit.segmentation.convert import DEFAULT_SHARD_MB
from kit.util import non_negative_int, positive_float, positive_int, size_arg


def register(sub) -> None:
    p = sub["convert"].add_parser(
        "segmentation", help="image/mask pairs into uint8 image and class-index shards (resumable)")
    p.add_argument("--index", required=True, type=Path, help="index CSV: image,label[,split]")
    p.add_argument("--palette", type=Path, default=None,
                   help="class_dict.csv: name,r,g,b (default: class_dict.csv next to the index)")
    p.add_argument("--out", type=Path, default=None,
                   help="the store's folder (default: a content-keyed folder in the kit cache)")
    p.add_argument("--format", choices=["memmap", "tfrecord"], default="memmap",
                   help="the class-index store's format (default memmap)")
    p.add_argument("--size", type=size_arg, default=512, help="SIZE or HEIGHTxWIDTH to crop or pad to (512)")
    p.add_argument("--ignore-label", type=int, default=None,
                   help="class id for colours not in the palette (and padding), which the loss skips")
    p.add_argument("--shard-mb", type=positive_float, default=None, help="target shard size in MB (default 100)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="TFRecord write order")
    p.add_argument("--workers", type=positive_int, default=None, help="threads writing shards (default: CPUs)")
    p.set_defaults(func=_convert)


def _convert(args) -> int:
    index = PairIndex.from_csv(args.index)
    palette_csv = args.palette if args.palette is not None else args.index.parent / "class_dict.csv"
    palette = Palette.from_csv(palette_csv, ignore_label=args.ignore_label)
    folder, m = convert(index, palette, args.format, args.out, size=args.size,
                        shard_mb=DEFAULT_SHARD_MB if args.shard_mb is None else args.shard_mb, seed=args.seed, workers=args.workers)
    size = sum(s["bytes"] for s in m.shards)
    print(f"{folder}: {m.count:,} pairs in {len(m.shards)} file(s), {size / 1e6:,.1f} MB; "
          f"check with: python -m kit verify {folder}")
    return 0
