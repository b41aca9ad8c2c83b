"""The derived-data store: content-keyed folders, atomic shard writes, manifest, resume, verify.

Every derived file (TFRecord shards, memmaps, feature caches) goes through ``build``:

* the folder's ``key`` is a fingerprint of the inputs and options (``fingerprint``),
  so a changed input never reuses a stale derivative;
* each shard is written under a temporary name, checksummed, then renamed; a small
  record of it goes to ``.partial/`` so an interrupted build resumes without
  redoing finished shards;
* ``manifest.json`` (counts, shapes, dtype, a SHA-256 per shard) is written last,
  atomically: a folder without it is never read as complete.

``verify`` re-reads a folder and checks it against its manifest.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

MANIFEST = "manifest.json"
PARTIAL = ".partial"
FORMAT_VERSION = 1


class StoreError(RuntimeError):
    """A derived store is missing, incomplete, stale or corrupt."""


def default_workdir() -> Path:
    """Where derived data goes when no ``workdir`` is given: ``$KIT_CACHE`` or ``~/.cache/kit``."""
    env = os.environ.get("KIT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "kit"


def fingerprint(*parts: Any) -> str:
    """SHA-256 (hex) of JSON-serialisable parts; the same inputs give the same key."""
    blob = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def files_fingerprint(paths: Sequence[str | os.PathLike]) -> list:
    """(name, size, mtime_ns) of each file: a cheap stand-in for their content."""
    out = []
    for p in paths:
        st = os.stat(p)
        out.append((str(p), st.st_size, st.st_mtime_ns))
    return out


def free_bytes(path: str | os.PathLike) -> int:
    """Bytes free to this user on the file system that holds ``path`` (or its nearest
    existing parent)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return shutil.disk_usage(p).free


def check_free_space(path: str | os.PathLike, needed: int, *, what: str = "this") -> None:
    """Refuses, before anything is written, when ``path``'s file system has less than
    ``needed`` bytes free.

    Raises:
        StoreError: one line saying what needs how much, and how much is free where.
    """
    free = free_bytes(path)
    if needed > free:
        raise StoreError(f"{what} needs {needed / 1e9:.1f} GB free under {path}, "
                         f"which has {free / 1e9:.1f} GB; free some space or choose another --workdir")


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yields a temporary sibling path; renames it onto ``path`` only if the block succeeds."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_json_atomic(path: str | os.PathLike, obj: Any) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())


@dataclass(frozen=True)
class Shard:
    """One file of a store: its name, and what the writer needs to produce it."""

    name: str
    count: int
    task: Any = None


@dataclass
class Manifest:
    """What a complete store holds. ``meta`` is free-form (shapes, dtype, classes...)."""

    kind: str
    key: str
    count: int
    shards: list[dict]
    meta: dict = field(default_factory=dict)
    version: int = FORMAT_VERSION

    @classmethod
    def load(cls, folder: str | os.PathLike) -> "Manifest":
        """Reads and checks ``folder/manifest.json``. Raises ``StoreError`` naming what is wrong.

        Every shard name must stay inside ``folder`` (no absolute path, no ``..``, no
        link leading out), so neither a reader nor a rebuild touches a file outside it.
        """
        path = Path(folder) / MANIFEST
        try:
            with open(path) as f:
                d = json.load(f)
        except FileNotFoundError:
            raise StoreError(f"{folder}: no {MANIFEST}; the store is missing or incomplete") from None
        except NotADirectoryError:
            raise StoreError(f"{folder}: not a folder") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise StoreError(f"{path}: not valid JSON ({e})") from None
        fields = {"kind": str, "key": str, "count": int, "shards": list}
        if not isinstance(d, dict) or any(not isinstance(d.get(k), t) for k, t in fields.items()):
            raise StoreError(f"{path}: malformed manifest (needs kind, key, count and a list of shards)")
        if not isinstance(d.get("meta", {}), dict) or set(d) - {*fields, "meta", "version"}:
            raise StoreError(f"{path}: malformed manifest (unexpected fields {sorted(set(d) - {*fields, 'meta', 'version'})})")
        for i, sh in enumerate(d["shards"]):
            if not isinstance(sh, dict) or not isinstance(sh.get("name"), str) \
                    or not isinstance(sh.get("count"), int) or not isinstance(sh.get("bytes"), int):
                raise StoreError(f"{path}: malformed manifest (shard {i} needs a name, a count and bytes)")
            inside(folder, sh["name"], what=str(path))
        return cls(**d)

    def path(self, folder, shard: dict) -> Path:
        return inside(folder, shard["name"])


def inside(folder: str | os.PathLike, name: str, *, what: str = "store") -> Path:
    """``folder / name``, checked to stay inside ``folder`` (a name read from a file is untrusted).

    Raises:
        StoreError: ``name`` is absolute, climbs out with ``..``, or resolves (through a
            link) to somewhere outside ``folder``.
    """
    folder = Path(folder)
    rel = Path(name)
    if not name or rel.is_absolute() or ".." in rel.parts or "\0" in name:
        raise StoreError(f"{what}: file name {name!r} leaves the store folder {folder}; refused")
    path = folder / rel
    root = os.path.realpath(folder)
    if os.path.commonpath([root, os.path.realpath(path)]) != root:
        raise StoreError(f"{what}: file name {name!r} resolves outside the store folder {folder}; refused")
    return path


