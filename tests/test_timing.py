"""kit.timing: measure, projection, compare, StepTimer."""

import numpy as np
import pandas as pd
import pytest
from helpers import sleepy

from kit import timing
from kit.timing import rates
from kit.timing.rates import add_ratios


class VirtualClock:
    """Stands in for the ``time`` module inside ``kit.timing``: time passes only when a
    source sleeps on it, so the rates ``measure`` computes are exact whatever else runs on
    the machine (these tests check the arithmetic and the bookkeeping, not the machine)."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    c = VirtualClock()
    monkeypatch.setattr(rates, "time", c)
    return c


def test_measure_matches_a_known_latency(clock):
    m = timing.measure(sleepy(14, 0.02, clock=clock), warmup=2)
    assert m.batches == 12 and m.examples == 96
    assert m.examples_per_s == pytest.approx(8 / 0.02), m
    assert m.latency_p50_ms == pytest.approx(20)
    assert m.latency_p95_ms >= m.latency_p50_ms
    assert m.peak_rss_mb > 0 and m.wall_s > 0


def test_measure_num_batches_and_max_seconds():
    m = timing.measure(sleepy(100, 0.001), num_batches=5, warmup=0)
    assert m.batches == 5 and m.examples == 40
    m = timing.measure(sleepy(1000, 0.01), warmup=0, max_seconds=0.05)
    assert 1 <= m.batches < 20


def test_measure_works_on_tf_data_pydataset_and_generators():
    import keras
    import tensorflow as tf

    x = np.arange(50, dtype=np.float32).reshape(25, 2)
    ds = tf.data.Dataset.from_tensor_slices((x, np.arange(25))).batch(4)

    class Seq(keras.utils.PyDataset):
        def __len__(self):
            return 7

        def __getitem__(self, i):
            n = 4 if i < 6 else 1
            return np.zeros((n, 2), np.float32), np.zeros(n)

    assert timing.measure(ds, warmup=0).examples == 25
    assert timing.measure(ds, warmup=0).batches == 7
    assert timing.measure(Seq(), warmup=1).examples == 21
    assert timing.measure(lambda: iter([(x[:4], 0), (x[4:9], 0)]), warmup=0).examples == 9
    assert timing.measure((b for b in [(x[:4], 0), (x[4:9], 0)]), warmup=0).examples == 9


@pytest.mark.parametrize("kwargs, match", [
    (dict(num_batches=0), "num_batches must be a positive integer, got 0"),
    (dict(warmup=-1), "warmup must be a non-negative integer, got -1"),
    (dict(max_seconds=0), "max_seconds must be positive"),
])
def test_measure_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        timing.measure(sleepy(3, 0), **kwargs)


def test_measure_rejects_sources_too_short():
    with pytest.raises(ValueError, match="warm-up"):
        timing.measure(sleepy(1, 0), warmup=2)


def test_projection_states_its_basis():
    p = timing.project_epoch(250.0, 1_000_000, measured_examples=5_000)
    assert p.seconds == pytest.approx(4000.0)
    assert p.hours == pytest.approx(4000 / 3600)
    assert "5,000 examples measured at 250.0/s" in p.basis
    assert "1,000,000" in p.basis
    assert str(p).startswith("66.7 min per epoch")
    with pytest.raises(ValueError, match="examples_per_s must be positive"):
        timing.project_epoch(0, measured_examples=1)


def test_compare_interleaves_and_reports_ratios(clock):
    calls = []

    def tracked(name, delay):
        def make():
            calls.append(name)
            return sleepy(30, delay, clock=clock)()
        return make

    df = timing.compare({"slow": tracked("slow", 0.02), "fast": tracked("fast", 0.01)},
                        baselines="slow", num_batches=5, warmup=1, rounds=3, epoch_examples=(1000,))
    assert calls == ["slow", "fast"] * 3  # interleaved rounds
    assert list(df["variant"]) == ["slow", "fast"]
    assert {"examples_per_s", "x_slow", "epoch_s_1000", "latency_p50_ms", "peak_rss_mb"} <= set(df.columns)
    assert df.loc[0, "x_slow"] == 1.0
    assert df.loc[1, "x_slow"] == pytest.approx(2.0)
    assert df.loc[1, "epoch_s_1000"] == pytest.approx(1000 / df.loc[1, "examples_per_s"])
    assert (df["examples"] == 5 * 8 * 3).all()


def test_compare_rejects_unknown_baseline():
    with pytest.raises(ValueError, match="baseline 'nope' is not among"):
        timing.compare({"a": sleepy(3, 0)}, baselines=["nope"])


def test_add_ratios():
    df = pd.DataFrame({"variant": ["a", "b"], "examples_per_s": [10.0, 30.0]})
    add_ratios(df, ["a"])
    assert list(df["x_a"]) == [1.0, 3.0]


def test_importing_timing_and_plots_does_not_import_tensorflow():
    import subprocess
    import sys

    code = ("import sys, kit, kit.timing, kit.plots, kit.samples, kit.store; "
            "print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
