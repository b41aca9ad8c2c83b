"""kit.spectrogram: index validation, every loader variant's exactness, stores and their CLI."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from kit import samples, store, timing
from kit.errors import DataError
from kit.spectrogram import VARIANTS, FrameIndex, convert, make_loader

# ------------------------------------------------------------------------- index validation


@pytest.fixture
def data(tmp_path):
    """A small copy of the embedded samples that tests may damage."""
    dst = tmp_path / "data"
    shutil.copytree(samples.embedded("spectrogram").parent, dst)
    return dst


def _write_index(folder, rows, header="path,frame,label"):
    p = folder / "index.csv"
    p.write_text(header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return p


def test_index_reads_names_in_sorted_order(spec_index):
    assert spec_index.classes == ("alarm", "bird", "engine", "rain", "speech")
    assert len(spec_index) == 96 and spec_index.frame_shape == (96, 64)
    assert spec_index.labels.dtype == np.int64 and set(spec_index.labels) <= set(range(5))


def test_index_integer_labels_and_split(data):
    p = _write_index(data, [("frames/clip_000000.npy", 0, 2, "train"),
                            ("frames/clip_000000.npy", 1, 0, "val"),
                            ("frames/clip_000001.npy", 3, 1, "train")], "path,frame,label,split")
    idx = FrameIndex.from_csv(p)
    assert list(idx.labels) == [2, 0, 1] and idx.classes == ("0", "1", "2")
    train = idx.of_split("train")
    assert len(train) == 2 and list(train.frames) == [0, 3]
    assert np.array_equal(train.read(1), np.load(data / "frames/clip_000001.npy")[3])


@pytest.mark.parametrize("damage, message", [
    ("missing_file", r"index.csv line 3: .*clip_missing.npy: file not found"),
    ("frame_range", r"index.csv line 2: frame 12 is out of range for .*clip_000000.npy, which holds 12 frames"),
    ("negative_frame", r"index.csv line 2: frame -1 is out of range"),
    ("shape", r"line 3: .*odd.npy: frames are \(96, 32\) float32, but .* has \(96, 64\) float32"),
    ("dtype", r"line 3: .*odd.npy: frames are \(96, 64\) float16, but .* has \(96, 64\) float32"),
    ("pickle", r"line 3: .*odd.npy: holds Python objects and would need pickle to load; refused"),
    ("truncated", r"line 3: .*odd.npy: not a readable .npy array, truncated or corrupt"),
    ("ndim", r"line 3: .*odd.npy: expected an array \(frames, H, W\), got shape \(4, 96\)"),
    ("bad_frame", r"line 2: frame 'x' is not an integer"),
])
def test_index_errors_name_the_row_and_the_file(data, damage, message):
    first = ("frames/clip_000000.npy", 0, "bird")
    odd = data / "frames/odd.npy"
    rows = [first, ("frames/odd.npy", 0, "rain")]
    if damage == "missing_file":
        rows = [first, ("frames/clip_missing.npy", 0, "rain")]
    elif damage == "frame_range":
        rows = [("frames/clip_000000.npy", 12, "bird")]
    elif damage == "negative_frame":
        rows = [("frames/clip_000000.npy", -1, "bird")]
    elif damage == "bad_frame":
        rows = [("frames/clip_000000.npy", "x", "bird")]
    elif damage == "shape":
        np.save(odd, np.zeros((2, 96, 32), np.float32))
    elif damage == "dtype":
        np.save(odd, np.zeros((2, 96, 64), np.float16))
    elif damage == "pickle":
        np.save(odd, np.array([{"a": 1}, None], dtype=object))  # np.save pickles objects by default
    elif damage == "truncated":
        np.save(odd, np.zeros((4, 96, 64), np.float32))
        with open(odd, "r+b") as f:
            f.truncate(5000)
    elif damage == "ndim":
        np.save(odd, np.zeros((4, 96), np.float32))
    with pytest.raises(DataError, match=message):
        FrameIndex.from_csv(_write_index(data, rows))


@pytest.mark.parametrize("text, message", [
    ("", "index is empty"),
    ("path,frame,label\n", "index has a header but no rows"),
    ("file,frame,class\nx.npy,0,1\n", "missing column\\(s\\) path, label"),
])
def test_index_errors_for_empty_or_malformed_csv(tmp_path, text, message):
    p = tmp_path / "index.csv"
    p.write_text(text)
    with pytest.raises(DataError, match=message):
        FrameIndex.from_csv(p)


def test_index_missing_csv(tmp_path):
    with pytest.raises(DataError, match="index file not found"):
        FrameIndex.from_csv(tmp_path / "nope.csv")


def test_float16_files_are_delivered_as_float32(tmp_path):
    p = samples.make_spectrogram(tmp_path / "h", files=2, frames_per_file=5, dtype="float16")
    idx = FrameIndex.from_csv(p)
    assert idx.file_dtype == np.float16
    for name in VARIANTS:
        x, y = next(iter(timing.iterate(make_loader(name, idx, batch_size=4, progress=False))))
        assert np.asarray(x).dtype == np.float32 and np.asarray(x).shape == (4, 96, 64, 1), name
    ref = np.load(p.parent / "frames/clip_000000.npy").astype(np.float32)
    x, _ = next(iter(timing.iterate(make_loader("memmap", idx, batch_size=5, shuffle=False,
                                                 progress=False))))
    assert np.array_equal(np.asarray(x)[..., 0], ref)


# ------------------------------------------------------------------------- loader exactness


def _epoch(loader):
    xs, ys = [], []
    for x, y in timing.iterate(loader):
        xs.append(np.asarray(x))
        ys.append(np.asarray(y))
    return xs, ys


def _rows_of(index, reference, xs):
    """Maps each delivered frame back to its row in the index, by content."""
    lookup = {reference[i].tobytes(): i for i in range(len(reference))}
    x = np.concatenate(xs)
    assert x.dtype == np.float32 and x.shape[1:] == index.frame_shape + (1,)
    return [lookup[f[..., 0].tobytes()] for f in x]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_variant_yields_every_frame_once_with_its_label(name, spec_index):
    reference = np.stack([spec_index.read(i) for i in range(len(spec_index))])  # direct reads
    assert len({r.tobytes() for r in reference}) == len(reference)  # frames are distinct
    loader = make_loader(name, spec_index, batch_size=10, shuffle=True, seed=3, progress=False)
    orders = []
    for _ in range(2):
        xs, ys = _epoch(loader)
        assert [len(y) for y in ys] == [10] * 9 + [6]  # 96 frames: last batch partial
        rows = _rows_of(spec_index, reference, xs)
        assert sorted(rows) == list(range(96))  # each frame exactly once
        assert np.array_equal(np.concatenate(ys), spec_index.labels[rows])  # with its label
        orders.append(rows)
    assert orders[0] != orders[1]  # reshuffled every epoch


@pytest.mark.parametrize("name", [v for v in VARIANTS if v != "tfrecord"])
def test_unshuffled_variants_keep_index_order(name, spec_index):
    reference = np.stack([spec_index.read(i) for i in range(len(spec_index))])
    xs, _ = _epoch(make_loader(name, spec_index, batch_size=32, shuffle=False, progress=False))
    assert _rows_of(spec_index, reference, xs) == list(range(96))


@pytest.mark.parametrize("name", list(VARIANTS))
def test_same_seed_same_order(name, spec_index):
    a = _epoch(make_loader(name, spec_index, batch_size=16, seed=5, progress=False))[1]
    b = _epoch(make_loader(name, spec_index, batch_size=16, seed=5, progress=False))[1]
    assert all(np.array_equal(p, q) for p, q in zip(a, b))


def test_pydataset_options_and_model_fit(spec_index):
    import keras

    loader = make_loader("pydataset", spec_index, batch_size=16, workers=2, use_multiprocessing=False)
    assert len(loader) == 6 and loader.workers == 2
    model = keras.Sequential([keras.Input((96, 64, 1)), keras.layers.GlobalAveragePooling2D(),
                              keras.layers.Dense(5)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    for name in ("generator", "pydataset", "memmap"):
        hist = model.fit(make_loader(name, spec_index, batch_size=16, progress=False), epochs=1,
                         verbose=0)
        assert len(hist.history["loss"]) == 1


def test_make_loader_rejects_bad_arguments(spec_index):
    with pytest.raises(ValueError, match="unknown variant 'fast'"):
        make_loader("fast", spec_index, batch_size=4)
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got 0"):
        make_loader("memmap", spec_index, batch_size=0)
    with pytest.raises(ValueError, match="takes no option\\(s\\) workers"):
        make_loader("memmap", spec_index, batch_size=4, workers=3)
    with pytest.raises(ValueError, match="tf.data service workers cannot run"):
        make_loader("numpy_function", spec_index, batch_size=4, service="grpc://localhost:1")


# ------------------------------------------------------------------------- stores


def test_stores_are_keyed_by_content_and_rebuilt_when_the_index_changes(data, tmp_path):
    idx = FrameIndex.from_csv(data / "index.csv")
    work = tmp_path / "work"
    f1, _ = convert(idx, "tfrecord", workdir=work, progress=False)
    f1b, _ = convert(idx, "tfrecord", workdir=work, progress=False)
    assert f1 == f1b  # reused
    sub = idx.subset(np.arange(50))
    f2, m2 = convert(sub, "tfrecord", workdir=work, progress=False)
    assert f2 != f1 and m2.count == 50
    # A rewritten source file (same rows) changes the key too.
    arr = np.load(data / "frames/clip_000000.npy")
    np.save(data / "frames/clip_000000.npy", arr + 1)
    f3, _ = convert(FrameIndex.from_csv(data / "index.csv"), "tfrecord", workdir=work, progress=False)
    assert f3 != f1
    xs, _ = _epoch(make_loader("memmap", FrameIndex.from_csv(data / "index.csv"), batch_size=96,
                               shuffle=False, workdir=work, progress=False))
    assert np.array_equal(xs[0][0, ..., 0], arr[0] + 1)  # never the stale copy


def test_truncated_shard_is_refused_by_loader_and_named_by_verify(spec_index, tmp_path):
    folder, m = convert(spec_index, "tfrecord", tmp_path / "tf", shard_mb=0.5, progress=False)
    assert len(m.shards) == 5
    assert store.verify(folder) == []
    victim = folder / m.shards[2]["name"]
    with open(victim, "r+b") as f:
        f.truncate(victim.stat().st_size // 2)
    problems = store.verify(folder)
    assert len(problems) == 1 and m.shards[2]["name"] in problems[0] and "truncated" in problems[0]
    with pytest.raises(store.StoreError, match=m.shards[2]["name"]):
        make_loader("tfrecord", spec_index, batch_size=8, folder=folder, progress=False)


def test_corrupt_shard_fails_loudly_not_short(spec_index, tmp_path, monkeypatch):
    import tensorflow as tf

    folder, m = convert(spec_index, "tfrecord", tmp_path / "tf", shard_mb=0.5, progress=False)
    victim = folder / m.shards[1]["name"]
    data = bytearray(victim.read_bytes())
    data[5000:5100] = b"\xff" * 100  # same size, damaged content
    victim.write_bytes(bytes(data))
    problems = store.verify(folder)
    assert len(problems) == 1 and m.shards[1]["name"] in problems[0] and "corrupt" in problems[0]
    # Found when the loader opens the store, naming the shard (issue 13) ...
    with pytest.raises(store.StoreError, match=m.shards[1]["name"]):
        make_loader("tfrecord", spec_index, batch_size=8, folder=folder, progress=False)
    # ... and damage in the middle of a shard, with the check at open turned off, still
    # fails loudly when read rather than giving a shorter epoch.
    monkeypatch.setenv("KIT_CHECK_STORES", "0")
    convert(spec_index, "tfrecord", tmp_path / "tf2", shard_mb=0.5, progress=False)
    victim2 = tmp_path / "tf2" / m.shards[1]["name"]
    data = bytearray(victim2.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 100] = b"\xff" * 100
    victim2.write_bytes(bytes(data))
    loader = make_loader("tfrecord", spec_index, batch_size=8, folder=tmp_path / "tf2", progress=False)
    with pytest.raises(tf.errors.DataLossError, match="corrupted record"):
        _epoch(loader)


def test_a_shorter_epoch_is_an_error_not_silence(spec_index, tmp_path):
    import tensorflow as tf

    folder, m = convert(spec_index, "memmap", tmp_path / "mm", progress=False)
    loader = make_loader("memmap", spec_index, batch_size=8, folder=folder, progress=False)
    assert int(loader.cardinality()) == 12
    short = loader.take(5)  # what a pipeline that ended early would look like
    guarded = short.apply(tf.data.experimental.assert_cardinality(12))
    with pytest.raises(tf.errors.FailedPreconditionError, match="expected to contain 12"):
        _epoch(guarded)


def test_memmap_store_layout_and_verify(spec_index, tmp_path):
    folder, m = convert(spec_index, "memmap", tmp_path / "mm", progress=False)
    frames = np.load(folder / "frames.npy", mmap_mode="r")
    assert frames.shape == (96, 96, 64) and frames.dtype == np.float32
    assert np.array_equal(frames[7], spec_index.read(7))
    assert np.array_equal(np.load(folder / "labels.npy"), spec_index.labels)
    assert store.verify(folder) == []


# ------------------------------------------------------------------------- command line


def _kit(*args):
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True)


def _malloc_in_a_child() -> dict:
    """``kit.memory.keep_freed_memory()`` as a process started like ``_kit``'s finds it."""
    code = "import json; from kit import memory; print(json.dumps(memory.keep_freed_memory()))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def test_convert_and_verify_commands(spec_csv, tmp_path):
    out = tmp_path / "tf"
    r = _kit("convert", "spectrogram", "--index", str(spec_csv), "--to", "tfrecord", "--out", str(out),
             "--shard-mb", "0.5")
    assert r.returncode == 0, r.stderr
    assert "96 frames in 5 file(s)" in r.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["count"] == 96 and len(manifest["shards"]) == 5
    assert manifest["meta"]["frame_shape"] == [96, 64] and manifest["meta"]["dtype"] == "float32"
    assert all(len(s["sha256"]) == 64 for s in manifest["shards"])
    r = _kit("verify", str(out))
    assert r.returncode == 0 and r.stdout.startswith("OK"), r.stdout + r.stderr
    victim = out / manifest["shards"][4]["name"]
    victim.write_bytes(victim.read_bytes()[:-10])
    r = _kit("verify", str(out))
    assert r.returncode == 1 and manifest["shards"][4]["name"] in r.stdout


