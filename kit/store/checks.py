"""Checking a store against its manifest: at every open (``check_open``) and in full, file by file,
with the kind's deep check (``verify``)."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from tqdm.auto import tqdm

from kit.store.folder import MANIFEST, StoreError, write_json_atomic
from kit.store.manifest import Manifest, ShardRecord

#: The head and tail of each shard, hashed in the manifest (``ends``): a cheap check at
#: every open that the shards are the ones the manifest describes.
_ENDS = 64 << 10
#: Per-store record of shards whose SHA-256 matched, by (inode, size, mtime_ns, ctime_ns).
CHECKED = ".kit-checked.json"

#: kind -> deep check ``check(folder, manifest, shard) -> str | None`` (a problem or None),
#: registered by the modules that write each kind.
DEEP_CHECKS: dict[str, Callable[[Path, Manifest, ShardRecord], str | None]] = {}


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20, progress=None) -> str:
    """SHA-256 (hex) of a file, streamed; ``progress(n)`` is called with each chunk's size."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
            if progress is not None:
                progress(len(block))
    return h.hexdigest()


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


def stat_key(path: Path) -> list:
    """What a remembered check is valid for: ``[inode, size, mtime_ns, ctime_ns]`` of ``path``."""
    st = os.stat(path)
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def checks_on(check: bool | None = None) -> bool:
    """Whether a store is checked in full at open (``check_open``): ``check`` when given,
    else on unless ``$KIT_CHECK_STORES`` is ``0``."""
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


def remember_checked(folder: Path, new: dict) -> None:
    """Adds ``{shard name: stat_key + [sha256]}`` of shards that matched to ``folder``'s record."""
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

    Every shard must have the manifest's size and head/tail digest (``ends``). With ``full`` (the
    default, unless ``$KIT_CHECK_STORES=0``) each shard's SHA-256 is compared too, once per change
    of the file (a match is remembered in ``CHECKED``). ``StoreError`` names a shard that differs.
    """
    folder = Path(folder)
    full = checks_on(full)
    fix = f"run `python -m kit verify {folder}`; remove the folder to rebuild it"
    todo = []
    for s in manifest.shards:
        path = manifest.path(folder, s)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise StoreError(f"{path}: missing, but the manifest lists it; {fix}") from None
        if size != s.bytes:
            raise StoreError(f"{path}: {size} bytes where the manifest says {s.bytes} (truncated or "
                             f"replaced); {fix}")
        if s.ends is not None and ends_digest(path) != s.ends:
            raise StoreError(f"{path}: its head or tail differs from the manifest (a shard of another "
                             f"build, or corrupt); {fix}")
        if full and s.sha256:
            todo.append((path, s))
    if not todo:
        return
    seen = _load_checked(folder)
    todo = [(p, s) for p, s in todo if seen.get(s.name) != stat_key(p) + [s.sha256]]
    if not todo:
        return
    ok = {}
    with tqdm(total=sum(s.bytes for _, s in todo), unit="B", unit_scale=True, desc="checking store",
              disable=not progress) as bar:
        for path, s in todo:
            key = stat_key(path)
            if sha256_file(path, progress=bar.update) != s.sha256:
                raise StoreError(f"{path}: checksum differs from the manifest (corrupt); {fix}")
            ok[s.name] = key + [s.sha256]
    remember_checked(folder, ok)


def register_check(kind: str):
    """Decorator: registers a deep check for stores of ``kind`` (used by ``verify``)."""
    def deco(fn):
        DEEP_CHECKS[kind] = fn
        return fn
    return deco


def verify(folder: str | os.PathLike, *, deep: bool = True) -> list[str]:
    """Re-reads a store and checks it against its manifest, and with ``deep`` runs the kind's content
    check: the problems, each naming the file; empty when the store is sound."""
    folder = Path(folder)
    try:
        m = Manifest.load(folder)
    except StoreError as e:
        return [str(e)]
    problems = []
    total = 0
    for s in m.shards:
        path = folder / s.name
        total += s.count
        if not path.exists():
            problems.append(f"{path}: missing")
            continue
        size = path.stat().st_size
        if size != s.bytes:
            problems.append(f"{path}: {size} bytes, manifest says {s.bytes} (truncated or replaced)")
            continue
        if sha256_file(path) != s.sha256:
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
