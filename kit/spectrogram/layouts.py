"""The user's epoch reproduced from their file layout: the generator against frames per file.

The spectrogram user's generator ``np.load``s a frame's whole file for every frame it yields, so
each frame costs reading its file: the read amplification (bytes read per frame over the frame's
own bytes) is the file's frame count, and the epoch grows with the layout, not with the data.
Notebook 01 measures it at several layouts:

* ``sample(frames_per_file, files)``: sample data at that layout, generated once into the kit cache;
* ``measure(index)``: the generator's rate at one layout (its real loader, interleaved rounds
  left to the caller) and its read amplification, counted in ``/proc/self/io`` over the
  generator's own read of a few frames;
* ``fit(table)``: seconds per frame against the file's bytes, a straight line
  (``a + b * file_bytes``) by least squares over the measured layouts;
* ``reaching(fit, epoch_s, frames)``: the frames per file at which that line gives the user's
  epoch (40 hours for 1,000,000 frames), or None when the line does not rise.

The projection is only as good as its basis: ``fit`` says which layouts it rests on, and a
layout beyond the largest measured one is an extrapolation, said so wherever it is stated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from kit import samples, timing
from kit.spectrogram.case import USER_EPOCH_S, USER_FRAMES
from kit.spectrogram.index import FrameIndex
from kit.spectrogram.variants import make_loader
from kit.store.files import load_npy
from kit.util import process_io


def sample(frames_per_file: int, files: int, *, workdir=None) -> FrameIndex:
    """Sample data of ``files`` files of ``frames_per_file`` frames each, in the kit cache (made once)."""
    return FrameIndex.from_csv(samples.cached("spectrogram", files=files, frames_per_file=frames_per_file,
                                              workdir=workdir))


def amplification(index: FrameIndex, frames: int = 4) -> float | None:
    """Bytes the generator's read takes per frame over the frame's own bytes, counted in
    ``/proc/self/io`` (``rchar``: what the read calls returned, page cache included) over
    ``frames`` frames read as the generator reads them (the whole file, then one frame).
    None where the process has no such counters."""
    rows = np.linspace(0, len(index) - 1, num=min(frames, len(index))).astype(int)
    io0 = process_io()
    if io0 is None:
        return None
    for r in rows:
        whole = load_npy(index.files[index.file_ids[r]], mmap=False)  # as kit.spectrogram.loaders' generator
        whole[index.frames[r]].copy()
    io1 = process_io()
    if io1 is None:
        return None
    frame_bytes = int(np.prod(index.frame_shape)) * np.dtype(index.file_dtype).itemsize
    return (io1["rchar"] - io0["rchar"]) / len(rows) / frame_bytes


def measure(index: FrameIndex, *, batch_size: int, max_seconds: float, rounds: int = 2, warmup: int = 1) -> dict:
    """The generator at this layout: its rate through its real loader (``rounds`` readings of at
    most ``max_seconds``), the seconds per frame that rate means, and the read amplification.

    Returns:
        ``{"frames_per_file", "files", "file_bytes", "frame_bytes", "examples_per_s", "round_min",
        "round_max", "s_per_frame", "examples", "amplification"}``.
    """
    loader = make_loader("generator", index, batch_size=batch_size, progress=False)
    m = timing.compare({"generator": loader}, warmup=warmup, num_batches=None, rounds=rounds,
                       max_seconds=max_seconds).iloc[0]
    file_bytes = float(np.mean([f.stat().st_size for f in index.files]))
    return {"frames_per_file": int(round(index.file_frames.mean())), "files": len(index.files),
            "file_bytes": file_bytes, "frame_bytes": int(np.prod(index.frame_shape)) * np.dtype(index.file_dtype).itemsize,
            "examples_per_s": float(m.examples_per_s), "round_min": float(m.round_min),
            "round_max": float(m.round_max), "s_per_frame": 1.0 / float(m.examples_per_s),
            "examples": int(m.examples), "amplification": amplification(index)}


@dataclass(frozen=True)
class Fit:
    """Seconds per frame = ``a + b * file_bytes``, fitted on layouts of ``measured`` frames per file."""

    a: float
    b: float
    frame_bytes: int
    measured: tuple[int, ...]

    def s_per_frame(self, frames_per_file) -> np.ndarray:
        return self.a + self.b * np.asarray(frames_per_file, float) * self.frame_bytes

    def epoch_s(self, frames_per_file, frames: int = USER_FRAMES) -> np.ndarray:
        return frames * self.s_per_frame(frames_per_file)

    @property
    def basis(self) -> str:
        return (f"a straight line through {len(self.measured)} measured layouts "
                f"({', '.join(f'{n:,}' for n in self.measured)} frames per file)")


def fit(table: pd.DataFrame) -> Fit:
    """Least squares of ``s_per_frame`` on ``file_bytes`` over ``measure``'s rows (two layouts at least),
    in relative terms (each residual over its layout's seconds)."""
    if len(table) < 2:
        raise ValueError(f"fit needs two layouts at least, got {len(table)}")
    y = table["s_per_frame"].to_numpy(float)
    # weighted by 1/y: each layout's relative error counts alike, so the small layouts are not
    # lost beside the large ones' seconds
    b, a = np.polyfit(table["file_bytes"].to_numpy(float), y, 1, w=1.0 / y)
    return Fit(float(a), float(b), int(table["frame_bytes"].iloc[0]),
               tuple(int(n) for n in sorted(table["frames_per_file"])))


def reaching(f: Fit, epoch_s: float = USER_EPOCH_S, frames: int = USER_FRAMES) -> int | None:
    """The frames per file at which ``f`` gives an epoch of ``epoch_s`` over ``frames`` frames (rounded
    up), or None when the fitted line does not rise with the file's bytes, or is already above it."""
    per_frame = epoch_s / frames
    if not f.b > 0 or f.a >= per_frame:
        return None
    return int(np.ceil((per_frame - f.a) / (f.b * f.frame_bytes)))


def epoch_table(table: pd.DataFrame, f: Fit, frames: int = USER_FRAMES) -> pd.DataFrame:
    """``measure``'s rows with the epoch of ``frames`` each measured rate means, and the fit's."""
    out = table.copy()
    out["epoch_s"] = frames / out["examples_per_s"]
    out["fit_epoch_s"] = f.epoch_s(out["frames_per_file"], frames)
    return out

