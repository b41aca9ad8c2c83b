"""Deterministic synthetic data for the kit's two user cases, at any scale.

* Spectrogram case (the spectrogram user): ``.npy`` files of log-mel-like frames ``(frames, 96, 64)`` and an
  ``index.csv`` with ``path,frame,label``; each class has its own spectral pattern plus noise, so a
  small model clearly beats chance.
* Segmentation case (the segmentation user): RGB PNG street-like scenes, colour-coded PNG masks in a CamVid-style
  palette of 12 classes, ``class_dict.csv`` and ``index.csv`` with ``image,label``.

Output is built in a temporary sibling folder renamed into place when complete, and carries the
kit's marker (``MARKER``): the same options reuse it, and a path without the marker is never replaced.

Example:
    >>> from kit import samples
    >>> csv = samples.make_spectrogram("/tmp/spec", files=4, frames_per_file=8)
"""

from __future__ import annotations

import csv
import errno
import glob
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from kit.cases import registry
from kit.errors import OutputError
from kit.store.folder import default_workdir
from kit.util import check_int, process_alive

__all__ = ["make_spectrogram", "make_segmentation", "embedded", "cached",
           "SPECTROGRAM_CLASSES", "PALETTE"]

#: Class names of the spectrogram samples (``FrameIndex`` maps them to ids in sorted order).
SPECTROGRAM_CLASSES = ("alarm", "bird", "engine", "rain", "speech")

#: CamVid-style palette: 11 classes plus Void, colours as in CamVid's class_dict.csv.
PALETTE = (
    ("Sky", 128, 128, 128),
    ("Building", 128, 0, 0),
    ("Pole", 192, 192, 128),
    ("Road", 128, 64, 128),
    ("Pavement", 60, 40, 222),
    ("Tree", 128, 128, 0),
    ("SignSymbol", 192, 128, 128),
    ("Fence", 64, 64, 128),
    ("Car", 64, 0, 128),
    ("Pedestrian", 64, 64, 0),
    ("Bicyclist", 0, 128, 192),
    ("Void", 0, 0, 0),
)


@dataclass(frozen=True)
class SpectrogramSpec:
    """Options of the spectrogram samples, validated: ``files`` of ``frames_per_file`` frames each,
    ``height`` time steps by ``width`` mel bands (YAMNet's 96 x 64), the first ``num_classes`` of
    ``SPECTROGRAM_CLASSES``, ``dtype`` float32 or float16, and the ``seed``."""

    files: int
    frames_per_file: int
    height: int = 96
    width: int = 64
    num_classes: int = len(SPECTROGRAM_CLASSES)
    dtype: str = "float32"
    seed: int = 0

    def __post_init__(self):
        for name in ("files", "frames_per_file", "height", "width", "num_classes"):
            check_int(name, getattr(self, name))
        if self.num_classes > len(SPECTROGRAM_CLASSES):
            raise ValueError(f"num_classes must be at most {len(SPECTROGRAM_CLASSES)}, got {self.num_classes}")
        check_int("seed", self.seed, 0)
        if self.dtype not in ("float32", "float16"):
            raise ValueError(f"dtype must be 'float32' or 'float16', got {self.dtype!r}")


def _class_patterns(height: int, width: int, num_classes: int, seed: int) -> np.ndarray:
    """One (height, width) pattern per class: band profile x temporal modulation."""
    rng = np.random.default_rng([seed, 10_000])
    bands = np.arange(width, dtype=np.float32)
    t = np.linspace(0.0, 1.0, height, dtype=np.float32)
    patterns = np.empty((num_classes, height, width), np.float32)
    for c in range(num_classes):
        # Each class: energy around a few class-specific bands ...
        centres = (c + 0.5) * width / num_classes + rng.normal(0, 2, size=2)
        profile = sum(np.exp(-0.5 * ((bands - m) / 3.0) ** 2) for m in centres)
        # ... modulated in time at a class-specific rate (1..num_classes+1 Hz).
        modulation = 0.6 + 0.4 * np.sin(2 * np.pi * (c + 1) * t + rng.uniform(0, np.pi))
        patterns[c] = 3.0 * modulation[:, None] * profile[None, :]
    return patterns