def complete(folder: str | os.PathLike, key: str | None = None) -> Manifest | None:
    """The manifest if ``folder`` holds a complete store (with ``key``, if given), else None.

    Raises:
        StoreError: the folder has a manifest that is malformed or names a file outside
            the folder (such a store is neither used nor rebuilt over).
    """
    if not (Path(folder) / MANIFEST).is_file():
        return None
    m = Manifest.load(folder)
    if key is not None and m.key != key:
        return None
    return m


def build(
    folder: str | os.PathLike,
    *,
    kind: str,
    key: str,
    shards: Sequence[Shard],
    write: Callable[[Shard, Path, Callable[[int], None]], None],
    meta: dict | None = None,
    workers: int = 1,
    progress: bool | str = True,
    sources: Sequence[str | os.PathLike] = (),
) -> Manifest:
    """Builds (or resumes, or reuses) a store in ``folder``.

    Args:
        folder: the store's folder; created if missing.
        kind: what the store holds (``"spectrogram-tfrecord"``, ...), kept in the manifest.
        key: fingerprint of inputs and options. A complete store with this key is
            reused as is; finished shards of an interrupted build with this key are
            kept; anything with another key is discarded and rebuilt.
        shards: the files to write.
        write: ``write(shard, tmp_path, advance)`` writes one shard's file at
            ``tmp_path`` and calls ``advance(n)`` as it goes (for the progress bar).
        meta: stored in the manifest; ``meta["module"]`` names the module whose
            ``register_check`` deep-checks this kind in ``verify``.
        workers: shards written concurrently (threads).
        progress: show a tqdm bar (a string sets its description).
        sources: the files the store is made from; the store's folder may not be,
            contain or sit inside a folder holding one of them.

    Returns:
        The ``Manifest`` of the complete store.

    Raises:
        StoreError: ``folder`` exists and is not an empty folder or a kit store of
            ``kind``, or it overlaps the sources' folders (nothing is written).
    """
    folder = Path(folder)
    if workers < 1:
        raise ValueError(f"workers must be positive, got {workers}")
    names = [s.name for s in shards]
    if len(set(names)) != len(names):
        raise ValueError("shard names must be unique")
    for name in names:
        inside(folder, name)
    check_apart(folder, sources)
    claim(folder, kind)
    done = complete(folder, key)
    if done is not None:
        return done
    partial = folder / PARTIAL
    # A store or partial build for another key is stale: discard it before writing.
    old = complete(folder)
    if old is not None or _partial_key(partial) not in (None, key):
        (folder / MANIFEST).unlink(missing_ok=True)
        shutil.rmtree(partial, ignore_errors=True)
        for s in (old.shards if old else []):
            (folder / s["name"]).unlink(missing_ok=True)
    partial.mkdir(exist_ok=True)
    (partial / "key").write_text(key)

    records: dict[str, dict] = {}
    todo = []
    for s in shards:
        rec = _load_record(partial, s, folder)
        if rec is not None:
            records[s.name] = rec
        else:
            todo.append(s)
    done_before = set(records)

    from kit.progress import tqdm

    total = sum(s.count for s in shards)
    started = time.perf_counter()
    bar = tqdm(total=total, initial=sum(s.count for s in shards if s.name in records),
               desc=progress if isinstance(progress, str) else kind, unit="ex",
               disable=not progress, smoothing=0.1)
    lock = threading.Lock()

    def advance(n: int):
        with lock:
            bar.update(n)

    def one(s: Shard) -> dict:
        final = folder / s.name
        final.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(final) as tmp:
            write(s, tmp, advance)
            rec = {"name": s.name, "count": s.count, "bytes": tmp.stat().st_size,
                   "sha256": sha256_file(tmp)}
        write_json_atomic(partial / f"{_safe(s.name)}.json", rec)
        return rec

    try:
        if workers == 1:
            for s in todo:
                records[s.name] = one(s)
        else:
            with ThreadPoolExecutor(workers) as pool:
                for rec in pool.map(one, todo):
                    records[rec["name"]] = rec
    finally:
        bar.close()
    manifest = Manifest(kind=kind, key=key, count=total,
                        shards=[records[s.name] for s in shards], meta=dict(meta or {}))
    manifest.meta.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    # What the build that completed the store measured: a reused store can still say
    # how long it took to make (``built`` examples written in ``build_seconds``; fewer
    # than ``count`` when an interrupted build was resumed).
    manifest.meta["build_seconds"] = time.perf_counter() - started
    manifest.meta["built"] = total - sum(s.count for s in shards if s.name in done_before)
    write_json_atomic(folder / MANIFEST, manifest.__dict__)
    shutil.rmtree(partial, ignore_errors=True)
    return manifest


