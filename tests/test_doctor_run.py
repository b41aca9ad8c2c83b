"""``python -m kit doctor run SCRIPT`` and ``kit.doctor.watch()``: each hook path on small scripts written as
users write them (fit with each input kind, a custom loop, a child process, a raising script, a script
that never trains). Most run in this process through ``kit.doctor.script.main`` (the command's own
entry); the ones that must end a process run it as a command. No timings are asserted."""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import keras
import numpy as np
import pytest

from kit.doctor import run, script

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # each runs a script and a diagnosis of seconds (make check leaves them out)

HEAD = '''
import sys, time
import numpy as np
import keras

def iou(y_true, y_pred):  # a plain-function metric, as training scripts write them
    i = keras.ops.sum(y_true * y_pred)
    return i / (keras.ops.sum(y_true) + keras.ops.sum(y_pred) - i + 1e-6)

def total_loss(y_true, y_pred):  # a plain-function loss: clone_model's compile config cannot carry it
    return keras.losses.binary_crossentropy(y_true, y_pred) + 1 - iou(y_true, y_pred)

def features(x):
    s = 0.0
    for _ in range(20):  # deterministic per-example NumPy work
        s = s + float(np.abs(np.fft.rfft(x)).sum())
    return np.tanh(x + 1e-9 * s).astype("float32")

def make_model():
    inp = keras.Input((32,))
    model = keras.Model(inp, keras.layers.Dense(1, activation="sigmoid")(inp))
    model.compile("adam", loss=total_loss, metrics=[iou])
    return model

def example(i):
    x = features(np.random.default_rng(i).random(32).astype("float32"))
    return x, np.float32(x[0] > 0.5)
'''


#: A PyDataset as users write one: examples computed in __getitem__.
FRAMES = '''
class Frames(keras.utils.PyDataset):
    def __init__(self, n, batch, **kwargs):
        super().__init__(**kwargs)
        self.n, self.batch = n, batch
    def __len__(self):
        return self.n // self.batch
    def __getitem__(self, i):
        xs, ys = zip(*(example(i * self.batch + k) for k in range(self.batch)))
        return np.stack(xs), np.array(ys)
'''


def write(tmp_path, body: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body))
    return path


def line_of(path: Path, text: str) -> str:
    """``train.py:N``: the first line of ``path`` holding ``text``."""
    n = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)
    return f"{path.name}:{n}"


def doctor(tmp_path, path: Path, *flags: str, args=()) -> tuple[int, dict]:
    out = tmp_path / "report.json"
    # --no-rerun: the fresh process's ceiling (kit.doctor.fresh) is the subject of its own tests below
    rerun = () if "--rerun" in flags else ("--no-rerun",)
    flags = tuple(f for f in flags if f != "--rerun")
    code = script.main(["--max-seconds", "3", "--wait-seconds", "120", "--json", str(out), *rerun, *flags, str(path),
                        *args])
    return code, json.loads(out.read_text()) if out.exists() else {}


GENERATOR = '''
def batches(n, batch):
    while True:
        for b in range(n):
            xs, ys = zip(*(example(b * batch + k) for k in range(batch)))
            yield np.stack(xs), np.array(ys)

print("args", sys.argv[1:])
model = make_model()
weights = [w.copy() for w in model.get_weights()]
model.fit(batches(8, 16), steps_per_epoch=8, epochs=2, verbose=0)
print("the script's fit ran")
'''


