"""``diagnose``: measure the loader, the fits and every fix the doctor can apply, within one time budget, and rank what was found."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

from kit.doctor import progress, python, rules, trial, verdicts
from kit.doctor import rewrite as rw
from kit.doctor.candidates import (
    Candidate,
    _cache_point,
    already_done,
    candidates,
    shuffle_memory,
    split_to_cache,
    too_big_to_cache,
)
from kit.doctor.copying import lending, lent
from kit.doctor.findings import NOISE, Finding, Measured, table
from kit.doctor.frozen import frozen_prefix, head_rate
from kit.doctor.graph import (
    _BATCH_OPS,
    _SHUFFLE_OPS,
    INFINITE,
    count_examples,
    dataset_examples,
    labels,
    pipeline_graph,
    places,
    random_nodes,
    small_shuffle,
)
from kit.doctor.loader import READS_FILE_BYTES, batching_rate, load_average, measure_loader
from kit.doctor.measure import (
    compiled_copy,
    epoch_batches,
    fit_rate,
    measure_fits,
    reads_per_epoch,
    record_trace,
    steps_per_execution_gain,
)
from kit.doctor.report import Diagnosis
from kit.doctor.sources import (
    check_source,
    describe_error,
    first_batch,
    is_dataset,
    is_pydataset,
    nbytes,
)
from kit.util import usable_cpus

#: Shares of the budget: the loader alone, the fits (ceiling and real), the frozen head; the rest
#: goes to the fixes.
LOADER_SHARE, FITS_SHARE, HEAD_SHARE, PROFILE_SHARE, SPE_SHARE = 0.08, 0.22, 0.05, 0.03, 0.05
#: Steps per execution the doctor tries on a small step.
SPE = 16
TRIAL_ROUNDS = 3
#: Rounds of the fits added, at most, while the rounds' headrooms straddle a verdict threshold.
MORE_ROUNDS = 2
#: The share of the budget for naming the line whose memory grows (where memory grew).
GROWTH_SHARE = 0.1
#: The most of the budget spent counting an epoch whose length the graph does not say, or this many seconds.
COUNT_SHARE, COUNT_MIN_S = 0.03, 0.25
#: Counting an epoch of unknown length to size a cache: up to this share of the budget.
COUNT_CACHE_SHARE = 0.08


@dataclass
class Budget:
    """The doctor's time: a deadline, and what was skipped to keep to it."""

    seconds: float
    start: float = field(default_factory=time.perf_counter)
    skipped: list[str] = field(default_factory=list)

    def left(self) -> float:
        if progress.cancelled():  # the caller stopped waiting: wind down
            return 0.0
        return max(0.0, self.start + self.seconds - time.perf_counter())

    def take(self, seconds: float, what: str, *, least: float = 0.05) -> float:
        """``seconds`` or what is left; 0 (and ``what`` noted as skipped) when under ``least``."""
        got = min(seconds, self.left())
        if got < least:
            self.skipped.append(what)
            return 0.0
        return got


@dataclass
class Tried:
    """One fix tried: the candidate, its check, its gains."""

    candidate: Candidate
    check: trial.Check | None = None
    loader: trial.Gain | None = None
    fit: trial.Gain | None = None
    outcome: str = ""
    dataset: Any = None

    def row(self) -> dict:
        c = self.candidate
        row: dict[str, Any] = {"code": c.code, "change": c.rewrite.change, "fix": c.rewrite.snippet,
                               "same_output": None if self.check is None else self.check.same,
                               "checked": "" if self.check is None else self.check.how}
        for name, g in (("loader", self.loader), ("fit", self.fit)):
            row.update({f"{name}_gain": g.median if g else math.nan, f"{name}_low": g.low if g else math.nan,
                        f"{name}_high": g.high if g else math.nan})
        return {**row, "outcome": self.outcome}


