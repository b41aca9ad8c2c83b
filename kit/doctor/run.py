"""The doctor on a training script as it is written: ``python -m kit doctor run train.py`` and ``watch()``.

The hooks replace ``keras.Model.fit`` (and, for custom loops, a dataset's iterator) before the script
runs. At the script's first ``fit`` the doctor takes what it was given (a ``tf.data.Dataset``, a
``PyDataset``/``Sequence``, a generator, arrays), diagnoses it on a copy of the model within its budget
and prints the report; then it ends the script, or lets its ``fit`` run as written. Only the process
that installed the hooks is watched: a child that imports the script again (PyDataset processes,
spawn) runs it untouched.
"""

from __future__ import annotations

import contextlib
import copy as copying
import inspect
import itertools
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kit.doctor.sources import is_dataset, is_library, is_pydataset

#: The ``fit`` arguments the report names (the rest are passed on as they are).
FIT_ARGS = ("batch_size", "epochs", "steps_per_epoch", "validation_data", "validation_steps", "class_weight",
            "callbacks", "validation_split", "initial_epoch", "shuffle", "sample_weight")

_KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_frame(skip_kit: bool = True):
    """The innermost frame of the user's own code on this thread's stack (not Python's, a package's or the kit's)."""
    f: Any = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        if not (name.startswith("<") or is_library(name) or (skip_kit and os.path.abspath(name).startswith(_KIT))):
            return f
        f = f.f_back
    return None


def short(filename: str) -> str:
    """A file as a report names it: its base name; a notebook cell's code (IPython keeps it in a file
    named by a hash) as ``cell``."""
    return "cell" if "ipykernel_" in filename else os.path.basename(filename)


def place(frame) -> str:
    """``train.py:42``: a frame's file (base name) and line; ``cell:42`` in a notebook."""
    return f"{short(frame.f_code.co_filename)}:{frame.f_lineno}" if frame is not None else "?"


def remake(gen):
    """A function returning a fresh generator like ``gen`` (a generator object not yet started), from the
    function that made it and its arguments; a method's generator gets a shallow copy of its object, so
    that the user's object keeps its own counters. None when the doctor cannot find how to call it again."""
    if not inspect.isgenerator(gen) or inspect.getgeneratorstate(gen) != inspect.GEN_CREATED:
        return None
    code = gen.gi_code
    given = inspect.getgeneratorlocals(gen)
    n = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:n])
    star = code.co_varnames[n] if code.co_flags & inspect.CO_VARARGS else None
    fn, bound = None, None
    if names and names[0] in given and callable(getattr(type(given[names[0]]), code.co_name, None)):
        cand = getattr(type(given[names[0]]), code.co_name)
        if getattr(cand, "__code__", None) is code:  # a method: called again on a copy of its object
            fn, bound = cand, names[0]
    if fn is None:
        cand = gen.gi_frame.f_globals.get(code.co_name)
        if getattr(cand, "__code__", None) is code:
            fn = cand
    if fn is None:
        import gc  # noqa: PLC0415  (a closure: the one function object whose code made the generator)

        found = [r for r in gc.get_referrers(code) if inspect.isfunction(r) and r.__code__ is code]
        fn = found[0] if len(found) == 1 else None
    if fn is None:
        return None
    positional = [name for name in code.co_varnames[:code.co_argcount]]
    keywords = list(code.co_varnames[code.co_argcount:n])

    def again():
        args = [copying.copy(given[a]) if a == bound else given[a] for a in positional]
        args += list(given.get(star, ())) if star else []
        return fn(*args, **{k: given[k] for k in keywords})

    return again


class _Live:
    """A one-shot generator read as a source: each read takes up to ``steps`` batches from the same live
    generator (the doctor observes it; the script's fit continues from where it stopped)."""

    def __init__(self, gen, steps: int | None):
        self.gen, self.steps, self.read = gen, steps, 0

    def __call__(self):
        def batches():
            for batch in itertools.islice(self.gen, self.steps):
                self.read += 1
                yield batch
        return batches()


