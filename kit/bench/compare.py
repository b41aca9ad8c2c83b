"""``python -m kit bench compare``: the rates an epoch-time comparison needs, in one run.

Two kinds of row, measured in one process:

* ``kind="loader"``: what each loader alone delivers (examples/s), interleaved with
  ``kit.timing.compare``: every spectrogram variant plus the head's loader over the
  frozen-backbone feature cache (``kit.spectrogram.features``), and the segmentation variants.
* ``kind="compute"``: what one training step of each case's model trains per second
  with its batch already in memory (no loader in the way), at 1 and 2 replicas
  (``kit.distribute.make_strategy``: GPUs, or the CPU split into logical devices),
  the configurations interleaved over rounds. ``efficiency`` is the speed-up over one
  replica divided by the replica count.

Notebook 05 turns these rates into epoch times with ``kit.timing.epoch_model.epoch_table``
(``configurations`` pairs each loader with its case's model). On logical CPU devices
the replicas share the same cores: the 2-replica rows check the code path and give
no estimate of what two GPUs would do.

``run(CompareConfig(...))`` returns a ``kit.bench.BenchResult``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kit import distribute, samples, segmentation, spectrogram, timing
from kit.bench import BenchResult, print_table
from kit.bench import segmentation as seg_bench
from kit.bench import spectrogram as spec_bench
from kit.bench.configs import CompareConfig
from kit.cases import registry
from kit.distribute.strategy import is_simulated
from kit.models import audio, unet
from kit.models.unet import segmentation_loss
from kit.spectrogram import features

#: The loader that feeds the head alone, from the frozen backbone's feature cache. The models of the
#: compute rows: ``backbone+head`` and ``head`` (spectrogram, ``kit.models.audio``), ``unet`` (segmentation).
FEATURE_CACHE = "feature_cache"
#: The spectrogram loaders' reference in ``x_tfrecord_guide``: TensorFlow's guide's TFRecord pipeline.
GUIDE = "tfrecord_guide"


def _spectrogram_loaders(index, *, batch_size, workdir, alpha, log):
    loaders = {}
    for v in spec_bench.default_variants(log):  # conversions happen here, before any timing; grain where installed
        loaders[v] = spectrogram.make_loader(v, index, batch_size=batch_size, shuffle=True, seed=0,
                                             workdir=workdir)
    backbone = audio.backbone(None, input_shape=tuple(index.frame_shape) + (1,), alpha=alpha)
    t0 = time.perf_counter()
    cache = features.extract_features(backbone, index, loader="memmap", batch_size=batch_size,
                                      workdir=workdir, progress=False)
    log(f"  feature cache: {cache} ({time.perf_counter() - t0:.1f} s)")
    loaders[FEATURE_CACHE] = features.head_loader(cache, batch_size=batch_size, shuffle=True, seed=0)
    return loaders, backbone, cache.dim


def _segmentation_loaders(index, palette, *, batch_size, variants, workdir):
    return {v: segmentation.make_loader(v, index, palette, batch_size=batch_size, shuffle=True, seed=0,
                                        workdir=workdir)
            for v in variants}


class _Steps:
    """One model under one strategy, fed a constant in-memory batch: times ``steps`` steps."""

    def __init__(self, strategy, build, x, y, *, loss=None, warmup: int = 2):
        self.replicas = strategy.num_replicas_in_sync
        self.global_batch = len(x) * self.replicas
        reps = (self.replicas,) + (1,) * (x.ndim - 1)
        xs, ys = np.tile(x, reps), np.tile(y, (self.replicas,) + (1,) * (y.ndim - 1))
        ds = tf.data.Dataset.from_tensors((xs, ys)).repeat()
        self.data = strategy.experimental_distribute_dataset(ds)
        with strategy.scope():
            self.model = build()
            self.model.compile(keras.optimizers.SGD(0.01), loss or keras.losses.SparseCategoricalCrossentropy(
                from_logits=True))
        self.model.fit(self.data, steps_per_epoch=warmup, epochs=1, verbose=0)  # trace and warm up
        self.examples = 0
        self.seconds = 0.0
        self.rates: list[float] = []  # each run's examples/s: the spread over the rounds

        class Ends(keras.callbacks.Callback):
            def on_train_batch_end(cb, batch, logs=None):
                cb.times.append(time.perf_counter())

        self._ends = Ends

    def run(self, steps: int) -> None:
        ends = self._ends()
        ends.times = []
        # steps + 1 steps, timed from the end of the first: fit's own set-up is not a step.
        self.model.fit(self.data, steps_per_epoch=steps + 1, epochs=1, verbose=0, callbacks=[ends])
        took = ends.times[-1] - ends.times[0]
        self.seconds += took
        self.examples += steps * self.global_batch
        self.rates.append(steps * self.global_batch / took if took > 0 else math.inf)


def run(config: CompareConfig, *, log=print) -> BenchResult:
    """Measures the loaders and the models' steps; one row per loader and per (model, replicas).

    Args:
        config: what to measure.
        log: where progress lines go.

    Returns:
        A ``BenchResult`` with ``fast`` in its info, its rows: ``case``, ``kind``
        (``loader``/``compute``), ``variant`` (the loader or the model), ``replicas``,
        ``devices``, ``batch_size`` (global), ``examples_per_s``,
        ``per_replica_examples_per_s``, ``efficiency`` (compute rows), ``examples`` and ``basis``;
        each rate's rounds' spread: ``round_min``, ``round_max`` (and ``x_tfrecord_guide_min``,
        ``x_tfrecord_guide_max`` for the spectrogram loaders, ``efficiency_min``, ``efficiency_max``
        for the compute rows at more than one replica).
    """
    return BenchResult("compare", _measure(config, log), config, {"fast": config.fast})


def _measure(config: CompareConfig, log) -> pd.DataFrame:
    t_start = time.perf_counter()

    def stamp() -> str:  # how long the run has taken, at the start of a progress line
        return f"[{time.perf_counter() - t_start:.0f} s]"

    counts = sorted(set(config.replicas))
    strategies, devices = _strategies(counts)  # first: the CPU is split before anything else starts TensorFlow
    data = _data(config, log)
    rows, dim = _loader_rows(config, data, log=log, stamp=stamp)
    rows += _compute_rows(config, data, dim, counts, strategies, devices, log=log, stamp=stamp)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class _Data:
    """Both cases' indexes and the sizes of this run (``fast``: the embedded samples, small batches)."""

    spec: Any  # kit.spectrogram.FrameIndex
    seg: Any  # kit.segmentation.PairIndex
    palette: Any  # kit.segmentation.Palette
    spec_batch: int
    seg_batch: int
    num_batches: int  # per loader and round
    steps: int  # per spectrogram model and round (the head runs 10 times as many)
    seg_steps: int  # per U-Net round
    seg_variants: tuple[str, ...]