def diagnose(source, model=None, *, max_seconds: float = 120.0, trace_dir=None,
             name: str = "source", per_epoch: bool | None = None, pipeline: bool = True,
             fresh: dict | None = None) -> Diagnosis:
    """Measures a batch source (and a model training on it), tries the fixes it can apply, and
    ranks what it found.

    Args:
        source: a ``tf.data.Dataset``, a ``keras.utils.PyDataset`` or a function returning a
            fresh generator of batches (read several times).
        model: a compiled Keras model taking these batches (the doctor trains a copy), or None.
        max_seconds: the whole run's budget; what did not fit is listed in ``Diagnosis.skipped``.
        trace_dir: record a TensorFlow profiler trace of a few training steps there.
        name: how error messages name the source.
        per_epoch: whether the user's fit reads a ``tf.data`` source with a new iterator every epoch, as
            ``model.fit(ds, epochs=N)`` does (each epoch starts with an empty prefetch buffer); not with
            ``steps_per_epoch`` given. None: a finite dataset is, an infinite one is not.
        pipeline: whether a ``tf.data`` source's pipeline is the user's own, its structure read and its
            fixes tried; False for one Keras made (``fit`` on arrays reads them through Keras's adapter).
        fresh: the compute ceiling timed in a fresh process (``kit.doctor.fresh``: ``kit doctor run`` on a fit
            read through TensorFlow's generator op), which the verdict uses where it is faster than this one's.

    Returns:
        A ``Diagnosis``; ``Diagnosis.fixed`` is the best measured pipeline (tf.data sources).

    Raises:
        ValueError: the source is not a re-readable batch source, or the model does not take its
            batches (the message names which).
    """
    with lending():  # a model that cannot be copied is trained in place, and put back as it was
        return _diagnose(source, model, max_seconds=max_seconds, trace_dir=trace_dir, name=name,
                         per_epoch=per_epoch, pipeline=pipeline, fresh=fresh)


