"""The pipeline doctor: point the kit at any input pipeline (and model) and get measured findings.

``diagnose(source, model=None, *, max_seconds=20, trace_dir=None)`` measures, in one run:

* the loader alone: examples/s and batch latency (``kit.timing.measure``), the CPU cores it
  kept busy, and the bytes it read (``/proc/self/io``: ``rchar``, ``read_bytes``) against
  the bytes of the examples it delivered;
* with a compiled Keras model (trained as a copy; the user's weights are left alone):
  the compute ceiling, the model trained on one real batch replayed from memory so the
  step never waits, interleaved with the real fit timed by ``kit.timing.StepTimer``
  (the share of each step spent waiting for input);
* the structure of a ``tf.data`` pipeline, read from its serialized graph
  (``tf.data.experimental.to_variant`` and ``tf.raw_ops.DatasetToGraphV2``);
* a ``keras.utils.PyDataset``'s ``workers``; a model's frozen prefix (layers that
  never train in front of layers that do), timed against the rest trained alone.

It returns a ``Diagnosis``: a ``verdict`` with the measured rates and ``findings``, a
DataFrame ranked by expected gain (the symptom, ``input_bound`` or ``compute_bound``, first),
one row per finding with ``code``, ``evidence``
(the measured number that shows it), ``fix`` (the change, with the kit call or
notebook that teaches it), ``expected_gain`` (a factor) and ``basis`` (how that
factor was obtained). It shows as a table in a notebook and as text on a terminal.

Finding codes (the fixed vocabulary, ``CODES``):

============================  ==========================================================
``input_bound``               the training step waits for input (the symptom)
``compute_bound``             the loader keeps up; the model's step is the limit
``python_in_pipeline``        Python in the tf.data graph (from_generator, py_function,
                              numpy_function): one core at a time under the GIL
``serial_map``                ``Dataset.map`` without ``num_parallel_calls``
``map_before_batch``          a per-example map before ``batch`` (not vectorised)
``serial_interleave``         ``Dataset.interleave`` without ``num_parallel_calls``
``no_prefetch``               the pipeline does not end with ``prefetch``
``read_amplification``        far more bytes read than the examples hold (a whole file
                              read for each example)
``small_shuffle_buffer``      an example shuffle buffer much smaller than the dataset
                              (an order-quality finding, not a speed one)
``pydataset_single_worker``   a PyDataset with one worker
``frozen_backbone_recomputed`` frozen layers recomputed every step (a feature cache runs
                              them once)
============================  ==========================================================

On the command line: ``python -m kit doctor MODULE:FUNCTION [--model MODULE:FUNCTION]``
or ``python -m kit doctor --index CSV --variant NAME``.
"""

from __future__ import annotations

import argparse
import html
import importlib
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kit import timing

#: code -> (what it means, the fix with the kit call or notebook that teaches it)
CODES = {
    "input_bound": (
        "the training step waits for input",
        "Apply the input findings below, top first; the model's own rate is the ceiling they can "
        "reach. Notebook 01 shows the wait with kit.timing.StepTimer.",
    ),
    "compute_bound": (
        "the loader keeps up; the model's step is the limit",
        "Speed up the step, not the loader: mixed precision, jit_compile=True, a larger batch, "
        "more devices (notebook 04); a frozen backbone runs once in a feature cache (notebook 07).",
    ),
    "python_in_pipeline": (
        "Python code inside the tf.data graph",
        "Move the Python work into tf.data ops, or convert the data once into a store the graph "
        "reads (python -m kit convert, kit.spectrogram.make_loader('memmap'|'tfrecord', ...); "
        "notebooks 02-03). from_generator/py_function/numpy_function run one at a time under the GIL.",
    ),
    "serial_map": (
        "Dataset.map without num_parallel_calls",
        "ds.map(f, num_parallel_calls=tf.data.AUTOTUNE) (notebook 02's ladder).",
    ),
    "map_before_batch": (
        "a per-example map before batch",
        "Batch first, then map a function written for the whole batch: ds.batch(B).map(f_batched, "
        "num_parallel_calls=tf.data.AUTOTUNE) (notebook 02's 'vectorise' rung; the kit's tfrecord "
        "variant parses whole batches).",
    ),
    "serial_interleave": (
        "Dataset.interleave without num_parallel_calls",
        "ds.interleave(f, cycle_length=..., num_parallel_calls=tf.data.AUTOTUNE) (notebook 03's "
        "TFRecord reader).",
    ),
    "no_prefetch": (
        "the pipeline does not end with prefetch",
        "End the pipeline with .prefetch(tf.data.AUTOTUNE), so the next batch is prepared while the "
        "model trains on this one (notebook 02).",
    ),
    "read_amplification": (
        "far more bytes read than the examples hold",
        "Read each file once per epoch, not once per example: memory-map it (np.load(path, "
        "mmap_mode='r')) or convert once (python -m kit convert spectrogram --to memmap|tfrecord; "
        "notebooks 01 and 03).",
    ),
    "small_shuffle_buffer": (
        "an example shuffle buffer much smaller than the dataset",
        "Shuffle row ids (cheap) over the whole dataset before reading, or raise the buffer towards "
        "the dataset size; shuffle file order too (the kit's loaders shuffle ids: kit.epochs).",
    ),
    "pydataset_single_worker": (
        "a keras.utils.PyDataset with one worker",
        "PyDataset(workers=<CPU cores>, use_multiprocessing=True) when __getitem__ is Python-bound "
        "(notebook 06: the sequence_workers variant); or move the work into tf.data.",
    ),
    "frozen_backbone_recomputed": (
        "frozen layers recomputed on every step",
        "Run the frozen layers once into a feature cache and train the rest from it: "
        "kit.features.extract_features + kit.features.train_head (notebook 07); valid while the "
        "frozen part stays frozen and examples are not augmented.",
    ),
}

