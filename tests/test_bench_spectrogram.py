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
             "--batches", "2", "--round-seconds", "0.01", "--generator-seconds", "1", "--limit-seconds", "0.01",
             "--json", str(out),
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
        if row["variant"] != "generator":  # the generator's ratios are chained (below)
            assert row["x_in_memory"] == pytest.approx(row["examples_per_s"] / rows["in_memory"]["examples_per_s"])
            # issue 45: every row beside the guide's TFRecord pipeline, measured in the same run
            assert row["x_tfrecord_guide"] == pytest.approx(row["examples_per_s"] /
                                                            rows["tfrecord_guide"]["examples_per_s"])
        # issue 56: each ratio with its rounds' spread, each row against the limit that binds it
        for b in ("generator", "tfrecord_guide", "in_memory"):
            assert row[f"x_{b}_min"] <= row[f"x_{b}_max"]
        assert row["limit"] in result["limits"] and row["fraction_of_limit"] > 0
    assert rows["generator"]["x_generator"] == 1.0 and rows["tfrecord_guide"]["x_tfrecord_guide"] == 1.0
    # The generator is measured after the others (spectrogram.AFTER), beside in_memory again: its
    # ratios are chained through in_memory's, and in_memory keeps one row.
    g, t = rows["generator"], rows["tfrecord"]
    assert len(result["rows"]) == 5 and g["x_in_memory_min"] <= g["x_in_memory"] <= g["x_in_memory_max"]
    assert g["x_tfrecord_guide"] == pytest.approx(g["x_in_memory"] / rows["tfrecord_guide"]["x_in_memory"])
    assert t["x_generator"] == pytest.approx(t["x_in_memory"] / g["x_in_memory"])
    assert rows["tfrecord"]["limit"] == "page_cache_read" or rows["tfrecord"]["fraction_of_limit"] > 0


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
              "--rounds", "1", "--batches", "3", "--round-seconds", "0.001", "--generator-seconds", "0.001",
              "--limit-seconds", "0.01", "--json", str(out))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["epoch_examples"] == frames  # projected to the index's own size
    # The options as the bench ran them (its SpectrogramConfig), beside today's keys.
    assert result["config"]["variants"] == ["generator", "memmap", "in_memory"]
    assert result["config"]["data"] == str(csv_path) and result["config"]["num_batches"] == 3
    assert result["batch_size"] == 1 << ((frames // 4).bit_length() - 1)
    rows = {r["variant"]: r for r in result["rows"]}
    assert rows["in_memory"]["batches"] >= 3 and rows["in_memory"][f"epoch_s_{frames}"] > 0  # 3, or 1 ms
    # The limits, measured in the same run, each read before and after the rounds.
    limits = result["limits"]
    assert {"memory_copy_1_thread", "tfdata_elements", "page_cache_read"} <= set(limits)
    assert sum(k.startswith("memory_copy_") for k in limits) == 2
    for lim in limits.values():
        assert lim["rate"] > 0 and len(lim["reads"]) == 2 and lim["rate"] == max(lim["reads"]) and lim["how"]
    assert limits["tfdata_elements"]["unit"] == "elements/s" and limits["page_cache_read"]["unit"] == "bytes/s"
    for r in rows.values():
        assert r["limit"] in limits and r["fraction_of_limit"] == pytest.approx(
            r["examples_per_s"] / r["limit_examples_per_s"])
    # The generator reads its frame's whole file: the page-cache read binds it; memmap maps its store.
    assert rows["generator"]["limit"] == "page_cache_read" and rows["memmap"]["limit"] != "page_cache_read"
    assert "limits, measured in this run" in run.stdout
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


def test_rounds_sized_by_time_read_on_past_the_fewest_batches_and_across_epochs():
    from kit import timing
    from kit.bench import endless

    epoch = [np.zeros((4, 2), np.float32)] * 3  # an epoch of 3 batches of 4
    exact = timing.measure(endless(epoch), num_batches=5, warmup=1)
    assert exact.batches == 5  # no least time: exactly the batches asked, across an epoch's end
    m = timing.measure(endless(epoch), num_batches=2, warmup=0, min_seconds=0.02)
    assert m.batches > 2 and m.wall_s >= 0.02 and m.examples == 4 * m.batches  # epoch after epoch
    capped = timing.measure(endless(epoch), num_batches=2, warmup=0, min_seconds=10, max_seconds=0.01)
    assert capped.wall_s < 10  # the cap stops a round short of its least time
    with pytest.raises(ValueError, match="min_seconds must be positive"):
        timing.measure(endless(epoch), num_batches=2, min_seconds=0)
    with pytest.raises(ValueError, match="no batches"):
        timing.measure(endless([]), num_batches=2, warmup=0, min_seconds=0.01)  # an empty loader ends


def test_compare_gives_each_ratio_its_rounds_spread():
    from kit import timing

    batches = [np.zeros((4, 2), np.float32)] * 3
    df = timing.compare({"a": lambda: iter(batches), "b": lambda: iter(batches)}, baselines=["a"], num_batches=2,
                        warmup=0, rounds=3)
    a, b = df.set_index("variant").loc["a"], df.set_index("variant").loc["b"]
    assert a["x_a"] == a["x_a_min"] == a["x_a_max"] == 1.0
    assert 0 < b["x_a_min"] <= b["x_a_max"]
    med = timing.compare({"a": lambda: iter(batches), "b": lambda: iter(batches)}, baselines=["a"], num_batches=2,
                         warmup=0, rounds=3, ratio="median").set_index("variant").loc["b"]
    assert med["x_a_min"] <= med["x_a"] <= med["x_a_max"]  # the median round's ratio
    with pytest.raises(ValueError, match="ratio must be 'rates' or 'median'"):
        timing.compare({"a": batches}, ratio="mean")


def test_joined_parts_get_the_widest_spread_their_rounds_allow():
    import pandas as pd

    first = pd.DataFrame({"variant": ["fast", "ref"], "examples_per_s": [200.0, 100.0], "round_min": [180.0, 90.0],
                          "round_max": [220.0, 110.0], "x_ref": [2.0, 1.0], "x_ref_min": [1.9, 1.0],
                          "x_ref_max": [2.1, 1.0]})
    later = pd.DataFrame({"variant": ["slow"], "examples_per_s": [10.0], "round_min": [8.0], "round_max": [12.0]})
    df = spectrogram.joined([first, later], ["ref"]).set_index("variant")
    assert df.loc["fast", "x_ref_min"] == 1.9  # measured in the same rounds: paired
    assert df.loc["slow", "x_ref"] == pytest.approx(0.1)
    assert df.loc["slow", "x_ref_min"] == pytest.approx(8 / 110) and df.loc["slow", "x_ref_max"] == pytest.approx(12 / 90)
    # With the anchor measured again beside the later rows, their ratios chain through it.
    later = pd.DataFrame({"variant": ["slow", "ref"], "examples_per_s": [10.0, 120.0], "round_min": [8.0, 100.0],
                          "round_max": [12.0, 140.0], "x_ref": [0.08, 1.0], "x_ref_min": [0.07, 1.0],
                          "x_ref_max": [0.09, 1.0]})
    df = spectrogram.joined([first, later], ["ref", "slow"], anchor="ref")
    assert list(df["variant"]) == ["fast", "ref", "slow"]  # the anchor's later row dropped
    df = df.set_index("variant")
    assert (df.loc["slow", "x_ref"], df.loc["slow", "x_ref_min"], df.loc["slow", "x_ref_max"]) == (0.08, 0.07, 0.09)
    assert df.loc["fast", "x_slow"] == pytest.approx(2.0 / 0.08)
    assert df.loc["fast", "x_slow_min"] == pytest.approx(1.9 / 0.09)


def test_a_ratio_whose_rounds_straddle_one_is_marked():
    import pandas as pd

    from kit.bench import ratio_cells

    df = pd.DataFrame({"variant": ["memmap", "tfrecord"], "x_in_memory": [0.95, 0.2],
                       "x_in_memory_min": [0.8, 0.15], "x_in_memory_max": [1.1, 0.25]})
    table, notes = ratio_cells(df, ["in_memory"])
    assert list(table["x_in_memory"]) == ["0.95 [0.8-1.1]~", "0.2 [0.15-0.25]"]
    assert len(notes) == 1 and notes[0].startswith("~ memmap against in_memory")


def test_the_limits_are_read_and_bind_by_the_lowest(tmp_path):
    from kit.bench import limits

    f = tmp_path / "shard"
    f.write_bytes(b"x" * 100_000)
    lim = limits.Limits((np.zeros((4, 3), np.float32),), [f], seconds=0.01)
    lim.read()
    lim.read()
    got = lim.to_json()
    assert set(got) == {"memory_copy_1_thread", lim.copy, "tfdata_elements", "page_cache_read"}
    assert all(v["rate"] == max(v["reads"]) > 0 and len(v["reads"]) == 2 for v in got.values())
    assert limits.fraction_of_limit(50.0, {"copy": 1000.0, "read": 100.0}) == ("read", 100.0, 0.5)
