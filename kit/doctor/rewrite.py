"""Rewriting a tf.data pipeline: the fixes the doctor applies by itself, each a new ``Dataset`` built from the original's graph.

The graph (``DatasetToGraphV2``) is changed node by node and read back (``DatasetFromGraph``) in this
process, so its Python functions still run. Each ``Rewrite`` carries the change in the user's terms.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import tensorflow as tf
from tensorflow.python.ops import gen_experimental_dataset_ops  # DatasetFromGraph has no tf.raw_ops alias here

# Ops whose functions draw random numbers: a map running one is not repeatable (and TensorFlow leaves it serial).
RANDOM_OPS = frozenset({
    "RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal", "RandomShuffle",
    "Multinomial", "RandomGamma", "RandomPoisson", "RandomPoissonV2", "RngReadAndSkip", "RngSkip",
    "StatefulUniform", "StatefulUniformInt", "StatefulUniformFullInt", "StatefulStandardNormalV2",
    "StatefulTruncatedNormal", "StatefulRandomBinomial", "RandomCrop",
})
CACHE_OPS = frozenset({"CacheDataset", "CacheDatasetV2"})
AUTOTUNE = -1


def is_random(op_types) -> bool:
    """Whether a function running these op types draws random numbers (stateful random ops, or
    stateless ones fed from a variable that advances, as Keras' seed generators do)."""
    ops = set(op_types)
    if ops & RANDOM_OPS:
        return True
    stateless = any(o.startswith("StatelessRandom") for o in ops)
    return stateless and bool(ops & {"AssignAddVariableOp", "AssignVariableOp"})


def user_name(fn_name: str) -> str:
    """The Python name a traced tf.data function came from: ``__inference_Dataset_map_decode_11``
    -> ``decode`` (``lambda`` for a lambda)."""
    name = re.sub(r"^__inference_", "", fn_name)
    name = re.sub(r"_\d+$", "", name)
    name = re.sub(r"^(Dataset_)?(map|flat_map|interleave|filter|scan)_", "", name)
    name = re.sub(r"^(tf_data_)?(experimental_)?", "", name)
    return name or fn_name


def graph_def(ds):
    """The pipeline's ``GraphDef``, with device placements cleared (a ``py_function`` node keeps a
    malformed one that would not read back)."""
    serialized = tf.raw_ops.DatasetToGraphV2(input_dataset=tf.data.experimental.to_variant(ds),
                                            external_state_policy=1, strip_device_assignment=True)
    g = tf.compat.v1.GraphDef()
    g.ParseFromString(serialized.numpy())
    for f in g.library.function:
        for n in f.node_def:
            n.device = ""
            if "_device" in n.attr:
                del n.attr["_device"]
    return g


def _dataset_inputs(node) -> list[str]:
    return [i for i in node.input if not i.startswith("^")]


def chain_names(g) -> list[str]:
    """The dataset nodes from source to output, following each node's first input."""
    nodes = {n.name: n for n in g.node}
    out = next((n for n in g.node if n.op == "_Retval"), None)
    name = out.input[0].split(":")[0] if out is not None and out.input else None
    chain = []
    while name is not None and name in nodes:
        chain.append(name)
        inputs = [i.split(":")[0] for i in _dataset_inputs(nodes[name])]
        name = next((i for i in inputs if "Dataset" in nodes[i].op), None) if inputs else None
    return chain[::-1]


def _const(g, name: str, value, dtype: str):
    node = g.node.add()
    node.name = _fresh(g, name)
    node.op = "Const"
    node.attr["dtype"].type = tf.as_dtype(dtype).as_datatype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value, dtype=dtype))
    return node.name


def _fresh(g, stem: str) -> str:
    names = {n.name for n in g.node}
    i = 0
    while f"kit_doctor/{stem}_{i}" in names:
        i += 1
    return f"kit_doctor/{stem}_{i}"


def _node(g, name: str):
    return next(n for n in g.node if n.name == name)


