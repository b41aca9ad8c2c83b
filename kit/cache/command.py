"""``python -m kit cache``: every entry of the kit cache with its size, age and what built it;
``--clean --older-than 7d`` or ``--max-size 2GB`` removes the kit's entries, oldest first, until the
budget holds."""

from __future__ import annotations

import argparse
import re

from kit.cache.entries import BUSY_WAIT_S, Entry, fmt_bytes, root, scan, summary, table
from kit.cache.trim import clean

_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12}
_AGES = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_size(text: str) -> int:
    """``"2GB"``, ``"500M"``, ``"0"`` -> bytes (decimal units)."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"expected a size such as 500MB or 2GB, got {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def parse_age(text: str) -> float:
    """``"7d"``, ``"12h"``, ``"30min"`` -> seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]+)\s*", text)
    if not m or m.group(2).lower() not in _AGES:
        raise argparse.ArgumentTypeError(f"expected an age such as 30min, 12h or 7d, got {text!r}")
    return float(m.group(1)) * _AGES[m.group(2).lower()]


def register(sub) -> None:
    p = sub["root"].add_parser("cache", help="list the kit cache ($KIT_CACHE or ~/.cache/kit): size, age, what "
                                             "built each entry; --clean trims it")
    p.add_argument("--clean", action="store_true", help="remove the kit's entries beyond the budget")
    p.add_argument("--older-than", type=parse_age, default=None, metavar="AGE",
                   help="with --clean: remove entries built longer ago than AGE (30min, 12h, 7d)")
    p.add_argument("--max-size", type=parse_size, default=None, metavar="SIZE",
                   help="with --clean: then remove the oldest until the kit's entries fit in SIZE "
                        "(500MB, 2GB; 0 removes all of them)")
    p.add_argument("--dry-run", action="store_true", help="with --clean: say what would go, remove nothing")
    p.set_defaults(func=main)


def main(args) -> int:
    r = root()
    if (args.older_than is not None or args.max_size is not None or args.dry_run) and not args.clean:
        raise ValueError("--older-than, --max-size and --dry-run go with --clean")
    entries = scan(r)
    if not args.clean:
        if not entries:
            print(f"kit cache {r}: empty" + ("" if r.exists() else " (the folder does not exist yet)"))
            return 0
        print(table(entries))
        print()
        print(summary(r))
        return 0
    held: list[Entry] = []
    gone = clean(r, older_than=args.older_than, max_bytes=args.max_size, dry_run=args.dry_run, skipped=held)
    verb = "would remove" if args.dry_run else "removed"
    for e in gone:
        print(f"{verb} {fmt_bytes(e.bytes):>9}  {e.kind:<24} {e.path}")
    freed = sum(e.bytes for e in gone)
    print(f"{verb} {len(gone)} entries, {fmt_bytes(freed)}" + ("" if args.dry_run else f"; {summary(r)}"))
    if held:
        print(f"left alone (another process held it for {BUSY_WAIT_S:g} s; run again later): "
              f"{', '.join(e.name for e in held)}")
    foreign = [e for e in scan(r) if not e.kits]
    if foreign:
        print(f"left alone (not the kit's): {', '.join(e.name for e in foreign)}")
    return 0