@dataclass
class Fit:
    """What one ``Model.fit`` call was given, and where."""

    model: Any
    x: Any
    y: Any = None
    kwargs: dict = field(default_factory=dict)
    where: str = "?"
    strategy: str = ""

    @property
    def in_memory(self) -> bool:
        """Whether ``fit`` was given arrays (not a dataset, a PyDataset, a generator or an iterator)."""
        x = self.x
        return not (is_dataset(x) or is_pydataset(x) or inspect.isgenerator(x) or hasattr(x, "__next__"))

    @property
    def kind(self) -> str:
        x = self.x
        if is_dataset(x):
            return "a tf.data.Dataset"
        if is_pydataset(x):
            workers = getattr(x, "workers", 1) or 1
            processes = ", processes" if getattr(x, "use_multiprocessing", False) else ""
            return f"a {type(x).__name__} (PyDataset, workers={workers}{processes})"
        if inspect.isgenerator(x):
            return f"a generator from {x.__qualname__}()"
        if hasattr(x, "__next__"):
            return f"an iterator {type(x).__name__}"
        return "arrays in memory"

    def source(self) -> tuple[Any, str]:
        """A batch source the doctor can read several times, and a note on how it was made from ``x``."""
        x, steps = self.x, self.kwargs.get("steps_per_epoch")
        if is_dataset(x) and type(x).__name__ == "_RepeatDataset" and int(getattr(x, "_count", 0)) == -1:
            # fit(ds.repeat(), steps_per_epoch=N): one pass of what it repeats is an epoch, whose size the
            # doctor needs (a cache's size, a shuffle buffer's share of it)
            return x._input_dataset, "the dataset's trailing repeat() left out: the doctor reads one pass as an epoch"
        if is_dataset(x) or is_pydataset(x):
            return x, ""
        if inspect.isgenerator(x) or hasattr(x, "__next__"):
            again = remake(x)
            if again is not None:
                return ((lambda: itertools.islice(again(), steps)) if steps else again,
                        f"the generator is one-shot: the doctor made fresh ones by calling {x.__qualname__}() "
                        "again with the same arguments")
            return _Live(x, steps or 64), (
                f"the generator is one-shot and the doctor could not call {getattr(x, '__qualname__', 'it')}() "
                "again: it read the script's own generator (its A/B trials read later batches)")
        return self._arrays()

    def _arrays(self) -> tuple[Any, str]:
        """Arrays as Keras's ``fit`` reads them: its array adapter's ``tf.data`` pipeline (shuffled indices,
        a parallel gather, prefetch; its threads share the cores with the step), one pass an epoch. Where
        that adapter is not found (another Keras), ``from_tensor_slices(...).batch(...)``."""
        import tensorflow as tf  # noqa: PLC0415

        k, batch = self.kwargs, self.kwargs.get("batch_size") or 32
        try:
            from keras.src.trainers.data_adapters import get_data_adapter  # noqa: PLC0415

            # batch_size left out with steps_per_epoch given: Keras makes each batch len(x) / steps examples
            adapter = get_data_adapter(x=self.x, y=self.y, sample_weight=k.get("sample_weight"),
                                       batch_size=k.get("batch_size"), steps_per_epoch=k.get("steps_per_epoch"),
                                       shuffle=k.get("shuffle", True), class_weight=k.get("class_weight"))
            batch = adapter.batch_size or batch
            why = (f" (no batch_size given: Keras sizes batches to fill steps_per_epoch={k['steps_per_epoch']})"
                   if not k.get("batch_size") and k.get("steps_per_epoch") else "")
            return adapter.get_tf_dataset(), (
                f"arrays: read as Keras's fit reads them (its array adapter: batches of {batch}{why} gathered from "
                "the arrays in parallel, a new pass every epoch)")
        except (ImportError, AttributeError, TypeError):
            data = (self.x, self.y) if self.y is not None else self.x
            return tf.data.Dataset.from_tensor_slices(data).batch(batch), (
                f"arrays: read as tf.data.Dataset.from_tensor_slices(...).batch({batch})")

    def describe(self) -> str:
        """One line: the fit, its model, input and arguments."""
        k = self.kwargs
        parts = [f"{self.kind}"]
        parts += [f"{a}={k[a]!r}" for a in ("batch_size", "epochs", "steps_per_epoch", "validation_steps") if k.get(a)]
        if k.get("validation_data") is not None:
            parts.append("validation_data given")
        if k.get("class_weight"):
            parts.append("class_weight given")
        if self.strategy:
            parts.append(self.strategy)
        return f"model.fit at {self.where}: model {getattr(self.model, 'name', '?')!r}; " + ", ".join(parts)


