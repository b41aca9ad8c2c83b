"""The fixes worth trying on a tf.data pipeline, read from its graph: each a ``Candidate`` with the
rewrite that applies it (``trial`` checks and measures it). What TensorFlow already does
(``graph.effective_options``: a stateless map in parallel, a final prefetch) is not tried.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kit.doctor import rewrite as rw
from kit.doctor.findings import Finding
from kit.doctor.graph import (
    _BATCH_OPS,
    _INTERLEAVE_OPS,
    _MAP_OPS,
    _PASSIVE_OPS,
    _PY_OPS,
    _SHUFFLE_OPS,
    _const,
    effective_options,
    fn_label,
    random_nodes,
)

#: Decoded data is worth caching in memory up to this share of the memory available now.
RAM_SHARE = 0.5
#: Source ops that read files (work a cache saves), besides maps and interleaves.
_READ_OPS = {"TFRecordDataset", "TFRecordDatasetV2", "TextLineDataset", "FixedLengthRecordDataset",
             "FixedLengthRecordDatasetV2", "GeneratorDataset", "FlatMapDataset"}


@dataclass(frozen=True)
class Candidate:
    """A fix to try."""

    rewrite: rw.Rewrite
    evidence: str  # what in the pipeline calls for it
    ordered: bool  # the original yields a fixed order, which the fixed one must keep
    random: bool  # the pipeline draws random numbers (only labels and counts can be compared)
    correctness: bool = False  # it makes the data right rather than faster (kept whatever its speed)
    also: tuple = ()  # (code, evidence) of further findings the same fix answers

    @property
    def code(self) -> str:
        return self.rewrite.code

    @property
    def findings(self) -> list[tuple[str, str]]:
        """``(code, evidence)`` of every finding this fix answers: its own, then ``also``."""
        return [(self.code, self.evidence), *self.also]


def memory_available() -> int | None:
    """Bytes of memory available now (``MemAvailable``), None where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def candidates(graph: dict, ds, *, examples: int | None, example_bytes: float) -> list[Candidate]:
    """The fixes worth trying on ``ds`` (its ``graph`` from ``graph.pipeline_graph``), given its
    ``examples`` per epoch, where known, and the bytes of one example as delivered."""
    chain = graph["chain"]
    randoms = set(random_nodes(graph))
    random = bool(randoms)
    ordered = not any(n.op in _SHUFFLE_OPS for n in chain)
    opts = effective_options(ds)
    out: list[Candidate] = []

    def add(rewrite, evidence, *, correctness=False):
        out.append(Candidate(rewrite, evidence, ordered, random, correctness))

    caches = [i for i, n in enumerate(chain) if n.op in rw.CACHE_OPS]
    # Correctness first: a cache after a random map or a reshuffling shuffle replays the first epoch.
    for i in caches:
        cand = _cache_order(graph, i, randoms, ordered, random)
        if cand is not None:
            out.append(cand)

    for n in chain:
        python = bool(graph["ops"][n.name] & _PY_OPS)
        name = fn_label(graph, n)
        if n.op == "MapDataset" and (python or n.name in randoms or not opts["map_parallelization"]):
            r = rw.parallel_map(n.name, name)
            why = ("calls Python" if python else "draws random numbers" if n.name in randoms
                   else "map_parallelization is off in its options")
            add(r, f".map({name}) runs serially: it {why}, so TensorFlow does not parallelise it")
        elif n.op == "InterleaveDataset":
            add(rw.parallel_interleave(n.name, name), f".interleave({name}) without num_parallel_calls "
                "reads one input at a time")

    mb = _map_before_batch(graph)
    if mb is not None:
        m, b = mb
        name = fn_label(graph, m)
        add(rw.map_after_batch(m.name, b.name, name), f".map({name}) runs once per example just before "
            f"{b.op}; if it gives the same output on a whole batch it runs once per batch")

    if not caches:
        point = _cache_point(graph, randoms)
        fits = _fits_in_memory(examples, example_bytes)
        if point is not None and fits is not None:
            node, reshuffle, what = point
            add(rw.insert_cache(node.name, what, reshuffle=reshuffle, count=examples),
                f"{what} is recomputed every epoch; the decoded data, about {fits / 1e6:,.1f} MB, fits in "
                f"the memory budget: {examples:,} examples of {example_bytes / 1e3:,.1f} kB")

    work_after = _work_after_last_prefetch(chain)
    if work_after and not opts["inject_prefetch"]:
        add(rw.final_prefetch(), f"the last op doing work, {fn_label(graph, work_after[-1])}, is not "
            "followed by a prefetch, and inject_prefetch is off")
    off = {k: v for k, v in opts.items() if not v}
    if off:
        changes = {f"experimental_optimization.{k}": True for k in off if k != "autotune"}
        if "autotune" in off:
            changes["autotune.enabled"] = True
        add(rw.options_fix(changes, "turn tf.data's optimisations back on"),
            f"options turn off {', '.join(off)}")
    return out


