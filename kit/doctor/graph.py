"""A tf.data pipeline's structure, read from its serialized graph: its chain of ops, their functions, what TensorFlow does anyway."""

from __future__ import annotations

import inspect
import os
import time

import tensorflow as tf

from kit.doctor.findings import Finding
from kit.doctor.rewrite import chain_names, graph_def, is_random, user_name
from kit.doctor.sources import is_library
from kit.timing.batches import batch_size_of, iterate

#: An example shuffle buffer under this share of the dataset is reported.
SHUFFLE_SHARE = 0.1
#: ``tf.data.INFINITE_CARDINALITY``: a ``repeat()``ed dataset is never counted.
INFINITE = -1

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


def pipeline_graph(ds) -> dict:
    """The structure of a ``tf.data.Dataset`` from its serialized graph: ``chain`` (the dataset nodes
    from source to output), ``nodes`` (name -> NodeDef), ``python`` (chain nodes whose functions call
    Python), ``ops`` (chain node -> the op types its functions run), ``functions`` (name -> FunctionDef)."""
    graph = graph_def(ds)
    nodes = {n.name: n for n in graph.node}
    functions = {f.signature.name: f for f in graph.library.function}
    chain = [nodes[name] for name in chain_names(graph)]

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

    ops_of = {node.name: set().union(*(called(f, set()) for f in _func_attrs(node))) for node in chain}
    python = [n.name for n in chain if ops_of[n.name] & _PY_OPS]
    return {"chain": chain, "nodes": nodes, "python": python, "ops": ops_of, "functions": functions}


def pipeline_ops(ds) -> list[str]:
    """The ops of a ``tf.data.Dataset`` from source to output, Python ones marked
    (``FlatMapDataset[from_generator]``, ``ParallelMapDatasetV2[Python function]``)."""
    return labels(pipeline_graph(ds))


def labels(graph: dict) -> list[str]:
    """The chain's ops from source to output, Python ones marked (see ``pipeline_ops``)."""
    out = []
    for n in graph["chain"]:
        kind = "from_generator" if "GeneratorDataset" in graph["ops"][n.name] else "Python function"
        out.append(f"{n.op}[{kind}]" if n.name in graph["python"] else n.op)
    return out


def _func_attrs(node) -> list[str]:
    names = []
    for v in node.attr.values():
        if v.func.name:
            names.append(v.func.name)
        names.extend(f.name for f in v.list.func)
    return names


def _const(nodes, node, position: int):
    """The value of a node's ``position``-th input when that input is a Const."""
    inputs = [i.split(":")[0] for i in node.input if not i.startswith("^")]
    src = nodes.get(inputs[position]) if position < len(inputs) else None
    if src is None or src.op != "Const":
        return None
    return tf.make_ndarray(src.attr["value"].tensor)


def _first_batch_at(chain) -> int | None:
    """The position of the chain's first batching op."""
    return next((i for i, n in enumerate(chain) if n.op in _BATCH_OPS), None)


def count_examples(ds, seconds: float) -> tuple[int, bool]:
    """Examples of one epoch of ``ds`` read for at most ``seconds``: ``(count, whole epoch)``."""
    deadline, n = time.perf_counter() + seconds, 0
    for batch in iterate(ds):
        n += batch_size_of(batch)
        if time.perf_counter() > deadline:
            return n, False
    return n, True


def _python_functions(ds) -> dict:
    """Traced function name -> the user's Python function, for every map, filter, interleave ... of
    ``ds`` and the datasets it reads (its Python objects followed through ``_input_dataset``)."""
    out: dict = {}
    seen: set = set()
    todo = [ds]
    while todo:
        d = todo.pop()
        if d is None or id(d) in seen:
            continue
        seen.add(id(d))
        for attr in ("_map_func", "_predicate", "_scan_func", "_reduce_func", "_key_func"):
            wrapper = getattr(d, attr, None)
            func = getattr(wrapper, "_func", None)
            traced = getattr(wrapper, "function", None)
            name = getattr(traced, "name", None)
            if func is not None and name is not None:
                out[name.decode() if isinstance(name, bytes) else str(name)] = func
        todo += [getattr(d, "_input_dataset", None), *getattr(d, "_datasets", ())]
    return out


