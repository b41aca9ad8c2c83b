"""kit.spectrogram: index validation (labels, class lists, duplicates), every loader variant's
exactness, float16 stores, the block order, TFRecord records of a block, stores and their CLI."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from helpers import flip, rewrite_keeping_size_and_mtime

from kit import samples, store, timing
from kit.errors import DataError
from kit.spectrogram import VARIANTS, FrameIndex, convert, make_loader
from kit.spectrogram.peers import available as peers_missing
from kit.store.folder import MANIFEST

#: Every variant; the optional ``grain`` one skips, saying why, where its extra is not installed.
NAMES = [pytest.param(n, marks=pytest.mark.skipif(peers_missing() is not None, reason=f"{peers_missing()}"))
         if n == "grain" else n for n in VARIANTS]


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
        if name == "grain" and peers_missing() is not None:
            continue  # the optional grain variant, where its extra is not installed
        x, y = next(iter(timing.iterate(make_loader(name, idx, batch_size=4, progress=False))))
        assert np.asarray(x).dtype == np.float32 and np.asarray(x).shape == (4, 96, 64, 1), name
    ref = np.load(p.parent / "frames/clip_000000.npy").astype(np.float32)
    x, _ = next(iter(timing.iterate(make_loader("memmap", idx, batch_size=5, shuffle=False,
                                                 progress=False))))
    assert np.array_equal(np.asarray(x)[..., 0], ref)


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


@pytest.mark.parametrize("name", NAMES)
def test_every_variant_yields_every_frame_once_with_its_label(name, spec_index):
    reference = np.stack([spec_index.read(i) for i in range(len(spec_index))])  # direct reads
    assert len({r.tobytes() for r in reference}) == len(reference)  # frames are distinct
    # tfrecord reshuffles whole records: records of 4 frames (24 of them), not the default 32 (3 records,
    # whose order repeats in one epoch of 6)
    options = {"record_frames": 4} if name == "tfrecord" else {}
    loader = make_loader(name, spec_index, batch_size=10, shuffle=True, seed=3, progress=False, **options)
    orders = []
    for _ in range(2):
        xs, ys = _epoch(loader)
        assert [len(y) for y in ys] == [10] * 9 + [6]  # 96 frames: last batch partial
        rows = _rows_of(spec_index, reference, xs)
        assert sorted(rows) == list(range(96))  # each frame exactly once
        assert np.array_equal(np.concatenate(ys), spec_index.labels[rows])  # with its label
        orders.append(rows)
    assert orders[0] != orders[1]  # reshuffled every epoch


@pytest.mark.parametrize("name", [v for v in NAMES if v not in ("tfrecord", "tfrecord_guide")])
def test_unshuffled_variants_keep_index_order(name, spec_index):
    reference = np.stack([spec_index.read(i) for i in range(len(spec_index))])
    xs, _ = _epoch(make_loader(name, spec_index, batch_size=32, shuffle=False, progress=False))
    assert _rows_of(spec_index, reference, xs) == list(range(96))


@pytest.mark.parametrize("name", NAMES)
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
    from kit.store import builder
    for where in (sys.modules["kit.spectrogram.convert"], builder):  # the two that call it
        monkeypatch.setattr(where, "check_open", lambda *a, **k: None)
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


def _kit(*args):
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True)


@pytest.mark.slow
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


@pytest.mark.slow
def test_convert_command_errors(tmp_path, spec_csv):
    r = _kit("convert", "spectrogram", "--index", str(tmp_path / "none.csv"), "--to", "memmap",
             "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "index file not found" in r.stderr
    r = _kit("convert", "spectrogram", "--index", str(spec_csv), "--to", "memmap", "--out",
             str(tmp_path / "o"), "--shard-mb", "5")
    assert r.returncode == 2 and "--shard-mb applies to --to tfrecord and --to arrayrecord only" in r.stderr


@pytest.mark.slow
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


def test_memmap_labels_come_from_the_index(spec, monkeypatch):
    """Item 6: a corrupt labels.npy never reaches training: labels come from the index."""
    from kit.spectrogram import convert, make_loader

    folder, _ = convert(spec, "memmap", progress=False)
    bad = np.full(len(spec), 72057594037927940, np.int64)
    raw = folder / "labels.npy"
    tmp = raw.with_name("bad.npy")
    np.save(tmp, bad)
    rewrite_keeping_size_and_mtime(raw, tmp.read_bytes())
    tmp.unlink()
    with pytest.raises(store.StoreError, match="labels.npy"):  # the check at open finds it ...
        make_loader("memmap", spec, batch_size=4, progress=False)
    # ... and were it missed (checks turned off), the loader still never reads labels.npy.
    from kit.store import builder
    for where in (sys.modules["kit.spectrogram.convert"], builder):  # the two that call it
        monkeypatch.setattr(where, "check_open", lambda *a, **k: None)
    ys = np.concatenate([y.numpy() for _, y in make_loader("memmap", spec, batch_size=4, shuffle=False,
                                                            progress=False)])
    np.testing.assert_array_equal(ys, spec.labels)


def test_corrupt_tfrecord_shard_error_names_the_shard(spec):
    """Item 6: a corrupt TFRecord shard is named (TensorFlow's own error names no file)."""
    from kit.spectrogram import convert, make_loader

    folder, m = convert(spec, "tfrecord", shard_mb=0.05, progress=False)
    victim = folder / m.shards[1]["name"]
    flip(victim, victim.stat().st_size // 2)
    with pytest.raises(store.StoreError, match=f"{victim.name}: .*corrupt"):
        make_loader("tfrecord", spec, batch_size=4, progress=False, shard_mb=0.05)


def _index(spec, rows, name="index.csv", header="path,frame,label"):
    """An index CSV beside the spec data, rows (frame number over the two files, label)."""
    csv = spec.csv_path.parent / name
    files = ["frames/clip_000000.npy", "frames/clip_000001.npy"]
    csv.write_text(header + "\n" + "".join(f"{files[f // 3]},{f % 3},{lab}\n" for f, lab in rows))
    return csv


def test_integer_labels_stay_integers_and_a_stray_string_names_its_line(spec):
    """Item 7: ints plus one stray string were re-sorted as strings (2 became 4, 10 became 2)."""
    from kit.errors import DataError
    from kit.spectrogram import FrameIndex

    csv = _index(spec, [(0, 2), (1, 10), (2, 0), (3, 1), (4, 3), (5, 2)])
    assert FrameIndex.from_csv(csv).labels.tolist() == [2, 10, 0, 1, 3, 2]
    csv = _index(spec, [(0, 2), (1, 10), (2, 0), (3, "cat"), (4, 3), (5, 2)])
    with pytest.raises(DataError, match=r"index.csv line 5: label 'cat' is a name among integer labels"):
        FrameIndex.from_csv(csv)


def test_one_class_list_gives_the_same_ids_in_every_split(spec):
    """Item 7: train.csv and val.csv with string labels got different ids for the same class."""
    from kit.errors import DataError
    from kit.spectrogram import FrameIndex

    train = _index(spec, [(0, "bird"), (1, "rain"), (2, "speech")], "train.csv")
    val = _index(spec, [(3, "rain"), (4, "speech")], "val.csv")
    a, b = FrameIndex.from_csv(train), FrameIndex.from_csv(val)
    assert a.classes != b.classes  # without a class list each file sorts its own names
    names = ("bird", "rain", "speech")
    a, b = FrameIndex.from_csv(train, classes=names), FrameIndex.from_csv(val, classes=names)
    assert a.labels.tolist() == [0, 1, 2] and b.labels.tolist() == [1, 2] and b.classes == names
    (spec.csv_path.parent / "classes.txt").write_text("bird\nrain\nspeech\n")
    assert FrameIndex.from_csv(val).labels.tolist() == [1, 2]  # the classes.txt beside the index
    odd = _index(spec, [(3, "rain"), (4, "thunder")], "odd.csv")
    with pytest.raises(DataError, match=r"odd.csv line 3: label 'thunder' is not in the class list"):
        FrameIndex.from_csv(odd)
    (spec.csv_path.parent / "classes.txt").write_text("bird\nrain\nbird\n")
    with pytest.raises(DataError, match=r"classes.txt lines 1 and 3: the class name 'bird' twice"):
        FrameIndex.from_csv(val)


def test_an_id_far_beyond_the_labels_is_an_error_not_an_allocation(spec):
    """Item 7: label 20000000000 exhausted 21 GB making class names."""
    from kit.errors import DataError
    from kit.spectrogram import FrameIndex

    csv = _index(spec, [(0, 0), (1, 20000000000), (2, 1)])
    with pytest.raises(DataError, match=r"line 3: label 20000000000 is far beyond the 3 distinct labels"):
        FrameIndex.from_csv(csv)
    assert FrameIndex.from_csv(_index(spec, [(0, 0), (1, 999)])).num_classes == 1000  # sparse is fine


def test_duplicate_rows_and_one_frame_with_two_labels_are_errors(spec):
    """Item 8: a row listed twice, or one (path, frame) with two labels, names both lines."""
    from kit.errors import DataError
    from kit.spectrogram import FrameIndex

    with pytest.raises(DataError, match=r"index.csv lines 2 and 4: the same frame .* listed twice"):
        FrameIndex.from_csv(_index(spec, [(0, "a"), (1, "b"), (0, "a")]))
    with pytest.raises(DataError, match=r"index.csv lines 3 and 4: the same frame .* with two labels"):
        FrameIndex.from_csv(_index(spec, [(0, "a"), (1, "b"), (1, "c")]))


def test_nan_or_inf_in_frames_is_an_error_in_convert_and_verify(spec, tmp_path):
    """Item 8: NaN/inf frames are refused by convert (naming file and frame), a warning on request."""
    from kit.errors import DataError
    from kit.spectrogram import FrameIndex, convert

    src = spec.files[1]
    frames = np.load(src)
    frames[2, 5, 5] = np.nan
    np.save(src, frames)
    index = FrameIndex.from_csv(spec.csv_path)
    for fmt in ("memmap", "tfrecord"):
        with pytest.raises(DataError, match=r"clip_000001.npy frame 2 \(index row 5\): holds NaN or inf"):
            convert(index, fmt, tmp_path / fmt, progress=False)
    with pytest.warns(UserWarning, match="holds NaN or inf"):
        folder, m = convert(index, "memmap", tmp_path / "warned", nonfinite="warn", progress=False)
    assert store.verify(folder) == []  # converted on purpose with nonfinite="warn"
    meta = json.loads((folder / MANIFEST).read_text())
    meta["meta"]["nonfinite"] = "error"
    (folder / MANIFEST).write_text(json.dumps(meta))
    problems = store.verify(folder)
    assert len(problems) == 1 and "frames.npy: frame 5 holds NaN or inf" in problems[0]


def _rows_by_bytes(x, reference):
    """Index rows of delivered frames, matched by their bytes against ``reference``."""
    lookup = {f.tobytes(): i for i, f in enumerate(reference)}
    return [lookup[f[..., 0].tobytes()] for f in np.asarray(x)]


@pytest.mark.parametrize("variant", ["memmap", "tfrecord"])
def test_float16_store_same_frames_within_rounding_half_the_bytes(spec_index, variant, tmp_path):
    from kit.spectrogram import make_loader

    ref = spec_index.read_all()
    rounded = ref.astype(np.float16).astype(np.float32)
    assert not np.array_equal(rounded, ref)  # the rounding is real
    sizes = {}
    for dtype in ("float32", "float16"):
        folder = tmp_path / dtype
        loader = make_loader(variant, spec_index, batch_size=20, shuffle=True, seed=1, store_dtype=dtype,
                             folder=folder, progress=False)
        sizes[dtype] = sum(p.stat().st_size for p in folder.iterdir() if p.name != "labels.npy")
        assert store.verify(folder) == []
        xs, ys = zip(*[(x.numpy(), y.numpy()) for x, y in loader])
        x, y = np.concatenate(xs), np.concatenate(ys)
        assert x.dtype == np.float32 and x.shape == (96, 96, 64, 1)  # float32 in the graph
        rows = _rows_by_bytes(x, rounded if dtype == "float16" else ref)
        assert sorted(rows) == list(range(96))  # every frame exactly once
        np.testing.assert_array_equal(y, spec_index.labels[rows])
        # Within float16 rounding: half an ulp, 2**-11 of the value.
        np.testing.assert_allclose(x[..., 0], ref[rows], rtol=2.0 ** -11, atol=2.0 ** -24)
    assert sizes["float16"] < 0.52 * sizes["float32"], sizes


def test_float16_store_refuses_frames_beyond_its_range(tmp_path):
    from kit.spectrogram import FrameIndex, convert

    csv = samples.make_spectrogram(tmp_path / "d", files=2, frames_per_file=3)
    f = tmp_path / "d" / "frames" / "clip_000001.npy"
    a = np.load(f)
    a[2, 0, 0] = 1e6
    np.save(f, a)
    index = FrameIndex.from_csv(csv)
    with pytest.raises(ValueError, match=r"clip_000001.npy frame 2 \(index row 5\).*float16"):
        convert(index, "memmap", tmp_path / "m", store_dtype="float16", progress=False)
    convert(index, "memmap", tmp_path / "m32", progress=False)  # float32 holds it


def _epoch_rows(loader, reference, labels):
    """One epoch's index rows, in order, each batch's labels checked; every row exactly once."""
    rows = []
    for x, y in loader:
        r = _rows_by_bytes(x.numpy(), reference)
        np.testing.assert_array_equal(y.numpy(), labels[r])
        rows += r
    assert sorted(rows) == list(range(len(reference)))
    return rows


def test_memmap_block_order_serves_every_frame_once_with_its_label(spec_index):
    from kit.spectrogram import make_loader

    ref = spec_index.read_all()
    loader = make_loader("memmap", spec_index, batch_size=16, order="blocks", block_frames=8, window_blocks=2,
                         progress=False)
    epochs = []
    for _ in range(2):
        rows = _epoch_rows(loader, ref, spec_index.labels)
        epochs.append(rows)
    assert epochs[0] != epochs[1]
    with pytest.raises(ValueError, match="order must be 'random' or 'blocks'"):
        make_loader("memmap", spec_index, batch_size=16, order="sorted", progress=False)


def test_memmap_block_order_asks_the_kernel_for_each_block_once_per_epoch(spec_index, monkeypatch):
    """A cold block-order epoch read the file by page faults, a small readahead at a time
    (at a million float16 frames: 22-27 s an epoch, the same as fully random order); now
    each window's blocks are asked for with POSIX_FADV_WILLNEED two windows ahead. The
    hints cover every frame's bytes once per epoch; read_ahead=0 asks for nothing."""
    from kit.spectrogram import make_loader

    calls = []
    real = os.posix_fadvise

    def recording(fd, offset, length, advice):
        if advice == os.POSIX_FADV_WILLNEED:
            calls.append((os.readlink(f"/proc/self/fd/{fd}"), offset, length))
        return real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", recording)
    ref = spec_index.read_all()
    loader = make_loader("memmap", spec_index, batch_size=16, order="blocks", block_frames=8, window_blocks=2,
                         progress=False)
    frame_bytes = ref[0].nbytes
    for _ in range(2):
        calls.clear()
        _epoch_rows(loader, ref, spec_index.labels)
        assert len({c[0] for c in calls}) == 1 and calls[0][0].endswith("frames.npy")  # the store's frames
        offset = min(c[1] for c in calls)
        covered = sorted(((o - offset) // frame_bytes, length // frame_bytes) for _, o, length in calls)
        assert covered == [(b * 8, 8) for b in range(12)]  # every block of 8 frames, once
    calls.clear()
    quiet = make_loader("memmap", spec_index, batch_size=16, order="blocks", block_frames=8, window_blocks=2,
                        read_ahead=0, progress=False)
    assert sum(len(y) for _, y in quiet) == 96 and calls == []
    with pytest.raises(ValueError, match="read_ahead must be a whole number"):
        make_loader("memmap", spec_index, batch_size=16, order="blocks", read_ahead=-2, progress=False)


def test_memmap_block_order_without_posix_fadvise_reads_as_before(spec_index, monkeypatch):
    from kit.spectrogram import make_loader

    monkeypatch.delattr(os, "posix_fadvise")
    loader = make_loader("memmap", spec_index, batch_size=16, order="blocks", block_frames=8, window_blocks=2,
                         progress=False)
    labels = np.concatenate([y.numpy() for _, y in loader])
    assert np.array_equal(np.bincount(labels), np.bincount(spec_index.labels))


def test_tfrecord_records_hold_blocks_and_an_old_layout_is_rebuilt(spec_index, tmp_path):
    import tensorflow as tf

    from kit.spectrogram import convert, make_loader
    from kit.spectrogram.convert import DEFAULT_RECORD_FRAMES, TFRECORD_FORMAT

    folder, m = convert(spec_index, "tfrecord", tmp_path / "tf", progress=False)
    assert m.meta["options"]["format"] == TFRECORD_FORMAT and m.meta["options"]["record_frames"] == 32
    lengths = [int(tf.strings.length(r)) for s in m.shards for r in tf.data.TFRecordDataset(str(folder / s["name"]))]
    frame_bytes = int(np.prod(spec_index.frame_shape)) * 4
    assert lengths == [DEFAULT_RECORD_FRAMES * (frame_bytes + 8)] * 3  # 96 frames in 3 records of 32
    assert store.verify(folder) == []
    # A store of an older layout is rebuilt, never misread.
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["key"] = "0" * 64
    manifest["meta"]["options"]["format"] = 4
    (folder / "manifest.json").write_text(json.dumps(manifest))
    problems = store.verify(folder)
    assert problems and "older layout" in problems[0]
    loader = make_loader("tfrecord", spec_index, batch_size=40, folder=folder, progress=False)
    assert json.loads((folder / "manifest.json").read_text())["meta"]["options"]["format"] == TFRECORD_FORMAT
    ys = np.concatenate([y.numpy() for _, y in loader])
    assert len(ys) == 96 and np.array_equal(np.bincount(ys), np.bincount(spec_index.labels))
    assert [int(x.shape[0]) for x, _ in loader] == [40, 40, 16]


@pytest.mark.parametrize("record_frames,batch_size,shard_frames,shuffle", [
    (5, 40, 20, True),    # batches of 8 whole records; 4 shards of 20, one of 16 ending in a record of 1 frame
    (2, 16, 20, True),    # every record whole (96 = 48 records)
    (5, 40, 20, False),   # unshuffled: records in shard order
    (200, 1600, 1000, True),  # a store smaller than one record: one short record
    (5, 8, 20, True),     # a batch that is not whole records: records decoded, then cut into batches
])
def test_tfrecord_delivers_every_frame_once_with_its_label(spec_index, tmp_path, record_frames, batch_size,
                                                           shard_frames, shuffle):
    """Every frame exactly once an epoch with its label, reshuffled every epoch when shuffled;
    where a batch is whole records, each record's frames share a batch (the one batch that holds
    the store's short record is that much smaller), else every batch but the last is full."""
    import tensorflow as tf

    from kit.spectrogram import make_loader
    from kit.spectrogram.convert import decode_records

    reference = np.stack([spec_index.read(i) for i in range(len(spec_index))])
    lookup = {reference[i].tobytes(): i for i in range(len(reference))}
    frame_bytes = int(np.prod(spec_index.frame_shape)) * 4
    loader = make_loader("tfrecord", spec_index, batch_size=batch_size, shuffle=shuffle, seed=2,
                         record_frames=record_frames, shard_mb=shard_frames * frame_bytes / 1e6,
                         workdir=tmp_path, progress=False)
    folder = next(tmp_path.glob("spectrogram-tfrecord-*"))
    m = store.complete(folder)
    k = m.meta["options"]["record_frames"]
    assert all(s["count"] % k == 0 for s in m.shards[:-1])  # only the last shard's last record may be short
    record_of = {}
    for s in m.shards:
        for j, r in enumerate(tf.data.TFRecordDataset(str(folder / s["name"]))):
            x, _ = decode_records(r, spec_index.frame_shape)
            record_of.update({lookup[f[..., 0].tobytes()]: (s["name"], j) for f in x.numpy()})
    whole = batch_size % k == 0
    orders = []
    for _ in range(2):
        xs, ys = zip(*[(x.numpy(), y.numpy()) for x, y in loader])
        assert len(ys) == -(-96 // batch_size) and sum(len(y) for y in ys) == 96
        assert max(len(y) for y in ys) <= batch_size
        if whole:
            batch_of = {lookup[f[..., 0].tobytes()]: b for b, x in enumerate(xs) for f in x}
            assert len({(record_of[r], batch_of[r]) for r in batch_of}) == len(set(record_of.values()))
        else:
            assert [len(y) for y in ys[:-1]] == [batch_size] * (len(ys) - 1)
        rows = [lookup[f[..., 0].tobytes()] for f in np.concatenate(xs)]
        assert sorted(rows) == list(range(96))
        assert np.array_equal(np.concatenate(ys), spec_index.labels[rows])
        orders.append(rows)
    # a record's frames stay in their written order: one record alone is the same every epoch
    assert (orders[0] != orders[1]) == (shuffle and len(set(record_of.values())) > 1)
    assert store.verify(folder) == []


@pytest.mark.slow
def test_many_tfrecord_loaders_started_and_left_do_not_crash_the_process(tmp_path):
    """A first batch taken from 32 fresh loaders (as notebook 03 does), both batching paths: a
    guard against the parallel interleave crashing a process that starts many (TensorFlow 2.21
    did, under symbolic checkpointing)."""
    script = f"""
import sys
from pathlib import Path
from kit import samples, spectrogram
csv = samples.make_spectrogram(Path({str(tmp_path)!r}) / "d", files=10, frames_per_file=20, height=8, width=4, seed=0)
index = spectrogram.FrameIndex.from_csv(csv)
folder, m = spectrogram.convert(index, "tfrecord", Path({str(tmp_path)!r}) / "s", shard_mb=0.0004, progress=False)
for i in range(16):
    for batch in (8, 40):  # 2 frames a record of 4: records cut into batches; 10 whole records a batch
        loader = spectrogram.make_loader("tfrecord", index, batch_size=batch, shuffle=i % 2 == 0, folder=folder,
                                         record_frames=4, shard_mb=0.0004, progress=False)
        x, y = next(iter(loader))
        assert x.shape[0] == batch, x.shape
print("done")
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "done" in r.stdout, (r.returncode, r.stderr[-2000:])


def test_a_tfrecord_shard_cut_short_after_the_check_fails_the_epoch_and_resume_is_refused(spec_index, tmp_path):
    """Damage after the loader was built fails the next epoch loudly, never a shorter epoch; the
    records' shuffle buffer cannot be checkpointed, and the refusal names a variant that resumes."""
    import tensorflow as tf

    from kit.epochs import NotResumableError
    from kit.epochs.datasets import iterator_checkpoint
    from kit.spectrogram import make_loader

    frame_bytes = int(np.prod(spec_index.frame_shape)) * 4
    loader = make_loader("tfrecord", spec_index, batch_size=16, seed=4, record_frames=2,
                         shard_mb=20 * frame_bytes / 1e6, folder=tmp_path / "tf", progress=False)
    assert sum(len(y) for y in _epoch(loader)[1]) == 96  # a sound epoch first
    with pytest.raises(NotResumableError, match="'tfrecord' shuffles its records.*'memmap'"):
        iterator_checkpoint(loader, iter(loader))
    m = store.complete(tmp_path / "tf")
    victim = tmp_path / "tf" / m.shards[1]["name"]
    data = victim.read_bytes()
    record = len(data) // m.shards[1]["count"] * 2  # two frames a record
    for cut in (len(data) // 2 + 7, len(data) - record):  # within a record; at a record's end
        victim.write_bytes(data[:cut])
        with pytest.raises(tf.errors.OpError):
            _epoch(loader)


def test_tfrecord_guide_reads_the_tutorials_examples_and_says_why_it_cannot_resume(spec_index, tmp_path):
    """Issue 45: the guide's store holds one tf.train.Example a frame (features frame and
    label), verified by kit.store.verify; its loader delivers every frame once with its
    label, refuses a mid-epoch checkpoint naming a variant that resumes, and fails an epoch
    over a shard damaged after the check rather than end it short."""
    import tensorflow as tf

    from kit.epochs import NotResumableError
    from kit.epochs.datasets import iterator_checkpoint
    from kit.spectrogram import make_loader

    frame_bytes = int(np.prod(spec_index.frame_shape)) * 4
    folder, m = convert(spec_index, "tfexample", tmp_path / "guide", shard_mb=30 * frame_bytes / 1e6, progress=False)
    assert [s["count"] for s in m.shards] == [30, 30, 30, 6] and store.verify(folder) == []
    first = next(iter(tf.data.TFRecordDataset(str(folder / m.shards[0]["name"]))))
    example = tf.train.Example.FromString(first.numpy())
    assert set(example.features.feature) == {"frame", "label"}
    frame = np.frombuffer(example.features.feature["frame"].bytes_list.value[0], "<f4").reshape(spec_index.frame_shape)
    row = _rows_by_bytes(frame[None, ..., None], spec_index.read_all())[0]
    assert list(example.features.feature["label"].int64_list.value) == [spec_index.labels[row]]
    loader = make_loader("tfrecord_guide", spec_index, batch_size=16, folder=folder, progress=False)
    orders = [_epoch_rows(loader, spec_index.read_all(), spec_index.labels) for _ in range(2)]
    assert orders[0] != orders[1]
    with pytest.raises(NotResumableError, match="'tfrecord_guide' shuffles through a shuffle buffer.*'memmap'"):
        iterator_checkpoint(loader, iter(loader))
    victim = folder / m.shards[1]["name"]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2:len(data) // 2 + 100] = b"\xff" * 100
    victim.write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError, match="corrupted record"):
        _epoch(loader)


