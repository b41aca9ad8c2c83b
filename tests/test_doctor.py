"""The pipeline doctor: each finding code from a small pipeline with exactly that defect, absent
from the fixed version; the verdicts; the trace; the command line's bad inputs."""

import gc
import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from helpers import paren_depth, run_doctor

from kit import doctor
from kit.doctor.findings import SYMPTOMS
from kit.doctor.graph import pipeline_ops
from kit.doctor.verdicts import COMPUTE_BOUND_HEADROOM, INPUT_BOUND_HEADROOM

B = 32
N = 1024
X = np.random.default_rng(0).random((N, 16), dtype=np.float32)
Y = (np.arange(N) % 4).astype(np.int64)
SECONDS = 1.0


# --------------------------------------------------------------------------- tf.data pipelines


def _heavy(x):
    """A few cheap ops, the same on one example or on a batch."""
    import tensorflow as tf

    for _ in range(4):
        x = tf.math.sin(x) * 0.5 + 0.25
    return x


def _sleepy(x):
    """A Python decode waiting 1 ms per example (a file on a network disk): releases the GIL."""
    import tensorflow as tf

    def slow(a):
        time.sleep(0.001)
        return a * 2.0

    return tf.ensure_shape(tf.numpy_function(slow, [x], tf.float32), [16])


