"""tf.data service, the reading side: ``through_service`` runs a pipeline on tf.data service workers
and reads it here, its epoch's length checked and every wait bounded; ``service_problems`` says why
the service cannot run a pipeline; ``check_dispatcher`` whether a dispatcher answers.

The servers (``kit.distribute.servers``) and ``local_service`` stay importable from here.
TensorFlow is imported inside functions only.
"""
from __future__ import annotations

import atexit
import queue
import sys
import threading
import time
import weakref

from kit.distribute.servers import parse_address
from kit.epochs import epoch_of
from kit.util import check_int

#: Ops that call back into Python: a tf.data service worker cannot run them.
PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc", "GeneratorDataset"})

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
    import tensorflow as tf  # keeps kit.distribute light: TensorFlow

    return tf.compat.v1.GraphDef.FromString(
        dataset._as_serialized_graph(  # the serialisation tf.data service itself sends
            external_state_policy=tf.data.experimental.ExternalStatePolicy.WARN).numpy())


def _python_ops(graph) -> list[str]:
    ops = {n.op for n in graph.node}
    for fn in graph.library.function:
        ops.update(n.op for n in fn.node_def)
    return sorted(ops & PYTHON_OPS)


def python_ops(dataset) -> list[str]:
    """Names of the ops in ``dataset``'s graph that run Python (none: a service worker can run it)."""
    return _python_ops(_graph(dataset))


def service_problems(dataset) -> list[str]:
    """Why tf.data service cannot run ``dataset`` in ``distributed_epoch`` mode (empty: it can): a
    Python function anywhere, or ``zip``, ``concatenate``, ``cache``, ``repeat`` at the top level."""
    graph = _graph(dataset)
    problems = []
    found = _python_ops(graph)
    if found:
        problems.append(f"it runs Python ({', '.join(found)}), which tf.data service workers cannot run")
    top = {n.op for n in graph.node}
    problems += sorted({why for op, why in UNSPLITTABLE_OPS.items() if op in top})
    return problems


#: How long the reader waits for the next batch from the service before it gives up: long enough
#: for a supervisor to restart a killed worker at its port.
SERVICE_TIMEOUT_S = 120.0

#: How long a stopped read waits for its reading thread to end (cancelled first, it ends at once).
_JOIN_S = 30.0


class ServiceTimeoutError(TimeoutError):
    """No batch came from tf.data service within the timeout (the message says how many did)."""


class _Reader:
    """Reads one epoch of a tf.data service dataset on its own thread, each wait bounded.

    The thread fetches batches by a cancellable TensorFlow function, up to ``READ_AHEAD`` ahead:
    the read-ahead lives in a Python thread the kit owns, not in a ``prefetch`` above the
    ``from_generator`` (a TensorFlow thread blocked in Python at interpreter exit would hang the
    process). On a timeout or ``close`` the fetch is cancelled and the thread joined with a bound;
    readers still open at exit are closed by an ``atexit`` hook.
    """

    def __init__(self, dataset) -> None:
        from tensorflow.python.eager import cancellation  # keeps kit.distribute light: TensorFlow

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
        import tensorflow as tf  # keeps kit.distribute light: TensorFlow

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
    """At exit, before the interpreter stops its threads: cancel every open read, so that no thread
    is left blocked where the exit would wait for it."""
    deadline = time.monotonic() + _JOIN_S
    for reader in list(_OPEN):
        reader.close(join_s=max(0.0, deadline - time.monotonic()))


def _bounded_epochs(ds, *, host: str, port: int, examples: int, on_short: str, timeout_s: float):
    """``ds`` read on this side through a ``_Reader``, each epoch's dispatcher checked first, every wait
    bounded by ``timeout_s`` (``ServiceTimeoutError``) and the epoch's length checked."""
    import tensorflow as tf  # keeps kit.distribute light: TensorFlow

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
                arrived += int(tf.shape(tf.nest.flatten(batch)[0])[0])
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

    In ``distributed_epoch`` mode the dispatcher hands out the source's splits (files, rows) to the
    workers, which run the rest of the pipeline (graph ops only: ``service_problems``). A worker
    that dies mid-epoch loses the elements it was producing (at-most-once); one that never comes
    back leaves its task open, so every wait for a batch is bounded by ``timeout_s``, then
    ``ServiceTimeoutError`` (through TensorFlow, as ``tf.errors.UnknownError``) says how many
    examples arrived. At the epoch's end its length is checked against ``examples``: a shortfall
    raises (``on_short="raise"``, as ``tf.errors.InvalidArgumentError``) or warns (``"warn"``).

    Args:
        dataset: a ``tf.data.Dataset`` (a kit loader, or any graph-only pipeline).
        service: the dispatcher, ``grpc://HOST:PORT`` or ``HOST:PORT``.
        examples: examples per epoch (default: what the kit loader recorded).
        on_short: ``"raise"`` or ``"warn"``.
        job_name: share one job between several readers (each gets part of the epoch).
        timeout_s: the longest wait for one batch (default ``SERVICE_TIMEOUT_S``).

    Raises:
        ValueError: a bad address or timeout, no dispatcher answering, or a pipeline the service
            cannot run.
    """
    import tensorflow as tf  # keeps kit.distribute light: TensorFlow

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
    # Registering the dataset below waits for a dispatcher without a bound: checked first.
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
    # No prefetch (nor an injected one) above the generator: the _Reader reads ahead instead.
    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False
    return ds.with_options(options)


#: How long ``check_dispatcher`` waits for a dispatcher to answer.
DISPATCHER_TIMEOUT_S = 10.0


def check_dispatcher(host: str, port: int, *, timeout_s: float = DISPATCHER_TIMEOUT_S) -> None:
    """Checks that a tf.data service dispatcher answers at ``host:port`` within ``timeout_s``: asks for
    its version (gRPC ``GetVersion``), so a port that does not answer, or a server that is not a
    dispatcher (a worker's port), fails. Raises ``ValueError`` naming the address and why."""
    import grpc  # keeps kit.distribute light: grpc (TensorFlow's own)

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
