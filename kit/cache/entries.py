"""What is in the kit cache (``$KIT_CACHE``, default ``~/.cache/kit``): each entry with its size, age,
what built it and whether the kit made it (``scan``, ``classify``).

Only what the kit made counts as the kit's (``Entry.kits``): a store, sample data, the content-digest
database, the results ledger, a killed sample build's or ``bench transfer``'s leftovers. Symbolic links
are never followed.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote

from kit import samples
from kit.cases.registry import unit_of_kind
from kit.results import REQUIRED
from kit.store.folder import MANIFEST, default_workdir, store_kind
from kit.util import process_alive

#: An incomplete store or sample folder changed less than this long ago is taken to be in progress.
BUSY_S = 3600
#: How long ``clean`` waits for another process to let go of a store or the digest database
#: before leaving it alone (the kit's digest writes hold the database for milliseconds).
BUSY_WAIT_S = 2.0

#: The content-digest database ``kit.store`` keeps in the cache, and its one table as
#: ``kit.store._DigestCache`` creates it: ``(name, type, notnull, pk)`` per column.
DIGESTS = "digests.sqlite3"
_DIGEST_TABLE = "digest"
_DIGEST_COLUMNS = [("k", "TEXT", 0, 1), ("d", "TEXT", 1, 0)]
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SQLITE_SIDES = ("-journal", "-wal", "-shm")

#: A killed sample build's folder (``kit.samples._build_into``: ``.<name>.tmp-<pid>-<random>``)
#: and what such a folder may hold.
_SAMPLES_TMP = re.compile(r"\.(.+)\.tmp-(\d+)-[A-Za-z0-9_]+")
_SAMPLES_FILES = {"frames", "images", "labels", "index.csv", "class_dict.csv", ".kit-samples.json"}
#: ``bench transfer``'s scratch folder (``tempfile.TemporaryDirectory(prefix="bench-transfer-")``),
#: left only by a killed run; it holds one feature cache, ``features``.
_TRANSFER_TMP = re.compile(r"bench-transfer-[A-Za-z0-9_]{8}")


@dataclass
class Entry:
    """One thing in the cache folder (or in its ``samples/`` folder)."""

    path: Path
    bytes: int
    created: float | None   # epoch seconds: when the kit built it (None if unknown)
    kind: str               # the store's kind, "samples", "content digests", or "not the kit's"
    built_by: str           # what built it, as far as its manifest or marker says
    kits: bool              # made by the kit, so ``clean`` may remove it
    complete: bool = True
    name: str = ""          # the path relative to the cache folder
    holds: str = ""         # what it holds, e.g. "20,000 frames"

    def __post_init__(self):
        self.name = self.name or self.path.name

    @property
    def age_s(self) -> float | None:
        return None if self.created is None else max(0.0, time.time() - self.created)


def root(folder: str | os.PathLike | None = None) -> Path:
    """The cache folder: ``folder``, else ``$KIT_CACHE``, else ``~/.cache/kit``."""
    return Path(folder) if folder is not None else default_workdir()


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


def _counted(kind: str, n) -> str:
    if not isinstance(n, int) or isinstance(n, bool):
        return ""
    return f"{n:,} {unit_of_kind(kind)}"


def digest_files(db: Path) -> list[Path]:
    """The digest database's ``-journal``, ``-wal`` and ``-shm`` files (which may not exist)."""
    return [db.with_name(db.name + s) for s in _SQLITE_SIDES]


def digest_rows(db) -> int | None:
    """Rows of the kit's digest table on an open connection; None if the schema is not the kit's."""
    objects = db.execute("SELECT type, name, tbl_name FROM sqlite_master").fetchall()
    if {n for t, n, _ in objects if t == "table"} != {_DIGEST_TABLE} or any(
            t != "table" and not (t == "index" and tbl == _DIGEST_TABLE and n.startswith("sqlite_autoindex_"))
            for t, n, tbl in objects):
        return None
    columns = [(c[1], str(c[2]).upper(), c[3], c[5]) for c in db.execute(f"PRAGMA table_info({_DIGEST_TABLE})")]
    if columns != _DIGEST_COLUMNS:
        return None
    return int(db.execute(f"SELECT COUNT(*) FROM {_DIGEST_TABLE}").fetchone()[0])


def _digests(path: Path) -> tuple[str, int | None]:
    """``("kit", rows)`` for the kit's digest database, ``("busy", None)`` for an SQLite file
    that stayed locked for ``BUSY_WAIT_S`` (not readable now), else ``("foreign", None)``.
    Opened read-only (SQLite may still tidy a leftover ``-wal``/``-shm``, as any reader does)."""
    try:
        with open(path, "rb") as f:
            if f.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
                return "foreign", None
        with closing(sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=ro", uri=True,
                                     timeout=BUSY_WAIT_S)) as db:
            rows = digest_rows(db)
    except sqlite3.OperationalError as e:  # locked, or a hot journal a read-only reader cannot roll back
        return ("busy", None) if "locked" in str(e) or "readonly" in str(e).replace(" ", "") else ("foreign", None)
    except (sqlite3.Error, OSError):
        return "foreign", None
    return ("foreign", None) if rows is None else ("kit", rows)


