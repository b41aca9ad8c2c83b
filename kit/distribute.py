"""Training on several devices and several machines, with TensorFlow's own engines.

* ``make_strategy(replicas)``: ``tf.distribute.MirroredStrategy`` over the visible GPUs;
  on a machine without GPUs, over the CPU split into logical devices (a simulation:
  the same code and the same results, not the speed of N devices, since the logical
  devices share the same cores).
* Input for N replicas, both of TensorFlow's patterns (``distributed_loader``):
  ``"global"``: a loader batched at the *global* batch, split by
  ``strategy.experimental_distribute_dataset``; ``"per_replica"``:
  ``strategy.distribute_datasets_from_function``, each input pipeline reading only its
  shard of the index (``input_context``), batched at the *per-replica* batch.
  Either way, global batch = per-replica batch x replicas (``global_batch_size``).
* ``through_service``: a tf.data pipeline run by tf.data service workers
  (``python -m kit service dispatcher|worker``), ``distributed_epoch`` mode.
* ``tf_config`` / ``multi_worker_strategy``: ``MultiWorkerMirroredStrategy`` across
  machines (``python -m kit multiworker``), trained with ``train_steps``.

TensorFlow is imported inside functions only: importing this module (the CLI does, to
register its commands) initialises nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import signal
import sys
import time
from typing import Sequence

import numpy as np

#: Logical CPU devices ``make_strategy()`` makes when there is no GPU and no count is given.
SIMULATED_REPLICAS = 2

#: The two input patterns of ``distributed_loader``.
PATTERNS = {
    "global": "one pipeline batched at the global batch; experimental_distribute_dataset splits each batch",
    "per_replica": "distribute_datasets_from_function: each input pipeline reads its shard, per-replica batches",
}

DEVICE_CHOICES = ("auto", "gpu", "cpu")


# --------------------------------------------------------------------------- strategies


def _check_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def split_cpu(devices: int) -> None:
    """Splits the CPU into ``devices`` logical devices (at least), for a simulated multi-device run.

    Must run before TensorFlow initialises its devices (before the first tensor, model
    or dataset of the process). Calling it again with the same or a smaller count is a
    no-op.

    Raises:
        RuntimeError: when TensorFlow has already initialised its devices with fewer
            logical CPUs; the message says what to do.
    """
    import tensorflow as tf

    devices = _check_count("devices", devices)
    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu)
    if current is not None and len(current) >= devices:
        return
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(devices)])
    except RuntimeError:
        have = len(tf.config.list_logical_devices("CPU"))
        if have >= devices:
            return
        raise RuntimeError(
            f"too late to split the CPU into {devices} logical devices: TensorFlow has already "
            f"initialised its devices in this process ({have} logical CPU device(s)). Call "
            f"kit.distribute.make_strategy({devices}) before any other TensorFlow work (first "
            f"thing in the script, or the first cell of the notebook; restart the kernel)"
        ) from None


def make_strategy(replicas: int | None = None, *, devices: str = "auto"):
    """A ``tf.distribute.MirroredStrategy`` for ``replicas`` replicas on this machine.

    With GPUs: over the first ``replicas`` visible GPUs (all of them by default). With
    none (or ``devices="cpu"``): over ``replicas`` logical devices the CPU is split into
    (default ``SIMULATED_REPLICAS``). That is a simulation: the replicas share the same
    cores, so it shows the code and the results of N replicas, not their speed-up.
    ``describe(strategy)`` says which it is.

    On the CPU this must run before TensorFlow initialises its devices; later calls
    may use up to as many replicas as the first one made (``make_strategy(2)`` first,
    then ``make_strategy(1)`` is fine). The same devices give the same strategy object.

    Args:
        replicas: how many replicas; None means every GPU, or ``SIMULATED_REPLICAS``.
        devices: ``"auto"`` (GPUs when visible, else the CPU), ``"gpu"`` or ``"cpu"``.

    Raises:
        ValueError: bad arguments, or more replicas than GPUs.
        RuntimeError: the CPU split comes too late (see ``split_cpu``).
    """
    import tensorflow as tf

    if replicas is not None:
        replicas = _check_count("replicas", replicas)
    if devices not in DEVICE_CHOICES:
        raise ValueError(f"devices must be one of {', '.join(DEVICE_CHOICES)}, got {devices!r}")
    gpus = tf.config.list_physical_devices("GPU") if devices != "cpu" else []
    if devices == "gpu" and not gpus:
        raise ValueError("devices='gpu' but TensorFlow sees no GPU (check `nvidia-smi` and the "
                         "tensorflow[and-cuda] install)")
    if gpus:
        n = len(gpus) if replicas is None else replicas
        if n > len(gpus):
            raise ValueError(f"{n} replicas asked for, but {len(gpus)} GPU(s) are visible; use "
                             f"at most {len(gpus)}, or devices='cpu' to simulate {n} on the CPU")
        return _mirrored(tuple(f"/gpu:{i}" for i in range(n)))
    n = SIMULATED_REPLICAS if replicas is None else replicas
    split_cpu(n)
    return _mirrored(tuple(f"/cpu:{i}" for i in range(n)))


_STRATEGIES: dict = {}


def _mirrored(devices: tuple):
    # One strategy per device set and process: two MirroredStrategy objects over the same
    # devices number their collective all-reduces alike, and a second model's reduce then
    # collides with the first's ("Shape mismatch in the collective instance").
    import tensorflow as tf

    if devices not in _STRATEGIES:
        _STRATEGIES[devices] = tf.distribute.MirroredStrategy(list(devices))
    return _STRATEGIES[devices]


def is_simulated(strategy) -> bool:
    """True when the strategy's replicas are logical devices of one CPU."""
    devs = [d.upper() for d in strategy.extended.worker_devices]
    return len(devs) > 1 and not any("GPU" in d for d in devs) and _num_workers(strategy) == 1


