"""Rewriting a pipeline's graph (kit.doctor.rewrite) and trying a fix (kit.doctor.trial): each rewrite
yields what the original yields (same order where it keeps one), Python functions still run, and
the check catches a fix that changes the data."""

import numpy as np
import pytest

from kit.doctor import rewrite as rw
from kit.doctor import trial

X = np.arange(64 * 4, dtype=np.float32).reshape(64, 4)
Y = np.arange(64) % 3


def _node(ds, op_prefix):
    g = rw.graph_def(ds)
    ops = {n.name: n.op for n in g.node}
    return next(n for n in rw.chain_names(g) if ops[n].startswith(op_prefix))


def _batches(ds):
    return [tuple(np.asarray(v) for v in b) for b in ds.as_numpy_iterator()]


def _same_order(a, b):
    return len(a) == len(b) and all(all(np.array_equal(u, v) for u, v in zip(p, q)) for p, q in zip(a, b))


def test_parallel_map_keeps_order_and_python_functions_run():
    import tensorflow as tf

    def decode(x, y):
        return tf.ensure_shape(tf.numpy_function(lambda a: a * 2, [x], tf.float32), [4]), y

    ds = tf.data.Dataset.from_tensor_slices((X, Y)).map(decode).batch(8)
    fixed = rw.parallel_map(_node(ds, "MapDataset"), "decode").apply(ds)
    assert "ParallelMapDatasetV2" in [n.op for n in rw.graph_def(fixed).node]
    assert _same_order(_batches(ds), _batches(fixed))
    assert trial.same_elements(ds, fixed, ordered=True, random=False, seconds=30).same


def test_parallel_interleave_keeps_order():
    import tensorflow as tf

    ds = tf.data.Dataset.range(6).interleave(lambda i: tf.data.Dataset.range(i).map(lambda v: (v, i)),
                                             cycle_length=3)
    fixed = rw.parallel_interleave(_node(ds, "InterleaveDataset"), "f").apply(ds)
    assert list(ds.as_numpy_iterator()) == list(fixed.as_numpy_iterator())


def test_insert_cache_runs_the_work_once_and_reshuffles_each_epoch():
    import tensorflow as tf

    calls = []

    def decode(x):
        calls.append(1)
        return x * 2

    ds = (tf.data.Dataset.from_tensor_slices(X).shuffle(64)
          .map(lambda x: tf.ensure_shape(tf.numpy_function(decode, [x], tf.float32), [4])).batch(8))
    fixed = rw.insert_cache(_node(ds, "MapDataset"), ".map(decode)", reshuffle=True, count=64).apply(ds)
    epochs = [np.concatenate([b for b in fixed.as_numpy_iterator()]) for _ in range(3)]
    assert len(calls) == 64  # decoded once, in the first epoch
    rows = [sorted(map(tuple, e)) for e in epochs]
    assert rows[0] == rows[1] == rows[2] == sorted(map(tuple, X * 2))
    assert not all(np.array_equal(epochs[0], e) for e in epochs[1:])  # the order changes between epochs


def test_move_cache_before_a_random_map_draws_anew_each_epoch():
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(X).map(lambda x: x + tf.random.uniform([4])).cache().batch(16)
    twice = np.concatenate(list(ds.repeat(2).as_numpy_iterator()))
    assert np.array_equal(twice[:64], twice[64:])  # the defect: the first epoch's draws replayed
    fixed = rw.move_cache(_node(ds, "Cache"), _node(ds, "MapDataset"), ".map(lambda)", "random_before_cache").apply(ds)
    g = rw.graph_def(fixed)
    ops = {n.name: n.op for n in g.node}
    chain = [ops[name] for name in rw.chain_names(g)]
    assert chain.index("CacheDataset") < chain.index("MapDataset")
    twice = np.concatenate(list(fixed.repeat(2).as_numpy_iterator()))
    assert not np.array_equal(twice[:64], twice[64:]) and twice.shape == (128, 4)


def test_map_after_batch_gives_the_same_batches_or_the_check_says_not():
    import tensorflow as tf

    def scale(x, y):
        return (x - 1.0) * 0.5, y

    ds = tf.data.Dataset.from_tensor_slices((X, Y)).map(scale).batch(8)
    fixed = rw.map_after_batch(_node(ds, "MapDataset"), _node(ds, "Batch"), "scale").apply(ds)
    assert _same_order(_batches(ds), _batches(fixed))

    def first_row(x, y):  # not elementwise: on a batch it takes the batch's first example
        return x[0] * tf.ones_like(x), y

    ds = tf.data.Dataset.from_tensor_slices((X, Y)).map(first_row).batch(8)
    fixed = rw.map_after_batch(_node(ds, "MapDataset"), _node(ds, "Batch"), "first_row").apply(ds)
    check = trial.same_elements(ds, fixed, ordered=True, random=False, seconds=30)
    assert check.same is False and ("differ" in check.how or "fails" in check.how), check.how


def test_same_elements_multiset_labels_and_an_endless_pipeline():
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(8)
    shuffled = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(64).batch(8)
    assert trial.same_elements(ds, shuffled, ordered=False, random=False, seconds=30).same
    assert trial.same_elements(ds, shuffled, ordered=True, random=False, seconds=30).same is False
    short = tf.data.Dataset.from_tensor_slices((X[:-1], Y[:-1])).batch(8)
    assert trial.same_elements(ds, short, ordered=False, random=True, seconds=30).same is False
    check = trial.same_elements(ds.repeat(), ds.repeat(), ordered=True, random=False, seconds=30)
    assert check.same is None and "never ends" in check.how


@pytest.mark.parametrize("name, expected", [("__inference_Dataset_map_decode_11", "decode"),
                                            ("__inference_Dataset_map_lambda_19", "lambda"),
                                            ("__inference_load_image_42", "load_image")])
def test_user_name(name, expected):
    assert rw.user_name(name) == expected


def test_ab_reports_median_and_spread_and_calls_a_gain_real_only_beyond_noise():
    rates = iter([10.0, 20.0, 10.0, 25.0, 10.0, 18.0])
    g = trial.ab("a", "b", seconds=0.0, rounds=3, rate=lambda src, s: next(rates))
    assert (g.median, g.low, g.high, g.rounds) == (2.0, 1.8, 2.5, 3) and g.real
    noisy = iter([10.0, 11.0, 10.0, 9.0, 10.0, 12.0])
    assert not trial.ab("a", "b", seconds=0.0, rounds=3, rate=lambda src, s: next(noisy)).real
    busy_round = iter([10.0, 18.0, 10.0, 9.0, 10.0, 17.0])  # a clear median, one round dipped under 1x
    assert trial.ab("a", "b", seconds=0.0, rounds=3, rate=lambda src, s: next(busy_round)).real
    small = iter([10.0, 12.0, 10.0, 9.0, 10.0, 12.0])  # a small median with a round under 1x: noise
    assert not trial.ab("a", "b", seconds=0.0, rounds=3, rate=lambda src, s: next(small)).real
