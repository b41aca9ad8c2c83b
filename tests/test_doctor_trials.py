"""The doctor's fix trials (kit/doctor/diagnosis.py): a cache's first epoch gets the time it needs, and a
fix timed on the loader alone predicts the fit by what the fix does (less work, or the same work spread);
and the verdict's real fit on a PyDataset includes an epoch's start."""

import math
import time
from dataclasses import replace

import keras
import numpy as np
import pytest
import tensorflow as tf

from kit.doctor import diagnosis, report, rewrite, trial
from kit.doctor.candidates import Candidate
from kit.doctor.findings import Cap, Measured


def _measured(loader=290.0, ceiling=204.0, fit=137.0) -> Measured:
    """A loader alone faster than the model's ceiling, and a fit short of both (they share the cores)."""
    return Measured(batch_size=32, loader_rate=loader, cores=2, cores_busy=1.4, parallel_gain=1.0,
                    parallel_basis="", fit_rate=fit, ceiling_rate=ceiling, cap=Cap(ceiling / fit, "headroom"))


def _tried(warm_epoch: bool, loader_gain: float) -> diagnosis.Tried:
    rw = rewrite.Rewrite("no_cache" if warm_epoch else "serial_map", "a change", ".cache()", warm_epoch=warm_epoch)
    cand = Candidate(rw, "evidence", ordered=False, random=False)
    return diagnosis.Tried(cand, loader=trial.Gain(loader_gain, 0.9 * loader_gain, 1.1 * loader_gain, 3))


def test_a_cache_timed_on_the_loader_alone_predicts_the_cpu_it_frees_for_the_step():
    """The loader alone outruns the ceiling, yet the fit is 1.49x short of it (the loader takes the step's
    CPU): a cache 38x cheaper gives back most of that; a parallel map 38x faster on the loader alone,
    doing the same work, cannot make a step that does not wait go faster."""
    m = _measured()
    cache = diagnosis._findings(_tried(True, 38.0), m, {})[0]
    assert cache.status == "predicted" and cache.measured_on == "the loader alone"
    assert cache.expected_gain == pytest.approx(m.cheaper_input(38.0))
    assert 1.4 < cache.expected_gain <= m.headroom
    assert "the loader taking less of the CPU it shares with the step" in cache.basis
    assert cache.gain_low == pytest.approx(m.cpu_shared(0.9 * 38.0)) and cache.gain_high <= m.headroom
    spread = diagnosis._findings(_tried(False, 38.0), m, {})[0]
    assert spread.expected_gain == pytest.approx(1.0) and spread.status == "no gain"
    # Where the loader alone is the slower one, both follow it (up to the headroom).
    slow = _measured(loader=100.0, ceiling=204.0, fit=95.0)
    assert diagnosis._findings(_tried(False, 1.5), slow, {})[0].expected_gain == pytest.approx(1.5)


def test_a_cache_beside_a_step_that_leaves_no_core_free_is_expected_at_the_cpu_shared_bound():
    """A loader that waits (on a network disk), 40x short of the model's ceiling, cached to run 60x faster:
    where the step keeps 1.2 of 2 cores busy, the cached loader runs on the step's cores, so the doctor
    expects H / (1 + (H - 1) / g) (about 24.5x), not the whole headroom; the range reaches the headroom."""
    waits = replace(_measured(loader=360.0, ceiling=14400.0, fit=360.0), cores_busy=0.2)
    busy = replace(waits, model_cores=1.2)
    free = replace(waits, model_cores=0.5)
    assert busy.shares_cpu and not free.shares_cpu and not waits.shares_cpu
    shared = diagnosis._findings(_tried(True, 60.0), busy, {})[0]
    assert shared.expected_gain == pytest.approx(40 / (1 + 39 / 60))
    assert shared.gain_low == pytest.approx(40 / (1 + 39 / 54)) and shared.gain_high == pytest.approx(40.0)
    assert "the step keeps 1.20 of 2 cores busy, so they share it" in shared.basis
    # a step with a core to spare: the step waiting less, up to the headroom
    assert diagnosis._findings(_tried(True, 60.0), free, {})[0].expected_gain == pytest.approx(40.0)