def _strategy(model) -> str:
    s = getattr(model, "distribute_strategy", None)
    name = type(s).__name__ if s is not None else ""
    if not name or name.startswith("_Default") or name == "DefaultDistributionStrategy":
        return ""
    return f"{name} with {getattr(s, 'num_replicas_in_sync', '?')} replica(s)"


class Hooks:
    """``keras.Model.fit`` replaced while installed: its first call (in this process) goes to
    ``on_fit(Fit, run)`` where ``run()`` is the original fit; every later call runs as written."""

    def __init__(self, on_fit):
        self.on_fit, self.pid, self.taken = on_fit, os.getpid(), False
        self._original = None

    def install(self) -> Hooks:
        import keras  # noqa: PLC0415

        self._original = original = keras.Model.fit
        hooks = self

        def fit(model, x=None, y=None, *args, **kwargs):
            if hooks.taken or os.getpid() != hooks.pid or threading.current_thread().name == "kit-doctor":
                return original(model, x, y, *args, **kwargs)
            hooks.taken = True
            if args:  # fit's positional arguments after y: batch_size, epochs, ...
                names = list(inspect.signature(original).parameters)[3:]
                kwargs.update(zip(names, args))
                args = ()
            call = Fit(model, x, y, {k: v for k, v in kwargs.items() if k in FIT_ARGS},
                       where=place(user_frame()), strategy=_strategy(model))
            return hooks.on_fit(call, lambda: original(model, x, y, **kwargs))

        keras.Model.fit = fit
        return self

    def remove(self) -> None:
        if self._original is not None:
            import keras  # noqa: PLC0415

            keras.Model.fit = self._original
            self._original = None


def diagnose_fit(call: Fit, *, max_seconds: float, fresh: dict | None = None):
    """Diagnoses what ``call`` was given, on a copy of its model; bounded (``cli.bounded``). Returns
    ``(Diagnosis, note)``; ``fresh``: the compute ceiling timed in a fresh process (``kit.doctor.fresh``).
    A model built under a distribution strategy is copied outside it: Keras stops
    a generator-fed fit under ``MirroredStrategy`` with an error, not an epoch's end."""
    from kit.doctor.cli import bounded  # noqa: PLC0415
    from kit.doctor.diagnosis import diagnose  # noqa: PLC0415

    source, note = call.source()
    name = f"the input of {call.where}"
    if call.strategy:
        replicas = getattr(call.model.distribute_strategy, "num_replicas_in_sync", 1)
        note = "; ".join(filter(None, [note, (
            f"the model trains under {call.strategy}: the doctor trained its copy on one device with the whole "
            f"batch" + (f"; on {replicas} devices the compute ceiling is up to {replicas}x higher, so the "
                        "headroom is a lower bound" if replicas > 1 else ""))]))
    # Keras reads a finite dataset with a new iterator every epoch unless steps_per_epoch is given (then one
    # iterator runs on across epochs, as through a trailing repeat()). Arrays: Keras's adapter starts a new
    # pass whenever one ends, steps_per_epoch or not; its pipeline is Keras's, not the user's to change.
    arrays = call.in_memory
    per_epoch = True if arrays else False if call.kwargs.get("steps_per_epoch") or not is_dataset(call.x) else None
    return bounded(lambda: diagnose(source, call.model, max_seconds=max_seconds, name=name, per_epoch=per_epoch,
                                    pipeline=not arrays, fresh=fresh), max_seconds, name), note


