"""Custom training loops: a script that iterates a ``tf.data.Dataset`` in Python instead of calling ``fit``
has each step's wait for its next batch timed on the training thread (the first step, which traces the
step, and each epoch's first batch apart), then its dataset diagnosed without a model."""

from __future__ import annotations

import math
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from kit.doctor import python, verdicts
from kit.doctor.run import place
from kit.doctor.sources import is_library

_KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The share of the budget a loop is timed for (at least ``MIN_STEPS`` steps after the first).
LOOP_SHARE, MIN_STEPS = 0.3, 10
#: The share of a loop's input wait its hottest function of the user's must hold to be named as the cause.
HOT_SHARE = 0.25
#: ``Model.predict`` calls between timed steps that make a ``predict_per_step`` finding, and the trials of
#: ``predict_on_batch`` it is timed against.
PREDICT_CALLS, PREDICT_TRIALS = 3, 5
#: ``predict_on_batch`` is tried on a ``predict`` input of at most this many bytes (one forward of it all).
PREDICT_MAX_BYTES = 64 * 2**20
#: A train_on_batch loop's compute ceiling: its last batch replayed from memory to a copy of the model, at
#: least ``CEILING_STEPS`` steps after one that traces, for up to this share of the budget.
CEILING_SHARE, CEILING_STEPS = 0.15, 3