def _diagnose(source, model, *, max_seconds: float, trace_dir, name: str, per_epoch: bool | None,
              pipeline: bool, fresh: dict | None = None) -> Diagnosis:
    """``diagnose``'s work, inside ``copying.lending``."""
    if not (isinstance(max_seconds, (int, float)) and max_seconds > 0):
        raise ValueError(f"max_seconds must be positive, got {max_seconds!r}")
    # A new diagnosis: an earlier one whose caller stopped waiting (a watch() over its budget) left the
    # cancel flag up, which would give this one no time at all.
    progress.start()
    if fresh:
        progress.SO_FAR["fresh_ceiling_rate"] = fresh["ceiling_examples_per_s"]
    check_source(source, name)
    began = time.perf_counter()
    progress.step("the first batch")
    batch, batch_size = first_batch(source, name)
    example_bytes = nbytes(batch) / batch_size
    if per_epoch is None:
        per_epoch = reads_per_epoch(source)
    n_cores, load = usable_cpus(), load_average()
    graph = pipeline_graph(source) if is_dataset(source) and pipeline else None
    compile_start = time.perf_counter()
    copy = compiled_copy(model, batch, name) if model is not None else None
    untrue = rules.frozen_layers_that_train(model) if model is not None else []  # read on the user's own model
    compile_s = time.perf_counter() - compile_start  # copying and compiling the model once
    # The budget measures: the pipeline's first batch (its start-up: imports, a JIT, a shuffle buffer) and the
    # model's copy are the set-up before it, as the script's own is.
    ready_s = time.perf_counter() - began
    progress.ready(ready_s)
    budget = Budget(float(max_seconds))

    progress.step("the loader alone")
    loader = measure_loader(source, max_seconds=max(0.2, budget.take(
        (LOADER_SHARE if copy is not None else 0.2) * max_seconds, "the loader alone", least=0.0)))
    if rules.python_is_the_loader(graph) and not loader["cores_busy"] < 0.5:
        loader["batching_examples_per_s"] = batching_rate(batch, max_seconds=max(0.1, budget.take(
            0.01 * max_seconds, "batching alone, the loader without its Python", least=0.0)))
    rates: dict[str, Any] = {"batch_size": batch_size, "example_bytes": example_bytes, "ready_s": ready_s, **loader}
    fits: dict = {}
    found: list[Finding] = list(untrue)
    verdict = "loader only"
    summary = (f"no model given: the loader alone delivers {loader['loader_examples_per_s']:,.1f} examples/s "
               f"(batch latency p50 {loader['loader_latency_p50_ms']:.1f} ms)")
    # A frozen backbone's head timed before the fits (cheap, and what the kit's lesson rests on): the fits
    # may run on to whole epochs and leave little of the budget after them.
    head = _head(copy, batch, source, budget, max_seconds, per_epoch=bool(per_epoch)) if copy is not None else None
    if copy is not None:
        progress.step("the compute ceiling and the real fit", loader=summary.replace("no model given: ", ""),
                      loader_rate=loader["loader_examples_per_s"])
        seconds = budget.take(FITS_SHARE * max_seconds, "the compute ceiling and the real fit", least=0.0)
        # Their run-on past their share (epoch starts, a PyDataset's memory) only from what the budget has left
        # beyond it: copying and compiling a large model may have taken much of it.
        fits = measure_fits(copy, source, batch, max_seconds=max(0.4, seconds), more=MORE_ROUNDS,
                            thresholds=(verdicts.COMPUTE_BOUND_HEADROOM, verdicts.INPUT_BOUND_HEADROOM),
                            per_epoch=bool(per_epoch), run_on=budget.left() - seconds,
                            loader=(loader["loader_examples_per_s"], loader["loader_latency_p50_ms"] / 1e3))
        if fresh:
            fits, malloc = verdicts.fresh_ceiling(fits, fresh, loader["loader_examples_per_s"])
            found += malloc
        rates.update(fits)
        verdict, summary, symptom = verdicts.verdict(fits, loader["loader_examples_per_s"], loader["cores_busy"])
        found += symptom
        rates["verdict_basis"] = verdicts.verdict_basis(fits)
        why = lent(copy)
        if why:
            rates["trained_in_place"] = why
            summary += (f"; the model cannot be copied ({why}): the doctor trained it in place and put its "
                        f"weights and optimizer state back afterwards")
    progress.step("the findings", verdict=verdict, summary=summary, found=_settle(found))
    m = _measured(batch_size, example_bytes, n_cores, load, loader, fits)
    if is_pydataset(source):
        m = replace(m, transfer_s=python.transfer_seconds(batch))
    rates["cores_available"] = m.free_cores() if fits else rules.cores_available(n_cores, m.cores_busy, load)
    if copy is not None:
        found += _frozen(head, fits, graph)
        found += rules.epoch_start_stall({**fits, "batch_size": batch_size})
        found += _memory_growth(source, fits, budget, max_seconds)
        found += _per_step(model, batch, batch_size, fits, loader["loader_examples_per_s"], budget, max_seconds,
                           compile_s=compile_s)
    where = places(source, graph) if graph is not None else {}
    hot = python.Hot()
    if python.is_python_source(source):
        seconds = budget.take(PROFILE_SHARE * max_seconds, "profiling the loader's Python", least=0.0)
        hot = python.hot_spot(source, seconds=max(0.2, seconds))
    amplification, more = rules.read_amplification(loader, example_bytes, m, profiled=hot.reads)
    more = [replace(f, where=f.where or hot.where) for f in more]  # the user's function that reads
    if amplification is not None:
        rates["read_amplification"] = amplification
    found += more + rules.python_source(graph, m, where) + rules.pydataset_gil(source, m)
    if python.is_python_source(source):
        # A PyDataset's worker processes read where this process's counters do not see
        unseen = "rchar_per_example" not in loader or is_pydataset(source) and getattr(source, "use_multiprocessing", False)
        own = python.findings(source, m, fits, hot=hot, same=python.same_batches(source),
                              reads_files=unseen or loader["rchar_per_example"] >= READS_FILE_BYTES)
        if any(f.code == "python_in_pipeline" for f in found):  # named already (thread workers and the GIL)
            own = [f for f in own if f.code != "python_in_pipeline"]
        found += own
    cands: list[Candidate] = []
    examples = None
    if graph is not None:
        examples = dataset_examples(source, graph)
        if examples and not any(n.op in _BATCH_OPS for n in graph["chain"]):
            examples *= batch_size  # the source yields batches already (a generator of batches)
        counted = _count(graph, source, examples, budget, max_seconds)
        if examples is None and counted is not None and counted[1]:
            examples = counted[0]  # a whole epoch counted: what a cache would hold
        found += small_shuffle(graph, source, counted=counted)
        cands = candidates(graph, source, examples=examples, example_bytes=example_bytes)
        found += already_done(graph, source, where)
        big = too_big_to_cache(graph, source, examples=examples, example_bytes=example_bytes, places=where)
        split = split_to_cache(graph, examples=examples, example_bytes=example_bytes, places=where)
        found += [f for f in (big, split) if f is not None]
        memory = shuffle_memory(graph, example_bytes=example_bytes, loader_rate=loader["loader_examples_per_s"])
        if memory:
            rates["memory"] = f"memory: {memory}"
        rates["random_ops"] = len(random_nodes(graph))
    single_worker = is_pydataset(source) and (getattr(source, "workers", 1) or 1) <= 1
    if single_worker:
        cands.append(Candidate(rw.pydataset_workers(rules.IO_WORKERS if m.io_wait else max(2, n_cores)),
                               f"workers={getattr(source, 'workers', 1)}: one thread reads every batch while "
                               f"the loader alone keeps {m.cores_busy:.2f} cores busy", ordered=True, random=False))
    elif is_pydataset(source) and getattr(source, "use_multiprocessing", False):
        # Processes pickle every batch back to this process and start again each epoch: the same number of
        # threads, timed, where __getitem__ leaves the GIL (files, NumPy) is the cheaper choice.
        workers = getattr(source, "workers", 1) or 1
        cands.append(Candidate(rw.pydataset_workers(workers),
                               f"workers={workers}, use_multiprocessing=True: every batch is pickled back to the "
                               f"training process, and the worker processes start again each epoch",
                               ordered=True, random=False))
    progress.step("the A/B trials of the fixes", findings=[f"{f.code}: {f.evidence}" for f in found],
                  found=_settle(found))
    rate = fit_rate(copy, batch_size, per_epoch=bool(per_epoch)) if copy is not None else None
    tried = _try_all(cands, source, copy, m, budget, examples=examples, rate=rate)
    # A cache after the Python that is the loader, whose first epoch the budget could not fill: each epoch
    # after it only batches, at the rate batching alone ran.
    unfilled = m.batching_rate / m.loader_rate if rules.python_is_the_loader(graph) and m.loader_rate > 0 else math.nan
    found += [f for t in tried for f in _findings(t, m, where, unfilled=unfilled)]
    if single_worker and not any(f.code == "pydataset_single_worker" and f.applied for f in found):
        # Threads measured no gain (or were not tried): processes predicted.
        found = [f for f in found if f.code != "pydataset_single_worker"] + rules.pydataset_workers(source, m)
    rates["time_split"] = rules.time_split(loader, m, graph, source)
    found = _settle(found)
    # Diagnosis.fixed applies what the findings list claims: a fix listed as no gain is left out.
    claimed = {id(f.rewrite) for f in found if f.rewrite is not None and f.applied}
    fixed, changes, fixed_gain = _best([t for t in tried if id(t.candidate.rewrite) in claimed], source, rate, budget)
    if fixed_gain is not None:
        rates["fixed_fit_gain" if copy is not None else "fixed_loader_gain"] = fixed_gain.median
    if trace_dir is not None:
        trace_dir = str(record_trace(copy, source, trace_dir))
    return Diagnosis(verdict=verdict, summary=summary, rates=rates, findings=table(found),
                     pipeline=labels(graph) if graph is not None else [], trace_dir=trace_dir,
                     fixed=fixed, changes=changes, tried=[t.row() for t in tried], skipped=budget.skipped)


