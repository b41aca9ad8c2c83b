"""The lab's smaller instruments, each run once on tiny settings: ``lab.timer`` (the StepTimer's overhead)
in process and as ``python -m lab.timer``, ``lab.digest`` (the content digest's cost), ``lab.tfrecord_stages``
(the TFRecord loader beside its records read alone), ``lab.experiments.module_table``, and the other
experiments import. Nothing in ``kit`` imports ``lab``."""

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kit import samples

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # lab/ is not installed: imported from the repository root
    sys.path.insert(0, str(ROOT))


def test_nothing_in_kit_imports_the_lab():
    for path in (ROOT / "kit").rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"^\s*(from lab\b|import lab\b)", text, re.M), f"{path} imports lab"


def test_timer_measures_the_callbacks_overhead():
    from lab import timer

    res = timer.run(timer.TimerConfig(steps=2, rounds=1, batch_size=8))
    assert res.name == "timer" and list(res.rows["variant"]) == ["no_callback", "step_timer", "step_timer+wrap"]
    assert (res.rows["step_ms"] > 0).all() and (res.rows["hook_ms"] >= 0).all()
    with pytest.raises(ValueError, match="steps must be a positive integer, got 0"):
        timer.TimerConfig(steps=0)


@pytest.mark.slow
def test_the_timer_command_prints_appends_and_writes_json(tmp_path):
    out = tmp_path / "timer.json"
    env = {**os.environ, "KIT_RESULTS": str(tmp_path / "ledger.jsonl")}
    r = subprocess.run([sys.executable, "-m", "lab.timer", "--steps", "2", "--rounds", "1", "--batch-size", "8",
                        "--json", str(out)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "step_timer" in r.stdout and (tmp_path / "ledger.jsonl").exists()
    obj = json.loads(out.read_text())
    assert obj["bench"] == "timer" and obj["config"] == {"steps": 2, "rounds": 1, "batch_size": 8, "seed": 0}
    bad = subprocess.run([sys.executable, "-m", "lab.timer", "--steps", "0"], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=120)
    assert bad.returncode == 2 and "--steps: must be positive" in bad.stderr, bad.stderr


def test_digest_times_each_way_of_fingerprinting(tmp_path, monkeypatch):
    from lab import digest

    monkeypatch.setenv("KIT_CACHE", str(tmp_path / "cache"))
    res = digest.run(digest.DigestConfig(samples.embedded("spectrogram"), rounds=1))
    assert list(res.rows["variant"]) == ["index", "stat", "sample-cold", "sample-cached", "full-cold"]
    assert (res.rows["seconds"] > 0).all() and res.rows["x_index"].iloc[0] == 1.0
    assert os.environ["KIT_CACHE"] == str(tmp_path / "cache")  # put back as it was


@pytest.mark.slow
def test_tfrecord_stages_on_the_embedded_samples(tmp_path, monkeypatch):
    from lab import tfrecord_stages

    monkeypatch.setenv("KIT_CACHE", str(tmp_path / "cache"))
    out = tfrecord_stages.main(["--data", str(samples.embedded("spectrogram")), "--rounds", "1", "--batches", "1",
                                "--warmup", "0", "--json", str(tmp_path / "stages.json")])
    assert set(out["stages"]) == {"read", "tfrecord", "tfrecord_guide", "in_memory"}
    assert all(s["frames_per_s"] > 0 for s in out["stages"].values())
    assert out["stages"]["in_memory"]["x_in_memory"] == 1.0
    assert json.loads((tmp_path / "stages.json").read_text()) == json.loads(json.dumps(out))


def test_module_table_lists_the_kits_modules_at_two_commits(capsys):
    from lab.experiments import module_table

    module_table.main("HEAD", "HEAD")
    out = capsys.readouterr().out
    assert "### before:" in out and "### after:" in out and "| `kit/bench/__init__.py` |" in out


@pytest.mark.parametrize("name", ["first_touch", "read_ahead_pairs", "plain_vs_timed_fit", "doctor_gains",
                                  "generator_malloc"])
def test_the_experiments_import(name):
    assert callable(importlib.import_module(f"lab.experiments.{name}").main)


def test_the_demo_check_names_what_a_run_misses(tmp_path):
    import json

    import nbformat

    from kit.scenario import PREFETCH_GAIN, SEGMENTATION_ONE_CORE, USER_EPOCHS
    from lab import demo_check

    rows = [{"notebook": nb, "quantity": q, "value": 100.0, "unit": "s", "basis": {}}
            for q in USER_EPOCHS for nb in ("01_a", "05_b")]
    rows += [{"notebook": "02_c", "quantity": PREFETCH_GAIN, "value": 1.2, "unit": "x", "basis": {}},
             {"notebook": "06_d", "quantity": SEGMENTATION_ONE_CORE, "value": 1.5, "unit": "x", "basis": {}}]
    (tmp_path / "headlines.json").write_text(json.dumps(rows))
    (tmp_path / "index.html").write_text("<p>40 hours; 208 s and 126 s</p>")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("The user's 40 hours")]
    nbformat.write(nb, tmp_path / "05_b.ipynb")
    failures, lessons = demo_check.check(tmp_path)
    assert failures == [f"{PREFETCH_GAIN} 1.20 < 1.3"] and lessons == []
    rows[0]["value"] = 200.0  # one page states another value of the same quantity
    (tmp_path / "headlines.json").write_text(json.dumps(rows))
    assert any(f.startswith(f"{USER_EPOCHS[0]}: 01_a 200 s, 05_b 100 s") for f in demo_check.check(tmp_path)[0])


def test_the_cpu_plugin_records_each_test_and_its_children_and_sums_them_by_file(tmp_path, capsys):
    """``-p lab.test_cpu`` with KIT_TEST_CPU: a line per test, a child's CPU counted where the test reaped it;
    ``python -m lab.test_cpu`` sums them by file, the most CPU first."""
    from lab import test_cpu

    (tmp_path / "test_two.py").write_text(
        "import subprocess, sys\n"
        "def test_spins_a_child():\n"
        "    subprocess.run([sys.executable, '-c', 'import time\\nt = time.process_time()\\n"
        "while time.process_time() - t < 0.3: pass'], check=True)\n"
        "def test_idle():\n"
        "    pass\n")
    out = tmp_path / "acct"
    env = {**os.environ, test_cpu.ENV: str(out), "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "lab.test_cpu", "-p", "no:cacheprovider",
                        str(tmp_path / "test_two.py")], capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    recs = {r["test"].split("::")[1]: r for r in test_cpu.rows(out)}
    assert set(recs) == {"test_spins_a_child", "test_idle"}
    assert recs["test_spins_a_child"]["children"] >= 0.25 and recs["test_idle"]["children"] < 0.05, recs
    [(name, _, children, _, n)] = test_cpu.by_file(list(recs.values()))
    assert name.endswith("test_two.py") and n == 2 and children >= 0.25
    assert test_cpu.main([str(out)]) == 0
    assert "2 tests:" in capsys.readouterr().out
    assert test_cpu.main([str(tmp_path / "none")]) == 1
