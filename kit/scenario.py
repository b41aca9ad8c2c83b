"""The two users' scenarios, declared once, and the spectrogram user's epochs measured once per run.

Every page measures at its user's scenario (fast mode shrinks counts, not kinds) or says in the
same sentence why it departs:

* ``SPECTROGRAM``: 1,000,000 one-second frames, in files of ``frames_per_file`` frames (the layout
  at which the user's generator, reading a frame's whole file for every frame, takes about their
  40 hours on a machine like the kit's: notebook 01's fit names it, and measures it), global batch
  256 on two GPUs, a frozen backbone (YAMNet's size) and a Dense head;
* ``SEGMENTATION``: 512x512 PNG pairs with colour masks, batch 3, 140 steps x 3 epochs, one CPU core
  feeding four GPUs; the user's DataGenerator took 126 s and their tf.data rewrite 208 s.

``user_epochs()`` measures the spectrogram user's four epochs (the generator and the best fix, on
this machine and on the user's two GPUs) once per demo run; every page that states them gets the
same values (``kit.notebook.records.once``), under the names in ``USER_EPOCHS``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from kit.util import format_duration

__all__ = ["SPECTROGRAM", "SEGMENTATION", "SpectrogramUser", "SegmentationUser", "USER_EPOCHS", "SEGMENTATION_ONE_CORE",
           "PREFETCH_GAIN", "UserEpochs", "user_epochs"]


@dataclass(frozen=True)
class SpectrogramUser:
    """The spectrogram user: what they reported and the layout that reproduces it."""

    frames: int = 1_000_000
    frames_per_file: int = 30_000   # ~740 MB files of float32 96x64 frames
    global_batch: int = 256
    gpus: int = 2
    gpu: str = "V100"               # their report does not name the GPUs (kit.timing.GPU_CLASSES)
    reported_epoch_s: float = 40 * 3600.0
    best_fix: str = "memmap"        # the ladder's top (notebook 02): one gather per batch in the graph

    @property
    def reported(self) -> str:
        """Their epoch as they said it: "40 hours"."""
        return f"{self.reported_epoch_s / 3600:g} hours"

    @property
    def per_replica_batch(self) -> int:
        return self.global_batch // self.gpus


@dataclass(frozen=True)
class SegmentationUser:
    """The segmentation user: 512x512 pairs, batch 3, 140 steps x 3 epochs, one core and four GPUs."""

    size: int = 512
    batch: int = 3
    steps: int = 140
    epochs: int = 3
    cores: int = 1
    gpus: int = 4
    datagenerator_s: float = 126.0
    tfdata_s: float = 208.0
    datagenerator_workers: int = 8  # their DataGenerator's worker processes
    tfdata_parallel_calls: int = 4  # their tf.data map's num_parallel_calls

    @property
    def pairs_per_epoch(self) -> int:
        return self.steps * self.batch

    @property
    def tfdata_over_datagenerator(self) -> float:
        """The user's tf.data rewrite against their DataGenerator, as a rate ratio (126 s / 208 s)."""
        return self.datagenerator_s / self.tfdata_s


SPECTROGRAM = SpectrogramUser()
SEGMENTATION = SegmentationUser()

#: The spectrogram user's four epochs (seconds for ``SPECTROGRAM.frames``), as ``headlines.json`` names them.
USER_EPOCHS = ("user_epoch_generator_this_machine", "user_epoch_best_this_machine",
               "user_epoch_generator_user_gpus", "user_epoch_best_user_gpus")
#: The segmentation user's tf.data rewrite over their DataGenerator on one core (notebook 06).
SEGMENTATION_ONE_CORE = "segmentation_tfdata_over_datagenerator_one_core"
#: What prefetch gains against a consumer that works (notebook 02).
PREFETCH_GAIN = "prefetch_overlap_gain"


@dataclass(frozen=True)
class UserEpochs:
    """The spectrogram user's four epochs, with the rates they rest on (``user_epochs``)."""

    figures: tuple        # the four figures, in ``USER_EPOCHS``' order
    where: str            # "measured here" or "measured in 01_..., this run"

    def __getitem__(self, quantity: str) -> float:
        return next(f["value"] for f in self.figures if f["quantity"] == quantity)

    def basis(self, quantity: str) -> dict:
        return next(f["basis"] for f in self.figures if f["quantity"] == quantity)

    def step_s(self, quantity: str = "user_epoch_best_user_gpus") -> float:
        """The seconds one training step of the global batch takes where ``quantity`` trains (its compute
        rate): on the user's GPUs by default, the consumer notebook 02 times the ladder against."""
        return SPECTROGRAM.global_batch / self.basis(quantity)["compute_rate"]

    def table(self) -> pd.DataFrame:
        """One row per epoch: where, loader, the loader's and the compute's rates, the bound, the epoch."""
        rows = []
        for f in self.figures:
            b = f["basis"]
            rows.append({"where": b["where"], "loader": b["loader"], "loader_rate": b["loader_rate"],
                         "compute_rate": b["compute_rate"], "compute": b["compute"], "bound": b["bound"],
                         "epoch": format_duration(f["value"])})
        return pd.DataFrame(rows)

    def sentence(self) -> str:
        """The four epochs in one sentence, the user's 40 hours beside them."""
        g, b = self["user_epoch_generator_user_gpus"], self["user_epoch_best_user_gpus"]
        return (f"the user reported {SPECTROGRAM.reported}; the generator at "
                f"{SPECTROGRAM.frames_per_file:,} frames per file: {format_duration(self['user_epoch_generator_this_machine'])} "
                f"here, {format_duration(g)} on their {SPECTROGRAM.gpus} GPUs; {SPECTROGRAM.best_fix}: "
                f"{format_duration(self['user_epoch_best_this_machine'])} here, {format_duration(b)} on their GPUs "
                f"({g / b:,.0f}x shorter; {self.where})")


