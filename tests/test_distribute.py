"""kit.distribute: strategies, both input patterns, 2 against 1 replica, tf.data service
with real server processes (one killed mid-epoch), MultiWorkerMirroredStrategy on two
processes, and the scaling bench.

Whatever needs logical CPU devices, servers or a second TensorFlow process runs in
child processes (this file run as a script, or ``python -m kit ...``): the pytest
process's own TensorFlow state never matters, and every wait has a deadline, so a
failure can never hang the suite. Ports come from the OS (bind to port 0).
"""

from __future__ import annotations

import functools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from kit import distribute, epochs
from kit.distribute import servers as kit_servers
from kit.distribute import service as kit_service
from kit.distribute.input import shard_rows
from kit.distribute.service import through_service
from kit.distribute.strategy import is_simulated
from kit.models import small_model

ROOT = Path(__file__).resolve().parent.parent
# One xdist worker runs this whole file (make test: --dist loadgroup): its module fixtures (the
# MirroredStrategy child, the service processes) then start once, not once per worker.
pytestmark = pytest.mark.xdist_group("distribute")
CHILD_TIMEOUT = 240  # seconds; a loaded 2-core machine takes about 30 s for the longest child


class Child:
    """A child process whose output a thread collects, so every wait has a deadline."""

    def __init__(self, args, env):
        self.args = list(args)
        self.p = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
        self.log: list[str] = []
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.p.stdout:
            self.log.append(line)
            self._lines.put(line)
        self._lines.put(None)

    def tail(self, n=40) -> str:
        return "".join(self.log[-n:])

    def wait_for(self, prefix: str, timeout: float) -> str:
        """The first output line from now on that starts with ``prefix``."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{self.args[2:5]}: no {prefix!r} within {timeout:.0f} s:\n{self.tail()}")
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"{self.args[2:5]} exited ({self.p.wait()}) before {prefix!r}:\n{self.tail()}")
            if line.startswith(prefix):
                return line

    def finish(self, timeout: float) -> int:
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(f"{self.args[2:5]} still running after {timeout:.0f} s:\n{self.tail()}") from None

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait(30)


@pytest.fixture(scope="module")
def child_env(tmp_path_factory):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               KIT_CACHE=str(tmp_path_factory.mktemp("distribute-cache")),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("TF_CONFIG", None)
    return env


@pytest.fixture(scope="module")
def children(request):
    """Every child started through it is killed at the end of the module, whatever happens."""
    started: list[Child] = []

    def start(args, env):
        c = Child(args, env)
        started.append(c)
        return c

    request.addfinalizer(lambda: [c.stop() for c in started])
    return start


def _run_script(children, env, mode, out, *args, timeout=CHILD_TIMEOUT) -> dict:
    c = children([sys.executable, __file__, mode, str(out), *map(str, args)], env)
    rc = c.finish(timeout)
    assert rc == 0, f"child {mode} failed ({rc}):\n{c.tail()}"
    return json.loads(Path(out).read_text())


# ------------------------------------------------------------------------- in-process, no devices


def test_tf_config_names_the_cluster_and_this_task():
    cfg = distribute.tf_config(["127.0.0.1:20001", "127.0.0.1:20002"], 1)
    assert cfg == {"cluster": {"worker": ["127.0.0.1:20001", "127.0.0.1:20002"]},
                   "task": {"type": "worker", "index": 1}}
    assert distribute.tf_config("a.example:1,b.example:2", 0)["cluster"]["worker"] == ["a.example:1", "b.example:2"]
    with pytest.raises(ValueError, match="index must be in 0..1"):
        distribute.tf_config(["h:1", "h:2"], 2)
    with pytest.raises(ValueError, match="twice"):
        distribute.tf_config(["h:1", "h:1"], 0)
    with pytest.raises(ValueError, match="HOST:PORT"):
        distribute.tf_config(["h"], 0)


def test_service_addresses_are_checked():
    assert kit_servers.parse_address("grpc://localhost:5050") == ("localhost", 5050)
    assert kit_servers.parse_address("10.0.0.7:5050") == ("10.0.0.7", 5050)
    for bad in ("localhost", "http://h:1", "h:0", "h:99999", ""):
        with pytest.raises(ValueError, match="grpc://HOST:PORT"):
            kit_servers.parse_address(bad)


def test_batch_arithmetic_global_is_per_replica_times_replicas():
    assert distribute.global_batch_size(128, 2) == 256
    assert distribute.per_replica_batch_size(256, 4) == 64
    with pytest.raises(ValueError, match="does not split evenly over 2"):
        distribute.per_replica_batch_size(255, 2)
    with pytest.raises(ValueError, match="per_replica must be a positive integer"):
        distribute.global_batch_size(0, 2)
    assert shard_rows(10, 3, 1).tolist() == [1, 4, 7]


def test_make_strategy_rejects_bad_arguments_before_touching_devices():
    with pytest.raises(ValueError, match="replicas must be a positive integer, got 0"):
        distribute.make_strategy(0)
    with pytest.raises(ValueError, match="devices must be one of"):
        distribute.make_strategy(2, devices="tpu")


def test_free_port_is_bindable():
    import socket

    port = kit_servers.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_cli_errors_are_one_line(capsys):
    from kit import cli

    assert cli.main(["service", "worker", "--dispatcher", "nonsense"]) == 2
    assert cli.main(["bench", "scaling", "--replicas", "1,x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["kit: error: expected a service address like grpc://HOST:PORT or HOST:PORT, got 'nonsense'",
                   "kit: error: --replicas expects comma-separated integers like 1,2,4, got '1,x'"]


def test_pipelines_the_service_cannot_run_are_refused():
    import tensorflow as tf

    graph_only = tf.data.Dataset.range(8).map(lambda i: i * 2).batch(4)
    py = tf.data.Dataset.range(8).map(lambda i: tf.numpy_function(lambda v: v, [i], tf.int64))
    zipped = tf.data.Dataset.zip((tf.data.Dataset.range(8), tf.data.Dataset.from_tensors(0).repeat()))
    cached = tf.data.Dataset.range(8).cache()
    assert kit_service.python_ops(graph_only) == [] and distribute.service_problems(graph_only) == []
    assert kit_service.python_ops(py) == ["PyFunc"]
    with pytest.raises(ValueError, match=r"runs Python \(PyFunc\)"):
        through_service(py, "grpc://localhost:5050")
    assert any(p.startswith("zip()") for p in distribute.service_problems(zipped))
    assert any(p.startswith("repeat()") for p in distribute.service_problems(zipped))
    with pytest.raises(ValueError, match=r"cache\(\) inside: the split-up epoch never completes"):
        through_service(cached, "grpc://localhost:5050")


@pytest.mark.slow
def test_every_graph_only_spectrogram_variant_is_checked(spec_index, tmp_path):
    from kit.spectrogram import make_loader

    def problems(name):
        loader = make_loader(name, spec_index, batch_size=8, workdir=tmp_path, progress=False)
        return distribute.service_problems(epochs.epoch_of(loader).body)

    assert problems("tfrecord") == [] and problems("in_memory") == []
    assert any("runs Python" in p for p in problems("numpy_function"))
    assert any("runs Python" in p for p in problems("generator"))


# ------------------------------------------------------------------------- MirroredStrategy (child)


@pytest.fixture(scope="module")
def mirrored(children, child_env, tmp_path_factory):
    return _run_script(children, child_env, "mirrored", tmp_path_factory.mktemp("mirrored") / "out.json")


@pytest.mark.slow
def test_strategy_on_cpu_is_labelled_a_simulation(mirrored):
    assert mirrored["replicas"] == [2, 1]
    assert mirrored["describe"][0].startswith("MirroredStrategy: 2 replica(s) in sync, 2 CPU device(s)")
    assert "SIMULATION" in mirrored["describe"][0] and "SIMULATION" not in mirrored["describe"][1]
    assert mirrored["simulated"] == [True, False]


@pytest.mark.slow
def test_make_strategy_too_late_says_so(mirrored):
    assert mirrored["too_late"].startswith("too late to split the CPU into 3 logical devices: TensorFlow "
                                           "has already initialised its devices in this process (2 logical")
    assert "make_strategy(3) before any other TensorFlow work" in mirrored["too_late"]


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["generator", "numpy_function", "memmap", "tfrecord", "in_memory"])
@pytest.mark.parametrize("pattern", ["global", "per_replica"])
def test_every_tf_data_variant_feeds_two_replicas_exactly_once(mirrored, variant, pattern):
    got = mirrored["patterns"][f"{variant}/{pattern}"]
    assert sorted(got["rows"]) == list(range(96))  # every frame once, none twice
    assert got["wrong_labels"] == 0
    assert got["local_batch_sizes"] == [8]  # per-replica batch 8 on each replica: global 16
    assert got["steps"] == 6  # 96 frames / global batch 16


@pytest.mark.slow
def test_pydataset_and_generator_train_through_fit(mirrored):
    for name in ("pydataset", "generator"):
        fit = mirrored["fit"][name]
        assert fit["steps_per_epoch"] == [6, 6], name  # 96 frames, global batch 16, 2 epochs
        assert all(np.isfinite(fit["loss"])), name


@pytest.mark.slow
def test_two_replicas_equal_one_replica(mirrored):
    eq = mirrored["equivalence"]
    for key in ("fit/global", "fit/per_replica", "loop/global", "loop/per_replica"):
        assert eq[key]["moved"] > 1e-3, key  # training did change the weights
        assert eq[key]["max_abs_diff"] < 1e-5, key  # ... identically on 2 replicas and on 1


@pytest.mark.slow
def test_scaling_bench_reports_each_replica_count(mirrored):
    out = mirrored["scaling"]
    assert out["bench"] == "scaling" and out["variant"] == "in_memory"
    rows = out["rows"]
    assert [r["replicas"] for r in rows] == [1, 2]
    assert [r["global_batch"] for r in rows] == [8, 16]
    assert [r["devices"] for r in rows] == ["CPU", "CPU (simulated)"]
    assert rows[0]["speedup"] == 1.0 and rows[0]["efficiency"] == 1.0
    for r in rows:
        assert r["examples_per_s"] > 0 and r["input_examples_per_s"] > 0
        assert r["efficiency"] == pytest.approx(r["speedup"] / r["replicas"])


# ------------------------------------------------------------------------- tf.data service (processes)


@pytest.fixture(scope="module")
def service(child_env):
    """A dispatcher and two workers, each its own ``python -m kit service`` process."""
    with distribute.local_service(2, env=child_env) as s:
        yield s


@pytest.fixture(scope="module")
def service_read(service, children, child_env, tmp_path_factory):
    return _run_script(children, child_env, "service-read", tmp_path_factory.mktemp("read") / "out.json",
                       service.target)


@pytest.mark.slow
def test_service_epoch_yields_every_example_exactly_once(service_read):
    out = service_read
    for name in ("tfrecord", "in_memory"):
        assert sorted(out[name]["rows"]) == list(range(96)), name
        assert out[name]["wrong_labels"] == 0, name
    for name in ("numpy_function", "generator", "pydataset"):
        assert "tf.data service workers cannot run" in out["refused"][name], name
    assert out["segmentation"]["pairs"] == out["segmentation"]["expected"]


@pytest.mark.slow
def test_service_short_epoch_is_never_silent(service_read):
    raised, warned = service_read["short/raise"], service_read["short/warn"]
    assert raised["seen"] == 96 and warned["seen"] == 96 and warned["error"] is None
    assert "tf.data service delivered 96 examples this epoch where 100 were expected" in raised["error"]


@pytest.mark.slow
def test_service_worker_killed_mid_epoch(service, children, child_env, tmp_path):
    """What tf.data service guarantees when a worker dies mid-epoch (distributed_epoch).

    The elements the dead worker was producing are lost; none is delivered twice
    (at-most-once). The reader goes on with the other worker and ends the epoch once
    a worker is back at the dead one's address, as a supervisor restarts it. The kit's
    epoch guard then reports a short epoch instead of passing it silently. Tested: the
    read ends within a bound, every element at most once, only real elements, and
    exactly one of (whole epoch, no error) or (short epoch, a clear error).
    """
    reader = children([sys.executable, __file__, "service-kill", str(tmp_path / "out.json"),
                       service.target], child_env)
    reader.wait_for("batch 5 ", 180)
    service.kill_worker(1)  # SIGKILL: no goodbye to the dispatcher
    service.start_worker(1)  # what a supervisor does: a worker back at the same address takes over
    t0 = time.monotonic()
    assert reader.finish(120) == 0, reader.tail()
    assert time.monotonic() - t0 < 120
    out = json.loads((tmp_path / "out.json").read_text())
    rows, n = out["rows"], out["examples"]
    assert n == 480
    assert len(rows) == len(set(rows)), "an element was delivered twice"
    assert set(rows) <= set(range(n)) and out["wrong_labels"] == 0
    if len(rows) < n:
        assert f"tf.data service delivered {len(rows)} examples this epoch where {n} were expected" in out["error"]
        assert "at-most-once" in out["error"]
    else:
        assert out["error"] is None


DEAD_TIMEOUT_S = 4  # the reader's bound in the test below: short, the whole test stays fast


@pytest.mark.slow
def test_service_every_worker_killed_mid_epoch_raises_within_the_timeout(children, child_env, tmp_path):
    """Issue 13 item 9: every worker killed and none restarted blocked the reader forever.

    Now each wait for a batch is bounded: the read raises within ``timeout_s``, naming
    the dispatcher and how many examples arrived, and leaves no reading thread behind;
    the same error reaches ``kit.timing.measure`` (a job with no worker at all; ``model.fit``
    in the test after this one). Every wait in this test is bounded too.
    """
    with distribute.local_service(1, env=child_env) as service:
        # --bind 127.0.0.1 (the default): the servers are advertised and reached there.
        dport, wport = service.dispatcher_port, service.worker_ports[0]
        assert service.target == f"grpc://127.0.0.1:{dport}"
        assert service.ready[0].startswith(f"kit service dispatcher: ready at grpc://127.0.0.1:{dport} (port {dport}, "
                                           "--bind 127.0.0.1)")
        assert service.ready[1].startswith(f"kit service worker: ready at 127.0.0.1:{wport} (--bind 127.0.0.1)")
        kit_service.check_dispatcher("127.0.0.1", dport)
        with pytest.raises(ValueError, match=f"127.0.0.1:{wport} .a gRPC server answers there, but not a tf.data "
                                             "service dispatcher: a worker's port"):
            kit_service.check_dispatcher("127.0.0.1", wport)
        go = tmp_path / "go"
        reader = children([sys.executable, __file__, "service-dead", str(tmp_path / "out.json"), service.target,
                           str(go)], child_env)
        reader.wait_for("batch 5 ", 180)
        service.kill_worker(0)  # SIGKILL, and no supervisor brings it back
        go.touch()
        assert reader.finish(CHILD_TIMEOUT) == 0, reader.tail()
    out = json.loads((tmp_path / "out.json").read_text())
    where = f"dispatcher at 127.0.0.1:{service.dispatcher_port}"
    read = out["read"]
    assert 24 <= read["rows"] < 480  # batch 5 was read, and the rest of the epoch was lost with the worker
    assert f"no batch from the tf.data service {where} for {DEAD_TIMEOUT_S} s: {read['rows']} of 480 examples " \
           "arrived this epoch" in read["error"]
    assert read["type"] == "UnknownError" and "ServiceTimeoutError" in read["error"]
    assert read["after_go_s"] < DEAD_TIMEOUT_S + 60  # bounded: not the 300 s (or forever) seen before
    assert f"no batch from the tf.data service {where} for {DEAD_TIMEOUT_S} s: 0 of 480 examples" in out["measure"]
    assert out["threads_left"] == []


@pytest.mark.slow
def test_fit_over_a_service_with_no_worker_raises_within_the_timeout(children, child_env, tmp_path):
    """Issue 13 item 9, through Keras: ``model.fit`` on a loader read through a service whose
    only worker is gone raises the reader's timeout error instead of waiting for ever."""
    with distribute.local_service(1, env=child_env) as service:
        service.kill_worker(0)  # SIGKILL, and no supervisor brings it back: a job with no worker
        reader = children([sys.executable, __file__, "service-fit", str(tmp_path / "out.json"), service.target],
                          child_env)
        assert reader.finish(CHILD_TIMEOUT) == 0, reader.tail()
    out = json.loads((tmp_path / "out.json").read_text())
    where = f"dispatcher at 127.0.0.1:{service.dispatcher_port}"
    assert f"no batch from the tf.data service {where} for {DEAD_TIMEOUT_S} s: 0 of 480 examples" in out["fit"]
    assert out["threads_left"] == []


