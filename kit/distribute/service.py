"""tf.data service: run a loader's pipeline on other processes or machines.

* ``through_service``: a tf.data pipeline run by tf.data service workers
  (``python -m kit service dispatcher|worker``), ``distributed_epoch`` mode, the
  epoch's exact length checked on the reading side;
* ``service_problems`` / ``python_ops``: why the service cannot run a pipeline;
* ``run_dispatcher`` / ``run_worker``: the servers, each serving until stopped;
* ``local_service``: a dispatcher and workers on this machine, each its own process,
  stopped when the ``with`` block ends (notebook 04 and the tests use it).

TensorFlow is imported inside functions only.
"""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field

from kit.epochs import epoch_of
from kit.util import check_int

__all__ = ["PYTHON_OPS", "UNSPLITTABLE_OPS", "DISPATCHER_TIMEOUT_S", "parse_address", "python_ops",
           "service_problems", "through_service", "check_dispatcher", "free_port", "run_dispatcher", "run_worker",
           "LocalService", "local_service"]


_ADDRESS = re.compile(r"^(?:(?P<proto>grpc)://)?(?P<host>\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.\-]+):(?P<port>\d{1,5})$")

#: Ops that call back into Python: a tf.data service worker cannot run them.
PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc", "GeneratorDataset"})


def parse_address(address: str) -> tuple[str, int]:
    """``"grpc://host:port"`` or ``"host:port"`` -> ``(host, port)``; ValueError otherwise."""
    m = _ADDRESS.match(str(address).strip())
    port = int(m["port"]) if m else -1
    if not m or not 0 < port < 65536:
        raise ValueError(f"expected a service address like grpc://HOST:PORT or HOST:PORT, got {address!r}")
    return m["host"], port


#: Top-level ops that ``distributed_epoch`` cannot split correctly, and why.
UNSPLITTABLE_OPS = {
    "ZipDataset": "zip() of several sources: each source is split on its own, so their elements no "
                  "longer pair up (and the shorter one cuts the epoch)",
    "ConcatenateDataset": "concatenate() of several sources, each split on its own",
    "CacheDataset": "cache() inside: the split-up epoch never completes the cache (the read hangs)",
    "CacheDatasetV2": "cache() inside: the split-up epoch never completes the cache (the read hangs)",
    "RepeatDataset": "repeat() inside: repeat after through_service instead (one epoch per pass)",
}


def _graph(dataset):
    import tensorflow as tf

    return tf.compat.v1.GraphDef.FromString(
        dataset._as_serialized_graph(  # the serialisation tf.data service itself sends
            external_state_policy=tf.data.experimental.ExternalStatePolicy.WARN).numpy())


def python_ops(dataset) -> list[str]:
    """Names of the ops in ``dataset``'s graph that run Python (none: a service worker can run it)."""
    graph = _graph(dataset)
    ops = {n.op for n in graph.node}
    for fn in graph.library.function:
        ops.update(n.op for n in fn.node_def)
    return sorted(ops & PYTHON_OPS)


def service_problems(dataset) -> list[str]:
    """Why tf.data service cannot run ``dataset`` in ``distributed_epoch`` mode (empty: it can).

    Two kinds: a Python function anywhere (workers run the graph without Python), and a
    pipeline that is not one splittable source followed by transformations (``zip``,
    ``concatenate``, ``cache``, ``repeat`` at the top level).
    """
    graph = _graph(dataset)
    ops = {n.op for n in graph.node}
    for fn in graph.library.function:
        ops.update(n.op for n in fn.node_def)
    problems = []
    found = sorted(ops & PYTHON_OPS)
    if found:
        problems.append(f"it runs Python ({', '.join(found)}), which tf.data service workers cannot run")
    top = {n.op for n in graph.node}
    problems += sorted({why for op, why in UNSPLITTABLE_OPS.items() if op in top})
    return problems


