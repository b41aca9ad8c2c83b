"""The doctor's measurements with a model: its fits (real and replayed), the frozen head, the trace."""

from __future__ import annotations

import gc
import math
import time
import warnings
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kit import timing
from kit.doctor import progress
from kit.doctor.copying import clone, compile_like, copy_or_borrow
from kit.doctor.graph import INFINITE
from kit.doctor.loader import cpu_seconds
from kit.doctor.sources import (
    CEILING,
    PROGRESS,
    Counted,
    ModelError,
    check_source,
    describe_error,
    first_batch,
    is_dataset,
    is_pydataset,
    shapes,
)
from kit.timing.batches import batch_size_of
from kit.timing.rates import add_ratios, rss_mb


def compiled_copy(model, batch, name: str):
    """A copy of ``model`` trained one step on ``batch``, which compiles the step the timings reuse; the
    model itself (``borrow``, inside ``lending``) where it cannot be copied. Raises ``ModelError`` where
    the model is not compiled or does not take the batches of ``name``."""
    copy = copy_or_borrow(model, batch)
    try:
        timed_fit(copy, replay(batch, 2), max_seconds=0.0, min_steps=1)
    except Exception as e:  # noqa: BLE001  (Keras raises many types; all mean the same here)
        raise ModelError(f"Keras model {model.name!r} does not take the batches of {name} "
                         f"({shapes(batch)}): {describe_error(e)}") from e
    return copy


def deadline_callback(seconds: float, min_steps: int, trace: bool = False, until=None, limit: float = 0.0):
    """A Keras callback that stops training after ``seconds`` and at least ``min_steps`` steps; with
    ``until`` (a function), also not before ``until()`` is true or ``limit`` seconds have passed."""

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
            PROGRESS.arrived()
            if self._trace is not None:
                self._trace.__exit__(None, None, None)
                self._trace = None
            self.steps += 1
            elapsed = time.perf_counter() - self.t0
            if self.steps >= min_steps and elapsed >= seconds and (until is None or until() or elapsed >= limit):
                self.model.stop_training = True

    return Deadline()


#: CPython 3.11's ``ast`` keeps its recursion depth per interpreter: ``np.load`` in a PyDataset
#: worker thread racing autograph in the main one can raise this ``SystemError``; the fit runs again.
_AST_RACE = "AST constructor recursion depth mismatch"


def timed_fit(model, source, *, max_seconds: float, min_steps: int = 3, trace: bool = False,
              min_epochs: int = 0, limit: float = 0.0) -> dict:
    """Trains ``model`` on ``source`` through a ``StepTimer`` until ``max_seconds``: examples/s over the
    step times, the input-wait share and the steps table, the first step left out. ``min_epochs``: go on
    past ``max_seconds`` (up to ``limit`` seconds in all) until that many epochs have ended."""
    PROGRESS.start("the training fit" if not isinstance(source, list) else CEILING)

    def once() -> dict:
        return _timed_fit(model, source, max_seconds=max_seconds, min_steps=min_steps, trace=trace,
                          min_epochs=min_epochs, limit=limit)

    try:
        return once()
    except SystemError as e:
        if _AST_RACE not in str(e):
            raise
        return once()


