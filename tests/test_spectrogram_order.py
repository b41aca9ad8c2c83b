"""The order a spectrogram loader delivers, read back from the frames (kit.spectrogram.order)."""

from __future__ import annotations

import numpy as np
import pytest

from kit.errors import DataError


@pytest.fixture(scope="module")
def idx(tmp_path_factory):
    """12 files of 16 frames: enough files that a shuffled batch of 16 mixes them."""
    from kit import samples
    from kit.spectrogram import FrameIndex

    root = tmp_path_factory.mktemp("order")
    return FrameIndex.from_csv(samples.cached("spectrogram", workdir=root, files=12, frames_per_file=16))


def _epochs(loader, idx, n=2, **kw):
    from kit.spectrogram.order import epoch_rows, frame_digests

    digests = frame_digests(idx, kw.get("store_dtype", "float32"))
    return [epoch_rows(loader, idx, digests=digests) for _ in range(n)]


def test_file_order_is_read_back_exactly_and_repeats(idx):
    from kit.spectrogram import make_loader
    from kit.spectrogram.order import order_quality

    loader = make_loader("in_memory", idx, batch_size=16, shuffle=False, progress=False)
    (rows, sizes), (again, _) = _epochs(loader, idx)
    assert rows.tolist() == list(range(len(idx))) and sizes == [16] * 12
    q = order_quality(idx, again, sizes, previous=rows)
    assert q["one_file_batches"] == 1.0 and q["files_per_batch"] == 1.0
    assert q["same_position"] == 1.0 and q["batch_mates_kept"] == 1.0


def test_a_shuffled_epoch_mixes_files_and_changes_between_epochs(idx):
    from kit.spectrogram import make_loader
    from kit.spectrogram.order import order_quality

    loader = make_loader("in_memory", idx, batch_size=16, shuffle=True, seed=1, progress=False)
    (rows, sizes), (again, _) = _epochs(loader, idx)
    assert sorted(rows.tolist()) == sorted(again.tolist()) == list(range(len(idx)))  # exactly once each
    q = order_quality(idx, again, sizes, previous=rows)
    assert q["one_file_batches"] < 0.2 and q["files_per_batch"] >= 5
    assert q["same_position"] < 0.2 and q["batch_mates_kept"] < 0.3


def test_records_of_many_frames_keep_their_frames_together_between_epochs(idx, tmp_path):
    """The TFRecord layouts side by side: a batch of 32 is 8 whole records of 4 frames (a record's
    frames share a batch in every epoch), against a record per frame, the same reader otherwise."""
    from kit.spectrogram import make_loader
    from kit.spectrogram.order import order_quality

    got = {}
    for k in (1, 4):
        loader = make_loader("tfrecord", idx, batch_size=32, shuffle=True, seed=0, progress=False,
                             workdir=tmp_path, record_frames=k, shard_mb=1)
        (rows, sizes), (again, _) = _epochs(loader, idx)
        assert sorted(again.tolist()) == list(range(len(idx)))
        got[k] = order_quality(idx, again, sizes, previous=rows)
    assert got[4]["batch_mates_kept"] >= 3 / 31 and got[4]["batch_mates_kept"] > got[1]["batch_mates_kept"], got
    assert got[4]["same_position"] < 0.5 and got[1]["same_position"] < 0.5  # both reshuffle


def test_a_wrong_label_or_a_foreign_frame_is_named(idx):
    from kit.spectrogram.order import epoch_rows, frame_digests

    digests = frame_digests(idx)
    frames = idx.read_all()
    bad = [(frames[:4], (idx.labels[:4] + 1) % idx.num_classes)]
    with pytest.raises(DataError, match="row 0 delivered with label"):
        epoch_rows(bad, idx, digests=digests)
    with pytest.raises(DataError, match="no row of"):
        epoch_rows([(np.zeros((1,) + idx.frame_shape, np.float32), idx.labels[:1])], idx, digests=digests)


def test_fit_orders_reads_what_fit_trains_on(idx):
    """A tf.data loader reshuffled every epoch gives fit a new order each epoch, every frame
    once; one built without reshuffling gives it the same order."""
    from kit.spectrogram import make_loader
    from kit.spectrogram.order import fit_orders

    shuffled = fit_orders(make_loader("in_memory", idx, batch_size=32, shuffle=True, seed=0, progress=False), idx)
    assert all(sorted(e.tolist()) == list(range(len(idx))) for e in shuffled)
    assert not np.array_equal(shuffled[0], shuffled[1])
    fixed = fit_orders(make_loader("in_memory", idx, batch_size=32, shuffle=False, progress=False), idx)
    assert np.array_equal(fixed[0], fixed[1]) and fixed[0].tolist() == list(range(len(idx)))