def _rewire(g, old: str, new: str, *, skip: str) -> None:
    """Every input naming ``old`` (but ``skip``'s own) now names ``new``."""
    for n in g.node:
        if n.name == skip:
            continue
        for i, inp in enumerate(n.input):
            if inp.split(":")[0] == old and not inp.startswith("^"):
                n.input[i] = new


def _after(g, name: str, op: str, extra_inputs: list[str], flags: dict | None = None) -> str:
    """A new dataset node of type ``op`` (with the boolean attributes ``flags``) reading ``name``'s
    output; what read ``name`` reads it."""
    src = _node(g, name)
    node = g.node.add()
    node.name = _fresh(g, op)
    node.op = op
    node.input.extend([name, *extra_inputs])
    node.attr["output_types"].CopyFrom(_types(src))
    node.attr["output_shapes"].CopyFrom(src.attr["output_shapes"])
    for key, value in (flags or {}).items():
        node.attr[key].b = value
    _rewire(g, name, node.name, skip=node.name)
    return node.name


def _types(node):
    """A dataset node's element types (source ops such as TensorSliceDataset call them Toutput_types)."""
    return node.attr["output_types"] if "output_types" in node.attr else node.attr["Toutput_types"]


def _remove(g, name: str) -> None:
    """Takes a one-input dataset node out of the chain (what read it reads its input)."""
    node = _node(g, name)
    _rewire(g, name, _dataset_inputs(node)[0], skip=name)
    g.node.remove(node)


def _cache_after(g, name: str, shuffle: int | None = None) -> None:
    """An in-memory ``cache()`` after node ``name``; with ``shuffle``, then a shuffle of that many
    elements, reshuffled each epoch."""
    cached = _after(g, name, "CacheDataset", [_const(g, "filename", "", "string")])
    if shuffle is not None:
        _after(g, cached, "ShuffleDataset",
               [_const(g, "buffer_size", max(1, shuffle), "int64"), _const(g, "seed", 0, "int64"),
                _const(g, "seed2", 0, "int64")], {"reshuffle_each_iteration": True})


def _make_parallel(g, node, op: str, params: tuple[str, ...]) -> None:
    """``node`` made the parallel ``op``, its ``params`` autotuned, its order kept."""
    controls = [i for i in node.input if i.startswith("^")]
    data = _dataset_inputs(node)
    extra = [_const(g, p, AUTOTUNE, "int64") for p in params]
    del node.input[:]
    node.input.extend([*data, *extra, *controls])
    node.op = op
    node.attr["deterministic"].s = b"default"


def _parallel_map(g, name: str) -> None:
    """``MapDataset`` ``name`` made a ``ParallelMapDatasetV2`` (unless another rewrite already did)."""
    node = _node(g, name)
    if node.op == "MapDataset":
        if "force_synchronous" in node.attr:
            del node.attr["force_synchronous"]
        _make_parallel(g, node, "ParallelMapDatasetV2", ("num_parallel_calls",))


@dataclass(frozen=True)
class Rewrite:
    """One fix the doctor can apply by itself."""

    code: str  # the finding it fixes
    change: str  # what it does, in a few words
    snippet: str  # the change in the user's code
    edit: Callable | None = None  # changes a GraphDef in place
    post: Callable | None = None  # applied to the rebuilt Dataset (options, a final prefetch)
    warm_epoch: bool = False  # reads a whole epoch before it is timed (a cache fills)
    names: tuple = field(default=())  # the graph nodes it changes
    spec: tuple = field(default=())  # (factory, *args) that from_spec builds it again from (--apply --out)
    keeps_elements: bool = False  # the same elements in the same order by construction: applied unchecked

    def apply(self, ds):
        """The pipeline with this fix (a new ``Dataset``; ``ds`` is left as it is)."""
        return apply(ds, [self])


