"""kit.bench.segmentation: ``python -m kit bench segmentation`` on tiny data, and its per-stage profile."""

import json

import numpy as np
import pytest


@pytest.mark.slow
def test_bench_runs_on_tiny_data(data, tmp_path, capsys):
    from kit.cli import main

    out = tmp_path / "bench.json"
    assert main(["bench", "segmentation", "--data", str(data / "index.csv"), "--size", "64", "--batch-size", "2",
                 "--rounds", "1", "--batches", "2", "--seconds", "0.2", "--slow-seconds", "0.2",
                 "--variants", "sequence,tfdata_tuned,class_index", "--workdir", str(tmp_path / "w"),
                 "--json", str(out)]) == 0
    # The class_index store (built, or found from an earlier run) read into the page cache before timing.
    assert "read into the page cache: class_index store" in capsys.readouterr().out
    res = json.loads(out.read_text())
    assert res["bench"] == "segmentation" and [r["variant"] for r in res["rows"]] == [
        "sequence", "tfdata_tuned", "class_index"]
    for r in res["rows"]:
        assert r["examples_per_s"] > 0 and "x_sequence" in r and "epoch_s_420" in r
    assert res["rows"][0]["x_sequence"] == 1.0
    from kit.segmentation.profile import pipeline_costs, stage_costs

    prof = stage_costs(data / "index.csv", pairs=2, size=64, repeat=1)
    assert set(prof["library"]) == {"NumPy/OpenCV", "TensorFlow"} and (prof["ms_per_pair"] >= 0).all()
    assert len(prof) == 12
    sums = pipeline_costs(prof)
    assert list(sums["variant"]) == ["sequence", "tfdata_naive", "tfdata_tuned"]
    assert sums["colour_loop_ms"][0] > 0 and sums["colour_loop_ms"][2] == 0  # tiny data: TF stages may round to 0
    assert np.allclose(sums["pairs_per_s_one_core"], 1e3 / sums["ms_per_pair"])
