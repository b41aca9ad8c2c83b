"""The audio backbone, the frozen-backbone feature cache, head training from it, and parity
with end-to-end training through the frozen backbone."""

import json
import os

import numpy as np
import pytest

from kit import features, samples, store, timing
from kit.models import audio
from kit.spectrogram import FrameIndex, make_loader


@pytest.fixture(scope="module")
def small():
    """A cheap backbone (alpha 0.25: 256-d embedding) for the cache's mechanics."""
    return audio.backbone(alpha=0.25, seed=0)


@pytest.fixture(scope="module")
def learnable(tmp_path_factory):
    """700 frames of 5 classes with distinct spectral patterns: 400 train, 300 validation."""
    csv = samples.make_spectrogram(tmp_path_factory.mktemp("learnable") / "d", files=14,
                                   frames_per_file=50, seed=3)
    index = FrameIndex.from_csv(csv)
    train = np.arange(len(index)) < 400
    return index, train, ~train


# --------------------------------------------------------------------------- models


def test_backbone_has_yamnet_size():
    b = audio.backbone()
    c = audio.cost(b)
    assert b.input_shape[1:] == (96, 64, 1) and b.output_shape[1:] == (1024,)
    # YAMNet: 3.75 M weights and 69.2 M multiply-adds with its 521-class layer
    # (1024 * 521 + 521 weights, 1024 * 521 multiply-adds), which the backbone leaves out.
    assert c.params == 3_751_369 - (1024 * 521 + 521) == 3_217_344
    assert c.macs == 69_165_056 - 1024 * 521 == 68_631_552
    assert c.flops == 2 * c.macs
    assert "3.22 M parameters" in str(c)


def test_transfer_model_trains_only_the_head(small):
    t = audio.transfer_model(small, audio.head(5, embedding_dim=256))
    c = audio.cost(t)
    assert c.trainable_params == 256 * 5 + 5
    assert c.params == audio.cost(small).params + 256 * 5 + 5
    assert not small.trainable


def test_weights_are_seeded_or_loaded_from_a_local_file(small, tmp_path):
    same = audio.backbone(alpha=0.25, seed=0)
    other = audio.backbone(alpha=0.25, seed=1)
    key = features.weights_fingerprint(small)
    assert features.weights_fingerprint(same) == key  # automatic names differ, the key does not
    assert features.weights_fingerprint(other) != key
    path = tmp_path / "b.weights.h5"
    other.save_weights(path)
    loaded = audio.backbone(path, alpha=0.25, seed=0)
    assert features.weights_fingerprint(loaded) == features.weights_fingerprint(other)
    with pytest.raises(FileNotFoundError, match="missing.weights.h5"):
        audio.backbone(tmp_path / "missing.weights.h5")


# --------------------------------------------------------------------------- extraction


def test_cache_holds_the_backbones_embeddings(small, spec_index, tmp_path):
    cache = features.extract_features(small, spec_index, batch_size=16, progress=False, part_frames=40)
    assert len(cache) == len(spec_index) == 96 and cache.dim == 256 and cache.dtype == np.float16
    assert cache.seconds is not None and cache.resumed_rows == 0
    assert [p[0] for p in cache.manifest.meta["parts"]] == [
        "features-00000-of-00002.npy", "features-00001-of-00002.npy"]  # 40 -> 48 rows, a batch multiple
    want = small(spec_index.read_all()[..., None], training=False).numpy()
    got = cache.read_all()
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=1e-3)
    np.testing.assert_array_equal(cache.labels, spec_index.labels)
    assert cache.classes == spec_index.classes
    rows = np.array([95, 0, 47, 48])
    np.testing.assert_array_equal(cache.gather(rows), got[rows])
    assert store.verify(cache.folder) == []

    again = features.extract_features(small, spec_index, batch_size=16, progress=False, part_frames=40)
    assert again.folder == cache.folder and again.seconds is None  # reused, not recomputed
    # A reused cache still reports the extraction that built it (a second run of notebook 07
    # divided by None here), and says it was reused.
    assert again.reused and not cache.reused
    assert again.extraction["rows"] == 96 and again.extraction["seconds"] > 0
    assert again.extraction["frames_per_s"] == pytest.approx(96 / again.extraction["seconds"])
    assert again.extraction["created"] == cache.manifest.meta["created"]
    assert "reused: extracted" in repr(again)

    # Any ordered loader fills the same cache.
    py = features.extract_features(small, spec_index, loader="pydataset", batch_size=16, out=tmp_path / "py",
                                   progress=False, part_frames=40)
    assert py.key == cache.key
    np.testing.assert_array_equal(py.read_all(), got)

    # A changed backbone or index gets its own cache.
    other = features.extract_features(audio.backbone(alpha=0.25, seed=1), spec_index, batch_size=16,
                                      progress=False, part_frames=40)
    sub = features.extract_features(small, spec_index.subset(np.arange(50)), batch_size=16,
                                    progress=False, part_frames=40)
    assert len({cache.folder, other.folder, sub.folder}) == 3
    np.testing.assert_array_equal(sub.read_all(), got[:50])

    # Corruption is caught and named.
    part = cache.folder / "features-00001-of-00002.npy"
    with open(part, "r+b") as f:
        f.seek(-8, os.SEEK_END)
        f.write(b"\xff" * 8)
    problems = store.verify(cache.folder)
    assert len(problems) == 1 and "features-00001-of-00002.npy" in problems[0]