def _num_workers(strategy) -> int:
    resolver = getattr(strategy, "cluster_resolver", None)
    spec = resolver.cluster_spec().as_dict() if resolver is not None else {}
    return max(1, len(spec.get("worker", [])) + len(spec.get("chief", [])))


def describe(strategy) -> str:
    """One line: how many replicas on what, and whether it is a simulation."""
    n = strategy.num_replicas_in_sync
    devs = strategy.extended.worker_devices
    workers = _num_workers(strategy)
    kind = "GPU" if any("GPU" in d.upper() for d in devs) else "CPU"
    where = f"{len(devs)} {kind} device(s)" + (f" on each of {workers} workers" if workers > 1 else "")
    text = f"{type(strategy).__name__}: {n} replica(s) in sync, {where}"
    if is_simulated(strategy):
        text += (" -- SIMULATION: logical devices sharing one CPU's cores; the same code and "
                 "results as N devices, not their speed")
    return text


def global_batch_size(per_replica: int, replicas) -> int:
    """Global batch = per-replica batch x replicas (``replicas`` an int or a strategy)."""
    n = replicas if isinstance(replicas, (int, np.integer)) else replicas.num_replicas_in_sync
    return _check_count("per_replica", per_replica) * _check_count("replicas", n)


def per_replica_batch_size(global_batch: int, replicas) -> int:
    """Per-replica batch of a global batch; refuses a global batch the replicas cannot share evenly."""
    n = replicas if isinstance(replicas, (int, np.integer)) else replicas.num_replicas_in_sync
    global_batch, n = _check_count("global_batch", global_batch), _check_count("replicas", n)
    if global_batch % n:
        raise ValueError(f"global batch {global_batch} does not split evenly over {n} replicas; "
                         f"use a multiple of {n}")
    return global_batch // n


# --------------------------------------------------------------------------- input for N replicas


def shard_rows(n: int, num_shards: int, shard: int) -> np.ndarray:
    """Rows ``shard, shard + num_shards, ...`` of ``n``: one input pipeline's share."""
    if not 0 <= shard < num_shards:
        raise ValueError(f"shard must be in 0..{num_shards - 1}, got {shard}")
    return np.arange(shard, n, num_shards)


