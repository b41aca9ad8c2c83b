"""Timing a training run: ``StepTimer`` (each step's wait for input split out), ``fit`` (``model.fit``
timed epoch by epoch, resumable mid-epoch) and ``resume_point``. Imports Keras and TensorFlow.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from typing import Any, Iterator

import keras
import pandas as pd
import tensorflow as tf

from kit.epochs import epoch_of
from kit.epochs.datasets import iterator_checkpoint
from kit.timing.batches import batch_size_of, iterate, known_length
from kit.timing.rates import rss_mb
from kit.util import check_int


class StepTimer(keras.callbacks.Callback):
    """Keras callback: per training step, the total time and the time waiting for input.

    Keras fetches each batch inside its compiled train function, where a callback cannot see the
    wait; so feed ``model.fit`` through ``timer.wrap(data)``: each step the callback pulls the next
    batch from ``data`` and times the pull, and the step then reads that batch. Without ``wrap``
    only step times are recorded (``wait_s`` NaN).

    Example:
        >>> timer = StepTimer()
        >>> model.fit(timer.wrap(loader), epochs=2, callbacks=[timer])
        >>> timer.epochs()   # one row per epoch, with input_share
    """

    def __init__(self) -> None:
        super().__init__()
        self._rows: list[dict] = []
        self._epoch_rows: list[dict] = []
        self._rss: dict[int, float] = {}  # epoch -> this process's resident memory (MB) at its end
        self._epoch = 0
        self._epoch_t0: float | None = None
        self._t0 = 0.0
        self._begin = 0
        self._source: Any = None  # what wrap() was given: the batches this timer pulls
        self._it: Any = None  # the epoch's iterator over _source
        self._pending_wait = math.nan
        self._pending_examples: float = math.nan
        self._pending_hook = 0.0

    @property
    def _wrapped(self) -> bool:
        return self._source is not None

    def wrap(self, data: Any):
        """``data`` (any re-iterable batch source; a one-shot generator lasts one epoch) as a
        ``tf.data.Dataset`` whose batch pulls this timer times. The pulled batch reaches the step
        through a variable the dataset reads: no Python function on the step's path. Needs
        ``steps_per_execution=1`` and one device."""
        # The first two batches, as Keras reads a generator's: a dimension past the batch's that differs between
        # them (sequences padded to each batch's longest) is left unknown in the spec.
        if isinstance(data, Iterator):  # one-shot: peek, then put the batches back
            heads = [next(data)]
            heads += [b for b in itertools.islice(data, 1)]
            data = itertools.chain(heads, data)
        else:
            it = iterate(data)
            try:
                heads = [next(it)] + list(itertools.islice(it, 1))
            finally:
                close = getattr(it, "close", None)
                if close is not None:
                    close()
        first, *more = [tf.nest.map_structure(tf.convert_to_tensor, h) for h in heads]
        self._source = data
        self._slots = tf.nest.map_structure(
            lambda t: tf.Variable(t, trainable=False, shape=tf.TensorShape(None)), first)
        self._has_batch = tf.Variable(False, trainable=False)
        slots, has_batch = self._slots, self._has_batch
        ds = tf.data.Dataset.from_tensors(0).repeat()
        ds = ds.take_while(lambda _: has_batch.read_value())
        def spec(t, *others):
            dims = [d if all(len(o.shape) == len(t.shape) and o.shape[i] == d for o in others) else None
                    for i, d in enumerate(t.shape) if i > 0]
            return tf.TensorSpec((None, *dims), t.dtype)

        specs = tf.nest.map_structure(spec, first, *more)

        def read(_):
            has_batch.assign(False)
            return tf.nest.map_structure(
                lambda v, spec: tf.ensure_shape(tf.identity(v.value()), spec.shape), slots, specs)

        ds = ds.map(read)
        n = known_length(data)
        if n is not None:  # lets Keras size the epoch instead of running off its end
            ds = ds.apply(tf.data.experimental.assert_cardinality(n))
        opts = tf.data.Options()
        opts.autotune.enabled = False  # no prefetch: the step reads what the callback pulled
        opts.experimental_optimization.inject_prefetch = False
        return ds.with_options(opts)

    def _pull(self) -> float:
        t0 = time.perf_counter()
        try:
            batch = next(self._it)
        except StopIteration:
            self._has_batch.assign(False, read_value=False)
            self._pending_examples = 0
            return time.perf_counter() - t0
        wait = time.perf_counter() - t0
        tf.nest.map_structure(lambda v, b: v.assign(b, read_value=False), self._slots, batch)
        self._has_batch.assign(True, read_value=False)
        self._pending_examples = batch_size_of(batch)
        return wait

    # Keras hooks -------------------------------------------------------------
    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        if self._wrapped:
            self._it = iterate(self._source)
        self._epoch_t0 = time.perf_counter()

    def _end_training_part(self):
        if self._epoch_t0 is not None:
            self._epoch_rows.append({"epoch": self._epoch, "seconds": time.perf_counter() - self._epoch_t0})
            self._epoch_t0 = None

    def on_test_begin(self, logs=None):  # validation starts: the epoch's training part is over
        self._end_training_part()

    def on_epoch_end(self, epoch, logs=None):
        self._end_training_part()
        self._rss[epoch] = rss_mb()
        if self._wrapped:
            close = getattr(self._it, "close", None)
            if close is not None:
                close()

    def on_train_batch_begin(self, batch, logs=None):
        self._t0 = t0 = time.perf_counter()
        self._begin = batch
        self._pending_wait = self._pull() if self._wrapped else math.nan
        self._pending_hook = time.perf_counter() - t0 - (self._pending_wait if self._wrapped else 0.0)

    def on_train_batch_end(self, batch, logs=None):
        end = time.perf_counter()
        self._rows.append({
            "epoch": self._epoch,
            "step": self._begin,
            "steps": batch - self._begin + 1,  # more than 1 with steps_per_execution
            "step_s": end - self._t0,
            "wait_s": self._pending_wait,
            "examples": self._pending_examples,
            "end": end,
            "hook_s": self._pending_hook + (time.perf_counter() - end),
        })

    # Results -----------------------------------------------------------------
    def _frame(self) -> pd.DataFrame:
        return pd.DataFrame(self._rows, columns=["epoch", "step", "steps", "step_s", "wait_s", "examples", "end",
                                                 "hook_s"])

    def steps(self) -> pd.DataFrame:
        """One row per call of the train function: ``epoch, step, steps, step_s, wait_s, compute_s,
        examples, hook_s`` (``hook_s``: this callback's own time, the pull left out)."""
        df = self._frame()
        df["compute_s"] = df["step_s"] - df["wait_s"]
        return df[["epoch", "step", "steps", "step_s", "wait_s", "compute_s", "examples", "hook_s"]]

    def epochs(self) -> pd.DataFrame:
        """One row per epoch: ``steps``, ``examples``, ``seconds`` (its training part, wall clock),
        ``steady_s`` (from its first step's end to its last's: set-up and tracing left out),
        ``step_s``, ``wait_s``, ``input_share`` (``wait_s / step_s``), ``step_p50_ms``, ``hook_s``,
        ``rss_mb`` (this process's resident memory at the epoch's end: host memory growing epoch over epoch)."""
        out = self._frame().groupby("epoch").agg(
            steps=("steps", "sum"), step_s=("step_s", "sum"), wait_s=("wait_s", lambda s: s.sum(min_count=1)),
            step_p50_ms=("step_s", lambda s: 1e3 * s.median()),
            steady_s=("end", lambda s: s.iloc[-1] - s.iloc[0]),
            examples=("examples", lambda s: s.sum(min_count=len(s))), hook_s=("hook_s", "sum"),
        ).reset_index()
        out["input_share"] = out["wait_s"] / out["step_s"]
        seconds = pd.DataFrame(self._epoch_rows, columns=["epoch", "seconds"]).drop_duplicates("epoch", keep="last")
        out = out.merge(seconds, on="epoch", how="left")
        out["rss_mb"] = [self._rss.get(int(e), math.nan) for e in out["epoch"]]
        return out[["epoch", "steps", "examples", "seconds", "steady_s", "step_s", "wait_s", "input_share",
                    "step_p50_ms", "hook_s", "rss_mb"]]

    def rss_at_epoch_ends(self) -> list[float]:
        """This process's resident memory (MB) at the end of each epoch that ended, in order."""
        return [self._rss[e] for e in sorted(self._rss)]

    def reset(self) -> None:
        self._rows.clear()
        self._epoch_rows.clear()
        self._rss.clear()


def fit(model, data, *, epochs: int = 1, steps_per_epoch: int | None = None, examples: int | None = None,
        wait: bool = True, epoch_examples: int | None = None, validation_data=None, callbacks=(),
        verbose: int = 0, checkpoint_dir: str | os.PathLike | None = None,
        checkpoint_every: int = 100) -> pd.DataFrame:
    """``model.fit`` with each epoch timed by a ``StepTimer``: the kit's one way to time a fit.

    Args:
        model: a compiled Keras model.
        data: what ``fit`` reads (a distributed dataset only with ``wait=False``).
        epochs, steps_per_epoch, validation_data, verbose: passed to ``fit``.
        examples: examples per epoch; by default counted from the batches (``wait=True``), else
            what the kit loader recorded (``kit.epochs.epoch_of``), else NaN.
        wait: time each step's wait for its batch (``StepTimer.wrap``; one device,
            ``steps_per_execution=1``); False times the steps only.
        epoch_examples: adds ``epoch_s_<N>``: each epoch's rate projected to N examples.
        callbacks: more Keras callbacks.
        checkpoint_dir: resume a killed run: every ``checkpoint_every`` steps and at each epoch's
            end the model, optimizer, epoch, step and the loader's iterator are saved here; a run
            with the same folder trains the rest of the interrupted epoch on exactly the examples
            it had not reached, then the later epochs. Needs a kit tf.data loader that can resume
            (``kit.epochs.iterator_checkpoint`` says why not), ``wait=True``, no ``steps_per_epoch``.
        checkpoint_every: steps between checkpoints.

    Returns:
        One row per epoch: ``epoch`` (from 1), ``steps``, ``examples``, ``seconds``,
        ``examples_per_s``, ``input_share``, ``StepTimer.epochs``' other columns, the projection,
        then the metrics Keras logged. The first epoch includes tracing; a resumed run has rows
        for the epochs it trained in.
    """
    check_int("epochs", epochs)
    if wait and getattr(model, "steps_per_execution", 1) not in (1, None):
        raise ValueError(f"wait=True times each step's batch pull, which needs steps_per_execution=1 "
                         f"(the model has {model.steps_per_execution}); use wait=False")
    timer = StepTimer()
    common = dict(validation_data=validation_data, verbose=verbose, shuffle=False)  # kit loaders shuffle themselves
    if checkpoint_dir is not None:
        history = _fit_resuming(model, data, timer, epochs=epochs, steps_per_epoch=steps_per_epoch, wait=wait,
                                checkpoint_dir=checkpoint_dir, every=checkpoint_every, callbacks=callbacks,
                                **common)
    else:
        history = model.fit(timer.wrap(data) if wait else data, epochs=epochs, steps_per_epoch=steps_per_epoch,
                            callbacks=[timer, *callbacks], **common).history
    df = timer.epochs()
    df["epoch"] = df["epoch"] + 1
    if examples is not None:
        df["examples"] = check_int("examples", examples)
    elif not wait:
        rec = epoch_of(data)
        df["examples"] = math.nan if rec is None else [  # full batches, or the whole epoch
            rec.examples if n >= rec.batches else n * rec.batch_size for n in df["steps"]]
    df["examples_per_s"] = df["examples"] / df["seconds"]
    if epoch_examples is not None:
        df[f"epoch_s_{check_int('epoch_examples', epoch_examples)}"] = epoch_examples / df["examples_per_s"]
    for k, v in history.items():
        df[k] = v[:len(df)]
    front = ["epoch", "steps", "examples", "seconds", "examples_per_s", "input_share"]
    return df[front + [c for c in df.columns if c not in front]]


class _Resumed:
    """A kit loader whose next iteration is ``first`` (a restored iterator), then its own."""

    def __init__(self, loader, first):
        self.loader, self._first = loader, first

    def cardinality(self):
        return self.loader.cardinality()

    def __iter__(self):
        first, self._first = self._first, None
        return first if first is not None else iter(self.loader)


def resume_point(checkpoint_dir: str | os.PathLike) -> tuple[int, int] | None:
    """``(epoch, step)`` of the latest checkpoint ``fit(checkpoint_dir=...)`` wrote (the
    epoch from 0, the steps of it done), or None when there is none."""
    latest = tf.train.latest_checkpoint(os.fspath(checkpoint_dir))
    if latest is None:
        return None
    reader = tf.train.load_checkpoint(latest)
    return (int(reader.get_tensor("epoch/.ATTRIBUTES/VARIABLE_VALUE")),
            int(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE")))


def _fit_resuming(model, data, timer, *, epochs, steps_per_epoch, wait, checkpoint_dir, every, callbacks,
                  **common) -> dict:
    """``fit`` with ``checkpoint_dir``: restore the latest checkpoint there, train the rest
    of its epoch, then the epochs after; save every ``every`` steps. Returns the history."""
    check_int("checkpoint_every", every)
    if not wait:
        raise ValueError("checkpoint_dir needs wait=True: the checkpoint saves the position of the iterator "
                         "that fit reads the batches from")
    if steps_per_epoch is not None:
        raise ValueError("checkpoint_dir resumes whole epochs of the loader; leave steps_per_epoch unset")
    folder = os.fspath(checkpoint_dir)
    wrapped = timer.wrap(data)  # peeks a batch through an iterator of its own
    iterator = iter(data)
    iterator_checkpoint(data, iterator)  # refuses, saying why, a loader that cannot resume
    record = epoch_of(data)
    assert record is not None  # iterator_checkpoint refused a loader without one
    batches = record.batches
    epoch, step = tf.Variable(0, dtype=tf.int64), tf.Variable(0, dtype=tf.int64)
    shape = tf.Variable([record.examples, record.batch_size], dtype=tf.int64)
    if not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)  # its slots exist, so they restore now

    def checkpoint(it):
        return iterator_checkpoint(data, it, model=model, optimizer=model.optimizer, epoch=epoch, step=step,
                                   loader_shape=shape)

    latest = tf.train.latest_checkpoint(folder)
    if latest is not None:
        want = shape.numpy().tolist()
        checkpoint(iterator).read(latest).assert_existing_objects_matched()
        if shape.numpy().tolist() != want:
            raise ValueError(f"{latest} was written for a loader of {shape.numpy()[0]} examples in batches of "
                             f"{shape.numpy()[1]}; this one has {want[0]} in batches of {want[1]}: "
                             f"use another checkpoint_dir")
    start, done = int(epoch.numpy()), int(step.numpy())
    if done >= batches:  # saved at an epoch's end: the restored iterator set the next epochs' seeds
        start, done, iterator = start + 1, 0, None
    timer._source = _Resumed(data, iterator)
    resumed_epoch = start

    class Saver(keras.callbacks.Callback):
        def on_epoch_begin(self, e, logs=None):
            epoch.assign(e)
            step.assign(done if e == resumed_epoch else 0)
            self.manager = tf.train.CheckpointManager(checkpoint(timer._it), folder, max_to_keep=2)

        def on_train_batch_end(self, batch, logs=None):
            n = int(step.assign_add(1))
            if n % every == 0 or n == batches:
                self.manager.save(checkpoint_number=int(epoch) * batches + n)

    history: dict = {}
    runs = []
    if start < epochs and done:
        runs.append(dict(initial_epoch=start, epochs=start + 1, steps_per_epoch=batches - done))
        start += 1
    if start < epochs:
        runs.append(dict(initial_epoch=start, epochs=epochs))
    for run in runs:
        hist = model.fit(wrapped, callbacks=[timer, Saver(), *callbacks], **run, **common)
        for k, v in hist.history.items():
            history.setdefault(k, []).extend(v)
    return history