def _spectrogram_file(spec: SpectrogramSpec, patterns: np.ndarray, file_no: int):
    rng = np.random.default_rng([spec.seed, file_no])
    n = spec.frames_per_file
    labels = rng.integers(0, spec.num_classes, size=n)
    # Log-mel-like background: a slope over the bands (more energy low) plus noise.
    slope = np.linspace(-2.0, -6.0, spec.width, dtype=np.float32)
    frames = rng.standard_normal((n, spec.height, spec.width), dtype=np.float32)
    frames += slope
    gain = rng.uniform(0.5, 1.5, size=(n, 1, 1)).astype(np.float32)
    frames += gain * patterns[labels]
    return frames.astype(spec.dtype, copy=False), labels


#: The marker of every sample folder the kit writes (what made it, with which options): only a folder
#: with it may be replaced (``force=True``).
MARKER = ".kit-samples.json"


def _marker(out: Path) -> dict | None:
    """The marker of a kit sample folder at ``out``, or None if ``out`` is not one."""
    try:
        with open(out / MARKER) as f:
            d = json.load(f)
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) and str(d.get("kind", "")).endswith("-samples") else None


def _check_out(out: Path, made: dict, force: bool) -> bool:
    """Whether ``out`` already holds exactly these samples (True: reuse it). ``OutputError`` if it
    exists and is neither an empty folder nor a kit sample folder, or one made with other options
    and ``force`` is not set."""
    if not os.path.lexists(out):
        return False
    if out.is_symlink() or not out.is_dir():
        raise OutputError(f"{out} exists and is not a folder the kit made; refusing to replace it "
                          "(choose another --out)")
    mark = _marker(out)
    if mark is None:
        if not any(out.iterdir()):
            return False  # an empty folder: nothing to lose
        raise OutputError(f"{out} exists and is not a kit sample folder (no {MARKER}); refusing to "
                          "replace it (choose another --out)")
    if mark == made and (out / "index.csv").exists() and not force:
        return True
    if not force:
        raise OutputError(f"{out} holds kit samples made with other options ({mark.get('options')}); "
                          "pass --force (force=True) to replace it")
    return False


def _publish(tmp: Path, out: Path) -> None:
    """Move a finished temporary folder into place (replacing an empty or marked older one)."""
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