def _measured(batch_size, example_bytes, n_cores, load, loader, fits) -> Measured:
    free, gain, basis = rules.parallel(n_cores, loader["cores_busy"], load, fits.get("model_cores"))
    return Measured(batch_size=batch_size, loader_rate=loader["loader_examples_per_s"], cores=n_cores,
                    cores_busy=loader["cores_busy"], parallel_gain=gain, parallel_basis=basis,
                    fit_rate=fits.get("fit_examples_per_s"), ceiling_rate=fits.get("ceiling_examples_per_s"),
                    cap=verdicts.cap(fits), model_cores=fits.get("model_cores"), example_bytes=example_bytes,
                    python_cores=loader.get("python_s_per_example", math.nan) * loader["loader_examples_per_s"],
                    python_threads=loader.get("python_wall_s_per_example", math.nan) * loader["loader_examples_per_s"],
                    batching_rate=loader.get("batching_examples_per_s", math.nan))


def _head(copy, batch, source, budget: Budget, max_seconds: float, *, per_epoch: bool = False):
    """Where the model starts with frozen layers: ``(prefix, head rate or None, why, epoch batches)``, the head
    timed on features computed once (``head_rate``, as Keras reads what the fits read: in epochs as long as
    the source's where the user's fit reads it epoch by epoch); None without a frozen prefix."""
    prefix, rest = frozen_prefix(copy)
    if not prefix:
        return None
    seconds = budget.take(HEAD_SHARE * max_seconds, "the frozen backbone's head on cached features")
    rate, why = None, "skipped to keep to the budget"
    plain = not isinstance(source, list)
    epochs = epoch_batches(source, per_epoch) if plain else None
    if seconds:
        rate, why = head_rate(copy, prefix, rest, batch, max_seconds=seconds, plain=plain, epoch_batches=epochs)
    return prefix, rate, why, epochs


