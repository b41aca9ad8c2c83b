"""The two users' scenarios, declared once, and the spectrogram user's epochs measured once per run.

Every page measures at its user's scenario (fast mode shrinks counts, not kinds) or says in the
same sentence why it departs:

* ``SPECTROGRAM``: 1,000,000 one-second frames, in files of ``frames_per_file`` frames (the layout
  at which the user's generator, reading a frame's whole file for every frame, takes about their
  40 hours on a machine like the kit's: notebook 01's fit names it, and measures it), global batch
  256 on two GPUs, a frozen backbone (YAMNet's size) and a Dense head;
* ``SEGMENTATION``: 512x512 PNG pairs with colour masks, batch 3, 140 steps x 3 epochs, one CPU core
  feeding four GPUs; the user's DataGenerator took 126 s and their tf.data rewrite 208 s.

``kit.spectrogram.user_epochs()`` measures the spectrogram user's four epochs (the generator and the
best fix, on this machine and on the user's two GPUs) once per demo run; every page that states them
gets the same values (``kit.notebook.records.once``), under the names in ``USER_EPOCHS``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SPECTROGRAM", "SEGMENTATION", "SpectrogramUser", "SegmentationUser", "USER_EPOCHS", "SEGMENTATION_ONE_CORE",
           "PREFETCH_GAIN"]


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