#: Codes that name the symptom (what limits the step) rather than a cause: listed first.
SYMPTOMS = ("input_bound", "compute_bound")
#: Verdict thresholds on the share of each step spent waiting for input.
INPUT_BOUND_SHARE = 0.25
COMPUTE_BOUND_SHARE = 0.10
#: Read amplification worth reporting: this many times the example bytes, and at
#: least this many surplus bytes read in the measured window (noise: stray reads).
AMPLIFICATION_FACTOR = 4.0
AMPLIFICATION_MIN_BYTES = 1 << 20
#: An example shuffle buffer under this share of the dataset is reported.
SHUFFLE_SHARE = 0.1

_PY_OPS = {"PyFunc", "EagerPyFunc", "PyFuncStateless"}
_BATCH_OPS = {"BatchDataset", "BatchDatasetV2", "PaddedBatchDataset", "PaddedBatchDatasetV2",
              "ParallelBatchDataset"}
_MAP_OPS = {"MapDataset", "ParallelMapDataset", "ParallelMapDatasetV2"}
_INTERLEAVE_OPS = {"InterleaveDataset", "ParallelInterleaveDataset", "ParallelInterleaveDatasetV2",
                   "ParallelInterleaveDatasetV3", "ParallelInterleaveDatasetV4", "FlatMapDataset"}
_SHUFFLE_OPS = {"ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3",
                "ShuffleAndRepeatDataset", "ShuffleAndRepeatDatasetV2"}
#: Ops that do no per-example work: they may follow the final prefetch.
_PASSIVE_OPS = {"PrefetchDataset", "OptionsDataset", "AssertCardinalityDataset", "RepeatDataset",
                "TakeDataset", "SkipDataset", "ModelDataset", "MaxIntraOpParallelismDataset",
                "PrivateThreadPoolDataset", "AssertNextDataset", "CacheDataset", "CacheDatasetV2",
                "FinalizeDataset", "ShardDataset"}


# --------------------------------------------------------------------------- results


@dataclass
class Diagnosis:
    """What ``diagnose`` found.

    Attributes:
        verdict: ``"input-bound"``, ``"compute-bound"`` or ``"balanced"`` (with a model);
            ``"loader only"`` without one.
        summary: the verdict in a sentence, with the measured rates.
        rates: the measured numbers (examples/s of loader, ceiling and fit; input share;
            cores busy; bytes read per example ...).
        findings: one row per finding, ranked by ``expected_gain``: ``code``,
            ``evidence``, ``fix``, ``expected_gain``, ``basis``.
        pipeline: the tf.data ops from source to output, where the source is tf.data.
        trace_dir: where the profiler trace went, if one was recorded.
    """

    verdict: str
    summary: str
    rates: dict
    findings: pd.DataFrame
    pipeline: list = field(default_factory=list)
    trace_dir: str | None = None

    @property
    def codes(self) -> list[str]:
        """Finding codes, best expected gain first."""
        return list(self.findings["code"])

    @property
    def top(self) -> str | None:
        """The first finding that is a cause, not the symptom (``input_bound``, ``compute_bound``)."""
        rest = [c for c in self.codes if c not in SYMPTOMS]
        return rest[0] if rest else None

    def gain(self, code: str) -> float:
        """The expected gain of ``code`` (NaN if it was not found)."""
        row = self.findings.loc[self.findings["code"] == code, "expected_gain"]
        return float(row.iloc[0]) if len(row) else math.nan

    def as_dict(self) -> dict:
        return {"verdict": self.verdict, "summary": self.summary, "rates": self.rates,
                "findings": self.findings.to_dict(orient="records"), "pipeline": self.pipeline,
                "trace_dir": self.trace_dir}

    def __str__(self) -> str:
        lines = [f"verdict: {self.verdict}", f"  {self.summary}"]
        if self.pipeline:
            lines.append(f"  tf.data pipeline: {' -> '.join(self.pipeline)}")
        if self.findings.empty:
            lines.append("no findings")
        for i, r in enumerate(self.findings.itertuples(index=False), start=1):
            lines.append(f"{i}. {r.code}: expected gain {_fmt_gain(r.expected_gain)} ({r.basis})")
            lines.append(f"   evidence: {r.evidence}")
            lines.append(f"   fix: {r.fix}")
        if self.trace_dir:
            lines.append(f"profiler trace: {self.trace_dir} (tensorboard --logdir {self.trace_dir})")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        table = self.findings.assign(expected_gain=self.findings["expected_gain"].map(_fmt_gain))
        parts = [f"<p><b>verdict: {html.escape(self.verdict)}</b>: {html.escape(self.summary)}</p>"]
        if self.pipeline:
            parts.append(f"<p>tf.data pipeline: <code>{html.escape(' → '.join(self.pipeline))}</code></p>")
        parts.append(table.to_html(index=False, escape=True) if len(table) else "<p>no findings</p>")
        if self.trace_dir:
            parts.append(f"<p>profiler trace: <code>{html.escape(self.trace_dir)}</code></p>")
        return "\n".join(parts)


def _fmt_gain(g: float) -> str:
    if g is None or not math.isfinite(g):
        return "not measured"
    return f"{g:,.1f}x" if g < 100 else f"{g:,.0f}x"


# --------------------------------------------------------------------------- sources


class _Counted:
    """A re-iterable view of a batch source that records each epoch's batch sizes."""

    def __init__(self, source):
        self.source = source
        self.epochs: list[list[int]] = []

    def __iter__(self):
        sizes: list[int] = []
        self.epochs.append(sizes)
        for batch in timing.iterate(self.source):
            sizes.append(timing.batch_size_of(batch))
            yield batch

    def __len__(self):
        n = _known_length(self.source)
        if n is None:
            raise TypeError("length unknown")
        return n