def test_fit_on_a_generator_is_diagnosed_and_the_script_ends(tmp_path, capsys):
    path = write(tmp_path, GENERATOR)
    code, report = doctor(tmp_path, path, args=["--lr", "0.1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "args ['--lr', '0.1']" in out  # the script's own arguments and output
    assert "the script's fit ran" not in out  # ended after the report
    assert report["ended"] == "diagnosed" and report["fit"] == line_of(path, "model.fit(")
    assert report["input"] == "a generator from batches()"
    assert "calling batches() again" in report["note"]
    assert report["verdict"] in ("input-bound", "balanced", "compute-bound")
    codes = [f["code"] for f in report["findings"]]
    if report["verdict"] == "input-bound":  # the generator's own Python named, with its line
        named = [f for f in report["findings"] if f["code"] in ("python_in_pipeline", "compute_once")]
        assert named and all(f["where"].startswith("train.py:") for f in named), codes


def test_continue_runs_the_scripts_own_fit_with_its_weights_untouched(tmp_path, capsys):
    path = write(tmp_path, GENERATOR + '''
import pickle
before = weights
model2_weights = model.get_weights()
''')
    code, report = doctor(tmp_path, path, "--continue")
    assert code == 0 and report["ended"] == "diagnosed"
    assert "the script's fit ran" in capsys.readouterr().out


def test_fit_on_a_pydataset_names_its_getitem(tmp_path):
    code, report = doctor(tmp_path, write(tmp_path, FRAMES + '''
make_model().fit(Frames(128, 16), epochs=2, verbose=0, validation_data=Frames(32, 16))
'''))
    assert code == 0 and report["ended"] == "diagnosed"
    assert report["input"] == "a Frames (PyDataset, workers=1)"
    val = report["validation"]  # timed apart: its own rate, its share of the epoch, its verdict
    assert val["examples_per_s"] > 0 and 0 < val["share"] < 1 and val["verdict"] in ("input-bound", "compute-bound")
    assert any(f["code"] == "pydataset_single_worker" for f in report["findings"] + report["checked_no_gain"]
               + report["not_measured"])


def test_fit_on_a_dataset_and_on_arrays(tmp_path):
    code, report = doctor(tmp_path, write(tmp_path, '''
import tensorflow as tf
xs = np.stack([example(i)[0] for i in range(256)])
ys = (xs[:, 0] > 0.5).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((xs, ys)).map(lambda x, y: (x * 2, y)).batch(32)
make_model().fit(ds, epochs=2, verbose=0)
'''))
    assert code == 0 and report["input"] == "a tf.data.Dataset" and report["pipeline"]
    code, report = doctor(tmp_path, write(tmp_path, '''
xs = np.stack([example(i)[0] for i in range(256)])
make_model().fit(xs, (xs[:, 0] > 0.5).astype("float32"), batch_size=64, epochs=2, verbose=0)
''', "arrays.py"))
    assert code == 0 and report["input"] == "arrays in memory"
    # read as Keras's fit reads arrays (its adapter's pipeline, Keras's own: no pipeline findings on it)
    assert "Keras's fit reads them" in report["note"] and "batches of 64" in report["note"]
    assert not report["pipeline"]
    assert not {f["code"] for f in report["findings"]} & {"options_off", "no_cache", "serial_map", "no_prefetch"}
    # no batch_size, steps_per_epoch given: Keras sizes each batch to fill the steps (256 / 4), and so does the doctor
    code, report = doctor(tmp_path, write(tmp_path, '''
xs = np.stack([example(i)[0] for i in range(256)])
make_model().fit(xs, (xs[:, 0] > 0.5).astype("float32"), steps_per_epoch=4, epochs=2, verbose=0)
''', "arrays_steps.py"))
    assert code == 0 and "batches of 64" in report["note"] and report["rates"]["batch_size"] == 64


def test_fit_on_an_image_data_generator_flow(tmp_path):
    """ImageDataGenerator's flows (a legacy Keras Iterator: a PyDataset with __next__) are read as the
    PyDatasets they are, not refused as one-shot iterators."""
    code, report = doctor(tmp_path, write(tmp_path, '''
from tensorflow.keras.preprocessing.image import ImageDataGenerator
xs = np.stack([example(i)[0] for i in range(128)]).reshape(128, 4, -1, 1)
flow = ImageDataGenerator(horizontal_flip=True).flow(xs, (xs[:, 0, 0, 0] > 0.5).astype("float32"), batch_size=16)
model = keras.Sequential([keras.Input(xs.shape[1:]), keras.layers.Flatten(), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(x=flow, epochs=2, verbose=0)
''', "flow.py"))
    assert code == 0 and report["ended"] == "diagnosed", report
    assert report["input"].startswith("a NumpyArrayIterator (PyDataset")


def test_fit_positional_arguments_and_a_mirrored_strategy(tmp_path):
    code, report = doctor(tmp_path, write(tmp_path, '''
import tensorflow as tf
strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
with strategy.scope():
    model = make_model()
xs = np.stack([example(i)[0] for i in range(128)])
model.fit(xs, (xs[:, 0] > 0.5).astype("float32"), 32, 2, 0)
'''))
    assert code == 0 and report["ended"] == "diagnosed", report
    assert "batches of 32" in report["note"]


def test_a_custom_loop_has_its_input_wait_timed(tmp_path, capsys):
    path = write(tmp_path, '''
import tensorflow as tf
def slow(i):
    time.sleep(0.004)
    return np.float32(i)
ds = tf.data.Dataset.range(64).map(lambda i: tf.numpy_function(slow, [i], tf.float32)).batch(4)
model = make_model()
for epoch in range(20):
    for batch in ds:
        time.sleep(0.002)  # the step
print("loop ended")
''')
    code, report = doctor(tmp_path, path)
    out = capsys.readouterr().out
    assert code == 0 and report["ended"] == "custom loop"
    assert report["loop"] == line_of(path, "for batch in ds")
    assert 0 < report["input_wait_share"] < 1 and report["steps"] >= 2
    assert report["verdict"] == "input-bound"  # 4 ms of input against 2 ms of work
    assert "input wait" in out and "loop ended" not in out


def test_a_raising_script_is_one_line_with_its_file_and_line(tmp_path, capsys):
    path = write(tmp_path, '''
model = make_model()
raise RuntimeError("no such file: data/train.csv")
''')
    code, report = doctor(tmp_path, path)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"kit: error: {line_of(path, 'raise Runtime')}: RuntimeError") and "data/train.csv" in err[0]
    assert report["ended"] == "error"


def test_a_script_that_never_trains(tmp_path, capsys):
    code, _ = doctor(tmp_path, write(tmp_path, "print('no training here')\n"))
    assert code == 2
    assert "ended without calling model.fit" in capsys.readouterr().err


def test_hooks_are_inert_in_child_processes(tmp_path, capsys):
    """A spawned child imports the script again (as ``__mp_main__``) and a PyDataset's processes run its
    ``__getitem__``: neither is diagnosed; only the parent's fit is."""
    path = write(tmp_path, '''
import multiprocessing as mp

class Frames(keras.utils.PyDataset):
    def __len__(self):
        return 4
    def __getitem__(self, i):
        xs, ys = zip(*(example(i * 16 + k) for k in range(16)))
        return np.stack(xs), np.array(ys)

def child(q):
    q.put("child ran " + __name__)

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    print(q.get(timeout=120))
    p.join(timeout=60)
    make_model().fit(Frames(workers=2, use_multiprocessing=True), epochs=2, verbose=0)
''')
    code, report = doctor(tmp_path, path)
    assert code == 0 and report["ended"] == "diagnosed"
    assert "child ran __mp_main__" in capsys.readouterr().out
    assert report["fit"] == line_of(path, "make_model().fit(")
    assert "processes" in report["input"]


def test_a_forked_process_passes_through_the_hooks():
    calls = []
    hooks = run.Hooks(lambda call, fit: calls.append(call)).install()
    try:
        hooks.pid = -1  # as in a child forked after the hooks were installed
        x = np.zeros((8, 32), "float32")
        model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(1)])
        model.compile("sgd", "mse")
        assert type(model.fit(x, np.zeros(8), epochs=1, verbose=0)).__name__ == "History"
    finally:
        hooks.remove()
    assert calls == []


