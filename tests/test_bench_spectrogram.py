"""kit.bench.spectrogram: ``python -m kit bench spectrogram``'s JSON, and the bench on a user's own
small data."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kit.bench import spectrogram
from kit.spectrogram import FrameIndex, convert


def _kit(*args):
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True)


@pytest.mark.slow
def test_bench_command_json(spec_csv, tmp_path):
    out = tmp_path / "bench.json"
    r = _kit("bench", "spectrogram", "--data", str(spec_csv), "--batch-size", "16", "--rounds", "1",
             "--batches", "2", "--generator-seconds", "1", "--json", str(out),
             "--variants", "generator,memmap,tfrecord_guide,tfrecord,in_memory")
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["bench"] == "spectrogram" and "machine" in result
    assert "malloc" not in result["machine"]  # the kit no longer tunes the C allocator
    rows = {row["variant"]: row for row in result["rows"]}
    assert set(rows) == {"generator", "memmap", "tfrecord_guide", "tfrecord", "in_memory"}
    n = result["epoch_examples"]  # with --data: the index's own size
    assert n == 96
    for row in rows.values():
        assert row["examples_per_s"] > 0
        assert row[f"epoch_s_{n}"] == pytest.approx(n / row["examples_per_s"])
        assert row["x_in_memory"] == pytest.approx(row["examples_per_s"] / rows["in_memory"]["examples_per_s"])
        # issue 45: every row beside the guide's TFRecord pipeline, measured in the same run
        assert row["x_tfrecord_guide"] == pytest.approx(row["examples_per_s"] /
                                                        rows["tfrecord_guide"]["examples_per_s"])
    assert rows["generator"]["x_generator"] == 1.0 and rows["tfrecord_guide"]["x_tfrecord_guide"] == 1.0


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

    from kit.system import pagecache

    csv_path, _ = own_data
    index = FrameIndex.from_csv(csv_path)
    from kit.spectrogram.peers import available

    stored = [v for v in spectrogram.STORED if v != "grain" or available() is None]  # grain: the peers extra
    files = []
    for v in stored:
        folder, manifest = convert(index, spectrogram.STORED[v], workdir=tmp_path / "w", progress=False)
        files += [folder / s["name"] for s in manifest.shards]
    written = {f: f.stat().st_mtime_ns for f in files}
    pagecache.evict(files)
    read = spectrogram.warm_stores(index, stored, workdir=tmp_path / "w")
    assert set(read) == set(stored)
    assert sum(read.values()) == sum(os.path.getsize(f) for f in files)
    assert pagecache.cached_fraction(files) == 1.0
    assert {f: f.stat().st_mtime_ns for f in files} == written  # found and read, not rebuilt
    assert spectrogram.warm_stores(index, [], workdir=tmp_path / "w") == {}