def _marked_samples(path: Path) -> Entry | None:
    marker = path / samples.MARKER
    if not marker.is_file() or marker.is_symlink():
        return None
    try:
        d = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    if not (isinstance(d, dict) and str(d.get("kind", "")).endswith("-samples")):
        return None
    done = (path / "index.csv").is_file() and not path.name.startswith(".")
    opts: dict = d["options"] if isinstance(d.get("options"), dict) else {}
    what = "kit.samples " + ", ".join(f"{k}={v}" for k, v in opts.items())
    kind = str(d["kind"])
    n = opts.get("images") if kind.startswith("segmentation") else None
    if kind.startswith("spectrogram") and all(isinstance(opts.get(k), int) for k in ("files", "frames_per_file")):
        n = opts["files"] * opts["frames_per_file"]
    return Entry(path, _size(path), _mtime(marker) if done else _newest(path),
                 kind if done else f"{kind} (incomplete)", what, kits=True, complete=done, holds=_counted(kind, n))


#: The results ledger's name when it lives in the cache (``kit.results.ledger_path`` outside a checkout).
LEDGER = "results.jsonl"


def _is_ledger(path: Path) -> bool:
    """Its first line is a kit ledger row (``kit.results.REQUIRED`` keys)."""
    try:
        with open(path, "rb") as f:
            obj = json.loads(f.readline())
    except (OSError, ValueError):
        return False
    return isinstance(obj, dict) and all(k in obj for k in REQUIRED)


def classify(path: Path, *, in_samples: bool = False) -> Entry:
    """What ``path`` (an entry of the cache folder, or of its ``samples/`` folder when
    ``in_samples``) is, and whether the kit made it."""
    path = Path(path)
    size = _size(path)
    foreign = Entry(path, size, _mtime(path), "not the kit's", "", kits=False)
    if path.is_symlink():
        return foreign
    if not path.is_dir():
        if path.name == LEDGER and not in_samples and path.is_file() and _is_ledger(path):
            return Entry(path, size, _mtime(path), "results ledger",
                         "kit.results, where the kit runs outside a checkout", kits=True)
        if path.name != DIGESTS or in_samples or not path.is_file():
            return foreign
        state, rows = _digests(path)
        if state == "foreign":
            return foreign
        size += sum(_size(p) for p in digest_files(path))
        if state == "busy":
            return Entry(path, size, time.time(), "content digests (in use)",
                         "kit.store: another process is writing it (its tables are checked once free)",
                         kits=True, complete=False)
        return Entry(path, size, _mtime(path), "content digests", "kit.store, for store keys",
                     kits=True, holds=f"{rows:,} files")
    kind = store_kind(path)  # its .kit-store marker or manifest
    if kind is not None:
        manifest = path / MANIFEST
        try:
            d = json.loads(manifest.read_text())
        except (OSError, ValueError):
            d = None
        if isinstance(d, dict) and {"kind", "key", "count", "shards"} <= d.keys():
            meta: dict = d["meta"] if isinstance(d.get("meta"), dict) else {}
            by = str(meta.get("module") or "kit.store")
            if meta.get("source"):
                src = Path(str(meta["source"]))
                # sources inside the cache are named relative to it
                base = path.parent.parent if in_samples else path.parent
                by += f" from {src.relative_to(base) if src.is_relative_to(base) else src}"
            return Entry(path, size, _mtime(manifest), str(d["kind"]), by, kits=True,
                         holds=_counted(str(d["kind"]), d.get("count")))
        return Entry(path, size, _newest(path), f"{kind} (incomplete)",
                     "an interrupted (or running) build", kits=True, complete=False)
    marked = _marked_samples(path)
    if marked is not None:
        return marked
    tmp = _SAMPLES_TMP.fullmatch(path.name) if in_samples else None
    if tmp and {p.name for p in path.iterdir()} <= _SAMPLES_FILES:
        # A running build's folder is left alone however old it is.
        busy = process_alive(int(tmp.group(2)))
        return Entry(path, size, time.time() if busy else _newest(path), "samples (incomplete)",
                     "a killed (or running) kit.samples build", kits=True, complete=False)
    if not in_samples and _TRANSFER_TMP.fullmatch(path.name):
        inside = {p.name for p in path.iterdir()}
        feats = path / "features"
        if inside <= {"features"} and (not inside or (not feats.is_symlink() and store_kind(feats))):
            times = [t for t in (_newest(path), _newest(feats) if inside else None) if t is not None]
            return Entry(path, size, max(times) if times else None, "feature-cache (scratch)",
                         "a killed (or running) bench transfer", kits=True, complete=False)
    return foreign


def scan(folder: str | os.PathLike | None = None) -> list[Entry]:
    """Every entry of the cache folder, largest first (the folders in its ``samples/`` folder each one of
    their own); empty if the folder does not exist."""
    r = root(folder)
    if not r.is_dir():
        return []
    group = samples.CACHE_FOLDER
    entries = []
    for p in r.iterdir():
        if p.name == group and p.is_dir() and not p.is_symlink():
            entries += [replace(classify(q, in_samples=True), name=f"{group}/{q.name}") for q in p.iterdir()]
        else:
            entries.append(classify(p))
    if any(e.kits and e.name == DIGESTS for e in entries):
        sides = {p.name for p in digest_files(r / DIGESTS)}
        entries = [e for e in entries if e.name not in sides]
    return sorted(entries, key=lambda e: -e.bytes)


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
    width = max([len(e.name) for e in entries] + [4])
    lines = [f"{'size':>9}  {'age':>6}  {'name':<{width}}  {'kind':<22} what built it"]
    for e in entries:
        by = e.built_by if e.kits else "left alone: no kit manifest or marker"
        if e.holds:
            by += f" ({e.holds})"
        lines.append(f"{fmt_bytes(e.bytes):>9}  {fmt_age(e.age_s):>6}  {e.name:<{width}}  {e.kind:<22} {by}")
    return "\n".join(lines)