def test_a_fix_timed_on_the_loader_alone_is_reported_as_predicted_for_the_fit_not_measured_end_to_end():
    m = _measured()
    found = diagnosis._findings(_tried(True, 38.0), m, {})[0]
    line = report._what(found)
    assert "predicted for the fit" in line and "the loader alone measured 38.0x" in line
    assert "measured end to end" not in line
    # The JSON says the same as the line: predicted, and on what the fix was measured; Diagnosis.fixed applies it.
    row = found.row()
    assert row["status"] == "predicted" and row["measured_on"] == "the loader alone" and row["loader_gain"] == 38.0
    assert found.applied and row["list"] == "findings"
    timed = replace(found, status="measured", measured_on="",
                    basis="measured: the fit on the fixed pipeline over the original, interleaved")
    assert "measured end to end" in report._what(timed)
    with pytest.raises(ValueError, match="measured_on"):
        replace(found, status="measured")  # a gain measured on the fit is not measured on a part


def test_a_gain_measured_on_a_part_ranks_between_one_measured_on_the_fit_and_a_pure_prediction():
    from kit.doctor.findings import Finding, table

    fit = Finding("serial_map", "e", 1.2, "measured: the fit", status="measured")
    part = Finding("no_cache", "e", 1.5, "measured on the loader alone", status="predicted",
                   measured_on="the loader alone", loader_gain=3.0)
    guess = Finding("python_in_pipeline", "e", 1.9, "predicted", status="predicted")
    assert list(table([guess, part, fit])["code"]) == ["serial_map", "no_cache", "python_in_pipeline"]


def test_a_cache_whose_first_epoch_takes_longer_than_half_its_share_is_still_filled_and_timed(monkeypatch):
    """An epoch predicted (from the loader's rate) to take longer than half the candidate's share gets
    that time where a third of the budget left covers it; then its A/B still runs."""
    assert diagnosis._fill_seconds(300, 100.0) == pytest.approx(4.5)
    assert diagnosis._fill_seconds(None, 100.0) == 0.0 and diagnosis._fill_seconds(300, math.nan) == 0.0
    given = []
    monkeypatch.setattr(trial, "warm", lambda ds, seconds: given.append(seconds) or True)
    monkeypatch.setattr(trial, "same_elements", lambda *a, **k: trial.Check(True, "checked"))
    monkeypatch.setattr(trial, "ab", lambda *a, **k: trial.Gain(2.0, 1.9, 2.1, 3))
    ds = tf.data.Dataset.range(8).map(lambda x: x * 2)
    rw = rewrite.Rewrite("no_cache", "cache", ".cache()", post=lambda d: d.cache(), warm_epoch=True)
    t = diagnosis.Tried(Candidate(rw, "evidence", ordered=False, random=False))
    diagnosis._check_and_time(t, ds, diagnosis.Budget(30.0), each=2.0, fill=4.5)
    assert given == [pytest.approx(4.5)] and t.loader is not None and t.outcome == "gain"
    given.clear()
    t = diagnosis.Tried(Candidate(rw, "evidence", ordered=False, random=False))
    diagnosis._check_and_time(t, ds, diagnosis.Budget(6.0), each=2.0, fill=4.5)  # a third of 6 s: not covered
    assert given == [pytest.approx(1.0)]


def test_steps_per_execution_is_not_started_where_its_least_cost_is_over_twice_its_share(monkeypatch):
    """Two copies compiled as long as the first took, and one execution of 16 steps a side in each of 3
    rounds: over twice its share of the budget, it is skipped and said so; under it, it is measured."""
    called = []
    monkeypatch.setattr(diagnosis, "steps_per_execution_gain",
                        lambda *a, **k: called.append(k) or (1.0, [1.0, 1.0, 1.0]))
    fits = {"ceiling_examples_per_s": 32 / 0.02, "fit_examples_per_s": 1000.0}  # a 20 ms step of 32
    budget = diagnosis.Budget(30.0)  # its share: 5% of 30 s
    assert diagnosis._per_step(object(), None, 32, fits, 5000.0, budget, 30.0, compile_s=2.0) == []
    assert not called and budget.skipped == ["steps_per_execution on the compute ceiling (about 6 s at least)"]
    diagnosis._per_step(object(), None, 32, fits, 5000.0, diagnosis.Budget(30.0), 30.0, compile_s=0.2)
    assert called and called[0]["step_s"] == pytest.approx(0.02)