def serial_map(fixed):
    """A Python map left serial (TensorFlow parallelises only stateless maps): num_parallel_calls."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(X[:256])
    return ds.map(_sleepy, num_parallel_calls=tf.data.AUTOTUNE if fixed else None).batch(B)


def no_cache(fixed):
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(X[:256]).map(_sleepy, num_parallel_calls=tf.data.AUTOTUNE)
    return (ds.cache() if fixed else ds).batch(B)


def map_before_batch(fixed):
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(X)
    if fixed:
        return ds.batch(B).map(_heavy, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.map(_heavy, num_parallel_calls=tf.data.AUTOTUNE).batch(B)


def random_before_cache(fixed):
    import tensorflow as tf

    def augment(x):
        return x + tf.random.uniform([16])

    ds = tf.data.Dataset.from_tensor_slices(X[:256]).map(_heavy)
    return (ds.cache().map(augment) if fixed else ds.map(augment).cache()).batch(B)


def shuffle_before_cache(fixed):
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(X[:256]).map(_heavy)
    return (ds.cache().shuffle(256) if fixed else ds.shuffle(256).cache()).batch(B)


def small_shuffle_buffer(fixed):
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(X).shuffle(N if fixed else 16, seed=0)
    return ds.batch(B).map(_heavy, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


#: The planted defects whose fix the doctor applies and measures: found with a measured gain (or as a
#: correctness finding), the top one; gone from the fixed twin.
TFDATA = [serial_map, no_cache, random_before_cache, shuffle_before_cache]


@pytest.mark.slow
@pytest.mark.parametrize("make", TFDATA, ids=lambda f: f.__name__)
def test_tfdata_defect_is_measured_top_and_gone_when_fixed(make):
    code = make.__name__
    planted = doctor.diagnose(make(False), max_seconds=6)
    row = planted.findings[planted.findings["code"] == code].iloc[0]
    if row["kind"] == "speed":  # in the top three (a cache beats a parallel Python map: both measured)
        assert code in planted.top3, str(planted)
        assert row["status"] == "measured" and row["expected_gain"] > 1.05, str(planted)
        assert row["gain_low"] <= row["expected_gain"] <= row["gain_high"]
    else:  # correctness above speed
        assert planted.top == code, str(planted)
        assert [r.code for r in planted.changes][0] == code
    assert code in [r.code for r in planted.changes] and planted.fixed is not None
    assert len(list(planted.fixed)) == len(list(make(False)))  # the fixed pipeline: train on it
    fixed = doctor.diagnose(make(True), max_seconds=4)
    measured = fixed.findings[fixed.findings["status"] == "measured"]
    assert code not in list(measured["code"]), str(fixed)
    assert fixed.verdict == "loader only"


@pytest.mark.slow
def test_map_before_batch_is_tried_and_checked():
    d = doctor.diagnose(map_before_batch(False), max_seconds=6)  # time left for the trial on a loaded machine too
    tried = {t["code"]: t for t in d.tried}
    assert tried["map_before_batch"]["same_output"] is True, d.tried
    assert "map_before_batch" in d.codes  # measured: a gain, or "checked: no gain here"
    assert "map_before_batch" not in {t["code"] for t in doctor.diagnose(map_before_batch(True), max_seconds=1).tried}


def test_small_shuffle_buffer_is_an_order_finding():
    d = doctor.diagnose(small_shuffle_buffer(False), max_seconds=0.5)
    assert d.findings.set_index("code").loc["small_shuffle_buffer", "kind"] == "order", str(d)
    assert "small_shuffle_buffer" not in doctor.diagnose(small_shuffle_buffer(True), max_seconds=0.5).codes


def test_small_shuffle_buffer_on_a_dataset_of_unknown_length_is_counted(tmp_path):
    """A TFRecordDataset's cardinality is unknown: the doctor counts an epoch (within its budget)
    to judge the buffer; its twin, shuffled over the whole file, has no finding."""
    import tensorflow as tf

    path = str(tmp_path / "x.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for i in range(N):
            w.write(X[i].tobytes())

    def pipeline(buffer):
        ds = tf.data.TFRecordDataset(path).shuffle(buffer, seed=0)
        return ds.map(lambda r: tf.io.decode_raw(r, tf.float32)).batch(B)

    assert int(pipeline(16).cardinality()) == tf.data.UNKNOWN_CARDINALITY
    d = doctor.diagnose(pipeline(16), max_seconds=2)
    row = d.findings.set_index("code").loc["small_shuffle_buffer"]
    assert row["kind"] == "order", str(d)
    # The whole epoch counted, or (a loaded machine, a cut count) a lower bound, said so.
    counted = re.search(r"a dataset of (at least )?([\d,]+)", row["evidence"])
    assert counted, row["evidence"]
    n = int(counted.group(2).replace(",", ""))
    assert (n == N) if not counted.group(1) else (160 <= n <= N and "at least" in row["fix"]), row
    assert "small_shuffle_buffer" not in doctor.diagnose(pipeline(N), max_seconds=2).codes


def test_pipeline_structure_names_the_ops():
    import tensorflow as tf

    d = doctor.diagnose(small_shuffle_buffer(False), max_seconds=0.3)
    assert d.pipeline[:3] == ["TensorSliceDataset", "ShuffleDatasetV3", "BatchDatasetV2"]
    assert d.pipeline[-1] == "PrefetchDataset"
    gen = tf.data.Dataset.from_generator(lambda: iter([X[:B]]), output_signature=tf.TensorSpec((None, 16)))
    assert "FlatMapDataset[from_generator]" in pipeline_ops(gen)


# --------------------------------------------------------------------------- measured findings


@pytest.mark.slow
def test_read_amplification(tmp_path):
    frames, files = 64, 4  # 4 files of 64 frames of 4 kB: the planted loader reads 64x
    paths = []
    for k in range(files):
        p = tmp_path / f"f{k}.npy"
        np.save(p, np.full((frames, 1024), k, np.float32))
        paths.append(p)

    def planted():
        for k, p in enumerate(paths):
            for start in range(0, frames, B):
                x = np.stack([np.load(p)[i] for i in range(start, start + B)])  # whole file per frame
                yield x, np.full(B, k)

    def fixed():
        for k, p in enumerate(paths):
            whole = np.load(p)  # once per file
            for start in range(0, frames, B):
                yield whole[start:start + B], np.full(B, k)

    d = doctor.diagnose(planted, max_seconds=SECONDS)
    assert d.rates["read_amplification"] == pytest.approx(frames, rel=0.2)
    row = d.findings.set_index("code").loc["read_amplification"]
    # Small files from the page cache: the bytes alone are a few percent of the loader's time, but the
    # generator's Python is profiled: np.load, called once per frame, is most of it. Predicted, and named
    # at the user's function.
    assert row["status"] == "predicted" and row["list"] == "findings", str(d)
    assert "profiled, the calls that read whole files" in row["evidence"] and "in planted" in row["where"]
    d = doctor.diagnose(fixed, max_seconds=SECONDS)
    assert "read_amplification" not in d.codes, str(d)
    assert d.rates["read_amplification"] == pytest.approx(1.0, abs=0.3)


def _pydataset(workers):
    import keras

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return N // B

        def __getitem__(self, i):
            return X[i * B:(i + 1) * B] * 2.0, Y[i * B:(i + 1) * B]

    return Batches(workers=workers)


@pytest.mark.slow
def test_pydataset_single_worker():
    d = doctor.diagnose(_pydataset(1), max_seconds=SECONDS)
    assert d.top == "pydataset_single_worker", str(d)
    assert "workers=1" in d.findings.loc[0, "evidence"]
    assert "pydataset_single_worker" not in doctor.diagnose(_pydataset(2), max_seconds=SECONDS).codes


@pytest.mark.slow
def test_a_pydataset_read_by_processes_gets_threads_tried():
    """Worker processes pickle every batch back and start again each epoch: the same number of threads is
    timed against them (an A/B of the applied change), whatever it finds."""
    import keras

    class Slices(keras.utils.PyDataset):
        def __len__(self):
            return N // B

        def __getitem__(self, i):
            return X[i * B:(i + 1) * B] * 2.0, Y[i * B:(i + 1) * B]

    d = doctor.diagnose(Slices(workers=2, use_multiprocessing=True), _model(), max_seconds=10)
    assert [t["code"] for t in d.tried] == ["pydataset_single_worker"], str(d)
    row = d.findings.set_index("code").loc["pydataset_single_worker"]
    assert "use_multiprocessing=False" in row["fix"] and "use_multiprocessing=True" in row["evidence"], str(d)
    assert row["status"] in ("measured", "no gain", "unmeasured") or row["measured_on"], str(d)


def _waiting_pydataset():
    import keras

    class OnANetworkDisk(keras.utils.PyDataset):
        # Keras's enqueuer spends ~0.1 s draining its queue at each epoch's end, with any number
        # of workers: an epoch of 32 waits of 20 ms keeps the threads' gain above that fixed cost.
        def __len__(self):
            return 32

        def __getitem__(self, i):
            time.sleep(0.02)  # a file on a network disk: the thread waits, the CPU idles
            j = i % (N // B)
            return X[j * B:(j + 1) * B], Y[j * B:(j + 1) * B]

    return OnANetworkDisk()


@pytest.mark.slow
def test_pydataset_waiting_on_files_gets_threads_measured():
    # 16 s: with 10, three test workers on 2 cores left no time for the threads A/B (skipped for the budget)
    d = doctor.diagnose(_waiting_pydataset(), _model(), max_seconds=16)
    row = d.findings.set_index("code").loc["pydataset_single_worker"]
    # Timed end to end, or (where the budget left no time for the fit's A/B, a busy machine) on the loader
    # alone and predicted for the fit, which the finding then says.
    timed = row["status"] == "measured" or (row["status"] == "predicted" and row["measured_on"] == "the loader alone")
    assert timed and row["expected_gain"] > 1.05, str(d)
    # Threads overlap the waits (measured); reading the same batches once, from memory, gains more (compute_once).
    assert "use_multiprocessing=False" in row["fix"] and d.top in ("pydataset_single_worker", "compute_once")
    assert "pydataset_single_worker" in d.top3, str(d)
    assert d.fixed is not None and d.fixed.workers > 1 and _waiting_pydataset().workers == 1
    assert [t["code"] for t in d.tried] == ["pydataset_single_worker"]


# --------------------------------------------------------------------------- with a model


def _model(frozen_width=0, trainable_prefix=False):
    import keras

    layers = [keras.Input((16,))]
    if frozen_width:
        layers += [keras.layers.Dense(frozen_width, activation="relu", trainable=trainable_prefix)
                   for _ in range(2)]
    layers.append(keras.layers.Dense(4))
    model = keras.Sequential(layers)
    model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _memory_batches():
    for i in range(0, N, B):
        yield X[i:i + B], Y[i:i + B]


def _memory_dataset():
    import tensorflow as tf

    return tf.data.Dataset.from_tensor_slices((X, Y)).batch(B).cache().prefetch(tf.data.AUTOTUNE)


def _slow_batches():
    for i in range(0, N, B):
        # A loader waiting on storage: the step waits for it. 50 ms, several times the step even when make test's
        # workers slow the step down (at 20 ms, a loaded run's headroom came to 2.6x, against 1.5x for the
        # in-memory pipeline below); five of them stay inside the fits' share, so the real fit is timed.
        time.sleep(0.05)
        yield X[i:i + B], Y[i:i + B]


@pytest.mark.slow
def test_input_bound_with_a_waiting_loader_far_less_headroom_with_a_fast_one():
    slow = doctor.diagnose(_slow_batches, _model(), max_seconds=2)
    assert slow.verdict == "input-bound" and slow.codes[0] == "input_bound", str(slow)
    assert slow.rates["headroom"] >= INPUT_BOUND_HEADROOM
    ratios = np.array(slow.rates["ceiling_rounds"]) / np.array(slow.rates["fit_rounds"])
    assert slow.gain("input_bound") == pytest.approx(slow.rates["headroom"]) == pytest.approx(np.median(ratios))
    assert 0 < slow.rates["model_cores"] and "headroom" in slow.summary
    assert f"{1 - 1 / slow.rates['headroom']:.0%} of the fit's time is beyond the model's own step" in slow.summary
    assert "the step timer, pulling each batch in turn" in slow.rates["verdict_basis"]
    assert "compute_bound" not in slow.codes
    # In memory, cached and prefetched: far less headroom than the loader that sleeps. (Not an absolute
    # verdict: on 2 cores shared with other tests, even an in-memory pipeline's threads take some of
    # the step's CPU, and the verdict says so when they take 30%.)
    fast = doctor.diagnose(_memory_dataset(), _model(frozen_width=512, trainable_prefix=True), max_seconds=3)
    assert fast.rates["headroom"] < slow.rates["headroom"] / 2, (str(slow), str(fast))
    _verdict_follows_headroom(slow)
    _verdict_follows_headroom(fast)


def _verdict_follows_headroom(d):
    from kit.doctor.verdicts import input_explains

    h = d.rates["headroom"]
    expected = ("input-bound" if h >= INPUT_BOUND_HEADROOM else
                "compute-bound" if h < COMPUTE_BOUND_HEADROOM else "balanced")
    if COMPUTE_BOUND_HEADROOM <= h < INPUT_BOUND_HEADROOM and input_explains(
            d.rates, d.rates["loader_examples_per_s"], d.rates["cores_busy"]) < COMPUTE_BOUND_HEADROOM:
        expected = "compute-bound"  # a headroom the input cannot explain: the rounds' noise
    assert d.verdict == expected, str(d)
    symptom = {"input-bound": "input_bound", "compute-bound": "compute_bound"}.get(expected)
    assert (d.codes[0] == symptom) if symptom else not set(SYMPTOMS) & set(d.codes), str(d)


@pytest.mark.slow
def test_frozen_backbone_recomputed_and_the_verdict_follows_headroom():
    model = _model(frozen_width=2048)
    before = [w.copy() for w in model.get_weights()]
    # 12 s: time left for the head on cached features (its gain) on a loaded machine too (at 6 s it was
    # skipped in two of three fresh-clone `make test` runs, beside the notebooks' tests)
    d = doctor.diagnose(_memory_dataset(), model, max_seconds=12)
    _verdict_follows_headroom(d)  # compute-bound on an idle machine; shared cores can move it (see above)
    # Top among the predictions; a measured steps_per_execution gain (the step is a few ms) ranks above it.
    assert d.top3[0] == "frozen_backbone_recomputed" or d.top3[:2] == ["steps_per_execution", "frozen_backbone_recomputed"], str(d)
    assert d.gain("frozen_backbone_recomputed") > 1.0
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))  # a copy trained
    d = doctor.diagnose(_memory_dataset(), _model(frozen_width=2048, trainable_prefix=True), max_seconds=3)
    assert "frozen_backbone_recomputed" not in d.codes, str(d)


@pytest.mark.slow
def test_augmentation_ahead_of_a_frozen_backbone_is_not_a_feature_cache():
    """Random augmentation before the frozen layers: their output changes every epoch, so the
    feature-cache finding becomes augment_before_frozen_backbone; without it, the plain one."""
    import tensorflow as tf

    def augment(x, y):
        return x + tf.random.uniform([16]) * 0.01, y

    base = tf.data.Dataset.from_tensor_slices((X, Y))
    d = doctor.diagnose(base.map(augment).batch(B), _model(frozen_width=512), max_seconds=4)
    assert "augment_before_frozen_backbone" in d.codes and "frozen_backbone_recomputed" not in d.codes, str(d)
    row = d.findings.set_index("code").loc["augment_before_frozen_backbone"]
    # Predicted from the head's measured rate; under a 1.1x prediction (a loaded machine) it is listed
    # as checked with no gain, never as the plain feature cache.
    assert row["status"] in ("predicted", "no gain") and "random augmentation" in row["evidence"], str(d)
    d = doctor.diagnose(base.batch(B), _model(frozen_width=512), max_seconds=4)
    assert "frozen_backbone_recomputed" in d.codes and "augment_before_frozen_backbone" not in d.codes, str(d)


def test_a_first_batch_slower_than_the_budget_leaves_the_budget_to_measure():
    """The pipeline's start-up (here a first element that takes 1.5 s, three times the budget) is not taken from
    the budget: the loader alone is still measured, and the report gives the set-up's time."""
    import tensorflow as tf

    def start_up(i):
        if i == 0:
            time.sleep(1.5)  # an import or a JIT on the first call
        return np.float32(i)

    ds = tf.data.Dataset.range(64).map(lambda i: tf.numpy_function(start_up, [i], tf.float32)).batch(B)
    d = doctor.diagnose(ds, max_seconds=0.5)
    assert d.rates["ready_s"] >= 1.5 and d.rates["loader_examples_per_s"] > 0, d.rates
    assert "the loader alone" not in d.skipped, d.skipped


