"""Runs a training script unchanged and records its epoch and step times (no kit import).

    python lab/doctor_scripts/epoch_timer.py --out TIMES.json [--ceiling] [--steps N] SCRIPT

Patches ``keras.Model.fit`` to add a callback that takes the clock at each epoch's start and end and at
the end of each training step, and ``keras.Model.train_on_batch`` (a custom loop) to take it after each
call; then ``runpy.run_path(SCRIPT, run_name="__main__")``. ``--ceiling``: the compute ceiling instead:
the first batch the script's first fit (or train_on_batch) would train on is taken and the same compiled
model is trained on it replayed from memory (``tf.data.Dataset.from_tensors(batch).repeat()``), ``--steps``
steps per epoch (default: the script's steps per epoch) for 3 epochs; then the script is stopped. Where
the script's fit traces its step with the batch dimension unknown (everything but a tf.data dataset
batched with drop_remainder), one step on the batch re-batched traces that step first, and the replay
runs it: a step traced with the batch size known can be faster, which no input fix gives.
A GradientTape loop's steps are timed as train_on_batch's are: a ``tf.function`` step (whose trace applied an
optimizer) called from the script, its first call's arguments replayed for the ceiling; an eager step at each
optimizer apply, the first dataset the script iterates giving its first batch from memory for the ceiling
(``loop_steps`` then, with ``ceiling``: truth.ceiling_step takes their median interval).
Writes TIMES.json: ``fits`` (one per fit call: ``epochs`` [[start, end, train_end]], ``steps`` [end of each
step], ``batch_size``), ``loop_steps`` (train_on_batch ends and batch sizes), ``ceiling`` (bool).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import runpy
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


class _Stop(Exception):
    pass


def _first_batch(x):
    import keras
    import tensorflow as tf

    if isinstance(x, tf.data.Dataset):
        return next(iter(x))
    if isinstance(x, keras.utils.PyDataset):
        return x[0]
    if hasattr(x, "__next__"):
        return next(x)
    raise TypeError(f"cannot take a batch from {type(x).__name__}")


def _length(x) -> int | None:
    """Batches per epoch of ``x`` where it knows (a PyDataset, a dataset of known cardinality), else None."""
    try:
        return int(len(x))
    except (TypeError, ValueError):
        return None


def _dynamic_batch(x) -> bool:
    """Whether the script's fit on ``x`` traces its step with the batch dimension unknown: a tf.data
    dataset whose element spec leaves it unknown, and everything else Keras adapts (a generator, a
    PyDataset, arrays: their adapters set it to None)."""
    import tensorflow as tf

    if isinstance(x, tf.data.Dataset):
        specs = tf.nest.flatten(x.element_spec)
        return any(len(s.shape) == 0 or s.shape[0] is None for s in specs if hasattr(s, "shape"))
    return True


def _array_batch(x, kwargs) -> int:
    """The batch Keras's fit makes of arrays: batch_size, else len(x) / steps_per_epoch rounded up where
    steps_per_epoch is given (Keras 3's array adapter), else 32."""
    steps = kwargs.get("steps_per_epoch")
    return int(kwargs.get("batch_size") or (math.ceil(len(x) / steps) if steps else 32))


def _size(batch) -> int:
    x = batch[0] if isinstance(batch, (tuple, list)) else batch
    while isinstance(x, (tuple, list, dict)):
        x = list(x.values())[0] if isinstance(x, dict) else x[0]
    return int(x.shape[0])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--ceiling", action="store_true")
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("script")
    a = p.parse_args(argv)

    import keras
    import tensorflow as tf

    record = {"fits": [], "loop_steps": [], "loop_batch": [], "ceiling": a.ceiling, "script": a.script}

    class Clock(keras.callbacks.Callback):
        def __init__(self, fit):
            super().__init__()
            self.fit = fit

        def on_epoch_begin(self, epoch, logs=None):
            self.fit["epochs"].append([time.perf_counter(), None, None])

        def on_train_batch_end(self, batch, logs=None):
            t = time.perf_counter()
            self.fit["steps"].append(t)
            self.fit["epochs"][-1][2] = t

        def on_epoch_end(self, epoch, logs=None):
            self.fit["epochs"][-1][1] = time.perf_counter()

    original_fit = keras.Model.fit
    original_tob = keras.Model.train_on_batch

    def replay(model, batch, steps, dynamic=True):
        batch = tuple(batch) if isinstance(batch, (tuple, list)) else batch
        if dynamic:
            # The script's fit traces its step with the batch dimension unknown (Keras does so for a
            # generator, a PyDataset, arrays, and tf.data batched without drop_remainder); a replay traced
            # with it known can run faster (an LSTM's step 12 ms against 17 ms here), which is no input.
            # One step on the batch re-batched (its size unknown) traces the step the script's fit runs;
            # the replay below is dispatched to that trace.
            original_fit(model, tf.data.Dataset.from_tensor_slices(batch).batch(_size(batch)), epochs=1, verbose=0)
        ds = tf.data.Dataset.from_tensors(batch).repeat()
        fit = {"epochs": [], "steps": [], "batch_size": _size(batch), "dynamic_batch": dynamic}
        record["fits"].append(fit)
        original_fit(model, ds, steps_per_epoch=steps, epochs=3, verbose=0, callbacks=[Clock(fit)])

    def fit(self, x=None, y=None, *args, **kwargs):
        if a.ceiling:
            batch = _first_batch(x) if y is None else (x[: _array_batch(x, kwargs)], y[: _array_batch(x, kwargs)])
            steps = a.steps or kwargs.get("steps_per_epoch") or _length(x) or 20
            replay(self, batch, int(steps), dynamic=_dynamic_batch(x))
            raise _Stop
        fit = {"epochs": [], "steps": [], "batch_size": None}
        record["fits"].append(fit)
        given = kwargs.pop("callbacks", None) or []
        # Keras takes one callback given alone too (it flattens the argument)
        callbacks = (list(given) if isinstance(given, (list, tuple)) else [given]) + [Clock(fit)]
        return original_fit(self, x, y, *args, callbacks=callbacks, **kwargs)

    def train_on_batch(self, x=None, y=None, *args, **kwargs):
        if a.ceiling:
            replay(self, (x, y), a.steps or 20, dynamic=False)  # train_on_batch traces each batch's own shape
            raise _Stop
        out = original_tob(self, x, y, *args, **kwargs)
        record["loop_steps"].append(time.perf_counter())
        record["loop_batch"].append(int(len(x)))
        return out

    # A GradientTape loop, called from the script's own file: a tf.function step (found by the optimizer its
    # trace applies) has each call timed as train_on_batch's are, and for the ceiling its first call's
    # arguments replayed (its first call traced it) in 3 epochs of --steps calls (default 20); an eager step
    # (the optimizer applied outside any tf.function) has each apply timed, and for the ceiling the first
    # tf.data dataset the script iterates gives its first batch again and again, from memory, for 3 * --steps
    # steps after the first.
    from tensorflow.python.data.ops import dataset_ops
    from tensorflow.python.eager.polymorphic_function import polymorphic_function

    original_call = polymorphic_function.Function.__call__
    original_apply = keras.optimizers.Optimizer.apply
    original_iter = dataset_ops.DatasetV2.__iter__
    script_file = os.path.abspath(a.script)
    step_fns: set = set()
    calling: list = []
    replaced: list = []

    def from_script(depth: int) -> bool:
        frame = sys._getframe(2)
        for _ in range(depth):
            if frame is None:
                return False
            if os.path.abspath(frame.f_code.co_filename) == script_file:
                return True
            frame = frame.f_back
        return False

    def apply(optimizer, *args, **kwargs):
        if tf.inside_function():
            if calling:
                step_fns.add(id(calling[0]))
            return original_apply(optimizer, *args, **kwargs)
        out = original_apply(optimizer, *args, **kwargs)
        if not calling and from_script(4):  # an eager step, ending here
            record["loop_steps"].append(time.perf_counter())
            if a.ceiling and len(record["loop_steps"]) > 3 * (a.steps or 20):
                raise _Stop
        return out

    def iterate(ds):
        if a.ceiling and not replaced and not tf.inside_function() and from_script(1):
            first = next(original_iter(ds))
            replaced.append(first)

            def again():
                while True:
                    yield first
            return again()
        return original_iter(ds)

    def call(fn, *args, **kwargs):
        if tf.inside_function() or calling or not from_script(1):
            return original_call(fn, *args, **kwargs)
        calling.append(fn)
        try:
            out = original_call(fn, *args, **kwargs)
        finally:
            calling.pop()
        if id(fn) not in step_fns:
            return out
        if a.ceiling:
            steps = a.steps or 20
            fit = {"epochs": [], "steps": [], "batch_size": _size(args[0]) if args else None, "tape_step": True}
            record["fits"].append(fit)
            for _ in range(3):
                fit["epochs"].append([time.perf_counter(), None, None])
                for _ in range(steps):
                    original_call(fn, *args, **kwargs)
                    fit["steps"].append(time.perf_counter())
                fit["epochs"][-1][1] = fit["epochs"][-1][2] = time.perf_counter()
            raise _Stop
        record["loop_steps"].append(time.perf_counter())
        record["loop_batch"].append(_size(args[0]) if args else 0)
        return out

    keras.optimizers.Optimizer.apply = apply
    polymorphic_function.Function.__call__ = call
    dataset_ops.DatasetV2.__iter__ = iterate
    keras.Model.fit = fit
    keras.Model.train_on_batch = train_on_batch
    keras.optimizers.Optimizer.apply = apply
    polymorphic_function.Function.__call__ = call
    sys.argv = [a.script]
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.script)))
    t0 = time.perf_counter()
    try:
        runpy.run_path(a.script, run_name="__main__")
    except _Stop:
        pass
    finally:
        record["wall_s"] = time.perf_counter() - t0
        tmp = a.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(record, f)
        os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
