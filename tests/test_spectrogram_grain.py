"""The optional ``grain`` spectrogram variant (Google Grain over an ArrayRecord store): what is
particular to it.

The tests every spectrogram variant passes (every frame once per epoch with its label, index
order unshuffled, the same order for a seed, float16 files) run it too, in
tests/test_spectrogram.py. Here: the ArrayRecord store (atomic, resumable, verified, reused),
the epochs' orders, resume from an iterator's state, the fit pitfall, its options, and the
message where the extra is missing.
"""

import json
import re
import sys

import numpy as np
import pytest

from kit import store, timing
from kit.spectrogram import convert, make_loader
from kit.spectrogram.convert import ARRAYRECORD_LAYOUT, ARRAYRECORD_WRITER_OPTIONS
from kit.spectrogram.grain_options import shuffle_seed
from kit.spectrogram.peers import available
from kit.util import usable_cpus

needs_peers = pytest.mark.skipif(available() is not None, reason=f"{available()}")

#: The module (``kit.spectrogram.convert`` is also the name of the function the package exports).
convert_mod = sys.modules["kit.spectrogram.convert"]


@pytest.fixture(scope="module")
def ref(spec_index):
    """The index's frames read directly, a lookup from a frame's bytes to its row, the labels."""
    frames = np.stack([spec_index.read(i) for i in range(len(spec_index))])
    lookup = {f.tobytes(): i for i, f in enumerate(frames)}
    assert len(lookup) == len(frames)  # frames are distinct: a frame names its row
    return frames, lookup, spec_index.labels


def _rows(batches, ref):
    """Index rows of the frames of ``batches`` ((x, y) pairs), each label checked against the index."""
    _, lookup, labels = ref
    rows = []
    for x, y in batches:
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == np.float32 and x.shape[1:] == (96, 64, 1) and y.dtype == np.int64
        got = [lookup[f[..., 0].tobytes()] for f in x]
        assert np.array_equal(y, labels[got])  # each frame with its label
        rows += got
    return rows


def _loader(index, tmp_path, **options):
    return make_loader("grain", index, batch_size=options.pop("batch_size", 10), seed=options.pop("seed", 3),
                       workdir=tmp_path / "work", progress=False, **options)


# --------------------------------------------------------------------------- the epochs


@needs_peers
def test_every_frame_once_per_epoch_with_its_label_in_a_new_order_each_epoch(spec_index, ref, tmp_path):
    loader = _loader(spec_index, tmp_path)
    assert type(loader).__name__ == "GrainLoader" and len(loader) == loader.cardinality() == 10
    assert loader.settings()["threads"] == usable_cpus() and loader.settings()["processes"] == 0
    assert loader.settings()["prefetch"] == 2 * usable_cpus()
    orders = []
    for e in range(3):
        assert loader.next_epoch == e
        batches = list(timing.iterate(loader))
        assert [len(y) for _, y in batches] == [10] * 9 + [6]  # the last batch partial, never dropped
        rows = _rows(batches, ref)
        assert sorted(rows) == list(range(96))  # every frame exactly once
        orders.append(rows)
    assert orders[0] != orders[1] != orders[2] != orders[0]  # reshuffled every epoch
    # The epochs are Grain's: the endless dataset's batches, epoch after epoch.
    b = loader.steps_per_epoch
    endless = [y for _, y in list(loader.epochs[:3 * b])]
    assert np.array_equal(np.concatenate(endless), ref[2][sum(orders, [])])


@needs_peers
def test_a_float16_store_delivers_float32_frames(spec_index, ref, tmp_path):
    loader = _loader(spec_index, tmp_path, store_dtype="float16", shuffle=False, batch_size=32)
    x = np.concatenate([np.asarray(x) for x, _ in loader])
    assert x.dtype == np.float32
    assert np.array_equal(x[..., 0], ref[0].astype(np.float16).astype(np.float32))


