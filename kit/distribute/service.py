"""tf.data service: run a loader's pipeline on other processes or machines.

* ``through_service``: a tf.data pipeline run by tf.data service workers
  (``python -m kit service dispatcher|worker``), ``distributed_epoch`` mode, the
  epoch's exact length checked on the reading side, and every wait for the next
  batch bounded (``timeout_s``: an error naming the dispatcher and the count);
* ``service_problems`` / ``python_ops``: why the service cannot run a pipeline;
* ``run_dispatcher`` / ``run_worker``: the servers, each serving until stopped;
* ``local_service``: a dispatcher and workers on this machine, each its own process,
  stopped when the ``with`` block ends (notebook 04 and the tests use it).

TensorFlow is imported inside functions only.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import ipaddress
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field

from kit.epochs import epoch_of
from kit.util import check_int

__all__ = ["PYTHON_OPS", "UNSPLITTABLE_OPS", "DISPATCHER_TIMEOUT_S", "SERVICE_TIMEOUT_S", "DEFAULT_BIND",
           "parse_address", "python_ops", "service_problems", "through_service", "check_dispatcher",
           "ServiceTimeoutError", "free_port", "run_dispatcher", "run_worker", "LocalService", "local_service"]


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


#: How long the reader waits for the next batch from the service before it gives up.
#: A batch normally arrives within milliseconds and the epoch's first one within
#: seconds (the workers build the pipeline and fill its buffers); two minutes with no
#: batch at all means no worker is producing: long enough for a supervisor to restart
#: a killed worker at its port (tens of seconds on a loaded 2-core machine).
SERVICE_TIMEOUT_S = 120.0

#: How long a stopped read waits for its reading thread to end (it is cancelled first,
#: which ends it at once in TensorFlow 2.21).
_JOIN_S = 30.0


class ServiceTimeoutError(TimeoutError):
    """No batch came from tf.data service within the timeout (the message says how many did)."""


class _Reader:
    """Reads one epoch of a tf.data service dataset on its own thread, each wait bounded.

    The thread makes the iterator (which registers with the dispatcher) and fetches
    batches by a cancellable TensorFlow function, up to ``READ_AHEAD`` batches ahead of
    the reading side: the read-ahead lives here, in a Python thread the kit owns, not in
    a ``prefetch`` above the ``from_generator`` (a TensorFlow thread blocked in Python
    when the interpreter exits cannot take the GIL back, and the iterator's destructor
    waits for it: the process never ends). When a wait times out, or at ``close``, the
    fetch is cancelled (the data service client stops at once) and the thread is joined
    with a bound, so nothing is left running after the error. Readers still open when
    the interpreter exits are closed by an ``atexit`` hook, before the exit stops
    threads.
    """

    def __init__(self, dataset):
        from tensorflow.python.eager import cancellation  # TF's own way to cancel a running function

        self._dataset = dataset
        self._cancel = cancellation.CancellationManager()
        self._stop = threading.Event()
        self._results: queue.Queue = queue.Queue(maxsize=READ_AHEAD)
        self._thread = threading.Thread(target=self._run, name="kit-service-reader", daemon=True)
        _OPEN.add(self)
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._results.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self):
        import tensorflow as tf

        try:
            iterator = iter(self._dataset)
            fetch = self._cancel.get_cancelable_function(
                tf.function(lambda: iterator.get_next()).get_concrete_function())
            while not self._stop.is_set():
                if not self._put(("batch", fetch())):
                    return
        except tf.errors.OutOfRangeError:
            self._put(("end", None))
        except Exception as e:  # handed to the reading side, which raises it
            self._put(("error", e))

    def next(self, timeout_s: float):
        """The next batch, None at the end of the epoch; ``queue.Empty`` after ``timeout_s``."""
        kind, value = self._results.get(timeout=timeout_s)
        if kind == "error":
            raise value
        return value if kind == "batch" else None

    def close(self, join_s: float | None = None) -> bool:
        """Cancels a fetch still waiting, ends the thread; False if it did not end within the bound."""
        self._stop.set()
        self._cancel.start_cancel()
        self._thread.join(_JOIN_S if join_s is None else join_s)
        _OPEN.discard(self)
        return not self._thread.is_alive()


#: Batches the reading thread fetches ahead of the reader (what a ``prefetch`` would hold).
READ_AHEAD = 2

_OPEN: "weakref.WeakSet[_Reader]" = weakref.WeakSet()


@atexit.register
def _close_open_readers():
    """At exit, before the interpreter stops its threads: cancel every open read, so no
    thread (ours, or a TensorFlow thread waiting in the epoch's generator) is left
    blocked where the exit would wait for it."""
    deadline = time.monotonic() + _JOIN_S
    for reader in list(_OPEN):
        reader.close(join_s=max(0.0, deadline - time.monotonic()))


def _batch_size(batch) -> int:
    import tensorflow as tf

    return int(tf.shape(tf.nest.flatten(batch)[0])[0])


def _bounded_epochs(ds, *, host: str, port: int, examples: int, on_short: str, timeout_s: float):
    """``ds`` read on this side with every wait bounded and the epoch's length checked.

    Each epoch (each new iterator) first checks that the dispatcher answers, then
    reads the batches through a ``_Reader``: a wait longer than ``timeout_s`` raises
    ``ServiceTimeoutError`` naming the dispatcher and how many examples arrived.
    """
    import tensorflow as tf

    where = f"the tf.data service dispatcher at {host}:{port}"

    def epoch():
        check_dispatcher(host, port, timeout_s=min(timeout_s, DISPATCHER_TIMEOUT_S))
        reader = _Reader(ds)
        arrived, timed_out = 0, False
        try:
            while True:
                try:
                    batch = reader.next(timeout_s)
                except queue.Empty:
                    timed_out = True
                    break
                if batch is None:
                    break
                arrived += _batch_size(batch)
                if arrived > examples:
                    raise ValueError(f"{where} delivered {arrived} examples this epoch where {examples} were "
                                     "expected: more than the epoch holds")
                yield batch
        finally:
            stopped = reader.close()
        left = "" if stopped else f" (its reading thread did not stop within {_JOIN_S:g} s and is left behind)"
        if timed_out:
            raise ServiceTimeoutError(
                f"no batch from {where} for {timeout_s:g} s: {arrived} of {examples} examples arrived this "
                "epoch. No worker is producing (or one batch takes longer than that): a worker that died "
                "mid-epoch and did not come back leaves its part of the epoch open (TensorFlow 2.21 does not "
                "hand it to another worker), and a job with no worker waits for one. Restart workers at the "
                "same address (a fixed --port), or wait longer with timeout_s= (service_timeout_s= in "
                f"make_loader){left}")
        if not stopped:  # not seen with TensorFlow 2.21: a cancelled fetch ends at once
            raise RuntimeError(f"the thread reading from {where} did not stop within {_JOIN_S:g} s")
        if arrived != examples:
            message = (f"tf.data service delivered {arrived} examples this epoch where {examples} were "
                       f"expected ({where}): with processing_mode='distributed_epoch' a worker lost "
                       "mid-epoch loses the elements it was producing, its shuffle and prefetch buffers "
                       "included (at-most-once delivery)")
            if on_short == "raise":
                raise ValueError(message)
            print("kit warning:", message, file=sys.stderr, flush=True)

    return tf.data.Dataset.from_generator(epoch, output_signature=ds.element_spec)


def through_service(dataset, service: str, *, examples: int | None = None, on_short: str = "raise",
                    job_name: str | None = None, timeout_s: float = SERVICE_TIMEOUT_S):
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
    never comes back leaves its task open (the dispatcher logs "Lost worker" but does
    not reassign it in TensorFlow 2.21), and a job with no worker at all waits for
    one: so every wait for the next batch is bounded by ``timeout_s``, after which the
    read raises ``ServiceTimeoutError`` naming the dispatcher and how many examples
    arrived (through TensorFlow, as ``tf.errors.UnknownError`` carrying that message),
    and the reading thread is stopped. Each epoch first checks that the dispatcher
    answers (``check_dispatcher``).

    The epoch's length is checked on this side, at its end: ``examples`` exactly (by
    default, the count a kit loader records, ``kit.epochs.epoch_of``). A shortfall
    raises (``on_short="raise"``, as ``tf.errors.InvalidArgumentError``) or prints a
    warning (``"warn"``): never a silently shorter epoch. A kit loader's own guard
    (``assert_cardinality``, which each worker would apply to its share) is left out
    of what the workers run. The batches pass through Python on this side (one
    thread hop and copy per batch: small next to a training step); a reading thread
    fetches ``READ_AHEAD`` batches ahead, in place of a ``prefetch`` (none is added
    after the reading generator, so a process that ends mid-epoch ends at once).

    Args:
        dataset: a ``tf.data.Dataset`` (a kit loader, or any graph-only pipeline).
        service: the dispatcher, ``grpc://HOST:PORT`` or ``HOST:PORT``.
        examples: examples per epoch, for an exact check (default: what the kit
            loader recorded; required for any other pipeline).
        on_short: ``"raise"`` or ``"warn"``.
        job_name: share one job between several readers (each gets part of the epoch).
        timeout_s: the longest wait for one batch (default ``SERVICE_TIMEOUT_S``).

    Raises:
        ValueError: a bad address or timeout, no dispatcher answering, or a pipeline
            the service cannot run (``service_problems``).
    """
    import tensorflow as tf

    host, port = parse_address(service)
    if on_short not in ("raise", "warn"):
        raise ValueError(f"on_short must be 'raise' or 'warn', got {on_short!r}")
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s < float("inf"):
        raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    epoch = epoch_of(dataset)
    body = epoch.body if epoch is not None and epoch.body is not None else dataset
    problems = service_problems(body)
    if problems:
        raise ValueError(
            f"tf.data service cannot run this pipeline in distributed_epoch mode: {'; '.join(problems)}. "
            "Use a variant that is one splittable source and graph ops only (tfrecord, in_memory), or "
            "move the Python step to a conversion done once (python -m kit convert ...)")
    # Before the epoch: a missing dispatcher would block silently (registering the dataset
    # below waits for it without a bound); each epoch checks again.
    check_dispatcher(host, port, timeout_s=min(timeout_s, DISPATCHER_TIMEOUT_S))
    if examples is None:
        if epoch is None:
            raise ValueError("examples= is required for a pipeline that is not a kit loader: the epoch is "
                             "checked on the reading side against it")
        examples = epoch.examples
    examples = check_int("examples", examples)
    body = body.prefetch(tf.data.AUTOTUNE)  # on the workers
    ds = body.apply(tf.data.experimental.service.distribute(
        processing_mode="distributed_epoch", service=f"grpc://{host}:{port}", job_name=job_name))
    ds = _bounded_epochs(ds, host=host, port=port, examples=examples, on_short=on_short, timeout_s=float(timeout_s))
    # No prefetch (nor an injected one) above the generator: the reading thread reads ahead
    # instead (see _Reader), so no TensorFlow thread ever waits inside Python for a batch.
    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False
    return ds.with_options(options)


#: How long ``check_dispatcher`` waits for a dispatcher to accept a connection: long
#: enough for a loaded machine or a remote host, short next to an epoch.
DISPATCHER_TIMEOUT_S = 10.0


def check_dispatcher(host: str, port: int, *, timeout_s: float = DISPATCHER_TIMEOUT_S) -> None:
    """Checks that a tf.data service dispatcher answers at ``host:port``, waiting at most ``timeout_s``.

    It asks the dispatcher for its version (the ``GetVersion`` call its clients make
    first), through gRPC: a port that accepts connections but does not answer (a
    hung process, another program) fails within ``timeout_s``, and a server that
    answers but is not a dispatcher (a worker's port) fails at once.

    Raises:
        ValueError: naming the address and why no dispatcher answered.
    """
    import grpc  # TensorFlow's own gRPC library (a TensorFlow dependency)

    with grpc.insecure_channel(f"{host}:{port}") as channel:
        try:
            channel.unary_unary(_GET_VERSION)(b"", timeout=timeout_s)
            return
        except grpc.RpcError as e:
            code, details = e.code(), e.details()
    if code == grpc.StatusCode.UNIMPLEMENTED:
        why = "a gRPC server answers there, but not a tf.data service dispatcher: a worker's port?"
    elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
        why = f"no answer within {timeout_s:g} s"
    else:
        why = details or code.name
    raise ValueError(f"no tf.data service dispatcher answers at {host}:{port} ({why}); start one with: "
                     f"python -m kit service dispatcher --port {port}") from None


#: The dispatcher's version call (tensorflow/core/protobuf/data/experimental/service/dispatcher.proto);
#: an empty request is a valid ``GetVersionRequest``.
_GET_VERSION = "/tensorflow.data.DispatcherService/GetVersion"


#: The address the servers are meant for unless ``--bind`` says otherwise: this machine only.
DEFAULT_BIND = "127.0.0.1"

_WILDCARDS = ("0.0.0.0", "::", "[::]")

#: What ``--bind`` can and cannot do (TensorFlow 2.21's servers listen on every interface).
BIND_NOTE = ("TensorFlow 2.21 has no listen-address setting: its tf.data service servers listen on all "
             "interfaces whatever --bind says; --bind is the address the kit checks is this machine's, "
             "advertises and connects to, so on a machine other hosts can reach, keep the port closed to them "
             "(a firewall)")


def _check_port(port: int | None) -> None:
    # TensorFlow keeps the port's low 16 bits: 70000 would quietly serve on 4464.
    if port is None:
        return
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(f"port must be in 1..65535 (or None: any free one), got {port!r}")


def _is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_bind(bind: str, port: int | None) -> None:
    """Checks that ``bind`` is an address of this machine and ``port`` is free there (ValueError if not)."""
    host = str(bind).strip().strip("[]")
    if not host:
        raise ValueError("bind must be a host name or an address of this machine (0.0.0.0: all), got ''")
    try:
        infos = socket.getaddrinfo(host, port or 0, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise ValueError(f"bind: cannot resolve {bind!r} ({e.strerror})") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise ValueError(f"port {port} is already in use on {bind}") from None
            raise ValueError(f"bind: {bind!r} is not an address of this machine ({e.strerror})") from None


def _advertised(bind: str) -> str:
    """The name clients reach a server bound to ``bind`` by."""
    return socket.getfqdn() if bind.strip() in _WILDCARDS else bind.strip()


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


def run_dispatcher(*, port: int | None = None, bind: str = DEFAULT_BIND, work_dir: str | None = None,
                   worker_timeout_s: float | None = None) -> int:
    """Starts a tf.data service dispatcher in this process and serves until stopped.

    Args:
        port: the port to listen on, 1..65535 (None: any free one, printed).
        bind: the address it is meant for (default ``127.0.0.1``: this machine;
            ``0.0.0.0``: every interface). Checked to be this machine's and printed
            for workers; TensorFlow 2.21 itself listens on all interfaces (``BIND_NOTE``).
        work_dir: keep the dispatcher's journal here (fault-tolerant mode: a restarted
            dispatcher recovers its jobs).
        worker_timeout_s: after how long without a heartbeat a worker counts as lost.
    """
    _check_port(port)
    _check_bind(bind, port)
    if worker_timeout_s is not None and not worker_timeout_s > 0:
        raise ValueError(f"worker_timeout_s must be positive, got {worker_timeout_s}")
    import tensorflow as tf

    config = tf.data.experimental.service.DispatcherConfig(
        port=port or 0, work_dir=work_dir, fault_tolerant_mode=work_dir is not None,
        worker_timeout_ms=None if worker_timeout_s is None else int(worker_timeout_s * 1000))
    try:
        server = tf.data.experimental.service.DispatchServer(config)
    except (tf.errors.OpError, RuntimeError) as e:
        raise ValueError(f"cannot start a dispatcher on port {port}: {getattr(e, 'message', e)}") from None
    bound = int(server.target.rsplit(":", 1)[1])
    host = _advertised(bind)
    return _serve(server, f"kit service dispatcher: ready at grpc://{host}:{bound} (port {bound}, --bind {bind}); "
                          f"start workers with `python -m kit service worker --dispatcher {host}:{bound}"
                          + (" --bind 0.0.0.0`" if bind.strip() in _WILDCARDS else "`")
                          + ("" if bind.strip() in _WILDCARDS else f"\nkit service dispatcher: note: {BIND_NOTE}"))


def run_worker(*, dispatcher: str, port: int | None = None, bind: str | None = None, host: str | None = None,
               heartbeat_s: float | None = None) -> int:
    """Starts a tf.data service worker in this process and serves until stopped.

    Args:
        dispatcher: ``HOST:PORT`` of the dispatcher.
        port: the port to listen on, 1..65535 (None: any free one). Give a fixed port
            to workers that a supervisor restarts: a worker back at the same address
            takes over its task.
        bind: the address it is meant for (default: ``host`` if given, else
            ``127.0.0.1``; ``0.0.0.0``: every interface). Checked to be this
            machine's; TensorFlow 2.21 itself listens on all interfaces (``BIND_NOTE``).
        host: the name clients reach this worker by (default: ``bind``, or this
            machine's name when ``bind`` is every interface).
        heartbeat_s: how often to report to the dispatcher.

    Raises:
        ValueError: a bad address or port, or a worker meant for this machine only
            (``127.0.0.1``) serving a dispatcher on another machine.
    """
    dhost, dport = parse_address(dispatcher)
    _check_port(port)
    bind = bind if bind is not None else host if host is not None else DEFAULT_BIND
    _check_bind(bind, port)
    host = host or _advertised(bind)
    if _is_loopback(host) and not _is_local(dhost):
        raise ValueError(f"a worker reached at {host} (--bind {bind}) cannot serve the dispatcher at {dhost}:{dport} "
                         "on another machine: its readers could not reach the worker. Give --bind 0.0.0.0 or "
                         "this machine's address (and --host, the name others reach it by)")
    if heartbeat_s is not None and not heartbeat_s > 0:
        raise ValueError(f"heartbeat_s must be positive, got {heartbeat_s}")
    import tensorflow as tf

    config = tf.data.experimental.service.WorkerConfig(
        dispatcher_address=f"{dhost}:{dport}", worker_address=f"{host}:%port%", port=port or 0,
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
    return _serve(server, f"kit service worker: ready at {host}:{bound} (--bind {bind}), serving dispatcher "
                          f"{dhost}:{dport}"
                          + ("" if bind.strip() in _WILDCARDS else f"\nkit service worker: note: {BIND_NOTE}"))


def _is_local(host: str) -> bool:
    """Whether ``host`` names this machine (a loopback address, or one a socket can bind to here)."""
    if _is_loopback(host):
        return True
    try:
        infos = socket.getaddrinfo(host.strip("[]"), 0, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    for family, _, _, _, address in infos:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            try:
                s.bind(address)
                return True
            except OSError:
                continue
    return False



# --------------------------------------------------------------------------- a local service


@dataclass
class LocalService:
    """A dispatcher and workers on this machine, each a ``python -m kit service`` process.

    Attributes:
        target: ``grpc://BIND:PORT`` of the dispatcher, for ``service=``.
        dispatcher_port: its port.
        worker_ports: each worker's fixed port.
        processes: the dispatcher's process, then the workers'.
        bind: the address the servers are meant for (``--bind``).
        ready: each server's "ready" line, the dispatcher's first.
    """

    target: str
    dispatcher_port: int
    worker_ports: list[int]
    processes: list = field(default_factory=list)
    startup_s: float = 120.0
    env: dict | None = None
    bind: str = DEFAULT_BIND
    ready: list = field(default_factory=list)

    def start_worker(self, i: int) -> None:
        """(Re)starts worker ``i`` at its port, as a supervisor would, and waits until it serves."""
        proc = _start(["worker", "--dispatcher", f"{self.bind}:{self.dispatcher_port}", "--port",
                       str(self.worker_ports[i]), "--bind", self.bind, "--heartbeat-s", "0.5"], self.env)
        self.processes[1 + i] = proc
        self.ready.append(_wait_ready(proc, self.startup_s))

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
def local_service(workers: int = 2, *, bind: str = DEFAULT_BIND, startup_s: float = 120.0,
                  env: dict | None = None):
    """A dispatcher and ``workers`` workers on this machine, each its own process.

    Yields a ``LocalService`` (``.target`` for ``make_loader(..., service=...)``); every
    process is stopped when the block ends, whatever happens. Each wait is bounded by
    ``startup_s``. ``bind``: the servers' ``--bind`` (an address of this machine;
    default ``127.0.0.1``). ``env``: the processes' environment (default: this one's).
    """
    check_int("workers", workers)
    if bind.strip() in _WILDCARDS:
        raise ValueError(f"local_service needs one address of this machine to reach its servers at, got {bind!r}")
    _check_bind(bind, None)
    dport = free_port(bind)
    service = LocalService(f"grpc://{bind}:{dport}", dport, [free_port(bind) for _ in range(workers)],
                           startup_s=startup_s, env=env, bind=bind)
    service.processes = [_start(["dispatcher", "--port", str(dport), "--bind", bind], env)] + [None] * workers
    try:
        service.ready.append(_wait_ready(service.processes[0], startup_s))
        for i in range(workers):
            service.start_worker(i)
        yield service
    finally:
        service.stop()
