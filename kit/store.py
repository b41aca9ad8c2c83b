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

import errno
import hashlib
import importlib
import json
import math
import os
import re
import shutil
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from kit.util import process_alive

__all__ = [
    'MANIFEST',
    'PARTIAL',
    'FORMAT_VERSION',
    'StoreError',
    'default_workdir',
    'fingerprint',
    'DIGEST_MODES',
    'digest_mode',
    'content_digest',
    'files_fingerprint',
    'free_bytes',
    'check_free_space',
    'sha256_file',
    'atomic_path',
    'write_json_atomic',
    'Shard',
    'Manifest',
    'inside',
    'complete',
    'build',
    'LOCK',
    'LOCK_TIMEOUT_S',
    'store_lock',
    'remove_dead_temp_files',
    'disk_full',
    'open_memmap',
    'load_npy',
    'KERNEL_READ_DEFAULT',
    'kernel_read_bytes',
    'ask_to_read',
    'read_npy_header',
    'CHECKED',
    'ends_digest',
    'check_open',
    'checks_on',
    'STORE_MARKER',
    'store_kind',
    'claim',
    'check_apart',
    'DEEP_CHECKS',
    'register_check',
    'verify',
]

MANIFEST = "manifest.json"
PARTIAL = ".partial"
#: 2: content digests in index keys, ``ends`` digests per shard, the folder marker.
FORMAT_VERSION = 2


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


#: How ``files_fingerprint`` reads each file's content (``$KIT_DIGEST`` sets the default):
#: ``"sample"`` hashes the head, the tail and a few fixed blocks (a rewrite with the
#: same size and mtime, as ``cp -p``, ``rsync -a`` or ``tar x`` leave, changes the key);
#: ``"full"`` hashes every byte, for the paranoid.
DIGEST_MODES = ("sample", "full")
#: Sampled digest: files up to 256 KiB are hashed whole; larger ones by their first and
#: last 64 KiB and 8 blocks of 4 KiB at fixed fractions of the size (176 KiB a file).
_EDGE, _BLOCK, _BLOCKS = 64 << 10, 4 << 10, 8


def digest_mode(mode: str | None = None) -> str:
    mode = mode or os.environ.get("KIT_DIGEST") or "sample"
    if mode not in DIGEST_MODES:
        raise ValueError(f"digest must be one of {DIGEST_MODES}, got {mode!r} (from $KIT_DIGEST?)")
    return mode