def _strategies(counts: list[int]) -> tuple[dict, str]:
    """A strategy per replica count, and what their devices are."""
    strategies = {}
    distribute.make_strategy(counts[-1])  # splits the CPU before anything else starts TensorFlow
    for r in counts:
        strategies[r] = distribute.make_strategy(r)
    devices = "CPU (simulated)" if is_simulated(strategies[counts[-1]]) else (
        "GPU" if any("GPU" in d.upper() for d in strategies[counts[-1]].extended.worker_devices) else "CPU")
    return strategies, devices


def _data(c: CompareConfig, log) -> _Data:
    seg_variants: tuple[str, ...]
    if c.fast:
        spec_csv = c.spectrogram_csv or samples.embedded("spectrogram")
        seg_csv = c.segmentation_csv or samples.embedded("segmentation")
        spec_batch, seg_batch, num_batches, steps, seg_steps = 16, 2, 4, 3, 1
        seg_variants = ("sequence", "tfdata_tuned", "class_index")
    else:
        spec_csv = c.spectrogram_csv or spec_bench.default_data(workdir=c.workdir)
        seg_csv = c.segmentation_csv or seg_bench.default_data(workdir=c.workdir)
        spec_batch, seg_batch, num_batches, steps, seg_steps = 256, 3, 20, 10, 3
        seg_variants = ("sequence", "sequence_workers", "tfdata_naive", "tfdata_tuned", "class_index")
    spec = spectrogram.FrameIndex.from_csv(spec_csv)
    seg = segmentation.PairIndex.from_csv(seg_csv)
    palette = segmentation.Palette.from_csv(Path(seg_csv).parent / "class_dict.csv")
    log(f"spectrogram: {spec_csv} ({len(spec):,} frames); segmentation: {seg_csv} ({len(seg):,} pairs)")
    return _Data(spec, seg, palette, spec_batch=spec_batch, seg_batch=seg_batch, num_batches=num_batches,
                 steps=steps, seg_steps=seg_steps, seg_variants=seg_variants)