def apply(ds, rewrites) -> object:
    """``ds`` with every rewrite in ``rewrites`` applied, in order: one graph read back once."""
    rewrites = list(rewrites)
    out = ds
    if any(r.edit is not None for r in rewrites):
        g = graph_def(ds)
        for r in rewrites:
            if r.edit is not None:
                r.edit(g)
        # Read back in this process, where its Python functions are still registered.
        variant = gen_experimental_dataset_ops.dataset_from_graph(g.SerializeToString())
        out = tf.data.experimental.from_variant(variant, ds.element_spec)
    for r in rewrites:
        if r.post is not None:
            out = r.post(out)
    return out


def parallel_map(name: str, fn: str) -> Rewrite:
    """``MapDataset`` ``name`` as a ``ParallelMapDatasetV2`` with autotuned parallelism, order kept."""
    return Rewrite("serial_map", f"run {fn} in parallel", f".map({fn}, num_parallel_calls=tf.data.AUTOTUNE)",
                   edit=lambda g: _parallel_map(g, name), names=(name,),
                   spec=("parallel_map", name, fn), keeps_elements=True)


def parallel_interleave(name: str, fn: str) -> Rewrite:
    """``InterleaveDataset`` ``name`` as a ``ParallelInterleaveDatasetV4``, order kept."""
    params = ("buffer_output_elements", "prefetch_input_elements", "num_parallel_calls")
    return Rewrite("serial_interleave", f"read {fn}'s datasets in parallel",
                   f".interleave({fn}, cycle_length=..., num_parallel_calls=tf.data.AUTOTUNE)",
                   edit=lambda g: _make_parallel(g, _node(g, name), "ParallelInterleaveDatasetV4", params),
                   names=(name,), spec=("parallel_interleave", name, fn), keeps_elements=True)


def insert_cache(after: str, what: str, *, reshuffle: bool = False, count: int | None = None,
                 code: str = "no_cache") -> Rewrite:
    """An in-memory ``cache()`` after node ``after``; with ``reshuffle``, then a shuffle over the whole
    cached data (``count`` elements), reshuffled each epoch (an earlier shuffle would freeze in the cache)."""
    tail = f".shuffle({count})" if reshuffle else ""
    return Rewrite(code, f"cache after {what}" + (", then shuffle the cached data each epoch" if reshuffle else ""),
                   f"{what}.cache(){tail}", edit=lambda g: _cache_after(g, after, (count or 1) if reshuffle else None),
                   warm_epoch=True, names=(after,),
                   spec=("insert_cache", after, what, reshuffle, count, code))


def move_cache(cache: str, before: str, what: str, code: str) -> Rewrite:
    """The ``cache()`` node ``cache`` taken out and put back just before node ``before`` (which then
    runs on every epoch: a random map stays random, a shuffle reshuffles)."""

    def edit(g):
        _remove(g, cache)
        _cache_after(g, _dataset_inputs(_node(g, before))[0].split(":")[0])

    return Rewrite(code, f"cache before {what}", f".cache() before {what}", edit=edit, warm_epoch=True,
                   names=(cache, before), spec=("move_cache", cache, before, what, code))


def reorder_cache(cache: str, shuffles: list[str], after: str, *, buffer: int | None, what: str,
                  code: str, snippet: str) -> Rewrite:
    """The ``cache()`` node ``cache`` and the reshuffling ``shuffles`` before it taken out; a cache put
    back after node ``after`` (the last deterministic op before the first random one), then, where
    there were shuffles, one shuffle of ``buffer`` elements reshuffled each epoch."""

    def edit(g):
        _remove(g, cache)
        for name in shuffles:
            _remove(g, name)
        _cache_after(g, after, (buffer or 1) if shuffles else None)

    return Rewrite(code, what, snippet, edit=edit, warm_epoch=True, names=(cache, *shuffles, after),
                   spec=("reorder_cache", cache, list(shuffles), after, buffer, what, code, snippet))


def final_prefetch() -> Rewrite:
    """``.prefetch(tf.data.AUTOTUNE)`` at the end."""
    return Rewrite("no_prefetch", "prefetch at the end", ".prefetch(tf.data.AUTOTUNE)",
                   post=lambda ds: ds.prefetch(AUTOTUNE), spec=("final_prefetch",),
                   keeps_elements=True)


