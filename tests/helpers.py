"""Helpers shared by several test files (fixtures are in conftest.py): running the CLI, damaging
files in place, the segmentation tests' decoding and matching, the comparison rows notebook 05
draws from, and what a notebook's run must show. Test files import them by name
(``from helpers import ...``): pytest puts tests/ on sys.path."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

# ------------------------------------------------------------------------- the command line


def kit_cli(*args, cwd=None):
    """``python -m kit ARGS`` in a child process. Bounded: a server the CLI wrongly started would serve
    forever."""
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def one_error_line(r):
    """The one ``kit: error:`` line of a command that exited 2."""
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("kit: error:"), r.stderr
    return lines[0]


# ------------------------------------------------------------------------- damage in place


def rewrite_keeping_size_and_mtime(path, data: bytes):
    """Rewrites ``path`` in place with ``data`` of its size and keeps its mtime (as ``cp -p`` onto it)."""
    st = path.stat()
    assert len(data) == st.st_size
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns


def flip(path, offset):
    """Flips the byte at ``offset``, keeping the file's size and mtime."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    rewrite_keeping_size_and_mtime(path, bytes(data))


def dead_pid():
    """The id of a process that has ended."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# ------------------------------------------------------------------------- segmentation

SIZE = (64, 64)
UNKNOWN_RGB = (1, 2, 3)


def seg_epoch(loader):
    """Every example of one epoch as numpy ``(x, y)`` pairs."""
    from kit import timing

    out = []
    for x, y in timing.iterate(loader):
        x, y = np.asarray(x), np.asarray(y)
        out.extend(zip(x, y))
    return out


def seg_match(examples, index, palette, size, *, x_dtype, one_hot):
    """Maps each delivered example to its row by image content; asserts it equals the direct decode."""
    refs = [index.read(i, palette, size) for i in range(len(index))]
    rows = []
    for x, y in examples:
        if x_dtype == "float32":
            assert x.dtype == np.float32 and 0.0 <= x.min() and x.max() <= 1.0
            pixels = np.rint(x * 255).astype(np.uint8)
        else:
            assert x.dtype == np.uint8
            pixels = x
        hits = [i for i, (img, _) in enumerate(refs) if np.array_equal(img, pixels)]
        assert len(hits) == 1, "each delivered image matches exactly one pair"
        i = hits[0]
        if x_dtype == "float32":
            np.testing.assert_allclose(x, refs[i][0] / np.float32(255), rtol=0, atol=1e-7)
        want = palette.one_hot(refs[i][1]) if one_hot else refs[i][1]
        assert y.dtype == want.dtype and y.shape == want.shape
        assert np.array_equal(y, want), f"class ids of row {i} differ from the direct decode"
        rows.append(i)
    return rows


def seg_load(name, index, palette, tmp_path, size=SIZE, **options):
    """The segmentation loader ``name`` at batch 2, seed 3, its stores under ``tmp_path / "work"``."""
    from kit.segmentation import make_loader

    return make_loader(name, index, palette, batch_size=2, size=size, seed=3, workdir=tmp_path / "work",
                       progress=False, **options)


def damage(data, how):
    """Damages pair 2 of the ``data`` fixture's folder: a file missing, cut short, not a PNG..."""
    img, lab = data / "images/img_00002.png", data / "labels/img_00002_L.png"
    if how == "missing_image":
        img.unlink()
    elif how == "missing_mask":
        lab.unlink()
    elif how == "size_mismatch":
        Image.fromarray(np.zeros((64, 48, 3), np.uint8)).save(lab)
    elif how == "truncated":
        blob = img.read_bytes()
        img.write_bytes(blob[:len(blob) // 2])
    elif how == "not_an_image":
        img.write_bytes(b"this is not a png")
    elif how == "sixteen_bit":
        Image.fromarray(np.zeros((64, 64), np.uint16)).save(img)


def paint_unknown(data, pixels=7):
    """Paints ``pixels`` pixels of pair 3's mask in UNKNOWN_RGB and one more in (9, 9, 9)."""
    lab = data / "labels/img_00003_L.png"
    rgb = np.array(Image.open(lab).convert("RGB"))
    rgb[10, 20:20 + pixels] = UNKNOWN_RGB
    rgb[40, 5] = (9, 9, 9)
    Image.fromarray(rgb).save(lab)
    return lab


# ------------------------------------------------------------------------- notebook 05's epoch views

#: The users' scale, as notebook 05's explorer starts.
SCALE = {"spectrogram": {"examples": 1_000_000, "replicas": 2},
         "segmentation": {"examples": 420, "replicas": 1}}


def epoch_configs():
    """Configurations as ``kit.timing.configurations`` gives them: a loader and its model's rate."""
    return pd.DataFrame({
        "case": ["spectrogram"] * 3 + ["segmentation"] * 2,
        "variant": ["generator", "memmap", "feature_cache", "sequence", "class_index"],
        "loader_rate": [7.0, 300_000.0, 200_000.0, 17.0, 3000.0],
        "compute_rate": [2560.0, 2560.0, 80_000.0, 5.0, 5.0],
        "efficiency": [1.0] * 5, "loader_basis": "l", "compute_basis": "c",
        "unit": ["frames"] * 3 + ["pairs"] * 2})


def compare_rates():
    """One comparison as ``compare.run`` returns it: loaders, and each model at 1 and 2 replicas
    with a 2-replica efficiency well below 1 (what logical CPU devices measure)."""
    rows = []
    for case, variant, rate in (("spectrogram", "generator", 7.0), ("spectrogram", "memmap", 30_000.0),
                                ("spectrogram", "tfrecord", 9_000.0), ("spectrogram", "feature_cache", 2e5),
                                ("segmentation", "sequence", 17.0), ("segmentation", "class_index", 900.0)):
        rows.append({"case": case, "kind": "loader", "variant": variant, "examples_per_s": rate, "basis": variant})
    for case, model, rate, eff in (("spectrogram", "backbone+head", 2_000.0, 0.536),
                                   ("spectrogram", "head", 80_000.0, 0.7), ("segmentation", "unet", 5.0, 0.9)):
        rows.append({"case": case, "kind": "compute", "variant": model, "replicas": 1, "devices": "CPU",
                     "per_replica_examples_per_s": rate, "efficiency": 1.0, "basis": f"{model} x1"})
        rows.append({"case": case, "kind": "compute", "variant": model, "replicas": 2, "devices": "CPU",
                     "per_replica_examples_per_s": rate * eff, "efficiency": eff, "basis": f"{model} x2"})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------- sources with a known latency


def sleepy(batches, delay, batch_size=8, clock=time):
    """A source with a known latency per batch: the analytic rate is batch_size / delay."""
    def gen():
        for i in range(batches):
            clock.sleep(delay)
            yield np.full((batch_size, 3), i, np.float32), np.full(batch_size, i)
    return gen


# ------------------------------------------------------------------------- loaders made on demand


def spec_loader(variant, batch_size=4, frames_per_file=7, **options):
    """``make(index, workdir)``, a spectrogram loader ``variant`` at seed 3, with ``make.index(tmp)``
    making a small index (3 files of ``frames_per_file`` 8x6 frames) under ``tmp``."""
    from kit import samples
    from kit.spectrogram import FrameIndex, make_loader

    def make(index, workdir):
        return make_loader(variant, index, batch_size=batch_size, seed=3, workdir=workdir, progress=False,
                           **options)

    make.batch = batch_size
    make.index = lambda tmp: FrameIndex.from_csv(samples.make_spectrogram(
        tmp / "spec", files=3, frames_per_file=frames_per_file, height=8, width=6, seed=1))
    return make


def load_script(name: str):
    """``scripts/<name>.py`` as a module (registered in ``sys.modules``, as the scripts' dataclasses need)."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_script", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def paren_depth(text: str) -> int:
    """How deep parentheses nest in ``text`` (the doctor's printed lines never nest them: issue 44)."""
    depth = most = 0
    for ch in text:
        depth += ch == "("
        most = max(most, depth)
        depth -= ch == ")"
    return most


def run_doctor(capsys, *argv):
    """``python -m kit doctor ARGV`` in this process: ``(exit status, stdout, stderr)``."""
    from kit.cli import main

    rc = main(["doctor", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


# ------------------------------------------------------------------------- notebooks and the browser

#: Debian's chromium, which the browser tests drive (never a downloaded browser).
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def browser_missing() -> str | None:
    """Why the browser tests (test_browser.py) cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is missing: pip install -e '.[dev]' (never `playwright install`)"
    if not os.path.exists(CHROMIUM):
        return "no chromium: run `apt-get install -y chromium` (make test does it when run as root)"
    return None


def assert_ran_in_fast_mode(nb, run: str) -> None:
    """An executed notebook (``run``: "first" or "second"): only cells tagged ``raises-exception``
    failed, its headline is one rounded line, marked as fast mode with its sample, and the page is
    clean (``kit.report.page_problems``: no missing-value cell in a table, no log line, no seed
    names, the headline shown once)."""
    from kit.notebook.session import FAST_NOTE
    from kit.report import index as report_index
    from kit.report.pages import page_problems

    errors = [o for c in nb.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    allowed = sum("raises-exception" in c.metadata.get("tags", []) for c in nb.cells)
    assert len(errors) <= allowed, f"{run} run"
    for c in nb.cells:  # only cells tagged to fail may fail
        if c.cell_type == "code" and "raises-exception" not in c.metadata.get("tags", []):
            bad = [o for o in c.get("outputs", []) if o.get("output_type") == "error"]
            assert not bad, f"{run} run: {c.source}\n{bad[0].get('ename')}: {bad[0].get('evalue')}" if bad else ""
    line, table = report_index.headline_output(nb)
    assert line and table is None, f"{run} run: the headline is not one line: {line!r}"
    assert f"[{FAST_NOTE}: " in line, f"{run} run: a fast-mode headline not marked: {line!r}"
    # a figure that could not be computed is said in words, never printed as nan ("expected nanx")
    assert not re.search(r"\bnan(x|\b)", line, re.IGNORECASE), f"{run} run: nan in the headline: {line!r}"
    problems = page_problems(nb)
    assert problems == [], f"{run} run: what a reader would see:\n" + "\n".join(problems)


def keeps_pages_in_memory(path) -> bool:
    """Whether ``path`` is on a file system whose files are their cached pages (tmpfs,
    ramfs): eviction cannot drop them there."""
    best, fstype = "", ""
    with open("/proc/mounts") as f:
        for line in f:
            mount, kind = line.split()[1:3]
            if str(path).startswith(mount.rstrip("/") + "/") and len(mount) > len(best):
                best, fstype = mount, kind
    return fstype in ("tmpfs", "ramfs")