@dataclass
class Loop:
    """The timings of one custom loop: per step, the wait for the batch and the work after it."""

    where: str
    waits: list[float] = field(default_factory=list)  # steady steps: seconds in next()
    work: list[float] = field(default_factory=list)  # seconds between a batch's arrival and the next request
    starts: list[float] = field(default_factory=list)  # each epoch's first batch, after the first epoch's
    first: float = math.nan  # the very first batch (iterator start-up)
    epochs: int = 0
    t0: float = field(default_factory=time.perf_counter)
    diagnosis: Any = None
    left_out: str = ""
    profile: Any = None  # cProfile of the training thread between steps (a train_on_batch loop)
    hot: Any = None  # python.Hot from that profile
    predicts: list[float] = field(default_factory=list)  # seconds of each Model.predict called between timed steps
    predict_where: str = ""  # the user's line calling it
    predict_call: Any = None  # (model, x) of the last such call, for predict_on_batch's A/B
    on_batch: float = math.nan  # predict_on_batch on that input, seconds (median of PREDICT_TRIALS after one)
    between: list[float] = field(default_factory=list)  # per steady step: seconds in Keras model calls between steps
    replays: list[float] = field(default_factory=list)  # the step on the last batch replayed (a copy), after its trace
    ceiling_left_out: str = ""  # why the replayed step was not timed

    @property
    def total(self) -> float:
        """The loop's timed seconds: the waits, the steps' work and the Keras calls between them."""
        return sum(self.waits) + sum(self.work) + sum(self.between)

    @property
    def wait_share(self) -> float:
        return sum(self.waits) / self.total if self.total > 0 else math.nan

    @property
    def headroom(self) -> float:
        """The loop's median step and wait for input over its step on one batch replayed from memory (as the
        doctor's fits measure theirs): what the loop would gain were every batch ready and as cheap to train
        on as one already in memory; NaN where the step was not replayed."""
        if not self.replays or not self.waits or not self.work:
            return math.nan
        return (statistics.median(self.waits) + statistics.median(self.work)) / max(1e-9, statistics.median(self.replays))

    @property
    def verdict(self) -> str:
        h = self.headroom
        if not math.isfinite(h):  # no replay (a GradientTape or tf.function step): from the wait's share
            w = self.wait_share
            if not math.isfinite(w):
                return "not measured"
            h = 1 / max(1e-9, 1 - w)  # the loop's speed-up were every batch ready when asked for
        if h >= verdicts.INPUT_BOUND_HEADROOM:
            return "input-bound"
        return "compute-bound" if h < verdicts.COMPUTE_BOUND_HEADROOM else "balanced"

    def summary(self) -> str:
        steps = len(self.waits)
        text = (f"custom loop at {self.where}: input wait {self.wait_share:.0%} of {steps} steps "
                f"({1e3 * statistics.median(self.waits):,.1f} ms median wait, "
                f"{1e3 * statistics.median(self.work):,.1f} ms median work per step)")
        if self.replays:
            text += (f"; the step on its last batch replayed from memory to a copy of the model: "
                     f"{1e3 * statistics.median(self.replays):,.1f} ms (median of {len(self.replays)}), headroom "
                     f"{self.headroom:,.2f}x (the median wait and step over it)")
        elif self.ceiling_left_out:
            text += f"; the verdict from the wait's share alone: {self.ceiling_left_out}"
        text += f": {self.verdict}"
        if sum(self.between) > 0:
            text += (f"; Keras model calls between the steps (predict, evaluate, test_on_batch) took "
                     f"{sum(self.between) / self.total:.0%} of the "
                     f"time, not counted as input wait")
        text += f"; the first step (start-up and tracing) waited {1e3 * self.first:,.0f} ms for its batch, left out"
        if self.starts:
            text += (f"; each later epoch's first batch waited {1e3 * statistics.median(self.starts):,.0f} ms "
                     f"(median of {len(self.starts)}), left out")
        return text

    def predict_finding(self) -> list:
        """``predict_per_step``: ``Model.predict`` called on one batch between the loop's steps (a GAN's
        generator, an agent's policy), against ``predict_on_batch`` timed on the same input here: the steps'
        time less the difference, predicted."""
        steps = len(self.waits)
        if len(self.predicts) < PREDICT_CALLS or not steps or not math.isfinite(self.on_batch):
            return []
        from kit.doctor.findings import NOISE, Finding  # noqa: PLC0415

        total = self.total
        per_call = statistics.median(self.predicts)
        saved = len(self.predicts) * max(0.0, per_call - self.on_batch)
        gain = total / max(1e-9, total - min(saved, 0.95 * total))
        if gain < NOISE:
            return []
        return [Finding(
            "predict_per_step",
            f"Model.predict called {len(self.predicts) / steps:,.1f} times a step on one input in memory, "
            f"{1e3 * per_call:,.1f} ms a call (median of {len(self.predicts)}), {saved / total:.0%} of the loop's time; "
            f"predict_on_batch on the same input here: {1e3 * self.on_batch:,.1f} ms",
            gain, "predicted: the loop's timed steps less each call's difference from predict_on_batch, timed on "
            "the loop's own input", status="predicted", gain_low=1 + (gain - 1) / 2, gain_high=gain,
            where=self.predict_where,
            fix="call model.predict_on_batch(x) (or model(x, training=False)) on an input held in memory: "
                "Model.predict builds a data adapter, callbacks and a progress bar on every call, and splits the "
                "input into batches of 32")]

    def findings(self) -> list:
        """From the profile of the loop's input (a train_on_batch loop): the user's function that prepares
        the batches, its Python as the cause and its work computed once, predicted from the share of the
        input wait profiled there (at least ``HOT_SHARE`` of it); and ``predict_per_step``."""
        found = self.predict_finding()
        hot = self.hot
        if (hot is None or not getattr(hot, "where", "") or self.verdict != "input-bound"
                or not hot.share >= HOT_SHARE):
            return found
        from kit.doctor.findings import Finding  # noqa: PLC0415

        share = hot.share * self.wait_share  # of the loop's time, in the function that prepares the batches
        gain = 1 / max(0.05, 1 - share)
        # up to the headroom: a batch prepared once is read from memory, as the replayed step's batch was
        high = max(gain, self.headroom) if math.isfinite(self.headroom) else gain
        ops = python.ops_for(hot.text)
        what = hot.where.split(" in ")[-1]
        return found + [
            Finding("compute_once", f"the loop waits {self.wait_share:.0%} of each step, {hot.share:.0%} of that wait "
                    f"profiled in {what}, which prepares its batch", gain,
                    "predicted: batches prepared once (saved, or cached in memory) and read back, the wait gone: "
                    "the loop's steps alone (at most the headroom over its step replayed from memory)", status="predicted",
                    gain_low=1 + (gain - 1) / 2, gain_high=high,
                    where=hot.where, fix="compute the batches' deterministic work once (np.save the features, read them "
                    "back with np.load(mmap_mode='r')), or feed the loop from a tf.data pipeline that caches it"),
            Finding("python_in_pipeline", f"{what} is Python on the training thread: the step waits while it runs",
                    gain, "predicted: at most the whole wait, the work done in TensorFlow ops or in parallel",
                    status="predicted", gain_low=1.0, gain_high=gain, where=hot.where,
                    fix=(f"do it in TensorFlow ops: {ops}" if ops else "do it in TensorFlow ops (a tf.data map)")
                    + ", in a tf.data pipeline with num_parallel_calls=tf.data.AUTOTUNE and prefetch")]

    def time_on_batch(self) -> None:
        """``on_batch``: ``predict_on_batch`` on the input of the loop's last ``Model.predict`` call, after one
        call (tracing), median of ``PREDICT_TRIALS``."""
        if len(self.predicts) < PREDICT_CALLS or self.predict_call is None:
            return
        model, x = self.predict_call
        try:
            model.predict_on_batch(x)
            times = []
            for _ in range(PREDICT_TRIALS):
                t0 = time.perf_counter()
                model.predict_on_batch(x)
                times.append(time.perf_counter() - t0)
        except Exception:  # noqa: BLE001  (an input predict_on_batch does not take: no A/B, no finding)
            return
        self.on_batch = statistics.median(times)

    def __str__(self) -> str:
        out = self.summary()
        for f in self.findings():
            out += f"\n  {f.code} at {f.where}: {f.expected_gain:,.2f}x predicted; fix: {f.fix}"
        if self.diagnosis is not None:
            out += f"\nits dataset, diagnosed without the model:\n{self.diagnosis}"
        elif self.left_out:
            out += f"\n{self.left_out}"
        return out

    def as_dict(self) -> dict:
        d: dict[str, Any] = {"loop": self.where, "input_wait_share": self.wait_share, "steps": len(self.waits),
             "wait_ms_median": 1e3 * statistics.median(self.waits) if self.waits else None,
             "work_ms_median": 1e3 * statistics.median(self.work) if self.work else None,
             "first_batch_ms": 1e3 * self.first, "epoch_start_ms": [1e3 * s for s in self.starts],
             "headroom": self.headroom if self.replays else None,
             "ceiling_step_ms": 1e3 * statistics.median(self.replays) if self.replays else None,
             "between_share": sum(self.between) / self.total if self.between and self.total > 0 else 0.0,
             "summary": self.summary()}
        if self.diagnosis is not None:
            d.update(self.diagnosis.as_dict())
        d["findings"] = d.get("findings", []) + [f.row() | {"line": f.evidence} for f in self.findings()]
        d["verdict"] = self.verdict  # the loop's own measurement decides
        return d