#: The marker of a folder the kit made for a store (its kind): only such a folder (or an
#: empty one) is ever written into, and so only its files are ever replaced or removed.
STORE_MARKER = ".kit-store"


def store_kind(folder: str | os.PathLike) -> str | None:
    """The kind of kit store in ``folder`` (from its marker or manifest), or None if it is not one."""
    folder = Path(folder)
    try:
        return (folder / STORE_MARKER).read_text().strip() or None
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        pass
    try:
        with open(folder / MANIFEST) as f:
            kind = json.load(f).get("kind")
    except (OSError, ValueError, AttributeError):
        return None
    return kind if isinstance(kind, str) else None


def claim(folder: str | os.PathLike, kind: str) -> Path:
    """Makes ``folder`` a store folder of ``kind``: creates it (and its marker) or checks it.

    Raises:
        StoreError: ``folder`` exists and is neither empty nor a kit store of ``kind``.
    """
    folder = Path(folder)
    if os.path.lexists(folder) and not folder.is_dir():
        raise StoreError(f"{folder} exists and is not a folder; refusing to write a store there")
    if folder.is_dir():
        found = store_kind(folder)
        if found is None and any(folder.iterdir()):
            raise StoreError(f"{folder} exists and is not a kit store (no {STORE_MARKER} or {MANIFEST}); "
                             "refusing to write into it (choose another folder)")
        if found is not None and found != kind:
            raise StoreError(f"{folder} holds a kit store of kind {found!r}, not {kind!r}; "
                             "refusing to write into it (choose another folder)")
    else:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise StoreError(f"{folder}: a parent of it is not a folder") from None
    if not (folder / STORE_MARKER).exists():
        (folder / STORE_MARKER).write_text(kind + "\n")
    return folder


def check_apart(folder: str | os.PathLike, sources: Sequence[str | os.PathLike]) -> None:
    """Refuses a store folder that is, contains or sits inside a folder holding a source file.

    Raises:
        StoreError: naming the store folder and the source folder it overlaps.
    """
    root = os.path.realpath(folder)
    for d in sorted({os.path.realpath(d) for d in {os.path.dirname(os.path.abspath(p)) for p in sources}}):
        common = os.path.commonpath([root, d])
        if common in (root, d):
            how = ("is" if root == d else "contains" if common == root else "sits inside")
            raise StoreError(f"{folder} {how} the folder {d} that holds the index's source files; "
                             "a store must be kept apart from its sources (choose another folder)")


def _safe(name: str) -> str:
    return name.replace("/", "__")


def _partial_key(partial: Path) -> str | None:
    try:
        return (partial / "key").read_text().strip()
    except FileNotFoundError:
        return None


def _load_record(partial: Path, s: Shard, folder: Path) -> dict | None:
    try:
        with open(partial / f"{_safe(s.name)}.json") as f:
            rec = json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    path = folder / s.name
    if rec.get("count") != s.count or not path.exists() or path.stat().st_size != rec.get("bytes"):
        return None
    return rec


# --------------------------------------------------------------------------- verify

#: kind -> deep check ``check(folder, manifest, shard) -> str | None`` (a problem or None),
#: registered by the modules that write each kind.
DEEP_CHECKS: dict[str, Callable[[Path, Manifest, dict], str | None]] = {}


def register_check(kind: str):
    """Decorator: registers a deep check for stores of ``kind`` (used by ``verify``)."""
    def deco(fn):
        DEEP_CHECKS[kind] = fn
        return fn
    return deco


def verify(folder: str | os.PathLike, *, deep: bool = True) -> list[str]:
    """Re-reads a store and checks it against its manifest.

    Args:
        folder: the store's folder.
        deep: also run the kind's content check (records parse, counts match).

    Returns:
        A list of problems, each naming the file; empty when the store is sound.
    """
    folder = Path(folder)
    try:
        m = Manifest.load(folder)
    except StoreError as e:
        return [str(e)]
    problems = []
    total = 0
    for s in m.shards:
        path = folder / s["name"]
        total += s["count"]
        if not path.exists():
            problems.append(f"{path}: missing")
            continue
        size = path.stat().st_size
        if size != s["bytes"]:
            problems.append(f"{path}: {size} bytes, manifest says {s['bytes']} (truncated or replaced)")
            continue
        if sha256_file(path) != s["sha256"]:
            problems.append(f"{path}: checksum differs from the manifest (corrupt)")
            continue
        if deep and m.kind not in DEEP_CHECKS and m.meta.get("module"):
            importlib.import_module(m.meta["module"])  # registers the kind's check
        if deep and m.kind in DEEP_CHECKS:
            problem = DEEP_CHECKS[m.kind](folder, m, s)
            if problem:
                problems.append(f"{path}: {problem}")
    if total != m.count:
        problems.append(f"{folder / MANIFEST}: shard counts add up to {total}, manifest says {m.count}")
    return problems