@needs_peers
def test_the_seed_is_spread_so_that_nearby_seeds_share_no_epoch(spec_index, ref, tmp_path):
    """Grain shuffles epoch e with seed + e: the kit's seed is spread first (shuffle_seed)."""
    assert shuffle_seed(3) + 1 != shuffle_seed(4)
    a, b = _loader(spec_index, tmp_path, seed=3), _loader(spec_index, tmp_path, seed=4)
    a_epochs = [_rows(a, ref) for _ in range(2)]
    assert _rows(b, ref) != a_epochs[1]


@needs_peers
def test_measure_reads_it_and_an_iterator_closes(spec_index, tmp_path):
    loader = _loader(spec_index, tmp_path, threads=2, prefetch=3)
    assert loader.settings()["threads"] == 2 and loader.settings()["prefetch"] == 3
    m = timing.measure(loader, num_batches=4, warmup=1)  # reads, then closes its iterator
    assert m.batches == 4 and m.examples == 40
    it = iter(loader)
    next(it)
    it.close()  # its reading threads stop
    with pytest.raises(ValueError, match="closed iterator"):
        next(it)


@needs_peers
def test_options_are_checked(spec_index, tmp_path):
    for bad, message in [({"threads": 0}, "threads must be a positive integer"),
                         ({"processes": -1}, "processes must be a non-negative integer"),
                         ({"store_dtype": "int8"}, "store_dtype must be one of"),
                         ({"shard_mb": 0}, "shard_mb must be positive"),
                         ({"order": "blocks"}, "takes no option")]:
        with pytest.raises(ValueError, match=message):
            _loader(spec_index, tmp_path, **bad)


@needs_peers
def test_processes_read_the_same_epochs(spec_index, ref, tmp_path):
    """processes=1: mp_prefetch in a worker process gives the same batches as the threads alone."""
    threads = _loader(spec_index, tmp_path)
    procs = _loader(spec_index, tmp_path, processes=1)
    for _ in range(2):
        assert _rows(procs, ref) == _rows(threads, ref)


# --------------------------------------------------------------------------- resume


@needs_peers
def test_resume_mid_epoch_delivers_exactly_the_frames_not_yet_delivered(spec_index, ref, tmp_path):
    unbroken = _loader(spec_index, tmp_path)
    want = [_rows(unbroken, ref) for _ in range(3)]  # epochs 0, 1, 2

    loader = _loader(spec_index, tmp_path)
    _rows(loader, ref)  # epoch 0
    it = iter(loader)  # epoch 1, stopped after 4 batches
    first = _rows([next(it) for _ in range(4)], ref)
    state = json.loads(json.dumps(it.get_state()))  # JSON: what a checkpoint file holds
    it.close()
    assert state["epoch"] == 1 and state["batches"] == 4

    again = _loader(spec_index, tmp_path)  # a new process would build the same loader
    it2 = iter(again)  # whatever epoch it would read, the state says which
    it2.set_state(state)
    rest = _rows(it2, ref)
    assert first + rest == want[1]  # exactly the frames not yet delivered, in the same order
    assert sorted(first + rest) == list(range(96)) and not set(first) & set(rest)
    assert _rows(again, ref) == want[2]  # the epochs after it keep their orders

    with pytest.raises(ValueError, match="for 96 examples in batches of 10; this loader has 96 in batches of 16"):
        iter(_loader(spec_index, tmp_path, batch_size=16)).set_state(state)


@needs_peers
def test_resume_through_a_tensorflow_checkpoint(spec_index, ref, tmp_path):
    """As the kit's tf.data loaders: kit.epochs.datasets.iterator_checkpoint saves and restores the position."""
    from kit.epochs.datasets import iterator_checkpoint

    want = _rows(_loader(spec_index, tmp_path), ref)
    loader = _loader(spec_index, tmp_path)
    it = iter(loader)
    first = _rows([next(it) for _ in range(3)], ref)
    path = iterator_checkpoint(loader, it).write(str(tmp_path / "ckpt" / "it"))
    again = _loader(spec_index, tmp_path)
    it2 = iter(again)
    iterator_checkpoint(again, it2).read(path).assert_consumed()
    assert first + _rows(it2, ref) == want