def _loop(source, sizes: list):
    """Batches of ``source`` epoch after epoch (for timing beyond one short epoch)."""
    while True:
        empty = True
        for batch in timing.iterate(source):
            empty = False
            sizes.append(timing.batch_size_of(batch))
            yield batch
        if empty:
            return


def check_source(source, name: str = "source"):
    """Raises ``ValueError`` (naming ``name``) unless ``source`` is a re-readable batch source."""
    if source is None or isinstance(source, (str, bytes, int, float, np.ndarray)):
        raise ValueError(f"{name} is of type {type(source).__name__!r}, not a batch source (a "
                         f"tf.data.Dataset, a keras.utils.PyDataset or a function returning a generator "
                         f"of batches)")
    if isinstance(source, Iterator):
        raise ValueError(f"{name} is a one-shot iterator ({type(source).__name__}); the doctor reads it "
                         f"several times: pass a tf.data.Dataset, a PyDataset or a function returning "
                         f"a fresh generator")
    if not (_is_pydataset(source) or callable(source) or hasattr(source, "__iter__")):
        raise ValueError(f"{name} is of type {type(source).__name__!r}, not a batch source (a "
                         f"tf.data.Dataset, a keras.utils.PyDataset or a function returning a generator "
                         f"of batches)")


def _first_batch(source, name):
    it = timing.iterate(source)
    try:
        batch = next(it)
    except StopIteration:
        raise ValueError(f"{name} yielded no batches") from None
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()
    try:
        n = timing.batch_size_of(batch)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{name} does not yield batches: {e}") from None
    return batch, n


def _nbytes(batch) -> int:
    leaves = batch if isinstance(batch, (tuple, list)) else [batch]
    total = 0
    for leaf in leaves:
        if isinstance(leaf, dict):
            total += sum(_nbytes(v) for v in leaf.values())
        elif isinstance(leaf, (tuple, list)):
            total += _nbytes(leaf)
        else:
            total += int(np.asarray(leaf).nbytes)
    return total


def _proc_io() -> dict | None:
    try:
        with open("/proc/self/io") as f:
            return {k: int(v) for k, v in (line.split(":") for line in f if ":" in line)}
    except OSError:
        return None


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return math.nan


def _cores_available(cores: int, busy: float, load: float) -> float:
    """Cores a parallel loader could use: this machine's, less what other processes keep busy
    (the one-minute load average beyond this loader's own cores), at least one."""
    others = max(0.0, load - busy) if math.isfinite(load) else 0.0
    return float(min(cores, max(1.0, cores - others)))


def measure_loader(source, *, max_seconds: float, warmup: int = 1) -> dict:
    """The loader alone: rate, latency, cores kept busy and bytes read per example.

    The source is read epoch after epoch until ``max_seconds``; the first ``warmup``
    batches are read before the window opens (pipelines fill their buffers, modules load).
    """
    sizes: list[int] = []
    it = _loop(source, sizes)
    try:
        for _ in range(warmup):
            next(it)
    except StopIteration:
        raise ValueError("the source ended during the warm-up") from None
    sizes.clear()
    io0, cpu0, t0 = _proc_io(), _cpu_s(), time.perf_counter()
    m = timing.measure(it, warmup=0, max_seconds=max_seconds)
    io1, cpu1, wall = _proc_io(), _cpu_s(), time.perf_counter() - t0
    examples = sum(sizes)
    out = {"loader_examples_per_s": m.examples_per_s, "loader_latency_p50_ms": m.latency_p50_ms,
           "loader_latency_p95_ms": m.latency_p95_ms, "loader_examples": m.examples,
           "cores_busy": (cpu1 - cpu0) / wall if wall > 0 else math.nan, "cores": _cores()}
    if io0 is not None and io1 is not None and examples:
        out["rchar_per_example"] = (io1.get("rchar", 0) - io0.get("rchar", 0)) / examples
        out["read_bytes_per_example"] = (io1.get("read_bytes", 0) - io0.get("read_bytes", 0)) / examples
        out["window_examples"] = examples
    return out


# --------------------------------------------------------------------------- tf.data structure


def _is_pydataset(obj) -> bool:
    return any(c.__name__ == "PyDataset" for c in type(obj).__mro__)


def _known_length(source) -> int | None:
    """Batches per epoch where the source knows it (tf.data cardinality, len())."""
    card = getattr(source, "cardinality", None)
    if card is not None:
        n = int(card())
        return n if n >= 0 else None
    try:
        return len(source)
    except TypeError:
        return None


def _is_dataset(obj) -> bool:
    return any(c.__name__ == "DatasetV2" and c.__module__.startswith("tensorflow")
               for c in type(obj).__mro__)


def pipeline_graph(ds) -> dict:
    """The structure of a ``tf.data.Dataset`` from its serialized graph.

    Returns:
        ``chain``: the dataset nodes from the source to the output, following each
        node's first input; ``nodes``: name -> NodeDef; ``python``: names of chain nodes
        whose functions (at any depth) call Python; ``functions``: name -> FunctionDef.
    """
    import tensorflow as tf

    variant = tf.data.experimental.to_variant(ds)
    # external_state_policy=1 (IGNORE): Python functions are what we look for, not an error.
    serialized = tf.raw_ops.DatasetToGraphV2(input_dataset=variant, external_state_policy=1,
                                            strip_device_assignment=True)
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(serialized.numpy())
    nodes = {n.name: n for n in graph.node}
    functions = {f.signature.name: f for f in graph.library.function}
    out = next((n for n in graph.node if n.op == "_Retval"), None)
    chain = []
    name = out.input[0].split(":")[0] if out is not None and out.input else None
    while name is not None and name in nodes:
        node = nodes[name]
        chain.append(node)
        inputs = [i.split(":")[0] for i in node.input if not i.startswith("^")]
        name = next((i for i in inputs if "Dataset" in nodes[i].op), None) if inputs else None
    chain.reverse()

    def called(fn_name, seen):
        """Op types a function runs, following the functions its nodes call."""
        if fn_name in seen or fn_name not in functions:
            return set()
        seen.add(fn_name)
        ops = set()
        for n in functions[fn_name].node_def:
            ops.add(n.op)
            for f in _func_attrs(n):
                ops |= called(f, seen)
        return ops

    python, ops_of = [], {}
    for node in chain:
        ops = set()
        for f in _func_attrs(node):
            ops |= called(f, set())
        ops_of[node.name] = ops
        if ops & _PY_OPS:
            python.append(node.name)
    return {"chain": chain, "nodes": nodes, "python": python, "ops": ops_of, "functions": functions}