#: The least share of an epoch validation must take to be a finding: its input slow while training's
#: is not, or whatever limits it.
VALIDATION_SHARE, VALIDATION_MUCH = 0.1, 0.25


def eval_rate(model, batch, *, seconds: float) -> float:
    """Examples/s of ``model.evaluate`` on ``batch`` replayed from memory (the weights are not changed)."""
    import tensorflow as tf  # noqa: PLC0415

    from kit.timing.batches import batch_size_of  # noqa: PLC0415

    data = tf.data.Dataset.from_tensors(batch).repeat()
    model.evaluate(data, steps=2, verbose=0)  # traces the test step
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        model.evaluate(data, steps=4, verbose=0)
        steps += 4
    return steps * batch_size_of(batch) / (time.perf_counter() - t0)


def validation(call: Fit, d, *, max_seconds: float) -> dict | None:
    """``validation_data`` timed apart: its input alone (a bounded read) and the model's evaluation step
    on one of its batches replayed, its time per epoch at the slower of the two and its share of the epoch,
    its own verdict; a ``validation_input`` finding where it takes ``VALIDATION_SHARE`` of the epoch or
    more. None without validation_data."""
    from kit.doctor.cli import bounded  # noqa: PLC0415
    from kit.doctor.findings import Finding  # noqa: PLC0415
    from kit.doctor.loader import measure_loader  # noqa: PLC0415
    from kit.doctor.sources import first_batch  # noqa: PLC0415
    from kit.timing.batches import known_length  # noqa: PLC0415

    v = call.kwargs.get("validation_data")
    if v is None:
        return None
    if isinstance(v, (tuple, list)):
        return {"line": "validation_data: arrays in memory, read at memory speed", "kind": "arrays"}
    val = Fit(call.model, v, kwargs={"steps_per_epoch": call.kwargs.get("validation_steps")})
    source, _ = val.source()
    name = f"the validation_data of {call.where}"

    def measure():
        batch, size = first_batch(source, name)
        return measure_loader(source, max_seconds=max_seconds / 2), eval_rate(call.model, batch, seconds=max_seconds / 4), size

    loader, evaluating, batch = bounded(measure, max_seconds, name)
    rate = loader["loader_examples_per_s"]
    rates = getattr(d, "rates", {})
    steps = call.kwargs.get("validation_steps") or known_length(v)
    train_steps = call.kwargs.get("steps_per_epoch") or known_length(call.x)
    fit, train_batch = rates.get("fit_examples_per_s"), rates.get("batch_size") or batch
    verdict = "input-bound" if rate < evaluating else "compute-bound"
    out: dict = {"kind": val.kind, "examples_per_s": rate, "evaluate_examples_per_s": evaluating, "verdict": verdict}
    line = (f"validation_data ({val.kind}): its input alone delivers {rate:,.1f} examples/s, the model evaluates "
            f"{evaluating:,.1f}/s on one of its batches replayed: {verdict}")
    if steps and train_steps and fit:
        t_val, t_train = steps * batch / min(rate, evaluating), train_steps * train_batch / fit
        share = t_val / (t_val + t_train)
        out.update(seconds=t_val, share=share)
        line += (f"; its {steps} steps of {batch} take about {t_val:,.1f} s an epoch beside {t_train:,.1f} s of "
                 f"training, {share:.0%} of the epoch")
        training_waits = getattr(d, "verdict", "") == "input-bound"
        # A finding where validation is a cause of its own: slow input while training's input is not what
        # limits (else the training input's fixes serve it too), or so many steps that it is a quarter of the epoch.
        if (share >= VALIDATION_SHARE and verdict == "input-bound" and not training_waits) or share >= VALIDATION_MUCH:
            if verdict == "input-bound":
                better, how = steps * batch / evaluating, "its input as fast as the model evaluates"
            else:
                better, how = t_val / 2, "validating every other epoch (validation_freq=2)"
            gain = (t_val + t_train) / (better + t_train)
            out["finding"] = Finding(
                "validation_input", f"validation_data ({val.kind}): {steps} steps of {batch}, {share:.0%} of each "
                f"epoch; its input {rate:,.1f}/s against evaluation {evaluating:,.1f}/s", gain,
                f"predicted: {how}, an epoch of {t_train:,.1f} s of training and {better:,.1f} s of validation",
                status="predicted", gain_low=1.0, gain_high=gain, where=call.where,
                fix=("give validation the training input's fixes" if verdict == "input-bound" else
                     "validate less: fewer validation_steps (one pass over the validation set) or validation_freq=N"))
    out["line"] = line
    return out