def _measure(fast: bool, ledger) -> list[dict]:
    # in-function: TensorFlow and the models load only when a page measures
    import time

    import numpy as np

    from kit import models, results, samples, spectrogram, timing
    from kit.notebook.records import figure
    from kit.spectrogram import layouts

    s = SPECTROGRAM
    # the generator at the user's layout: one file of frames_per_file frames, written once into the kit
    # cache; a few frames are enough to time, each costs reading the whole file
    user_index = layouts.sample(s.frames_per_file, 1)
    gen = layouts.measure(user_index, batch_size=2, max_seconds=1.0 if fast else 8.0, rounds=2)
    # the best fix: its store is one file whatever the source's layout, so it is measured on a smaller
    # sample of the same frames (10,000 in files of 100), at the user's global batch
    index = spectrogram.FrameIndex.from_csv(samples.cached("spectrogram", files=100, frames_per_file=100))
    best = timing.compare({s.best_fix: spectrogram.make_loader(s.best_fix, index, batch_size=s.global_batch,
                                                               progress=False)},
                          num_batches=None, rounds=2, max_seconds=0.5 if fast else 4.0).iloc[0]
    # this machine's compute: the user's model (frozen backbone, Dense head) trains a global batch here
    model = models.transfer_model(models.audio_backbone(), models.audio_head(index.num_classes))
    models.compile_classifier(model)
    x = np.random.default_rng(0).random((s.global_batch, *index.frame_shape, 1), dtype=np.float32)
    y = np.arange(s.global_batch) % index.num_classes
    model.train_on_batch(x, y)  # traces the step
    steps = 1 if fast else 6
    start = time.perf_counter()
    for _ in range(steps):
        model.train_on_batch(x, y)
    compute_here = steps * s.global_batch / (time.perf_counter() - start)
    if ledger is None and results.ledger_path().exists():  # a device run in the ledger measures the GPUs' rate
        ledger = results.load([results.ledger_path()])
    gpu = timing.gpu_rate(models.training_flops(model), ledger, gpu=s.gpu)
    efficiency = gpu.efficiency or 0.9  # as kit.timing.on_gpus assumes where no device run measured one
    compute_gpus = s.gpus * gpu.per_replica * efficiency
    out = []
    for name in USER_EPOCHS:
        loader, rate = ("generator", gen["examples_per_s"]) if "generator" in name else (s.best_fix, float(best.examples_per_s))
        on_gpus = name.endswith("user_gpus")
        compute = compute_gpus if on_gpus else compute_here
        basis = {"where": f"the user's {s.gpus} {gpu.gpu} GPUs" if on_gpus else "this machine's CPU",
                 "loader": loader, "loader_rate": float(rate), "compute_rate": float(compute),
                 "compute": f"{gpu.kind}: {gpu.basis}" if on_gpus else "measured",
                 "bound": "input" if rate < compute else "compute", "frames": s.frames,
                 "frames_per_file": s.frames_per_file if loader == "generator" else 100,
                 "global_batch": s.global_batch,
                 "timed": int(gen["examples"] if loader == "generator" else best.examples)}
        out.append(figure(name, s.frames / min(rate, compute), "s", basis))
    return out


def user_epochs(*, fast: bool | None = None, ledger=None) -> UserEpochs:
    """The spectrogram user's four epochs of ``SPECTROGRAM.frames`` frames, measured once per demo run
    (a later page of the run gets the same figures; outside a run, measured here).

    * the generator: measured at the user's layout (``SPECTROGRAM.frames_per_file``);
    * the best fix (``SPECTROGRAM.best_fix``): measured at the user's global batch;
    * this machine: its CPU trains the user's model, measured (a few steps of the global batch);
    * the user's GPUs: ``kit.timing.gpu_rate`` (a device run in ``ledger``, by default the results
      ledger, else assumed from the model's FLOPs), two of them at an assumed 0.9 scaling efficiency.

    Each epoch is the frames over the slower of the loader and the compute.
    """
    from kit.notebook.records import fast as fast_mode
    from kit.notebook.records import once

    figures, where = once(list(USER_EPOCHS), lambda: _measure(fast_mode() if fast is None else fast, ledger))
    return UserEpochs(tuple(figures), where)