def test_a_small_budget_says_what_it_skipped():
    d = doctor.diagnose(no_cache(False), max_seconds=0.3)
    assert d.skipped and "skipped to keep to the time budget: " in str(d), str(d)


@pytest.mark.slow
def test_the_kits_own_story_gets_the_lessons_of_notebooks_01_to_07(spec_index):
    """The user's generator and transfer model: the feature cache among the top findings (07), reading and
    the Python named (01-03). Fixes the doctor applied and measured rank above predictions (issue 44), so
    a cache of this small sample's frames, measured, may come before the predicted feature cache."""
    from kit import spectrogram
    from kit.models import audio

    backbone = audio.backbone(alpha=0.125)
    model = audio.compile_classifier(audio.transfer_model(
        backbone, audio.head(len(spec_index.classes), embedding_dim=backbone.output_shape[-1])))
    # 20 s: under make test's load a 10 s budget skipped the frozen head (skipped to keep to the budget)
    d = doctor.diagnose(spectrogram.make_loader("generator", spec_index, batch_size=16), model, max_seconds=20)
    assert "frozen_backbone_recomputed" in d.top3, str(d)
    found = d.lists()["findings"].set_index("code")
    assert (found.loc[d.top3, "status"] == "measured").tolist() == sorted(
        (found.loc[d.top3, "status"] == "measured").tolist(), reverse=True), str(d)  # measured first
    assert {"read_amplification", "python_in_pipeline"} <= set(d.codes), str(d)


