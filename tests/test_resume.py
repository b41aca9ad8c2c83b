"""Issue 13 item 13: mid-epoch resume.

Every tf.data loader whose epoch order is computed from the seed (not held in a shuffle
buffer or a Python generator) checkpoints its iterator in a few KB, the same at any size
of data, and resumes to exactly the batches it had not yet given; the others are refused
with the reason. ``kit.timing.fit(checkpoint_dir=...)`` resumes a killed training run.
"""

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from kit import samples

#: An iterator checkpoint holds seeds and positions: a few KB, whatever the data.
SMALL = 16 << 10


def _size(prefix) -> int:
    return sum(os.path.getsize(f) for f in glob.glob(str(prefix) + "*"))


def _batches(it):
    return [(x.numpy(), y.numpy()) for x, y in it]


def _same(a, b):
    return len(a) == len(b) and all(np.array_equal(x1, x2) and np.array_equal(y1, y2)
                                    for (x1, y1), (x2, y2) in zip(a, b))


def _spec_loader(variant, batch_size=4, frames_per_file=7, **options):
    from kit.spectrogram import FrameIndex, make_loader

    def make(index, workdir):
        return make_loader(variant, index, batch_size=batch_size, seed=3, workdir=workdir, progress=False,
                           **options)

    make.batch = batch_size
    make.index = lambda tmp: FrameIndex.from_csv(samples.make_spectrogram(
        tmp / "spec", files=3, frames_per_file=frames_per_file, height=8, width=6, seed=1))
    return make


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
    "spectrogram numpy_function": _spec_loader("numpy_function"),
    "spectrogram memmap": _spec_loader("memmap"),
    "spectrogram memmap blocks": _spec_loader("memmap", order="blocks", block_frames=4, window_blocks=2),
    "spectrogram in_memory": _spec_loader("in_memory"),
    "segmentation tfdata_naive": _seg_loader("tfdata_naive"),
    "segmentation tfdata_tuned": _seg_loader("tfdata_tuned"),
    "segmentation class_index memmap": _seg_loader("class_index"),
    "spectrogram tfrecord": _spec_loader("tfrecord", record_frames=4, shuffle_buffer=8),
    # batches of 8 whole records of 2 frames, and the tail's record of 1 frame last (69 frames)
    "spectrogram tfrecord whole records": _spec_loader("tfrecord", batch_size=16, frames_per_file=23,
                                                       record_frames=2, shuffle_buffer=32),
    "segmentation class_index tfrecord": _seg_loader("class_index", format="tfrecord", shuffle_buffer=3),
}


@pytest.mark.parametrize("name", list(RESUMABLE))
def test_an_iterator_checkpoint_holds_the_position_and_resumes_exactly(name, tmp_path):
    """Item 13: save after a whole epoch and 2 batches; a new loader restored from it gives
    exactly the rest of that epoch, then the same next epoch, from a checkpoint of a few KB."""
    import tensorflow as tf

    from kit.epochs import iterator_checkpoint

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
    from kit.epochs import iterator_checkpoint
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
    "generator": (_spec_loader("generator"), "Python generator"),
}


@pytest.mark.parametrize("name", list(NOT_RESUMABLE))
def test_a_loader_that_cannot_resume_says_which_and_why(name, tmp_path):
    """Item 13: a generator (its position lives in Python) is
    refused with one error naming the variant, the reason and the variant to use instead
    (before: a raw FailedPreconditionError, or a checkpoint holding the buffers)."""
    from kit.epochs import NotResumableError, iterator_checkpoint

    make, why = NOT_RESUMABLE[name]
    loader = make(make.index(tmp_path), tmp_path / "work")
    with pytest.raises(NotResumableError) as e:
        iterator_checkpoint(loader, iter(loader))
    message = str(e.value)
    assert repr(name) in message or name in message
    assert why in message and "resume" in message
    assert "memmap" in message or "numpy_function" in message


def test_a_plain_dataset_is_refused_too():
    """Item 13: iterator_checkpoint resumes only what a kit loader recorded."""
    import tensorflow as tf

    from kit.epochs import NotResumableError, iterator_checkpoint

    ds = tf.data.Dataset.range(10).shuffle(10)
    with pytest.raises(NotResumableError, match="not a kit tf.data loader"):
        iterator_checkpoint(ds, iter(ds))


# --------------------------------------------------------------------------- a killed fit resumes

N, BATCH, EVERY = 24, 3, 2  # 8 steps an epoch, a checkpoint every 2

