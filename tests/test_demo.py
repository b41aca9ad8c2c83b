"""``python -m kit demo`` twice against one cache."""

import json
import os
import subprocess
import sys

import pytest


def _kit(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd)


@pytest.mark.slow
def test_demo_runs_twice_on_one_cache(tmp_path):
    """Fast mode, no notebooks (test_report covers those): both benches, twice; the second
    run finds the first one's data and stores in place and builds nothing new."""
    env = {"KIT_FAST": "1", "KIT_CACHE": str(tmp_path / "cache")}
    first = _kit("demo", "--reports", str(tmp_path / "r1"), "--no-notebooks", env=env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    stores = {p.name: (p / "manifest.json").stat().st_mtime_ns
              for p in (tmp_path / "cache").iterdir() if (p / "manifest.json").exists()}
    assert stores  # the benches built their stores in the cache
    second = _kit("demo", "--reports", str(tmp_path / "r2"), "--no-notebooks", env=env)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    again = {p.name: (p / "manifest.json").stat().st_mtime_ns
             for p in (tmp_path / "cache").iterdir() if (p / "manifest.json").exists()}
    assert again == stores
    # The second run says what it reused: each store, with its size, none built.
    from kit import cache
    from kit.cache import entries as cache_entries

    reused = second.stdout[second.stdout.index("== the kit cache: reused from earlier runs"):]
    assert "built or updated in this run" not in second.stdout
    sizes = {e.name: cache_entries.fmt_bytes(e.bytes) for e in cache.scan(tmp_path / "cache")}
    for name in stores:
        assert any(name in line and sizes[name] in line for line in reused.splitlines()), (name, reused)
    assert "== the kit cache: built or updated in this run" in first.stdout
    for run in (first, second):
        for line in ("[1/2] the spectrogram loaders", "[2/2] the segmentation loaders", "== done in",
                     "kit cache " + str(tmp_path / "cache")):
            assert line in run.stdout
        assert "absl" not in run.stdout + run.stderr and "cuInit" not in run.stdout + run.stderr
    for name in ("bench_spectrogram.json", "bench_segmentation.json"):
        rows = json.loads((tmp_path / "r2" / name).read_text())["rows"]
        assert rows and all(r["examples_per_s"] > 0 for r in rows)