def test_extraction_resumes_after_an_interruption(small, spec_index, tmp_path, monkeypatch):
    real = features._runner
    calls = []

    def interrupted(backbone):
        run = real(backbone)

        def counted(x):
            calls.append(len(x))
            if len(calls) == 3:  # the first batch of the second part
                raise KeyboardInterrupt
            return run(x)
        return counted

    out = tmp_path / "cache"
    monkeypatch.setattr(features, "_runner", interrupted)
    with pytest.raises(KeyboardInterrupt):
        features.extract_features(small, spec_index, batch_size=16, out=out, progress=False, part_frames=32)
    assert not (out / store.MANIFEST).exists()
    first = out / "features-00000-of-00003.npy"
    before = first.stat()

    calls.clear()

    def counting(backbone):
        run = real(backbone)
        return lambda x: (calls.append(len(x)), run(x))[1]

    monkeypatch.setattr(features, "_runner", counting)
    cache = features.extract_features(small, spec_index, batch_size=16, out=out, progress=False,
                                      part_frames=32)
    assert sum(calls) == 64 and cache.resumed_rows == 32  # the finished part was not recomputed
    assert (first.stat().st_ino, first.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    monkeypatch.setattr(features, "_runner", real)
    fresh = features.extract_features(small, spec_index, batch_size=16, out=tmp_path / "fresh",
                                      progress=False, part_frames=32)
    np.testing.assert_array_equal(cache.read_all(), fresh.read_all())
    assert store.verify(out) == []


def test_extraction_refuses_what_cannot_work(small, spec_index, tmp_path):
    import keras

    with pytest.raises(ValueError, match="index order"):
        features.extract_features(small, spec_index, loader="tfrecord", batch_size=16)
    with pytest.raises(ValueError, match="dtype"):
        features.extract_features(small, spec_index, batch_size=16, dtype="int8")
    wrong = audio.backbone(input_shape=(64, 96, 1), alpha=0.25)
    with pytest.raises(ValueError, match=r"\(64, 96, 1\).*\(96, 64, 1\)"):
        features.extract_features(wrong, spec_index, batch_size=16)
    # Embeddings beyond float16's range are refused, naming the file and frame.
    loud = keras.Sequential([keras.Input((96, 64, 1)), keras.layers.Flatten(),
                             keras.layers.Dense(4, kernel_initializer=keras.initializers.Constant(100.0))])
    with pytest.raises(ValueError, match=r"clip_000000\.npy frame 0 \(index row 0\).*float32"):
        features.extract_features(loud, spec_index, batch_size=16, progress=False)
    cache = features.extract_features(loud, spec_index, batch_size=16, dtype="float32", progress=False)
    assert cache.dtype == np.float32 and np.isfinite(cache.read_all()).all()


# --------------------------------------------------------------------------- head training


def test_head_loader_serves_each_row_once_with_its_label(small, spec_index):
    cache = features.extract_features(small, spec_index, batch_size=16, progress=False)
    rows = np.flatnonzero(np.arange(96) % 3 != 0)  # 64 rows
    ds = features.head_loader(cache, batch_size=10, rows=rows, seed=5)
    assert int(ds.cardinality()) == 7
    all_x = cache.read_all().astype(np.float32)
    orders = []
    for _ in range(2):
        seen = []
        for x, y in ds.as_numpy_iterator():
            assert x.dtype == np.float32 and x.shape[1] == 256
            r = [int(np.flatnonzero((all_x == xi).all(axis=1))[0]) for xi in x]
            np.testing.assert_array_equal(y, spec_index.labels[r])
            seen.extend(r)
        assert sorted(seen) == rows.tolist()
        orders.append(seen)
    assert orders[0] != orders[1]  # reshuffled every epoch
    mapped = features.head_loader(cache, batch_size=10, rows=rows, seed=5, in_memory=False)
    for (xa, ya), (xb, yb) in zip(features.head_loader(cache, batch_size=10, rows=rows, seed=5)
                                  .as_numpy_iterator(), mapped.as_numpy_iterator()):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)