def _as_tensor(x):
    """A NumPy array as a tensor, floats in Keras's float type (as Keras converts them); anything else as it is."""
    if not isinstance(x, np.ndarray):
        return x
    import keras  # noqa: PLC0415

    return tf.convert_to_tensor(x, dtype=keras.backend.floatx() if x.dtype.kind == "f" else None)


def _user_caller(frame, depth: int = 4):
    """The user's frame calling into a library within ``depth`` frames of ``frame`` (an optimizer's
    ``apply_gradients`` calling its ``apply``), or None where a library's own code (Keras's fit) is the caller."""
    for _ in range(depth):
        if frame is None:
            return None
        if python._user(frame.f_code.co_filename):
            return frame
        if "/trainers/" in frame.f_code.co_filename:
            return None
        frame = frame.f_back
    return None


def _in_memory(x) -> bool:
    """``x`` is an array or tensor (or a list or dict of them) of at most ``PREDICT_MAX_BYTES`` in all, not a
    dataset or a generator: what ``predict_on_batch`` takes as it is, in one forward."""
    parts = list(x.values()) if isinstance(x, dict) else list(x) if isinstance(x, (list, tuple)) else [x]
    if not parts or not all(getattr(a, "shape", None) is not None and hasattr(a, "dtype") for a in parts):
        return False
    shapes = [tuple(a.shape) for a in parts]
    if not all(shape and shape[0] is not None for shape in shapes):
        return False
    return sum(int(getattr(a, "nbytes", 0) or math.prod(a.shape) * a.dtype.size) for a in parts) <= PREDICT_MAX_BYTES