@dataclass(repr=False)
class Watch:
    """What ``watch()`` saw: the fit it diagnosed and the diagnosis (None until a fit is called)."""

    fit: Fit | None = None
    diagnosis: Any = None
    note: str = ""
    seconds: float = 0.0
    verdict: str = ""  # the diagnosis's verdict; where the budget ended first, the one measured by then (or "")

    def __str__(self) -> str:
        if self.fit is None:
            return "kit.doctor.watch: no model.fit was called inside the with block"
        head = f"kit doctor: {self.fit.describe()}" + (f"\n{self.note}" if self.note else "")
        return head if self.diagnosis is None else f"{head}\n{self.diagnosis}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        import html  # noqa: PLC0415

        if self.fit is None or self.diagnosis is None:
            return f"<p>{html.escape(str(self))}</p>"
        head = html.escape(self.fit.describe()) + (f"<br>{html.escape(self.note)}" if self.note else "")
        return f"<p><b>kit doctor</b>: {head}</p>" + self.diagnosis._repr_html_()


@contextlib.contextmanager
def watch(max_seconds: float = 60.0, *, run_fit: bool = False, show: bool = True):
    """Diagnoses the first ``model.fit`` called inside the ``with`` block, as written::

        with kit.doctor.watch(max_seconds=30) as seen:
            model.fit(DataGenerator(...), epochs=10)

    The fit's input and model are measured on a copy (the model's weights untouched) and the report is
    shown in the cell (``show``); then the fit runs as written only with ``run_fit=True`` (else ``fit``
    returns None). ``seen.diagnosis`` is the ``Diagnosis``. A source still delivering batches when the budget
    (and its margin) ends is slow, not stuck: ``seen.diagnosis`` is then None and ``seen.note`` says what was
    measured by then and what was left out (``seen.verdict`` the verdict, where the fits were measured).
    """
    from kit.doctor import progress  # noqa: PLC0415
    from kit.doctor.cli import OverBudget  # noqa: PLC0415

    seen = Watch()

    def on_fit(call: Fit, run):
        t0 = time.perf_counter()
        seen.fit = call
        try:
            seen.diagnosis, seen.note = diagnose_fit(call, max_seconds=max_seconds)
            seen.verdict = seen.diagnosis.verdict
        except OverBudget as e:  # slow, not stuck: what was measured, and what was left out
            seen.note, seen.verdict = f"{e}\n{e.partial}", str((progress.verdict_so_far() or ("",))[0])
        seen.seconds = time.perf_counter() - t0
        if show:
            try:
                from IPython.display import display  # noqa: PLC0415

                display(seen)
            except ImportError:
                print(seen)
        return run() if run_fit else None

    hooks = Hooks(on_fit).install()
    try:
        yield seen
    finally:
        hooks.remove()