TRAIN = textwrap.dedent("""
    import sys, time
    import keras
    from kit import timing
    from kit.spectrogram import FrameIndex, make_loader

    csv, ckpt, log, step_s = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    index = FrameIndex.from_csv(csv)  # label = the example's id
    loader = make_loader("in_memory", index, batch_size={BATCH}, seed=5, progress=False)
    out = open(log, "a", buffering=1)
    out.write(f"resume {{timing.resume_point(ckpt)}}\\n")

    class Recording(keras.Model):
        def train_step(self, data):
            out.write(" ".join(str(int(i)) for i in data[1].numpy()) + "\\n")  # before the step
            time.sleep(step_s)
            return super().train_step(data)

    inputs = keras.Input(index.frame_shape + (1,))
    model = Recording(inputs, keras.layers.Dense({N})(keras.layers.Flatten()(inputs)))
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
    epochs = keras.callbacks.LambdaCallback(on_epoch_begin=lambda e, logs: out.write(f"epoch {{e}}\\n"))
    timing.fit(model, loader, epochs=2, checkpoint_dir=ckpt, checkpoint_every={EVERY}, callbacks=[epochs])
    out.write("done\\n")
""").format(N=N, BATCH=BATCH, EVERY=EVERY)


def _ids_csv(folder):
    """N frames of 4x4 in one .npy, the label of each its row number (its id)."""
    folder.mkdir()
    np.save(folder / "f.npy", np.random.default_rng(0).standard_normal((N, 4, 4)).astype(np.float32))
    (folder / "index.csv").write_text("path,frame,label\n" + "".join(f"f.npy,{i},{i}\n" for i in range(N)))
    return folder / "index.csv"


def _read_log(path):
    """{epoch: [batch ids, ...]} and the resume line."""
    epochs, resume, current = {}, None, None
    for line in path.read_text().splitlines():
        if line.startswith("resume"):
            resume = line
        elif line.startswith("epoch"):
            current = int(line.split()[1])
            epochs[current] = []
        elif line and line != "done":
            epochs[current].append([int(i) for i in line.split()])
    return epochs, resume


def _run(script, csv, ckpt, log, step_s, **kw):
    env = dict(os.environ, PYTHONPATH=os.getcwd(), TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen([sys.executable, str(script), str(csv), str(ckpt), str(log), str(step_s)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)


def test_a_killed_fit_resumes_mid_epoch_on_exactly_the_remaining_examples(tmp_path):
    """Item 13: SIGKILL a training process mid-epoch after a checkpoint; the rerun with the same
    checkpoint_dir trains on every example the killed run had not consumed before that
    checkpoint exactly once, in the order an uninterrupted run gives, then the next epoch."""
    from kit.timing import resume_point

    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    csv = _ids_csv(tmp_path / "data")

    # The killed run: stopped while step 7 of epoch 0 trains (checkpoints at 2, 4, 6).
    killed = _run(script, csv, tmp_path / "ckpt", tmp_path / "killed.log", 0.4)
    deadline = time.monotonic() + 240
    while True:
        assert killed.poll() is None, killed.stderr.read()
        text = (tmp_path / "killed.log").read_text() if (tmp_path / "killed.log").exists() else ""
        if len([x for x in text.splitlines() if x[:1].isdigit()]) >= 7:
            break
        assert time.monotonic() < deadline, f"the training run did not reach step 7 in 240 s: {text!r}"
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    epoch, step = resume_point(tmp_path / "ckpt")
    assert (epoch, step) == (0, 6)
    before, _ = _read_log(tmp_path / "killed.log")
    assert len(before[0]) == 7  # step 7 was seen by the killed run after its last checkpoint

    # The rerun with the same folder, and a reference run never interrupted.
    resumed = _run(script, csv, tmp_path / "ckpt", tmp_path / "resumed.log", 0)
    reference = _run(script, csv, tmp_path / "ref", tmp_path / "ref.log", 0)
    for p in (resumed, reference):
        assert p.wait(timeout=240) == 0, p.stderr.read()
    after, resume = _read_log(tmp_path / "resumed.log")
    ref, _ = _read_log(tmp_path / "ref.log")
    assert resume == "resume (0, 6)"

    consumed = [i for batch in before[0][:step] for i in batch]
    remaining = [i for batch in after[0] for i in batch]
    assert sorted(remaining) == sorted(set(range(N)) - set(consumed))  # each remaining example exactly once
    assert len(remaining) == len(set(remaining)) == N - len(consumed)
    assert before[0][:step] == ref[0][:step] and after[0] == ref[0][step:]  # the same order as unbroken
    assert after[1] == ref[1] and sorted(i for b in after[1] for i in b) == list(range(N))
    assert resume_point(tmp_path / "ckpt") == (1, N // BATCH)


def test_fit_refuses_a_checkpoint_dir_for_a_loader_that_cannot_resume(tmp_path):
    """Item 13: fit(checkpoint_dir=...) with the generator variant is one clear error before training."""
    import keras

    from kit import timing
    from kit.epochs import NotResumableError

    make = _spec_loader("generator")
    index = make.index(tmp_path)
    inputs = keras.Input(index.frame_shape + (1,))
    model = keras.Model(inputs, keras.layers.Dense(3)(keras.layers.Flatten()(inputs)))
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(NotResumableError, match="generator"):
        timing.fit(model, make(index, tmp_path / "w"), checkpoint_dir=tmp_path / "ckpt")
    assert not (tmp_path / "ckpt").exists()
