"""Which cache entries a run reused and which it built: what this process opens under the cache is
recorded (``recording``, ``record_for_life``) and compared with the listings before and after
(``reuse_report``)."""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from kit import samples
from kit.cache.entries import Entry, fmt_bytes, root

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
    """Yields a set (``found``, or a new one) of the names (``Entry.name``) of the cache entries this
    process opens through Python within the block (Python's audit hook: ``open``, ``sqlite3.connect``;
    once added, the hook stays, idle outside a block)."""
    global _HOOKED
    r = root(folder)
    prefixes = tuple({os.path.abspath(r) + os.sep, os.path.realpath(r) + os.sep})
    item = (prefixes, samples.CACHE_FOLDER, set() if found is None else found)
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    _RECORDING.append(item)
    try:
        yield item[2]
    finally:
        _RECORDING.remove(item)


#: A file each process appends the names of the cache entries it opened to, at exit, when set
#: (``python -m kit demo`` sets it for the notebooks' kernels; ``kit.notebook.session`` starts it).
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
    """Lines to print: the kit's entries a run reused (in ``before``, opened as ``used`` says,
    unchanged) and those it built (new since ``before`` or rebuilt), at most ``limit`` under each;
    ``before`` and ``after`` are ``scan()`` before and after the run."""
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
