"""kit.timing.epoch_model, against hand-computed cases: the epoch estimate, the table, the scaling
(efficiency 1 at one replica, measured where measured, assumed elsewhere), the best next change."""

import math

import pandas as pd
import pytest
from helpers import compare_rates

from kit import timing
from kit.timing import epoch_model
from kit.timing import epoch_model as compare


def test_compute_rate_from_step():
    # 128 examples in 50 ms: 2,560 examples/s on one replica.
    assert timing.compute_rate_from_step(50, 128) == pytest.approx(2560.0)
    with pytest.raises(ValueError, match="step_ms must be positive"):
        timing.compute_rate_from_step(0, 128)
    with pytest.raises(ValueError, match="batch"):
        timing.compute_rate_from_step(50, 0)


def test_the_seed_two_gpus_global_batch_256_generator_is_input_bound():
    # The user: 1,000,000 frames, 2 GPUs, global batch 256 = 128 per GPU. Their generator
    # delivers 7 frames/s. Say one GPU's step at 128 takes 50 ms: 2,560 frames/s per replica,
    # 2 x 2,560 x 0.9 = 4,608 frames/s for both. min(7, 4608) = 7 -> 1e6 / 7 s = 39.68 h.
    per_gpu = timing.compute_rate_from_step(50, 256 // 2)
    e = timing.epoch_estimate(1_000_000, loader_rate=7.0, compute_rate=per_gpu, replicas=2, efficiency=0.9,
                              loader_basis="seed: about 7 frames/s", compute_basis="50 ms at 128")
    assert e.bound == "input"
    assert e.seconds == pytest.approx(1_000_000 / 7)
    assert e.seconds / 3600 == pytest.approx(39.683, abs=1e-3)
    assert e.compute_capacity == pytest.approx(4608.0)
    assert e.headroom == pytest.approx(7 / 4608)
    assert "more GPUs will not help" in e.regime
    assert "seed: about 7 frames/s" in str(e) and "50 ms at 128" in str(e)
    # One GPU gives the same epoch: the loader bounds it.
    one = timing.epoch_estimate(1_000_000, loader_rate=7.0, compute_rate=per_gpu, replicas=1)
    assert one.seconds == e.seconds


def test_the_seed_with_a_fast_loader_becomes_compute_bound():
    # memmap at 300,000 frames/s: min(300000, 4608) = 4608 -> 1e6 / 4608 = 217.01 s.
    e = timing.epoch_estimate(1_000_000, loader_rate=300_000.0, compute_rate=2560.0, replicas=2,
                              efficiency=0.9)
    assert e.bound == "compute"
    assert e.seconds == pytest.approx(217.0139, abs=1e-3)
    assert e.examples_per_s == pytest.approx(4608.0)
    assert e.regime.startswith("compute-bound")
    # Linear scaling, 1 -> 2 replicas: 1e6/2560 = 390.625 s -> 195.3125 s.
    assert timing.epoch_estimate(1_000_000, loader_rate=3e5, compute_rate=2560.0).seconds == pytest.approx(390.625)
    assert timing.epoch_estimate(1_000_000, loader_rate=3e5, compute_rate=2560.0,
                                 replicas=2).seconds == pytest.approx(195.3125)


def test_where_the_loader_becomes_the_ceiling():
    # Loader 5,000/s, 2,000/s per replica: 1 and 2 replicas compute-bound (2,000; 4,000),
    # 3 and more input-bound at 5,000/s: 10,000 examples take 5, 2.5, 2, 2 s.
    secs = [timing.epoch_estimate(10_000, loader_rate=5000.0, compute_rate=2000.0, replicas=r).seconds
            for r in (1, 2, 3, 4)]
    assert secs == pytest.approx([5.0, 2.5, 2.0, 2.0])
    # Exactly equal rates count as compute-bound (the loader keeps up).
    assert timing.epoch_estimate(10, loader_rate=2.0, compute_rate=2.0).bound == "compute"


@pytest.mark.parametrize("kwargs, message", [
    (dict(loader_rate=0.0, compute_rate=1.0), "loader_rate must be a positive"),
    (dict(loader_rate=math.nan, compute_rate=1.0), "loader_rate must be a positive"),
    (dict(loader_rate=1.0, compute_rate=-1.0), "compute_rate must be a positive"),
    (dict(loader_rate=1.0, compute_rate=1.0, efficiency=1.5), "efficiency must be in"),
    (dict(loader_rate=1.0, compute_rate=1.0, replicas=0), "replicas must be a positive integer"),
])
def test_bad_inputs_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        timing.epoch_estimate(100, **kwargs)


def _configs():
    return pd.DataFrame({"variant": ["generator", "memmap"], "loader_rate": [7.0, 300_000.0],
                         "compute_rate": [2560.0, 2560.0]})


def test_epoch_table_matches_the_scalar_model_over_a_grid():
    t = timing.epoch_table(_configs(), examples=[1_000, 1_000_000], replicas=[1, 2, 8], efficiency=0.9)
    assert len(t) == 2 * 2 * 3
    for _, row in t.iterrows():
        e = timing.epoch_estimate(int(row["examples"]), loader_rate=row["loader_rate"],
                                  compute_rate=row["compute_rate"], replicas=int(row["replicas"]), efficiency=0.9)
        assert row["epoch_s"] == pytest.approx(e.seconds)
        assert row["bound"] == e.bound
    gen = t[(t["variant"] == "generator") & (t["examples"] == 1_000_000)]
    assert gen["epoch_s"].tolist() == pytest.approx([1e6 / 7] * 3)  # flat: the loader's ceiling
    mm = t[(t["variant"] == "memmap") & (t["examples"] == 1_000_000)].set_index("replicas")
    assert mm.loc[2, "epoch_s"] == pytest.approx(217.0139, abs=1e-3)
    assert mm.loc[8, "bound"] == "compute"  # 8 x 2560 x 0.9 = 18,432 < 300,000


def test_epoch_table_compute_override_and_errors():
    t = timing.epoch_table(_configs().drop(columns="compute_rate"), examples=1000, compute_rate=100.0)
    assert t["epoch_s"].tolist() == pytest.approx([1000 / 7, 10.0])
    with pytest.raises(ValueError, match="needs a 'compute_rate' column"):
        timing.epoch_table(_configs().drop(columns="compute_rate"), examples=1000)
    bad = _configs()
    bad.loc[1, "loader_rate"] = 0
    with pytest.raises(ValueError, match="loader_rate must be a positive rate; row 1"):
        timing.epoch_table(bad, examples=1000)


def test_best_next_change():
    t = timing.epoch_table(_configs(), examples=1_000_000, replicas=[1, 2])
    current = t.index[(t["variant"] == "generator") & (t["replicas"] == 2)][0]
    best = timing.best_next_change(t, current)
    assert best["change"] == "loader generator -> memmap"  # same replicas, the faster loader
    assert best["gain"] == pytest.approx((1e6 / 7) / (1e6 / 5120))
    fastest = t["epoch_s"].idxmin()
    assert timing.best_next_change(t, fastest) is None


def test_at_one_replica_the_epoch_is_examples_over_the_slower_rate():
    configs = compare.configurations(compare_rates())
    t = epoch_model.epoch_table(configs, examples=1_000_000, replicas=1)
    assert (t["efficiency"] == 1.0).all() and (t["efficiency_kind"] == "exact").all()
    for r in t.itertuples():
        assert r.epoch_s == pytest.approx(1_000_000 / min(r.loader_rate, r.compute_rate), rel=1e-9)


def test_efficiency_is_measured_where_measured_and_assumed_elsewhere():
    s = epoch_model.Scaling.measured({1: 1.0, 2: 0.536})
    assert s.efficiency(1) == 1.0 and s.efficiency(2) == 0.536
    serial = 1 / 0.536 - 1  # Amdahl through one point: 1/e - 1 = s (n - 1)
    assert s.serial == pytest.approx(serial)
    assert s.efficiency(8) == pytest.approx(1 / (1 + serial * 7))
    assert list(s.kind([1, 2, 8])) == ["exact", "measured", "assumed"]
    assert "Amdahl" in s.basis(8) and "2 replicas" in s.basis(8)
    # two measured points: the least-squares serial share, each measured point kept as measured
    two = epoch_model.Scaling.measured({2: 0.9, 4: 0.7})
    x, y = [1, 3], [1 / 0.9 - 1, 1 / 0.7 - 1]
    assert two.serial == pytest.approx((x[0] * y[0] + x[1] * y[1]) / (x[0] ** 2 + x[1] ** 2))
    assert two.efficiency(4) == 0.7 and two.efficiency(3) == pytest.approx(1 / (1 + two.serial * 2))
    # a superlinear measurement counts as linear; nothing measured above one: linear, assumed
    assert epoch_model.Scaling.measured({2: 1.2}).efficiency(8) == 1.0
    assert epoch_model.Scaling.measured({1: 1.0}).basis(4).startswith("assumed: linear")
    with pytest.raises(ValueError, match="efficiency must be in"):
        epoch_model.Scaling.constant(1.5)