def _frozen(head, fits, graph) -> list[Finding]:
    if head is None:
        return []
    prefix, rate, why, epochs = head
    return [rules.frozen_backbone(prefix, fits, head_rate=rate, why=why, augmented=_augmented(prefix, graph),
                                  epoch_batches=epochs)]


def _memory_growth(source, fits, budget: Budget, max_seconds: float) -> list[Finding]:
    """``rules.memory_growth``; where the loader is the user's Python, the line whose allocations grew
    named (``python.growing_line``: three epochs read under tracemalloc, in what the budget allows)."""
    found = rules.memory_growth(fits)
    per_epoch = fits.get("steps_per_epoch")
    batches = len(source) if is_pydataset(source) else int(per_epoch) if per_epoch and math.isfinite(per_epoch) else 0
    if not found or not python.is_python_source(source) or not batches:
        return found
    seconds = budget.take(GROWTH_SHARE * max_seconds, "naming the line whose memory grows", least=0.2)
    what = "naming the line whose memory grows"
    try:
        line = python.growing_line(source, batches=batches, seconds=seconds) if seconds else None
    except TimeoutError:  # its reads ran past its share: said, as a skip is
        budget.skipped.append(what)
        return found
    if line is None:
        return found
    where, mb = line
    return [replace(f, where=where, evidence=f"{f.evidence}; traced: the memory allocated at {where} and still held "
                                             f"grew {mb:,.0f} MB an epoch") for f in found]


def _per_step(model, batch, batch_size, fits, loader_rate, budget: Budget, max_seconds: float, *,
              compile_s: float = 0.0) -> list[Finding]:
    """A small step (under ``rules.SMALL_STEP_MS`` on replayed batches) compiled with one step per
    execution: ``steps_per_execution`` measured on copies, where its least cost (two copies compiled as
    long as the first took, ``compile_s``, and one execution a side in each of 3 rounds) is at most twice
    its share of the budget."""
    C = fits.get("ceiling_examples_per_s")
    if not C or 1e3 * batch_size / C >= rules.SMALL_STEP_MS or (getattr(model, "steps_per_execution", 1) or 1) > 1:
        return []
    what = "steps_per_execution on the compute ceiling"
    least = 2 * compile_s + 6 * SPE * batch_size / C
    if least > 2 * min(SPE_SHARE * max_seconds, budget.left()):
        budget.skipped.append(f"{what} (about {least:.0f} s at least)")
        return []
    if lent(model):  # trained in place (copying.borrow): compiling it twice more would change the user's model
        budget.skipped.append(f"{what} (the model cannot be copied, and it is not compiled again in place)")
        return []
    seconds = budget.take(SPE_SHARE * max_seconds, what, least=0.3)
    if not seconds:
        return []
    gain, rounds = steps_per_execution_gain(model, batch, seconds=seconds, per_execution=SPE, step_s=batch_size / C)
    return rules.steps_per_execution(fits, loader_rate, SPE, gain, rounds)