class _Timed:
    """An iterator over a dataset that times each ``next`` for its ``Loop``."""

    def __init__(self, it, loop: Loop, hooks: LoopHooks):
        self.it, self.loop, self.hooks = it, loop, hooks
        self.last: float | None = None
        self.n = 0
        self.dataset = None

    def __iter__(self):
        return self

    def __next__(self):
        t0 = time.perf_counter()
        if self.last is not None and self.hooks.timing:
            self.loop.work.append(t0 - self.last)
        batch = next(self.it)  # StopIteration ends the epoch
        t1 = time.perf_counter()
        if self.hooks.timing:
            if self.n == 0 and math.isnan(self.loop.first):
                self.loop.first = t1 - t0
            elif self.n == 0:
                self.loop.starts.append(t1 - t0)
            else:
                self.loop.waits.append(t1 - t0)
        self.n += 1
        self.last = time.perf_counter()
        self.hooks.check(self.loop, self.dataset)
        return batch

    def get_next(self):
        return self.__next__()


class LoopHooks:
    """``tf.data.Dataset.__iter__`` replaced while installed: an iteration started by the user's own code,
    eagerly, on the main thread of this process, is timed; ``on_loop(Loop)`` gets it once measured."""

    def __init__(self, on_loop, *, max_seconds: float):
        self.on_loop, self.max_seconds, self.pid = on_loop, max_seconds, os.getpid()
        self.loop: Loop | None = None
        self.dataset = None
        self.timing = True
        self.reported = False
        self._original = None

    def install(self) -> LoopHooks:
        from tensorflow.python.data.ops import dataset_ops  # noqa: PLC0415  (the class tf.data.Dataset names)

        cls = dataset_ops.DatasetV2
        self._original = original = cls.__iter__
        hooks = self

        def __iter__(ds):
            it = original(ds)
            caller = sys._getframe(1).f_code.co_filename
            if (hooks.reported or os.getpid() != hooks.pid or threading.current_thread() is not threading.main_thread()
                    or caller.startswith("<") or is_library(caller) or os.path.abspath(caller).startswith(_KIT)
                    or tf.inside_function()):
                return it
            if hooks.loop is None:
                hooks.loop = Loop(place(sys._getframe(1)))
            timed = _Timed(it, hooks.loop, hooks)
            timed.dataset = ds
            return timed

        cls.__iter__ = __iter__
        return self

    def check(self, loop: Loop, ds, *, ended: bool = False) -> None:
        """Reports once the loop has been timed long enough (``LOOP_SHARE`` of the budget, ``MIN_STEPS``),
        or as the script ends (``ended``) with at least two steps timed."""
        self.dataset = ds
        long_enough = len(loop.waits) >= MIN_STEPS and time.perf_counter() - loop.t0 >= LOOP_SHARE * self.max_seconds
        if self.reported or not (long_enough or (ended and len(loop.waits) >= 2)):
            return
        self.reported, self.timing = True, False
        loop.time_on_batch()
        if ds is None:  # a train_on_batch loop: its input is the user's Python, profiled between the steps
            loop.hot = python.hot_from(loop.profile, sum(loop.waits) + (0 if math.isnan(loop.first) else loop.first))
            self.replay(loop)
            self.on_loop(loop)
            return
        left = max(1.0, self.max_seconds - (time.perf_counter() - loop.t0))
        try:
            from kit.doctor.cli import bounded  # noqa: PLC0415
            from kit.doctor.diagnosis import diagnose  # noqa: PLC0415

            loop.diagnosis = bounded(lambda: diagnose(ds, None, max_seconds=left, name=f"the dataset of {loop.where}"),
                                     left, loop.where)
        except Exception as e:  # noqa: BLE001  (the loop's own timings still stand)
            from kit.doctor.sources import describe_error  # noqa: PLC0415

            loop.left_out = f"its dataset was not diagnosed: {describe_error(e)}"
        self.on_loop(loop)

    def replay(self, loop: Loop) -> None:
        """The loop's compute ceiling: its last ``train_on_batch`` call replayed on a copy of the model (one
        call to trace, then at least ``CEILING_STEPS`` for up to ``CEILING_SHARE`` of the budget), as the fits'
        ceiling replays a batch; a model that cannot be copied is trained in place and put back
        (``copying.borrow``). Only for train_on_batch loops: a GradientTape step is the user's own function."""
        call = getattr(self, "last_call", None)
        if call is None:
            loop.ceiling_left_out = "the step is the script's own function (a GradientTape), not replayed"
            return
        from kit.doctor.copying import copy_or_borrow, lending  # noqa: PLC0415
        from kit.doctor.sources import ModelError, describe_error  # noqa: PLC0415

        model, args, kwargs = call
        train = getattr(self, "_step_original", None) or type(model).train_on_batch
        try:
            # The batch in memory as tensors, as the fits' ceiling has it (``from_tensors``): NumPy arrays would be
            # copied into tensors at every call, work the loop's input does (a float64 batch, a large one).
            args, kwargs = tf.nest.map_structure(_as_tensor, (tuple(args), dict(kwargs)))
            batch = (args[0], args[1] if len(args) > 1 else kwargs.get("y")) if args else (kwargs.get("x"), kwargs.get("y"))
            with lending():
                copy = copy_or_borrow(model, batch)
                train(copy, *args, **kwargs)  # traces its step
                t_end = time.perf_counter() + CEILING_SHARE * self.max_seconds
                while len(loop.replays) < CEILING_STEPS or time.perf_counter() < t_end:
                    t0 = time.perf_counter()
                    train(copy, *args, **kwargs)
                    loop.replays.append(time.perf_counter() - t0)
                    if len(loop.replays) >= 10 * CEILING_STEPS:
                        break
        except (ModelError, ValueError, TypeError, RuntimeError) as e:
            loop.replays = []
            loop.ceiling_left_out = f"the step was not replayed ({describe_error(e)})"

    def install_steps(self) -> LoopHooks:
        """The training steps of a loop that feeds them batches from its own Python (a generator, a reader)
        timed too: ``keras.Model.train_on_batch``; an optimizer's ``apply`` called eagerly (a
        ``tf.GradientTape`` loop without ``tf.function``); a ``tf.function`` whose trace applied an
        optimizer (a ``@tf.function`` train step), each called from the user's code. The time between one
        step's return and the next step's call is the input wait, profiled (``cProfile``, on the training
        thread, between steps only), which names the user's function that prepares the batches."""
        import cProfile  # noqa: PLC0415

        import keras  # noqa: PLC0415
        from tensorflow.python.eager.polymorphic_function import polymorphic_function  # noqa: PLC0415

        hooks = self
        state: dict = {"last": None, "profile": cProfile.Profile(), "n": 0}
        steps: set = set()  # the tf.functions whose trace applied an optimizer: training steps
        calling: list = []  # the tf.functions called from user code, being run (traced) now

        def ours() -> bool:
            return not hooks.reported and os.getpid() == hooks.pid and threading.current_thread() is threading.main_thread()

        def begin(frame, t0: float) -> Loop:
            """A step of the loop at ``frame`` began at ``t0``: the time since the last one ended, its wait."""
            if hooks.loop is None:
                hooks.loop = Loop(place(frame))
                hooks.loop.profile = state["profile"]
            loop = hooks.loop
            keras_s = state.pop("keras", 0.0)  # Keras model calls between the steps: work, not input
            if state["last"] is not None:
                state["profile"].disable()
                gap = max(0.0, t0 - state["last"] - keras_s)
                if state["n"] == 1:
                    loop.first = gap
                else:
                    loop.waits.append(gap)
                    loop.between.append(keras_s)
            return loop

        def end(loop: Loop, t0: float, traced: bool = False) -> None:
            state["n"] += 1
            if state["n"] > 1 and not traced:  # a step that traced its model's train function is start-up, not work
                loop.work.append(time.perf_counter() - t0)
            hooks.check(loop, None)
            state["last"] = time.perf_counter()
            state["tape"] = None
            if not hooks.reported:
                state["profile"].enable()

        def timed(call, frame, t0: float | None = None, traced: bool = False):
            """``call()`` timed as (the end of) one training step of the loop at ``frame``, begun at ``t0``;
            ``traced``: the step traces its model's train function first (its time left out of the work)."""
            t0 = time.perf_counter() if t0 is None else t0
            loop = begin(frame, t0)
            result = call()
            end(loop, t0, traced)
            return result

        self._step_original = train_original = keras.Model.train_on_batch

        def train_on_batch(model, *args, **kwargs):
            if not ours():
                return train_original(model, *args, **kwargs)
            hooks.model = model
            hooks.last_call = (model, args, kwargs)  # the batch the loop's ceiling replays
            # a model's first train_on_batch builds and traces its train function (a GAN's adversarial model:
            # tens of seconds), start-up like the loop's first step
            traced = getattr(model, "train_function", None) is None
            return timed(lambda: train_original(model, *args, **kwargs), sys._getframe(1), traced=traced)

        self._apply_original = apply_original = keras.optimizers.Optimizer.apply

        def apply(optimizer, *args, **kwargs):
            if tf.inside_function():  # traced: the tf.function calling it is a training step
                if calling:
                    steps.add(id(calling[0]))
                return apply_original(optimizer, *args, **kwargs)
            frame = _user_caller(sys._getframe(1))
            if frame is None or not ours() or state.get("kind", "apply") != "apply":
                return apply_original(optimizer, *args, **kwargs)
            state["kind"] = "apply"
            return timed(lambda: apply_original(optimizer, *args, **kwargs), frame, state.get("tape"))

        # An eager step begins where its tape does (the forward and backward passes are the step's work).
        self._tape_original = tape_original = tf.GradientTape.__enter__

        def __enter__(tape):
            if (state.get("tape") is None and state.get("kind", "apply") == "apply" and not tf.inside_function()
                    and ours() and python._user(sys._getframe(1).f_code.co_filename)):
                state["tape"] = time.perf_counter()
                state["profile"].disable()
            return tape_original(tape)

        self._call_original = call_original = polymorphic_function.Function.__call__

        def __call__(fn, *args, **kwargs):
            caller = sys._getframe(1)
            if tf.inside_function() or not python._user(caller.f_code.co_filename) or not ours():
                return call_original(fn, *args, **kwargs)
            if id(fn) in steps and state.get("kind", "function") == "function":
                state["kind"] = "function"
                return timed(lambda: call_original(fn, *args, **kwargs), caller)
            calling.append(fn)
            try:
                return call_original(fn, *args, **kwargs)
            finally:
                calling.pop()

        self._predict_original = predict_original = keras.Model.predict

        def between(caller) -> bool:
            """A Keras model call from the user's code between two timed steps (not the doctor's own)."""
            return (ours() and hooks.loop is not None and state["last"] is not None and hooks.timing
                    and python._user(caller.f_code.co_filename))

        def counted(original):
            """``original`` (a Keras model method) timed as work between the steps where ``between``."""
            def call(model, *args, **kwargs):
                if not between(sys._getframe(1)):
                    return original(model, *args, **kwargs)
                t0 = time.perf_counter()
                try:
                    return original(model, *args, **kwargs)
                finally:
                    state["keras"] = state.get("keras", 0.0) + time.perf_counter() - t0
            return call

        def predict(model, x, *args, **kwargs):
            """Timed where the user's code calls it between two timed steps: work, not input; on an input held
            in memory, also for ``predict_per_step``."""
            caller = sys._getframe(1)
            if not between(caller):
                return predict_original(model, x, *args, **kwargs)
            t0 = time.perf_counter()
            try:
                result = predict_original(model, x, *args, **kwargs)
            finally:
                state["keras"] = state.get("keras", 0.0) + time.perf_counter() - t0
            if _in_memory(x):
                hooks.loop.predicts.append(time.perf_counter() - t0)
                hooks.loop.predict_where = hooks.loop.predict_where or place(caller)
                hooks.loop.predict_call = (model, x)
            return result

        self._between_originals = {name: getattr(keras.Model, name)
                                   for name in ("evaluate", "test_on_batch", "predict_on_batch")}
        for name, original in self._between_originals.items():
            setattr(keras.Model, name, counted(original))

        keras.Model.train_on_batch = train_on_batch
        keras.Model.predict = predict
        keras.optimizers.Optimizer.apply = apply
        polymorphic_function.Function.__call__ = __call__
        tf.GradientTape.__enter__ = __enter__
        return self

    def remove(self) -> None:
        if self._original is not None:
            from tensorflow.python.data.ops import dataset_ops  # noqa: PLC0415

            dataset_ops.DatasetV2.__iter__ = self._original
            self._original = None
        if getattr(self, "_step_original", None) is not None:
            import keras  # noqa: PLC0415
            from tensorflow.python.eager.polymorphic_function import polymorphic_function  # noqa: PLC0415

            keras.Model.train_on_batch = self._step_original
            keras.Model.predict = self._predict_original
            for name, original in self._between_originals.items():
                setattr(keras.Model, name, original)
            keras.optimizers.Optimizer.apply = self._apply_original
            polymorphic_function.Function.__call__ = self._call_original
            tf.GradientTape.__enter__ = self._tape_original
            self._step_original = None
