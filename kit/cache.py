"""The kit cache (``$KIT_CACHE``, default ``~/.cache/kit``): what is in it, and trimming it.

``python -m kit cache`` lists every entry with its size, age and what built it;
``python -m kit cache --clean --older-than 7d`` or ``--max-size 2GB`` removes the kit's
entries, oldest first, until the budget holds.

Only what the kit made is ever removed, and only inside the cache folder:

* a store (``kit.store``): its ``.kit-store`` marker or ``manifest.json`` names its kind
  (without a manifest it is an interrupted build);
* sample data (``kit.samples``): its ``.kit-samples.json`` marker, directly in the cache
  or in its ``samples/`` folder (``kit.samples.cached``), each sample folder one entry;
  a killed sample build's temporary folder there;
* the content-digest database (``kit.store``): ``digests.sqlite3`` with the kit's one
  table, with its ``-journal``/``-wal``/``-shm`` files;
* a killed ``bench transfer``'s scratch folder holding only a kit feature cache.

Anything else (a file, a symbolic link, a folder without either, a ``digests.sqlite3``
that is not the kit's database) is listed as not the kit's and left alone; symbolic
links are never followed. What another process holds (a store's build lock, the digest
database's lock) is left alone too, after a bounded wait.

``recording`` and ``reuse_report`` say which entries a run reused and which it built
(``python -m kit demo`` prints them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    'BUSY_S',
    'BUSY_WAIT_S',
    'DIGESTS',
    'Entry',
    'root',
    'classify',
    'scan',
    'total_bytes',
    'to_remove',
    'clean',
    'recording',
    'reuse_report',
    'parse_size',
    'parse_age',
    'fmt_bytes',
    'fmt_age',
    'summary',
    'table',
    'record_for_life',
    'used_by_others',
    'register',
    'main',
]

_UNITS = {"": 1, "b": 1, "k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12}
_AGES = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


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


def _counted(kind: str, n) -> str:
    if not isinstance(n, int) or isinstance(n, bool):
        return ""
    from kit.cases.registry import unit_of_kind

    return f"{n:,} {unit_of_kind(kind)}"


def _sides(db: Path) -> list[Path]:
    return [db.with_name(db.name + s) for s in _SQLITE_SIDES]


def _digest_rows(db) -> int | None:
    """Rows of the kit's digest table on an open connection; None if the schema is not the kit's."""
    objects = db.execute("SELECT type, name, tbl_name FROM sqlite_master").fetchall()
    if {n for t, n, _ in objects if t == "table"} != {_DIGEST_TABLE}:
        return None
    if any(t != "table" and not (t == "index" and tbl == _DIGEST_TABLE and n.startswith("sqlite_autoindex_"))
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
    import sqlite3
    from urllib.parse import quote

    try:
        with open(path, "rb") as f:
            if f.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
                return "foreign", None
        with closing(sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=ro", uri=True,
                                     timeout=BUSY_WAIT_S)) as db:
            rows = _digest_rows(db)
    except sqlite3.OperationalError as e:  # locked, or a hot journal a read-only reader cannot roll back
        return ("busy", None) if "locked" in str(e) or "readonly" in str(e).replace(" ", "") else ("foreign", None)
    except (sqlite3.Error, OSError):
        return "foreign", None
    return ("foreign", None) if rows is None else ("kit", rows)


def _marked_samples(path: Path) -> Entry | None:
    from kit import samples

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
    opts = d.get("options") if isinstance(d.get("options"), dict) else {}
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
    from kit.results import REQUIRED

    try:
        with open(path, "rb") as f:
            obj = json.loads(f.readline())
    except (OSError, ValueError):
        return False
    return isinstance(obj, dict) and all(k in obj for k in REQUIRED)


def classify(path: Path, *, in_samples: bool = False) -> Entry:
    """What ``path`` (an entry of the cache folder, or of its ``samples/`` folder when
    ``in_samples``) is, and whether the kit made it."""
    from kit import store
    from kit.util import process_alive

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
        size += sum(_size(p) for p in _sides(path))
        if state == "busy":
            return Entry(path, size, time.time(), "content digests (in use)",
                         "kit.store: another process is writing it (its tables are checked once free)",
                         kits=True, complete=False)
        return Entry(path, size, _mtime(path), "content digests", "kit.store, for store keys",
                     kits=True, holds=f"{rows:,} files")
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
        if inside <= {"features"} and (not inside or (not feats.is_symlink() and store.store_kind(feats))):
            times = [t for t in (_newest(path), _newest(feats) if inside else None) if t is not None]
            return Entry(path, size, max(times) if times else None, "feature-cache (scratch)",
                         "a killed (or running) bench transfer", kits=True, complete=False)
    return foreign


def _samples_folder() -> str:
    from kit import samples

    return samples.CACHE_FOLDER


def scan(folder: str | os.PathLike | None = None) -> list[Entry]:
    """Every entry of the cache folder, largest first; empty if the folder does not exist.

    The folders in its ``samples/`` folder are entries of their own (``samples/NAME``); a
    ``digests.sqlite3`` that is the kit's counts its ``-journal``/``-wal``/``-shm`` files.
    """
    r = root(folder)
    if not r.is_dir():
        return []
    group = _samples_folder()
    entries = []
    for p in r.iterdir():
        if p.name == group and p.is_dir() and not p.is_symlink():
            entries += [_named(classify(q, in_samples=True), f"{group}/{q.name}") for q in p.iterdir()]
        else:
            entries.append(classify(p))
    if any(e.kits and e.name == DIGESTS for e in entries):
        sides = {p.name for p in _sides(r / DIGESTS)}
        entries = [e for e in entries if e.name not in sides]
    return sorted(entries, key=lambda e: -e.bytes)


def _named(e: Entry, name: str) -> Entry:
    e.name = name
    return e


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


@contextmanager
def _free_folder(path: Path):
    """Yields True while this process holds the build locks of the store(s) in ``path``
    (``kit.store.LOCK``, taken exclusively), False if another process held one for ``BUSY_WAIT_S``."""
    import fcntl

    from kit import store

    fds = []
    try:
        for lock in [path / store.LOCK, *path.glob(f"*/{store.LOCK}")]:
            if lock.is_symlink():
                continue
            try:
                fd = os.open(lock, os.O_RDWR)
            except (FileNotFoundError, NotADirectoryError):
                continue  # no lock file: no build has started
            fds.append(fd)
            deadline = time.monotonic() + BUSY_WAIT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(0.05)
        yield True
    finally:
        for fd in fds:
            os.close(fd)


@contextmanager
def _free_digests(path: Path):
    """Yields True while this process holds the digest database exclusively (after at most
    ``BUSY_WAIT_S``) and it is still the kit's; False otherwise."""
    import sqlite3
    from urllib.parse import quote

    try:
        db = sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=rw", uri=True, timeout=BUSY_WAIT_S,
                             isolation_level=None)
    except sqlite3.Error:
        yield False
        return
    with closing(db):
        try:
            db.execute("BEGIN EXCLUSIVE")  # waits for other connections' transactions, then excludes them
            ours = _digest_rows(db) is not None
        except sqlite3.Error:
            ours = False
        yield ours