def reshuffles(node) -> bool:
    """Whether a shuffle node draws a new order each epoch (``reshuffle_each_iteration``, True when
    the graph does not say)."""
    return "reshuffle_each_iteration" not in node.attr or bool(node.attr["reshuffle_each_iteration"].b)


def _cache_order(graph, i: int, randoms: set, ordered: bool, random: bool) -> Candidate | None:
    """The correctness finding(s) of the cache at ``chain[i]``: a random map before it
    (``random_before_cache``), a reshuffling shuffle before it with none after it
    (``shuffle_before_cache``); both: one fix, two findings. The fix caches after the last
    deterministic op before the first random one and shuffles after the cache."""
    chain, nodes = graph["chain"], graph["nodes"]
    before = chain[:i]
    rand = next((n for n in before if n.name in randoms and n.op in _MAP_OPS), None)
    # A reshuffle anywhere after the cache changes the order every epoch: nothing is frozen.
    reshuffled_after = any(n.op in _SHUFFLE_OPS and reshuffles(n) for n in chain[i + 1:])
    shuffles = [n for n in before if n.op in _SHUFFLE_OPS and reshuffles(n)]
    frozen = bool(shuffles) and not reshuffled_after
    if rand is None and not frozen:
        return None
    end = chain.index(rand) if rand is not None else i
    moved = {n.name for n in shuffles} if frozen else set()
    keep = [n for n in chain[:end] if n.name not in moved]
    if not keep:
        return None
    after = keep[-1]
    work = f".map({fn_label(graph, after)})" if after.op in _MAP_OPS else after.op
    buffer = None
    if frozen:
        size = _const(nodes, shuffles[-1], 1)
        buffer = int(size) if size is not None else None
    tail = (f".shuffle({buffer:,})" if buffer else ".shuffle(N)") if frozen else ""
    rand_what = f".map({fn_label(graph, rand)})" if rand is not None else ""
    snippet = f"{work}.cache(){tail}" + (f" then {rand_what}" if rand is not None else "") + (
        ", with no shuffle before the cache" if frozen else "")
    what = (f"cache after {work}" + (f", before {rand_what}" if rand is not None else "")
            + (", then shuffle each epoch" if frozen else ""))
    found = []
    if rand is not None:
        found.append(("random_before_cache", f"{rand_what} draws random numbers before .cache(): every epoch "
                      f"after the first replays the first epoch's draws"))
    if frozen:
        found.append(("shuffle_before_cache", ".shuffle() before .cache() with no reshuffle after it: the "
                      "cache keeps the first epoch's order for every epoch"))
    code, evidence = found[0]
    rewrite = rw.reorder_cache(chain[i].name, [n.name for n in shuffles] if frozen else [], after.name,
                               buffer=buffer, what=what, code=code, snippet=snippet)
    return Candidate(rewrite, evidence, ordered, random, correctness=True, also=tuple(found[1:]))