def test_trace_dir_holds_a_profile(tmp_path):
    d = doctor.diagnose(_memory_batches, _model(), max_seconds=0.5, trace_dir=tmp_path / "trace")
    assert d.trace_dir == str(tmp_path / "trace")
    assert list((tmp_path / "trace" / "plugins" / "profile").glob("*/*.xplane.pb"))


def test_renders_as_text_and_html():
    d = doctor.diagnose(shuffle_before_cache(False), max_seconds=8)
    assert str(d).splitlines()[0] == "verdict: loader only"
    assert "  1. shuffle_before_cache at test_doctor.py:" in str(d)
    assert "fix: .map(_heavy).cache().shuffle(256)" in str(d)
    html = d._repr_html_()
    assert "<table" in html and "shuffle_before_cache" in html
    saved = json.loads(json.dumps(d.as_dict(), default=float))
    assert saved["findings"][0]["code"] == "shuffle_before_cache"
    # A correctness fix whose check passed is applied in Diagnosis.fixed whether or not its cost was timed
    # (under make test's load the timing was once left out for time: the fix must not go with it).
    assert "checked: the same 256 labels" in saved["findings"][0]["basis"], str(d.details())
    assert [c["code"] for c in saved["changes"]] == ["shuffle_before_cache"], str(d.details())
    assert "Diagnosis.fixed applies" in str(d) and ".map(_heavy).cache().shuffle(256)" in d.code_change()


