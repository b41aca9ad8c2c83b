"""kit.timing: measure, projection, compare, StepTimer."""

import time

import numpy as np
import pandas as pd
import pytest

from kit import timing


def sleepy(batches, delay, batch_size=8, clock=time):
    """A source with a known latency per batch: the analytic rate is batch_size / delay."""
    def gen():
        for i in range(batches):
            clock.sleep(delay)
            yield np.full((batch_size, 3), i, np.float32), np.full(batch_size, i)
    return gen


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
    monkeypatch.setattr(timing, "time", c)
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
    timing.add_ratios(df, ["a"])
    assert list(df["x_a"]) == [1.0, 3.0]


# --------------------------------------------------------------------------- StepTimer


def _recording_model():
    """A model whose train step adds up what it was fed, to check what reached it."""
    import keras
    import tensorflow as tf

    class Recorder(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)
            self.total = tf.Variable(0.0, trainable=False, dtype=tf.float64)
            self.count = tf.Variable(0, trainable=False, dtype=tf.int64)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            x, y = data
            self.total.assign_add(tf.reduce_sum(tf.cast(x, tf.float64)))
            self.count.assign_add(tf.cast(tf.shape(x)[0], tf.int64))
            return {"seen": self.count}

    m = Recorder()
    m.compile("sgd")
    m(np.zeros((1, 3), np.float32))
    return m


def test_step_timer_attributes_input_latency_to_waiting():
    model = _recording_model()
    timer = timing.StepTimer()
    model.fit(timer.wrap(sleepy(6, 0.03)), epochs=2, callbacks=[timer], verbose=0)
    steps = timer.steps()
    assert list(steps.columns) == ["epoch", "step", "steps", "step_s", "wait_s", "compute_s", "examples", "hook_s"]
    assert (steps["steps"] == 1).all() and (steps["examples"] == 8).all()
    assert (steps["hook_s"] >= 0).all() and (steps["hook_s"] < steps["wait_s"]).all()
    assert len(steps) == 12 and list(steps["epoch"]) == [0] * 6 + [1] * 6
    assert (steps["wait_s"] >= 0.029).all()
    assert (steps["step_s"] >= steps["wait_s"]).all()
    epochs = timer.epochs()
    assert list(epochs["steps"]) == [6, 6]
    # The first epoch's first step also traces the train function (long on a loaded machine).
    assert epochs["input_share"].iloc[-1] > 0.5 and (epochs["input_share"] <= 1).all()
    # Every batch reached the model exactly once per epoch: sum of i * 8 * 3 over i < 6.
    assert int(model.count.numpy()) == 2 * 6 * 8
    assert model.total.numpy() == pytest.approx(2 * sum(i * 8 * 3 for i in range(6)))


def test_step_timer_delivers_tf_data_with_partial_last_batch():
    import tensorflow as tf

    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    ds = tf.data.Dataset.from_tensor_slices((x, np.zeros(10))).batch(4)
    model = _recording_model()
    timer = timing.StepTimer()
    model.fit(timer.wrap(ds), epochs=3, callbacks=[timer], verbose=0)
    assert int(model.count.numpy()) == 30
    assert model.total.numpy() == pytest.approx(3 * x.sum())
    assert list(timer.epochs()["steps"]) == [3, 3, 3]


def test_step_timer_without_wrap_records_steps_only():
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((np.ones((8, 3), np.float32), np.zeros(8))).batch(4)
    model = _recording_model()
    timer = timing.StepTimer()
    model.fit(ds, epochs=1, callbacks=[timer], verbose=0)
    assert len(timer.steps()) == 2
    assert timer.steps()["wait_s"].isna().all()
    assert timer.epochs()["input_share"].isna().all()
    assert timer.epochs()["examples"].isna().all()  # not counted without wrap


def test_fit_times_each_epoch_and_counts_examples():
    model = _recording_model()
    df = timing.fit(model, sleepy(6, 0.02), epochs=2, epoch_examples=1000)
    assert list(df["epoch"]) == [1, 2] and list(df["steps"]) == [6, 6] and list(df["examples"]) == [48, 48]
    assert list(df.columns[:6]) == ["epoch", "steps", "examples", "seconds", "examples_per_s", "input_share"]
    assert (df["seconds"] >= df["step_s"]).all() and (df["step_s"] >= 6 * 0.02).all()
    assert df["input_share"].iloc[-1] > 0.5  # the first epoch also traces the train step
    assert df["examples_per_s"].tolist() == pytest.approx((df["examples"] / df["seconds"]).tolist())
    assert df["epoch_s_1000"].tolist() == pytest.approx((1000 / df["examples_per_s"]).tolist())
    assert df["seen"].tolist() == [48, 96]  # the model's own logged metric, per epoch
    assert int(model.count.numpy()) == 96


def test_fit_without_wait_takes_the_count_from_the_loader(spec_index):
    import keras

    from kit.models import small_model
    from kit.spectrogram import make_loader

    model = small_model(spec_index.frame_shape, spec_index.num_classes, head_only=True)
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=2)
    loader = make_loader("in_memory", spec_index, batch_size=10)  # 96 frames: 9 batches of 10, one of 6
    with pytest.raises(ValueError, match="steps_per_execution=1"):
        timing.fit(model, loader)
    df = timing.fit(model, loader, wait=False, epochs=2)
    assert list(df["steps"]) == [10, 10] and list(df["examples"]) == [96, 96]
    assert df["input_share"].isna().all()
    df = timing.fit(model, loader, wait=False, steps_per_epoch=4)
    assert list(df["examples"]) == [40]


def test_keras_private_pydataset_adapter_is_where_kit_expects():
    """kit.timing reads a PyDataset through Keras's private PyDatasetAdapter: a Keras upgrade
    that moves it fails here, by name, rather than deep inside a measurement."""
    import keras

    adapter = timing.pydataset_adapter()
    for method in ("on_epoch_begin", "get_numpy_iterator", "on_epoch_end"):
        assert callable(getattr(adapter, method, None)), f"Keras {keras.__version__}: PyDatasetAdapter.{method} moved"

    class Two(keras.utils.PyDataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return np.full((3, 2), i, np.float32), np.zeros(3)

    got = [int(x[0, 0]) for x, _ in timing.iterate(Two())]
    assert got == [0, 1]


def test_importing_timing_and_plots_does_not_import_tensorflow():
    import subprocess
    import sys

    code = ("import sys, kit, kit.timing, kit.plots, kit.samples, kit.store; "
            "print('tensorflow' in sys.modules, 'keras' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