def content_digest(path: str | os.PathLike, mode: str = "sample") -> str:
    """BLAKE2b (hex, 16 bytes) of a file's size and content: sampled or full (see ``DIGEST_MODES``)."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        h.update(size.to_bytes(8, "little"))
        if mode == "full" or size <= 4 * _EDGE:
            while block := f.read(1 << 20):
                h.update(block)
            return h.hexdigest()
        offsets = [(0, _EDGE)] + [(size * k // (_BLOCKS + 1), _BLOCK) for k in range(1, _BLOCKS + 1)]
        for off, n in offsets + [(size - _EDGE, _EDGE)]:
            f.seek(off)
            h.update(f.read(n))
    return h.hexdigest()


class _DigestCache:
    """Digests by ``(device, inode, size, mtime_ns, ctime_ns, mode)``, in memory and in
    ``<workdir>/digests.sqlite3``, so each file is read once however often it is indexed.

    ``ctime`` joins the issue's ``(inode, size, mtime_ns)``: ``cp -p`` onto an existing
    file rewrites the same inode and restores size and mtime, but no user can set ctime.
    """

    def __init__(self):
        self._mem: dict[tuple, str] = {}
        self._lock = threading.Lock()

    def _db(self):
        import sqlite3

        path = default_workdir() / "digests.sqlite3"
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=30)  # a bounded wait on another writer
        db.execute("CREATE TABLE IF NOT EXISTS digest (k TEXT PRIMARY KEY, d TEXT NOT NULL)")
        return db

    def get_many(self, keys: list[tuple]) -> dict[tuple, str]:
        import sqlite3

        with self._lock:
            found = {k: self._mem[k] for k in keys if k in self._mem}
        missing = [k for k in keys if k not in found]
        if missing:
            try:
                with self._db() as db:
                    for i in range(0, len(missing), 500):
                        part = {json.dumps(k): k for k in missing[i:i + 500]}
                        q = f"SELECT k, d FROM digest WHERE k IN ({','.join('?' * len(part))})"
                        for k, d in db.execute(q, list(part)):
                            found[part[k]] = d
            except (sqlite3.Error, OSError):
                pass  # no usable cache on disk: digests are recomputed
        return found

    def put_many(self, items: dict[tuple, str]) -> None:
        import sqlite3

        with self._lock:
            self._mem.update(items)
        if items:
            try:
                with self._db() as db:
                    db.executemany("INSERT OR REPLACE INTO digest VALUES (?, ?)",
                                   [(json.dumps(k), d) for k, d in items.items()])
            except (sqlite3.Error, OSError):
                pass


_DIGESTS = _DigestCache()


def files_fingerprint(paths: Sequence[str | os.PathLike], *, digest: str | None = None,
                      progress: bool = False) -> list:
    """``(name, size, mtime_ns, content digest)`` of each file: what a store's key follows.

    Args:
        paths: the files.
        digest: ``"sample"`` (default, or ``$KIT_DIGEST``) or ``"full"``; see ``DIGEST_MODES``.
        progress: show a tqdm bar while digests are computed.
    """
    mode = digest_mode(digest)
    stats = []
    for p in paths:
        st = os.stat(p)
        stats.append((str(p), st, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, mode)))
    known = _DIGESTS.get_many([k for _, _, k in stats])
    todo = [(p, k) for p, _, k in stats if k not in known]
    if todo:
        from tqdm.auto import tqdm

        new = {}
        for p, k in tqdm(todo, desc="digests", unit="file", disable=not progress or len(todo) < 100):
            new[k] = content_digest(p, mode)
        _DIGESTS.put_many(new)
        known.update(new)
    return [(p, st.st_size, st.st_mtime_ns, known[k]) for p, st, k in stats]


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


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20, progress=None) -> str:
    """SHA-256 (hex) of a file, streamed; ``progress(n)`` is called with each chunk's size."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
            if progress is not None:
                progress(len(block))
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
    expected_bytes: int | None = None,
    check: bool | None = None,
    lock_timeout: float | None = None,
) -> Manifest:
    """Builds (or resumes, or reuses) a store in ``folder``.

    Args:
        folder: the store's folder; created if missing.
        kind: what the store holds (``"spectrogram-tfrecord"``, ...), kept in the manifest.
        key: fingerprint of inputs and options. A complete store with this key is
            reused (after ``check_open``); finished shards of an interrupted build with
            this key are kept; anything with another key is discarded and rebuilt.
        shards: the files to write.
        write: ``write(shard, tmp_path, advance)`` writes one shard's file at
            ``tmp_path`` and calls ``advance(n)`` as it goes (for the progress bar).
        meta: stored in the manifest; ``meta["module"]`` names the module whose
            ``register_check`` deep-checks this kind in ``verify``.
        workers: shards written concurrently (threads).
        progress: show a tqdm bar (a string sets its description).
        sources: the files the store is made from; the store's folder may not be,
            contain or sit inside a folder holding one of them.
        expected_bytes: about how large the whole store will be; checked against the
            free space before anything is written.
        check: when reusing a complete store, also compare every shard with its
            SHA-256 in the manifest (once per change of the file; see ``check_open``).
            None: ``$KIT_CHECK_STORES`` (``0`` turns it off), else on.
        lock_timeout: seconds to wait for another process building the same folder
            (default ``LOCK_TIMEOUT_S``).

    Returns:
        The ``Manifest`` of the complete store.

    Raises:
        StoreError: ``folder`` exists and is not an empty folder or a kit store of
            ``kind``, or it overlaps the sources' folders (nothing is written); the disk
            lacks the space; the disk filled up while writing (the partial file is
            removed, finished shards are kept for a resume); another builder held the
            folder past ``lock_timeout``; a reused store does not match its manifest.
    """
    folder = Path(folder)
    if workers < 1:
        raise ValueError(f"workers must be positive, got {workers}")
    names = [s.name for s in shards]
    if len(set(names)) != len(names):
        raise ValueError("shard names must be unique")
    for name in names:
        inside(folder, name)
    check = _check_default(check)
    check_apart(folder, sources)
    claim(folder, kind)
    with store_lock(folder, shared=True, timeout=lock_timeout):
        done = complete(folder, key)
        if done is not None:
            check_open(folder, done, full=check, progress=progress)
            return done
    with store_lock(folder, timeout=lock_timeout):
        done = complete(folder, key)  # another builder may have finished it meanwhile
        if done is not None:
            check_open(folder, done, full=check, progress=progress)
            return done
        return _build_locked(folder, kind, key, shards, write, meta, workers, progress, expected_bytes)


