"""Trimming the kit cache (``clean``, ``python -m kit cache --clean``): the kit's entries beyond a
budget (an age, a size) removed, oldest first, each checked again just before. What another process
holds (a store's build lock, the digest database) is left alone after ``BUSY_WAIT_S``, and so is an
incomplete entry changed within ``BUSY_S`` (a build running now).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import time
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import quote

from kit import samples
from kit.cache.entries import BUSY_S, BUSY_WAIT_S, DIGESTS, Entry, classify, digest_files, digest_rows, root, scan
from kit.store.folder import LOCK


def to_remove(entries: list[Entry], *, older_than: float | None = None,
              max_bytes: int | None = None) -> list[Entry]:
    """The kit's entries to remove: older than ``older_than`` seconds, then the oldest
    until the kit's entries fit in ``max_bytes``."""
    if older_than is None and max_bytes is None:
        raise ValueError("say how much to keep: an age (--older-than 7d) or a size (--max-size 2GB)")
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
    fds = []
    try:
        for lock in [path / LOCK, *path.glob(f"*/{LOCK}")]:
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
    try:
        db = sqlite3.connect(f"file:{quote(str(path.absolute()))}?mode=rw", uri=True, timeout=BUSY_WAIT_S,
                             isolation_level=None)
    except sqlite3.Error:
        yield False
        return
    with closing(db):
        try:
            db.execute("BEGIN EXCLUSIVE")  # waits for other connections' transactions, then excludes them
            ours = digest_rows(db) is not None
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
    group = r / samples.CACHE_FOLDER
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
                    for p in [e.path, *digest_files(e.path)]:  # under the lock: no writer is midway
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
