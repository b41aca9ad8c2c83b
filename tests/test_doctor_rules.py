"""The doctor's rules of issue 44, each on a pipeline that has the defect and a twin that does not:
correctness findings complete and fixed together, no shuffle finding where the order is not frozen,
map-before-batch only where batching first is possible and pays, preprocessing layers are no frozen
backbone, GIL-bound Python on threads named, read amplification only where the bytes prove it, a
prediction under the noise listed as no gain, and the three printed lists."""

import json
import math
import time

import numpy as np
import pytest
from helpers import paren_depth

from kit.doctor import rewrite as rw
from kit.doctor import rules, verdicts
from kit.doctor.candidates import already_done, candidates
from kit.doctor.findings import NOISE, Cap, Finding, Measured, table
from kit.doctor.graph import pipeline_graph, pipeline_ops
from kit.doctor.report import Diagnosis

X = np.arange(64 * 4, dtype=np.float32).reshape(64, 4)
Y = np.arange(64) % 3
B = 8


def _cands(ds):
    return candidates(pipeline_graph(ds), ds, examples=64, example_bytes=16.0)


def _decode(x, y):
    import tensorflow as tf

    return tf.numpy_function(lambda a: a * 2, [x], tf.float32, stateful=False), y


def _augment(x, y):
    import tensorflow as tf

    return x + tf.random.uniform([4]), y


def _newcomer(fixed: bool):
    """A newcomer's pipeline: shuffle -> map(py_function decode) -> map(random augment) -> cache();
    its twin caches the decoded data, then shuffles and augments every epoch."""
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((X, Y))
    if fixed:
        return ds.map(_decode).cache().shuffle(64).map(_augment).batch(B)
    return ds.shuffle(64).map(_decode).map(_augment).cache().batch(B)


def test_random_and_shuffle_before_cache_both_reported_and_fixed_together():
    (cand,) = [c for c in _cands(_newcomer(False)) if c.correctness]
    assert [code for code, _ in cand.findings] == ["random_before_cache", "shuffle_before_cache"]
    fixed = cand.rewrite.apply(_newcomer(False))
    ops = pipeline_ops(fixed)
    cache = next(i for i, op in enumerate(ops) if op.startswith("Cache"))
    shuffle = next(i for i, op in enumerate(ops) if op.startswith("Shuffle"))
    assert cache < shuffle and ops[cache - 1].startswith("MapDataset"), ops  # after decode, before the shuffle
    assert ops[shuffle + 1].startswith("MapDataset"), ops  # the random augment after the shuffle, every epoch
    labels = sorted(int(v) for _, y in fixed.as_numpy_iterator() for v in y)
    assert labels == sorted(Y.tolist())  # every example once
    assert ".cache().shuffle(64) then .map(_augment)" in cand.rewrite.snippet
    assert not [c for c in _cands(_newcomer(True)) if c.correctness]  # the twin: nothing to fix


def test_a_cache_before_a_skip_and_a_shuffle_adds_no_shuffle_and_keeps_the_examples():
    """map -> skip -> shuffle -> repeat (a held-out head skipped, then shuffled): the cache goes after the
    map and the shuffle after it still reshuffles, so none is added; one added before the skip would
    skip different examples each epoch. A shuffle before the map would freeze in the cache: one is added."""
    import tensorflow as tf

    from kit.doctor import trial

    base = tf.data.Dataset.from_tensor_slices((X, Y)).map(_decode)
    ds = base.skip(16).shuffle(48).repeat(2).batch(B)
    cache = next(c for c in _cands(ds) if c.code == "no_cache")
    assert cache.rewrite.snippet == ".map(_decode).cache()" and "shuffle" not in cache.rewrite.change
    check = trial.same_elements(ds, cache.rewrite.apply(ds), ordered=False, random=False, seconds=5.0)
    assert check.same is True, check.how
    shuffled_first = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(64).map(_decode).batch(B)
    assert next(c for c in _cands(shuffled_first) if c.code == "no_cache").rewrite.snippet.endswith(".shuffle(64)")


def test_a_fixed_split_shuffle_or_a_reshuffle_after_the_cache_is_no_defect():
    import tensorflow as tf

    base = tf.data.Dataset.from_tensor_slices((X, Y)).map(_decode)
    split = base.shuffle(64, reshuffle_each_iteration=False).cache().shuffle(64).batch(B)
    reshuffled_after = base.shuffle(64).cache().shuffle(64).batch(B)
    frozen = base.shuffle(64).cache().batch(B)
    batches_reshuffled = base.shuffle(64).batch(B).cache().shuffle(8)  # a directory loader's batches, reshuffled
    assert not [c for c in _cands(split) if c.correctness]
    assert not [c for c in _cands(reshuffled_after) if c.correctness]
    assert not [c for c in _cands(batches_reshuffled) if c.correctness]
    assert [c.code for c in _cands(frozen) if c.correctness] == ["shuffle_before_cache"]