def _build_locked(folder: Path, kind, key, shards, write, meta, workers, progress, expected_bytes):
    remove_dead_temp_files(folder)
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
    if expected_bytes:
        check_free_space(folder, expected_bytes - sum(r["bytes"] for r in records.values()),
                         what=f"the store {folder.name}")

    from kit.progress import tqdm

    total = sum(s.count for s in shards)
    started = time.perf_counter()
    bar = tqdm(total=total, initial=sum(s.count for s in shards if s.name in records),
               desc=progress if isinstance(progress, str) else kind, unit="ex",
               disable=not progress, smoothing=0.1)
    lock = threading.Lock()
    checked: dict[str, list] = {}

    def advance(n: int):
        with lock:
            bar.update(n)

    def one(s: Shard) -> dict:
        final = folder / s.name
        final.parent.mkdir(parents=True, exist_ok=True)
        try:
            with atomic_path(final) as tmp:
                write(s, tmp, advance)
                rec = {"name": s.name, "count": s.count, "bytes": tmp.stat().st_size,
                       "sha256": sha256_file(tmp), "ends": ends_digest(tmp)}
        except Exception as e:
            if disk_full(e):
                raise StoreError(f"{final}: disk full while writing it ({_free(folder)} free); the partial "
                                 "file was removed, finished shards are kept: free space and run again "
                                 "to resume") from None
            raise
        write_json_atomic(partial / f"{_safe(s.name)}.json", rec)
        with lock:
            checked[s.name] = _stat_key(final) + [rec["sha256"]]
        return rec

    try:
        if workers == 1:
            for s in todo:
                records[s.name] = one(s)
        else:
            with ThreadPoolExecutor(workers) as pool:
                futures = [pool.submit(one, s) for s in todo]
                try:
                    for f in futures:
                        rec = f.result()
                        records[rec["name"]] = rec
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
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
    try:
        write_json_atomic(folder / MANIFEST, manifest.__dict__)
    except OSError as e:
        if disk_full(e):
            raise StoreError(f"{folder / MANIFEST}: disk full while writing it; free space and run again "
                             "(the shards are kept)") from None
        raise
    shutil.rmtree(partial, ignore_errors=True)
    # The shards just written match their checksums: the first open need not re-read them.
    _save_checked(folder, checked)
    return manifest


# --------------------------------------------------------------------------- lock, space, temp files

#: The lock file of a store folder: builders hold it exclusively, readers checking a
#: store at open hold it shared (``fcntl.flock``; released when the process dies).
LOCK = ".kit-lock"
#: How long a builder or reader waits for another process building the same folder:
#: an hour covers converting the seed's million frames on a slow disk; past it the
#: wait ends with an error naming the holder.
LOCK_TIMEOUT_S = 3600.0