#: Per-round time caps (seconds) of the loaders slow enough to need one.
_SLOW_S = {"generator": 8.0, "pydataset": 8.0, "numpy_function": 8.0, "sequence": 8.0, "sequence_workers": 8.0,
           "tfdata_naive": 8.0}


def _loader_rows(c: CompareConfig, data: _Data, *, log, stamp) -> tuple[list[dict], int]:
    """Each case's loaders measured interleaved (one ``timing.compare`` per case): a row each.
    Also returns the width of the feature cache's embeddings (the head's input)."""
    loaders, _, dim = _spectrogram_loaders(data.spec, batch_size=data.spec_batch, workdir=c.workdir, alpha=c.alpha,
                                           log=log)
    seg_loaders = _segmentation_loaders(data.seg, data.palette, batch_size=data.seg_batch,
                                        variants=data.seg_variants, workdir=c.workdir)
    rows = []
    for case, ls, batch, n in (("spectrogram", loaders, data.spec_batch, len(data.spec)),
                               ("segmentation", seg_loaders, data.seg_batch, len(data.seg))):
        per_round = max(1, min(data.num_batches, n // batch - 1))  # one warm-up batch, the rest timed
        log(f"{stamp()} measuring the {case} loaders: {c.rounds} interleaved rounds of {per_round} batches of {batch} ...")
        # The kit's TFRecord reader beside the pipeline TensorFlow's guide builds (x_tfrecord_guide).
        guide = [GUIDE] if GUIDE in ls else []
        # The generator after the others, as in bench spectrogram (spec_bench.AFTER says why).
        groups = [[v for v in ls if v not in spec_bench.AFTER], [v for v in ls if v in spec_bench.AFTER]]
        df = spec_bench.joined([timing.compare({v: ls[v] for v in g}, baselines=[b for b in guide if b in g],
                                               num_batches=per_round, warmup=1, rounds=c.rounds,
                                               max_seconds={k: v for k, v in _SLOW_S.items() if k in g})
                                for g in groups if g], guide)
        df = df.set_index("variant").loc[list(ls)].reset_index()
        for r in df.itertuples():
            rows.append({"case": case, "kind": "loader", "variant": r.variant, "replicas": None,
                         f"x_{GUIDE}": getattr(r, f"x_{GUIDE}") if guide else None,
                         f"x_{GUIDE}_min": getattr(r, f"x_{GUIDE}_min") if guide else None,
                         f"x_{GUIDE}_max": getattr(r, f"x_{GUIDE}_max") if guide else None,
                         "devices": "host", "batch_size": batch, "examples_per_s": r.examples_per_s,
                         "round_min": r.round_min, "round_max": r.round_max,
                         "per_replica_examples_per_s": None, "efficiency": None, "examples": int(r.examples),
                         "basis": f"{int(r.examples):,} examples read in {r.batches} batches of {batch} over "
                                  f"{c.rounds} interleaved rounds"})
    return rows, dim


def _compute_rows(c: CompareConfig, data: _Data, dim: int, counts: list[int], strategies: dict, devices: str, *,
                  log, stamp) -> list[dict]:
    """Each model's training step with its batch in memory, per replica count, the configurations
    interleaved over the rounds: a row each."""
    # The U-Net is timed on 128x128 (fast) or 256x256 crops and scaled to the users' 512x512 by
    # pixel count (a convolution's cost is per pixel; a 512x512 step is too slow for the demo).
    # The basis of the row says so.
    size = 128 if c.fast else 256
    jobs = _jobs(c, data, dim, counts, strategies, size=size, log=log, stamp=stamp)
    log(f"{stamp()} measuring {len(jobs)} model configurations, {c.rounds} interleaved rounds ...")
    for k in range(c.rounds):
        order = list(jobs)
        order = order[k % len(order):] + order[:k % len(order)]  # rotate the order each round
        for key in order:
            job, n_steps = jobs[key]
            job.run(n_steps)
    one: dict = {}
    rows = []
    for (case, model, r), (job, n_steps) in jobs.items():
        rate = job.examples / job.seconds if job.seconds > 0 else math.inf
        scale = 1.0
        scaled = ""
        if case == "segmentation" and size != 512:
            scale = (size / 512) ** 2
            scaled = f", measured at {size}x{size} and scaled to 512x512 by pixel count"
        rate *= scale
        rounds = [x * scale / r for x in job.rates]  # per replica, each round
        if r == counts[0]:
            one[(case, model)] = (rate / r, rounds)
        base, base_rounds = one.get((case, model), (None, None))
        # each round's efficiency: this count's round against one replica's run in the same round
        effs = [x / b for x, b in zip(rounds, base_rounds)] if base_rounds else []
        rows.append({"case": case, "kind": "compute", "variant": model, "replicas": r,
                     "devices": devices,
                     "batch_size": job.global_batch, "examples_per_s": rate,
                     "per_replica_examples_per_s": rate / r,
                     "round_min": min(rounds) * r, "round_max": max(rounds) * r,
                     "efficiency": (rate / r) / base if base else None,
                     "efficiency_min": min(effs) if effs else None, "efficiency_max": max(effs) if effs else None,
                     "examples": job.examples,
                     "basis": f"{job.examples:,} examples trained in {c.rounds} rounds of {n_steps} steps of "
                              f"{job.global_batch} (in-memory batch, {r} replica(s), {devices}{scaled})"})
    return rows


def _jobs(c: CompareConfig, data: _Data, dim: int, counts: list[int], strategies: dict, *, size: int, log,
          stamp) -> dict[tuple[str, str, int], tuple[_Steps, int]]:
    """The configurations to time, ``(case, model, replicas)``: each a traced ``_Steps`` on a
    constant random batch, and its steps per round."""
    spec, rng = data.spec, np.random.default_rng(0)
    frame = tuple(spec.frame_shape) + (1,)
    per_replica_spec = (max(1, data.spec_batch // counts[-1]) if c.fast
                        else registry.scale_of("spectrogram").global_batch // 2)
    x_frames = rng.standard_normal((per_replica_spec,) + frame).astype(np.float32)
    y_spec = rng.integers(0, spec.num_classes, per_replica_spec)
    x_emb = rng.standard_normal((per_replica_spec, dim)).astype(np.float32)
    x_img = rng.random((data.seg_batch, size, size, 3), dtype=np.float32)
    n_classes_seg = len(data.palette.names)
    y_img = rng.integers(0, n_classes_seg, (data.seg_batch, size, size))

    def spec_model(head_only):
        def build():
            head = audio.head(spec.num_classes, embedding_dim=dim, seed=0)
            if head_only:
                return head
            bb = audio.backbone(None, input_shape=frame, alpha=c.alpha)
            return audio.transfer_model(bb, head)
        return build

    log(f"{stamp()} building and tracing the models under each replica count ...")
    jobs = {}
    for r in counts:
        if r == counts[0] or not c.fast:  # fast mode: the backbone at one count (its tracing is the slow part)
            jobs[("spectrogram", "backbone+head", r)] = (_Steps(strategies[r], spec_model(False), x_frames, y_spec),
                                                         data.steps)
        jobs[("spectrogram", "head", r)] = (_Steps(strategies[r], spec_model(True), x_emb, y_spec), 10 * data.steps)
    # The segmentation user trained with plain Keras on one device: one replica.
    jobs[("segmentation", "unet", 1)] = (_Steps(strategies.get(1) or distribute.make_strategy(1),
                                                lambda: unet.unet(n_classes_seg, input_shape=(size, size, 3)),
                                                x_img, y_img, loss=segmentation_loss(), warmup=1), data.seg_steps)
    return jobs


def show(res) -> None:
    print_table(res.rows, ["case", "kind", "variant", "replicas", "batch_size", "examples_per_s", "round_min",
                           "round_max", f"x_{GUIDE}", f"x_{GUIDE}_min", f"x_{GUIDE}_max", "efficiency"])