def distributed_loader(strategy, name: str, index, *, per_replica_batch: int, pattern: str = "global",
                       shuffle: bool = True, seed: int = 0, workdir=None, **options):
    """A kit loader variant fed to the strategy's replicas, by either input pattern.

    Args:
        strategy: a ``tf.distribute`` strategy.
        name: a ``tf.data`` variant of ``kit.spectrogram.VARIANTS`` (``pydataset`` goes
            to ``model.fit`` directly; Keras distributes it).
        index: a ``FrameIndex``.
        per_replica_batch: examples per replica per step; the global batch is this
            times ``strategy.num_replicas_in_sync``.
        pattern: ``"global"``: one loader batched at the global batch, each batch
            split over the replicas by ``experimental_distribute_dataset``.
            ``"per_replica"``: ``distribute_datasets_from_function``; each input
            pipeline (one per worker) builds the loader over its shard of the index
            (``input_context.input_pipeline_id``) batched at the per-replica batch
            (``input_context.get_per_replica_batch_size``).
        shuffle, seed, workdir, **options: passed to ``make_loader``.

    Returns:
        A ``tf.distribute.DistributedDataset``: iterate it, or pass it to ``model.fit``
        under ``strategy.scope()``.
    """
    from kit.spectrogram import make_loader

    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}")
    if name == "pydataset":
        raise ValueError("the pydataset variant is a keras.utils.PyDataset, not a tf.data.Dataset: "
                         "pass it to model.fit under strategy.scope() (Keras distributes it)")
    global_batch = global_batch_size(per_replica_batch, strategy)

    if pattern == "global":
        ds = make_loader(name, index, batch_size=global_batch, shuffle=shuffle, seed=seed,
                         workdir=workdir, **options)
        return strategy.experimental_distribute_dataset(ds)

    def per_pipeline(ctx):
        part = index
        if ctx.num_input_pipelines > 1:
            part = index.subset(shard_rows(len(index), ctx.num_input_pipelines, ctx.input_pipeline_id))
        return make_loader(name, part, batch_size=ctx.get_per_replica_batch_size(global_batch),
                           shuffle=shuffle, seed=seed, workdir=workdir, **dict(options))

    return strategy.distribute_datasets_from_function(per_pipeline)


def local_batches(strategy, batch) -> list:
    """The per-replica parts of one distributed batch, as NumPy structures, in replica order."""
    import tensorflow as tf

    flat = [strategy.experimental_local_results(t) for t in tf.nest.flatten(batch)]
    return [tf.nest.pack_sequence_as(batch, [np.asarray(f[i]) for f in flat]) for i in range(len(flat[0]))]


# --------------------------------------------------------------------------- training


