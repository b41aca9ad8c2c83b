"""The spectrogram case declared once for the registry (``kit.cases.registry``)."""

from __future__ import annotations

from pathlib import Path

from kit import samples
from kit.cases.registry import Case, SampleOption, Scale, register
from kit.scenario import SPECTROGRAM
from kit.spectrogram.index import FrameIndex
from kit.spectrogram.variants import make_loader
from kit.util import positive_int

#: What the spectrogram user reported (``kit.scenario.SPECTROGRAM``, declared there once): one epoch of
#: about 1,000,000 frames took about 40 hours on two GPUs at global batch 256, read through a generator
#: that np.loads each frame's whole file.
USER_EPOCH_S = SPECTROGRAM.reported_epoch_s
USER_FRAMES, USER_GPUS, USER_GLOBAL_BATCH = SPECTROGRAM.frames, SPECTROGRAM.gpus, SPECTROGRAM.global_batch
#: What the spectrogram user reported, as one table: their epoch in seconds, its frames, GPUs and global batch.
USER_REPORT = {"epoch_s": USER_EPOCH_S, "frames": USER_FRAMES, "gpus": USER_GPUS, "global_batch": USER_GLOBAL_BATCH}
#: The default sample data of the spectrogram benches and of ``compare_transfer``: 20,000 frames in
#: 200 files (491 MB as float32).
DEFAULT_FILES, DEFAULT_FRAMES_PER_FILE = 200, 100


def default_data(files: int = DEFAULT_FILES, frames_per_file: int = DEFAULT_FRAMES_PER_FILE,
                 seed: int = 0, workdir=None) -> Path:
    """The default sample data (200 files of 100 frames) under the kit cache, generated on first use
    (``kit.samples.cached``). Returns the index CSV."""
    return samples.cached("spectrogram", files=files, frames_per_file=frames_per_file, seed=seed, workdir=workdir)


def _open(csv: Path):
    return FrameIndex.from_csv(csv)


def _loader(variant: str, csv: Path, index, *, batch_size: int, **options):
    return make_loader(variant, index, batch_size=batch_size, **options)


def _samples(out, *, seed: int = 0, force: bool = False, **options) -> Path:
    return samples.make_spectrogram(out, seed=seed, force=force, **options)


CASE = register(Case(
    name="spectrogram",
    unit="frames",
    description="one-second log-mel-like frames in .npy files (the spectrogram user's data)",
    loaders="kit.spectrogram.variants",
    index_columns=frozenset({"path", "frame", "label"}),
    open_index=_open,
    make_loader=_loader,
    make_samples=_samples,
    sample_options=(
        SampleOption("files", positive_int, "number of .npy files", required=True),
        SampleOption("frames_per_file", positive_int,
                     "frames in each file (the user's files hold several one-second frames)", required=True),
        SampleOption("dtype", str, "frame dtype on disk (float16 halves the bytes; default float32)",
                     default="float32", choices=("float32", "float16")),
    ),
    embedded=samples.DATA_SAMPLES / "spectrogram" / "index.csv",
    default_variant="generator",
    default_batch=256,
    # The spectrogram user: 1,000,000 frames on 2 GPUs at global batch 256.
    scale=Scale(examples=USER_FRAMES, replicas=USER_GPUS, global_batch=USER_GLOBAL_BATCH),
    model_for=lambda variant: "head" if variant == "feature_cache" else "backbone+head",
    store_kinds=("spectrogram", "feature"),
))