def test_steps_per_execution_measured_on_the_ceiling_is_reported_as_predicted_for_the_fit():
    from kit.doctor import rules

    fits = {"ceiling_examples_per_s": 30_000.0, "fit_examples_per_s": 29_000.0}
    found = rules.steps_per_execution(fits, 150_000.0, 16, 3.0, [2.8, 3.0, 3.2])[0]
    line = report._what(found)
    assert "predicted for the fit" in line and "the compute ceiling measured 3.00x" in line
    assert "measured end to end" not in line
    assert found.status == "predicted" and found.measured_on == "the compute ceiling" and found.applied
    bounded = rules.steps_per_execution(fits, 60_000.0, 16, 3.0, [2.8, 3.0, 3.2])[0]  # the loader bounds it: 2x
    assert bounded.expected_gain == pytest.approx(2.0) and "the compute ceiling 3.0x" in report._gain_text(bounded)


class _SlowEpochStart(keras.utils.PyDataset):
    """Six fast batches an epoch; the first of each epoch takes 0.4 s (as a new iterator's can)."""

    def __init__(self):
        super().__init__()

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 0:
            time.sleep(0.4)
        return np.ones((4, 3), "float32"), np.ones((4, 1), "float32")


def test_a_pydatasets_fit_round_goes_on_until_its_timed_steps_include_an_epochs_start():
    from kit.doctor import measure, verdicts

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    short = measure.plain_fit(model, _SlowEpochStart(), batch_size=4, max_seconds=0.01, min_steps=1)
    assert short["epoch_starts"] == 0  # stopped within the first epoch
    whole = measure.plain_fit(model, _SlowEpochStart(), batch_size=4, max_seconds=0.01, min_steps=1,
                              epoch_start=60.0)
    assert whole["epoch_starts"] == 1 and whole["examples"] == 4 * 6  # one whole epoch, its start inside
    assert whole["seconds"] >= 0.4  # the slow first batch of the second epoch is in the timed steps
    fits = {"ceiling_examples_per_s": 100.0, "fit_examples_per_s": 50.0, "ceiling_rounds": [100.0],
            "fit_rounds": [50.0], "headroom": 2.0}
    assert "include 1 epoch start" in verdicts.verdict_basis({**fits, "fit_epoch_starts": 1})
    assert "not in the headroom" in verdicts.verdict_basis({**fits, "fit_epoch_starts": 0})
    assert "epoch start" not in verdicts.verdict_basis({**fits, "fit_epoch_starts": None})


def test_a_finite_dataset_is_fitted_epoch_by_epoch_as_the_users_fit_reads_it(monkeypatch):
    """model.fit(ds, epochs=N) gives a finite dataset a new iterator every epoch (its prefetch buffer empty
    again); with steps_per_epoch one iterator runs on. The doctor fits it the same way."""
    from kit.doctor import measure, run

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    ds = tf.data.Dataset.from_tensor_slices((np.ones((24, 3), "float32"), np.ones((24, 1), "float32"))).batch(4)
    epochs = measure.plain_fit(model, ds, batch_size=4, max_seconds=0.01, min_steps=1, epoch_start=60.0,
                               per_epoch=True)
    assert epochs["epoch_starts"] == 1 and epochs["examples"] == 4 * 6  # one whole epoch, the next one's start
    repeated = measure.plain_fit(model, ds, batch_size=4, max_seconds=0.01, min_steps=1, epoch_start=60.0)
    assert repeated["epoch_starts"] == 0  # ds.repeat(): no epochs of its own
    # diagnose: a finite dataset is read epoch by epoch unless told otherwise; an infinite one never
    seen = []
    monkeypatch.setattr(diagnosis, "measure_fits", lambda *a, **k: (seen.append(k["per_epoch"]), 1 / 0))
    for source, per_epoch in ((ds, None), (ds, False), (ds.repeat(), None)):
        with pytest.raises(ZeroDivisionError):
            diagnosis.diagnose(source, model, max_seconds=2, per_epoch=per_epoch)
    assert seen == [True, False, False]
    # doctor run: the script's fit with steps_per_epoch keeps one iterator, so per_epoch=False
    given = []
    monkeypatch.setattr(diagnosis, "diagnose", lambda *a, **k: given.append((k["per_epoch"], k["pipeline"])))
    for kwargs in ({"epochs": 3}, {"epochs": 3, "steps_per_epoch": 4}):
        run.diagnose_fit(run.Fit(model, ds, kwargs=kwargs), max_seconds=5)
    # arrays are read through Keras's own adapter, which starts a new pass whenever one ends (steps_per_epoch
    # or not), as the user's fit does; its pipeline is Keras's, not the user's: its structure is not read
    for kwargs in ({"epochs": 3}, {"epochs": 3, "steps_per_epoch": 2}):
        run.diagnose_fit(run.Fit(model, np.ones((8, 3), "float32"), np.ones((8, 1), "float32"), kwargs=kwargs),
                         max_seconds=5)
    assert given == [(None, True), (False, True), (True, False), (True, False)]