def test_convert_resumes_after_an_interruption(spec_index, tmp_path, monkeypatch):
    import tensorflow as tf

    out = tmp_path / "tf"
    real = tf.io.TFRecordWriter
    opened = []

    class Flaky(real):
        def __init__(self, path, *a, **k):
            opened.append(path)
            if len(opened) == 3:
                raise KeyboardInterrupt("simulated Ctrl-C")
            super().__init__(path, *a, **k)

    monkeypatch.setattr(tf.io, "TFRecordWriter", Flaky)
    with pytest.raises(KeyboardInterrupt):
        convert(spec_index, "tfrecord", out, shard_mb=0.5, workers=1, progress=False)
    assert not (out / "manifest.json").exists()
    done = sorted(p.name for p in out.glob("*.tfrecord"))
    assert len(done) == 2 and not list(out.glob("*.tmp-*"))
    mtimes = {n: (out / n).stat().st_mtime_ns for n in done}
    opened.clear()
    monkeypatch.setattr(tf.io, "TFRecordWriter", real)
    folder, m = convert(spec_index, "tfrecord", out, shard_mb=0.5, workers=1, progress=False)
    assert m.count == 96 and store.verify(folder) == []
    assert {n: (out / n).stat().st_mtime_ns for n in done} == mtimes  # finished shards untouched