def options_fix(changes: dict[str, bool], text: str) -> Rewrite:
    """``tf.data.Options`` set on the pipeline: ``changes`` maps dotted option names
    (``experimental_optimization.map_parallelization``) to values."""

    def post(ds):
        o = tf.data.Options()
        for dotted, value in changes.items():
            target = o
            *path, last = dotted.split(".")
            for part in path:
                target = getattr(target, part)
            setattr(target, last, value)
        return ds.with_options(o)

    lines = "; ".join(f"options.{k} = {v!r}" for k, v in changes.items())
    return Rewrite("options_off", text, f"options = tf.data.Options(); {lines}; ds = ds.with_options(options)",
                   post=post, spec=("options_fix", changes, text), keeps_elements=True)


def map_after_batch(map_name: str, batch_name: str, fn: str) -> Rewrite:
    """The map ``map_name`` just before batch ``batch_name`` moved after it and made parallel: valid only
    where it gives the same output on whole batches, which the trial checks."""

    def edit(g):
        m, b = _node(g, map_name), _node(g, batch_name)
        src = _dataset_inputs(m)[0].split(":")[0]
        src_shapes = _node(g, src).attr["output_shapes"]
        b_types, b_shapes = copy.deepcopy(b.attr["output_types"]), copy.deepcopy(b.attr["output_shapes"])
        # batch now reads the map's input; the map reads the batch; what read the batch reads the map.
        _rewire(g, batch_name, map_name, skip=map_name)
        b.input[0] = src
        m.input[0] = batch_name
        b.attr["output_types"].CopyFrom(_types(_node(g, src)))
        shapes = b.attr["output_shapes"].list.shape
        del shapes[:]
        for s in src_shapes.list.shape:
            batched = tf.TensorShape([None]).concatenate(tf.TensorShape(s))
            shapes.add().CopyFrom(batched.as_proto())
        m.attr["output_types"].CopyFrom(b_types)
        m.attr["output_shapes"].CopyFrom(b_shapes)
        _parallel_map(g, map_name)

    return Rewrite("map_before_batch", f"batch first, then run {fn} on whole batches",
                   f".batch(B).map({fn}, num_parallel_calls=tf.data.AUTOTUNE)", edit=edit,
                   names=(map_name, batch_name), spec=("map_after_batch", map_name, batch_name, fn))


def pydataset_workers(workers: int) -> Rewrite:
    """A ``keras.utils.PyDataset`` read by ``workers`` threads (a shallow copy; Keras keeps the order)."""

    def post(ds):
        out = copy.copy(ds)
        out._workers, out._use_multiprocessing = workers, False  # PyDataset.__init__'s own attributes
        return out

    return Rewrite("pydataset_single_worker", f"read with {workers} worker threads",
                   f"super().__init__(workers={workers}, use_multiprocessing=False) in your PyDataset",
                   post=post, spec=("pydataset_workers", workers), keeps_elements=True)


_FACTORIES: dict[str, Callable[..., Rewrite]] = {
    "pydataset_workers": pydataset_workers, "parallel_map": parallel_map, "parallel_interleave": parallel_interleave,
    "insert_cache": insert_cache, "move_cache": move_cache, "map_after_batch": map_after_batch,
    "final_prefetch": final_prefetch, "options_fix": options_fix}


def from_spec(spec) -> Rewrite:
    """The rewrite a ``Rewrite.spec`` names (node names hold for a pipeline built the same way)."""
    factory, *args = spec
    if factory == "insert_cache":
        after, what, reshuffle, count, code = args
        return insert_cache(after, what, reshuffle=reshuffle, count=count, code=code)
    if factory == "reorder_cache":
        cache, shuffles, after, buffer, what, code, snippet = args
        return reorder_cache(cache, shuffles, after, buffer=buffer, what=what, code=code, snippet=snippet)
    return _FACTORIES[factory](*args)


def apply_specs(ds, specs) -> object:
    """``ds`` with the rewrites ``specs`` name applied (what ``--apply --out`` writes calls)."""
    return apply(ds, [from_spec(s) for s in specs])
