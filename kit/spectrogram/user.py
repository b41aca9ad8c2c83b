"""The spectrogram user's four epochs of ``kit.scenario.SPECTROGRAM``, measured once per demo run
(``user_epochs``): the generator at the user's layout and the best fix, on this machine and on the
user's two GPUs. Every page that states them gets the same values (``kit.notebook.records.once``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from kit.scenario import SPECTROGRAM, USER_EPOCHS
from kit.util import format_duration


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