def pipeline_ops(ds) -> list[str]:
    """The ops of a ``tf.data.Dataset`` from source to output, Python ones marked
    (``FlatMapDataset[from_generator]``, ``ParallelMapDatasetV2[Python function]``)."""
    graph = pipeline_graph(ds)
    return [_label(n, graph) for n in graph["chain"]]


def _func_attrs(node) -> list[str]:
    names = []
    for v in node.attr.values():
        if v.func.name:
            names.append(v.func.name)
        names.extend(f.name for f in v.list.func)
    return names


def _const(nodes, node, position: int):
    """The value of a node's ``position``-th input when that input is a Const."""
    import tensorflow as tf

    inputs = [i.split(":")[0] for i in node.input if not i.startswith("^")]
    if position >= len(inputs):
        return None
    src = nodes.get(inputs[position])
    if src is None or src.op != "Const":
        return None
    return tf.make_ndarray(src.attr["value"].tensor)


def _label(node, graph) -> str:
    op = node.op
    if node.name in graph["python"]:
        kind = "from_generator" if "GeneratorDataset" in graph["ops"][node.name] else "Python function"
        return f"{op}[{kind}]"
    return op


# --------------------------------------------------------------------------- models


def _map_op_count(graph, node) -> int:
    """Ops a map's function runs per call (bookkeeping ops left out)."""
    skip = {"Identity", "NoOp", "Const", "_Arg", "_Retval", "Placeholder"}
    return max(1, sum(1 for f in _func_attrs(node) if f in graph["functions"]
                      for n in graph["functions"][f].node_def if n.op not in skip))


def _clone(model):
    """A compiled copy of ``model`` with its weights (the doctor trains the copy)."""
    import keras

    config = model.get_compile_config() if getattr(model, "compiled", False) else None
    if not config:
        raise ValueError(f"model {getattr(model, 'name', model)!r} is not compiled; compile it "
                         f"(the doctor trains a copy of it)")
    try:
        copy = keras.models.clone_model(model)
    except (ValueError, TypeError, NotImplementedError) as e:
        raise ValueError(f"model {model.name!r} cannot be copied (keras.models.clone_model: {e}); "
                         f"the doctor needs a Functional or Sequential model") from None
    copy.set_weights(model.get_weights())
    copy.compile_from_config(config)
    return copy, config


