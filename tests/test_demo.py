"""``python -m kit demo`` twice against one cache, and the spectrogram bench on a user's own small data."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kit.bench import spectrogram


def _kit(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd)


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

    reused = second.stdout[second.stdout.index("== the kit cache: reused from earlier runs"):]
    assert "built or updated in this run" not in second.stdout
    sizes = {e.name: cache.fmt_bytes(e.bytes) for e in cache.scan(tmp_path / "cache")}
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


@pytest.fixture
def own_data(tmp_path):
    """A user's folder: 12 float16 files of 3 to 64 frames (small frames, to stay fast)."""
    rng = np.random.default_rng(3)
    counts = [3, 64] + [int(n) for n in rng.integers(3, 65, size=10)]
    (tmp_path / "mine" / "clips").mkdir(parents=True)
    rows = []
    for i, n in enumerate(counts):
        np.save(tmp_path / "mine" / "clips" / f"c{i:02d}.npy", rng.standard_normal((n, 8, 6)).astype(np.float16))
        rows += [(f"clips/c{i:02d}.npy", j, ("dog", "cat", "bird")[(i + j) % 3]) for j in range(n)]
    with open(tmp_path / "mine" / "index.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["path", "frame", "label"])
        w.writerows(rows)
    return tmp_path / "mine" / "index.csv", len(rows)


def test_plan_fits_batch_and_warmup_to_the_data():
    # 342 frames: the default 256 would leave 2 batches per epoch, so 64 (6 per epoch).
    batch, warmup, timed, note = spectrogram.plan(342, batch_size=None, warmup=2, num_batches=20)
    assert (batch, warmup, timed) == (64, 2, 4) and "342 frames" in note and "--batch-size" in note
    # An explicit 256 is kept: 2 batches per epoch, one warm-up and one timed.
    assert spectrogram.plan(342, batch_size=256, warmup=2, num_batches=20)[:3] == (256, 1, 1)
    assert spectrogram.plan(100_000, batch_size=None, warmup=2, num_batches=20) == (256, 2, 20, None)
    assert spectrogram.plan(1, batch_size=None, warmup=2, num_batches=20)[:3] == (1, 0, 1)
    with pytest.raises(ValueError, match=r"--batch-size 512 is larger than .* \(342 frames\): pass --batch-size 342"):
        spectrogram.plan(342, batch_size=512, warmup=2, num_batches=20)


class _Run:
    def __init__(self, code, captured):
        self.returncode, self.stdout, self.stderr = code, captured.out, captured.err


def test_bench_on_own_small_data(own_data, tmp_path, monkeypatch, capsys):
    from kit import cli

    def kit(*args):  # in this process: TensorFlow is loaded once for the whole suite
        code = cli.main(list(args))
        return _Run(code, capsys.readouterr())

    csv_path, frames = own_data
    monkeypatch.setenv("KIT_RESULTS", str(tmp_path / "ledger.jsonl"))
    out = tmp_path / "b.json"
    run = kit("bench", "spectrogram", "--data", str(csv_path), "--variants", "generator,memmap,in_memory",
              "--rounds", "1", "--batches", "3", "--generator-seconds", "0.001", "--json", str(out))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["epoch_examples"] == frames  # projected to the index's own size
    # The options as the bench ran them (its SpectrogramConfig), beside today's keys.
    assert result["config"]["variants"] == ["generator", "memmap", "in_memory"]
    assert result["config"]["data"] == str(csv_path) and result["config"]["num_batches"] == 3
    assert result["batch_size"] == 1 << ((frames // 4).bit_length() - 1)
    rows = {r["variant"]: r for r in result["rows"]}
    assert rows["in_memory"]["batches"] == 3 and rows["in_memory"][f"epoch_s_{frames}"] > 0
    # The generator's time cap stopped it after one batch: the table says so.
    assert rows["generator"]["batches"] == 1 and rows["generator"]["batches_announced"] == 3
    assert "1 of 3" in run.stdout and "fewer batches than announced (3) for generator" in run.stdout
    assert f"epoch_{frames}" in run.stdout
    # The memmap store (built, or found from an earlier run) read into the page cache before timing.
    assert "read into the page cache: memmap store" in run.stdout

    too_big = kit("bench", "spectrogram", "--data", str(csv_path), "--batch-size", str(frames + 1))
    assert too_big.returncode == 2
    assert f"--batch-size {frames + 1} is larger than" in too_big.stderr
    assert f"pass --batch-size {frames} or smaller" in too_big.stderr

    chosen = kit("bench", "spectrogram", "--data", str(csv_path), "--variants", "in_memory", "--rounds", "1",
                 "--epoch-examples", "5000", "--json", "-")
    assert chosen.returncode == 0, chosen.stderr[-3000:]
    assert json.loads(chosen.stdout[chosen.stdout.index("{"):])["epoch_examples"] == 5000


def test_the_bench_reads_reused_stores_back_into_the_page_cache(own_data, tmp_path):
    """A store found from an earlier run may have left the page cache (this project's VM
    pages out file pages it has not seen used for a minute): the bench reads every stored
    variant's files back in before timing, so no timed round reads from disk."""
    import os

    from kit import pagecache
    from kit.spectrogram import FrameIndex, convert

    csv_path, _ = own_data
    index = FrameIndex.from_csv(csv_path)
    files = []
    for v in spectrogram.STORED:
        folder, manifest = convert(index, v, workdir=tmp_path / "w", progress=False)
        files += [folder / s["name"] for s in manifest.shards]
    written = {f: f.stat().st_mtime_ns for f in files}
    pagecache.evict(files)
    read = spectrogram.warm_stores(index, spectrogram.STORED, workdir=tmp_path / "w")
    assert set(read) == set(spectrogram.STORED)
    assert sum(read.values()) == sum(os.path.getsize(f) for f in files)
    assert pagecache.cached_fraction(files) == 1.0
    assert {f: f.stat().st_mtime_ns for f in files} == written  # found and read, not rebuilt
    assert spectrogram.warm_stores(index, [], workdir=tmp_path / "w") == {}
