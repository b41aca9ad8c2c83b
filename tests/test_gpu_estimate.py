"""kit.timing.gpu: the user's model on the user's GPUs, measured or assumed, beside this machine."""

import math

import pandas as pd
import pytest

from kit import plots, timing
from kit.timing import gpu


def _configs():
    measured = timing.Scaling.measured({2: 0.55}, source="cpu")
    return pd.DataFrame([
        {"case": "spectrogram", "variant": "generator", "model": "backbone+head", "loader_rate": 2_000.0,
         "compute_rate": 300.0, "scaling": measured, "loader_basis": "l", "compute_basis": "c"},
        {"case": "spectrogram", "variant": "memmap", "model": "backbone+head", "loader_rate": 60_000.0,
         "compute_rate": 300.0, "scaling": measured, "loader_basis": "l", "compute_basis": "c"},
        {"case": "spectrogram", "variant": "features", "model": "head", "loader_rate": 200_000.0,
         "compute_rate": 30_000.0, "scaling": measured, "loader_basis": "l", "compute_basis": "c"},
    ])


def test_assumed_rate_is_peak_share_over_flops_with_its_basis():
    r = gpu.assumed(137e6, "V100", utilisation=(0.1, 0.4))
    assert r.low == pytest.approx(0.1 * 15.7e12 / 137e6) and r.high == pytest.approx(0.4 * 15.7e12 / 137e6)
    assert r.per_replica == pytest.approx(math.sqrt(r.low * r.high))
    assert r.kind == "assumed" and "V100" in r.gpu
    assert "assumed" in r.basis and "137 MFLOPs" in r.basis and "15.7 TFLOP/s" in r.basis and "10%-40%" in r.basis
    with pytest.raises(ValueError, match="unknown GPU class 'X1'"):
        gpu.assumed(1e6, "X1")
    with pytest.raises(ValueError, match="utilisation"):
        gpu.assumed(1e6, utilisation=(0.5, 0.2))
    with pytest.raises(ValueError, match="flops_per_example"):
        gpu.assumed(0)


def _ledger(devices):
    t = pd.Timestamp("2026-12-04 10:00", tz="UTC")
    rows = [{"bench": "compare", "kind": "compute", "case": "spectrogram", "variant": "backbone+head",
             "devices": devices, "replicas": n, "per_replica_examples_per_s": rate, "round_min": rate * n * 0.9,
             "round_max": rate * n * 1.1, "efficiency": eff, "run_id": "r1", "time": t, "machine_label": "gpu-box",
             "basis": "300 examples trained", "fast": False}
            for n, rate, eff in ((1, 20_000.0, None), (2, 19_000.0, 0.95))]
    return pd.DataFrame(rows)


def test_a_device_run_in_the_ledger_replaces_the_assumption():
    r = timing.gpu_rate(137e6, _ledger("GPU"))
    assert r.kind == "measured" and r.per_replica == 20_000.0 and r.efficiency == 0.95
    assert r.low == pytest.approx(18_000.0) and r.high == pytest.approx(22_000.0)
    assert "gpu-box" in r.basis and "run r1" in r.basis
    # a CPU run of the same bench is this machine's compute, not a GPU's: the estimate stays assumed
    assert timing.gpu_rate(137e6, _ledger("CPU (simulated)")).kind == "assumed"
    assert timing.gpu_rate(137e6, None).kind == "assumed"
    # a fast-mode device run demonstrates the path, it measures nothing at scale
    assert timing.gpu_rate(137e6, _ledger("GPU").assign(fast=True)).kind == "assumed"


def test_scenarios_put_the_users_gpus_first_and_keep_this_machines_loaders():
    configs = _configs()
    rates = {"backbone+head": gpu.assumed(137e6), "head": gpu.assumed(30e3)}
    s = timing.scenarios(configs, rates, examples=1_000_000, replicas=2)
    assert list(dict.fromkeys(s["scenario"]))[1] == timing.THIS_MACHINE
    user = s[s["scenario"] == s["scenario"].iloc[0]].set_index("variant")
    mine = s[s["scenario"] == timing.THIS_MACHINE].set_index("variant")
    assert "2 GPUs" in user["scenario"].iloc[0] and "assumed" in user["scenario"].iloc[0]
    # the loaders are the same on both sides; only the compute differs
    assert (user["loader_rate"] == mine["loader_rate"]).all()
    # this CPU: the backbone bounds every loader feeding it; the GPUs leave the generator input-bound
    assert (mine.loc[["generator", "memmap"], "bound"] == "compute").all()
    assert user.loc["generator", "bound_range"] == "input"
    assert user.loc["generator", "epoch_s"] == pytest.approx(1_000_000 / 2_000.0)
    # memmap: 60,000 frames/s against 2 x 0.9 x (11,460-45,839): the range straddles the loader
    assert user.loc["memmap", "bound_range"] == "input or compute"
    assert user.loc["memmap", "epoch_min_s"] < user.loc["memmap", "epoch_s"] < user.loc["memmap", "epoch_max_s"]
    assert user.loc["memmap", "efficiency_kind"] == "assumed" and user.loc["memmap", "efficiency"] == 0.9
    assert (mine["epoch_min_s"] == mine["epoch_s"]).all()
    with pytest.raises(ValueError, match=r"no GPU rate for model\(s\) \['head'\]"):
        timing.on_gpus(configs, {"backbone+head": rates["backbone+head"]})


def test_the_scenario_figure_opens_on_the_users_gpus():
    rates = {"backbone+head": gpu.assumed(137e6), "head": gpu.assumed(30e3)}
    s = timing.scenarios(_configs(), rates, examples=1_000_000, replicas=2)
    fig = plots.epoch_scenarios(s)
    shown = [t for t in fig.data if t.visible is True]
    assert shown and all(t.name.startswith("the user's 2 GPUs") for t in shown)
    assert {b.label for b in fig.layout.updatemenus[0].buttons} == {s["scenario"].iloc[0], timing.THIS_MACHINE, "both"}
    # whiskers on the assumed side only
    assert any(t.error_x.visible for t in shown)
    assert not any(t.error_x.visible for t in fig.data if t.name.startswith(timing.THIS_MACHINE))