def _deadline_callback(seconds: float, min_steps: int, trace: bool = False):
    import keras
    import tensorflow as tf

    class Deadline(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.t0 = None
            self.steps = 0
            self._trace = None

        def on_train_batch_begin(self, batch, logs=None):
            if self.t0 is None:
                self.t0 = time.perf_counter()
            if trace:
                # Step markers: TensorBoard's input-pipeline page splits the trace by these.
                self._trace = tf.profiler.experimental.Trace("train", step_num=self.steps, _r=1)
                self._trace.__enter__()

        def on_train_batch_end(self, batch, logs=None):
            if self._trace is not None:
                self._trace.__exit__(None, None, None)
                self._trace = None
            self.steps += 1
            if self.steps >= min_steps and time.perf_counter() - self.t0 >= seconds:
                self.model.stop_training = True

    return Deadline()


def _timed_fit(model, source, *, max_seconds: float, min_steps: int = 3, trace: bool = False) -> dict:
    """Trains ``model`` on ``source`` through a ``StepTimer`` until ``max_seconds``.

    The first step of the run (which may still compile or fill buffers) is left out.
    Returns examples/s over the step times, the input-wait share, and the steps table.
    """
    timer = timing.StepTimer()
    counted = _Counted(source)
    data = timer.wrap(counted)
    counted.epochs.clear()  # the wrap's peek is not a step
    with warnings.catch_warnings():  # a source of unknown length ends the run: expected here
        warnings.filterwarnings("ignore", message=".*ran out of data.*")
        model.fit(data, epochs=10_000, callbacks=[timer, _deadline_callback(max_seconds, min_steps, trace)],
                  verbose=0, shuffle=False)
    steps = timer.steps()
    sizes = [counted.epochs[e][s] if e < len(counted.epochs) and s < len(counted.epochs[e]) else 0
             for e, s in zip(steps["epoch"], steps["step"])]
    steps["examples"] = sizes
    kept = steps.iloc[1:] if len(steps) > 1 else steps
    step_s = float(kept["step_s"].sum())
    return {"examples_per_s": float(kept["examples"].sum()) / step_s if step_s > 0 else math.nan,
            "input_share": float(kept["wait_s"].sum()) / step_s if step_s > 0 else math.nan,
            "steps": steps, "examples": int(kept["examples"].sum())}


def _as_xy(batch):
    if isinstance(batch, (tuple, list)) and len(batch) >= 2:
        return batch[0], batch[1:]
    return batch, ()


def _frozen_prefix(model):
    """Top-level layers before the first trainable one, when they hold frozen weights."""
    layers = [layer for layer in model.layers if type(layer).__name__ != "InputLayer"]
    prefix = []
    for layer in layers:
        if layer.trainable_weights:
            break
        prefix.append(layer)
    if len(prefix) == len(layers):
        return [], layers  # nothing trains
    while prefix and not prefix[-1].weights:  # weightless layers just before the head stay in it
        prefix.pop()
    if not any(layer.weights for layer in prefix):
        return [], layers
    return prefix, layers[len(prefix):]


def _split(prefix, rest, x):
    """The model as a chain: its frozen part and its head, checked to give the model's output."""
    import keras

    def chain(layers, shape):
        inp = keras.Input(shape)
        h = inp
        for layer in layers:
            h = layer(h)
        return keras.Model(inp, h)

    front = chain(prefix, np.shape(x)[1:])
    features = np.asarray(front(x, training=False))
    head = chain(rest, features.shape[1:])
    return front, head, features


def _replay(batch, n: int = 64) -> list:
    return [batch] * n


# --------------------------------------------------------------------------- calibration


def _per_element_map_overhead(batch_size: int) -> float:
    """Seconds one per-example map call costs here beyond the same map run once per batch.

    A trivial map over ``max(1024, 8 * batch_size)`` elements, per example then per batch,
    interleaved; the fastest of two rounds of each (the machine's noise only adds time).
    """
    import tensorflow as tf

    n = max(1024, 8 * batch_size)
    per_example = tf.data.Dataset.range(n).map(lambda v: v + 1).batch(batch_size)
    batched = tf.data.Dataset.range(n).batch(batch_size).map(lambda v: v + 1)
    best = {"per_example": math.inf, "batched": math.inf}
    for _ in range(2):
        for name, ds in (("per_example", per_example), ("batched", batched)):
            t0 = time.perf_counter()
            for _ in ds:
                pass
            best[name] = min(best[name], time.perf_counter() - t0)
    return max(0.0, (best["per_example"] - best["batched"]) / n)


# --------------------------------------------------------------------------- diagnose


def diagnose(source, model=None, *, max_seconds: float = 20.0, trace_dir=None,
             name: str = "source") -> Diagnosis:
    """Measures a batch source (and a model training on it) and ranks what to fix.

    Args:
        source: a ``tf.data.Dataset``, a ``keras.utils.PyDataset`` or a function
            returning a fresh generator of batches (read several times).
        model: a compiled Keras model (Functional or Sequential) taking these batches,
            or None to diagnose the loader alone. The doctor trains a copy.
        max_seconds: the measuring budget, split between the loader alone, the compute
            ceiling, the real fit and the frozen-prefix timing (model building and the
            first compile come on top).
        trace_dir: record a TensorFlow profiler trace of a few training steps there
            (open with TensorBoard's profile plugin, ``pip install 'kit[profile]'``).
        name: how error messages name the source.

    Returns:
        A ``Diagnosis``.

    Raises:
        ValueError: the source is not a re-readable batch source, or the model does not
            take its batches (the message names which).
    """
    if not (isinstance(max_seconds, (int, float)) and max_seconds > 0):
        raise ValueError(f"max_seconds must be positive, got {max_seconds!r}")
    check_source(source, name)
    batch, batch_size = _first_batch(source, name)
    example_bytes = _nbytes(batch) / batch_size
    pipeline = []
    cores, load = _cores(), _load()  # the load before this call's own work (compiles) adds to it

    graph = None
    if _is_dataset(source):
        graph = pipeline_graph(source)
        pipeline = [_label(n, graph) for n in graph["chain"]]

    copy = None
    if model is not None:
        copy, _ = _clone(model)
        try:  # one step on the first batch: compiles the step the timings below reuse
            _timed_fit(copy, _replay(batch, 2), max_seconds=0.0, min_steps=1)
        except Exception as e:  # noqa: BLE001  (Keras raises many types; all mean the same here)
            raise ValueError(f"model {model.name!r} does not take the batches of {name} "
                             f"({_shapes(batch)}): {_one_line(e)}") from None

    budget_loader = max_seconds if model is None else 0.25 * max_seconds
    loader = measure_loader(source, max_seconds=budget_loader)
    rates: dict[str, Any] = {"batch_size": batch_size, "example_bytes": example_bytes, **loader}
    L = loader["loader_examples_per_s"]
    busy = loader["cores_busy"]
    free = _cores_available(cores, busy, load)
    rates["cores_available"] = free
    parallel_gain = max(1.0, free / max(busy, 1.0))
    parallel_basis = (f"the loader kept {busy:.2f} of {cores} CPU cores busy; parallel work can use the "
                      f"{free:.1f} the rest of the machine leaves free (load average {load:.1f})")

    verdict, summary, cap, cap_basis = "loader only", (
        f"no model given: the loader alone delivers {L:,.1f} examples/s "
        f"(batch latency p50 {loader['loader_latency_p50_ms']:.1f} ms)"), math.inf, ""
    findings: list[dict] = []

    if copy is not None:
        fit_budget = 0.6 * max_seconds / 4
        ceiling_runs, real_runs = [], []
        for _ in range(2):  # interleaved: ceiling, real, ceiling, real
            ceiling_runs.append(_timed_fit(copy, _replay(batch), max_seconds=fit_budget))
            real_runs.append(_timed_fit(copy, source, max_seconds=fit_budget))
        C = _pooled(ceiling_runs)
        F = _pooled(real_runs)
        share = _pooled_share(real_runs)
        rates.update({"ceiling_examples_per_s": C, "fit_examples_per_s": F, "input_share": share,
                      "fit_steps": sum(len(r["steps"]) for r in real_runs)})
        cap = max(1.0, C / F)
        cap_basis = f"capped at the compute ceiling, {cap:,.1f}x the real fit"
        described = (f"the fit ran at {F:,.1f} examples/s with steps waiting for input {share:.0%} of "
                     f"the time; the model alone (one batch replayed from memory) at {C:,.1f}/s; the "
                     f"loader alone at {L:,.1f}/s")
        if share >= INPUT_BOUND_SHARE:
            verdict = "input-bound"
            findings.append(_finding("input_bound", f"steps wait for input {share:.0%} of the time; fit "
                                     f"{F:,.1f} examples/s against a ceiling of {C:,.1f}/s", cap,
                                     "compute ceiling over real fit, measured side by side"))
        elif share <= COMPUTE_BOUND_SHARE:
            verdict = "compute-bound"
            findings.append(_finding("compute_bound", f"steps wait for input only {share:.0%} of the "
                                     f"time; the loader alone delivers {L:,.1f}/s against a fit of "
                                     f"{F:,.1f}/s", max(1.0, L / F),
                                     "loader alone over real fit: how much faster the step may get "
                                     "before input limits it"))
        else:
            verdict = "balanced"
        summary = described

        prefix, rest = _frozen_prefix(copy)
        if prefix:
            findings.extend(_frozen_finding(copy, prefix, rest, batch, F, C, 0.15 * max_seconds))

    def capped(g):
        return min(g, cap)

    def basis(text):
        return f"{text}; {cap_basis}" if cap_basis else text

    # ---- read amplification (measured)
    per_example = max(loader.get("rchar_per_example", 0.0), loader.get("read_bytes_per_example", 0.0))
    if per_example and example_bytes:
        k = per_example / example_bytes
        rates["read_amplification"] = k
        surplus = (per_example - example_bytes) * loader.get("window_examples", 0)
        if k >= AMPLIFICATION_FACTOR and surplus >= AMPLIFICATION_MIN_BYTES:
            findings.append(_finding(
                "read_amplification",
                f"{per_example / 1e3:,.1f} kB read (/proc/self/io) per example of {example_bytes / 1e3:,.1f} kB: "
                f"{k:,.1f}x", capped(k),
                basis(f"reading {k:,.1f}x less, if reading dominates the loader (an upper bound)")))

    # ---- PyDataset
    if _is_pydataset(source):
        workers = getattr(source, "workers", 1) or 1
        if workers <= 1:
            findings.append(_finding(
                "pydataset_single_worker",
                f"workers={workers}, use_multiprocessing={getattr(source, 'use_multiprocessing', False)}; "
                f"{busy:.2f} of {cores} cores busy", capped(parallel_gain), basis(parallel_basis)))

    # ---- tf.data structure
    if graph is not None:
        findings.extend(_structure_findings(graph, source, batch_size, L, capped, basis,
                                            parallel_gain, parallel_basis, rates))

    if trace_dir is not None:
        trace_dir = str(record_trace(copy, source, trace_dir))

    df = pd.DataFrame(findings, columns=["code", "evidence", "fix", "expected_gain", "basis"])
    if len(df):  # the symptom first, then the findings by expected gain (not measured last)
        order = {c: i for i, c in enumerate(CODES)}
        df["_symptom"] = df["code"].isin(SYMPTOMS)
        df["_rank"] = df["code"].map(order)
        df["_gain"] = df["expected_gain"].fillna(-1.0)
        df = df.sort_values(["_symptom", "_gain", "_rank"], ascending=[False, False, True])
        df = df.drop(columns=["_symptom", "_rank", "_gain"]).reset_index(drop=True)
    return Diagnosis(verdict=verdict, summary=summary, rates=rates, findings=df, pipeline=pipeline,
                     trace_dir=trace_dir)


def _finding(code, evidence, gain, basis) -> dict:
    return {"code": code, "evidence": evidence, "fix": CODES[code][1],
            "expected_gain": float(gain) if gain is not None else math.nan, "basis": basis}


def _xy_args(batch):
    x, rest = _as_xy(batch)
    return (x, *rest)


def _shapes(batch) -> str:
    def shape(leaf):
        return "x".join(str(d) for d in np.shape(leaf)) or "scalar"

    leaves = batch if isinstance(batch, (tuple, list)) else [batch]
    return "batches of " + ", ".join(shape(v) if not isinstance(v, (dict, tuple, list)) else type(v).__name__
                                     for v in leaves)


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:300]}{'...' if len(text) > 300 else ''}"