def _guard_epoch(ds, examples: int, *, on_short: str):
    """Checks at the end of each epoch that exactly ``examples`` were delivered.

    An empty batch is appended as an end marker; a running count (``scan``) checks it
    there, and the marker is dropped. More than ``examples`` fails at once.
    """
    import tensorflow as tf

    spec = ds.element_spec
    end = tf.data.Dataset.from_tensors(tf.nest.map_structure(
        lambda s: tf.zeros([0] + [d or 0 for d in s.shape.as_list()[1:]], s.dtype), spec))

    def step(count, batch):
        k = tf.shape(tf.nest.flatten(batch)[0], out_type=tf.int64)[0]
        count = count + k
        at_end = tf.equal(k, 0)
        ok = tf.logical_and(count <= examples, tf.logical_or(tf.logical_not(at_end), count >= examples))
        message = tf.strings.format(
            "tf.data service delivered {} examples this epoch where " + str(examples) + " were expected: with "
            "processing_mode='distributed_epoch' a worker lost mid-epoch loses the elements it was "
            "producing, its shuffle and prefetch buffers included (at-most-once delivery)", (count,))
        if on_short == "raise":
            check = tf.debugging.Assert(ok, [message])
        else:
            def warn():
                with tf.control_dependencies([tf.print("kit warning:", message, output_stream=sys.stderr)]):
                    return tf.constant(False)

            check = tf.cond(ok, lambda: tf.constant(True), warn)
        with tf.control_dependencies([check]):
            count = tf.identity(count)
        return count, (batch, at_end)

    def not_marker(batch, at_end):
        return tf.logical_not(at_end)

    def strip_flag(batch, at_end):
        return batch

    ds = ds.concatenate(end).scan(tf.constant(0, tf.int64), step)
    return ds.filter(not_marker).map(strip_flag)


def through_service(dataset, service: str, *, examples: int | None = None, on_short: str = "raise",
                    job_name: str | None = None):
    """Runs a ``tf.data`` pipeline on tf.data service workers, each example once per epoch.

    The dataset's graph is sent to the dispatcher at ``service``; with
    ``processing_mode="distributed_epoch"`` the dispatcher hands out its source's splits
    (files, rows) to the workers, which run the rest of the pipeline, and this process
    reads the batches they produce. The pipeline must be pure TensorFlow graph (a
    Python function, ``tf.numpy_function`` or ``from_generator``, cannot run there)
    and one splittable source (files, rows) followed by transformations: no ``zip``,
    ``cache`` or ``repeat`` at the top level (``service_problems`` says why).

    What the service guarantees: without failures, every element exactly once. When a
    worker dies mid-epoch, the elements it was producing are lost (at-most-once: none
    is repeated, some may be missing); the reader goes on with the other workers and
    finishes the epoch once a worker is back at the lost one's address (run workers
    with a fixed ``--port`` under a supervisor that restarts them). A worker that
    never comes back leaves its task open and the reader waits for it: the dispatcher
    logs "Lost worker" but does not reassign its task (TensorFlow 2.21).

    The epoch's length is checked on this side, at its end: ``examples`` exactly (by
    default, the count a kit loader records, ``kit.epochs.epoch_of``). A shortfall
    raises (``on_short="raise"``) or prints a warning (``"warn"``): never a silently
    shorter epoch. A kit loader's own guard (``assert_cardinality``, which each worker
    would apply to its share) is left out of what the workers run.

    Args:
        dataset: a ``tf.data.Dataset`` (a kit loader, or any graph-only pipeline).
        service: the dispatcher, ``grpc://HOST:PORT`` or ``HOST:PORT``.
        examples: examples per epoch, for an exact check (default: what the kit
            loader recorded; required for any other pipeline).
        on_short: ``"raise"`` or ``"warn"``.
        job_name: share one job between several readers (each gets part of the epoch).

    Raises:
        ValueError: a bad address, or a pipeline the service cannot run (``service_problems``).
    """
    import tensorflow as tf

    host, port = parse_address(service)
    if on_short not in ("raise", "warn"):
        raise ValueError(f"on_short must be 'raise' or 'warn', got {on_short!r}")
    epoch = epoch_of(dataset)
    body = epoch.body if epoch is not None and epoch.body is not None else dataset
    problems = service_problems(body)
    if problems:
        raise ValueError(
            f"tf.data service cannot run this pipeline in distributed_epoch mode: {'; '.join(problems)}. "
            "Use a variant that is one splittable source and graph ops only (tfrecord, in_memory), or "
            "move the Python step to a conversion done once (python -m kit convert ...)")
    check_dispatcher(host, port)  # before the epoch: a missing dispatcher would block silently
    if examples is None:
        if epoch is None:
            raise ValueError("examples= is required for a pipeline that is not a kit loader: the epoch is "
                             "checked on the reading side against it")
        examples = epoch.examples
    examples = check_int("examples", examples)
    body = body.prefetch(tf.data.AUTOTUNE)  # on the workers
    ds = body.apply(tf.data.experimental.service.distribute(
        processing_mode="distributed_epoch", service=f"grpc://{host}:{port}", job_name=job_name))
    ds = _guard_epoch(ds, examples, on_short=on_short)
    return ds.prefetch(tf.data.AUTOTUNE)