def _map_before_batch(graph):
    """``(map, batch)``: the map right before the first batch, where running it on whole batches can
    pay: not random (it would draw once per batch), not Python, not behind a cache, and not on
    elements of varying shape (they could not be batched before it)."""
    chain = graph["chain"]
    for i, n in enumerate(chain):
        if n.op in _BATCH_OPS:
            prev = chain[i - 1] if i > 0 else None
            if (prev is None or prev.op not in _MAP_OPS or graph["ops"][prev.name] & _PY_OPS
                    or prev.name in random_nodes(graph) or n.op.startswith("Padded")):
                return None
            if any(m.op in rw.CACHE_OPS for m in chain[i:]):
                return None  # behind a cache: the map runs in the first epoch only
            return (prev, n) if i > 1 and _fixed_shapes(chain[i - 2]) else None
    return None


def _fixed_shapes(node) -> bool:
    """Whether a dataset node's elements all have one known shape (every dimension known)."""
    if "output_shapes" not in node.attr:
        return False
    shapes = node.attr["output_shapes"].list.shape
    return bool(shapes) and all(not s.unknown_rank and all(d.size >= 0 for d in s.dim) for s in shapes)


def _cache_point(graph, randoms):
    """Where a cache would go: after the last deterministic op that does work, before the first random
    op, batch, repeat or take: ``(node, reshuffle, what)``, or None (no work before)."""
    chain = graph["chain"]
    shuffled, point, reshuffle = False, None, False
    for n in chain:
        if n.name in randoms or n.op in _BATCH_OPS or n.op in {"RepeatDataset", "TakeDataset",
                                                                "ShuffleAndRepeatDataset"}:
            break
        if n.op in _SHUFFLE_OPS:
            shuffled = True
            continue
        if n.op in _MAP_OPS or n.op in _INTERLEAVE_OPS or n.op in _READ_OPS:
            # Only a shuffle before the cache would freeze in it; one after it still reshuffles.
            point, reshuffle = n, shuffled
    if point is None:
        return None
    what = f".map({fn_label(graph, point)})" if point.op in _MAP_OPS else point.op
    return point, reshuffle, what


def too_big_to_cache(graph: dict, ds, *, examples: int | None, example_bytes: float, places: dict | None = None):
    """A 'not measured' ``no_cache`` finding where a cache would save work but the decoded data does not
    fit the memory budget (``RAM_SHARE`` of the memory available): a store on disk instead. Or None."""
    chain = graph["chain"]
    if any(n.op in rw.CACHE_OPS for n in chain) or not examples or not example_bytes:
        return None
    point = _cache_point(graph, set(random_nodes(graph)))
    if point is None or _fits_in_memory(examples, example_bytes) is not None:
        return None
    node, _, what = point
    size, avail = examples * example_bytes, memory_available() or 0
    return Finding(
        "no_cache", f"{what} is recomputed every epoch; the decoded data, about {size / 1e9:,.2f} GB "
        f"= {examples:,} examples of {example_bytes / 1e3:,.1f} kB, is over {RAM_SHARE:.0%} of the "
        f"{avail / 1e9:,.1f} GB of memory available", float("nan"),
        "not measured: too big for an in-memory cache here; a store on disk read every epoch instead",
        status="unmeasured", where=(places or {}).get(node.name, ""),
        fix=f"write it once: ds = {what}; ds.save('/data/decoded'), then train on "
            "tf.data.Dataset.load('/data/decoded').shuffle(N).batch(B), or ds.cache('/data/decoded.cache') "
            "on a local disk; for frames: python -m kit convert spectrogram --to memmap")


#: Ops in a map's function that read, decode or resize: the work a cache would save.
_DECODE_OPS = {"ReadFile", "DecodeJpeg", "DecodePng", "DecodeImage", "DecodeBmp", "DecodeGif",
               "DecodeAndCropJpeg", "DecodeWav", "DecodeRaw", "DecodeCSV", "ParseExampleV2", "ParseSingleExample",
               "ParseTensor", "ResizeBilinear", "ResizeBicubic", "ResizeArea", "ResizeNearestNeighbor",
               "ScaleAndTranslate", "AudioSpectrogram", "Mfcc", "RFFT", "StringSplitV2"}


