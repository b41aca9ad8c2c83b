"""The results ledger: appends, torn and foreign lines, bench JSON files, the bench hook."""

import json
import math
import multiprocessing
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kit import results

MACHINE_A = {"host": "a", "cpu_model": "CPU A", "cpus": 2, "gpus": []}
MACHINE_B = {"host": "b", "cpu_model": "CPU B", "cpus": 16, "gpus": ["/physical_device:GPU:0"] * 2}


def _rows():
    return pd.DataFrame({"variant": ["generator", "memmap"], "examples_per_s": [7.0, 70_000.0],
                         "x_generator": [1.0, 10_000.0], "examples": [np.int64(14), np.int64(1280)]})


ROOT = Path(__file__).resolve().parents[1]


def test_default_path_and_env(monkeypatch, tmp_path):
    monkeypatch.delenv("KIT_RESULTS")
    assert results.project_root() == ROOT
    assert results.ledger_path() == ROOT / "reports" / "results.jsonl"
    monkeypatch.chdir(ROOT / "notebooks")  # where Jupyter and nbconvert run a notebook
    assert results.ledger_path() == ROOT / "reports" / "results.jsonl"
    monkeypatch.setenv("KIT_RESULTS", str(tmp_path / "x.jsonl"))
    assert results.ledger_path() == tmp_path / "x.jsonl"
    monkeypatch.setenv("KIT_RESULTS", "rel.jsonl")  # a relative $KIT_RESULTS is fixed where it is read
    assert results.ledger_path() == ROOT / "notebooks" / "rel.jsonl"


@pytest.mark.slow
def test_one_ledger_from_the_root_and_from_notebooks_in_child_processes():
    """What a bench started at the root and a notebook kernel started in notebooks/ resolve."""
    env = {k: v for k, v in os.environ.items() if k != "KIT_RESULTS"}
    code = "from kit import results; print(results.ledger_path())"
    seen = {subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=120, check=True).stdout.strip() for cwd in (ROOT, ROOT / "notebooks", "/")}
    assert seen == {str(ROOT / "reports" / "results.jsonl")}