def _pooled(runs) -> float:
    ex = sum(r["examples"] for r in runs)
    s = sum(float(r["steps"]["step_s"].iloc[1:].sum()) for r in runs)
    return ex / s if s > 0 else math.nan


def _pooled_share(runs) -> float:
    wait = sum(float(r["steps"]["wait_s"].iloc[1:].sum()) for r in runs)
    s = sum(float(r["steps"]["step_s"].iloc[1:].sum()) for r in runs)
    return wait / s if s > 0 else math.nan


def _frozen_finding(copy, prefix, rest, batch, F, C, seconds) -> list[dict]:
    x, ys = _as_xy(batch)
    params = sum(int(np.prod(w.shape)) for layer in prefix for w in layer.weights)
    names = f"{prefix[0].name}" + (f" .. {prefix[-1].name}" if len(prefix) > 1 else "")
    evidence = f"{len(prefix)} frozen layer(s) ({names}, {params:,} weights) run on every step"
    whole = np.asarray(copy(x, training=False))
    try:
        front, head, features = _split(prefix, rest, x)
        chained = np.asarray(head(features, training=False))
    except (ValueError, TypeError) as e:
        chained, why = None, _one_line(e)
    else:
        why = "its layers after the frozen part do not form a chain"
    if chained is None or chained.shape != whole.shape or not np.allclose(whole, chained, rtol=1e-3, atol=1e-4):
        return [_finding("frozen_backbone_recomputed", evidence, math.nan,
                         f"not measured: the model does not split into frozen part + head ({why})")]
    head.compile_from_config(copy.get_compile_config())
    H = _pooled([_timed_fit(head, _replay((features, *ys)), max_seconds=seconds)])
    return [_finding(
        "frozen_backbone_recomputed",
        f"{evidence}; the rest trains at {H:,.1f} examples/s on their cached output, the whole model at "
        f"{C:,.1f}/s on the same batch",
        H / F,
        "the layers after the frozen part trained on its output replayed from memory (a feature cache's "
        "ceiling), over the real fit; the one-off extraction pass is not counted")]