#: How long ``check_dispatcher`` waits for a dispatcher to accept a connection: long
#: enough for a loaded machine or a remote host, short next to an epoch.
DISPATCHER_TIMEOUT_S = 10.0


def check_dispatcher(host: str, port: int, *, timeout_s: float = DISPATCHER_TIMEOUT_S) -> None:
    """Checks that something listens at the dispatcher's address, waiting at most ``timeout_s``.

    Raises:
        ValueError: naming the address and why nothing answered.
    """
    try:
        with socket.create_connection((host.strip("[]"), port), timeout=timeout_s):
            return
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise ValueError(f"no tf.data service dispatcher answers at {host}:{port} ({why}, waited at most "
                         f"{timeout_s:g} s); start one with: python -m kit service dispatcher --port {port}"
                         ) from None


def _check_port(port: int) -> None:
    # TensorFlow keeps the port's low 16 bits: 70000 would quietly serve on 4464.
    if not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be in 1..65535 (or 0: any free one), got {port!r}")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (the OS picks it; bind to it soon)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _serve(server, banner: str) -> int:
    """Keeps a started server up until SIGINT/SIGTERM; stops it cleanly."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)
    print(banner, flush=True)
    try:
        while True:  # a Python loop, not server.join(): Ctrl-C and SIGTERM get through
            time.sleep(0.5)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the stop short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        server.stop()
        print("stopped", flush=True)
    return 0


def run_dispatcher(*, port: int, work_dir: str | None = None, worker_timeout_s: float | None = None) -> int:
    """Starts a tf.data service dispatcher in this process and serves until stopped.

    Args:
        port: the port to listen on (all interfaces; 0 picks one and prints it).
        work_dir: keep the dispatcher's journal here (fault-tolerant mode: a restarted
            dispatcher recovers its jobs).
        worker_timeout_s: after how long without a heartbeat a worker counts as lost.
    """
    _check_port(port)
    if worker_timeout_s is not None and not worker_timeout_s > 0:
        raise ValueError(f"worker_timeout_s must be positive, got {worker_timeout_s}")
    import tensorflow as tf

    config = tf.data.experimental.service.DispatcherConfig(
        port=port, work_dir=work_dir, fault_tolerant_mode=work_dir is not None,
        worker_timeout_ms=None if worker_timeout_s is None else int(worker_timeout_s * 1000))
    try:
        server = tf.data.experimental.service.DispatchServer(config)
    except (tf.errors.OpError, RuntimeError) as e:
        raise ValueError(f"cannot start a dispatcher on port {port}: {getattr(e, 'message', e)}") from None
    bound = int(server.target.rsplit(":", 1)[1])
    return _serve(server, f"kit service dispatcher: ready at grpc://{socket.getfqdn()}:{bound} "
                          f"(port {bound}, all interfaces); start workers with "
                          f"`python -m kit service worker --dispatcher {socket.getfqdn()}:{bound}`")


def _advertised_host(dispatcher_host: str) -> str:
    if dispatcher_host in ("localhost", "::1", "[::1]") or dispatcher_host.startswith("127."):
        return "localhost"
    return socket.getfqdn()


def run_worker(*, dispatcher: str, port: int = 0, host: str | None = None,
               heartbeat_s: float | None = None) -> int:
    """Starts a tf.data service worker in this process and serves until stopped.

    Args:
        dispatcher: ``HOST:PORT`` of the dispatcher.
        port: the port to listen on (0 picks one). Give a fixed port to workers that a
            supervisor restarts: a worker back at the same address takes over its task.
        host: the name clients reach this worker by (default: ``localhost`` for a
            dispatcher on this machine, else this machine's name).
        heartbeat_s: how often to report to the dispatcher.
    """
    dhost, dport = parse_address(dispatcher)
    host = host or _advertised_host(dhost)
    _check_port(port)
    if heartbeat_s is not None and not heartbeat_s > 0:
        raise ValueError(f"heartbeat_s must be positive, got {heartbeat_s}")
    import tensorflow as tf

    config = tf.data.experimental.service.WorkerConfig(
        dispatcher_address=f"{dhost}:{dport}", worker_address=f"{host}:%port%", port=port,
        heartbeat_interval_ms=None if heartbeat_s is None else int(heartbeat_s * 1000))
    server = tf.data.experimental.service.WorkerServer(config, start=False)
    print(f"kit service worker: waiting for dispatcher {dhost}:{dport} ...", flush=True)
    # start() holds the interpreter until the dispatcher answers, however long: let Ctrl-C
    # end the process meanwhile (Python's own handler could not run).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        server.start()
    except (tf.errors.OpError, RuntimeError) as e:
        raise ValueError(f"cannot start a worker on port {port}: {getattr(e, 'message', e)}") from None
    bound = server._address.rsplit(":", 1)[1]
    return _serve(server, f"kit service worker: ready at {host}:{bound}, serving dispatcher {dhost}:{dport}")


# --------------------------------------------------------------------------- a local service


@dataclass
class LocalService:
    """A dispatcher and workers on this machine, each a ``python -m kit service`` process.

    Attributes:
        target: ``grpc://127.0.0.1:PORT`` of the dispatcher, for ``service=``.
        dispatcher_port: its port.
        worker_ports: each worker's fixed port.
        processes: the dispatcher's process, then the workers'.
    """

    target: str
    dispatcher_port: int
    worker_ports: list[int]
    processes: list = field(default_factory=list)
    startup_s: float = 120.0
    env: dict | None = None

    def start_worker(self, i: int) -> None:
        """(Re)starts worker ``i`` at its port, as a supervisor would, and waits until it serves."""
        proc = _start(["worker", "--dispatcher", f"127.0.0.1:{self.dispatcher_port}", "--port",
                       str(self.worker_ports[i]), "--heartbeat-s", "0.5"], self.env)
        self.processes[1 + i] = proc
        _wait_ready(proc, self.startup_s)

    def kill_worker(self, i: int) -> None:
        """Kills worker ``i`` (SIGKILL: no goodbye to the dispatcher)."""
        proc = self.processes[1 + i]
        proc.kill()
        proc.wait(30)

    def stop(self) -> None:
        """Stops every process (SIGTERM, then SIGKILL after 30 s)."""
        for proc in self.processes:
            if proc is not None and proc.poll() is None:
                proc.terminate()
        for proc in self.processes:
            if proc is None:
                continue
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(30)


def _start(args: list[str], env: dict | None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kit", "service", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, env=env)


def _wait_ready(proc: subprocess.Popen, timeout_s: float) -> str:
    """The server's "ready" line, read within ``timeout_s`` (a thread reads, so the wait is bounded)."""
    import queue
    import threading

    lines: queue.Queue = queue.Queue()

    def pump():  # reads to the end, so a chatty server never blocks on a full pipe
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen, deadline = [], time.monotonic() + timeout_s
    while True:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            raise RuntimeError(f"a tf.data service server did not start within {timeout_s:.0f} s; it printed:\n"
                               + "".join(seen[-20:])) from None
        if line is None:
            raise RuntimeError(f"a tf.data service server exited ({proc.wait(30)}) before it was ready; it "
                               "printed:\n" + "".join(seen[-20:]))
        seen.append(line)
        if "ready" in line:
            return line.strip()


@contextlib.contextmanager
def local_service(workers: int = 2, *, startup_s: float = 120.0, env: dict | None = None):
    """A dispatcher and ``workers`` workers on 127.0.0.1, each its own process.

    Yields a ``LocalService`` (``.target`` for ``make_loader(..., service=...)``); every
    process is stopped when the block ends, whatever happens. Each wait is bounded by
    ``startup_s``. ``env``: the processes' environment (default: this one's).
    """
    check_int("workers", workers)
    dport = free_port()
    service = LocalService(f"grpc://127.0.0.1:{dport}", dport, [free_port() for _ in range(workers)],
                           startup_s=startup_s, env=env)
    service.processes = [_start(["dispatcher", "--port", str(dport)], env)] + [None] * workers
    try:
        _wait_ready(service.processes[0], startup_s)
        for i in range(workers):
            service.start_worker(i)
        yield service
    finally:
        service.stop()