@needs_peers
def test_fit_with_checkpoint_dir_resumes_a_stopped_run_on_the_remaining_frames(spec_index, ref, tmp_path):
    """kit.timing.fit(checkpoint_dir=...) takes the grain loader as it takes the tf.data ones."""
    import keras

    class Stop(Exception):
        pass

    def train(seen, stop_after=None):
        class Recording(keras.Model):
            def train_step(self, data):
                if stop_after is not None and len(seen) == stop_after:
                    raise Stop()
                seen.append(_rows([(data[0].numpy(), data[1].numpy())], ref))
                return super().train_step(data)

        inputs = keras.Input((96, 64, 1))
        model = Recording(inputs, keras.layers.Dense(5)(keras.layers.GlobalAveragePooling2D()(inputs)))
        model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
        timing.fit(model, _loader(spec_index, tmp_path, batch_size=16), epochs=2, checkpoint_dir=tmp_path / "ck",
                   checkpoint_every=2)

    stopped, resumed = [], []
    with pytest.raises(Stop):
        train(stopped, stop_after=5)  # checkpoints after steps 2 and 4; step 6 never trains
    assert timing.resume_point(tmp_path / "ck") == (0, 4)
    train(resumed)
    consumed = [r for batch in stopped[:4] for r in batch]
    rest = [r for batch in resumed[:2] for r in batch]
    assert sorted(consumed + rest) == list(range(96))  # the stopped epoch: every frame exactly once
    assert len(resumed) == 2 + 6 and sorted(r for b in resumed[2:] for r in b) == list(range(96))


# --------------------------------------------------------------------------- the fit pitfall


def _fit_orders(data, ref, *, epochs_, **fit):
    """The frames ``model.fit(data, ...)`` trained on, epoch by epoch (rows of the index)."""
    import keras

    seen = []

    class Recording(keras.Model):
        def train_step(self, batch):
            seen[-1] += _rows([(batch[0].numpy(), batch[1].numpy())], ref)
            return super().train_step(batch)

    inputs = keras.Input((96, 64, 1))
    model = Recording(inputs, keras.layers.Dense(5)(keras.layers.GlobalAveragePooling2D()(inputs)))
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
    new_epoch = keras.callbacks.LambdaCallback(on_epoch_begin=lambda e, logs: seen.append([]))
    model.fit(data, epochs=epochs_, verbose=0, callbacks=[new_epoch], shuffle=False, **fit)
    return seen


@needs_peers
def test_the_fit_pitfall_same_order_without_repeat_new_order_with_it(spec_index, ref, tmp_path):
    """Keras's Grain adapter iterates a dataset afresh each epoch when steps_per_epoch is unset:
    a plain MapDataset (source, shuffle, batch) then trains every epoch in the same order. With
    repeat() and steps_per_epoch (loader.endless()), and with the loader itself (a new epoch per
    iteration), every epoch has its own order, every frame once."""
    loader = _loader(spec_index, tmp_path, batch_size=16)
    plain = _fit_orders(loader.one_epoch, ref, epochs_=2)
    assert sorted(plain[0]) == list(range(96)) and plain[0] == plain[1]  # the pitfall: the same order

    right = _fit_orders(loader.endless(), ref, epochs_=2, steps_per_epoch=loader.steps_per_epoch)
    assert right[0] == plain[0]  # epoch 0 of the endless dataset is the plain one's
    assert right[1] != right[0] and all(sorted(e) == list(range(96)) for e in right)

    direct = _fit_orders(_loader(spec_index, tmp_path, batch_size=16), ref, epochs_=2)
    assert direct[1] != direct[0] and all(sorted(e) == list(range(96)) for e in direct)


