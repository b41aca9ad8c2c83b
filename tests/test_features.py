"""kit.spectrogram.features: the frozen-backbone feature cache, head training from it, and parity with
end-to-end training through the frozen backbone; float16 caches and stores train alike."""

import os

import numpy as np
import pytest

from kit import samples, store, timing
from kit.models import audio
from kit.spectrogram import FrameIndex, features, make_loader
from kit.store.folder import MANIFEST


@pytest.mark.slow
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


@pytest.mark.slow
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
    assert not (out / MANIFEST).exists()
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_float16_head_accuracy_within_one_point(tmp_path):
    # Frames from float16 and float32 memmap stores train the same small classifier (same
    # seed, same batches) to within one point of validation accuracy; and a head trained
    # from a float16 feature cache matches one from a float32 cache.
    import keras

    from kit.models import audio
    from kit.spectrogram import features, make_loader

    csv = samples.make_spectrogram(tmp_path / "d", files=14, frames_per_file=50, seed=3)
    index = FrameIndex.from_csv(csv)
    train, val = index.subset(np.arange(400)), index.subset(np.arange(400, 700))
    acc = {}
    for dtype in ("float32", "float16"):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((96, 64, 1)), keras.layers.AveragePooling2D((8, 1)),
                                  keras.layers.Flatten(), keras.layers.Dense(5)])
        audio.compile_classifier(model, learning_rate=3e-3)
        model.fit(make_loader("memmap", train, batch_size=32, seed=0, store_dtype=dtype, progress=False),
                  epochs=3, verbose=0)
        acc[dtype] = model.evaluate(make_loader("memmap", val, batch_size=100, shuffle=False, store_dtype=dtype,
                                                progress=False), verbose=0, return_dict=True)["accuracy"]
    assert acc["float32"] >= 0.6, acc  # chance is 0.2
    assert abs(acc["float16"] - acc["float32"]) <= 0.01, acc  # one point is 3 frames

    backbone = audio.backbone(alpha=0.25, seed=0)
    head_acc = {}
    for dtype in ("float32", "float16"):
        cache = features.extract_features(backbone, index, batch_size=100, dtype=dtype, progress=False)
        assert cache.dtype == np.dtype(dtype)
        stats = features.embedding_stats(cache, rows=np.arange(400))
        head = audio.head(5, embedding_dim=cache.dim, standardize=stats, seed=0)
        features.train_head(head, cache, rows=np.arange(400), epochs=5, batch_size=32, seed=0)
        head_acc[dtype] = features.evaluate_head(head, cache, rows=np.arange(400, 700))["accuracy"]
    assert head_acc["float32"] >= 0.5, head_acc  # chance is 0.2
    assert abs(head_acc["float16"] - head_acc["float32"]) <= 0.01, head_acc