def _build_into(out: Path, build, made: dict, force: bool = False) -> Path:
    out = Path(out)
    if _check_out(out, made, force):
        return out
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OutputError(f"{out}: {out.parent} is not a folder") from None
    _remove_dead_temp(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-{os.getpid()}-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the result is not
    try:
        build(tmp)
        with open(tmp / MARKER, "w") as f:
            json.dump(made, f, indent=1, sort_keys=True)
        _publish(tmp, out)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if e.errno == errno.ENOSPC:
            raise OutputError(f"{out}: disk full while writing samples ({e.strerror}); "
                              "the partial output was removed") from None
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _remove_dead_temp(out: Path) -> None:
    """Removes temporary folders of ``out`` left by killed runs (their process is gone)."""
    for p in out.parent.glob(f".{glob.escape(out.name)}.tmp-*-*"):
        pid = p.name[len(out.name) + 6:].split("-")[0]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(p, ignore_errors=True)


def _write_csv(path: Path, header: list[str], rows) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def make_spectrogram(out: str | os.PathLike, *, files: int, frames_per_file: int, seed: int = 0, height: int = 96,
                     width: int = 64, num_classes: int = len(SPECTROGRAM_CLASSES), dtype: str = "float32",
                     force: bool = False) -> Path:
    """Writes spectrogram sample files and their index; returns the path of ``out/index.csv``.

    Args:
        out: folder to create; reused if it holds these samples (the kit's marker with the same
            options); any other existing path is refused (``OutputError``), except an empty folder
            or, with ``force``, a kit sample folder made with other options.
        files, frames_per_file, seed, height, width, num_classes, dtype: see ``SpectrogramSpec``.
    """
    spec = SpectrogramSpec(files, frames_per_file, height, width, num_classes, dtype, seed)
    patterns = _class_patterns(height, width, num_classes, seed)
    names = SPECTROGRAM_CLASSES[:num_classes]

    def build(tmp: Path):
        (tmp / "frames").mkdir()
        rows: list[tuple[str, int, str]] = []
        for i in range(spec.files):
            frames, labels = _spectrogram_file(spec, patterns, i)
            rel = f"frames/clip_{i:06d}.npy"
            np.save(tmp / rel, frames)
            rows.extend((rel, j, names[lab]) for j, lab in enumerate(labels))
        _write_csv(tmp / "index.csv", ["path", "frame", "label"], rows)

    made = {"kind": "spectrogram-samples", "options": {
        "files": spec.files, "frames_per_file": spec.frames_per_file, "seed": int(spec.seed), "height": height,
        "width": width, "num_classes": num_classes, "dtype": dtype}}
    return _build_into(Path(out), build, made, force) / "index.csv"


def _ellipse(yy, xx, cy, cx, ry, rx):
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0


def _scene(rng: np.random.Generator, size: int) -> np.ndarray:
    """A street-like class-id map (size, size) uint8 drawn with simple shapes."""
    ids = {name: i for i, (name, *_rgb) in enumerate(PALETTE)}
    s = size
    yy, xx = np.mgrid[0:s, 0:s]
    lab = np.full((s, s), ids["Sky"], np.uint8)
    horizon = int(s * rng.uniform(0.45, 0.6))
    # Buildings: a row of blocks of random heights standing on the horizon.
    x = 0
    while x < s:
        w = int(s * rng.uniform(0.1, 0.25))
        top = int(horizon - s * rng.uniform(0.15, 0.4))
        lab[max(top, 0):horizon, x:x + w] = ids["Building"]
        x += w + int(s * rng.uniform(0.0, 0.05))
    # Ground: pavement strip, then road below it.
    lab[horizon:, :] = ids["Pavement"]
    lab[horizon + int(s * 0.06):, :] = ids["Road"]
    # Fence along the pavement.
    fx = int(s * rng.uniform(0, 0.5))
    lab[horizon - int(s * 0.05):horizon, fx:fx + int(s * 0.3)] = ids["Fence"]
    # Trees: round crowns.
    for _ in range(rng.integers(1, 4)):
        cx, cy = rng.uniform(0, s), horizon - s * rng.uniform(0.1, 0.3)
        lab[_ellipse(yy, xx, cy, cx, s * 0.08, s * 0.07)] = ids["Tree"]
    # Poles with a sign on one of them.
    for k in range(rng.integers(1, 3)):
        px = int(rng.uniform(0.05, 0.95) * s)
        lab[int(horizon - s * 0.3):horizon + int(s * 0.05), px:px + max(2, s // 100)] = ids["Pole"]
        if k == 0:
            sy = int(horizon - s * 0.3)
            lab[sy:sy + s // 20, px - s // 40:px + s // 40] = ids["SignSymbol"]
    # Cars on the road: rectangles with round wheels' worth of body.
    for _ in range(rng.integers(1, 4)):
        cx = int(rng.uniform(0, 0.85) * s)
        cy = int(horizon + s * rng.uniform(0.12, 0.3))
        lab[cy:cy + int(s * 0.1), cx:cx + int(s * 0.18)] = ids["Car"]
    # People and a cyclist: ellipses.
    for name, count in (("Pedestrian", rng.integers(0, 3)), ("Bicyclist", rng.integers(0, 2))):
        for _ in range(count):
            cx, cy = rng.uniform(0, s), horizon + s * rng.uniform(0.0, 0.08)
            lab[_ellipse(yy, xx, cy, cx, s * 0.06, s * 0.02)] = ids[name]
    # A void patch (unlabelled) at a random edge.
    vx = int(rng.uniform(0, 0.9) * s)
    lab[s - s // 16:, vx:vx + s // 10] = ids["Void"]
    return lab


def _render(rng: np.random.Generator, lab: np.ndarray) -> np.ndarray:
    """An RGB image whose content follows the class map: per-class colour and texture."""
    s = lab.shape[0]
    crng = np.random.default_rng(4)  # class appearance is fixed across images
    base = crng.uniform(30, 225, size=(len(PALETTE), 3)).astype(np.float32)
    img = base[lab]
    # Smooth illumination gradient and coarse texture (compresses well as PNG).
    light = np.linspace(1.1, 0.85, s, dtype=np.float32)[:, None, None]
    coarse = rng.normal(0, 6, size=(s // 8 + 1, s // 8 + 1, 3)).astype(np.float32)
    texture = np.repeat(np.repeat(coarse, 8, axis=0), 8, axis=1)[:s, :s]
    img = img * light + texture + rng.normal(0, 2, size=(s, s, 3)).astype(np.float32)
    return np.clip(img, 0, 255).astype(np.uint8)


def write_palette(path: str | os.PathLike) -> Path:
    """Writes the CamVid-style ``class_dict.csv`` (``name,r,g,b``)."""
    path = Path(path)
    _write_csv(path, ["name", "r", "g", "b"], PALETTE)
    return path


def make_segmentation(out: str | os.PathLike, *, images: int, size: int = 512, seed: int = 0,
                      force: bool = False) -> Path:
    """Writes ``images`` segmentation sample pairs of ``size`` x ``size``, their palette
    (``class_dict.csv``) and index; returns the path of ``out/index.csv``. ``out`` is reused, refused
    or replaced (``force``) as in ``make_spectrogram``."""
    images = check_int("images", images)
    size = check_int("size", size)
    seed = check_int("seed", seed, 0)
    if size < 32:
        raise ValueError(f"size must be at least 32, got {size}")
    colours = np.array([rgb for _name, *rgb in PALETTE], np.uint8)

    def build(tmp: Path):
        (tmp / "images").mkdir()
        (tmp / "labels").mkdir()
        rows = []
        for i in range(images):
            rng = np.random.default_rng([seed, i])
            lab = _scene(rng, size)
            img = _render(rng, lab)
            image_rel, label_rel = f"images/img_{i:05d}.png", f"labels/img_{i:05d}_L.png"
            Image.fromarray(img, "RGB").save(tmp / image_rel)
            Image.fromarray(colours[lab], "RGB").save(tmp / label_rel)
            rows.append((image_rel, label_rel))
        write_palette(tmp / "class_dict.csv")
        _write_csv(tmp / "index.csv", ["image", "label"], rows)

    made = {"kind": "segmentation-samples", "options": {"images": images, "size": size, "seed": seed}}
    return _build_into(Path(out), build, made, force) / "index.csv"


#: The committed small copies of both cases, next to the package in a source checkout.
DATA_SAMPLES = Path(__file__).resolve().parent.parent / "data_samples"


def embedded(case: str) -> Path:
    """Path of the committed sample index of ``case``, what notebooks and tests use by default
    (regenerated with ``python -m kit samples ... --out data_samples/<case>``)."""
    path = registry.get(case).embedded
    if path is None:
        raise ValueError(f"case {case!r} has no embedded samples")
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the embedded samples come with a source checkout of kit")
    return path


#: The folder of the kit cache that ``cached`` puts sample folders in (``kit.cache`` lists each).
CACHE_FOLDER = "samples"


def cached(case: str, *, workdir=None, seed: int = 0, **options) -> Path:
    """Sample data of ``case`` in the kit cache (``workdir``, default ``kit.store.default_workdir()``),
    generated on first use into ``samples/<case>-<options>-s<seed>`` and reused after; ``options``
    go to the case's maker. Returns the path of the index CSV."""
    maker = registry.get(case).make_samples  # an unknown case: one error naming the known ones
    root = Path(workdir) if workdir is not None else default_workdir()
    name = "-".join([case, *(f"{k}{v}" for k, v in sorted(options.items())), f"s{seed}"])
    folder = root / CACHE_FOLDER / name
    if _marker(folder) is None:
        print(f"generating sample data -> {folder}", flush=True)
    return maker(folder, seed=seed, **options)