def test_an_untimed_correctness_fix_is_still_applied(monkeypatch):
    """The check passed but no time was left to time it: the fix is applied, its cost said unmeasured."""
    from kit.doctor import diagnosis

    monkeypatch.setattr(diagnosis.trial, "ab", lambda *a, **k: pytest.fail("timed with no time left"))
    monkeypatch.setattr(diagnosis.Budget, "take", lambda self, seconds, what, least=0.05: self.skipped.append(what) or 0.0)
    d = doctor.diagnose(shuffle_before_cache(False), max_seconds=4)
    row = d.lists()["findings"].set_index("code").loc["shuffle_before_cache"]
    assert "not measured: out of time" in row["basis"] and "checked: the same 256 labels" in row["basis"], str(d)
    assert [r.code for r in d.changes] == ["shuffle_before_cache"] and d.fixed is not None, str(d)
    assert "the A/B of cache after .map(_heavy), then shuffle each epoch" in d.skipped, str(d)


def test_codes_are_documented():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for code in doctor.CODES:
        assert f"``{code}``" in doctor.__doc__
        assert f"`{code}`" in readme


def test_bad_sources_are_refused():
    with pytest.raises(ValueError, match="one-shot iterator"):
        doctor.diagnose(iter([(X[:B], Y[:B])]))
    with pytest.raises(ValueError, match="not a batch source"):
        doctor.diagnose(42)
    with pytest.raises(ValueError, match="no batches"):
        doctor.diagnose(lambda: iter([]))
    with pytest.raises(ValueError, match="max_seconds"):
        doctor.diagnose(_memory_batches, max_seconds=0)