@pytest.mark.slow
def test_a_process_ending_mid_epoch_on_a_service_exits(children, child_env, tmp_path):
    """A process that ends while its service read waits for a batch ends at once. It did not
    (found while chasing a rare hang of the model.fit test above, at the fit child's exit):
    a ``prefetch`` above the reading generator left a TensorFlow thread waiting in Python,
    and the prefetch iterator's destructor at exit waited for that thread, which could not
    take the GIL back (here, with a read timeout of 10 minutes: for 10 minutes, then for
    ever). Now the read-ahead is the reading thread's own and open reads are cancelled at exit."""
    with distribute.local_service(1, env=child_env) as service:
        go = tmp_path / "go"
        reader = children([sys.executable, __file__, "service-exit", "-", service.target, str(go)], child_env)
        reader.wait_for("first batch", 180)
        service.kill_worker(0)  # the next batch never comes: the read waits (up to its 600 s timeout)
        go.touch()
        reader.wait_for("exiting mid-epoch", 60)
        assert reader.finish(90) == 0, reader.tail()


def _child_service_exit(_, target, go):
    import tensorflow as tf
    from tensorflow.python.data.experimental.ops import testing

    # A slow worker (one batch every 1.5 s), killed by the parent after the first batch.
    body = tf.data.Dataset.range(20).apply(testing.sleep(1_500_000)).batch(1)
    it = iter(through_service(body, target, examples=20, timeout_s=600))
    assert next(it).numpy().tolist() == [0]
    print("first batch", flush=True)
    deadline = time.monotonic() + 120
    while not Path(go).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # the read of the next batch is waiting for the killed worker
    print("exiting mid-epoch", flush=True)