# --------------------------------------------------------------------------- the store


class _Writers:
    """Stands in for ``array_record_module``: counts the shards opened for writing and fails,
    mid-shard, in the one numbered ``fail_on``."""

    def __init__(self, fail_on=None):
        from array_record.python import array_record_module

        self.real, self.fail_on, self.opened = array_record_module, fail_on, []
        self.ArrayRecordReader = array_record_module.ArrayRecordReader
        outer = self

        class Writer:
            def __init__(self, path, options):
                outer.opened.append(path)
                self.w, self.n, self.fail = outer.real.ArrayRecordWriter(path, options), 0, len(outer.opened) == fail_on

            def write(self, record):
                if self.fail and self.n == 3:
                    raise RuntimeError("interrupted")
                self.w.write(record)
                self.n += 1

            def close(self):
                self.w.close()

        self.ArrayRecordWriter = Writer


@needs_peers
def test_convert_is_atomic_resumable_verified_and_found_in_place(spec_index, tmp_path, monkeypatch):
    out = tmp_path / "ar"
    writers = _Writers(fail_on=3)
    monkeypatch.setattr(convert_mod, "_array_record_module", lambda: writers)
    with pytest.raises(RuntimeError, match="interrupted"):
        convert(spec_index, "arrayrecord", out, shard_mb=0.5, workers=1, progress=False)
    assert len(writers.opened) == 3
    assert store.complete(out) is None  # never looks complete
    assert not [p for p in out.rglob("*") if ".tmp-" in p.name]  # no half-written shard left

    writers = _Writers()
    monkeypatch.setattr(convert_mod, "_array_record_module", lambda: writers)
    folder, m = convert(spec_index, "arrayrecord", out, shard_mb=0.5, workers=1, progress=False)
    assert len(writers.opened) == 3  # the two finished shards were kept, the rest written
    assert m.kind == "spectrogram-arrayrecord" and m.count == 96 and m.meta["built"] == 96 - 2 * 20
    assert [s.name for s in m.shards] == [f"shard-{k:05d}-of-00005.array_record" for k in range(5)]
    assert [s.count for s in m.shards] == [20, 20, 20, 20, 16]
    assert m.meta["record_bytes"] == 96 * 64 * 4 + 8 and store.verify(folder) == []

    # A second convert finds the store in place: nothing written, the same manifest.
    again, m2 = convert(spec_index, "arrayrecord", out, shard_mb=0.5, workers=1, progress=False)
    assert again == folder and len(writers.opened) == 3 and m2.to_dict() == m.to_dict()

    # The records are the layout the module docstring states: frame bytes, then the label.
    reader = writers.ArrayRecordReader(str(folder / m.shards[1].name))
    record = reader.read([0])[0]
    reader.close()
    assert len(record) == 96 * 64 * 4 + 8
    assert np.array_equal(np.frombuffer(record[:-8], "<f4").reshape(96, 64), spec_index.read(20))
    assert int(np.frombuffer(record[-8:], "<i8")[0]) == spec_index.labels[20]


