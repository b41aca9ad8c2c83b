"""``build``: a store's shards written atomically under its lock, an interrupted build resumed (each
finished shard's record kept in ``.partial/``), the manifest last."""

from __future__ import annotations

import errno
import json
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.progress import tqdm
from kit.store.checks import check_open, checks_on, ends_digest, remember_checked, sha256_file, stat_key
from kit.store.folder import (
    MANIFEST,
    PARTIAL,
    StoreError,
    atomic_path,
    check_apart,
    check_free_space,
    claim,
    inside,
    remove_dead_temp_files,
    store_lock,
    write_json_atomic,
)
from kit.store.manifest import Manifest, ShardRecord, complete


@dataclass(frozen=True)
class Shard:
    """One file of a store to build: its name, and what the writer needs to produce it."""

    name: str
    count: int
    task: Any = None


def build(
    folder: str | Path,
    *,
    kind: str,
    key: str,
    shards: Sequence[Shard],
    write: Callable[[Shard, Path, Callable[[int], None]], None],
    meta: dict | None = None,
    workers: int = 1,
    progress: bool | str = True,
    sources: Sequence[str | Path] = (),
    expected_bytes: int | None = None,
    check: bool | None = None,
    lock_timeout: float | None = None,
) -> Manifest:
    """Builds (or resumes, or reuses) a store in ``folder`` (created if missing); returns its ``Manifest``.

    Args:
        kind: what the store holds (``"spectrogram-tfrecord"``, ...), kept in the manifest.
        key: fingerprint of inputs and options. A complete store with this key is reused (after
            ``check_open``), finished shards of an interrupted build with it are kept; anything
            with another key is discarded and rebuilt.
        shards: the files to write.
        write: ``write(shard, tmp_path, advance)`` writes one shard's file at ``tmp_path``,
            calling ``advance(n)`` as it goes (the progress bar).
        meta: stored in the manifest; ``meta["module"]`` names the module whose
            ``register_check`` deep-checks this kind in ``verify``.
        workers: shards written concurrently (threads).
        progress: show a tqdm bar (a string sets its description).
        sources: the files the store is made from; the folder may not be, contain or sit
            inside a folder holding one of them.
        expected_bytes: about how large the store will be; checked against the free space first.
        check: when reusing a complete store, also compare every shard's SHA-256 (see
            ``check_open``); None: on unless ``$KIT_CHECK_STORES=0``.
        lock_timeout: seconds to wait for another process building the same folder
            (default ``LOCK_TIMEOUT_S``).

    Raises:
        StoreError: ``folder`` is neither empty nor a kit store of ``kind``, or overlaps the
            sources' folders; the disk lacks the space or filled up (finished shards are kept
            for a resume); another builder held the folder past ``lock_timeout``; a reused
            store does not match its manifest.
    """
    folder = Path(folder)
    if workers < 1:
        raise ValueError(f"workers must be positive, got {workers}")
    names = [s.name for s in shards]
    if len(set(names)) != len(names):
        raise ValueError("shard names must be unique")
    for name in names:
        inside(folder, name)
    check = checks_on(check)
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