@contextmanager
def store_lock(folder: str | os.PathLike, *, shared: bool = False, timeout: float | None = None):
    """Holds ``folder``'s lock (exclusive, or shared) for the block; waits at most ``timeout`` s.

    Raises:
        StoreError: the lock stayed held by another process for ``timeout`` seconds.
    """
    import fcntl

    timeout = LOCK_TIMEOUT_S if timeout is None else float(timeout)
    if timeout < 0:
        raise ValueError(f"lock timeout must be non-negative, got {timeout}")
    path = Path(folder) / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = _lock_holder(path)
                if time.monotonic() >= deadline:
                    raise StoreError(f"{folder}: another process{holder} is building this store and held "
                                     f"it for more than {timeout:g} s; let it finish (or stop it) and run "
                                     "again") from None
                if not told:
                    print(f"kit: waiting for another process{holder} building {folder} "
                          f"(at most {timeout:g} s)", file=sys.stderr, flush=True)
                    told = True
                time.sleep(0.05)
        if not shared:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _lock_holder(path: Path) -> str:
    try:
        pid = path.read_text().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


_TEMP = re.compile(r"\.tmp-(\d+)-(\d+)$")


def remove_dead_temp_files(folder: str | os.PathLike) -> list[Path]:
    """Removes ``*.tmp-PID-TID`` files under ``folder`` whose process is gone (killed builds).

    Returns:
        The removed paths. Files of live processes (another build) are left alone.
    """
    removed = []
    for p in Path(folder).rglob("*.tmp-*-*"):
        m = _TEMP.search(p.name)
        if m and p.is_file() and not p.is_symlink() and not process_alive(int(m.group(1))):
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def _size(n: float) -> str:
    return f"{n / 1e9:,.2f} GB" if n >= 1e9 else f"{n / 1e6:,.1f} MB"


def _free(folder: Path) -> str:
    try:
        return _size(shutil.disk_usage(folder).free)
    except OSError:
        return "unknown"


def disk_full(e: BaseException) -> bool:
    """Whether an error (OSError, or TensorFlow's wrapping of one) means the disk is full."""
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "No space left on device" in str(e) or "Disk quota exceeded" in str(e)


def open_memmap(path: str | os.PathLike, *, dtype, shape):
    """``np.lib.format.open_memmap(path, "w+")`` with the file's blocks reserved up front.

    A plain open_memmap makes a sparse file: on a full disk, writing into the mapping
    kills the process with SIGBUS and no message. Reserving the blocks first turns that
    into an ``OSError`` (ENOSPC) here, which ``build`` reports in one line.
    """
    import numpy as np

    mm = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    with open(path, "r+b") as f:
        try:
            os.posix_fallocate(f.fileno(), 0, os.fstat(f.fileno()).st_size)
        except OSError as e:
            if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                del mm
                raise
    return mm


#: One lock for every ``.npy`` header the kit parses (see ``load_npy``).
_NPY_HEADER_LOCK = threading.Lock()


#: What one ``POSIX_FADV_WILLNEED`` is sure to read where the device's limits are unknown:
#: Linux's default readahead window.
KERNEL_READ_DEFAULT = 128 << 10


def kernel_read_bytes(path: str | os.PathLike) -> int:
    """The most one ``posix_fadvise(..., POSIX_FADV_WILLNEED)`` on ``path`` reads: Linux
    caps each at the larger of the device's readahead window and its largest request
    (``read_ahead_kb``, ``max_sectors_kb`` in ``/sys/dev/block/MAJOR:MINOR/queue``, or its
    disk's for a partition) and reads nothing past that. ``KERNEL_READ_DEFAULT`` where they
    cannot be read (not Linux, a file system on no block device)."""
    try:
        dev = os.stat(path).st_dev
        base = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    except (OSError, AttributeError):
        return KERNEL_READ_DEFAULT
    for queue in (f"{base}/queue", f"{base}/../queue"):
        try:
            kb = [int(Path(queue, name).read_text()) for name in ("read_ahead_kb", "max_sectors_kb")]
        except (OSError, ValueError):
            continue
        return max(max(kb) << 10, KERNEL_READ_DEFAULT)
    return KERNEL_READ_DEFAULT