def test_outside_a_checkout_the_ledger_is_in_the_kit_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("KIT_RESULTS")
    monkeypatch.setenv("KIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(results, "project_root", lambda: None)
    assert results.ledger_path() == tmp_path / "cache" / "results.jsonl"


def _project(monkeypatch, tmp_path):
    monkeypatch.delenv("KIT_RESULTS")
    monkeypatch.setattr(results, "project_root", lambda: tmp_path)
    return tmp_path / "reports" / "results.jsonl", tmp_path / "notebooks" / "reports" / "results.jsonl"


def test_rows_in_a_stray_notebooks_ledger_move_into_the_project_ledger(monkeypatch, tmp_path, capsys):
    ledger, stray = _project(monkeypatch, tmp_path)
    results.append(_rows(), bench="compare", machine=MACHINE_A, run_id="from-notebooks", file=stray)
    results.append(_rows().iloc[:1], bench="spectrogram", machine=MACHINE_A, run_id="from-root")
    err = capsys.readouterr().err
    assert f"moved 2 row(s) from {stray}" in err and str(ledger) in err
    assert not stray.exists() and not list(stray.parent.glob("*.moving-*"))
    df = results.load()
    assert sorted(df["run_id"]) == ["from-notebooks", "from-notebooks", "from-root"]
    assert set(df["source"]) == {str(ledger)}
    # a second run finds nothing to move
    results.append(_rows().iloc[:1], bench="spectrogram", machine=MACHINE_A, run_id="again")
    assert "moved" not in capsys.readouterr().err and len(results.load()) == 4


def test_reading_the_ledger_moves_strays_too_and_leaves_foreign_files(monkeypatch, tmp_path, capsys):
    ledger, stray = _project(monkeypatch, tmp_path)
    results.append(_rows(), bench="compare", machine=MACHINE_A, run_id="nb", file=stray)
    assert len(results.load(results.ledger_path())) == 2 and not stray.exists()
    assert "moved 2 row(s)" in capsys.readouterr().out
    stray.write_text("my own notes, not a ledger\n")
    assert len(results.load()) == 2 and stray.read_text() == "my own notes, not a ledger\n"
    # a $KIT_RESULTS elsewhere adopts nothing
    results.append(_rows(), bench="compare", machine=MACHINE_A, run_id="nb2", file=stray.with_name("other.jsonl"))
    stray.with_name("other.jsonl").rename(stray)
    monkeypatch.setenv("KIT_RESULTS", str(tmp_path / "elsewhere.jsonl"))
    results.append(_rows(), bench="compare", machine=MACHINE_A, run_id="x")
    assert stray.exists()


def test_append_then_load_round_trip(tmp_path):
    ledger = tmp_path / "sub" / "results.jsonl"
    results.append(_rows(), bench="spectrogram", machine=MACHINE_A, run_id="r1", extra={"batch_size": 256},
                   file=ledger)
    results.append([{"variant": "in_memory", "examples_per_s": math.inf}], bench="spectrogram",
                   machine=MACHINE_A, file=ledger)
    lines = ledger.read_text().splitlines()
    assert len(lines) == 3
    first = json.loads(lines[0])
    assert first["bench"] == "spectrogram" and first["run_id"] == "r1" and first["batch_size"] == 256
    assert first["machine"] == MACHINE_A and first["examples"] == 14 and first["time"].endswith("+00:00")
    df = results.load(ledger)
    assert list(df["variant"]) == ["generator", "memmap", "in_memory"]
    assert df.loc[1, "examples_per_s"] == 70_000.0
    assert df.loc[2, "examples_per_s"] is None or pd.isna(df.loc[2, "examples_per_s"])  # inf -> null
    assert df["run_id"].nunique() == 2
    assert set(df["machine_label"]) == {"a, CPU A, 2 cores, 0 GPUs"}
    assert str(df["time"].dt.tz) == "UTC"


def test_torn_and_foreign_lines_are_skipped_with_their_line_number(tmp_path):
    ledger = tmp_path / "results.jsonl"
    results.append(_rows(), bench="spectrogram", machine=MACHINE_A, file=ledger)
    with open(ledger, "a") as f:
        f.write('{"bench": "spectrogram", "run_id": "x", "time": "2026-01-01T00:00:00+00:00", "machine": {}}\n')
        f.write("hello, I am not json\n")           # line 4: foreign
        f.write('{"variant": "x"}\n')                # line 5: JSON, not a ledger row
        f.write('{"bench": "spectrogram", "run_')   # line 6: torn (no newline, cut mid-object)
    with pytest.warns(UserWarning) as caught:
        df = results.load(ledger)
    text = " ".join(str(w.message) for w in caught)
    assert "line 4" in text and "line 5" in text and "line 6" in text
    assert len(df) == 3  # two rows and the complete one-line row


def test_append_after_a_torn_line_still_loads(tmp_path):
    ledger = tmp_path / "results.jsonl"
    results.append(_rows(), bench="b", machine=MACHINE_A, file=ledger)
    with open(ledger, "ab") as f:
        f.write(b'{"bench": "b", "ru')  # a torn line with no newline
    results.append(_rows(), bench="b", machine=MACHINE_A, file=ledger)
    with pytest.warns(UserWarning, match="line 3"):
        df = results.load(ledger)
    # The torn fragment swallows the next row's line start: that one line is lost, not the rest.
    assert len(df) == 3


def test_refuses_to_append_to_a_file_that_is_not_a_ledger(tmp_path):
    other = tmp_path / "notes.jsonl"
    other.write_text("my own notes\n")
    with pytest.raises(ValueError, match="not a kit results ledger"):
        results.append(_rows(), bench="b", machine=MACHINE_A, file=other)
    assert other.read_text() == "my own notes\n"


def _append_many(args):
    ledger, k = args
    for i in range(50):
        results.append([{"variant": f"w{k}", "i": i, "pad": "x" * 3000}], bench="b", machine=MACHINE_A,
                       run_id=f"w{k}", file=ledger)


def test_concurrent_appends_never_interleave_within_a_line(tmp_path):
    ledger = tmp_path / "results.jsonl"
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pool.map(_append_many, [(ledger, k) for k in range(4)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a torn or interleaved line would warn: make it fail
        df = results.load(ledger)
    assert len(df) == 200
    assert sorted(df.groupby("variant")["i"].apply(sorted).iloc[0]) == list(range(50))


def test_load_reads_bench_json_files_and_folders(tmp_path):
    dev = tmp_path / "device"
    dev.mkdir()
    (dev / "bench_spectrogram.json").write_text(json.dumps({
        "bench": "spectrogram", "batch_size": 256, "machine": MACHINE_B,
        "rows": [{"variant": "memmap", "examples_per_s": 900_000.0}]}))
    (dev / "gpus.txt").write_text("H200, 141 GB\n")  # other files in the folder are ignored
    (dev / "broken.json").write_text("{not json")
    ledger = tmp_path / "results.jsonl"
    results.append(_rows(), bench="spectrogram", machine=MACHINE_A, file=ledger)
    with pytest.warns(UserWarning, match="broken.json"):
        df = results.load([ledger, dev])
    assert len(df) == 3
    assert set(df["machine_label"]) == {"a, CPU A, 2 cores, 0 GPUs", "b, CPU B, 16 cores, 2 GPUs"}
    from_file = df[df["source"].str.endswith("bench_spectrogram.json")].iloc[0]
    assert from_file["batch_size"] == 256 and from_file["examples_per_s"] == 900_000.0
    latest = results.latest(df, "spectrogram")
    assert set(latest["machine_label"]) == set(df["machine_label"])


def test_a_run_in_both_the_ledger_and_its_json_is_counted_once(tmp_path):
    ledger = tmp_path / "results.jsonl"
    results.append(_rows(), bench="spectrogram", machine=MACHINE_A, run_id="same", file=ledger)
    (tmp_path / "bench.json").write_text(json.dumps({"bench": "spectrogram", "run_id": "same",
                                                     "machine": MACHINE_A, "rows": _rows().to_dict("records")}))
    assert len(results.load(tmp_path)) == 2


def test_missing_or_empty_ledger_gives_an_empty_frame(tmp_path):
    df = results.load(tmp_path / "nothing.jsonl")
    assert df.empty and "bench" in df.columns and "machine_label" in df.columns


def test_latest_picks_the_newest_run_per_machine(tmp_path):
    ledger = tmp_path / "results.jsonl"
    for run in ("old", "new"):
        results.append([{"variant": "memmap", "examples_per_s": 1.0 if run == "old" else 2.0}],
                       bench="spectrogram", machine=MACHINE_A, run_id=run, file=ledger)
    lines = [json.loads(x) for x in ledger.read_text().splitlines()]
    lines[0]["time"] = "2020-01-01T00:00:00+00:00"
    ledger.write_text("".join(json.dumps(x) + "\n" for x in lines))
    latest = results.latest(results.load(ledger), "spectrogram")
    assert list(latest["run_id"]) == ["new"] and list(latest["examples_per_s"]) == [2.0]


@pytest.mark.slow
def test_every_bench_command_appends_its_rows(tmp_path):
    """The hook: a bench command (``python -m lab.timer``, the quickest) lands in $KIT_RESULTS."""
    ledger = tmp_path / "ledger.jsonl"
    out = tmp_path / "timer.json"
    env = {**os.environ, "KIT_RESULTS": str(ledger), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-m", "lab.timer", "--steps", "3", "--rounds", "1",
                           "--json", str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    df = results.load(ledger)
    obj = json.loads(out.read_text())
    assert len(df) == len(obj["rows"]) > 0
    assert set(df["run_id"]) == {obj["run_id"]} and set(df["bench"]) == {"timer"}
    assert df["machine"].iloc[0]["cpus"] == os.cpu_count() and df["machine"].iloc[0]["cpu_model"]
    assert len(results.load([ledger, out])) == len(df)  # the JSON of the same run adds nothing


def test_the_ledger_keeps_the_bench_config_with_each_row(tmp_path, monkeypatch, capsys):
    from kit.bench import BenchResult, record
    from lab.timer import TimerConfig

    ledger = tmp_path / "results.jsonl"
    monkeypatch.setenv("KIT_RESULTS", str(ledger))
    config = TimerConfig(steps=7, rounds=2, batch_size=16)
    record(BenchResult("timer", _rows(), config=config, machine=MACHINE_A))
    df = results.load(ledger)
    assert len(df) == 2
    assert list(df["config"]) == [{"steps": 7, "rounds": 2, "batch_size": 16, "seed": 0}] * 2
