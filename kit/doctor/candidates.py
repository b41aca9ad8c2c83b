"""The fixes worth trying on a tf.data pipeline, read from its graph: each a candidate with the rewrite that applies it.

A candidate is not a finding: ``kit.doctor.trials`` applies it, checks the fixed pipeline yields the
same elements and measures it against the original; only a measured gain makes it a finding. The
rules here only know what TensorFlow already does (``graph.effective_options``), so that a stateless
map (which TF parallelises by itself) or a missing final prefetch (which TF injects) is not tried.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kit.doctor import rewrite as rw
from kit.doctor.graph import (
    _BATCH_OPS,
    _INTERLEAVE_OPS,
    _MAP_OPS,
    _PASSIVE_OPS,
    _PY_OPS,
    _SHUFFLE_OPS,
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
    """A fix to try.

    Attributes:
        rewrite: the change (``kit.doctor.rewrite.Rewrite``).
        evidence: what in the pipeline calls for it.
        ordered: the original yields a fixed order, which the fixed one must keep.
        random: the pipeline draws random numbers (only labels and counts can be compared).
        correctness: the fix makes the data right rather than faster (kept whatever its speed).
    """

    rewrite: rw.Rewrite
    evidence: str
    ordered: bool
    random: bool
    correctness: bool = False

    @property
    def code(self) -> str:
        return self.rewrite.code


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
    """The fixes worth trying on ``ds`` (its ``graph`` from ``graph.pipeline_graph``).

    Args:
        examples: examples per epoch, where known.
        example_bytes: bytes of one example as delivered (the size a cache would hold, about).
    """
    chain = graph["chain"]
    randoms = set(random_nodes(graph))
    random = bool(randoms)
    ordered = not any(n.op in _SHUFFLE_OPS for n in chain)
    opts = effective_options(ds)
    out: list[Candidate] = []

    def add(rewrite, evidence, *, correctness=False):
        out.append(Candidate(rewrite, evidence, ordered, random, correctness))

    caches = [i for i, n in enumerate(chain) if n.op in rw.CACHE_OPS]
    # Correctness first: a cache after a random map or a shuffle replays the first epoch.
    for i in caches:
        before = chain[:i]
        rand = next((n for n in before if n.name in randoms and n.op in _MAP_OPS), None)
        if rand is not None:
            what = f".map({fn_label(graph, rand)})"
            add(rw.move_cache(chain[i].name, rand.name, what, "random_before_cache"),
                f"{what} draws random numbers before .cache(): every epoch after the first replays "
                f"the first epoch's draws", correctness=True)
            continue
        shuffle = next((n for n in reversed(before) if n.op in _SHUFFLE_OPS), None)
        if shuffle is not None:
            add(rw.move_cache(chain[i].name, shuffle.name, ".shuffle(...)", "shuffle_before_cache"),
                ".shuffle() before .cache(): the cache keeps the first epoch's order for every epoch",
                correctness=True)

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
                f"{what} is recomputed every epoch; the decoded data (about {fits / 1e6:,.1f} MB) fits in "
                f"memory")

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


def _map_before_batch(graph):
    """The map right before the first batch (the one batching first could vectorise)."""
    chain = graph["chain"]
    for i, n in enumerate(chain):
        if n.op in _BATCH_OPS:
            prev = chain[i - 1] if i > 0 else None
            # Not a random map: on a batch it would draw once per batch where it drew once per example.
            if (prev is not None and prev.op in _MAP_OPS and not (graph["ops"][prev.name] & _PY_OPS)
                    and prev.name not in random_nodes(graph)):
                return prev, n
            return None
    return None


def _cache_point(graph, randoms):
    """Where a cache would go: after the last deterministic op that does work, before the first
    random op, batch, repeat or take. Returns ``(node, reshuffle, what)`` or None (no work before)."""
    chain = graph["chain"]
    work, shuffled, point = False, False, None
    for n in chain:
        if n.name in randoms or n.op in _BATCH_OPS or n.op in {"RepeatDataset", "TakeDataset",
                                                                "ShuffleAndRepeatDataset"}:
            break
        if n.op in _SHUFFLE_OPS:
            shuffled = True
            continue
        if n.op in _MAP_OPS or n.op in _INTERLEAVE_OPS or n.op in _READ_OPS:
            work, point = True, n
    if not work or point is None:
        return None
    what = f".map({fn_label(graph, point)})" if point.op in _MAP_OPS else point.op
    return point, shuffled, what


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
