"""The kit cache (``$KIT_CACHE``, default ``~/.cache/kit``): what is in it, and trimming it.

``python -m kit cache`` lists every entry with its size, age and what built it;
``python -m kit cache --clean --older-than 7d`` or ``--max-size 2GB`` removes the kit's
entries, oldest first, until the budget holds.

Only what the kit made is ever removed, and only inside the cache folder:

* a store (``kit.store``): its ``.kit-store`` marker or ``manifest.json`` names its kind
  (without a manifest it is an interrupted build);
* sample data (``kit.samples``): its ``.kit-samples.json`` marker.

Anything else (a file, a symbolic link, a folder without either) is listed as not the
kit's and left alone; symbolic links are never followed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    'BUSY_S',
    'Entry',
    'root',
    'classify',
    'scan',
    'total_bytes',
    'to_remove',
    'clean',
    'parse_size',
    'parse_age',
    'fmt_bytes',
    'fmt_age',
    'summary',
    'table',
    'register',
    'main',
]

_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12}
_AGES = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


#: An incomplete store or sample folder changed less than this long ago is taken to be in progress.
BUSY_S = 3600


@dataclass
class Entry:
    """One thing directly inside the cache folder."""

    path: Path
    bytes: int
    created: float | None   # epoch seconds: when the kit built it (None if unknown)
    kind: str               # the store's kind, "samples", or "not the kit's"
    built_by: str           # what built it, as far as its manifest or marker says
    kits: bool              # made by the kit, so ``clean`` may remove it
    complete: bool = True

    @property
    def age_s(self) -> float | None:
        return None if self.created is None else max(0.0, time.time() - self.created)


def root(folder: str | os.PathLike | None = None) -> Path:
    """The cache folder: ``folder``, else ``$KIT_CACHE``, else ``~/.cache/kit``."""
    if folder is not None:
        return Path(folder)
    from kit import store

    return store.default_workdir()


def _size(path: Path) -> int:
    """Bytes under ``path`` (symbolic links count as themselves, never followed)."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return 0
    if not path.is_dir() or path.is_symlink():
        return st.st_size
    total = 0
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except FileNotFoundError:
                pass
    return total


def _mtime(path: Path) -> float | None:
    try:
        return path.lstat().st_mtime
    except FileNotFoundError:
        return None


def _newest(folder: Path) -> float | None:
    """The latest modification time of ``folder`` or anything directly in it."""
    times = [t for t in [_mtime(folder)] + [_mtime(p) for p in folder.iterdir()] if t is not None]
    return max(times) if times else None


def classify(path: Path) -> Entry:
    """What ``path`` (an entry of the cache folder) is, and whether the kit made it."""
    from kit import samples, store

    size = _size(path)
    if path.is_symlink() or not path.is_dir():
        return Entry(path, size, _mtime(path), "not the kit's", "", kits=False)
    kind = store.store_kind(path)  # its .kit-store marker or manifest
    if kind is not None:
        manifest = path / store.MANIFEST
        try:
            d = json.loads(manifest.read_text())
        except (OSError, ValueError):
            d = None
        if isinstance(d, dict) and {"kind", "key", "count", "shards"} <= d.keys():
            meta = d.get("meta") if isinstance(d.get("meta"), dict) else {}
            by = str(meta.get("module") or "kit.store")
            if meta.get("source"):
                src = Path(str(meta["source"]))
                # sources inside the cache are named relative to it
                by += f" from {src.relative_to(path.parent) if src.is_relative_to(path.parent) else src}"
            return Entry(path, size, _mtime(manifest), str(d["kind"]), by, kits=True)
        return Entry(path, size, _newest(path), f"{kind} (incomplete)",
                     "an interrupted (or running) build", kits=True, complete=False)
    marker = path / samples.MARKER
    if marker.is_file() and not marker.is_symlink():
        try:
            d = json.loads(marker.read_text())
        except (OSError, ValueError):
            d = None
        if isinstance(d, dict) and str(d.get("kind", "")).endswith("-samples"):
            done = (path / "index.csv").is_file() and not path.name.startswith(".")
            opts = d.get("options") if isinstance(d.get("options"), dict) else {}
            what = "kit.samples " + ", ".join(f"{k}={v}" for k, v in opts.items())
            return Entry(path, size, _mtime(marker) if done else _newest(path),
                         str(d["kind"]) if done else f"{d['kind']} (incomplete)", what, kits=True,
                         complete=done)
    return Entry(path, size, _mtime(path), "not the kit's", "", kits=False)


