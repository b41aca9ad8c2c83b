"""kit.system.memory: freed batch buffers kept mapped from one batch to the next (glibc malloc's
thresholds), who sets them, who opts out, and that freed buffers are then reused
instead of faulted in again.

mallopt changes a whole process, so every test that sets it runs its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.system import memory

ROOT = Path(__file__).resolve().parent.parent


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (AttributeError, ValueError, OSError):
        return False


needs_glibc = pytest.mark.skipif(not _glibc(), reason="the thresholds are glibc malloc's")

_OPT_OUTS = ("KIT_MALLOC", "GLIBC_TUNABLES", "LD_PRELOAD")


def _last_json(code: str, tmp_path, argv=(), **env) -> dict:
    """Runs ``code`` in a fresh Python (none of the opt-outs set unless given) and
    returns the JSON object it prints last."""
    base = {k: v for k, v in os.environ.items() if k not in _OPT_OUTS}
    base.update(PYTHONPATH=str(ROOT), KIT_CACHE=str(tmp_path / "cache"), TF_CPP_MIN_LOG_LEVEL="2", **env)
    r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, env=base,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


_CLI = ("import json; from kit import cli; from kit.system import memory; rc = cli.main(['cache']); "
        "print(json.dumps(dict(memory.malloc_setting(), rc=rc)))")


@needs_glibc
def test_python_m_kit_keeps_freed_memory(tmp_path):
    before = _last_json("import json; from kit.system import memory; print(json.dumps(memory.malloc_setting()))", tmp_path)
    assert before["kept_by_kit"] is False and "not called" in before["why"]
    got = _last_json(_CLI, tmp_path)
    assert got == {"allocator": got["allocator"], "kept_by_kit": True, "mmap_threshold": memory.MMAP_THRESHOLD,
                   "trim_threshold": memory.TRIM_THRESHOLD, "rc": 0}
    assert got["allocator"].startswith("glibc ")


@needs_glibc
@pytest.mark.parametrize("env, why", [
    ({"KIT_MALLOC": "default"}, "KIT_MALLOC=default"),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"}, "GLIBC_TUNABLES sets malloc's tunables"),
])
def test_python_m_kit_leaves_malloc_alone_when_told(tmp_path, env, why):
    got = _last_json(_CLI, tmp_path, **env)
    assert got["kept_by_kit"] is False and why in got["why"] and got["rc"] == 0
    assert "mmap_threshold" not in got


def test_a_preloaded_allocator_or_another_libc_is_left_alone(monkeypatch):
    # Neither path calls mallopt, so this process is not changed.
    monkeypatch.setattr(memory, "_state", None)
    monkeypatch.delenv("KIT_MALLOC", raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
    monkeypatch.setattr(memory, "_glibc", lambda: "glibc 2.36")
    got = memory.keep_freed_memory()
    assert got["kept_by_kit"] is False and "libjemalloc" in got["why"]
    assert memory.keep_freed_memory() == got == memory.malloc_setting()  # the first call decides

    monkeypatch.setattr(memory, "_state", None)
    monkeypatch.delenv("LD_PRELOAD")
    monkeypatch.setattr(memory, "_glibc", lambda: None)
    got = memory.keep_freed_memory()
    assert got == {"allocator": "not glibc", "kept_by_kit": False, "why": "the C library is not glibc"}


@pytest.mark.parametrize("kwargs, message", [
    ({"mmap_threshold": 64 << 20}, "at most 32 MB"),
    ({"mmap_threshold": 0}, "mmap_threshold must be a positive number of bytes"),
    ({"trim_threshold": 1.5}, "trim_threshold must be a positive number of bytes"),
    ({"trim_threshold": True}, "trim_threshold must be a positive number of bytes"),
])
def test_bad_thresholds_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        memory.keep_freed_memory(**kwargs)


# Buffers of 8 to 24 MB, each a little larger than the last (batches of several sizes,
# a store's blocks of several lengths), each filled and freed, twice over: minor page
# faults in the second pass, with malloc as the kit sets it or as it comes. glibc gives
# each buffer a mapping of its own and unmaps it on free (its threshold only rises to
# the size last freed), so the second pass faults its pages in again; kept, the heap
# the first pass grew is reused.
_FAULTS = """
import json
import numpy as np
from kit.system import memory
memory.keep_freed_memory()

def buffers():
    for mb in range(8, 25):
        a = np.empty(mb << 20, np.uint8)
        a.fill(1)
        del a

buffers()
f0 = memory.minor_faults()
buffers()
print(json.dumps({"kept": memory.malloc_setting()["kept_by_kit"], "faults": memory.minor_faults() - f0}))
"""


@needs_glibc
def test_kept_memory_is_reused_instead_of_faulted_in_again(tmp_path):
    kept = _last_json(_FAULTS, tmp_path)
    plain = _last_json(_FAULTS, tmp_path, KIT_MALLOC="default")
    assert kept["kept"] is True and plain["kept"] is False
    # 4,595 faults as malloc comes, 0 kept, on the kit's VM (its kernel maps some of
    # a buffer's pages at a time, so the faults are fewer than the pages).
    assert plain["faults"] > 500, plain
    assert kept["faults"] < plain["faults"] / 10, (kept, plain)
