"""kit.timing.fitting: StepTimer, fit, and ``fit(checkpoint_dir=...)`` resuming a killed training run
mid-epoch on exactly the remaining examples."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from helpers import sleepy, spec_loader

from kit import timing


def _recording_model():
    """A model whose train step adds up what it was fed, to check what reached it."""
    import keras
    import tensorflow as tf

    class Recorder(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)
            self.total = tf.Variable(0.0, trainable=False, dtype=tf.float64)
            self.count = tf.Variable(0, trainable=False, dtype=tf.int64)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            x, y = data
            self.total.assign_add(tf.reduce_sum(tf.cast(x, tf.float64)))
            self.count.assign_add(tf.cast(tf.shape(x)[0], tf.int64))
            return {"seen": self.count}

    m = Recorder()
    m.compile("sgd")
    m(np.zeros((1, 3), np.float32))
    return m


def test_step_timer_attributes_input_latency_to_waiting():
    model = _recording_model()
    timer = timing.StepTimer()
    model.fit(timer.wrap(sleepy(6, 0.03)), epochs=2, callbacks=[timer], verbose=0)
    steps = timer.steps()
    assert list(steps.columns) == ["epoch", "step", "steps", "step_s", "wait_s", "compute_s", "examples", "hook_s"]
    assert (steps["steps"] == 1).all() and (steps["examples"] == 8).all()
    # The batch pull is left out of the hook's own time: with it, every hook_s would be at least
    # its wait_s (30 ms of sleep). A median, so one step descheduled on a busy machine cannot fail it.
    assert (steps["hook_s"] >= 0).all() and steps["hook_s"].median() < steps["wait_s"].min()
    assert len(steps) == 12 and list(steps["epoch"]) == [0] * 6 + [1] * 6
    assert (steps["wait_s"] >= 0.029).all()
    assert (steps["step_s"] >= steps["wait_s"]).all()
    epochs = timer.epochs()
    assert list(epochs["steps"]) == [6, 6]
    # Each step's sleep in the loader is counted as waiting; the share is wait over step time. How
    # large it is depends on the machine's load (tracing, a busy core), so no bound is set on it.
    assert (epochs["wait_s"] >= 6 * 0.029).all()
    assert epochs["input_share"].tolist() == pytest.approx((epochs["wait_s"] / epochs["step_s"]).tolist())
    assert ((epochs["input_share"] > 0) & (epochs["input_share"] <= 1)).all()
    # Every batch reached the model exactly once per epoch: sum of i * 8 * 3 over i < 6.
    assert int(model.count.numpy()) == 2 * 6 * 8
    assert model.total.numpy() == pytest.approx(2 * sum(i * 8 * 3 for i in range(6)))


def test_step_timer_delivers_tf_data_with_partial_last_batch():
    import tensorflow as tf

    x = np.arange(30, dtype=np.float32).reshape(10, 3)
    ds = tf.data.Dataset.from_tensor_slices((x, np.zeros(10))).batch(4)
    model = _recording_model()
    timer = timing.StepTimer()
    model.fit(timer.wrap(ds), epochs=3, callbacks=[timer], verbose=0)
    assert int(model.count.numpy()) == 30
    assert model.total.numpy() == pytest.approx(3 * x.sum())
    assert list(timer.epochs()["steps"]) == [3, 3, 3]


def test_step_timer_delivers_batches_padded_to_their_own_longest_sequence():
    """Sequences padded to each batch's longest (a CTC model's spectrograms): a dimension past the batch's
    that differs between the first two batches is left unknown, as Keras leaves a generator's; every batch
    reaches the step, one-shot generator and re-iterable source alike (heldout10's vui_ctc stopped at the third
    batch's length)."""
    import keras
    import tensorflow as tf

    lengths = [5, 7, 3, 9]

    def batches():
        for n in lengths:
            yield np.ones((2, n, 3), np.float32), np.zeros((2, 1), np.float32)

    class Counted(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)
            self.steps = tf.Variable(0, trainable=False, dtype=tf.int64)

        def call(self, x):
            return self.dense(tf.reduce_mean(x, axis=1))

        def train_step(self, data):
            self.steps.assign_add(1)
            return {"steps": self.steps}

    class Again:
        def __iter__(self):
            return batches()

    for source in (batches(), Again()):
        model = Counted()
        model.compile("sgd")
        timer = timing.StepTimer()
        model.fit(timer.wrap(source), epochs=1, callbacks=[timer], verbose=0)  # before: InvalidArgumentError
        assert len(timer.steps()) == len(lengths) and int(model.steps.numpy()) >= len(lengths)


def test_step_timer_without_wrap_records_steps_only():
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices((np.ones((8, 3), np.float32), np.zeros(8))).batch(4)
    model = _recording_model()
    timer = timing.StepTimer()
    model.fit(ds, epochs=1, callbacks=[timer], verbose=0)
    assert len(timer.steps()) == 2
    assert timer.steps()["wait_s"].isna().all()
    assert timer.epochs()["input_share"].isna().all()
    assert timer.epochs()["examples"].isna().all()  # not counted without wrap


def test_fit_times_each_epoch_and_counts_examples():
    model = _recording_model()
    df = timing.fit(model, sleepy(6, 0.02), epochs=2, epoch_examples=1000)
    assert list(df["epoch"]) == [1, 2] and list(df["steps"]) == [6, 6] and list(df["examples"]) == [48, 48]
    assert list(df.columns[:6]) == ["epoch", "steps", "examples", "seconds", "examples_per_s", "input_share"]
    assert (df["seconds"] >= df["step_s"]).all() and (df["step_s"] >= 6 * 0.02).all()
    assert (df["wait_s"] >= 6 * 0.019).all()  # every batch's sleep counted as waiting for input
    assert df["input_share"].tolist() == pytest.approx((df["wait_s"] / df["step_s"]).tolist())
    assert ((df["input_share"] > 0) & (df["input_share"] <= 1)).all()
    assert df["examples_per_s"].tolist() == pytest.approx((df["examples"] / df["seconds"]).tolist())
    assert df["epoch_s_1000"].tolist() == pytest.approx((1000 / df["examples_per_s"]).tolist())
    assert df["seen"].tolist() == [48, 96]  # the model's own logged metric, per epoch
    assert int(model.count.numpy()) == 96


def test_fit_without_wait_takes_the_count_from_the_loader(spec_index):
    import keras

    from kit.models import small_model
    from kit.spectrogram import make_loader

    model = small_model(spec_index.frame_shape, spec_index.num_classes, head_only=True)
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True), steps_per_execution=2)
    loader = make_loader("in_memory", spec_index, batch_size=10)  # 96 frames: 9 batches of 10, one of 6
    with pytest.raises(ValueError, match="steps_per_execution=1"):
        timing.fit(model, loader)
    df = timing.fit(model, loader, wait=False, epochs=2)
    assert list(df["steps"]) == [10, 10] and list(df["examples"]) == [96, 96]
    assert df["input_share"].isna().all()
    df = timing.fit(model, loader, wait=False, steps_per_epoch=4)
    assert list(df["examples"]) == [40]


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


@pytest.mark.slow
def test_a_killed_fit_resumes_mid_epoch_on_exactly_the_remaining_examples(tmp_path):
    """Item 13: SIGKILL a training process mid-epoch after a checkpoint; the rerun with the same
    checkpoint_dir trains on every example the killed run had not consumed before that
    checkpoint exactly once, in the order an uninterrupted run gives, then the next epoch."""
    from kit.timing.fitting import resume_point

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

    make = spec_loader("generator")
    index = make.index(tmp_path)
    inputs = keras.Input(index.frame_shape + (1,))
    model = keras.Model(inputs, keras.layers.Dense(3)(keras.layers.Flatten()(inputs)))
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(NotResumableError, match="generator"):
        timing.fit(model, make(index, tmp_path / "w"), checkpoint_dir=tmp_path / "ckpt")
    assert not (tmp_path / "ckpt").exists()