# ------------------------------------------------------------------------- MultiWorkerMirroredStrategy


@pytest.mark.slow
def test_multi_worker_two_processes_reach_the_same_weights(children, child_env, tmp_path):
    ports = [kit_servers.free_port(), kit_servers.free_port()]
    workers = ",".join(f"127.0.0.1:{p}" for p in ports)
    procs = [children([sys.executable, "-m", "kit", "multiworker", "--workers", workers, "--index", str(i),
                       "--steps", "3", "--per-replica-batch", "8", "--json", str(tmp_path / f"w{i}.json")],
                      child_env) for i in range(2)]
    for p in procs:
        assert p.finish(CHILD_TIMEOUT) == 0, p.tail()
    a, b = (json.loads((tmp_path / f"w{i}.json").read_text()) for i in range(2))
    assert (a["worker"], b["worker"]) == (0, 1)
    assert a["replicas"] == b["replicas"] == 2 and a["global_batch"] == 16
    assert len(a["losses"]) == 3 and np.allclose(a["losses"], b["losses"], rtol=1e-6)
    for wa, wb in zip(a["weights"], b["weights"]):
        np.testing.assert_allclose(wa, wb, rtol=0, atol=1e-6)
    assert a["digest"] == b["digest"]


# ------------------------------------------------------------------------- child side


