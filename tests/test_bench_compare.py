"""kit.bench.compare: configurations pair each loader with its case's model; saved comparisons."""

import pandas as pd
import pytest


def _rates():
    rows = [
        {"case": "spectrogram", "kind": "loader", "variant": "generator", "examples_per_s": 7.0, "basis": "g"},
        {"case": "spectrogram", "kind": "loader", "variant": "feature_cache", "examples_per_s": 2e5, "basis": "f"},
        {"case": "segmentation", "kind": "loader", "variant": "sequence", "examples_per_s": 17.0, "basis": "s"},
    ]
    for model, rate in (("backbone+head", 300.0), ("head", 80_000.0)):
        rows.append({"case": "spectrogram", "kind": "compute", "variant": model, "replicas": 1,
                     "per_replica_examples_per_s": rate, "efficiency": 1.0, "basis": f"{model} x1"})
        rows.append({"case": "spectrogram", "kind": "compute", "variant": model, "replicas": 2,
                     "per_replica_examples_per_s": rate * 0.8, "efficiency": 0.8, "basis": f"{model} x2"})
    rows.append({"case": "segmentation", "kind": "compute", "variant": "unet", "replicas": 1,
                 "per_replica_examples_per_s": 5.0, "efficiency": 1.0, "basis": "unet"})
    return pd.DataFrame(rows)


def test_configurations_pair_each_loader_with_its_cases_model():
    from kit.timing import epoch_model as compare

    c = compare.configurations(_rates()).set_index("variant")
    assert c.loc["generator", "model"] == "backbone+head" and c.loc["generator", "compute_rate"] == 300.0
    assert c.loc["feature_cache", "model"] == "head" and c.loc["feature_cache", "compute_rate"] == 80_000.0
    gen = c.loc["generator", "scaling"]  # measured 0.8 at 2 replicas; 1 at one; Amdahl beyond
    assert gen.efficiency(1) == 1.0 and gen.efficiency(2) == 0.8
    assert gen.efficiency(8) == pytest.approx(1 / (1 + 0.25 * 7))  # 1/0.8 - 1 = 0.25 per extra replica
    assert gen.basis(2).startswith("measured") and gen.basis(8).startswith("assumed: Amdahl")
    seq = c.loc["sequence", "scaling"]  # the U-Net was measured at one replica only: linear, assumed
    assert c.loc["sequence", "model"] == "unet" and seq.efficiency(4) == 1.0 and seq.basis(4).startswith("assumed")
    assert c.loc["generator", "loader_basis"] == "g" and c.loc["generator", "compute_basis"] == "backbone+head x1"
    half = compare.configurations(_rates(), efficiency=0.5)["scaling"]
    assert all(s.efficiency(1) == 1.0 and s.efficiency(2) == 0.5 and s.efficiency(8) == 0.5 for s in half)


def test_saved_comparison_skips_fast_runs_and_other_machines(tmp_path):
    from kit import results
    from kit.timing import epoch_model as compare

    ledger = tmp_path / "results.jsonl"
    here = {"host": "here", "cpus": 2}
    results.append(_rates(), bench="compare", machine=here, run_id="full", extra={"fast": False}, file=ledger)
    results.append(_rates(), bench="compare", machine=here, run_id="quick", extra={"fast": True}, file=ledger)
    results.append(_rates(), bench="compare", machine={"host": "there"}, run_id="other", file=ledger)
    df = results.load(ledger)
    got = compare.saved(df, results.machine_label(here))
    assert set(got["run_id"]) == {"full"} and len(got) == len(_rates())
    assert compare.saved(df.iloc[:0]).empty
    assert compare.saved(df, "nobody").empty
