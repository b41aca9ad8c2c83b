"""A store's folder: who may write there (``claim``: only a folder the kit made, or an empty one;
``store_lock``: one builder at a time), names kept inside it (``inside``), atomic writes, free space."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kit.util import process_alive

#: The manifest, written last: a folder without it is never read as complete.
MANIFEST = "manifest.json"
#: The records of the shards an unfinished build has written, for a resume.
PARTIAL = ".partial"
#: The marker of a folder the kit made for a store (its kind): only such a folder (or an
#: empty one) is ever written into.
STORE_MARKER = ".kit-store"
#: The lock file of a store folder (``fcntl.flock``): builders hold it exclusively, readers
#: checking a store at open hold it shared.
LOCK = ".kit-lock"
#: How long a builder or reader waits for another process building the same folder.
LOCK_TIMEOUT_S = 3600.0

#: A temporary file of ``atomic_path``: ``NAME.tmp-PID-TID``.
_TEMP = re.compile(r"\.tmp-(\d+)-(\d+)$")


class StoreError(RuntimeError):
    """A derived store is missing, incomplete, stale or corrupt."""


def default_workdir() -> Path:
    """Where derived data goes when no ``workdir`` is given: ``$KIT_CACHE`` or ``~/.cache/kit``."""
    env = os.environ.get("KIT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "kit"


def inside(folder: str | os.PathLike, name: str, *, what: str = "store") -> Path:
    """``folder / name``, checked to stay inside ``folder`` (a name read from a file is untrusted):
    ``StoreError`` where it is absolute, climbs out with ``..`` or resolves outside through a link."""
    folder = Path(folder)
    rel = Path(name)
    if not name or rel.is_absolute() or ".." in rel.parts or "\0" in name:
        raise StoreError(f"{what}: file name {name!r} leaves the store folder {folder}; refused")
    path = folder / rel
    root = os.path.realpath(folder)
    if os.path.commonpath([root, os.path.realpath(path)]) != root:
        raise StoreError(f"{what}: file name {name!r} resolves outside the store folder {folder}; refused")
    return path


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
    """Writes ``obj`` as JSON (indent 1, sorted keys) at ``path``, whole or not at all."""
    with atomic_path(path) as tmp:
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())


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
    """Makes ``folder`` a store folder of ``kind``: creates it (and its marker) or checks it;
    ``StoreError`` where it exists and is neither empty nor a kit store of ``kind``."""
    folder = Path(folder)
    if os.path.lexists(folder) and not folder.is_dir():
        raise StoreError(f"{folder} exists and is not a folder; refusing to write a store there")
    if folder.is_dir():
        # Listed first, then the kind read: a marker another claim placed meanwhile is listed
        # whole (written atomically below), so it is read back; its temporary file is not foreign.
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
        with atomic_path(folder / STORE_MARKER) as tmp:  # whole: a concurrent claim never reads it empty
            tmp.write_text(kind + "\n")
        _check_kind(folder, store_kind(folder), kind)  # a concurrent claim's marker may have won
    return folder


def _check_kind(folder: Path, found: str | None, kind: str) -> None:
    if found is not None and found != kind:
        raise StoreError(f"{folder} holds a kit store of kind {found!r}, not {kind!r}; "
                         "refusing to write into it (choose another folder)")


def _is_marker_temp(name: str) -> bool:
    return name.startswith(STORE_MARKER + ".tmp-") and _TEMP.search(name) is not None


def check_apart(folder: str | os.PathLike, sources: Sequence[str | os.PathLike]) -> None:
    """Refuses (``StoreError``) a store folder that is, contains or sits inside a folder holding a source
    file."""
    root = os.path.realpath(folder)
    for d in sorted({os.path.realpath(d) for d in {os.path.dirname(os.path.abspath(p)) for p in sources}}):
        common = os.path.commonpath([root, d])
        if common in (root, d):
            how = ("is" if root == d else "contains" if common == root else "sits inside")
            raise StoreError(f"{folder} {how} the folder {d} that holds the index's source files; "
                             "a store must be kept apart from its sources (choose another folder)")


@contextmanager
def store_lock(folder: str | os.PathLike, *, shared: bool = False, timeout: float | None = None):
    """Holds ``folder``'s lock (exclusive, or shared) for the block; waits at most ``timeout`` s, then
    raises ``StoreError``."""
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


def remove_dead_temp_files(folder: str | os.PathLike) -> list[Path]:
    """Removes ``*.tmp-PID-TID`` files under ``folder`` whose process is gone (killed builds);
    returns their paths."""
    removed = []
    for p in Path(folder).rglob("*.tmp-*-*"):
        m = _TEMP.search(p.name)
        if m and p.is_file() and not p.is_symlink() and not process_alive(int(m.group(1))):
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def free_bytes(path: str | os.PathLike) -> int:
    """Bytes free to this user on the file system that holds ``path`` (or its nearest
    existing parent)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return shutil.disk_usage(p).free


def check_free_space(path: str | os.PathLike, needed: int, *, what: str = "this") -> None:
    """Refuses (``StoreError``), before anything is written, when ``path``'s file system has less than
    ``needed`` bytes free."""
    free = free_bytes(path)
    if needed > free:
        raise StoreError(f"{what} needs {needed / 1e9:.1f} GB free under {path}, "
                         f"which has {free / 1e9:.1f} GB; free some space or choose another --workdir")