def test_a_dataset_of_unknown_length_is_counted_to_size_a_cache_and_a_repeated_one_is_not():
    """A finite pipeline whose length the graph does not say (a filter, TFRecords read through flat_map)
    with deterministic work and no cache: one epoch is counted, so the cache can be sized and tried."""
    from kit.doctor.candidates import candidates
    from kit.doctor.graph import pipeline_graph

    ds = tf.data.Dataset.range(40).filter(lambda x: x % 2 == 0).map(lambda x: tf.cast(x, tf.float32) * 2).batch(4)
    assert int(ds.cardinality()) == tf.data.UNKNOWN_CARDINALITY
    graph = pipeline_graph(ds)
    assert diagnosis._count(graph, ds, None, diagnosis.Budget(30.0), 30.0) == (20, True)
    assert "no_cache" in [c.rewrite.code for c in candidates(graph, ds, examples=20, example_bytes=4.0)]
    assert "no_cache" not in [c.rewrite.code for c in candidates(graph, ds, examples=None, example_bytes=4.0)]
    endless = ds.repeat()
    assert diagnosis._count(pipeline_graph(endless), endless, None, diagnosis.Budget(30.0), 30.0) is None
    cached = ds.cache()  # nothing left to cache, no shuffle to compare with: not counted
    assert diagnosis._count(pipeline_graph(cached), cached, None, diagnosis.Budget(30.0), 30.0) is None
    assert diagnosis._count(graph, ds, 20, diagnosis.Budget(30.0), 30.0) is None  # its length known already