def test_watch_diagnoses_the_fit_in_the_block_and_leaves_the_model(tmp_path):
    ns: dict = {}
    exec(compile(HEAD + GENERATOR.split("print(")[0], str(tmp_path / "cell.py"), "exec"), ns)
    model = ns["make_model"]()
    before = [w.copy() for w in model.get_weights()]
    with run.watch(max_seconds=3, show=False) as seen:
        result = model.fit(ns["batches"](8, 16), steps_per_epoch=8, epochs=2, verbose=0)
    assert result is None and seen.diagnosis is not None and seen.fit.kind == "a generator from batches()"
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    assert keras.Model.fit is not None and "kit.doctor.run" not in keras.Model.fit.__module__  # hooks removed
    with run.watch(max_seconds=3, show=False, run_fit=True) as seen:
        history = model.fit(ns["batches"](8, 16), steps_per_epoch=8, epochs=1, verbose=0)
    assert type(history).__name__ == "History" and "kit doctor" in str(seen)


def test_watch_over_budget_says_what_it_measured_and_does_not_raise(tmp_path, monkeypatch):
    """A source still delivering when watch()'s budget ends is slow, not stuck: the cell gets what was
    measured by then and what was left out (as `doctor run` prints), not an exception."""
    from kit.doctor import cli, progress

    def slow(call, *, max_seconds):
        progress.SO_FAR["verdict"] = "input-bound"
        raise cli.OverBudget("the input of cell.py:3: the budget ended", "verdict: input-bound (measured before the budget ended)")

    monkeypatch.setattr(run, "diagnose_fit", slow)
    ns: dict = {}
    exec(compile(HEAD + GENERATOR.split("print(")[0], str(tmp_path / "cell.py"), "exec"), ns)
    model = ns["make_model"]()
    with run.watch(max_seconds=3, show=False) as seen:
        result = model.fit(ns["batches"](8, 16), steps_per_epoch=8, epochs=2, verbose=0)
    assert result is None and seen.diagnosis is None and seen.verdict == "input-bound"
    assert "the budget ended" in str(seen) and "measured before the budget ended" in str(seen)