def _row_lookup(index):
    frames = index.read_all()
    return {frames[i].tobytes(): i for i in range(len(index))}


def _rows_of(x, y, lookup, labels, out):
    wrong = 0
    for xi, yi in zip(np.asarray(x), np.asarray(y)):
        r = lookup[np.ascontiguousarray(xi[..., 0]).tobytes()]
        wrong += int(labels[r] != yi)
        out.append(int(r))
    return wrong


def _child_mirrored(out_path):
    s2 = distribute.make_strategy(2)  # first: splits the CPU before TensorFlow starts
    s1 = distribute.make_strategy(1)
    try:
        distribute.make_strategy(3)
        too_late = None
    except RuntimeError as e:
        too_late = str(e)
    import keras

    from kit import samples
    from kit.spectrogram import FrameIndex, make_loader

    index = FrameIndex.from_csv(samples.embedded("spectrogram"))
    lookup = _row_lookup(index)
    res = {"replicas": [s2.num_replicas_in_sync, s1.num_replicas_in_sync],
           "describe": [distribute.describe(s2), distribute.describe(s1)],
           "simulated": [is_simulated(s2), is_simulated(s1)],
           "too_late": too_late, "patterns": {}, "fit": {}, "equivalence": {}}

    for variant in ("generator", "numpy_function", "memmap", "tfrecord", "in_memory"):
        for pattern in distribute.PATTERNS:
            make = functools.partial(make_loader, variant, progress=False)
            data = distribute.distributed_loader(s2, make, index, per_replica_batch=8, pattern=pattern)
            rows, wrong, sizes, steps = [], 0, set(), 0
            for batch in data:
                steps += 1
                for x, y in distribute.local_batches(s2, batch):
                    sizes.add(len(y))
                    wrong += _rows_of(x, y, lookup, index.labels, rows)
            res["patterns"][f"{variant}/{pattern}"] = {"rows": rows, "wrong_labels": wrong,
                                                       "local_batch_sizes": sorted(sizes), "steps": steps}

    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    class Count(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.seen.append(0)

        def on_train_batch_end(self, batch, logs=None):
            self.seen[-1] += 1

    for variant in ("pydataset", "generator"):
        loader = make_loader(variant, index, batch_size=distribute.global_batch_size(8, s2), progress=False)
        with s2.scope():
            model = small_model(index.frame_shape, index.num_classes)
            model.compile(keras.optimizers.SGD(0.05), loss)
        count = Count()
        count.seen = []
        hist = model.fit(loader, epochs=2, verbose=0, callbacks=[count])
        res["fit"][variant] = {"steps_per_epoch": count.seen, "loss": hist.history["loss"]}

    # Same initial weights, same global batch (16), same data order; 2 replicas and 1.
    init = small_model(index.frame_shape, index.num_classes, seed=5).get_weights()

    def train(strategy, pattern, how):
        per_replica = 16 // strategy.num_replicas_in_sync
        keras.utils.set_random_seed(7)  # tf.data's seeded shuffle also depends on the global seed
        # model.fit pulls one batch to build the model before it trains (Keras's symbolic
        # build), which would move a reshuffling dataset to its next order: fit unshuffled.
        make = functools.partial(make_loader, "in_memory", shuffle=how == "loop", seed=3)
        data = distribute.distributed_loader(strategy, make, index, per_replica_batch=per_replica,
                                             pattern=pattern)
        with strategy.scope():
            model = small_model(index.frame_shape, index.num_classes, seed=5)
            model.set_weights(init)
            opt = keras.optimizers.SGD(0.1)
            model.compile(opt, loss)
        if how == "fit":
            model.fit(data, epochs=1, verbose=0)
        else:
            distribute.train_steps(strategy, model, data, optimizer=opt)
        return model.get_weights()

    for how in ("fit", "loop"):
        one = train(s1, "global", how)
        for pattern in distribute.PATTERNS:
            two = train(s2, pattern, how)
            res["equivalence"][f"{how}/{pattern}"] = {
                "max_abs_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(one, two)),
                "moved": max(float(np.max(np.abs(a - b))) for a, b in zip(one, init)),
            }

    from kit import cli

    bench_json = Path(out_path).with_name("scaling.json")
    assert cli.main(["bench", "scaling", "--replicas", "1,2", "--per-replica-batch", "8", "--steps", "2",
                     "--rounds", "1", "--json", str(bench_json)]) == 0
    res["scaling"] = json.loads(bench_json.read_text())
    Path(out_path).write_text(json.dumps(res))


def _child_service_read(out_path, target):
    from kit import samples
    from kit.spectrogram import FrameIndex, make_loader

    index = FrameIndex.from_csv(samples.embedded("spectrogram"))
    lookup = _row_lookup(index)
    res = {"refused": {}}
    # Small shards: several files, so the dispatcher has several splits to hand out.
    for name, options in (("tfrecord", {"shard_mb": 0.25}), ("in_memory", {})):
        rows, wrong = [], 0
        for x, y in make_loader(name, index, batch_size=8, service=target, progress=False,
                                **options).as_numpy_iterator():
            wrong += _rows_of(x, y, lookup, index.labels, rows)
        res[name] = {"rows": rows, "wrong_labels": wrong}
    # The segmentation case through the same shared layer: the exact pair count, checked on this side.
    from kit.segmentation import PairIndex, Palette
    from kit.segmentation import make_loader as pair_loader

    seg_csv = samples.embedded("segmentation")
    pairs, palette = PairIndex.from_csv(seg_csv), Palette.from_csv(seg_csv.parent / "class_dict.csv")
    got = sum(len(y) for _, y in pair_loader("tfdata_tuned", pairs, palette, batch_size=3, size=32,
                                             service=target).as_numpy_iterator())
    res["segmentation"] = {"pairs": got, "expected": len(pairs)}
    for name in ("numpy_function", "generator", "pydataset"):
        try:
            make_loader(name, index, batch_size=8, service=target)
            res["refused"][name] = ""
        except ValueError as e:
            res["refused"][name] = str(e)
    # The epoch guard on the reading side: told to expect 100 examples, it gets 96.
    import tensorflow as tf

    for on_short in ("raise", "warn"):
        ds = through_service(make_loader("in_memory", index, batch_size=8), target,
                                        examples=100, on_short=on_short)
        seen, error = 0, None
        try:
            for _, y in ds.as_numpy_iterator():
                seen += len(y)
        except tf.errors.InvalidArgumentError as e:
            error = e.message
        res[f"short/{on_short}"] = {"seen": seen, "error": error}
    Path(out_path).write_text(json.dumps(res))


def _child_service_kill(out_path, target):
    import tensorflow as tf

    from kit import samples
    from kit.spectrogram import FrameIndex, make_loader

    csv = samples.make_spectrogram(Path(out_path).parent / "frames480", files=40, frames_per_file=12, seed=1)
    index = FrameIndex.from_csv(csv)
    lookup = _row_lookup(index)
    loader = make_loader("tfrecord", index, batch_size=4, shard_mb=0.2, progress=False)
    ds = through_service(loader, target, examples=len(index))
    rows, wrong, error, i = [], 0, None, 0
    try:
        for i, (x, y) in enumerate(ds.as_numpy_iterator()):
            wrong += _rows_of(x, y, lookup, index.labels, rows)
            print(f"batch {i} ", flush=True)  # the parent kills a worker after batch 5
            time.sleep(0.02)  # a reader slower than the workers: the kill lands mid-epoch
    except tf.errors.InvalidArgumentError as e:
        error = e.message
    Path(out_path).write_text(json.dumps({"rows": rows, "wrong_labels": wrong, "error": error,
                                          "examples": len(index)}))


def _child_service_dead(out_path, target, go):
    import threading

    import tensorflow as tf

    from kit import samples, timing
    from kit.spectrogram import FrameIndex, make_loader

    csv = samples.make_spectrogram(Path(out_path).parent / "frames480", files=40, frames_per_file=12, seed=1)
    index = FrameIndex.from_csv(csv)

    def loader():
        return make_loader("tfrecord", index, batch_size=4, shard_mb=0.2, progress=False, service=target,
                           service_timeout_s=DEAD_TIMEOUT_S)

    res, rows, t_go = {}, 0, None
    try:
        for i, (_, y) in enumerate(loader()):
            rows += len(y)
            if i == 5:
                print("batch 5 ", flush=True)  # the parent kills the only worker, then touches `go`
                deadline = time.monotonic() + 180
                while not Path(go).exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
                t_go = time.monotonic()
        res["read"] = {"rows": rows, "error": None}
    except tf.errors.OpError as e:
        res["read"] = {"rows": rows, "error": e.message, "type": type(e).__name__,
                       "after_go_s": time.monotonic() - t_go}
    # No worker left: a new epoch's job waits for one, bounded the same way, in measure.
    try:
        timing.measure(loader(), num_batches=2, warmup=1)
        res["measure"] = ""
    except tf.errors.OpError as e:
        res["measure"] = e.message
    res["threads_left"] = [t.name for t in threading.enumerate() if t.name.startswith("kit-service")]
    Path(out_path).write_text(json.dumps(res))


def _child_service_fit(out_path, target):
    import threading

    import keras
    import tensorflow as tf

    from kit import samples
    from kit.spectrogram import FrameIndex, make_loader

    csv = samples.make_spectrogram(Path(out_path).parent / "frames480", files=40, frames_per_file=12, seed=1)
    index = FrameIndex.from_csv(csv)
    loader = make_loader("tfrecord", index, batch_size=4, shard_mb=0.2, progress=False, service=target,
                         service_timeout_s=DEAD_TIMEOUT_S)
    res = {}
    model = keras.Sequential([keras.layers.Input(index.frame_shape), keras.layers.Flatten(),
                              keras.layers.Dense(index.num_classes)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    try:
        model.fit(loader, epochs=1, verbose=0)
        res["fit"] = ""
    except tf.errors.OpError as e:
        res["fit"] = str(e)
    res["threads_left"] = [t.name for t in threading.enumerate() if t.name.startswith("kit-service")]
    Path(out_path).write_text(json.dumps(res))


if __name__ == "__main__":
    mode, out = sys.argv[1], sys.argv[2]
    {"mirrored": _child_mirrored, "service-read": _child_service_read,
     "service-kill": _child_service_kill, "service-dead": _child_service_dead,
     "service-fit": _child_service_fit, "service-exit": _child_service_exit}[mode](out, *sys.argv[3:])
