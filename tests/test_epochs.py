"""kit.epochs: the epoch record of a loader, the block epoch order, and mid-epoch resume (issue 13
item 13): every tf.data loader whose epoch order is computed from the seed (not held in a shuffle
buffer or a Python generator) checkpoints its iterator in a few KB, the same at any size of data,
and resumes to exactly the batches it had not yet given; the others are refused with the reason."""

from __future__ import annotations

import glob
import os

import numpy as np
import pytest
from helpers import spec_loader

from kit import epochs, samples


def test_epoch_record_of_a_tf_data_loader(spec_index):
    from kit.spectrogram import make_loader

    loader = make_loader("in_memory", spec_index, batch_size=10)
    rec = epochs.epoch_of(loader)
    assert (rec.examples, rec.batch_size, rec.batches) == (len(spec_index), 10, 10)
    assert rec.body is not None and int(rec.body.cardinality()) == 10
    assert sum(len(y) for _, y in rec.body.as_numpy_iterator()) == len(spec_index)
    assert epochs.epoch_of(loader.repeat()) is None  # a derived pipeline is not the loader
    assert epochs.epoch_of(3) is None


def test_block_order_every_row_once_reshuffled_deterministic_and_local():
    from kit.epochs.datasets import block_order_dataset

    def epochs(seed, count=2):
        ds = block_order_dataset(96, 10, block=4, window=3, seed=seed)
        return [np.concatenate([b.numpy() for b in ds]) for _ in range(count)]

    e1, e2 = epochs(5)
    assert sorted(e1) == sorted(e2) == list(range(96))  # every row exactly once per epoch
    assert not np.array_equal(e1, e2)  # reshuffled each epoch
    f1, f2 = epochs(5)
    assert np.array_equal(e1, f1) and np.array_equal(e2, f2)  # deterministic by seed
    assert not np.array_equal(epochs(6, 1)[0], e1)
    # Local: each window of 3 blocks x 4 rows draws from 3 blocks of consecutive rows ...
    for w in range(8):
        assert len(set(e1[w * 12:(w + 1) * 12] // 4)) == 3
    # ... and is shuffled within: not block after block in order.
    assert not all(np.array_equal(np.sort(e1[w * 12:(w + 1) * 12]), e1[w * 12:(w + 1) * 12]) for w in range(8))
    sizes = [len(b) for b in block_order_dataset(96, 10, block=4, window=3, seed=5)]
    assert sizes == [10] * 9 + [6]
    unshuffled = np.concatenate([b.numpy() for b in block_order_dataset(96, 10, shuffle=False)])
    assert np.array_equal(unshuffled, np.arange(96))
    with pytest.raises(ValueError, match="block must be a positive integer"):
        block_order_dataset(96, 10, block=0)


@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("ahead", [1, 2])
def test_block_order_read_ahead_lists_every_block_once_before_its_window(shuffle, ahead):
    """With ``read_ahead`` the order also says which blocks to ask for, batch by batch: the
    same rows as without it, every block once per epoch, each window's blocks listed where
    the window ``ahead`` before it begins (the first windows at the first batch)."""
    from kit.epochs.datasets import block_order_dataset

    n, bs, block, window = 100, 10, 4, 3  # 25 blocks (none short), 9 windows (the last of 1 block)
    plain = block_order_dataset(n, bs, block=block, window=window, seed=5, shuffle=shuffle)
    ahead_ds = block_order_dataset(n, bs, block=block, window=window, seed=5, shuffle=shuffle, read_ahead=ahead)
    for _epoch in range(2):
        got = [(r.numpy(), b.numpy()) for r, b in ahead_ds]
        assert [r.tolist() for r, _ in got] == [r.numpy().tolist() for r in plain]  # the same rows
        assert all(len(b) == (ahead + 1) * window for _, b in got)  # padded with -1
        listed = [b[b >= 0] for _, b in got]
        assert sorted(np.concatenate(listed).tolist()) == list(range(25))  # every block once
        order = np.concatenate([r for r, _ in got])
        rows_per_window = block * window  # the windows' rows follow each other in the order
        windows = [set((order[w * rows_per_window:(w + 1) * rows_per_window] // block).tolist()) for w in range(9)]
        begins = [w * rows_per_window // bs for w in range(9)]  # the batch where each window begins
        for w, blocks in enumerate(windows):
            at = 0 if w <= ahead else begins[w - ahead]
            assert set(listed[at].tolist()) >= blocks and at <= begins[w], (w, at)
        assert sum(len(x) > 0 for x in listed) == 9 - ahead  # the other batches list none
    with pytest.raises(ValueError, match="read_ahead must be a whole number"):
        block_order_dataset(n, bs, read_ahead=-1)
    with pytest.raises(ValueError, match="read_ahead must be a whole number"):
        block_order_dataset(n, bs, read_ahead=True)


#: An iterator checkpoint holds seeds and positions: a few KB, whatever the data.
SMALL = 16 << 10


def _size(prefix) -> int:
    return sum(os.path.getsize(f) for f in glob.glob(str(prefix) + "*"))


def _batches(it):
    return [(x.numpy(), y.numpy()) for x, y in it]


def _same(a, b):
    return len(a) == len(b) and all(np.array_equal(x1, x2) and np.array_equal(y1, y2)
                                    for (x1, y1), (x2, y2) in zip(a, b))


def _seg_loader(variant, **options):
    from kit.segmentation import PairIndex, Palette, make_loader

    def make(index, workdir):
        return make_loader(variant, index, make.palette, batch_size=2, size=32, seed=3, workdir=workdir,
                           progress=False, **options)

    def index(tmp):
        csv = samples.make_segmentation(tmp / "seg", images=7, size=32, seed=1)
        make.palette = Palette.from_csv(csv.parent / "class_dict.csv")
        return PairIndex.from_csv(csv)

    make.index = index
    make.batch = 2
    return make


RESUMABLE = {
    "spectrogram numpy_function": spec_loader("numpy_function"),
    "spectrogram memmap": spec_loader("memmap"),
    "spectrogram memmap blocks": spec_loader("memmap", order="blocks", block_frames=4, window_blocks=2),
    "spectrogram in_memory": spec_loader("in_memory"),
    "segmentation tfdata_naive": _seg_loader("tfdata_naive"),
    "segmentation tfdata_tuned": _seg_loader("tfdata_tuned"),
    "segmentation class_index memmap": _seg_loader("class_index"),
}


@pytest.mark.parametrize("name", list(RESUMABLE))
def test_an_iterator_checkpoint_holds_the_position_and_resumes_exactly(name, tmp_path):
    """Item 13: save after a whole epoch and 2 batches; a new loader restored from it gives
    exactly the rest of that epoch, then the same next epoch, from a checkpoint of a few KB."""
    import tensorflow as tf

    from kit.epochs.datasets import iterator_checkpoint

    make = RESUMABLE[name]
    index = make.index(tmp_path)
    loader = make(index, tmp_path / "work")
    _batches(loader)  # a whole first epoch: the checkpoint must carry the epoch too
    it = iter(loader)
    seen = [next(it), next(it)]
    prefix = iterator_checkpoint(loader, it).write(str(tmp_path / "ckpt" / "it"))
    rest, following = _batches(it), _batches(loader)
    assert len(seen) + len(rest) == -(-len(index) // make.batch)
    size = _size(prefix)
    assert 0 < size < SMALL, f"{name}: a {size}-byte iterator checkpoint holds more than positions"

    again = make(index, tmp_path / "work")  # a new loader, as after a restart
    it2 = iter(again)
    tf.train.Checkpoint(iterator=it2).read(prefix).assert_consumed()
    assert _same(_batches(it2), rest)
    assert _same(_batches(again), following)
    assert not _same(following, rest)  # sanity: the epochs differ


def test_a_memmap_checkpoint_does_not_grow_with_the_data(tmp_path):
    """Item 13: a memmap iterator checkpoint is a few KB at 2,000 and at 8,000 frames
    (before: the cached store itself, 30.6 MB for 29.5 MB of frames)."""
    from kit.epochs.datasets import iterator_checkpoint
    from kit.spectrogram import FrameIndex, make_loader

    sizes = []
    for files in (4, 16):
        csv = samples.make_spectrogram(tmp_path / f"d{files}", files=files, frames_per_file=500, height=16,
                                       width=8, seed=2)
        # batches of 48: both sizes end in a short batch, so their pipelines have the same shape
        loader = make_loader("memmap", FrameIndex.from_csv(csv), batch_size=48, workdir=tmp_path / "w",
                             progress=False)
        it = iter(loader)
        for _ in range(5):
            next(it)
        sizes.append(_size(iterator_checkpoint(loader, it).write(str(tmp_path / f"c{files}" / "it"))))
    data = 16 * 500 * 16 * 8 * 4
    assert max(sizes) < 64 << 10 < data, sizes
    assert abs(sizes[1] - sizes[0]) < 256, f"the checkpoint grew with the data: {sizes}"


NOT_RESUMABLE = {
    "generator": (spec_loader("generator"), "Python generator"),
    "tfrecord": (spec_loader("tfrecord", record_frames=4, shuffle_buffer=8), "shuffle buffer"),
    "class_index": (_seg_loader("class_index", format="tfrecord", shuffle_buffer=3), "shuffle buffer"),
}


@pytest.mark.parametrize("name", list(NOT_RESUMABLE))
def test_a_loader_that_cannot_resume_says_which_and_why(name, tmp_path):
    """Item 13: a generator (its position lives in Python) is
    refused with one error naming the variant, the reason and the variant to use instead
    (before: a raw FailedPreconditionError, or a checkpoint holding the buffers)."""
    from kit.epochs import NotResumableError
    from kit.epochs.datasets import iterator_checkpoint

    make, why = NOT_RESUMABLE[name]
    loader = make(make.index(tmp_path), tmp_path / "work")
    with pytest.raises(NotResumableError) as e:
        iterator_checkpoint(loader, iter(loader))
    message = str(e.value)
    assert repr(name) in message and why in message
    assert why in message and "resume" in message
    assert "memmap" in message or "numpy_function" in message


def test_a_plain_dataset_is_refused_too():
    """Item 13: iterator_checkpoint resumes only what a kit loader recorded."""
    import tensorflow as tf

    from kit.epochs import NotResumableError
    from kit.epochs.datasets import iterator_checkpoint

    ds = tf.data.Dataset.range(10).shuffle(10)
    with pytest.raises(NotResumableError, match="not a kit tf.data loader"):
        iterator_checkpoint(ds, iter(ds))
