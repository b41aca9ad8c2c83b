"""The doctor's findings: the typed ``Finding``, the ranking (correctness above speed, 'no gain' last),
the cap, and the candidates read from a pipeline's graph knowing what TensorFlow does anyway."""

import dataclasses
import math

import numpy as np
import pytest

from kit import doctor
from kit.doctor.candidates import candidates
from kit.doctor.findings import Cap, Finding, Measured, table
from kit.doctor.graph import effective_options, pipeline_graph

B = 32
X = np.zeros((256, 16), np.float32)


def test_finding_takes_its_meaning_kind_and_general_fix_from_the_codes():
    f = Finding("serial_map", "1 MapDataset", 3, "cores")
    assert (f.meaning, f.kind, f.learn_more) == doctor.CODES["serial_map"]
    assert f.fix == f.learn_more and f.status == "measured"
    assert f.expected_gain == 3.0 and isinstance(f.expected_gain, float)
    assert math.isnan(Finding("serial_map", "", None, "").expected_gain)
    mine = Finding("serial_map", "", 2.0, "", fix=".map(decode, num_parallel_calls=tf.data.AUTOTUNE)")
    assert mine.row()["fix"].startswith(".map(decode") and mine.row()["learn_more"] == f.learn_more
    assert list(f.row()) == list(doctor.findings.COLUMNS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.code = "no_prefetch"
    with pytest.raises(ValueError, match="code must be one of .* got 'slow'"):
        Finding("slow", "", 1.0, "")
    with pytest.raises(ValueError, match="status must be one of"):
        Finding("serial_map", "", 1.0, "", status="guessed")


def test_table_ranks_symptom_correctness_speed_order_then_no_gain():
    df = table([Finding("no_prefetch", "", 2.0, ""), Finding("frozen_backbone_recomputed", "", math.nan, ""),
                Finding("serial_map", "", 2.0, ""), Finding("read_amplification", "", 9.0, ""),
                Finding("no_cache", "", 30.0, "", status="no gain"),
                Finding("small_shuffle_buffer", "", 1.0, ""),
                Finding("random_before_cache", "", 0.8, ""), Finding("input_bound", "", 1.5, "")])
    assert list(df.columns) == list(doctor.findings.COLUMNS)
    # ties (2.0) in the order of CODES; not measured after the measured speed findings
    assert list(df["code"]) == ["input_bound", "random_before_cache", "read_amplification", "serial_map",
                                "no_prefetch", "frozen_backbone_recomputed", "small_shuffle_buffer", "no_cache"]
    assert list(table([]).columns) == list(df.columns) and table([]).empty


def test_cap_and_headroom():
    assert Cap()(50.0) == 50.0 and Cap().explain("x") == "x"
    cap = Cap(4.0, "at most the headroom")
    assert cap(50.0) == 4.0 and cap(2.0) == 2.0
    assert cap.explain("x") == "x; at most the headroom"
    m = Measured(batch_size=B, loader_rate=1.0, cores=2, cores_busy=0.2, parallel_gain=1.0, parallel_basis="",
                 cap=cap, model_cores=1.5)
    assert m.headroom == 4.0 and m.io_wait and m.free_cores() == pytest.approx(0.3)


def _codes(ds, examples=None, example_bytes=64.0):
    return [c.code for c in candidates(pipeline_graph(ds), ds, examples=examples, example_bytes=example_bytes)]


def test_candidates_skip_what_tensorflow_does_anyway():
    """A stateless map (TF parallelises it) and a missing final prefetch (TF injects one) are not
    tried; a random map is, and a map TF would parallelise is once the option is off."""
    import tensorflow as tf

    plain = tf.data.Dataset.from_tensor_slices(X).map(lambda x: x + 1).batch(B)
    assert effective_options(plain) == {"map_parallelization": True, "inject_prefetch": True,
                                        "parallel_batch": True, "autotune": True}
    assert "serial_map" not in _codes(plain) and "no_prefetch" not in _codes(plain)
    assert "map_before_batch" in _codes(plain)  # tried: batching first may give the same output
    rand = tf.data.Dataset.from_tensor_slices(X).batch(B).map(lambda x: x + tf.random.uniform([]))
    assert _codes(rand) == ["serial_map"]
    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = False
    options.experimental_optimization.inject_prefetch = False
    off = plain.with_options(options)
    assert {"serial_map", "no_prefetch", "options_off"} <= set(_codes(off))


def test_candidates_for_caches():
    import tensorflow as tf

    def aug(x):
        return x + tf.random.uniform([16])

    base = tf.data.Dataset.from_tensor_slices(X).map(lambda x: x * 2)
    assert _codes(base.map(aug).cache().batch(B))[0] == "random_before_cache"
    assert _codes(base.shuffle(64).cache().batch(B))[0] == "shuffle_before_cache"
    assert "random_before_cache" not in _codes(base.cache().map(aug).batch(B))
    # no cache: the decoded data fits in memory, so a cache is tried (before the random map) ...
    cands = candidates(pipeline_graph(base.map(aug).batch(B)), base, examples=256, example_bytes=64.0)
    cache = next(c for c in cands if c.code == "no_cache")
    assert cache.rewrite.snippet == ".map(lambda).cache()" and cache.random
    # ... not when it does not, nor when there is no work before the first shuffle or batch
    assert "no_cache" not in _codes(base.batch(B), examples=256, example_bytes=1e15)
    assert "no_cache" not in _codes(tf.data.Dataset.from_tensor_slices(X).batch(B), examples=256)


def test_candidates_name_the_users_functions():
    import tensorflow as tf

    def decode(x):
        return tf.numpy_function(lambda a: a * 2, [x], tf.float32)

    ds = tf.data.Dataset.from_tensor_slices(X).map(decode).batch(B)
    (c,) = [c for c in candidates(pipeline_graph(ds), ds, examples=None, example_bytes=0) if c.code ==
            "serial_map"]
    assert c.rewrite.snippet == ".map(decode, num_parallel_calls=tf.data.AUTOTUNE)"
    assert "calls Python" in c.evidence
