"""Content keys: fingerprints of a store's options and of its source files (size, mtime and a content
digest each, read once per change of the file and remembered in ``<workdir>/digests.sqlite3``)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from tqdm.auto import tqdm

from kit.store.folder import default_workdir

#: How ``files_fingerprint`` reads each file's content (``$KIT_DIGEST`` sets the default):
#: ``"sample"`` hashes the head, the tail and a few fixed blocks (so a rewrite keeping size and
#: mtime, as ``cp -p`` does, still changes the key); ``"full"`` hashes every byte.
DIGEST_MODES = ("sample", "full")
#: Sampled digest: files up to 256 KiB are hashed whole; larger ones by their first and
#: last 64 KiB and 8 blocks of 4 KiB at fixed fractions of the size (176 KiB a file).
_EDGE, _BLOCK, _BLOCKS = 64 << 10, 4 << 10, 8


def fingerprint(*parts: Any) -> str:
    """SHA-256 (hex) of JSON-serialisable parts; the same inputs give the same key."""
    blob = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def digest_mode(mode: str | None = None) -> str:
    """``mode``, else ``$KIT_DIGEST``, else ``"sample"``; checked to be one of ``DIGEST_MODES``."""
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
    ``<workdir>/digests.sqlite3``, so each file is read once however often it is indexed (``ctime``:
    ``cp -p`` onto a file keeps its inode, size and mtime, but no user can set ctime)."""

    def __init__(self):
        self._mem: dict[tuple, str] = {}
        self._lock = threading.Lock()

    def _db(self):
        path = default_workdir() / "digests.sqlite3"
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=30)  # a bounded wait on another writer
        db.execute("CREATE TABLE IF NOT EXISTS digest (k TEXT PRIMARY KEY, d TEXT NOT NULL)")
        return db

    def get_many(self, keys: list[tuple]) -> dict[tuple, str]:
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
        with self._lock:
            self._mem.update(items)
        if items:
            try:
                with self._db() as db:
                    db.executemany("INSERT OR REPLACE INTO digest VALUES (?, ?)",
                                   [(json.dumps(k), d) for k, d in items.items()])
            except (sqlite3.Error, OSError):
                pass


#: This process's digest cache (``forget_digests`` empties it).
_DIGESTS = _DigestCache()


def forget_digests() -> None:
    """Forget the digests this process holds in memory: the next ``files_fingerprint`` reads the
    database (or the files) as a new process would."""
    global _DIGESTS
    _DIGESTS = _DigestCache()


def files_fingerprint(paths: Sequence[str | os.PathLike], *, digest: str | None = None,
                      progress: bool = False) -> list:
    """``(name, size, mtime_ns, content digest)`` of each file: what a store's key follows. ``digest``:
    ``"sample"`` or ``"full"`` (``DIGEST_MODES``); ``progress``: a tqdm bar while digests are computed."""
    mode = digest_mode(digest)
    stats = []
    for p in paths:
        st = os.stat(p)
        stats.append((str(p), st, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, mode)))
    known = _DIGESTS.get_many([k for _, _, k in stats])
    todo = [(p, k) for p, _, k in stats if k not in known]
    if todo:
        new = {}
        for p, k in tqdm(todo, desc="digests", unit="file", disable=not progress or len(todo) < 100):
            new[k] = content_digest(p, mode)
        _DIGESTS.put_many(new)
        known.update(new)
    return [(p, st.st_size, st.st_mtime_ns, known[k]) for p, st, k in stats]
