"""kit.bench.transfer: ``python -m kit bench transfer`` on tiny data."""

import json

import pytest

from kit import samples


@pytest.mark.slow
def test_bench_transfer_command(tmp_path):
    from kit.cli import main

    csv = samples.make_spectrogram(tmp_path / "d", files=2, frames_per_file=40, seed=1)
    out = tmp_path / "r.json"
    rc = main(["bench", "transfer", "--data", str(csv), "--frames", "64", "--alpha", "0.25",
               "--batch-size", "16", "--batches", "1", "--rounds", "1", "--head-epochs", "1",
               "--no-progress", "--json", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["bench"] == "transfer" and res["frames"] == 64
    fastest = res["fastest_loader"]
    assert fastest in ("memmap", "in_memory")
    rows = {r["variant"]: r for r in res["rows"]}
    assert set(rows) == {"generator", fastest, "feature_cache", "extraction"}
    assert rows["generator"]["examples"] == 16 and rows["feature_cache"]["examples"] == 64
    assert rows["extraction"]["examples"] == 64 and rows["extraction"]["x_generator"] is None
    assert rows["generator"]["x_generator"] == 1.0
    for r in rows.values():
        assert r["epoch_s_1000000"] == pytest.approx(1e6 / r["examples_per_s"])
    assert set(res["met"]) == {"c_epoch_s", "c_over_a", "c_over_b"}
    assert main(["bench", "transfer", "--data", str(csv), "--frames", "500", "--alpha", "0.25"]) == 2