def _augmented(prefix, graph) -> str:
    """What draws random numbers ahead of the frozen layers: random layers in the model's prefix,
    or random maps in the pipeline ('' when nothing does)."""
    layers = [layer.name for layer in prefix if type(layer).__name__.startswith("Random")]
    if layers:
        return f"the model's {', '.join(layers)}"
    if graph is not None and random_nodes(graph):
        return "the pipeline's random map(s)"
    return ""


def _try_all(cands: list[Candidate], source, copy, m: Measured, budget: Budget, *,
             examples: int | None = None, rate=None) -> list[Tried]:
    """Each candidate applied, checked and measured A/B on the loader in an equal share of the time
    left; then the ones that gained (and the correctness fixes) measured A/B on the fit (``rate``:
    ``measure.fit_rate``). ``examples``: an epoch's, where known (a cache's first epoch is read at the
    loader's rate, and given that time)."""
    tried = [Tried(c) for c in cands]
    if not tried:
        return tried
    each = 0.6 * budget.left() / len(tried)
    for t in tried:
        _check_and_time(t, source, budget, each, fill=_fill_seconds(examples, m.loader_rate))
    gainers = [t for t in tried if t.loader is not None and (t.loader.real or t.candidate.correctness)]
    if copy is not None and rate is not None and gainers:
        share = budget.left() / (1 + len(gainers))  # the last share: the fixed pipeline, all together
        for t in gainers:
            seconds = budget.take(share / (2 * (TRIAL_ROUNDS - 1)),
                                  f"the end-to-end A/B of {t.candidate.rewrite.change}", least=0.2)
            if seconds:
                t.fit = trial.ab(source, t.dataset, seconds=seconds, rounds=TRIAL_ROUNDS - 1, rate=rate)
                if not t.fit.real and not t.candidate.correctness:
                    t.outcome = "the loader gained, the fit did not"
    return tried


#: A cache's outcome where its first epoch, which fills it, does not fit the budget.
FILL_TOO_LONG = "not measured: its first epoch, which fills the cache, is longer than the budget allows"


def _fill_seconds(examples, loader_rate: float) -> float:
    """An epoch read at the loader alone's rate (a cache's first epoch at most that), with a margin of
    half; 0 where the epoch is unknown."""
    if not examples or not loader_rate or not math.isfinite(loader_rate) or loader_rate <= 0:
        return 0.0
    return 1.5 * examples / loader_rate


def _check_and_time(t: Tried, source, budget: Budget, each: float, fill: float = 0.0) -> None:
    """Applies, checks and times one candidate in about ``each`` seconds; a cache's first epoch gets up to
    half of them, or its predicted ``fill`` time where that is longer and a third of the budget left allows it."""
    c = t.candidate
    end = time.perf_counter() + each
    try:
        fixed = t.dataset = c.rewrite.apply(source)
        t.check = trial.same_elements(source, fixed, ordered=c.ordered, random=c.random or c.correctness,
                                      seconds=max(0.3, min(each / 3, budget.left())))
    except Exception as e:  # noqa: BLE001  (a rewrite TensorFlow refuses is an outcome, not a crash)
        t.outcome = f"cannot apply here: {describe_error(e)}"
        return
    if t.check.same is False:
        t.outcome = f"changes the data, not applied: {t.check.how}"
        return
    # Filling the cache is the price of its A/B: up to half the candidate's share (the rest times it),
    # or the epoch's predicted read where a third of what is left covers it.
    warm = max(each / 2, fill if fill <= budget.left() / 3 else 0.0)
    if c.rewrite.warm_epoch and not trial.warm(fixed, max(0.3, min(warm, budget.left()))):
        t.outcome = FILL_TOO_LONG
        budget.skipped.append(f"the A/B of {c.rewrite.change}")
        return
    if c.rewrite.warm_epoch:
        end = max(end, time.perf_counter() + each / 2)  # a fill longer than half its share: still timed
    seconds = budget.take(max(0.0, end - time.perf_counter()) / (2 * TRIAL_ROUNDS),
                          f"the A/B of {c.rewrite.change}", least=0.03)
    if not seconds:
        t.outcome = "not measured: out of time"
        return
    t.loader = trial.ab(source, fixed, seconds=seconds, rounds=TRIAL_ROUNDS)
    t.outcome = ("gain" if t.loader.real else "no gain here") if not c.correctness else "correctness fix"