def test_remake_calls_a_method_generator_again_on_a_copy():
    class Gen:
        def __init__(self):
            self.index = 0

        def next_train(self, batch):
            while True:
                self.index += batch
                yield self.index

    g = Gen()
    again = run.remake(g.next_train(4))
    assert [next(again()) for _ in range(2)] == [4, 4] and g.index == 0  # fresh each time, the user's object untouched
    started = g.next_train(4)
    next(started)
    assert run.remake(started) is None  # started: its arguments are gone


def test_a_copy_compiling_past_the_first_wait_is_set_up(monkeypatch, capsys):
    """The model's copy still on its first step (a batch in memory: tracing and compiling a large model, a minute
    for InceptionV3 on two cores) when the first wait ends is set-up, as the script's own first step is: the wait
    goes on, said in one line, and the budget begins once the copy is ready."""
    import time

    from kit.doctor import cli, progress
    from kit.doctor.sources import CEILING, PROGRESS

    monkeypatch.setattr(cli, "margin", lambda s: 0.2)

    def slow_compile():  # the copy's first step compiles for 1.0 s (past the 0.5 s first wait), its second step
        PROGRESS.start(CEILING)  # and the rest of the set-up take 0.3 s more; then it measures for 0.3 s
        time.sleep(1.0)
        PROGRESS.arrived()
        time.sleep(0.3)
        progress.ready(1.3)
        PROGRESS.start("the loader alone")
        time.sleep(0.3)
        return "diagnosed"

    assert cli.bounded(slow_compile, 0.3, "the input of train.py:9") == "diagnosed"
    out = capsys.readouterr().out
    assert "the input of train.py:9: the model's copy is still tracing and compiling its first step" in out, out