def split_to_cache(graph: dict, *, examples: int | None, example_bytes: float, places: dict | None = None):
    """A 'not measured' ``no_cache`` finding where one map both decodes and draws random numbers, with no
    work before it and no cache, and the decoded data fits in memory: no cache can go in until the
    function is split. Or None."""
    chain = graph["chain"]
    size = _fits_in_memory(examples, example_bytes)
    if any(n.op in rw.CACHE_OPS for n in chain) or size is None:
        return None
    randoms = set(random_nodes(graph))
    if _cache_point(graph, randoms) is not None:
        return None  # a cache can go before the random ops: the rewrite is tried and measured
    first = next((n for n in chain if n.name in randoms), None)
    if first is None or first.op not in _MAP_OPS or not graph["ops"][first.name] & _DECODE_OPS:
        return None
    costly = sorted(graph["ops"][first.name] & _DECODE_OPS)
    name = fn_label(graph, first)
    return Finding(
        "no_cache", f".map({name}) runs {', '.join(costly)} and draws random numbers in one function, every "
        f"epoch; the decoded data, about {size / 1e6:,.1f} MB, fits in the memory budget",
        float("nan"), "not measured: the doctor does not split a function, and a cache after it would "
        "replay the first epoch's random draws", status="unmeasured", where=(places or {}).get(first.name, ""),
        fix=f"split {name} in two: ds.map(read_and_decode, num_parallel_calls=tf.data.AUTOTUNE).cache()"
            ".map(random_augment, num_parallel_calls=tf.data.AUTOTUNE), so that each epoch draws anew")


def shuffle_memory(graph: dict, *, example_bytes: float, loader_rate: float) -> str:
    """A shuffle buffer's memory and time to fill (elements at the delivered example's size), where
    large (over 1 GB or 10 s); ``''`` otherwise."""
    nodes = graph["nodes"]
    notes = []
    for n in graph["chain"]:
        if n.op not in _SHUFFLE_OPS:
            continue
        size = _const(nodes, n, 1)
        if size is None or int(size) <= 0 or not example_bytes:
            continue
        buf = int(size)
        memory, fill = buf * example_bytes, buf / loader_rate if loader_rate > 0 else float("inf")
        if memory >= 1e9 or fill >= 10:
            notes.append(f"shuffle buffer of {buf:,} elements holds about {memory / 1e9:,.2f} GB at "
                         f"{example_bytes / 1e3:,.1f} kB each and takes about {fill:,.0f} s to fill at the "
                         f"loader's {loader_rate:,.0f} examples/s, before the first batch of every epoch")
    return "; ".join(notes)


def _fits_in_memory(examples: int | None, example_bytes: float) -> float | None:
    """The bytes a cache of the decoded data would hold, when they fit the budget (else None)."""
    if not examples or not example_bytes:
        return None
    size = examples * example_bytes
    avail = memory_available()
    return size if avail is not None and size <= RAM_SHARE * avail else None


def _work_after_last_prefetch(chain) -> list:
    last = max((i for i, n in enumerate(chain) if n.op == "PrefetchDataset"), default=None)
    return [n for n in chain[(last + 1 if last is not None else 0):] if n.op not in _PASSIVE_OPS]


def already_done(graph: dict, ds, places: dict | None = None) -> list:
    """'Checked: no gain here' findings for what looks like a fix but TensorFlow already does: a stateless
    map without ``num_parallel_calls`` (``map_parallelization``), no final prefetch (``inject_prefetch``)."""
    opts = effective_options(ds)
    chain = graph["chain"]
    randoms = set(random_nodes(graph))
    out = []
    if opts["map_parallelization"]:
        for n in chain:
            if n.op == "MapDataset" and not graph["ops"][n.name] & _PY_OPS and n.name not in randoms:
                name = fn_label(graph, n)
                out.append(Finding(
                    "serial_map", f".map({name}) has no num_parallel_calls, but it is stateless", 1.0,
                    "TensorFlow already runs it in parallel: its map_parallelization option is on, so "
                    "num_parallel_calls would change nothing", status="no gain",
                    fix=f".map({name}, num_parallel_calls=tf.data.AUTOTUNE)", where=(places or {}).get(n.name, "")))
    if opts["inject_prefetch"] and _work_after_last_prefetch(chain):
        out.append(Finding(
            "no_prefetch", "the pipeline does not end with .prefetch()", 1.0,
            "TensorFlow already adds one: its inject_prefetch option is on", status="no gain"))
    return out
