"""A tf.data pipeline's structure, read from its serialized graph, and the rules that find its defects."""

from __future__ import annotations

from kit.doctor.findings import Finding, Measured
from kit.doctor.measure import per_element_map_overhead

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

# --------------------------------------------------------------------------- reading the graph


def pipeline_graph(ds) -> dict:
    """The structure of a ``tf.data.Dataset`` from its serialized graph.

    Returns:
        ``chain``: the dataset nodes from the source to the output, following each
        node's first input; ``nodes``: name -> NodeDef; ``python``: names of chain nodes
        whose functions (at any depth) call Python; ``ops``: name -> the op types a chain
        node's functions run; ``functions``: name -> FunctionDef.
    """
    import tensorflow as tf  # heavy: python -m kit --help imports this module

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
    return labels(pipeline_graph(ds))


def labels(graph: dict) -> list[str]:
    """The chain's ops from source to output, Python ones marked (see ``pipeline_ops``)."""
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
    import tensorflow as tf  # heavy: python -m kit --help imports this module

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


def _map_op_count(graph, node) -> int:
    """Ops a map's function runs per call (bookkeeping ops left out)."""
    skip = {"Identity", "NoOp", "Const", "_Arg", "_Retval", "Placeholder"}
    return max(1, sum(1 for f in _func_attrs(node) if f in graph["functions"]
                      for n in graph["functions"][f].node_def if n.op not in skip))


def _first_batch_at(chain) -> int | None:
    """The position of the chain's first batching op."""
    return next((i for i, n in enumerate(chain) if n.op in _BATCH_OPS), None)


def _dataset_examples(ds, chain, nodes, first_batch) -> int | None:
    card = int(ds.cardinality())  # negative: infinite or unknown
    if card < 0:
        return None
    if first_batch is None:
        return card
    size = _const(nodes, chain[first_batch], 1)
    return card * int(size) if size is not None else None


# --------------------------------------------------------------------------- the rules


def structure_findings(graph: dict, ds, measured: Measured) -> tuple[list[Finding], dict]:
    """The findings in a tf.data pipeline's structure (``graph`` read from ``ds``).

    Returns:
        The findings, and the numbers measured on the way (``map_call_overhead_us`` where a
        map runs before batch) for the caller to add to its rates.
    """
    findings = [*_python(graph, measured), *_serial(graph, measured)]
    early, rates = _map_before_batch(graph, measured)
    findings += [*early, *_no_prefetch(graph, measured), *_small_shuffle(graph, ds)]
    return findings, rates


def _python(graph, m: Measured) -> list[Finding]:
    if not graph["python"]:
        return []
    where = ", ".join(_label(graph["nodes"][n], graph) for n in graph["python"])
    return [Finding("python_in_pipeline", f"Python called from {where}", m.cap(m.parallel_gain),
                    m.cap.explain(f"Python holds the GIL: {m.parallel_basis}"))]


def _serial(graph, m: Measured) -> list[Finding]:
    chain, out = graph["chain"], []
    serial_maps = [n for n in chain if n.op == "MapDataset"]
    if serial_maps:
        out.append(Finding("serial_map", f"{len(serial_maps)} MapDataset without num_parallel_calls "
                           f"(pipeline: {' -> '.join(labels(graph))})", m.cap(m.parallel_gain),
                           m.cap.explain(m.parallel_basis)))
    serial_inter = [n for n in chain if n.op == "InterleaveDataset"]
    if serial_inter:
        out.append(Finding("serial_interleave", f"{len(serial_inter)} InterleaveDataset without "
                           f"num_parallel_calls", m.cap(m.parallel_gain), m.cap.explain(m.parallel_basis)))
    return out


def _map_before_batch(graph, m: Measured) -> tuple[list[Finding], dict]:
    chain = graph["chain"]
    first_batch = _first_batch_at(chain)
    if first_batch is None:
        return [], {}
    early = [n for n in chain[:first_batch] if n.op in _MAP_OPS and n.name not in graph["python"]]
    if not early:
        return [], {}
    overhead = per_element_map_overhead(m.batch_size)
    ops = sum(_map_op_count(graph, n) for n in early)
    L = m.loader_rate
    share = min(0.9, overhead * ops * L)
    return [Finding(
        "map_before_batch",
        f"{len(early)} per-example map(s) of {ops} op(s) before {chain[first_batch].op}; a one-op map "
        f"called per example costs {overhead * 1e6:.1f} us here beyond one call per batch (measured)",
        m.cap(1 / (1 - share)),
        m.cap.explain(f"that cost x {ops} op(s) x {L:,.1f} examples/s is {share:.0%} of the loader's time, "
                      f"which batching first divides by the batch size (small per-example ops: an estimate)"))
    ], {"map_call_overhead_us": overhead * 1e6}


def _no_prefetch(graph, m: Measured) -> list[Finding]:
    chain = graph["chain"]
    last_prefetch = max((i for i, n in enumerate(chain) if n.op == "PrefetchDataset"), default=None)
    work_after = [n for n in chain[(last_prefetch + 1 if last_prefetch is not None else 0):]
                  if n.op not in _PASSIVE_OPS]
    if not work_after:
        return []
    L, F, C = m.loader_rate, m.fit_rate, m.ceiling_rate
    if F and C:
        gain = max(1.0, min(L, C) / F)
        why = (f"overlap: the slower of loader alone ({L:,.1f}/s) and compute ceiling ({C:,.1f}/s) "
               f"over the real fit ({F:,.1f}/s)")
    else:
        gain, why = 1.0, "no model given: nothing to overlap the loader with"
    return [Finding("no_prefetch", f"the last op doing work, {_label(work_after[-1], graph)}, "
                    f"is not followed by a prefetch", gain, why)]


def _small_shuffle(graph, ds) -> list[Finding]:
    chain, nodes = graph["chain"], graph["nodes"]
    first_batch = _first_batch_at(chain)
    shuffles = [i for i, n in enumerate(chain) if n.op in _SHUFFLE_OPS
                and (first_batch is None or i < first_batch)
                and not any(m.op in _INTERLEAVE_OPS or m.op == "GeneratorDataset"
                            for m in chain[i + 1:first_batch])]
    if not shuffles:
        return []
    buffer = _const(nodes, chain[shuffles[-1]], 1)
    n = _dataset_examples(ds, chain, nodes, first_batch)
    if buffer is None or not n or int(buffer) >= SHUFFLE_SHARE * n:
        return []
    return [Finding("small_shuffle_buffer",
                    f"shuffle buffer {int(buffer):,} examples for a dataset of about {n:,} "
                    f"({int(buffer) / n:.1%})", 1.0,
                    "order quality, not speed: an example moves at most about a buffer's "
                    "length from its place on disk")]