def scan(folder: str | os.PathLike | None = None) -> list[Entry]:
    """Every entry of the cache folder, largest first; empty if the folder does not exist."""
    r = root(folder)
    if not r.is_dir():
        return []
    return sorted((classify(p) for p in r.iterdir()), key=lambda e: -e.bytes)


def total_bytes(folder: str | os.PathLike | None = None) -> int:
    return sum(e.bytes for e in scan(folder))


def to_remove(entries: list[Entry], *, older_than: float | None = None,
              max_bytes: int | None = None) -> list[Entry]:
    """The kit's entries to remove: older than ``older_than`` seconds, then the oldest
    until the kit's entries fit in ``max_bytes``."""
    if older_than is None and max_bytes is None:
        raise ValueError("say how much to keep: an age (--older-than 7d) or a size (--max-size 2GB)")
    # An incomplete entry touched within the hour may be a build running now: left alone.
    ours = sorted((e for e in entries if e.kits and (e.complete or (e.age_s or 0) > BUSY_S)),
                  key=lambda e: e.created or 0.0)
    chosen = [e for e in ours if older_than is not None and e.age_s is not None and e.age_s > older_than]
    if max_bytes is not None:
        kept = sum(e.bytes for e in ours if e not in chosen)
        for e in ours:
            if kept <= max_bytes:
                break
            if e not in chosen:
                chosen.append(e)
                kept -= e.bytes
    return chosen


def clean(folder: str | os.PathLike | None = None, *, older_than: float | None = None,
          max_bytes: int | None = None, dry_run: bool = False) -> list[Entry]:
    """Removes the kit's entries beyond the budget; returns what it removed (or would).

    Args:
        folder: the cache folder (default ``root()``).
        older_than: remove entries built more than this many seconds ago.
        max_bytes: then remove the oldest until the kit's entries take at most this.
        dry_run: remove nothing, only say what would go.
    """
    r = root(folder).resolve()
    chosen = to_remove(scan(r), older_than=older_than, max_bytes=max_bytes)
    if dry_run:
        return chosen
    for e in chosen:
        # Checked again just before: a direct child of the cache, not a link, still the kit's.
        again = classify(e.path)
        if e.path.parent.resolve() != r or e.path.is_symlink() or not again.kits:
            continue
        shutil.rmtree(e.path)
    return chosen


# --------------------------------------------------------------------------- text


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


def fmt_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def fmt_age(s: float | None) -> str:
    if s is None:
        return "?"
    for unit, div in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= div:
            return f"{s / div:.0f} {unit}"
    return f"{s:.0f} s"


def summary(folder: str | os.PathLike | None = None) -> str:
    """One line: the cache folder, its size, and how to list or trim it."""
    entries = scan(folder)
    ours = [e for e in entries if e.kits]
    return (f"kit cache {root(folder)}: {fmt_bytes(sum(e.bytes for e in entries))} in {len(entries)} entries "
            f"({fmt_bytes(sum(e.bytes for e in ours))} the kit's); `python -m kit cache` lists them, "
            f"`python -m kit cache --clean --older-than 7d` trims them")


def table(entries: list[Entry]) -> str:
    width = max([len(e.path.name) for e in entries] + [4])
    lines = [f"{'size':>9}  {'age':>6}  {'name':<{width}}  {'kind':<22} what built it"]
    for e in entries:
        by = e.built_by if e.kits else "left alone: no kit manifest or marker"
        lines.append(f"{fmt_bytes(e.bytes):>9}  {fmt_age(e.age_s):>6}  {e.path.name:<{width}}  {e.kind:<22} {by}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- command


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
    gone = clean(r, older_than=args.older_than, max_bytes=args.max_size, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for e in gone:
        print(f"{verb} {fmt_bytes(e.bytes):>9}  {e.kind:<24} {e.path}")
    freed = sum(e.bytes for e in gone)
    print(f"{verb} {len(gone)} entries, {fmt_bytes(freed)}; {summary(r)}" if not args.dry_run else
          f"{verb} {len(gone)} entries, {fmt_bytes(freed)}")
    foreign = [e for e in scan(r) if not e.kits]
    if foreign:
        print(f"left alone (not the kit's): {', '.join(e.path.name for e in foreign)}")
    return 0