def test_map_before_batch_only_where_batching_first_is_possible_and_pays():
    import tensorflow as tf

    def scale(x, y):
        return x * 2.0, y

    fixed_shapes = tf.data.Dataset.from_tensor_slices((X, Y)).map(scale).batch(B)
    behind_cache = tf.data.Dataset.from_tensor_slices((X, Y)).map(scale).batch(B).cache()
    varying = tf.data.Dataset.range(1, 65).map(lambda n: (tf.range(n % 5 + 1), n)).map(
        lambda x, y: (x * 2, y)).padded_batch(B)
    assert "map_before_batch" in [c.code for c in _cands(fixed_shapes)]
    assert "map_before_batch" not in [c.code for c in _cands(behind_cache)]  # the map runs in one epoch only
    assert "map_before_batch" not in [c.code for c in _cands(varying)]  # elements of varying size


def test_decoding_and_augmenting_in_one_map_is_told_to_split_around_a_cache():
    import tensorflow as tf

    from kit.doctor.candidates import split_to_cache

    photos = tf.stack([tf.io.encode_jpeg(tf.zeros((8, 8, 3), tf.uint8))] * 16)

    def decode(b):
        return tf.cast(tf.io.decode_jpeg(b, channels=3), tf.float32)

    def augment(x):
        return tf.image.random_flip_left_right(x)

    def verdict(ds):
        return split_to_cache(pipeline_graph(ds), examples=16, example_bytes=8 * 8 * 3 * 4)

    one_map = tf.data.Dataset.from_tensor_slices(photos).map(lambda b: augment(decode(b))).batch(4)
    f = verdict(one_map)
    assert f is not None and f.code == "no_cache" and f.status == "unmeasured" and "DecodeJpeg" in f.evidence
    assert "split" in f.fix and ".cache()" in f.fix
    split = tf.data.Dataset.from_tensor_slices(photos).map(decode).cache().map(augment).batch(4)
    random_only = tf.data.Dataset.from_tensor_slices(tf.zeros((16, 8, 8, 3))).map(augment).batch(4)
    decode_first = tf.data.Dataset.from_tensor_slices(photos).map(decode).map(augment).batch(4)
    assert verdict(split) is None and verdict(random_only) is None
    assert verdict(decode_first) is None  # a cache can go between the maps: that rewrite is tried instead


def test_what_tensorflow_already_does_is_checked_with_no_gain():
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((X, Y)).map(lambda x, y: (x * 2, y)).batch(B)
    found = already_done(pipeline_graph(ds), ds)
    assert {f.code for f in found} == {"serial_map", "no_prefetch"}
    assert all(f.status == "no gain" and f.basis.startswith("TensorFlow already") for f in found)
    off = tf.data.Options()
    off.experimental_optimization.map_parallelization = False
    off.experimental_optimization.inject_prefetch = False
    assert already_done(pipeline_graph(ds.with_options(off)), ds.with_options(off)) == []


def test_preprocessing_layers_are_no_frozen_backbone():
    import keras

    from kit.doctor.frozen import frozen_prefix

    norm = keras.layers.Normalization()
    norm.adapt(X)
    only_preprocessing = keras.Sequential([keras.Input((4,)), keras.layers.Reshape((2, 2, 1)),
                                           keras.layers.Resizing(4, 4), keras.layers.Flatten(), norm,
                                           keras.layers.Dense(3)])
    assert frozen_prefix(only_preprocessing)[0] == []
    backbone = keras.layers.Dense(8)
    backbone.trainable = False
    frozen = keras.Sequential([keras.Input((4,)), backbone, keras.layers.Dense(3)])
    assert [layer.name for layer in frozen_prefix(frozen)[0]] == [backbone.name]


def _m(**kw) -> Measured:
    base = dict(batch_size=B, loader_rate=100.0, cores=2, cores_busy=1.0, parallel_gain=1.0, parallel_basis="",
                fit_rate=100.0, ceiling_rate=400.0, cap=Cap(4.0, "headroom 4x"), model_cores=1.0)
    base.update(kw)
    return Measured(**base)