def _build_locked(folder: Path, kind, key, shards, write, meta, workers, progress, expected_bytes) -> Manifest:
    """``build`` once it holds the lock and found no complete store with ``key``."""
    remove_dead_temp_files(folder)
    partial = folder / PARTIAL
    _discard_stale(folder, partial, key)
    partial.mkdir(exist_ok=True)
    (partial / "key").write_text(key)

    records: dict[str, ShardRecord] = {}
    todo = []
    for s in shards:
        rec = _load_record(partial, s, folder)
        if rec is not None:
            records[s.name] = rec
        else:
            todo.append(s)
    done_before = set(records)
    if expected_bytes:
        check_free_space(folder, expected_bytes - sum(r.bytes for r in records.values()),
                         what=f"the store {folder.name}")

    total = sum(s.count for s in shards)
    started = time.perf_counter()
    checked = _write_shards(folder, partial, todo, write, records, workers,
                            desc=progress if isinstance(progress, str) else kind, progress=progress,
                            total=total, initial=sum(s.count for s in shards if s.name in records))
    manifest = Manifest(kind=kind, key=key, count=total, shards=[records[s.name] for s in shards],
                        meta=dict(meta or {}))
    manifest.meta.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    # ``built`` examples written in ``build_seconds`` (fewer than ``count`` after a resume).
    manifest.meta["build_seconds"] = time.perf_counter() - started
    manifest.meta["built"] = total - sum(s.count for s in shards if s.name in done_before)
    try:
        manifest.save(folder)
    except OSError as e:
        if disk_full(e):
            raise StoreError(f"{folder / MANIFEST}: disk full while writing it; free space and run again "
                             "(the shards are kept)") from None
        raise
    shutil.rmtree(partial, ignore_errors=True)
    # The shards just written match their checksums: the first open need not re-read them.
    remember_checked(folder, checked)
    return manifest


def _discard_stale(folder: Path, partial: Path, key: str) -> None:
    """Removes a store or partial build for another key than ``key``: it is stale."""
    old = complete(folder)
    try:
        partial_key = (partial / "key").read_text().strip()
    except FileNotFoundError:
        partial_key = None
    if old is not None or partial_key not in (None, key):
        (folder / MANIFEST).unlink(missing_ok=True)
        shutil.rmtree(partial, ignore_errors=True)
        for s in (old.shards if old else []):
            (folder / s.name).unlink(missing_ok=True)


def _write_shards(folder: Path, partial: Path, todo: list[Shard], write, records: dict[str, ShardRecord],
                  workers: int, *, desc: str, progress, total: int, initial: int) -> dict[str, list]:
    """Writes each shard of ``todo`` (``workers`` at a time), adding its record to ``records``
    and to ``partial``. Returns ``{name: stat_key + [sha256]}`` of the shards written."""
    bar = tqdm(total=total, initial=initial, desc=desc, unit="ex", disable=not progress, smoothing=0.1)
    lock = threading.Lock()
    checked: dict[str, list] = {}

    def advance(n: int):
        with lock:
            bar.update(n)

    def one(s: Shard) -> ShardRecord:
        final = folder / s.name
        final.parent.mkdir(parents=True, exist_ok=True)
        try:
            with atomic_path(final) as tmp:
                write(s, tmp, advance)
                rec = ShardRecord(name=s.name, count=s.count, bytes=tmp.stat().st_size,
                                  sha256=sha256_file(tmp), ends=ends_digest(tmp))
        except Exception as e:
            if disk_full(e):
                raise StoreError(f"{final}: disk full while writing it ({_free(folder)} free); the partial "
                                 "file was removed, finished shards are kept: free space and run again "
                                 "to resume") from None
            raise
        write_json_atomic(partial / f"{_safe(s.name)}.json", rec.to_dict())
        with lock:
            checked[s.name] = stat_key(final) + [rec.sha256]
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
                        records[rec.name] = rec
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
    finally:
        bar.close()
    return checked


def _safe(name: str) -> str:
    return name.replace("/", "__")


def _load_record(partial: Path, s: Shard, folder: Path) -> ShardRecord | None:
    """The record of shard ``s`` an interrupted build left, if its file is still the one recorded."""
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
    try:
        return ShardRecord.from_dict(rec)
    except TypeError:  # a record without a name: the shard is written again
        return None


def disk_full(e: BaseException) -> bool:
    """Whether an error (OSError, or TensorFlow's wrapping of one) means the disk is full."""
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "No space left on device" in str(e) or "Disk quota exceeded" in str(e)


def _free(folder: Path) -> str:
    try:
        n = shutil.disk_usage(folder).free
    except OSError:
        return "unknown"
    return f"{n / 1e9:,.2f} GB" if n >= 1e9 else f"{n / 1e6:,.1f} MB"