# --------------------------------------------------------------------------- command line

PIPELINE = """
import numpy as np


def dataset():
    import tensorflow as tf

    x = np.zeros((64, 16), np.float32)
    return tf.data.Dataset.from_tensor_slices((x, np.zeros(64, np.int64))).batch(16)


def model():
    import keras

    m = keras.Sequential([keras.Input((16,)), keras.layers.Dense(4)])
    m.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def wrong_model():
    import keras

    m = keras.Sequential([keras.Input((3, 3)), keras.layers.Dense(4)])
    m.compile(optimizer="sgd", loss="mse")
    return m


def raises():
    raise RuntimeError("no data today")


def not_batches():
    return 42


import_error = None
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    name = f"user_pipeline_{abs(hash(tmp_path)) % 10**8}"
    (tmp_path / f"{name}.py").write_text(PIPELINE)
    (tmp_path / "broken_module.py").write_text("import does_not_exist_anywhere\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return name


def test_cli_diagnoses_a_user_pipeline(user_module, capsys, tmp_path):
    rc, out, err = run_doctor(capsys, f"{user_module}:dataset", "--model", f"{user_module}:model",
                        "--max-seconds", "1", "--json", str(tmp_path / "d.json"))
    assert rc == 0, err
    assert out.startswith("verdict: ")
    saved = json.loads((tmp_path / "d.json").read_text())
    assert saved["verdict"] in ("input-bound", "compute-bound", "balanced")
    assert {"headroom", "model_cores"} <= set(saved["rates"])


@pytest.mark.parametrize("argv, says", [
    (["{m}:raises"], "'{m}:raises' raised RuntimeError: no data today"),
    (["{m}:not_batches"], "source '{m}:not_batches' is of type 'int', not a batch source"),
    (["{m}:nothing_here"], "has no attribute 'nothing_here'"),
    (["{m}"], "expected MODULE:FUNCTION"),
    (["{m}:dataset", "--model", "{m}:wrong_model"], "model 'sequential"),
    (["{m}:dataset", "--model", "{m}:dataset"], "not a Keras model"),
    (["broken_module:dataset"], "module 'broken_module' does not import: ModuleNotFoundError"),
    (["--variant", "generator"], "give either MODULE:FUNCTION or --index CSV"),
])
def test_cli_bad_input_is_one_error_line(user_module, capsys, argv, says):
    rc, out, err = run_doctor(capsys, *[a.format(m=user_module) for a in argv])
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kit: error: "), err
    assert says.format(m=user_module) in lines[0]


def test_cli_model_mismatch_names_the_shapes(user_module, capsys):
    rc, out, err = run_doctor(capsys, f"{user_module}:dataset", "--model", f"{user_module}:wrong_model")
    assert rc == 2 and "does not take the batches" in err and "16x16" in err


def test_cli_kit_loader(spec_csv, capsys):
    rc, out, err = run_doctor(capsys, "--index", str(spec_csv), "--variant", "generator", "--batch-size", "16",
                        "--max-seconds", "1")
    assert rc == 0, err
    # Without a model: the generator's Python and its re-reads named, each in the list its evidence
    # allows (a gain the free cores bound, or not measured with the reason).
    listed = [line.split()[1].rstrip(":") for line in out.splitlines() if line.startswith(("  1.", "  2.", "  3.", "  ?", "  -"))]
    assert {"python_in_pipeline", "read_amplification"} <= set(listed), out
    assert paren_depth(out) <= 1, out


def test_cli_is_a_real_command(tmp_path):
    (tmp_path / "broken_module.py").write_text("import does_not_exist_anywhere\n")
    r = subprocess.run([sys.executable, "-m", "kit", "doctor", "broken_module:dataset"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("kit: error: source 'broken_module:dataset'")


APPLY = """
import time

import numpy as np


def make():
    import tensorflow as tf

    def decode(x):
        def slow(a):
            time.sleep(0.001)
            return a * 2.0
        return tf.ensure_shape(tf.numpy_function(slow, [x], tf.float32), [16])

    x = np.arange(256 * 16, dtype=np.float32).reshape(256, 16)
    return tf.data.Dataset.from_tensor_slices(x).map(decode).batch(32)