def _pydataset(workers: int, processes: bool = False):
    import keras

    class Items(keras.utils.PyDataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return X[:B], Y[:B]

    return Items(workers=workers, use_multiprocessing=processes)


def test_a_pydataset_held_by_the_gil_is_named_and_its_fix_is_vectorising():
    (f,) = rules.pydataset_gil(_pydataset(4), _m(cores_busy=1.02))
    assert f.code == "python_in_pipeline" and "holds the GIL" in f.evidence and "vectorise" in f.fix
    assert rules.pydataset_gil(_pydataset(4), _m(cores_busy=1.9)) == []  # threads do run side by side
    assert rules.pydataset_gil(_pydataset(4), _m(cores_busy=0.2)) == []  # it waits on I/O: threads help
    assert rules.pydataset_gil(_pydataset(4, processes=True), _m(cores_busy=1.0)) == []
    assert rules.pydataset_gil(_pydataset(1), _m(cores_busy=1.0)) == []  # one worker: its own rule
    assert rules.pydataset_gil(_pydataset(4), _m(cores_busy=1.0, cap=Cap(1.12, ""))) == []  # not input-bound


def test_python_in_a_parallel_map_is_named_as_the_gil_when_one_core_is_busy():
    import tensorflow as tf

    def rotate(x):
        return np.rot90(x.reshape(2, 2)).reshape(4)

    ds = tf.data.Dataset.from_tensor_slices((X, Y)).map(
        lambda x, y: (tf.numpy_function(rotate, [x], tf.float32), y), num_parallel_calls=tf.data.AUTOTUNE).batch(B)
    (f,) = rules.python_source(pipeline_graph(ds), _m(cores_busy=1.05))
    assert f.code == "python_in_pipeline" and "the GIL" in f.evidence and f.gain_high == pytest.approx(4.0)
    plain = tf.data.Dataset.from_tensor_slices((X, Y)).map(lambda x, y: (tf.reverse(x, [0]), y)).batch(B)
    assert rules.python_source(pipeline_graph(plain), _m(cores_busy=1.05)) == []


def test_python_gain_follows_the_share_of_the_loader_its_python_took():
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((X, Y)).map(
        lambda x, y: (tf.numpy_function(lambda a: a * 2, [x], tf.float32), y),
        num_parallel_calls=tf.data.AUTOTUNE).batch(B)
    graph = pipeline_graph(ds)
    # The parallel map's threads inside its Python: 1.8 of 2 cores, then 0.4 of 2.
    (most,) = rules.python_source(graph, _m(cores_busy=1.0, python_cores=0.9, python_threads=1.8))
    (little,) = rules.python_source(graph, _m(cores_busy=1.0, python_cores=0.2, python_threads=0.4))
    (untimed,) = rules.python_source(graph, _m(cores_busy=1.0))
    assert most.expected_gain == pytest.approx(4.0)  # 10x without the Python, held to the 4x headroom
    assert little.expected_gain == pytest.approx(1.25) and "20% of the loader's time" in little.basis
    assert untimed.expected_gain == pytest.approx((1.1 * 4.0) ** 0.5)  # the range's middle, as before
    assert "ms of CPU per example" in most.evidence and "ms of CPU" not in untimed.evidence


def test_where_the_time_goes_splits_fetching_from_preparation_and_names_the_gil():
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((X, Y)).map(
        lambda x, y: (tf.numpy_function(lambda a: a * 2, [x], tf.float32), y),
        num_parallel_calls=tf.data.AUTOTUNE).batch(B)
    loader = {"rchar_per_example": 40_000.0, "read_bytes_per_example": 0.0, "read_s_per_example": 0.002}
    held = rules.time_split(loader, _m(cores_busy=1.0, python_cores=0.8, python_threads=1.6), pipeline_graph(ds), ds)
    assert "fetching 40.0 kB per example, 0.0 kB of it from storage, reading about 20%" in held
    assert "GIL-bound" in held and "8.00 ms of CPU per example, 80% of the loader's time" in held
    spread = rules.time_split(loader, _m(cores_busy=1.9), pipeline_graph(ds), ds)
    assert "GIL-bound" not in spread and "ms of CPU" not in spread
    waiting = rules.time_split(loader, _m(cores_busy=0.2), pipeline_graph(ds), ds)
    assert "it mostly waits" in waiting


def test_a_generator_that_is_the_whole_loader_is_measured_against_batching_alone():
    import tensorflow as tf

    from kit.doctor.loader import batching_rate

    def rows():
        yield from zip(X, Y)

    spec = (tf.TensorSpec(X.shape[1:], tf.float32), tf.TensorSpec((), tf.int64))
    gen = tf.data.Dataset.from_generator(rows, output_signature=spec)
    assert rules.python_is_the_loader(pipeline_graph(gen.shuffle(8).batch(B).prefetch(1)))
    assert not rules.python_is_the_loader(pipeline_graph(gen.map(lambda x, y: (tf.sqrt(x), y)).batch(B)))
    sliced = tf.data.Dataset.from_tensor_slices((X, Y)).map(
        lambda x, y: (tf.numpy_function(lambda a: a, [x], tf.float32), y)).batch(B)
    assert not rules.python_is_the_loader(pipeline_graph(sliced))  # the map's input is work of its own
    # Python mapped over file names (and labels) sliced from memory: the slicing does no work of its own.
    names = tf.data.Dataset.from_tensor_slices((["a.wav", "b.wav"], [0, 1])).map(
        lambda p, y: (tf.numpy_function(lambda s: np.zeros(3, np.float32), [p], tf.float32), y),
        num_parallel_calls=tf.data.AUTOTUNE)
    assert rules.python_is_the_loader(pipeline_graph(names.batch(B).prefetch(1)))
    assert not rules.python_is_the_loader(pipeline_graph(names.map(lambda x, y: (tf.sqrt(x), y)).batch(B)))
    graph = pipeline_graph(gen.batch(B))
    (f,) = rules.python_source(graph, _m(loader_rate=100.0, python_cores=0.3, python_threads=0.5,
                                         batching_rate=10_000.0))
    assert f.expected_gain == pytest.approx(4.0)  # 100x without the Python, held to the 4x headroom
    assert "the loader only batches" in f.basis and "99% of the loader's time" in f.evidence
    # A loader that outruns the step alone (L 500/s, C 400/s) yet leaves the fit at a quarter of the
    # ceiling takes the step's CPU: without its Python that share goes too, not only the waiting.
    (contended,) = rules.python_source(graph, _m(loader_rate=500.0, python_cores=0.3, python_threads=0.5,
                                                 batching_rate=50_000.0))
    assert contended.expected_gain == pytest.approx(4.0 / (1 + 3.0 / 100))
    batch = next(iter(gen.batch(B)))
    assert batching_rate(batch, max_seconds=0.2) > 0


def test_the_python_the_graph_calls_is_timed_in_its_calls():
    import tensorflow as tf

    from kit.doctor.loader import measure_loader

    def burn(x):
        t = time.thread_time()
        while time.thread_time() - t < 0.002:
            pass
        return x

    timed = tf.data.Dataset.range(10**6).map(lambda i: tf.numpy_function(burn, [i], tf.int64)).batch(8)
    got = measure_loader(timed, max_seconds=0.5)
    assert got["python_s_per_example"] == pytest.approx(0.002, rel=0.5)
    assert got["python_wall_s_per_example"] >= got["python_s_per_example"] * 0.99  # CPU time within wall time
    assert "python_s_per_example" not in measure_loader(tf.data.Dataset.range(10**6).map(lambda i: i * 2).batch(8),
                                                        max_seconds=0.2)


def test_fits_whose_rounds_straddle_a_threshold_get_more_rounds_and_the_median(monkeypatch):
    import pandas as pd

    from kit.doctor import measure

    def scripted(rates):
        it = iter(rates)

        def timed_fit(copy, source, *, max_seconds, **_):
            rate = next(it)
            steps = pd.DataFrame({"step_s": [1.0] * 3, "wait_s": [0.0] * 3})
            return {"examples_per_s": rate, "examples": 2 * rate, "steps": steps, "seconds": 2.0}

        return timed_fit

    # ceiling, fit per round: headrooms 1.2 then 1.0 straddle 1.1, so up to two rounds more are run. The source,
    # a list of batches, is one that timed_fit trains on (what Keras reads itself goes to plain_fit).
    monkeypatch.setattr(measure, "timed_fit", scripted([120, 100, 100, 100, 100, 100, 100, 100]))
    fits = measure.measure_fits(None, [], None, max_seconds=1.0, more=2, thresholds=(1.1, 1.3))
    assert fits["ceiling_rounds"] == [120, 100, 100, 100] and fits["extra_rounds"] == 2
    assert fits["headroom"] == pytest.approx(1.0) and verdicts.headroom(fits) == pytest.approx(1.0)
    assert "2 of the 4 rounds run because" in verdicts.verdict_basis(fits)
    # Rounds on one side of every threshold: no more rounds.
    monkeypatch.setattr(measure, "timed_fit", scripted([100, 100, 101, 100]))
    fits = measure.measure_fits(None, [], None, max_seconds=1.0, more=2, thresholds=(1.1, 1.3))
    assert len(fits["fit_rounds"]) == 2 and fits["extra_rounds"] == 0


def test_read_amplification_only_where_the_bytes_prove_it():
    loader = {"rchar_per_example": 400_000.0, "read_bytes_per_example": 0.0, "window_examples": 1000}
    slow_reads = rules.read_amplification({**loader, "read_s_per_example": 0.004}, 4_000.0, _m(loader_rate=100.0))
    assert slow_reads[1][0].status == "predicted" and slow_reads[1][0].expected_gain > NOISE
    fast_reads = rules.read_amplification({**loader, "read_s_per_example": 0.0001}, 4_000.0, _m(loader_rate=100.0))
    assert fast_reads[1][0].status == "unmeasured" and "do not prove it" in fast_reads[1][0].basis
    assert rules.read_amplification({**loader, "rchar_per_example": 4_000.0}, 4_000.0, _m())[1] == []


def test_a_prediction_under_the_noise_is_no_gain_and_without_any_is_not_measured():
    from kit.doctor.diagnosis import _settle

    capped = Finding("no_cache", "", 1.03, "predicted", status="predicted", gain_low=1.0, gain_high=1.05)
    unknown = Finding("python_in_pipeline", "", math.nan, "no bound", status="predicted")
    real = Finding("serial_map", "", 1.8, "measured", gain_low=1.6, gain_high=1.9)
    settled = {f.code: f.status for f in _settle([capped, unknown, real])}
    assert settled == {"no_cache": "no gain", "python_in_pipeline": "unmeasured", "serial_map": "measured"}


def test_three_lists_one_line_each_in_text_and_json():
    found = [
        Finding("input_bound", "waits", 3.0, "ceiling over fit"),
        Finding("random_before_cache", ".map(aug) before .cache()", 0.7, "measured", fix=".cache() then .map(aug)"),
        Finding("serial_map", ".map(load) serial", 1.8, "measured", gain_low=1.6, gain_high=1.9,
                fix=".map(load, num_parallel_calls=tf.data.AUTOTUNE)", where="mymod.py:12 load"),
        Finding("map_before_batch", "per example", 1.01, "rounds 0.97-1.04x", status="no gain", gain_low=0.97,
                gain_high=1.04),
        Finding("read_amplification", "12x", math.nan, "not measured: the bytes do not prove it",
                status="unmeasured"),
    ]
    d = Diagnosis(verdict="input-bound", summary="the fit ran at 10/s", rates={}, findings=table(found))
    text = str(d)
    lines = text.splitlines()
    assert lines.index("findings:") < lines.index("checked: no gain here:") < lines.index("not measured:")
    assert "  1. input_bound: 3.00x headroom" in lines
    assert ("  2. random_before_cache: a correctness fix that costs time: 1.43x slower, measured; "
            "fix: .cache() then .map(aug)") in lines  # a cost, never "a gain of 0.7x"
    assert ("  3. serial_map at mymod.py:12 load: 1.80x measured end to end, rounds 1.60x-1.90x; "
            "fix: .map(load, num_parallel_calls=tf.data.AUTOTUNE)") in lines
    assert any(line.startswith("  - map_before_batch: 1.01x, rounds 0.97x-1.04x: within the noise") for line in lines)
    assert "  ? read_amplification: the bytes do not prove it" in lines
    assert paren_depth(text) <= 1 and d.top3 == ["random_before_cache", "serial_map"]
    saved = json.loads(json.dumps(d.as_dict()))
    assert [r["code"] for r in saved["findings"]] == ["input_bound", "random_before_cache", "serial_map"]
    assert [r["code"] for r in saved["checked_no_gain"]] == ["map_before_batch"]
    assert [r["code"] for r in saved["not_measured"]] == ["read_amplification"]
    assert saved["findings"][2]["where"] == "mymod.py:12 load" and saved["findings"][2]["gain_low"] == 1.6
    assert saved["not_measured"][0]["expected_gain"] is None and saved["findings"][2]["line"] in text


def test_a_rewrite_spec_rebuilds_the_combined_cache_fix():
    (cand,) = [c for c in _cands(_newcomer(False)) if c.correctness]
    again = rw.from_spec(cand.rewrite.spec)
    assert pipeline_ops(again.apply(_newcomer(False))) == pipeline_ops(cand.rewrite.apply(_newcomer(False)))


def test_a_headroom_the_input_cannot_explain_is_no_input_bound_verdict():
    """A loader 100x faster than the fit, steps hardly waiting: a 1.17x headroom (a loaded machine's
    rounds) is not the input's; a loader at the fit's rate whose steps wait is. A 2x headroom stays
    input-bound whatever the loader alone costs (heldout9's h5py generator: the fit's steps twice the
    replayed step's, the loader alone 100x the fit), its line saying the loader does not explain it."""
    fits = {"fit_examples_per_s": 600.0, "ceiling_examples_per_s": 702.0, "input_share": 0.01}
    verdict, _, found = verdicts.verdict(fits, 70_000.0, 0.8)
    assert verdict == "compute-bound" and "the input explains at most" in found[0].evidence
    verdict, _, found = verdicts.verdict({**fits, "ceiling_examples_per_s": 1_200.0}, 70_000.0, 0.8)
    assert verdict == "input-bound" and "the loader's own time explains at most 1.02x" in found[0].evidence
    waiting = {"fit_examples_per_s": 600.0, "ceiling_examples_per_s": 1_200.0, "input_share": 0.45}
    assert verdicts.verdict(waiting, 650.0, 0.9)[0] == "input-bound"
    assert verdicts.verdict({**fits, "input_share": 0.12}, 70_000.0, 0.8)[0] == "balanced"  # explains 1.15x


def test_a_fit_read_as_keras_reads_states_the_time_beyond_the_step_from_its_headroom():
    """A plain fit (Keras overlaps reading and the step): the verdict line's share is 1 - 1/headroom,
    so the two agree; the step timer's serial wait share goes to the basis line, said to be serial."""
    fits = {"fit_examples_per_s": 500.0, "ceiling_examples_per_s": 1_000.0, "input_share": 0.7, "plain": True,
            "headroom": 2.0, "ceiling_rounds": [1_000.0, 1_000.0], "fit_rounds": [500.0, 500.0]}
    verdict, summary, found = verdicts.verdict(fits, 520.0, 1.0)
    assert verdict == "input-bound"
    assert "50% of the fit's time is beyond the model's own step" in summary and "70%" not in summary
    assert "pulling each batch in turn, steps waited 70%" in found[0].evidence
    assert "pulling each batch in turn (no overlap), saw the steps wait 70%" in verdicts.verdict_basis(fits)
    listed = {**fits, "plain": False}  # a list of batches: the step timer's fit is the fit
    assert "steps waited for input 70% of the time" in verdicts.verdict(listed, 520.0, 1.0)[1]
    assert "no overlap" not in verdicts.verdict_basis(listed)


def test_what_keras_reads_itself_is_fitted_as_keras_reads_it(monkeypatch):
    """A PyDataset or a function returning a generator: every round's fit (ceiling and real) through
    plain_fit, which Keras feeds itself and overlaps with the step; one timed_fit, pulling each batch,
    only for the wait share, the epochs' starts and memory."""
    import keras
    import numpy as np
    import pandas as pd

    from kit.doctor import measure

    class Batches(keras.utils.PyDataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return np.zeros((4, 3), np.float32), np.zeros(4, np.float32)

    calls = []

    def plain_fit(copy, source, *, batch_size, max_seconds, min_steps=3, epoch_start=0.0, per_epoch=False, ends=None):
        calls.append(("plain", type(source).__name__, batch_size))
        assert not per_epoch  # measure_fits was not told the source is read epoch by epoch
        # the real fit's rounds may go on to an epoch's start (used on a PyDataset), the ceiling's do not
        assert (epoch_start > max_seconds) == (type(source).__name__ != "_TensorDataset")
        return {"examples_per_s": 100.0, "examples": 100, "seconds": 1.0, "rss_epoch_ends": [], "epoch_starts": 1}

    def timed_fit(copy, source, *, max_seconds, min_steps=3, trace=False, min_epochs=0, limit=0.0):
        calls.append(("timed", type(source).__name__, 0))
        # a PyDataset's timed fit goes on to enough epoch ends to read memory growth within it
        assert min_epochs == (measure.MEMORY_EPOCHS if type(source).__name__ == "Batches" else 0) and limit > max_seconds
        steps = pd.DataFrame({"epoch": [0] * 3, "step": [0, 1, 2], "step_s": [1.0] * 3, "wait_s": [0.5] * 3})
        return {"examples_per_s": 100.0, "examples": 100, "steps": steps, "seconds": 2.0, "rss_epoch_ends": []}

    monkeypatch.setattr(measure, "plain_fit", plain_fit)
    monkeypatch.setattr(measure, "timed_fit", timed_fit)
    batch = Batches()[0]
    for source in (Batches(), lambda: iter([batch])):
        calls.clear()
        fits = measure.measure_fits(None, source, batch, max_seconds=1.0, rounds=2)
        real = type(source).__name__
        assert calls == [("plain", "_TensorDataset", 4), ("plain", real, 4)] * 2 + [("timed", real, 0)], calls
        calls.clear()
        fits = measure.measure_fits(None, source, batch, max_seconds=1.0, rounds=2)
        assert fits["plain"] and fits["input_share"] == pytest.approx(0.5)
        assert fits["fit_epoch_starts"] == (2 if real == "Batches" else None)  # counted where epochs are the source's


def test_a_layer_marked_frozen_whose_weights_still_train_is_a_correctness_finding():
    """Keras 3 applies trainable=False given to a Sequential's constructor before its layers are added:
    the layers train. Set after building, it holds; the doctor says which is which."""
    import keras

    def model(freeze_after: bool):
        layers = [keras.layers.Conv2D(4, 3), keras.layers.GlobalAveragePooling2D()]
        backbone = keras.Sequential(layers) if freeze_after else keras.Sequential(layers, trainable=False)
        if freeze_after:
            backbone.trainable = False
        m = keras.Sequential([keras.Input((16, 16, 3)), backbone, keras.layers.Dense(1)], name="user")
        return m, backbone

    untrue, backbone = model(freeze_after=False)
    assert backbone.trainable is False and len(untrue.trainable_weights) == 4  # conv kernel and bias train too
    [f] = rules.frozen_layers_that_train(untrue)
    assert f.code == "frozen_layer_trains" and f.kind == "correctness" and f.status == "measured"
    assert f"'{backbone.name}' is marked trainable=False, yet 2 of its 2 weights" in f.evidence, f.evidence
    assert f.fix.startswith(f"{backbone.name}.trainable = False once its layers are built")
    frozen, _ = model(freeze_after=True)
    assert len(frozen.trainable_weights) == 2 and rules.frozen_layers_that_train(frozen) == []


def test_random_work_is_a_compute_once_candidate_only_beside_reading():
    """Two reads of a batch differ (random augmentation): the deterministic part (reading, decoding) may be
    computed once where the loader reads files; over arrays in memory its work is the random part itself."""
    from kit.doctor import python

    def gen():
        while True:
            yield np.zeros((B, 4), np.float32), np.zeros(B, np.int32)

    hot, fits = python.Hot(cpu=1.0), {"fit_rate": 100.0, "ceiling_rate": 400.0}
    found = python.findings(gen, _m(), fits, hot=hot, same=False, reads_files=True)
    assert [f.code for f in found if f.code == "compute_once"] == ["compute_once"], found
    assert "random work" in next(f for f in found if f.code == "compute_once").evidence
    found = python.findings(gen, _m(), fits, hot=hot, same=False, reads_files=False)
    assert "compute_once" not in [f.code for f in found] and "python_in_pipeline" in [f.code for f in found], found
    # the same batches every epoch: computing them once holds whatever the loader reads
    found = python.findings(gen, _m(), fits, hot=hot, same=True, reads_files=False)
    assert "compute_once" in [f.code for f in found], found


def test_a_source_far_slower_than_the_ceiling_gets_its_verdict_when_the_budget_ends_in_the_real_fit():
    """heldout10's ravdess_ser (a librosa py_function map, 38x input-bound in its truth) ended its budget inside
    the real fit's first round: the loader alone (9 examples/s) and the ceiling were measured by then, and a
    loader that far under the ceiling is the fit's limit: input-bound, said to be from those two; a loader near
    the ceiling makes no verdict."""
    from kit.doctor import progress

    progress.start()
    progress.step("the loader alone")
    assert progress.verdict_so_far() is None and "nothing measured" in progress.partial()
    progress.step("the compute ceiling and the real fit", loader="the loader alone delivers 9.3 examples/s",
                  loader_rate=9.3)
    assert progress.verdict_so_far() is None and "the fits were not measured" in progress.partial()
    progress.SO_FAR["ceiling_rate"] = 280.0
    verdict, summary = progress.verdict_so_far()
    assert verdict == "input-bound" and "30.1x under the ceiling" in summary and "cut short" in summary
    assert progress.partial().startswith("verdict: input-bound (measured before the budget ended)")
    assert "left out: the compute ceiling and the real fit (cut short)" in progress.partial()
    progress.SO_FAR["ceiling_rate"] = 11.0  # within 1.3x of the loader: the fit's own rounds would decide
    assert progress.verdict_so_far() is None
    progress.SO_FAR["fresh_ceiling_rate"] = 40.0  # ... unless a fresh process's ceiling is that far over it
    verdict, summary = progress.verdict_so_far()
    assert verdict == "input-bound" and "in a fresh process" in summary and "4.3x under" in summary
    # A fast loader, and the budget ended inside the real fit: its steps timed so far give the verdict,
    # past the steps a round skips, on the full verdict's thresholds; too few steps give none.
    progress.start()
    progress.SO_FAR.update(loader_rate=1000.0, ceiling_rate=100.0)
    ends = [0.0, 5.0]  # the first step (a trace) is skipped
    progress.SO_FAR["fit_ends"] = [(ends, 4, 2)]
    assert progress.verdict_so_far() is None
    ends += [5.1, 5.2, 5.3]  # 3 steps of 4 examples in 0.3 s after the skipped ones: 40/s
    verdict, summary = progress.verdict_so_far()
    assert verdict == "input-bound" and "3 steps" in summary and "40.0 examples/s" in summary and "2.50x" in summary
    progress.SO_FAR["ceiling_rate"] = 42.0
    assert progress.verdict_so_far()[0] == "compute-bound"
    progress.start()


def test_a_fresh_process_s_ceiling_sets_the_headroom_only_where_it_is_faster():
    """kit.doctor.fresh: the ceiling timed where no generator was read replaces this process's where it is
    1.1x or more faster (the headroom over the real fit, and generator_malloc's gain capped by the loader
    alone); otherwise it is kept beside the one timed here, and no finding."""
    fits = {"fit_examples_per_s": 10.0, "ceiling_examples_per_s": 11.0, "ceiling_rounds": [11.0, 11.0],
            "fit_rounds": [10.0, 10.0], "headroom": 1.1, "input_share": 0.05, "plain": True}
    out, found = verdicts.fresh_ceiling(fits, {"ceiling_examples_per_s": 22.0, "ceiling_rounds": [21.0, 23.0]},
                                     loader_rate=200.0)
    assert out["ceiling_examples_per_s"] == 22.0 and out["ceiling_here_examples_per_s"] == 11.0
    assert out["headroom"] == pytest.approx(2.2) and out["ceiling_rounds"] == [21.0, 23.0]
    assert [f.code for f in found] == ["generator_malloc"] and found[0].expected_gain == pytest.approx(2.2)
    assert found[0].gain_low == pytest.approx(2.0)  # the step's own gain, fresh over here
    assert verdicts.verdict(out, 200.0, 1.0)[0] == "input-bound"
    assert "timed in a fresh process" in verdicts.verdict_basis(out)
    # the loader alone slower than the fresh ceiling: the fix gains only up to it
    _, capped = verdicts.fresh_ceiling(fits, {"ceiling_examples_per_s": 22.0}, loader_rate=15.0)
    assert capped[0].expected_gain == pytest.approx(1.5)
    # not faster by 1.1x: this process's ceiling stands, said in the basis
    same, none = verdicts.fresh_ceiling(fits, {"ceiling_examples_per_s": 11.5, "ceiling_rounds": [11.5]}, 200.0)
    assert none == [] and same["ceiling_examples_per_s"] == 11.0 and same["headroom"] == 1.1
    assert "not faster than here" in verdicts.verdict_basis(same)


def test_a_cache_the_budget_could_not_fill_after_the_python_that_is_the_loader_is_predicted():
    """Where a cache's first epoch is longer than the budget, and the Python before it is the whole loader, each
    epoch after the first only batches: its gain is predicted from batching alone, held to the headroom; where
    the loader's rate without the cached work is unknown, it stays 'not measured'."""
    from kit.doctor import trial
    from kit.doctor.candidates import Candidate
    from kit.doctor.diagnosis import FILL_TOO_LONG, Tried, _findings

    cand = Candidate(rw.insert_cache("map", ".map(features)"), ".map(features) is recomputed every epoch",
                     ordered=True, random=False)
    t = Tried(cand, check=trial.Check(None, "not checked: an epoch did not end within 2 s, or never ends"),
              outcome=FILL_TOO_LONG)
    m = _m(loader_rate=10.0, fit_rate=10.0, ceiling_rate=400.0, cap=Cap(40.0, "headroom 40x"), batching_rate=5_000.0)
    (f,) = _findings(t, m, {"map": "train.py:12"}, unfilled=m.batching_rate / m.loader_rate)
    assert (f.code, f.status, f.where) == ("no_cache", "predicted", "train.py:12")
    assert f.expected_gain == pytest.approx(m.cheaper_input(500.0)) and 1 < f.expected_gain <= 40.0
    assert "every epoch after the first" in f.basis and "not checked" in f.basis and f.loader_gain == 500.0
    (unknown,) = _findings(t, m, {"map": "train.py:12"})
    assert unknown.status == "unmeasured" and unknown.basis == FILL_TOO_LONG


def test_a_loader_too_slow_for_the_real_fits_rounds_stands_for_the_fit(monkeypatch):
    """Where five of the loader's batches outlast the fits' share, the ceiling is timed once first; if the loader
    alone is progress.SLOW_LOADER times or more slower, the real fit (which cannot outrun its input) is not timed: the
    verdict is input-bound on a headroom said to be a lower bound. A loader not that slow gets the usual rounds."""
    import numpy as np
    import pandas as pd

    from kit.doctor import measure

    calls = []

    def plain_fit(copy, source, *, batch_size, max_seconds, **_):
        calls.append(type(source).__name__)
        return {"examples_per_s": 400.0, "examples": 400, "seconds": 1.0, "rss_epoch_ends": [], "epoch_starts": 0}

    monkeypatch.setattr(measure, "plain_fit", plain_fit)
    monkeypatch.setattr(measure, "timed_fit", lambda *a, **k: 1 / 0)  # never reached on the slow path
    batch = (np.zeros((4, 3), np.float32), np.zeros(4, np.float32))
    fits = measure.measure_fits(None, lambda: iter([batch]), batch, max_seconds=2.0, loader=(10.0, 0.5))
    assert calls == ["_TensorDataset"] and fits["fit_from_loader"] and fits["fit_examples_per_s"] == 10.0
    assert verdicts.headroom(fits) == pytest.approx(40.0)
    verdict, summary, (finding,) = verdicts.verdict(fits, 10.0, 1.0)
    assert verdict == "input-bound" and "headroom at least 40.00x" in summary and "was not timed" in summary
    assert finding.code == "input_bound" and "lower bound" in finding.basis
    assert "the real fit not timed" in verdicts.verdict_basis(fits)
    # As slow a batch, but the loader not progress.SLOW_LOADER times under the ceiling: the real fit is timed (its rounds,
    # the first without a ceiling of its own: the one timed first pairs with it).
    calls.clear()
    steps = pd.DataFrame({"epoch": [0] * 3, "step": [0, 1, 2], "step_s": [1.0] * 3, "wait_s": [0.5] * 3})
    monkeypatch.setattr(measure, "timed_fit", lambda *a, **k: {"examples_per_s": 400.0, "examples": 400, "seconds": 1.0,
                                                               "steps": steps, "rss_epoch_ends": []})
    fits = measure.measure_fits(None, lambda: iter([batch]), batch, max_seconds=2.0, loader=(350.0, 0.5))
    assert not fits.get("fit_from_loader") and calls == ["_TensorDataset", "function", "_TensorDataset", "function"]
    # A fast batch: the usual rounds from the start.
    calls.clear()
    fits = measure.measure_fits(None, lambda: iter([batch]), batch, max_seconds=2.0, loader=(10.0, 0.1))
    assert not fits.get("fit_from_loader") and calls == ["_TensorDataset", "function"] * 2