def clean(folder: str | os.PathLike | None = None, *, older_than: float | None = None,
          max_bytes: int | None = None, dry_run: bool = False, skipped: list | None = None) -> list[Entry]:
    """Removes the kit's entries beyond the budget; returns what it removed (or would).

    Args:
        folder: the cache folder (default ``root()``).
        older_than: remove entries built more than this many seconds ago.
        max_bytes: then remove the oldest until the kit's entries take at most this.
        dry_run: remove nothing, only say what would go.
        skipped: if given, the chosen entries another process held (left alone) are appended.
    """
    r = root(folder).resolve()
    group = r / _samples_folder()
    chosen = to_remove(scan(r), older_than=older_than, max_bytes=max_bytes)
    gone = []
    for e in chosen:
        # Checked again just before: inside the cache (or its samples folder), not a link, still the kit's.
        nested = e.path.parent == group
        if e.path.is_symlink() or not (e.path.parent == r or (nested and not group.is_symlink())):
            continue
        if not classify(e.path, in_samples=nested).kits:
            continue
        is_db = e.path.name == DIGESTS and not nested
        with (_free_digests(e.path) if is_db else _free_folder(e.path)) as free:
            if not free:
                if skipped is not None:
                    skipped.append(e)
                continue
            if not dry_run:
                if is_db:
                    for p in [e.path, *_sides(e.path)]:  # under the lock: no writer is midway
                        p.unlink(missing_ok=True)
                else:
                    shutil.rmtree(e.path)
        gone.append(e)
    if gone and not dry_run and group.is_dir() and not group.is_symlink():
        try:
            group.rmdir()  # only if it is now empty
        except OSError:
            pass
    return gone


# --------------------------------------------------------------------------- reuse


_RECORDING: list[tuple[tuple[str, ...], str, set]] = []
_HOOKED = False


def _audit(event: str, args: tuple) -> None:
    """Adds the cache entry of each file opened while ``recording`` (never raises)."""
    if not _RECORDING or (event != "open" and event != "sqlite3.connect"):
        return
    try:
        p = args[0]
        if not isinstance(p, (str, bytes, os.PathLike)):
            return
        p = os.path.abspath(os.fsdecode(p))
        for prefixes, group, found in _RECORDING:
            for pre in prefixes:
                if p.startswith(pre):
                    parts = p[len(pre):].split(os.sep)
                    found.add(f"{group}/{parts[1]}" if parts[0] == group and len(parts) > 1 else parts[0])
                    break
    except Exception:  # noqa: BLE001  an audit hook that raises would fail the open itself
        pass