def test_the_command_stops_a_script_that_does_not_train_in_its_budget(tmp_path):
    path = write(tmp_path, "time.sleep(600)\n")
    p = subprocess.run([sys.executable, "-m", "kit", "doctor", "run", "--wait-seconds", "2", str(path)],
                       capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert p.returncode == 2
    assert "did not call model.fit" in p.stderr and line_of(path, "time.sleep(600)") in p.stderr


def test_a_slow_source_is_not_a_stuck_one(monkeypatch):
    """When the budget and its margin end while batches still arrive, the doctor reports what it measured
    (``OverBudget``); only a batch that has not arrived for the whole margin is ``Stuck``."""
    import threading
    import time

    from kit.doctor import cli, progress
    from kit.doctor.sources import CEILING, PROGRESS

    monkeypatch.setattr(cli, "margin", lambda s: 0.5)
    stop = threading.Event()

    def slow():  # a batch every 0.1 s, for longer than the budget
        progress.step("the loader alone")
        progress.step("the compute ceiling and the real fit", loader="the loader alone delivers 10/s")
        PROGRESS.start("the training fit")
        while not stop.wait(0.1):
            PROGRESS.arrived()

    with pytest.raises(cli.OverBudget) as e:
        cli.bounded(slow, 0.3, "the input of train.py:9")
    stop.set()
    assert "slow source, not a stuck one" in str(e.value) and "the training fit" in str(e.value)
    assert "10/s" in e.value.partial and "left out: the compute ceiling and the real fit" in e.value.partial
    time.sleep(0.2)

    def stuck():
        PROGRESS.start("the loader alone")
        stop.clear()
        stop.wait(5)

    with pytest.raises(cli.Stuck) as e:
        cli.bounded(stuck, 0.3, "the input of train.py:9")
    stop.set()
    assert not isinstance(e.value, cli.OverBudget) and "no batch arrived in time" in str(e.value)
    time.sleep(0.2)

    def tracing():  # the compute ceiling's first step, on a batch in memory, outlasting the budget
        PROGRESS.start(CEILING)
        stop.clear()
        stop.wait(5)

    t0 = time.monotonic()
    with pytest.raises(cli.OverBudget) as e:  # the model's trace, not a stuck input
        cli.bounded(tracing, 0.3, "the input of train.py:9")
    stop.set()
    # The copy's first step is set-up: it had SETUP_WAITS first waits (0.8 s each), and no more.
    assert cli.SETUP_WAITS * 0.8 - 0.1 <= time.monotonic() - t0 < cli.SETUP_WAITS * 0.8 + 1.0
    assert "the model's first training step" in str(e.value) and "not waiting on the input" in str(e.value), e.value
    assert f"{cli.SETUP_WAITS} times over for the set-up" in str(e.value)
    assert "no batch arrived" not in str(e.value)
    time.sleep(0.2)
    PROGRESS.start(CEILING)
    PROGRESS.arrived()  # a later ceiling batch stuck is the old case: no claim about the trace
    assert "batch 2 of the compute ceiling" in PROGRESS.waiting()


def test_the_budget_begins_once_the_first_batch_and_the_copy_are_ready(monkeypatch):
    """A first batch slow to come (imports, a JIT, a shuffle buffer filling) is set-up, as the script's own is: the
    wait runs on for the budget and its margin from when the diagnosis was ready (``progress.ready``), at most twice
    the first wait in all; the partial report says what the set-up took."""
    import time

    from kit.doctor import cli, progress
    from kit.doctor.sources import PROGRESS

    monkeypatch.setattr(cli, "margin", lambda s: 0.2)

    def slow_start():  # ready after 0.4 s of a 0.5 s wait, then measures 0.4 s more
        time.sleep(0.4)
        progress.ready(0.4)
        time.sleep(0.4)
        return "diagnosed"

    assert cli.bounded(slow_start, 0.3, "the input of train.py:9") == "diagnosed"

    def never_ready():  # batches arrive, but the set-up never ends: the first wait is all it gets
        PROGRESS.start("the input of train.py:9, its first batch")
        for _ in range(9):
            time.sleep(0.1)
            PROGRESS.arrived()

    t0 = time.monotonic()
    with pytest.raises(cli.OverBudget) as e:
        cli.bounded(never_ready, 0.3, "the input of train.py:9")
    assert time.monotonic() - t0 < 0.8 and "the first batch and the model's copy" not in e.value.partial
    time.sleep(0.5)

    from kit.doctor.findings import Finding

    def ready_then_slow():  # ready at 0.3 s, then measuring past the budget and margin counted from there
        time.sleep(0.3)
        progress.ready(0.3)
        progress.step("the A/B trials of the fixes", found=[
            Finding("python_in_pipeline", "Python called from .map(features)", 3.0, "predicted: ...",
                    status="predicted", where="train.py:4"),
            Finding("no_cache", ".map(features) is recomputed every epoch", float("nan"), "not measured: ...",
                    status="unmeasured")])
        PROGRESS.start("the loader alone")
        for _ in range(12):
            time.sleep(0.1)
            PROGRESS.arrived()

    with pytest.raises(cli.OverBudget) as e:
        cli.bounded(ready_then_slow, 0.3, "the input of train.py:9")
    assert "the first batch and the model's copy took 0.3 s before the budget began" in e.value.partial
    # The report's JSON keeps the findings made before the trials were cut short, on their lists.
    lists = progress.found_lists()
    assert [(f["code"], f["where"], f["expected_gain"]) for f in lists["findings"]] == [
        ("python_in_pipeline", "train.py:4", 3.0)]
    assert [f["code"] for f in lists["not_measured"]] == ["no_cache"] and lists["checked_no_gain"] == []
    assert lists["not_measured"][0]["expected_gain"] is None
    time.sleep(0.5)


def test_a_train_on_batch_loop_names_the_function_preparing_its_batches(tmp_path):
    path = write(tmp_path, '''
model = make_model()
for step in range(400):
    xs, ys = zip(*(example(step * 8 + k) for k in range(8)))  # the batch prepared in Python, every step
    model.train_on_batch(np.stack(xs), np.array(ys))
print("loop ended")
''')
    code, report = doctor(tmp_path, path)
    assert code == 0 and report["ended"] == "custom loop"
    assert report["loop"] == line_of(path, "model.train_on_batch(")
    assert 0 < report["input_wait_share"] < 1 and report["steps"] >= 10
    if report["verdict"] == "input-bound":  # the profile of the waits names the user's function
        assert {f["code"] for f in report["findings"]} == {"compute_once", "python_in_pipeline"}
        assert all(f["where"].startswith("train.py:") and "features" in f["where"] for f in report["findings"]), report


def test_a_loop_begun_within_the_wait_is_timed_past_it_and_one_too_slow_ends_in_one_line(tmp_path, monkeypatch, capsys):
    """A loop whose first steps outlast --wait-seconds (a large model's first trace) has begun: the budget
    is for timing it. One whose steps are slower than the budget and its margin allow ends in one line."""
    import kit.doctor.script as script_mod

    path = write(tmp_path, '''
model = make_model()
for step in range(400):
    if step == 1:
        time.sleep(7)  # the second step long after the first: past the 4 s wait
    xs, ys = zip(*(example(step * 8 + k) for k in range(8)))
    model.train_on_batch(np.stack(xs), np.array(ys))
''')
    # 4 s: the first step (the model built and traced) must begin within the wait; on cores shared with other
    # TensorFlow processes it took over 1 s, the watchdog stopped a script still tracing, and its os._exit ended
    # the test's worker
    code, report = doctor(tmp_path, path, "--wait-seconds", "4")
    assert code == 0 and report["ended"] == "custom loop" and report["steps"] >= 10, report
    monkeypatch.setattr(script_mod, "LOOP_GRACE_S", 1.0)
    path = write(tmp_path, '''
model = make_model()
for step in range(400):
    for _ in range(300 if step else 0):  # every step after the first far slower than the budget
        time.sleep(0.1)  # (short sleeps: the watchdog's interrupt lands between them)
    xs, ys = zip(*(example(step * 8 + k) for k in range(8)))
    model.train_on_batch(np.stack(xs), np.array(ys))
''', "slow.py")
    t0 = time.perf_counter()
    code, report = doctor(tmp_path, path, "--wait-seconds", "4")
    assert code == 2 and report["ended"] == "over budget" and time.perf_counter() - t0 < 20
    assert "training loop at slow.py:" in capsys.readouterr().err


def test_a_loop_calling_predict_every_step_is_told_predict_on_batch(tmp_path):
    """A GAN's loop: each step the generator's ``predict`` on one batch of noise, then a train_on_batch on
    its output. ``Model.predict`` costs far more per call than ``predict_on_batch`` (a data adapter,
    callbacks, a progress bar): ``predict_per_step`` at the user's line, its gain from the two timed here."""
    path = write(tmp_path, '''
generator = keras.Sequential([keras.Input((8,)), keras.layers.Dense(32)])
model = make_model()
rng = np.random.default_rng(0)
for step in range(400):
    fake = generator.predict(rng.random((16, 8)), verbose=0)  # one batch, every step
    model.train_on_batch(fake, np.zeros(16, "float32"))
print("loop ended")
''')
    code, report = doctor(tmp_path, path)
    assert code == 0 and report["ended"] == "custom loop", report
    found = {f["code"]: f for f in report["findings"]}
    assert "predict_per_step" in found, report
    f = found["predict_per_step"]
    assert f["where"] == line_of(path, "generator.predict("), f
    assert f["expected_gain"] > 1.1 and "predict_on_batch" in f["fix"], f
    assert "compute_once" not in found, report  # no function of the user's prepares the batch: nothing to cache


def test_a_loops_evaluation_between_steps_is_work_not_input_and_its_step_is_replayed(tmp_path):
    """A train_on_batch loop over batches held in memory that evaluates every third step (``test_on_batch``,
    and ``Model.predict`` on 256 rows, eight of predict's batches): the Keras calls between the steps are not
    the input's wait (issue 55's heldout9 sednn_dnn read as input-bound on them); ``predict`` on an input in
    memory, of more than one batch too, is timed against ``predict_on_batch``; and the loop's verdict has a
    compute ceiling, its last batch replayed to a copy of the model, as the fits' verdicts do."""
    path = write(tmp_path, '''
model = make_model()
rng = np.random.default_rng(0)
data = [(rng.random((16, 32)).astype("float32"), (rng.random(16) > 0.5).astype("float32")) for _ in range(8)]
x_val = rng.random((256, 32)).astype("float32")
for step in range(4000):
    x, y = data[step % 8]
    model.train_on_batch(x, y)
    if step % 3 == 2:
        model.test_on_batch(x, y)
        model.predict(x_val, verbose=0)  # every third step, on 256 rows in memory
print("loop ended")
''')
    code, report = doctor(tmp_path, path)
    assert code == 0 and report["ended"] == "custom loop", report
    assert report["between_share"] > 0.2, report  # predict of 256 rows dwarfs a 16-row step
    assert report["input_wait_share"] < 0.5, report  # the evaluation is not the input's wait (it was about 0.9)
    assert report["headroom"] > 0 and report["ceiling_step_ms"] > 0, report
    assert "replayed from memory to a copy of the model" in report["summary"], report
    found = {f["code"]: f for f in report["findings"]}
    assert "predict_per_step" in found and found["predict_per_step"]["where"] == line_of(path, "model.predict("), report


def test_a_loops_replayed_batch_is_held_as_tensors_as_the_fits_ceiling_is():
    """The loop's ceiling replays its last batch as tensors made once (floats in Keras's float type, as Keras
    converts NumPy), not NumPy arrays copied into tensors at every call: that copy is the loop's input work
    (heldout9's crepe_agnews, a float64 batch of 45 MB, read balanced at 1.29x on it against a truth of 1.65x)."""
    import tensorflow as tf

    from kit.doctor.loop import _as_tensor

    args, kwargs = tf.nest.map_structure(_as_tensor, ((np.zeros((2, 3)), np.arange(2)), {"y": None, "class_weight": {0: 1.0}}))
    assert isinstance(args[0], tf.Tensor) and args[0].dtype == tf.float32 and args[0].shape == (2, 3)
    assert isinstance(args[1], tf.Tensor) and args[1].dtype == tf.int64
    assert kwargs == {"y": None, "class_weight": {0: 1.0}}


TAPE = '''
import tensorflow as tf
model = make_model()
optimizer = keras.optimizers.Adam(1e-3)
loss_fn = keras.losses.BinaryCrossentropy()

def batches(batch):  # the batch prepared in Python, every step
    for step in range(400):
        xs, ys = zip(*(example(step * batch + k) for k in range(batch)))
        yield np.stack(xs), np.array(ys)

{decorator}
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

for x, y in batches({batch}):
    train_step(x, y)
print("loop ended")
'''


@pytest.mark.parametrize("decorator", ["@tf.function", ""], ids=["tf.function", "eager"])
def test_a_gradient_tape_loop_fed_by_a_generator_has_its_input_wait_timed(tmp_path, decorator):
    """A custom loop of a GradientTape step, a tf.function or eager, fed from a Python generator: the
    steps found by the optimizer they apply, the time between them the input wait, its function named."""
    # an eager step costs more than a traced one (about 14 ms against 1 here): a larger batch to prepare
    path = write(tmp_path, TAPE.format(decorator=decorator, batch=8 if decorator else 64))
    code, report = doctor(tmp_path, path)
    assert code == 0 and report["ended"] == "custom loop", report
    where = "    train_step(x, y)" if decorator else "optimizer.apply_gradients("
    assert report["loop"] == line_of(path, where), report
    assert 0 < report["input_wait_share"] < 1 and report["steps"] >= 10, report
    assert report["verdict"] == "input-bound", report  # 20 FFTs an example against a one-layer step
    assert report["headroom"] is None and "from the wait's share alone" in report["summary"], report  # not replayed
    assert {f["code"] for f in report["findings"]} == {"compute_once", "python_in_pipeline"}, report
    assert all(f["where"].startswith("train.py:") and "features" in f["where"] for f in report["findings"]), report


PYDATASET = FRAMES + '''
import os
if os.environ.get("KIT_DOCTOR_FRESH") and {fail}:
    raise RuntimeError("only in the script run again")
print("set-up ran")
make_model().fit(Frames(128, 16), epochs=2, verbose=0)
'''


def test_a_generator_op_fit_has_its_ceiling_timed_in_a_fresh_process(tmp_path, capsys):
    """Keras reads a PyDataset through TensorFlow's generator op: the script runs again in a child (its
    set-up twice, its fit's ceiling timed there), and the report keeps both ceilings."""
    from kit.doctor import fresh

    assert fresh.reads_generator(run.Fit(None, iter([1]))) and not fresh.reads_generator(run.Fit(None, np.zeros(3)))
    code, report = doctor(tmp_path, write(tmp_path, PYDATASET.replace("{fail}", "False")), "--rerun")
    out = capsys.readouterr().out
    assert code == 0 and report["ended"] == "diagnosed", report
    assert out.count("set-up ran") == 1  # the child's output is its own, not the report's
    rates = report["rates"]
    assert report["fresh_s"] > 0 and rates["fresh_ceiling_examples_per_s"] > 0 and rates["ceiling_here_examples_per_s"] > 0
    assert "fresh process" in out and "timed in this process only" not in report["note"]
    # the verdict's ceiling is the fresh one where it is 1.1x faster or more, else this process's
    fresh_used = rates["fresh_ceiling_examples_per_s"] >= 1.1 * rates["ceiling_here_examples_per_s"]
    assert rates["ceiling_examples_per_s"] == (rates["fresh_ceiling_examples_per_s"] if fresh_used
                                               else rates["ceiling_here_examples_per_s"])


def test_where_the_script_run_again_fails_the_ceiling_is_this_process_s_said_so(tmp_path):
    code, report = doctor(tmp_path, write(tmp_path, PYDATASET.replace("{fail}", "True")), "--rerun")
    assert code == 0 and report["ended"] == "diagnosed"
    assert "timed in this process only" in report["note"] and "only in the script run again" in report["note"]
    assert "fresh_ceiling_examples_per_s" not in report["rates"]