def train_steps(strategy, model, data, *, steps: int | None = None, optimizer=None, loss=None) -> list[float]:
    """A plain custom training loop: ``steps`` steps of ``model`` on distributed ``data``.

    Works with every strategy, ``MultiWorkerMirroredStrategy`` included (Keras 3's
    ``model.fit`` fails there: keras-team/keras#20585). Each replica averages its
    per-example losses over the *global* batch, the gradients are summed over the
    replicas, so a step on N replicas equals one step on the whole global batch.

    Args:
        strategy: the strategy ``model`` was built under.
        model: a Keras model (variables made under ``strategy.scope()``).
        data: a distributed dataset of ``(x, y)`` (``distributed_loader``).
        steps: how many steps; None runs to the end of ``data``.
        optimizer: made under the scope; default ``model.optimizer``.
        loss: a per-example loss ``loss(y, y_pred)``; default sparse categorical
            cross-entropy on logits.

    Returns:
        The global mean loss of each step.
    """
    import keras
    import tensorflow as tf

    optimizer = optimizer or model.optimizer
    if optimizer is None:
        raise ValueError("no optimizer: pass optimizer= or compile the model first")
    if loss is None:
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

    def replica_step(x, y):
        with tf.GradientTape() as tape:
            per_example = loss(y, model(x, training=True))
            mean = tf.nn.compute_average_loss(per_example)  # over the global batch
        grads = tape.gradient(mean, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return mean

    @tf.function
    def step(batch):
        per_replica = strategy.run(replica_step, args=batch)
        return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

    losses = []
    for i, batch in enumerate(data):
        if steps is not None and i >= steps:
            break
        losses.append(float(step(batch)))
    if steps is not None and len(losses) < steps:
        raise ValueError(f"data ended after {len(losses)} of {steps} steps")
    return losses


def weights_digest(model) -> str:
    """A short hash of a model's weights (equal weights, equal digest)."""
    h = hashlib.sha256()
    for w in model.get_weights():
        h.update(np.ascontiguousarray(w, dtype=np.float32).tobytes())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- tf.data service


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


def _unwrap_kit_guard(dataset):
    """Splits a kit loader into its body and its epoch guard.

    Kit loaders end with ``assert_cardinality(num_batches)`` then ``prefetch``. Run
    by N service workers, each worker sees only its share of the epoch, so the guard
    must move to the reading side. Returns ``(body, num_batches, batch_size)``, with
    None where the dataset is not shaped like a kit loader (then it is used as is).
    """
    ds, n_batches, batch = dataset, None, None
    try:
        if type(ds).__name__ == "_PrefetchDataset":
            ds = ds._input_dataset
        if type(ds).__name__ != "_AssertCardinalityDataset":
            return dataset, None, None
        n_batches = int(ds._expected_cardinality)
        ds = ds._input_dataset
    except (AttributeError, TypeError):
        return dataset, None, None
    probe = ds
    try:
        for _ in range(8):  # down to the batching op: map(parse) <- batch, or batch itself
            if type(probe).__name__ in ("_BatchDataset", "_ParallelBatchDataset"):
                if not bool(probe._drop_remainder):
                    batch = int(probe._batch_size)
                break
            probe = probe._input_dataset
    except (AttributeError, TypeError):  # e.g. a zip on the way: no batch size to check against
        batch = None
    return ds, n_batches, batch


def _guard_epoch(ds, low: int, high: int, *, on_short: str):
    """Checks at the end of each epoch that ``low <= examples <= high`` were delivered.

    An empty batch is appended as an end marker; a running count (``scan``) checks it
    there, and the marker is dropped. More than ``high`` fails at once.
    """
    import tensorflow as tf

    spec = ds.element_spec
    end = tf.data.Dataset.from_tensors(tf.nest.map_structure(
        lambda s: tf.zeros([0] + [d or 0 for d in s.shape.as_list()[1:]], s.dtype), spec))
    what = (f"{low}" if low == high else f"{low}..{high}")

    def step(count, batch):
        k = tf.shape(tf.nest.flatten(batch)[0], out_type=tf.int64)[0]
        count = count + k
        at_end = tf.equal(k, 0)
        ok = tf.logical_and(count <= high, tf.logical_or(tf.logical_not(at_end), count >= low))
        message = tf.strings.format(
            "tf.data service delivered {} examples this epoch where " + what + " were expected: with "
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

    The epoch's length is checked on this side, at its end: ``examples`` exactly when
    given, else the range a kit loader's batch count allows. A shortfall raises
    (``on_short="raise"``) or prints a warning (``"warn"``): never a silently shorter
    epoch.

    Args:
        dataset: a ``tf.data.Dataset`` (a kit loader, or any graph-only pipeline).
        service: the dispatcher, ``grpc://HOST:PORT`` or ``HOST:PORT``.
        examples: examples per epoch, for an exact check.
        on_short: ``"raise"`` or ``"warn"``.
        job_name: share one job between several readers (each gets part of the epoch).

    Raises:
        ValueError: a bad address, or a pipeline the service cannot run (``service_problems``).
    """
    import tensorflow as tf

    host, port = parse_address(service)
    if on_short not in ("raise", "warn"):
        raise ValueError(f"on_short must be 'raise' or 'warn', got {on_short!r}")
    if examples is not None:
        examples = _check_count("examples", examples)
    body, n_batches, batch = _unwrap_kit_guard(dataset)
    problems = service_problems(body)
    if problems:
        raise ValueError(
            f"tf.data service cannot run this pipeline in distributed_epoch mode: {'; '.join(problems)}. "
            "Use a variant that is one splittable source and graph ops only (tfrecord, in_memory), or "
            "move the Python step to a conversion done once (python -m kit convert ...)")
    check_dispatcher(host, port)  # before the epoch: a missing dispatcher would block silently
    body = body.prefetch(tf.data.AUTOTUNE)  # on the workers
    ds = body.apply(tf.data.experimental.service.distribute(
        processing_mode="distributed_epoch", service=f"grpc://{host}:{port}", job_name=job_name))
    if examples is not None:
        ds = _guard_epoch(ds, examples, examples, on_short=on_short)
    elif n_batches is not None and batch is not None:
        ds = _guard_epoch(ds, (n_batches - 1) * batch + 1, n_batches * batch, on_short=on_short)
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


# --------------------------------------------------------------------------- multi-worker


def tf_config(workers: Sequence[str], index: int) -> dict:
    """The ``TF_CONFIG`` of worker ``index`` in a cluster of ``workers`` (``host:port`` each).

    Worker 0 is the chief (it writes checkpoints and summaries). Set it in the
    environment as ``json.dumps(...)`` before creating the strategy, on every machine,
    with the same list and its own ``index``.
    """
    workers = [str(w).strip() for w in (workers.split(",") if isinstance(workers, str) else workers)]
    if not workers:
        raise ValueError("workers must list at least one host:port")
    for w in workers:
        parse_address(w)
    if len(set(workers)) != len(workers):
        raise ValueError(f"workers lists an address twice: {workers}")
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(workers):
        raise ValueError(f"index must be in 0..{len(workers) - 1}, got {index!r}")
    return {"cluster": {"worker": workers}, "task": {"type": "worker", "index": int(index)}}


def multi_worker_strategy(workers: Sequence[str], index: int):
    """Sets ``TF_CONFIG`` for this worker and returns a ``MultiWorkerMirroredStrategy``.

    Call it first thing in the process, on every worker; it waits until all the
    workers in the list have started. Each worker uses its local GPUs (or its CPU).
    """
    import tensorflow as tf

    os.environ["TF_CONFIG"] = json.dumps(tf_config(workers, index))
    try:
        return tf.distribute.MultiWorkerMirroredStrategy()
    except RuntimeError as e:
        raise RuntimeError(f"MultiWorkerMirroredStrategy must be created before any other TensorFlow "
                           f"work in the process ({e})") from None


def small_model(frame_shape, classes: int, *, seed: int = 0, width: int = 1, head_only: bool = False):
    """The small model the examples, the multi-worker demo and the scaling bench train.

    Args:
        frame_shape: ``(H, W)`` of the frames (inputs are ``(H, W, 1)``).
        classes: outputs (logits).
        seed: initialises the weights (this sets Keras's global seeds).
        width: multiplies the conv filters (more compute per example).
        head_only: only a Dense head on pooled frames: little compute per example, like
            training a head on a frozen backbone (the spectrogram user's case).
    """
    import keras

    width = _check_count("width", width)
    keras.utils.set_random_seed(seed)
    if head_only:
        body = [keras.layers.AveragePooling2D(4), keras.layers.Flatten()]
    else:
        body = [keras.layers.Conv2D(16 * width, 3, strides=2, activation="relu"),
                keras.layers.Conv2D(32 * width, 3, strides=2, activation="relu"),
                keras.layers.GlobalAveragePooling2D()]
    return keras.Sequential([keras.Input(tuple(frame_shape) + (1,)), *body, keras.layers.Dense(classes)])


def run_multiworker(*, workers: Sequence[str], index: int, csv=None, variant: str = "in_memory",
                    per_replica_batch: int = 8, steps: int = 3, learning_rate: float = 0.05,
                    seed: int = 0) -> dict:
    """One worker of a multi-worker run: a few steps of ``small_model`` on the spectrogram case.

    Every worker reads its own shard of the index (``per_replica`` pattern), the
    gradients are all-reduced, so all workers end with the same weights.

    Returns:
        ``{"worker", "replicas", "global_batch", "losses", "digest", "weights"}``.
    """
    strategy = multi_worker_strategy(workers, index)
    import keras

    from kit import samples
    from kit.spectrogram import FrameIndex

    frames = FrameIndex.from_csv(csv or samples.embedded("spectrogram"))
    data = distributed_loader(strategy, variant, frames, per_replica_batch=per_replica_batch,
                              pattern="per_replica", shuffle=False, seed=seed, progress=False)
    with strategy.scope():
        model = small_model(frames.frame_shape, frames.num_classes, seed=seed)
        optimizer = keras.optimizers.SGD(learning_rate)
    losses = train_steps(strategy, model, data, steps=steps, optimizer=optimizer)
    return {"worker": index, "replicas": strategy.num_replicas_in_sync,
            "global_batch": global_batch_size(per_replica_batch, strategy), "losses": losses,
            "digest": weights_digest(model), "weights": [w.tolist() for w in model.get_weights()]}


# --------------------------------------------------------------------------- CLI


def register(sub) -> None:
    from kit.cli import non_negative_int, port_number, positive_float, positive_int

    service = sub["root"].add_parser(
        "service", help="tf.data service servers (run each in its own process/machine)")
    ssub = service.add_subparsers(dest="server", required=True, parser_class=type(service))
    d = ssub.add_parser("dispatcher", help="start a dispatcher; serves until Ctrl-C/SIGTERM")
    d.add_argument("--port", type=port_number, required=True, help="port to listen on (0: any free one)")
    d.add_argument("--work-dir", default=None, help="journal folder: a restarted dispatcher recovers")
    d.add_argument("--worker-timeout-s", type=positive_float, default=None,
                   help="seconds without heartbeat before a worker counts as lost")
    d.set_defaults(func=lambda a: run_dispatcher(port=a.port, work_dir=a.work_dir,
                                                 worker_timeout_s=a.worker_timeout_s))
    w = ssub.add_parser("worker", help="start a worker; serves until Ctrl-C/SIGTERM")
    w.add_argument("--dispatcher", required=True, help="HOST:PORT of the dispatcher")
    w.add_argument("--port", type=port_number, default=0, help="port to listen on (fixed, so a restart "
                                                       "takes over the same tasks; default any)")
    w.add_argument("--host", default=None, help="name clients reach this worker by")
    w.add_argument("--heartbeat-s", type=positive_float, default=None, help="seconds between heartbeats")
    w.set_defaults(func=lambda a: run_worker(dispatcher=a.dispatcher, port=a.port, host=a.host,
                                             heartbeat_s=a.heartbeat_s))

    m = sub["root"].add_parser(
        "multiworker", help="one worker of a MultiWorkerMirroredStrategy run (start one per machine)")
    m.add_argument("--workers", required=True, help="HOST:PORT,HOST:PORT,... the same list on every worker")
    m.add_argument("--index", type=non_negative_int, required=True, help="this worker's position in --workers")
    m.add_argument("--csv", default=None, help="spectrogram index CSV (default: the embedded sample)")
    m.add_argument("--variant", default="in_memory", help="tf.data loader variant")
    m.add_argument("--per-replica-batch", type=positive_int, default=8)
    m.add_argument("--steps", type=positive_int, default=3)
    m.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")
    m.set_defaults(func=_multiworker)


def _multiworker(args) -> int:
    from kit.cli import write_json

    out = run_multiworker(workers=args.workers, index=args.index, csv=args.csv, variant=args.variant,
                          per_replica_batch=args.per_replica_batch, steps=args.steps)
    print(f"worker {out['worker']}: {out['replicas']} replicas, global batch {out['global_batch']}, "
          f"losses {', '.join(f'{v:.4f}' for v in out['losses'])}, weights {out['digest']}")
    write_json(args.json, out)
    return 0