@contextmanager
def recording(folder: str | os.PathLike | None = None, *, found: set | None = None):
    """Collects the names (as ``Entry.name``) of the cache entries this process opens
    within the block: a set (``found``, or a new one), filled as files under the cache are opened.

    Python's audit hook (``sys.addaudithook``: the ``open`` and ``sqlite3.connect``
    events) sees what this process opens through Python (``np.load``, ``open``, the
    manifests a store is found by), not what other processes (notebook kernels) open.
    The hook, once added, stays for the life of the process and returns at once
    outside a ``recording`` block.
    """
    global _HOOKED
    r = root(folder)
    prefixes = tuple({os.path.abspath(r) + os.sep, os.path.realpath(r) + os.sep})
    item = (prefixes, _samples_folder(), set() if found is None else found)
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    _RECORDING.append(item)
    try:
        yield item[2]
    finally:
        _RECORDING.remove(item)


#: A file each process appends the names of the cache entries it opened to, at exit, when set
#: (``python -m kit demo`` sets it for the notebooks' kernels; ``kit.notebook.setup`` starts it).
USED_ENV = "KIT_CACHE_USED"
_FOR_LIFE: list = []


class _Appending(set):
    """A set that appends each new name to a file as it is added (one write per name), so what a
    process opened is on disk however it ends (a notebook kernel is stopped without running atexit)."""

    def __init__(self, path):
        super().__init__()
        self.path = os.fspath(path)

    def add(self, name) -> None:
        if name in self:
            return
        super().add(name)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{name}\n".encode())
        finally:
            os.close(fd)


def record_for_life(path: str | os.PathLike | None = None) -> bool:
    """Records the cache entries this process opens from now on, appending each one's name to
    ``path`` (default ``$KIT_CACHE_USED``) the first time it is opened. Returns whether it started
    (False without a path)."""
    path = path or os.environ.get(USED_ENV)
    if not path:
        return False
    block = recording(found=_Appending(path))
    block.__enter__()
    _FOR_LIFE.append(block)  # held: a collected generator would end the recording
    return True


def used_by_others(path: str | os.PathLike) -> set[str]:
    """The names other processes appended to ``path`` (``record_for_life``); empty if none."""
    try:
        return {line.strip() for line in Path(path).read_text().splitlines() if line.strip()}
    except FileNotFoundError:
        return set()


def _line(e: Entry) -> str:
    built = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.created)) if e.created else "?"
    return f"{fmt_bytes(e.bytes):>9}  {e.kind:<22} {e.holds:>14}  built {built}  {e.name}"


def reuse_report(before: list[Entry], after: list[Entry], used, *, limit: int = 12) -> list[str]:
    """What a run reused from the cache and what it built: lines to print.

    Args:
        before: ``scan()`` before the run.
        after: ``scan()`` after it.
        used: names of the entries the run opened (``recording``).
        limit: at most this many entries listed under each heading.

    Returns:
        Under "reused" the kit's entries of ``before`` that the run opened and that are
        unchanged (same build time); under "built" those new since ``before`` or rebuilt
        (the digest database: updated). Each with its size, kind, what it holds, when it
        was built and its name.
    """
    was = {e.name: e for e in before}
    reused, built = [], []
    for e in after:
        if not e.kits or not e.complete:
            continue
        old = was.get(e.name)
        if old is None or not old.kits or old.created != e.created:
            built.append(e)
        elif e.name in used:
            reused.append(e)
    lines = []
    for title, group in (("reused from earlier runs", reused), ("built or updated in this run", built)):
        if not group:
            continue
        lines.append(f"{title}: {len(group)} entries, {fmt_bytes(sum(e.bytes for e in group))}")
        lines += ["  " + _line(e) for e in sorted(group, key=lambda e: -e.bytes)[:limit]]
        if len(group) > limit:
            lines.append(f"  ... and {len(group) - limit} more (python -m kit cache lists them all)")
    return lines or ["nothing reused from the kit cache or built in it"]


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
    width = max([len(e.name) for e in entries] + [4])
    lines = [f"{'size':>9}  {'age':>6}  {'name':<{width}}  {'kind':<22} what built it"]
    for e in entries:
        by = e.built_by if e.kits else "left alone: no kit manifest or marker"
        if e.holds:
            by += f" ({e.holds})"
        lines.append(f"{fmt_bytes(e.bytes):>9}  {fmt_age(e.age_s):>6}  {e.name:<{width}}  {e.kind:<22} {by}")
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
    held: list[Entry] = []
    gone = clean(r, older_than=args.older_than, max_bytes=args.max_size, dry_run=args.dry_run, skipped=held)
    verb = "would remove" if args.dry_run else "removed"
    for e in gone:
        print(f"{verb} {fmt_bytes(e.bytes):>9}  {e.kind:<24} {e.path}")
    freed = sum(e.bytes for e in gone)
    print(f"{verb} {len(gone)} entries, {fmt_bytes(freed)}; {summary(r)}" if not args.dry_run else
          f"{verb} {len(gone)} entries, {fmt_bytes(freed)}")
    if held:
        print(f"left alone (another process held it for {BUSY_WAIT_S:g} s; run again later): "
              f"{', '.join(e.name for e in held)}")
    foreign = [e for e in scan(r) if not e.kits]
    if foreign:
        print(f"left alone (not the kit's): {', '.join(e.name for e in foreign)}")
    return 0
