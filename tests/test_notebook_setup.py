"""kit.notebook.setup and kit.samples.cached: what every notebook starts with."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kit import samples, util

ROOT = Path(__file__).resolve().parent.parent


def test_version_floors_match_pyproject():
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = {m[1]: m[2] for d in deps if (m := re.match(r"([a-z_-]+)>=([\d.]+)", d))}
    assert {k: floors[k] for k in util.VERSION_FLOORS} == util.VERSION_FLOORS


def test_setup_returns_fast_and_prints_versions_and_gpus():
    code = ("import os, warnings; os.environ['KIT_FAST'] = '1'; import kit.notebook as n; fast = n.setup(); "
            "import plotly.io as pio; print('FAST', fast, os.environ['TF_CPP_MIN_LOG_LEVEL'], pio.renderers.default); "
            "print('filtered', any(f[0] == 'ignore' and f[1] and f[1].pattern == '.*shuffle=True.*' "
            "for f in warnings.filters)); from kit.memory import malloc_setting; "
            "print('kept', malloc_setting()['kept_by_kit'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())}).stdout
    lines = out.strip().splitlines()
    assert re.match(r"kit [\d.]+, tensorflow [\d.]+, keras [\d.]+, numpy [\d.]+$", lines[0])
    assert lines[1].startswith("GPUs: ") or lines[1].startswith("No GPU found")
    assert lines[2] == "FAST True 2 plotly_mimetype+notebook"
    assert lines[3] == "filtered True"
    glibc = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    assert lines[4] == f"kept {glibc}"  # freed batch buffers kept mapped (kit.memory), where glibc


def test_setup_warns_about_an_old_version(monkeypatch, capsys):
    import kit.notebook as nb

    monkeypatch.setattr(nb, "VERSION_FLOORS", {"keras": "99.0"})
    with pytest.warns(UserWarning, match=r"keras .* is older than 99.0, the oldest the kit was tested with"):
        nb.setup()
    assert nb._older("3.15.1", "3.15") is False and nb._older("3.9", "3.15") is True


def test_cached_samples_are_made_once_and_reused(tmp_path, capsys):
    csv = samples.cached("spectrogram", files=2, frames_per_file=3, workdir=tmp_path)
    assert csv == tmp_path / "samples" / "spectrogram-files2-frames_per_file3-s0" / "index.csv"
    assert "generating sample data" in capsys.readouterr().out
    mtime = csv.stat().st_mtime_ns
    assert samples.cached("spectrogram", files=2, frames_per_file=3, workdir=tmp_path) == csv
    assert capsys.readouterr().out == "" and csv.stat().st_mtime_ns == mtime  # reused, not rewritten
    seg = samples.cached("segmentation", images=2, size=32, workdir=tmp_path, seed=1)
    assert seg.parent.name == "segmentation-images2-size32-s1" and (seg.parent / "class_dict.csv").exists()
    with pytest.raises(ValueError, match="case must be one of spectrogram, segmentation"):
        samples.cached("video", workdir=tmp_path)