def ask_to_read(fd: int, offset: int, length: int, piece: int) -> int:
    """Asks the kernel to read ``length`` bytes of ``fd`` from ``offset`` into the page
    cache, in the background (``POSIX_FADV_WILLNEED``, one call per ``piece`` bytes:
    ``kernel_read_bytes``, as Linux reads no more than that for one call). Returns the
    calls made; 0 where ``posix_fadvise`` does not exist. A hint: what is not read in
    time is read when it is used, as without it."""
    if not hasattr(os, "posix_fadvise"):
        return 0
    calls = 0
    for start in range(offset, offset + length, piece):
        os.posix_fadvise(fd, start, min(piece, offset + length - start), os.POSIX_FADV_WILLNEED)
        calls += 1
    return calls


def read_npy_header(f) -> tuple:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` file open in ``f``, parsed under
    ``load_npy``'s lock; ``f`` is left at the first byte of the array's data."""
    import numpy as np

    fmt = np.lib.format
    with _NPY_HEADER_LOCK:
        version = fmt.read_magic(f)
        read_header = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        return read_header(f)


def load_npy(path: str | os.PathLike, *, mmap: bool = True):
    """``np.load(path, allow_pickle=False)``, safe to call from several threads at once.

    NumPy parses a ``.npy`` header with ``ast.literal_eval``. On CPython 3.11 two threads
    building ASTs at the same time can fail with ``SystemError: AST constructor recursion
    depth mismatch`` (python/cpython#106905); the kit's store writers and checks run in a
    thread pool, and CI met it there. The header is parsed, and the file mapped, under one
    process-wide lock (microseconds); the data is read outside it.

    Args:
        mmap: memory-map the array read-only (the default); False reads it all into memory.

    Raises:
        FileNotFoundError, ValueError: as ``np.load`` (ValueError for a file that is not a
            ``.npy`` array or that holds Python objects).
    """
    import numpy as np

    if mmap:
        with _NPY_HEADER_LOCK:
            return np.load(path, mmap_mode="r", allow_pickle=False)
    # Read as np.load reads (read() calls, which /proc/self/io counts), the header under the lock.
    with open(path, "rb") as f:
        shape, fortran_order, dtype = read_npy_header(f)
        if dtype.hasobject:
            raise ValueError(f"{path}: Object arrays cannot be loaded when allow_pickle=False")
        count = math.prod(shape)
        arr = np.fromfile(f, dtype=dtype, count=count)
        if arr.size != count:
            raise ValueError(f"{path}: truncated: {arr.size:,} of {count:,} values present")
    return arr.reshape(shape[::-1]).T if fortran_order else arr.reshape(shape)


# --------------------------------------------------------------------------- checks at open

#: The head and tail of each shard, hashed in the manifest (``ends``): a cheap check at
#: every open that the shards are the ones the manifest describes.
_ENDS = 64 << 10
#: Per-store record of shards whose SHA-256 matched, by (inode, size, mtime_ns, ctime_ns).
CHECKED = ".kit-checked.json"


def ends_digest(path: str | os.PathLike) -> str:
    """BLAKE2b (hex) of a file's size, first and last 64 KiB."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        h.update(size.to_bytes(8, "little"))
        h.update(f.read(_ENDS))
        if size > _ENDS:
            f.seek(max(_ENDS, size - _ENDS))
            h.update(f.read(_ENDS))
    return h.hexdigest()


def _stat_key(path: Path) -> list:
    st = os.stat(path)
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def checks_on(check: bool | None = None) -> bool:
    """Whether a store is checked in full at open (``check_open``): ``check`` when given,
    else on unless ``$KIT_CHECK_STORES`` is ``0``."""
    return _check_default(check)


def _check_default(check: bool | None) -> bool:
    if check is not None:
        return bool(check)
    return os.environ.get("KIT_CHECK_STORES", "1").strip().lower() not in ("0", "false", "no", "off")


def _load_checked(folder: Path) -> dict:
    try:
        with open(folder / CHECKED) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return {}
    return d if isinstance(d, dict) else {}


def _save_checked(folder: Path, new: dict) -> None:
    if not new:
        return
    d = _load_checked(folder)
    d.update(new)
    try:
        write_json_atomic(folder / CHECKED, d)
    except OSError:
        pass  # a read-only store is still checked, just again next time


def check_open(folder: str | os.PathLike, manifest: Manifest, *, full: bool | None = None,
               progress: bool | str = True) -> None:
    """Checks a complete store against its manifest before it is read.

    Every shard must exist with the manifest's size and head/tail digest (``ends``):
    a manifest from one build over shards of another is refused. With ``full`` (the
    default, unless ``$KIT_CHECK_STORES=0``), each shard's SHA-256 is compared too,
    streamed with a progress bar, once per change of the file: a match is remembered
    in ``.kit-checked.json`` by (inode, size, mtime_ns, ctime_ns).

    Raises:
        StoreError: naming the shard that is missing, resized, replaced or corrupt.
    """
    folder = Path(folder)
    full = _check_default(full)
    fix = f"run `python -m kit verify {folder}`; remove the folder to rebuild it"
    todo = []
    for s in manifest.shards:
        path = manifest.path(folder, s)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise StoreError(f"{path}: missing, but the manifest lists it; {fix}") from None
        if size != s["bytes"]:
            raise StoreError(f"{path}: {size} bytes where the manifest says {s['bytes']} (truncated or "
                             f"replaced); {fix}")
        if s.get("ends") is not None and ends_digest(path) != s["ends"]:
            raise StoreError(f"{path}: its head or tail differs from the manifest (a shard of another "
                             f"build, or corrupt); {fix}")
        if full and s.get("sha256"):
            todo.append((path, s))
    if not todo:
        return
    seen = _load_checked(folder)
    todo = [(p, s) for p, s in todo if seen.get(s["name"]) != _stat_key(p) + [s["sha256"]]]
    if not todo:
        return
    from tqdm.auto import tqdm

    ok = {}
    with tqdm(total=sum(s["bytes"] for _, s in todo), unit="B", unit_scale=True, desc="checking store",
              disable=not progress) as bar:
        for path, s in todo:
            key = _stat_key(path)
            if sha256_file(path, progress=bar.update) != s["sha256"]:
                raise StoreError(f"{path}: checksum differs from the manifest (corrupt); {fix}")
            ok[s["name"]] = key + [s["sha256"]]
    _save_checked(folder, ok)


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
        # Listed first, then the kind read: a marker another claim placed meanwhile is listed
        # whole (``_write_marker``), so it is read back; its temporary file is not foreign.
        occupied = any(not _is_marker_temp(p.name) for p in folder.iterdir())
        found = store_kind(folder)
        if found is None and occupied:
            raise StoreError(f"{folder} exists and is not a kit store (no {STORE_MARKER} or {MANIFEST}); "
                             "refusing to write into it (choose another folder)")
        _check_kind(folder, found, kind)
    else:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise StoreError(f"{folder}: a parent of it is not a folder") from None
    if not (folder / STORE_MARKER).exists():
        _write_marker(folder, kind)
        _check_kind(folder, store_kind(folder), kind)  # a concurrent claim's marker may have won
    return folder


def _check_kind(folder: Path, found: str | None, kind: str) -> None:
    if found is not None and found != kind:
        raise StoreError(f"{folder} holds a kit store of kind {found!r}, not {kind!r}; "
                         "refusing to write into it (choose another folder)")


def _is_marker_temp(name: str) -> bool:
    return name.startswith(STORE_MARKER + ".tmp-") and _TEMP.search(name) is not None


def _write_marker(folder: Path, kind: str) -> None:
    """Writes ``folder``'s marker whole, in one step (``atomic_path``): a process claiming the
    same folder at the same moment never reads it empty (it once took such a folder for a
    foreign one and refused it). Two claims of one kind write the same marker (the kit's store
    folders are named by case and format, so two kinds do not claim one folder at once)."""
    with atomic_path(folder / STORE_MARKER) as tmp:
        tmp.write_text(kind + "\n")


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
    if rec.get("ends") is not None and ends_digest(path) != rec["ends"]:
        return None  # replaced since it was recorded
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