def _findings(t: Tried, m: Measured, places: dict, *, unfilled: float = math.nan) -> list[Finding]:
    """The findings a tried fix makes (one per finding it answers): measured, 'no gain' (within the noise
    or under ``NOISE``) or unmeasured, with the reason. ``unfilled``: the loader's gain once a cache that
    the budget could not fill is full, where known (the loader then only batches): that cache's gain is
    predicted from it."""
    c = t.candidate
    where = next((places[n] for n in c.rewrite.names if n in places), "")
    if (t.loader is None and c.rewrite.warm_epoch and not c.correctness and t.outcome.startswith(FILL_TOO_LONG)
            and math.isfinite(unfilled) and unfilled > 1):
        gain, (low, high) = m.cheaper_input(unfilled), m.cheaper_range(unfilled, unfilled)
        basis = (f"predicted: {t.outcome.removeprefix('not measured: ')}; once it is full the loader only batches, "
                 f"which runs {unfilled:,.2f}x the loader's rate on one example replayed from memory, every epoch "
                 f"after the first")
        if t.check is not None:
            basis += f"; {'checked: ' if t.check.same else ''}{t.check.how}"
        return [Finding(code, evidence, gain, m.cap.explain(basis), status="predicted", fix=c.rewrite.snippet,
                        gain_low=low, gain_high=high, loader_gain=unfilled, where=where, rewrite=c.rewrite)
                for code, evidence in c.findings]
    if t.loader is None and not c.correctness:
        if t.outcome.startswith(("not measured", "cannot apply", "changes the data")):
            return [Finding(c.code, c.evidence, math.nan, t.outcome, status="unmeasured", fix=c.rewrite.snippet,
                            where=where, rewrite=c.rewrite)]
        return []
    loader = t.loader
    if t.fit is not None:
        gain, low, high = t.fit.median, t.fit.low, t.fit.high
        basis = (f"measured: the fit on the fixed pipeline over the original, interleaved, "
                 f"{t.fit.text()}; the loader alone {loader.text() if loader else 'not measured'}")
    elif loader is not None:
        # A cache does the work less often, so it also frees the CPU the step shares (where the loader
        # alone outruns the model and the fit is still short of it, that is all it can give); other fixes
        # spread the same work, which helps only a step that waits.
        if c.rewrite.warm_epoch:
            gain, (low, high) = m.cheaper_input(loader.median), m.cheaper_range(loader.low, loader.high)
        else:
            gain, low, high = m.end_to_end(loader.median), m.end_to_end(loader.low), m.end_to_end(loader.high)
        basis = f"measured on the loader alone, interleaved with the original, {loader.text()}"
        if m.ceiling_rate and c.rewrite.warm_epoch:
            basis += ("; the fit not timed: from the loader taking less of the CPU it shares with the step, to the "
                      f"step waiting less, at most the headroom {m.headroom:,.2f}x; "
                      + (f"the step keeps {m.model_cores:.2f} of {m.cores} cores busy, so they share it: the first "
                         "expected" if m.shares_cpu else "the larger expected"))
        elif m.ceiling_rate:
            basis += ("; the fit not timed: it follows the slower of loader and compute ceiling "
                      f"{m.ceiling_rate:,.1f}/s, at most the headroom {m.headroom:,.2f}x")
    else:
        gain = low = high = math.nan
        basis = t.outcome
    if t.check is not None and t.check.same:
        basis += f"; checked: {t.check.how}"
    elif t.check is not None and t.check.same is None:
        basis += (f"; {t.check.how}: " + ("the same elements in the same order by construction" if
                                          c.rewrite.keeps_elements else "not applied in Diagnosis.fixed"))
    # Timed on the fit (or on the loader without a model: then it is the whole): measured; on the loader
    # alone beside a model: predicted for the fit from what the loader measured.
    part = t.fit is None and loader is not None and bool(m.ceiling_rate)
    status, on = ("predicted", "the loader alone") if part else ("measured", "")
    if not c.correctness and (loader is None or not loader.real or (t.fit is not None and not t.fit.real)
                              or not gain >= NOISE):
        status, on = "no gain", ""
        basis = f"checked, no gain here: {basis}"
    return [Finding(code, evidence, gain, basis, status=status, fix=c.rewrite.snippet, gain_low=low,
                    gain_high=high, loader_gain=loader.median if loader else math.nan, where=where,
                    measured_on=on, rewrite=c.rewrite) for code, evidence in c.findings]