def test_embedding_stats_floor_dead_dimensions(small, spec_index):
    cache = features.extract_features(small, spec_index, batch_size=16, progress=False)
    mean, var = features.embedding_stats(cache)
    x = cache.read_all().astype(np.float64)
    np.testing.assert_allclose(mean, x.mean(0), rtol=1e-5, atol=1e-6)
    assert var.min() >= 0.1 * np.median(x.var(0)) * 0.999
    ok = x.var(0) > var.min()
    np.testing.assert_allclose(var[ok], x.var(0)[ok], rtol=1e-4)


def test_head_from_cache_matches_end_to_end_training(learnable, tmp_path):
    """The parity: same data, seed, initial head and batch order; float16 cache vs float32."""
    index, train, val = learnable
    backbone = audio.backbone(seed=0)  # YAMNet's size
    cache = features.extract_features(backbone, index, batch_size=64, progress=False)
    stats = features.embedding_stats(cache, rows=train)
    epochs, batch = 3, 32

    head_c = audio.head(5, standardize=stats, seed=0)
    head_e = audio.head(5, standardize=stats, seed=0)
    for a, b in zip(head_c.get_weights(), head_e.get_weights()):
        np.testing.assert_array_equal(a, b)

    log_c = features.train_head(head_c, cache, rows=train, epochs=epochs, batch_size=batch, seed=0)
    acc_c = features.evaluate_head(head_c, cache, rows=val)["accuracy"]

    model = audio.compile_classifier(audio.transfer_model(backbone, head_e))
    log_e = timing.fit(model, make_loader("in_memory", index.subset(train), batch_size=batch, seed=0),
                       epochs=epochs, wait=False)
    acc_e = model.evaluate(make_loader("in_memory", index.subset(val), batch_size=128, shuffle=False),
                           verbose=0, return_dict=True)["accuracy"]

    assert list(log_c["examples"]) == list(log_e["examples"]) == [400] * epochs
    assert (log_c["seconds"] > 0).all() and (log_c["examples_per_s"] > 0).all()
    # Same batches in the same order: the losses follow each other epoch by epoch.
    np.testing.assert_allclose(log_c["loss"], log_e["loss"], rtol=0.02)
    assert int(val.sum()) == 300  # one point is 3 frames
    assert acc_c >= 0.6 and acc_e >= 0.6  # chance is 0.2
    assert abs(acc_c - acc_e) <= 0.01


# --------------------------------------------------------------------------- bench


def test_bench_transfer_command(tmp_path):
    from kit.cli import main

    csv = samples.make_spectrogram(tmp_path / "d", files=2, frames_per_file=40, seed=1)
    out = tmp_path / "r.json"
    rc = main(["bench", "transfer", "--data", str(csv), "--frames", "64", "--alpha", "0.25",
               "--batch-size", "16", "--batches", "1", "--rounds", "1", "--head-epochs", "1",
               "--no-progress", "--json", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["bench"] == "transfer" and res["frames"] == 64
    fastest = res["fastest_loader"]
    assert fastest in ("memmap", "in_memory")
    rows = {r["variant"]: r for r in res["rows"]}
    assert set(rows) == {"generator", fastest, "feature_cache", "extraction"}
    assert rows["generator"]["examples"] == 16 and rows["feature_cache"]["examples"] == 64
    assert rows["extraction"]["examples"] == 64 and rows["extraction"]["x_generator"] is None
    assert rows["generator"]["x_generator"] == 1.0
    for r in rows.values():
        assert r["epoch_s_1000000"] == pytest.approx(1e6 / r["examples_per_s"])
    assert set(res["met"]) == {"c_epoch_s", "c_over_a", "c_over_b"}
    assert main(["bench", "transfer", "--data", str(csv), "--frames", "500", "--alpha", "0.25"]) == 2