@needs_peers
def test_a_damaged_shard_is_named_by_verify_and_refused_by_the_loader(spec_index, tmp_path):
    folder, m = convert(spec_index, "arrayrecord", tmp_path / "ar", shard_mb=0.5, progress=False)
    victim = folder / m.shards[2].name
    data = bytearray(victim.read_bytes())
    data[len(data) // 2:len(data) // 2 + 100] = b"\xff" * 100  # same size, damaged content
    victim.write_bytes(bytes(data))
    problems = store.verify(folder)
    assert len(problems) == 1 and m.shards[2].name in problems[0] and "corrupt" in problems[0]
    with pytest.raises(store.StoreError, match=m.shards[2].name):
        make_loader("grain", spec_index, batch_size=8, folder=folder, progress=False)

    # With the check at open turned off, the read fails, naming the shard and the record.
    loader = make_loader("grain", spec_index, batch_size=8, folder=folder, progress=False, check_store=False)
    with pytest.raises(store.StoreError, match=rf"{m.shards[2].name}: record (\d+) \(index row (\d+)\) unreadable "
                                               r"\(Corrupted Riegeli/records file") as e:
        list(loader)
    record, row = map(int, re.search(r"record (\d+) \(index row (\d+)\)", str(e.value)).groups())
    assert row == 40 + record  # shards 0 and 1 hold rows 0-39

    with open(victim, "r+b") as f:
        f.truncate(victim.stat().st_size // 2)
    problems = store.verify(folder)
    assert len(problems) == 1 and m.shards[2].name in problems[0] and "truncated" in problems[0]
    with pytest.raises(store.StoreError, match=m.shards[2].name):
        make_loader("grain", spec_index, batch_size=8, folder=folder, progress=False, check_store=False)


@needs_peers
def test_verify_reads_every_record_of_a_shard(spec_index, tmp_path):
    """A shard whose checksums match but whose records are not the layout (a writer's bug): the deep check names it."""
    from array_record.python import array_record_module

    from kit.store.checks import ends_digest, sha256_file

    folder, m = convert(spec_index, "arrayrecord", tmp_path / "ar", shard_mb=0.5, progress=False)
    victim = folder / m.shards[3].name
    w = array_record_module.ArrayRecordWriter(str(victim), ARRAYRECORD_WRITER_OPTIONS)
    for k in range(20):
        w.write(b"\0" * (10 if k == 7 else m.meta["record_bytes"]))
    w.close()
    m.shards[3] = store.ShardRecord(victim.name, 20, victim.stat().st_size, sha256_file(victim),
                                    ends_digest(victim))
    m.save(folder)
    problems = store.verify(folder)
    assert problems == [f"{victim}: record 7 holds 10 bytes, the layout {m.meta['record_bytes']} "
                        f"({ARRAYRECORD_LAYOUT})"]


@needs_peers
def test_the_command_line_converts_to_arrayrecord(spec_index, tmp_path, capsys):
    from kit.cli import main

    out = tmp_path / "ar"
    assert main(["convert", "spectrogram", "--index", str(spec_index.csv_path), "--to", "arrayrecord",
                 "--out", str(out), "--shard-mb", "0.5", "--store-dtype", "float16"]) == 0
    assert "96 frames in 3 file(s)" in capsys.readouterr().out  # 40 float16 frames a shard of 0.5 MB
    m = store.Manifest.load(out)
    assert m.kind == "spectrogram-arrayrecord" and m.meta["dtype"] == "float16" and store.verify(out) == []
    loader = make_loader("grain", spec_index, batch_size=32, folder=str(out), progress=False)
    assert loader.folder == out and sum(len(y) for _, y in loader) == 96


# --------------------------------------------------------------------------- the extra missing


@pytest.mark.parametrize("module, message", [
    ("grain", "Google Grain is not installed"),
    # Where Grain itself is missing, that is what available() names first.
    pytest.param("array_record.python", "ArrayRecord is not installed", marks=needs_peers)])
def test_a_missing_extra_says_what_to_install(monkeypatch, spec_index, tmp_path, module, message):
    monkeypatch.setitem(sys.modules, module, None)  # as where it is not installed
    available.cache_clear()
    try:
        why = available()
        assert why.startswith(message) and "pip install 'kit[peers]'" in why
        with pytest.raises(ImportError, match=r"converting to arrayrecord needs the peers extra .*"
                                              r"pip install 'kit\[peers\]'"):
            convert(spec_index, "arrayrecord", tmp_path / "ar", progress=False)
        with pytest.raises(ImportError, match=r"the grain variant needs the peers extra .*pip install 'kit\[peers\]'"):
            make_loader("grain", spec_index, batch_size=4, workdir=tmp_path, progress=False)
        assert not (tmp_path / "ar").exists()  # refused before anything is written
    finally:
        available.cache_clear()
