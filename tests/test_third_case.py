"""Issue 32 item 1: a third case, declared in three small files under tests/third_case/ (index,
loaders, samples) and named in $KIT_CASES, reaches the samples CLI, the loader bench, notebook 05's
configurations and the doctor without a line of kit/ changed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FILES = [HERE / "third_case" / f for f in ("index.py", "loaders.py", "samples.py")]


def _kit(*argv, cwd):
    env = {**os.environ, "KIT_CASES": "third_case.loaders", "PYTHONPATH": f"{HERE}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, "-m", "kit", *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def third_case(monkeypatch):
    from kit.cases import registry

    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv("KIT_CASES", "third_case.loaders")
    yield registry.get("tabular")
    registry._CASES.pop("tabular", None)  # the next test registers it afresh
    registry._LOADED.discard("third_case.loaders")
    sys.modules.pop("third_case.loaders", None)


def test_third_case_is_three_small_files():
    assert sum(len(f.read_text().splitlines()) for f in FILES) < 150


@pytest.mark.slow
def test_third_case_samples_bench_and_doctor_on_the_command_line(tmp_path):
    r = _kit("samples", "--help", cwd=tmp_path)
    assert r.returncode == 0 and "tabular" in r.stdout, r.stderr
    r = _kit("samples", "tabular", "--out", str(tmp_path / "t"), "--tables", "3", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    csv = Path(r.stdout.strip().splitlines()[-1])
    assert csv == tmp_path / "t" / "index.csv" and len(pd.read_csv(csv)) == 48
    r = _kit("bench", "tabular", "--data", str(csv), "--rounds", "1", "--json", str(tmp_path / "b.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = json.loads((tmp_path / "b.json").read_text())["rows"]
    assert {row["variant"] for row in rows} == {"python", "in_memory"}
    assert all(row["examples_per_s"] > 0 for row in rows)
    r = _kit("doctor", "--index", str(csv), "--max-seconds", "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "verdict:" in r.stdout and "from_generator" in r.stdout  # its default variant: the Python generator


def test_third_case_in_the_compare_configurations_and_the_explorer(third_case):
    from kit.notebook import explorer
    from kit.timing import epoch_model
    from kit.timing import epoch_model as compare

    rates = pd.DataFrame([
        {"case": "tabular", "kind": "loader", "variant": "python", "examples_per_s": 50.0, "examples": 96,
         "basis": "p"},
        {"case": "tabular", "kind": "loader", "variant": "in_memory", "examples_per_s": 5e4, "examples": 96,
         "basis": "m"},
        {"case": "tabular", "kind": "compute", "variant": "mlp", "replicas": 1, "per_replica_examples_per_s": 900.0,
         "efficiency": 1.0, "basis": "c"},
    ])
    configs = compare.configurations(rates)
    assert set(configs["variant"]) == {"python", "in_memory"} and set(configs["model"]) == {"mlp"}
    scale = compare.user_scale()
    assert scale["tabular"] == {"examples": 10_000, "replicas": 1, "global_batch": 8}
    t = epoch_model.epoch_table(configs, examples=10_000, replicas=1).set_index("variant")
    assert t.loc["python", "epoch_s"] == pytest.approx(10_000 / 50) and t.loc["in_memory", "epoch_s"] == pytest.approx(
        10_000 / 900)
    ex = explorer.epoch_explorer(configs, scale=scale)
    assert "10,000 rows" in ex.figure.layout.title.text  # the case's own unit


def test_third_case_loader_through_the_registry_yields_every_row_once(third_case, tmp_path):
    import numpy as np

    csv = third_case.make_samples(tmp_path / "t", tables=2)
    for variant in third_case.variants():
        ys = np.concatenate([y.numpy() for _, y in third_case.loader(csv, variant, batch_size=5)])
        assert sorted(ys.tolist()) == sorted(pd.read_csv(csv)["target"].tolist())