def test_convert_command_errors(tmp_path, spec_csv):
    r = _kit("convert", "spectrogram", "--index", str(tmp_path / "none.csv"), "--to", "memmap",
             "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "index file not found" in r.stderr
    r = _kit("convert", "spectrogram", "--index", str(spec_csv), "--to", "memmap", "--out",
             str(tmp_path / "o"), "--shard-mb", "5")
    assert r.returncode == 2 and "--shard-mb applies to --to tfrecord only" in r.stderr


def test_bench_command_json(spec_csv, tmp_path):
    out = tmp_path / "bench.json"
    r = _kit("bench", "spectrogram", "--data", str(spec_csv), "--batch-size", "16", "--rounds", "1",
             "--batches", "2", "--generator-seconds", "1", "--json", str(out),
             "--variants", "generator,memmap,in_memory")
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["bench"] == "spectrogram" and "machine" in result
    # Under which malloc setting it was measured (kit.memory; kept unless opted out).
    assert result["machine"]["malloc"] == _malloc_in_a_child()
    rows = {row["variant"]: row for row in result["rows"]}
    assert set(rows) == {"generator", "memmap", "in_memory"}
    n = result["epoch_examples"]  # with --data: the index's own size
    assert n == 96
    for row in rows.values():
        assert row["examples_per_s"] > 0
        assert row[f"epoch_s_{n}"] == pytest.approx(n / row["examples_per_s"])
        assert row["x_in_memory"] == pytest.approx(row["examples_per_s"] / rows["in_memory"]["examples_per_s"])
    assert rows["generator"]["x_generator"] == 1.0


def test_memmap_epochs_log_nothing_per_batch(tmp_path):
    """In a plain script (no ``TF_CPP_MIN_LOG_LEVEL``, as the CLI and notebooks set), the
    memmap variant logged "PyFunc is stateful" once a batch: 3,900 lines an epoch at a
    million frames. Its gather's NumPy call is stateless now; both orders stay quiet."""
    script = (
        "import os, sys\n"
        "from kit import samples\n"
        "from kit.spectrogram import FrameIndex, make_loader\n"
        "index = FrameIndex.from_csv(samples.embedded('spectrogram'))\n"
        "for order in ('random', 'blocks'):\n"
        "    loader = make_loader('memmap', index, batch_size=8, order=order, workdir=sys.argv[1], progress=False)\n"
        "    for _ in range(2):\n"
        "        print(order, sum(len(y) for _, y in loader))\n")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["random", "96", "random", "96", "blocks", "96", "blocks", "96"]
    assert "is stateful" not in done.stderr, [line for line in done.stderr.splitlines() if "stateful" in line][:3]