def _structure_findings(graph, ds, batch_size, L, capped, basis, parallel_gain, parallel_basis,
                        rates) -> list[dict]:
    chain, nodes = graph["chain"], graph["nodes"]
    out = []
    labels = [_label(n, graph) for n in chain]
    if graph["python"]:
        where = ", ".join(_label(nodes[n], graph) for n in graph["python"])
        out.append(_finding("python_in_pipeline", f"Python called from {where}",
                            capped(parallel_gain),
                            basis(f"Python holds the GIL: {parallel_basis}")))
    serial_maps = [n for n in chain if n.op == "MapDataset"]
    if serial_maps:
        out.append(_finding("serial_map", f"{len(serial_maps)} MapDataset without num_parallel_calls "
                            f"(pipeline: {' -> '.join(labels)})", capped(parallel_gain),
                            basis(parallel_basis)))
    serial_inter = [n for n in chain if n.op == "InterleaveDataset"]
    if serial_inter:
        out.append(_finding("serial_interleave", f"{len(serial_inter)} InterleaveDataset without "
                            f"num_parallel_calls", capped(parallel_gain), basis(parallel_basis)))
    first_batch = next((i for i, n in enumerate(chain) if n.op in _BATCH_OPS), None)
    if first_batch is not None:
        early = [n for n in chain[:first_batch] if n.op in _MAP_OPS and n.name not in graph["python"]]
        if early:
            overhead = _per_element_map_overhead(batch_size)
            ops = sum(_map_op_count(graph, n) for n in early)
            share = min(0.9, overhead * ops * L)
            rates["map_call_overhead_us"] = overhead * 1e6
            out.append(_finding(
                "map_before_batch",
                f"{len(early)} per-example map(s) of {ops} op(s) before {chain[first_batch].op}; a one-op map "
                f"called per example costs {overhead * 1e6:.1f} us here beyond one call per batch (measured)",
                capped(1 / (1 - share)),
                basis(f"that cost x {ops} op(s) x {L:,.1f} examples/s is {share:.0%} of the loader's time, "
                      f"which batching first divides by the batch size (small per-example ops: an estimate)")))
    last_prefetch = max((i for i, n in enumerate(chain) if n.op == "PrefetchDataset"), default=None)
    work_after = [n for n in chain[(last_prefetch + 1 if last_prefetch is not None else 0):]
                  if n.op not in _PASSIVE_OPS]
    if work_after:
        F, C = rates.get("fit_examples_per_s"), rates.get("ceiling_examples_per_s")
        if F and C:
            gain = max(1.0, min(L, C) / F)
            why = (f"overlap: the slower of loader alone ({L:,.1f}/s) and compute ceiling ({C:,.1f}/s) "
                   f"over the real fit ({F:,.1f}/s)")
        else:
            gain, why = 1.0, "no model given: nothing to overlap the loader with"
        out.append(_finding("no_prefetch", f"the last op doing work, {_label(work_after[-1], graph)}, "
                            f"is not followed by a prefetch", gain, why))
    shuffles = [i for i, n in enumerate(chain) if n.op in _SHUFFLE_OPS
                and (first_batch is None or i < first_batch)
                and not any(m.op in _INTERLEAVE_OPS or m.op == "GeneratorDataset"
                            for m in chain[i + 1:first_batch])]
    if shuffles:
        node = chain[shuffles[-1]]
        buffer = _const(nodes, node, 1)
        n = _dataset_examples(ds, chain, nodes, first_batch)
        if buffer is not None and n and int(buffer) < SHUFFLE_SHARE * n:
            out.append(_finding("small_shuffle_buffer",
                                f"shuffle buffer {int(buffer):,} examples for a dataset of about {n:,} "
                                f"({int(buffer) / n:.1%})", 1.0,
                                "order quality, not speed: an example moves at most about a buffer's "
                                "length from its place on disk"))
    return out


def _dataset_examples(ds, chain, nodes, first_batch) -> int | None:
    card = int(ds.cardinality())  # negative: infinite or unknown
    if card < 0:
        return None
    if first_batch is None:
        return card
    size = _const(nodes, chain[first_batch], 1)
    return card * int(size) if size is not None else None


# --------------------------------------------------------------------------- trace


def record_trace(model, source, trace_dir, *, steps: int = 5) -> Path:
    """Records a TensorFlow profiler trace of ``steps`` training steps (or batches read).

    Open it with ``tensorboard --logdir TRACE_DIR`` and the Profile tab (``pip install
    'kit[profile]'``): the input-pipeline page shows each step's wait for input.
    """
    import tensorflow as tf

    trace_dir = Path(trace_dir)
    trace_dir.mkdir(parents=True, exist_ok=True)
    tf.profiler.experimental.start(str(trace_dir))
    try:
        if model is not None:
            timer = timing.StepTimer()
            with warnings.catch_warnings():  # a source shorter than `steps` ends the trace early
                warnings.filterwarnings("ignore", message=".*ran out of data.*")
                model.fit(timer.wrap(source), epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False,
                          callbacks=[timer, _deadline_callback(math.inf, steps, trace=True)])
        else:
            for i, _ in zip(range(steps), timing.iterate(source)):
                with tf.profiler.experimental.Trace("read", step_num=i, _r=1):
                    pass
    finally:
        tf.profiler.experimental.stop()
    return trace_dir


# --------------------------------------------------------------------------- side by side