def where_in_code(func) -> str:
    """``mymod.py:31 load_image``: where a Python function is defined ('' when unknown)."""
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None or is_library(code.co_filename):
        return ""
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno} {getattr(func, '__name__', '')}".strip()


def places(ds, graph: dict) -> dict:
    """Chain node name -> where its function is defined in the user's code (nodes without a Python
    function left out)."""
    funcs = _python_functions(ds)
    out = {}
    for node in graph["chain"]:
        for f in _func_attrs(node):
            if f in funcs and (text := where_in_code(funcs[f])):
                out[node.name] = text
                break
    return out


def fn_label(graph: dict, node) -> str:
    """The user's name of the function a chain node calls (``decode``, ``lambda``), else its op."""
    return next((user_name(f) for f in _func_attrs(node) if f in graph["functions"]), node.op)


def random_nodes(graph: dict) -> list[str]:
    """Chain nodes whose functions draw random numbers."""
    return [n.name for n in graph["chain"] if is_random(graph["ops"][n.name])]


def effective_options(ds) -> dict:
    """What TensorFlow will do with this pipeline: its options, with TF's defaults where unset
    (``map_parallelization``: stateless maps run in parallel; ``inject_prefetch``: a prefetch at the
    end; ``parallel_batch``; autotune)."""
    o = ds.options()
    opt = o.experimental_optimization

    def on(value) -> bool:
        return True if value is None else bool(value)

    return {"map_parallelization": on(opt.map_parallelization) and on(opt.apply_default_optimizations),
            "inject_prefetch": on(opt.inject_prefetch) and on(opt.apply_default_optimizations),
            "parallel_batch": on(opt.parallel_batch) and on(opt.apply_default_optimizations),
            "autotune": on(o.autotune.enabled)}


def dataset_examples(ds, graph: dict) -> int | None:
    """Examples in one epoch, where the graph says (None: infinite or unknown)."""
    card = int(ds.cardinality())  # negative: infinite or unknown
    first_batch = _first_batch_at(graph["chain"])
    if card < 0 or first_batch is None:
        return None if card < 0 else card
    size = _const(graph["nodes"], graph["chain"][first_batch], 1)
    return card * int(size) if size is not None else None


def small_shuffle(graph, ds, *, counted: tuple[int, bool] | None = None) -> list[Finding]:
    """An example shuffle buffer much smaller than the dataset (an order finding). Where the dataset's
    length is unknown, ``counted`` is its examples counted (``count_examples``: a cut count is a lower
    bound, enough to call a buffer small)."""
    chain, nodes = graph["chain"], graph["nodes"]
    first_batch = _first_batch_at(chain)
    shuffles = [i for i, n in enumerate(chain) if n.op in _SHUFFLE_OPS
                and (first_batch is None or i < first_batch)
                and not any(m.op in _INTERLEAVE_OPS or m.op == "GeneratorDataset"
                            for m in chain[i + 1:first_batch])]
    if not shuffles:
        return []
    buffer = _const(nodes, chain[shuffles[-1]], 1)
    n = dataset_examples(ds, graph)
    about = "about "
    if n is None and buffer is not None and counted is not None:
        n, whole = counted
        about = "" if whole else "at least "
    if buffer is None or not n or int(buffer) >= SHUFFLE_SHARE * n:
        return []
    return [Finding("small_shuffle_buffer",
                    f"shuffle buffer {int(buffer):,} examples for a dataset of {about}{n:,} "
                    f"({int(buffer) / n:.1%}{'' if about == 'about ' else ' or less'})", 1.0,
                    "order quality, not speed: an example moves at most about a buffer's "
                    "length from its place on disk", fix=(f".shuffle({n:,})" if about != "at least " else f".shuffle(N), N the dataset's size (at least {n:,}),")
                    + " or shuffle the file list first")]