def test_compare_fits_times_each_source_as_keras_reads_it_and_the_wait_apart(monkeypatch):
    """The rounds fit each source as Keras reads it (plain_fit: no pull through Python per step, which
    would serialise a fast source with the step); one short step-timed fit each gives the input share."""
    from kit.doctor import measure

    calls = {"plain": 0, "timed": 0}
    plain, timed = measure.plain_fit, measure.timed_fit

    def counting(name, fn):
        def wrapped(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return wrapped

    monkeypatch.setattr(measure, "plain_fit", counting("plain", plain))
    monkeypatch.setattr(measure, "timed_fit", counting("timed", timed))
    x = np.random.default_rng(0).standard_normal((64, 8)).astype("float32")
    y = (np.arange(64) % 2).astype("int64")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    fast = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    slow = fast.map(lambda a, b: (tf.py_function(lambda t: (time.sleep(0.01), t)[1], [a], tf.float32), b))
    slow = slow.map(lambda a, b: (tf.ensure_shape(a, (None, 8)), b))
    df = measure.compare_fits({"slow": (slow, model), "fast": (fast, model)}, baseline="slow",
                                max_seconds=1.0, rounds=2, min_steps=3)
    assert calls["plain"] == 4  # two rounds of two sources
    assert calls["timed"] == 2 + 2  # the step compiled once per source, then one share fit each
    assert list(df["variant"]) == ["slow", "fast"]
    assert (df["examples_per_s"] > 0).all() and df["input_share"].between(0, 1).all()
    assert (df["steps"] >= 2 * 3).all()  # min_steps in each of the two rounds
    row = df.set_index("variant").loc["slow"]
    assert row["x_slow"] == pytest.approx(1.0) and row["x_slow_min"] == pytest.approx(1.0)


def test_compare_fits_and_the_head_read_a_finite_dataset_epoch_by_epoch(monkeypatch):
    """``model.fit(ds, epochs=N)`` reads a finite dataset with a new iterator every epoch: compare_fits fits it
    so (each epoch's start paid, as the doctor's own fits do), an infinite one repeated; the frozen head's
    prediction is timed in epochs as long as the source's, so that the cache it predicts pays them too."""
    from kit.doctor import frozen, measure

    seen = []
    plain = measure.plain_fit

    def recording(model, source, **k):
        seen.append((int(source.cardinality()), k.get("per_epoch"), k.get("epoch_start")))
        return plain(model, source, **k)

    monkeypatch.setattr(measure, "plain_fit", recording)
    monkeypatch.setattr(frozen, "plain_fit", recording)  # the head's fits
    x = np.random.default_rng(0).standard_normal((64, 8)).astype("float32")
    y = (np.arange(64) % 2).astype("int64")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, trainable=False), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    finite = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    measure.compare_fits({"finite": (finite, model), "endless": (finite.repeat(), model)}, baseline="finite",
                         max_seconds=1.0, rounds=1, min_steps=3)
    assert seen[0][:2] == (4, True) and seen[0][2] > 0  # four batches an epoch, read epoch by epoch
    assert seen[1][1] is False and seen[1][2] == 0.0  # infinite: repeated, no epochs
    assert measure.epoch_batches(finite, True) == 4 and measure.epoch_batches(finite, False) is None
    assert measure.epoch_batches(finite.repeat(), True) is None

    seen.clear()
    copy = measure.compiled_copy(model, next(iter(finite)), "the model")
    prefix, rest = frozen.frozen_prefix(copy)
    rate, why = frozen.head_rate(copy, prefix, rest, next(iter(finite)), max_seconds=0.5, plain=True, epoch_batches=4)
    assert rate and rate > 0 and why == ""
    assert seen == [(4, True, measure.EPOCH_START_ROUNDS * 0.5)]  # the head's epochs as long as the source's
    # a longer epoch from the batches the predicted cache holds, read again: every batch whole
    long = frozen.cache_of(next(iter(finite)), 16, frozen.CACHE_BATCHES + 5)
    assert int(long.cardinality()) == frozen.CACHE_BATCHES + 5 and all(b[0].shape[0] == 16 for b in long)


def test_a_functional_model_over_a_branching_frozen_backbone_splits_after_its_join():
    """The transfer pattern real scripts write: ``Model(base.input, Dense(GAP(base.output)))`` with the base's
    layers frozen, flattened into the model's own layers. The backbone ends in branches joined by a
    weightless layer: the frozen part is the graph up to the join, the head the chain after it."""
    from kit.doctor import frozen, measure

    inp = keras.Input((8, 8, 3))
    stem = keras.layers.Conv2D(4, 3, padding="same", name="stem")(inp)
    a = keras.layers.Conv2D(4, 1, name="branch_a")(stem)
    b = keras.layers.Conv2D(4, 3, padding="same", name="branch_b")(stem)
    joined = keras.layers.Concatenate(name="join")([a, b])
    h = keras.layers.Activation("relu", name="act")(joined)
    h = keras.layers.GlobalAveragePooling2D(name="gap")(h)
    model = keras.Model(inp, keras.layers.Dense(3, name="head")(h))
    for layer in model.layers[:5]:
        layer.trainable = False
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    batch = (np.random.default_rng(0).random((16, 8, 8, 3)).astype("float32"), np.arange(16) % 3)
    copy = measure.compiled_copy(model, batch, "the model")
    prefix, rest = frozen.frozen_prefix(copy)
    assert [layer.name for layer in prefix] == ["stem", "branch_a", "branch_b", "join"]
    assert [layer.name for layer in rest] == ["act", "gap", "head"]
    rate, why = frozen.head_rate(copy, prefix, rest, batch, max_seconds=0.3, plain=True)
    assert why == "" and rate and rate > 0  # the head on the join's output gives the whole model's output


def test_a_diagnosis_after_one_its_caller_stopped_waiting_for_gets_its_whole_budget():
    """watch() over its budget cancels that diagnosis; the next one in the same kernel starts afresh (notebook
    08's diagnoses after an over-budget watch() had skipped everything for budget)."""
    from kit.doctor import progress

    progress.cancel()
    d = diagnosis.diagnose(tf.data.Dataset.range(64).batch(8), max_seconds=1.0)
    assert not progress.cancelled() and d.rates["loader_examples"] > 0, str(d)