"""


@pytest.mark.slow
def test_cli_apply_writes_a_module_returning_the_fixed_pipeline(tmp_path, monkeypatch, capsys):
    (tmp_path / "applyme.py").write_text(APPLY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    rc, out, err = run_doctor(capsys, "applyme:make", "--max-seconds", "6", "--apply", "--out", str(tmp_path / "fixed.py"))
    assert rc == 0, err
    assert "wrote " in out and (tmp_path / "fixed.py").is_file()
    text = (tmp_path / "fixed.py").read_text()
    assert "num_parallel_calls=tf.data.AUTOTUNE" in text or ".cache()" in text, text
    import importlib

    fixed = importlib.import_module("fixed").make_dataset()
    original = importlib.import_module("applyme").make()
    a = np.concatenate(list(original.as_numpy_iterator()))
    b = np.concatenate(list(fixed.as_numpy_iterator()))
    assert sorted(map(tuple, a)) == sorted(map(tuple, b))
    rc, out, err = run_doctor(capsys, "applyme:make", "--apply")
    assert rc == 2 and "--apply and --out FILE go together" in err


def test_a_fit_that_meets_the_ast_race_runs_once_more(monkeypatch):
    from kit.doctor import measure

    calls = []

    def flaky(model, source, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=36, after=32)")
        return {"examples_per_s": 1.0}

    monkeypatch.setattr(measure, "_timed_fit", flaky)
    assert measure.timed_fit(None, None, max_seconds=0) == {"examples_per_s": 1.0} and len(calls) == 2

    def broken(model, source, **kw):
        raise SystemError("something else")

    monkeypatch.setattr(measure, "_timed_fit", broken)
    with pytest.raises(SystemError, match="something else"):
        measure.timed_fit(None, None, max_seconds=0)


def _tracked(kind) -> list:
    """The live objects of type ``kind`` the garbage collector tracks."""
    return [o for o in gc.get_objects() if isinstance(o, kind)]


def test_a_fit_the_deadline_stopped_leaves_no_tf_data_iterator_to_the_collector():
    """Keras keeps a fit stopped by a callback in a reference cycle (its epoch iterator and that
    iterator's suspended generator) holding the tf.data iterator: the doctor frees it as the fit ends.
    The collector is off here, so only that can free it."""
    import tensorflow as tf

    from kit.doctor import measure

    owned = type(iter(tf.data.Dataset.range(1)))
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(B)  # 32 batches; the deadline stops at 3
    before = {id(o) for o in _tracked(owned)}
    gc.disable()
    try:
        run = measure.timed_fit(_model(), ds, max_seconds=0.0, min_steps=3)
        left = [o for o in _tracked(owned) if id(o) not in before]
    finally:
        gc.enable()
    assert run["examples"] < N  # stopped mid-epoch, as the deadline does
    assert not left, f"{len(left)} tf.data iterator(s) still alive after the fit"


def test_an_interrupted_loader_measurement_ends_its_epoch_before_the_error_reaches_the_caller(monkeypatch):
    """measure_loader ends the epoch it was reading (a PyDataset's workers stop) when it is interrupted
    (Ctrl-C, a stop in JupyterLab): the traceback, which IPython keeps, does not hold the epoch open."""
    import keras

    from kit.doctor import loader

    ended = []

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return N // B

        def __getitem__(self, i):
            return X[i * B:(i + 1) * B], Y[i * B:(i + 1) * B]

        def on_epoch_end(self):
            ended.append(1)

    def interrupted(it, **kw):
        next(it), next(it)
        raise KeyboardInterrupt

    monkeypatch.setattr(loader.timing, "measure", interrupted)
    with pytest.raises(KeyboardInterrupt) as err:
        loader.measure_loader(Batches(), max_seconds=5.0)
    assert err.value.__traceback__ is not None and ended == [1]


# --------------------------------------------------------------------------- host memory epoch over epoch


def _keeping_pydataset(keep: bool):
    """Four batches an epoch of 16 columns; where ``keep``, each batch also keeps 8 MB it never frees
    (a list appended to in ``__getitem__``, as a cache written by hand grows)."""
    import keras

    class Keeping(keras.utils.PyDataset):
        def __init__(self):
            super().__init__()
            self.kept: list = []

        def __len__(self):
            return 4

        def __getitem__(self, i):
            if keep:
                self.kept.append(np.ones(1 << 21, np.float32))
            return X[i * B:(i + 1) * B], Y[i * B:(i + 1) * B]

    return Keeping()


@pytest.mark.parametrize("keep", [True, False])
def test_memory_growing_epoch_over_epoch_is_found(keep):
    source = _keeping_pydataset(keep)
    # 6 s: at 4 s, under a heavier load than make test's, the fits once reached too few epoch ends to read it
    d = doctor.diagnose(source, _model(), max_seconds=6)
    assert ("memory_growth" in d.codes) == keep, str(d)
    if keep:
        row = d.lists()["findings"].set_index("code").loc["memory_growth"]
        assert row["status"] == "measured" and row["kind"] == "memory" and "MB an epoch" in row["evidence"], str(d)
        assert "memory_growth" in str(d) and "memory, not speed" in str(d)
        # the line that allocates what is kept, traced (tracemalloc) on the loader alone; under make test's load
        # the budget may have left no time for it, which the report then says
        [line] = [n for n, text in enumerate(Path(__file__).read_text().splitlines(), 1) if text.strip().startswith("self.kept.append(")]
        if "naming the line whose memory grows" not in d.skipped:
            assert row["where"] == f"test_doctor.py:{line}" and "traced: the memory allocated at" in row["evidence"], str(d)
        from kit.doctor import python

        where, mb = python.growing_line(_keeping_pydataset(True), batches=4, seconds=60)
        assert where == f"test_doctor.py:{line}" and mb == pytest.approx(32, rel=0.1)  # 4 batches of 8 MB an epoch
        steady = python.growing_line(_keeping_pydataset(False), batches=4, seconds=60)
        assert steady is None or steady[1] < 1, steady


def test_memory_growth_rule_reads_the_epoch_ends_after_the_first():
    from kit.doctor import rules

    assert rules.memory_growth({"rss_runs": [[900, 1000, 1001, 1000, 1002]]}) == []  # a cache filled once
    assert rules.memory_growth({"rss_runs": [[900, 1000, 1040, 1030, 1080]]}) == []  # not at every end
    [few] = rules.memory_growth({"rss_runs": [[900, 1000, 1040]], "steps_per_epoch": 120.0})  # too few ends
    assert few.status == "unmeasured" and "reached 2 (an epoch is 120 steps)" in few.evidence, few.evidence
    assert "too long for the budget" in few.basis
    assert rules.memory_growth({}) == []  # no model, no fit: nothing to say
    [f] = rules.memory_growth({"rss_runs": [[900, 1000, 1040, 1080, 1120]]}, available=4000)
    assert f.code == "memory_growth" and "rose 40 MB an epoch at each of 4" in f.evidence, f.evidence
    assert "run out in about 100 epochs" in f.evidence, f.evidence
    # Apart by fit call: what rises between the doctor's fit calls (its own iterators and py_funcs, which
    # the user's one fit does not make) is not counted; what rises within them is.
    between = {"rss_runs": [[900, 905, 903], [960, 962, 961], [1020, 1021, 1020]]}
    assert rules.memory_growth(between) == []
    [f] = rules.memory_growth({"rss_runs": [[900, 950, 1000], [1100, 1150, 1200]]}, available=4000)
    assert "rose 50 MB an epoch" in f.evidence, f.evidence


def test_processes_are_bounded_by_sending_the_batches_back():
    """A PyDataset computing its batches: processes predicted from the free cores, and at most what
    pickling each batch back allows (``Measured.transfer_s``, measured by ``python.transfer_seconds``)."""
    from kit.doctor import python, rules
    from kit.doctor.findings import Measured

    source = _pydataset(1)
    m = Measured(batch_size=32, loader_rate=3200.0, cores=4, cores_busy=1.0, parallel_gain=3.0,
                 parallel_basis="", model_cores=0.5)  # a batch made in 10 ms; 2.5 cores free
    [free] = rules.pydataset_workers(source, m)
    [cheap] = rules.pydataset_workers(source, replace(m, transfer_s=0.001))
    [dear] = rules.pydataset_workers(source, replace(m, transfer_s=0.02))
    assert free.gain_high == pytest.approx(3.5) and cheap.gain_high == pytest.approx(3.5)  # 10x left: cores bind
    assert dear.gain_high == pytest.approx(1.0) and "processes cannot help" in dear.basis, dear.basis
    assert "10.0 ms to make and 20.00 ms to pickle and unpickle" in dear.basis, dear.basis
    big = (np.zeros((32, 1 << 16), np.float32), Y[:32])
    assert python.transfer_seconds(big) > python.transfer_seconds((X[:32], Y[:32])) > 0
    assert np.isnan(python.transfer_seconds((lambda: 0,)))  # a lambda cannot be pickled