def _settle(found: list[Finding]) -> list[Finding]:
    """Predicted speed findings put in their list: under ``NOISE`` end to end, 'no gain'; with no gain
    at all, 'unmeasured'."""
    out = []
    for f in found:
        if f.kind == "speed" and f.status == "predicted":
            if not math.isfinite(f.expected_gain):
                f = replace(f, status="unmeasured")
            elif f.expected_gain < NOISE and not (math.isfinite(f.gain_high) and f.gain_high >= NOISE * NOISE):
                f = replace(f, status="no gain", basis=f"predicted under {NOISE}x here: {f.basis}")
        out.append(f)
    return out


def _count(graph, source, examples, budget: Budget, max_seconds: float) -> tuple[int, bool] | None:
    """One epoch of a finite dataset of unknown length counted, ``(examples, whole)``, where a count is
    needed: a shuffle buffer to compare with it (at least ``COUNT_MIN_S``, even past the budget: without
    a count a small buffer goes unreported), or a cache to size (up to ``COUNT_CACHE_SHARE`` of the
    budget: a cut count cannot say the data fits in memory). None where not counted."""
    if examples is not None or int(source.cardinality()) == INFINITE:
        return None
    chain = graph["chain"]
    shuffled = any(n.op in _SHUFFLE_OPS for n in chain)
    cacheable = (not any(n.op in rw.CACHE_OPS for n in chain)
                 and _cache_point(graph, set(random_nodes(graph))) is not None)
    if not (shuffled or cacheable):
        return None
    share = COUNT_CACHE_SHARE if cacheable else COUNT_SHARE
    seconds = budget.take(max(share * max_seconds, COUNT_MIN_S), "counting an epoch of unknown length", least=0.0)
    return count_examples(source, max(COUNT_MIN_S, seconds))


def _median(gain) -> float:
    return gain.median if gain is not None else 0.0


def _best(tried: list[Tried], source, rate, budget: Budget):
    """The fixed pipeline: every fix that gained and every correctness fix, together, checked; the
    single best one where together they fail. Returns ``(dataset or None, rewrites, gain or None)``."""
    # A correctness fix whose check passed is kept even where its cost was not timed (out of time): its
    # reason is the data's order, not speed.
    keep = [t for t in tried
            if (t.candidate.correctness or (t.loader is not None and t.loader.real and (t.fit is None or t.fit.real)))
            and (t.check is not None and (t.check.same or (t.check.same is None and t.candidate.rewrite.keeps_elements)))]
    if not keep:
        return None, [], None
    keep.sort(key=lambda t: (not t.candidate.correctness, -_median(t.fit or t.loader)))
    rewrites = [t.candidate.rewrite for t in keep]
    random = any(t.candidate.random or t.candidate.correctness for t in keep)
    ordered = all(t.candidate.ordered for t in keep)
    try:
        fixed = rw.apply(source, rewrites)
        check = trial.same_elements(source, fixed, ordered=ordered, random=random,
                                    seconds=max(0.5, budget.left() / 4))
        if check.same is False:
            raise ValueError(check.how)
    except Exception:  # noqa: BLE001  (together they fail: the best one alone, already checked)
        rewrites = rewrites[:1]
        fixed = rw.apply(source, rewrites)
    gain = None
    seconds = budget.take(0.6 * budget.left() / (2 * (TRIAL_ROUNDS - 1)),
                          "the end-to-end A/B of the fixed pipeline", least=0.2)
    if seconds and len(rewrites) > 1:
        if any(r.warm_epoch for r in rewrites):
            trial.warm(fixed, seconds)
        gain = trial.ab(source, fixed, seconds=seconds, rounds=TRIAL_ROUNDS - 1,
                        rate=rate if rate is not None else trial.loader_rate)
    elif len(rewrites) == 1:
        only = next(t for t in keep if t.candidate.rewrite is rewrites[0])
        gain = only.fit or only.loader
    return fixed, rewrites, gain