def compare_fits(runs: dict, *, baseline: str | None = None, max_seconds: float = 10.0,
                 rounds: int = 2) -> pd.DataFrame:
    """Training rates of several (source, model) pairs measured interleaved, side by side.

    Args:
        runs: name -> ``(source, compiled model)``; each model is trained as a copy (one
            copy per model object, shared by the runs that name it).
        baseline: the name to express ratios against (``x_<baseline>``).
        max_seconds: the budget for all of them together.
        rounds: interleaved rounds.

    Returns:
        One row per run: ``variant``, ``examples_per_s`` (over the timed steps, the first
        step of each round left out), ``input_share``, ``steps``, then ``x_<baseline>`` and
        its spread over the rounds, ``x_<baseline>_min`` and ``x_<baseline>_max`` (each round's
        rate over the baseline's in the same round).
    """
    copies, clones = {}, {}
    for name, (source, model) in runs.items():
        check_source(source, name)
        if id(model) not in clones:  # one copy per model: the same model on two loaders compiles once
            clones[id(model)] = _clone(model)[0]
        copy = clones[id(model)]
        batch, _ = _first_batch(source, name)
        _timed_fit(copy, _replay(batch, 2), max_seconds=0.0, min_steps=1)  # compiles the step timed below
        copies[name] = (source, copy)
    each = max_seconds / (rounds * len(runs))
    results = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (source, copy) in copies.items():
            results[name].append(_timed_fit(copy, source, max_seconds=each))
    rows = [{"variant": name, "examples_per_s": _pooled(rs), "input_share": _pooled_share(rs),
             "steps": sum(len(r["steps"]) for r in rs)} for name, rs in results.items()]
    df = pd.DataFrame(rows)
    if baseline is not None:
        timing.add_ratios(df, [baseline])
        # The spread: each round's ratio against the baseline's run in the same round.
        ratios = {name: [_pooled([r]) / _pooled([b]) for r, b in zip(rs, results[baseline])]
                  for name, rs in results.items()}
        df[f"x_{baseline}_min"] = [min(ratios[n]) for n in df["variant"]]
        df[f"x_{baseline}_max"] = [max(ratios[n]) for n in df["variant"]]
    return df


# --------------------------------------------------------------------------- command line


def load_attr(spec: str, what: str):
    """``module:attr`` -> the attribute, called when it is a function (uvicorn's convention).

    The working directory is importable. Every failure is a ``ValueError`` naming ``spec``.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{what} {spec!r}: expected MODULE:FUNCTION, e.g. mypipeline:make_dataset")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001  (whatever the user's module raises, name it)
        raise ValueError(f"{what} {spec!r}: module {module_name!r} does not import: {_one_line(e)}") from None
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"{what} {spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    if callable(obj) and not _is_dataset(obj) and not _is_pydataset(obj) and not _is_model(obj):
        try:
            obj = obj()
        except Exception as e:  # noqa: BLE001
            raise ValueError(f"{what} {spec!r} raised {_one_line(e)}") from None
    return obj


def _is_model(obj) -> bool:
    return any(c.__name__ == "Model" and c.__module__.startswith("keras") for c in type(obj).__mro__)


def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def register(sub) -> None:
    p = sub["root"].add_parser(
        "doctor", help="measure your pipeline (and model) and rank what to fix",
        description="python -m kit doctor MODULE:FUNCTION [--model MODULE:FUNCTION] | "
                    "--index CSV --variant NAME")
    p.add_argument("target", nargs="?", default=None,
                   help="MODULE:FUNCTION returning your tf.data.Dataset, PyDataset or generator function")
    p.add_argument("--model", default=None, help="MODULE:FUNCTION returning your compiled Keras model")
    p.add_argument("--index", type=Path, default=None, help="a kit index CSV (spectrogram or segmentation)")
    p.add_argument("--variant", default=None, help="the kit loader variant to diagnose (with --index)")
    p.add_argument("--batch-size", type=_positive(int), default=None,
                   help="with --index: examples per batch (default 256 spectrogram, 3 segmentation)")
    p.add_argument("--max-seconds", type=_positive(float), default=20.0, help="measuring budget (20)")
    p.add_argument("--trace-dir", type=Path, default=None, help="record a profiler trace there")
    p.add_argument("--json", default=None, help="write the diagnosis as JSON to FILE (- for stdout)")
    p.set_defaults(func=_command)


def _kit_loader(csv: Path, variant: str | None, batch_size: int | None):
    if not csv.is_file():
        raise FileNotFoundError(f"{csv}: index CSV not found")
    with open(csv, newline="") as f:
        header = [h.strip() for h in f.readline().split(",")]
    if "frame" in header:
        from kit import spectrogram

        index = spectrogram.FrameIndex.from_csv(csv)
        return spectrogram.make_loader(variant or "generator", index, batch_size=batch_size or 256)
    if "image" in header:
        from kit import segmentation

        index = segmentation.PairIndex.from_csv(csv)
        palette = segmentation.Palette.from_csv(csv.parent / "class_dict.csv")
        return segmentation.make_loader(variant or "sequence", index, palette, batch_size=batch_size or 3)
    raise ValueError(f"{csv}: neither a spectrogram index (path,frame,label) nor a segmentation index "
                     f"(image,label); header is {','.join(header)}")


def _command(args) -> int:
    if (args.target is None) == (args.index is None):
        raise ValueError("give either MODULE:FUNCTION or --index CSV (one of them)")
    if args.variant is not None and args.index is None:
        raise ValueError("--variant goes with --index")
    if args.index is not None:
        source, name = _kit_loader(args.index, args.variant, args.batch_size), f"loader of {args.index}"
    else:
        name = f"source {args.target!r}"
        source = load_attr(args.target, "source")
    model = None
    if args.model is not None:
        model = load_attr(args.model, "model")
        if not _is_model(model):
            raise ValueError(f"model {args.model!r} returned a {type(model).__name__}, not a Keras model")
    d = diagnose(source, model, max_seconds=args.max_seconds, trace_dir=args.trace_dir, name=name)
    print(d)
    if args.json is not None:
        text = json.dumps(d.as_dict(), indent=1, default=float)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text + "\n")
    return 0


__all__ = ["CODES", "Diagnosis", "diagnose", "compare_fits", "record_trace", "pipeline_graph", "pipeline_ops",
           "measure_loader", "check_source", "load_attr"]