def _fit(model, data, **kwargs) -> None:
    """``model.fit(data)``, quiet, its warning that a source ran out of data (expected here) left out."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*ran out of data.*")
        model.fit(data, verbose=0, shuffle=False, **kwargs)


def _timed_fit(model, source, *, max_seconds: float, min_steps: int, trace: bool, min_epochs: int = 0,
               limit: float = 0.0) -> dict:
    timer = timing.StepTimer()
    counted = Counted(source)
    data = timer.wrap(counted)
    counted.epochs.clear()  # the wrap's peek is not a step
    until = (lambda: len(timer.rss_at_epoch_ends()) >= min_epochs) if min_epochs else None
    _fit(model, data, epochs=10_000, callbacks=[timer, deadline_callback(max_seconds, min_steps, trace, until=until,
                                                                         limit=limit)])
    # A fit stopped by a callback leaves Keras's epoch iterator in a reference cycle: freed now, so that
    # its buffers and threads do not run on beside the next measurement.
    gc.collect()
    steps = timer.steps()
    sizes = [counted.epochs[e][s] if e < len(counted.epochs) and s < len(counted.epochs[e]) else 0
             for e, s in zip(steps["epoch"], steps["step"])]
    steps["examples"] = sizes
    kept = steps.iloc[1:] if len(steps) > 1 else steps
    step_s = float(kept["step_s"].sum())
    return {"examples_per_s": float(kept["examples"].sum()) / step_s if step_s > 0 else math.nan,
            "input_share": float(kept["wait_s"].sum()) / step_s if step_s > 0 else math.nan,
            "steps": steps, "examples": int(kept["examples"].sum()), "seconds": step_s,
            # the last end is the epoch the deadline cut short (Keras ends it where it stopped): left out
            "rss_epoch_ends": timer.rss_at_epoch_ends()[:-1]}


#: Steps a plain fit leaves out of its timing (tracing, buffers filling).
PLAIN_SKIP = 2


def plain_fit(model, source, *, batch_size: int, max_seconds: float, min_steps: int = 3,
              epoch_start: float = 0.0, per_epoch: bool = False, ends: list | None = None) -> dict:
    """Trains ``model`` on ``source`` as Keras reads it (a ``tf.data`` source repeated, or epoch after
    epoch with ``per_epoch``; a PyDataset epoch after epoch; a function's generators one after another)
    until ``max_seconds`` and ``min_steps``
    steps beyond the first ``PLAIN_SKIP``: examples/s from the steps' ends, each ``batch_size``
    examples. Unlike ``timed_fit``, no pull through Python per step: Keras overlaps reading a batch
    with the step before it (a PyDataset's, a generator's too, even on one worker), which a pull per
    step would serialise, and it would flatten the difference between fast pipelines.

    ``epoch_start`` (seconds, a PyDataset or a dataset read ``per_epoch``): go on past ``max_seconds``, up
    to that long in all, until the timed steps include an epoch's start, as the user's fit pays it (where
    the steps run span whole epochs after the first, only those are timed, each start paid once): Keras
    makes a finite dataset given without ``steps_per_epoch``, and a PyDataset, a new iterator each epoch,
    and its first batch can take many steady steps' time (an empty prefetch buffer, a parallel map
    starting again). ``epoch_starts`` in the result counts the epoch starts inside the timed steps. ``ends``:
    the list the steps' ends go into as they end (a caller's, read while the fit runs)."""
    ends = [] if ends is None else ends
    rss: list[float] = []
    begins: list[int] = []  # the steps done when each epoch began

    class Ends(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            begins.append(len(ends))

        def on_train_batch_end(self, batch, logs=None):
            ends.append(time.perf_counter())

        def on_epoch_end(self, epoch, logs=None):
            if not self.model.stop_training:  # an epoch the deadline cut short is no epoch's end
                rss.append(rss_mb())

    def crossed() -> bool:  # the second step of an epoch after the first has ended: the window spans its start
        return len(begins) > 1 and len(ends) - begins[1] >= PLAIN_SKIP

    PROGRESS.start("the training fit")
    epochs = is_pydataset(source) or (per_epoch and is_dataset(source))  # a new iterator every epoch
    wait = epoch_start > max_seconds and epochs
    deadline = deadline_callback(max_seconds, min_steps + PLAIN_SKIP, until=crossed if wait else None,
                                 limit=epoch_start)
    if epochs:
        _fit(model, source, epochs=10_000, callbacks=[Ends(), deadline])
    elif is_dataset(source):
        _fit(model, source.repeat(), steps_per_epoch=10**9, epochs=1, callbacks=[Ends(), deadline])
    else:  # a function returning a fresh generator: one fit per generator, until the deadline stops one
        while True:
            before = len(ends)
            _fit(model, _generator(source()), steps_per_epoch=10**9, epochs=1, callbacks=[Ends(), deadline])
            if len(ends) == before or (deadline.t0 is not None and deadline.steps >= min_steps + PLAIN_SKIP
                                       and time.perf_counter() - deadline.t0 >= max_seconds):
                break
    gc.collect()  # the stopped fit's iterator and its threads freed now (see _timed_fit)
    # Whole epochs where two epoch starts after the first epoch were reached: from the end of epoch 0 to
    # the end of the last whole epoch, every epoch start between paid once (the user's epochs, as they
    # run); else the steps after the first PLAIN_SKIP (an epoch start among them where one was reached:
    # a round stops once it has one, to keep the budget for the fixes' trials).
    bounds = [b for b in begins[1:] if 0 < b <= len(ends)] if epochs else []
    first, last = (bounds[0] - 1, bounds[-1]) if len(bounds) > 1 else (PLAIN_SKIP - 1 if len(ends) > PLAIN_SKIP else 0,
                                                                       len(ends))
    kept = ends[first:last]
    seconds = kept[-1] - kept[0] if len(kept) > 1 else math.nan
    examples = batch_size * (len(kept) - 1)
    starts = sum(first < b < last for b in begins[1:]) if epochs else 0
    # Epoch ends of one Keras fit only: a repeat has no epochs, and a function's generators are one fit
    # each (a fit call leaves memory behind that the user's one fit does not: new iterators, py_funcs).
    return {"examples_per_s": examples / seconds if seconds > 0 else math.nan, "examples": examples,
            "seconds": seconds, "epoch_starts": starts, "rss_epoch_ends": rss if is_pydataset(source) else []}


def _generator(batches):
    """``batches`` (any iterator: an ``islice`` of the user's generator) as a generator, which Keras takes."""
    yield from batches


def replay(batch, n: int = 64) -> list:
    """``n`` times the same batch, from memory: the model's step never waits for it."""
    return [batch] * n


def pooled(runs) -> float:
    """Examples/s over several runs of ``timed_fit`` or ``plain_fit`` (the steps each leaves out, left out)."""
    ex = sum(r["examples"] for r in runs)
    s = sum(r["seconds"] for r in runs if math.isfinite(r["seconds"]))
    return ex / s if s > 0 else math.nan


def fit_once(copy, source, *, batch_size: int, max_seconds: float, epoch_start: float = 0.0,
             min_steps: int = 3, per_epoch: bool = False, ends: list | None = None) -> dict:
    """One fit of ``copy`` on ``source``: ``plain_fit`` on what Keras reads itself (a ``tf.data`` source, a
    PyDataset, a function returning a generator; ``ends`` as there), ``timed_fit`` on a list of batches."""
    if isinstance(source, list):
        return timed_fit(copy, source, max_seconds=max_seconds, min_steps=min_steps)
    return plain_fit(copy, source, batch_size=batch_size or first_batch(source, "the source")[1],
                     max_seconds=max_seconds, epoch_start=epoch_start, min_steps=min_steps, per_epoch=per_epoch,
                     ends=ends)


def pooled_share(runs) -> float:
    """The share of step time spent waiting for input over several ``timed_fit`` runs."""
    wait = sum(float(r["steps"]["wait_s"].iloc[1:].sum()) for r in runs)
    s = sum(float(r["steps"]["step_s"].iloc[1:].sum()) for r in runs)
    return wait / s if s > 0 else math.nan


#: A real fit's round on a PyDataset may run up to this many times its share to include an epoch's start.
EPOCH_START_ROUNDS = 4
#: Whole epochs one timed fit of a PyDataset goes on to, where three times its share allows: growth read within
#: one fit, each fit's first end left out, needs rules.GROWTH_ENDS after it.
MEMORY_EPOCHS = 4
#: ... and for at least this many seconds where its share is smaller (a small budget's short shares).
MEMORY_MIN_S = 1.0


def measure_fits(copy, source, batch, *, max_seconds: float, rounds: int = 2, more: int = 0,
                 thresholds: tuple = (), per_epoch: bool = False, run_on: float | None = None,
                 loader: tuple[float, float] | None = None) -> dict:
    """The compute ceiling (``batch`` replayed from memory) and the real fit on ``source``, interleaved,
    each run ``max_seconds / (2 * rounds)``; up to ``more`` rounds more while the rounds' headrooms
    straddle one of ``thresholds``. A source Keras reads itself (tf.data, a PyDataset, a function
    returning a generator) is fitted with ``plain_fit``, as Keras reads it, plus one ``timed_fit`` for
    the input-wait share, the epochs' starts and memory; a list of batches with ``timed_fit``. A
    PyDataset's real-fit rounds, and a dataset's read ``per_epoch`` (a finite one the user's fit reads
    without ``steps_per_epoch``), go on (each up to ``EPOCH_START_ROUNDS`` times its share, and all of them
    together at most ``max_seconds`` past their shares) until they include an epoch's start, which the
    user's fit pays every epoch; where they span whole epochs, only those are timed. ``run_on``: the most
    all of that, and the memory fit's run past its share, may take (what the caller's budget has left).
    ``loader``: the loader alone's ``(examples/s, seconds a batch)``: where the real fit's fewest steps at that
    pace outlast ``max_seconds`` and the first ceiling round runs ``progress.SLOW_LOADER`` times or more faster, the real
    fit is not timed (``fit_from_loader``): it cannot outrun its input, so the loader's rate stands for it and
    the headroom is a lower bound.

    Returns:
        ``ceiling_examples_per_s``, ``fit_examples_per_s`` (pooled), ``ceiling_rounds``,
        ``fit_rounds``, ``fit_epoch_starts`` (epoch starts inside the real fits' timed steps; None where
        the source has no epochs of its own), ``input_share``, ``fit_steps``, ``model_cores`` (cores the step kept busy on
        replayed batches), ``extra_rounds``, ``headroom`` (the median of the rounds' ceiling over
        real fit), ``plain`` (whether the rates come from ``plain_fit``), and from the timed fits
        ``epoch_start_waits``, ``steady_wait_s``, ``steps_per_epoch`` (``epoch_starts``) and
        ``rss_runs`` (this process's resident memory at each epoch's end, MB, one list per fit call).
    """
    ceiling_runs: list[dict] = []
    real_runs: list[dict] = []
    cpu = wall = 0.0
    each = max_seconds / (2 * rounds)
    plain = not isinstance(source, list)  # what Keras reads itself, timed as it reads it
    size = batch_size_of(batch) if plain else 0  # plain_fit counts whole batches
    ceiling = tf.data.Dataset.from_tensors(batch) if plain else replay(batch)

    def straddles() -> bool:
        ratios = [c["examples_per_s"] / r["examples_per_s"] for c, r in zip(ceiling_runs, real_runs)
                  if r["examples_per_s"] > 0]
        return any(ratios and min(ratios) < t <= max(ratios) for t in thresholds)

    # What the real rounds (and the memory fit) may run on past their shares, in all: at most the fits' own
    # share (they take at most twice it), or ``run_on`` where the caller's budget has less left.
    allowance = math.inf if run_on is None else max(0.0, run_on)
    spare = min(max_seconds, allowance)

    def ceiling_round() -> None:
        nonlocal cpu, wall
        c0, t0 = cpu_seconds(), time.perf_counter()
        ceiling_runs.append(fit_once(copy, ceiling, batch_size=size, max_seconds=each))
        cpu, wall = cpu + cpu_seconds() - c0, wall + time.perf_counter() - t0
        progress.SO_FAR["ceiling_rate"] = pooled(ceiling_runs)  # for a verdict where the budget ends in the real fit

    def one_round(ceiling_first: bool = True) -> None:
        nonlocal spare, allowance
        if ceiling_first:
            ceiling_round()
        t1 = time.perf_counter()
        live: list[float] = []  # the real fit's steps as they end: a verdict where the budget ends inside it
        if plain:
            progress.SO_FAR.setdefault("fit_ends", []).append((live, size, PLAIN_SKIP))
        real_runs.append(fit_once(copy, source, batch_size=size, max_seconds=each,
                                  epoch_start=min(EPOCH_START_ROUNDS * each, each + spare), per_epoch=per_epoch,
                                  ends=live))
        over = max(0.0, time.perf_counter() - t1 - each)
        spare, allowance = max(0.0, spare - over), max(0.0, allowance - over)

    t_rounds = time.perf_counter()
    first = True
    if plain and loader is not None and loader[1] * (3 + PLAIN_SKIP) > max_seconds:
        ceiling_round()  # the real fit's fewest steps outlast the fits' share: is its input slow enough to judge?
        C = ceiling_runs[0]["examples_per_s"]
        if loader[0] > 0 and loader[0] * progress.SLOW_LOADER <= C:
            return {"plain": True, "fit_from_loader": True, "ceiling_examples_per_s": C, "fit_examples_per_s": loader[0],
                    "ceiling_rounds": [C], "fit_rounds": [loader[0]], "extra_rounds": 0, "fit_epoch_starts": None,
                    "input_share": math.nan, "fit_steps": 0, "model_cores": cpu / wall if wall > 0 else math.nan,
                    "headroom": C / loader[0], "epoch_start_waits": [], "steady_wait_s": math.nan,
                    "steps_per_epoch": math.nan, "rss_runs": []}
        first = False
    for _ in range(rounds):
        one_round(ceiling_first=first)
        first = True
    extra = 0
    # An extra round where the last one's time fits in what the caller's budget has left past the shares
    # (without run_on: as the shares allow; these rounds were budgeted in the fits' share).
    while extra < more and straddles() and (run_on is None or allowance >= (time.perf_counter() - t_rounds) / (rounds + extra)):
        t0, before = time.perf_counter(), allowance
        one_round()
        allowance = max(0.0, before - (time.perf_counter() - t0))  # an extra round is all past the shares
        extra += 1
    # A PyDataset's timed fit goes on (up to three times its share) to MEMORY_EPOCHS whole epochs, which memory growth
    # within one fit needs (rules.memory_growth): short epochs get there, long ones cannot in the budget.
    wrapped = ([timed_fit(copy, source, max_seconds=each, min_epochs=MEMORY_EPOCHS if is_pydataset(source) else 0,
                          limit=max(each, min(max(3 * each, MEMORY_MIN_S), each + allowance)))] if plain else real_runs)
    starts, steady, epoch_steps = epoch_starts(wrapped)
    c_rounds = [float(r["examples_per_s"]) for r in ceiling_runs]
    f_rounds = [float(r["examples_per_s"]) for r in real_runs]
    ratios = [c / f for c, f in zip(c_rounds, f_rounds) if f > 0]
    return {"plain": plain, "ceiling_examples_per_s": pooled(ceiling_runs), "fit_examples_per_s": pooled(real_runs),
            "ceiling_rounds": c_rounds, "fit_rounds": f_rounds, "extra_rounds": extra,
            "fit_epoch_starts": (sum(r.get("epoch_starts", 0) for r in real_runs)
                                 if is_pydataset(source) or (per_epoch and plain) else None),
            "input_share": pooled_share(wrapped), "fit_steps": sum(len(r["steps"]) for r in wrapped),
            "model_cores": cpu / wall if wall > 0 else math.nan,
            "headroom": float(np.median(ratios)) if ratios else math.nan,
            "epoch_start_waits": starts, "steady_wait_s": steady, "steps_per_epoch": epoch_steps,
            # the real fits' epoch ends, one list per fit call (rules.memory_growth reads the growth within
            # each fit: between calls the doctor's own fits leave memory behind)
            "rss_runs": [list(r.get("rss_epoch_ends", [])) for r in (real_runs + wrapped if plain else real_runs)]}


def epoch_starts(runs) -> tuple[list[float], float, float]:
    """From timed fits' steps: each epoch's first wait after the first epoch (seconds), the steady steps'
    median wait and step, and the steps of a whole epoch (NaN where no epoch ended)."""
    starts: list[float] = []
    steady: list[float] = []
    lengths: list[int] = []
    for r in runs:
        steps = r.get("steps")
        if steps is None or not len(steps) or "epoch" not in steps:
            continue
        for epoch, rows in steps.groupby("epoch"):
            rows = rows.sort_values("step")
            if epoch >= 1 and int(rows["step"].iloc[0]) == 0:
                starts.append(float(rows["wait_s"].iloc[0]))
            steady += [float(w) for w in rows["wait_s"].iloc[1:]]
            if epoch < steps["epoch"].max():  # a later epoch began: this one ended
                lengths.append(int(rows["step"].max()) + 1)
    return (starts, float(np.median(steady)) if steady else math.nan,
            float(np.median(lengths)) if lengths else math.nan)


def steps_per_execution_gain(model, batch, *, seconds: float, per_execution: int = 16, rounds: int = 3,
                             step_s: float = 0.0):
    """The compute ceiling with ``steps_per_execution=per_execution`` over the ceiling with one step per
    execution: copies of ``model`` trained on ``batch`` replayed from memory, interleaved ``rounds`` times,
    ``seconds`` in all (the copies' compiling apart). ``step_s``: the ceiling's step, where measured: each
    fit trains as many whole executions as fit in its share (at least one), not a fixed four.
    Returns ``(median gain, [round gains])``; ``(nan, [])`` where no round fits."""
    data = tf.data.Dataset.from_tensors(batch).repeat()
    copies = {}
    for k in (1, per_execution):
        c, _ = clone(model, batch)
        compile_like(c, model, steps_per_execution=k)
        _fit(c, data, steps_per_epoch=2 * k, epochs=1)  # traces the step
        copies[k] = c
    each = seconds / (2 * rounds)
    executions = max(1, min(4, int(each / (step_s * per_execution)))) if step_s > 0 else 4
    gains = []
    for _ in range(rounds):
        rate = {}
        for k, c in copies.items():
            steps, t0 = 0, time.perf_counter()
            while True:
                _fit(c, data, steps_per_epoch=executions * per_execution, epochs=1)
                steps += executions * per_execution
                if time.perf_counter() - t0 >= each:
                    break
            rate[k] = steps / (time.perf_counter() - t0)
        gains.append(rate[per_execution] / rate[1])
    return (float(np.median(gains)), gains) if gains else (math.nan, [])


def epoch_batches(source, per_epoch: bool) -> int | None:
    """The batches of one epoch as the user's fit reads ``source`` epoch by epoch (a PyDataset's
    length; a finite dataset's known cardinality, read ``per_epoch``); None where it has no epochs of its
    own or their length is not known before reading it."""
    if is_pydataset(source):
        try:
            n = len(source)
        except (TypeError, NotImplementedError, ValueError):
            return None
        return n if n > 0 else None
    if per_epoch and is_dataset(source):
        n = int(source.cardinality())
        return n if n > 0 else None
    return None


def reads_per_epoch(source) -> bool:
    """Whether ``model.fit(source, epochs=N)`` reads ``source`` with a new iterator every epoch: a finite
    (or unknown-length) ``tf.data`` dataset given without ``steps_per_epoch``."""
    return is_dataset(source) and int(source.cardinality()) != INFINITE


def fit_rate(copy, batch_size: int, *, per_epoch: bool = False):
    """``rate(source, seconds)`` for ``trial.ab``: examples/s of ``copy`` trained on it (``fit_once``), a
    dataset epoch after epoch with ``per_epoch``, as the user's fit reads it."""
    def rate(source, seconds):
        return fit_once(copy, source, batch_size=batch_size, max_seconds=seconds, per_epoch=per_epoch,
                        epoch_start=EPOCH_START_ROUNDS * seconds if per_epoch else 0.0)["examples_per_s"]
    return rate


def record_trace(model, source, trace_dir, *, steps: int = 5) -> Path:
    """Records a TensorFlow profiler trace of ``steps`` training steps (or batches read); open it with
    ``tensorboard --logdir TRACE_DIR``, Profile tab (``pip install 'kit[profile]'``)."""
    trace_dir = Path(trace_dir)
    trace_dir.mkdir(parents=True, exist_ok=True)
    tf.profiler.experimental.start(str(trace_dir))
    try:
        if model is not None:
            timer = timing.StepTimer()
            _fit(model, timer.wrap(source), epochs=1, steps_per_epoch=steps,
                 callbacks=[timer, deadline_callback(math.inf, steps, trace=True)])
        else:
            for i, _ in zip(range(steps), timing.iterate(source)):
                with tf.profiler.experimental.Trace("read", step_num=i, _r=1):
                    pass
    finally:
        tf.profiler.experimental.stop()
    return trace_dir


def compare_fits(runs: dict, *, baseline: str | None = None, max_seconds: float = 10.0,
                 rounds: int = 2, min_steps: int = 3) -> pd.DataFrame:
    """Training rates of several (source, model) pairs measured interleaved, side by side, each fitted as
    ``model.fit(source, epochs=N)`` reads it (``fit_once``: a finite ``tf.data`` dataset or a PyDataset epoch
    after epoch, each epoch's start paid; an infinite dataset repeated), as the doctor's verdict times the
    real fit; then one short fit of each through the step timer gives
    the share of its steps spent waiting for input (a pull per step serialises reading and the step, so
    it would understate a fast source's rate: it gives the share only).

    Args:
        runs: name -> ``(source, compiled model)``; each model is trained as a copy (one per
            model object).
        baseline: the name to express ratios against (``x_<baseline>``).
        max_seconds: the budget for all of them together (a fifth of it for the input-wait shares).
        rounds: interleaved rounds.
        min_steps: steps each run trains at least, past its share of ``max_seconds`` if need be.

    Returns:
        One row per run: ``variant``, ``examples_per_s``, ``input_share``, ``steps`` (timed in the
        rounds), and ``x_<baseline>`` with its rounds' ``x_<baseline>_min`` and ``_max``.
    """
    copies, clones, sizes = {}, {}, {}
    for name, (source, model) in runs.items():
        check_source(source, name)
        if id(model) not in clones:  # one copy per model: the same model on two loaders compiles once
            clones[id(model)] = clone(model)[0]
        copy = clones[id(model)]
        batch, _ = first_batch(source, name)
        sizes[name] = batch_size_of(batch)
        timed_fit(copy, replay(batch, 2), max_seconds=0.0, min_steps=1)  # compiles the step timed below
        copies[name] = (source, copy)
    each = 0.8 * max_seconds / (rounds * len(runs))
    results: dict[str, list[dict]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, (source, copy) in copies.items():
            per_epoch = reads_per_epoch(source)  # each epoch's start paid, as in the user's fit
            results[name].append(fit_once(copy, source, batch_size=sizes[name], max_seconds=each, min_steps=min_steps,
                                          per_epoch=per_epoch, epoch_start=EPOCH_START_ROUNDS * each
                                          if per_epoch or is_pydataset(source) else 0.0))
    shares = {name: pooled_share([timed_fit(copy, source, max_seconds=0.2 * max_seconds / len(runs),
                                            min_steps=min_steps)])
              for name, (source, copy) in copies.items()}
    rows = [{"variant": name, "examples_per_s": pooled(rs), "input_share": shares[name],
             "steps": sum(int(r["examples"]) // max(1, sizes[name]) for r in rs)} for name, rs in results.items()]
    df = pd.DataFrame(rows)
    if baseline is not None:
        add_ratios(df, [baseline])
        # The spread: each round's ratio against the baseline's run in the same round.
        ratios = {name: [pooled([r]) / pooled([b]) for r, b in zip(rs, results[baseline])]
                  for name, rs in results.items()}
        df[f"x_{baseline}_min"] = [min(ratios[n]) for n in df["variant"]]
        df[f"x_{baseline}_max"] = [max(ratios[n]) for n in df["variant"]]
    return df
