"""kit.samples: deterministic synthetic data for both cases, its command, and never writing over
what the kit did not make (issue 13, item 1)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
from helpers import dead_pid, kit_cli, one_error_line
from PIL import Image

from kit import samples
from kit.errors import OutputError


def _read_index(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_spectrogram_layout_and_dtype(tmp_path):
    csv_path = samples.make_spectrogram(tmp_path / "s", files=3, frames_per_file=5, seed=1)
    rows = _read_index(csv_path)
    assert list(rows[0]) == ["path", "frame", "label"]
    assert len(rows) == 15
    arr = np.load(csv_path.parent / rows[0]["path"], allow_pickle=False)
    assert arr.shape == (5, 96, 64) and arr.dtype == np.float32
    assert {r["label"] for r in rows} <= set(samples.SPECTROGRAM_CLASSES)
    assert [int(r["frame"]) for r in rows[:5]] == [0, 1, 2, 3, 4]


def test_spectrogram_is_deterministic(tmp_path):
    a = samples.make_spectrogram(tmp_path / "a", files=2, frames_per_file=4, seed=7)
    b = samples.make_spectrogram(tmp_path / "b", files=2, frames_per_file=4, seed=7)
    c = samples.make_spectrogram(tmp_path / "c", files=2, frames_per_file=4, seed=8)
    fa, fb, fc = (np.load(p.parent / "frames/clip_000001.npy") for p in (a, b, c))
    assert np.array_equal(fa, fb)
    assert not np.array_equal(fa, fc)
    assert a.read_text() == b.read_text()


def test_spectrogram_labels_are_learnable(tmp_path):
    # Nearest class mean of the band profile, fit on half, scored on the other half:
    # a tiny model that must clearly beat chance (1 in 5).
    csv_path = samples.make_spectrogram(tmp_path / "s", files=20, frames_per_file=20, seed=3)
    rows = _read_index(csv_path)
    x = np.concatenate([np.load(csv_path.parent / f"frames/clip_{i:06d}.npy") for i in range(20)])
    names = sorted(set(samples.SPECTROGRAM_CLASSES))
    y = np.array([names.index(r["label"]) for r in rows])
    feats = x.mean(axis=1)  # (N, 64): energy per band
    train, test = slice(0, 200), slice(200, 400)
    means = np.stack([feats[train][y[train] == c].mean(0) for c in range(5)])
    pred = np.argmin(((feats[test][:, None] - means[None]) ** 2).sum(-1), axis=1)
    accuracy = (pred == y[test]).mean()
    assert accuracy > 0.6, accuracy


def test_float16_samples(tmp_path):
    p = samples.make_spectrogram(tmp_path / "h", files=1, frames_per_file=2, dtype="float16")
    assert np.load(p.parent / "frames/clip_000000.npy").dtype == np.float16


@pytest.mark.parametrize("kwargs, message", [
    (dict(files=0, frames_per_file=3), "files must be a positive integer, got 0"),
    (dict(files=2, frames_per_file=-1), "frames_per_file must be a positive integer, got -1"),
    (dict(files=2, frames_per_file=2, dtype="int8"), "dtype must be"),
])
def test_bad_counts_raise_value_error(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        samples.make_spectrogram(tmp_path / "x", **kwargs)
    assert not (tmp_path / "x").exists()


def test_segmentation_layout_palette_and_masks(tmp_path):
    csv_path = samples.make_segmentation(tmp_path / "g", images=2, size=64, seed=0)
    root = csv_path.parent
    rows = _read_index(csv_path)
    assert list(rows[0]) == ["image", "label"] and len(rows) == 2
    palette = _read_index(root / "class_dict.csv")
    assert len(palette) == 12 and list(palette[0]) == ["name", "r", "g", "b"]
    colours = {(int(p["r"]), int(p["g"]), int(p["b"])) for p in palette}
    img = Image.open(root / rows[0]["image"])
    mask = np.asarray(Image.open(root / rows[0]["label"]))
    assert img.mode == "RGB" and img.size == (64, 64) and mask.shape == (64, 64, 3)
    assert {tuple(c) for c in mask.reshape(-1, 3)} <= colours


def test_segmentation_default_size_is_512(tmp_path):
    csv_path = samples.make_segmentation(tmp_path / "g", images=1)
    img = Image.open(csv_path.parent / "images/img_00000.png")
    assert img.size == (512, 512)


def test_segmentation_image_follows_mask(tmp_path):
    # The image's colour predicts the class: nearest class-mean colour beats chance by far.
    csv_path = samples.make_segmentation(tmp_path / "g", images=2, size=128, seed=5)
    root = csv_path.parent
    palette = np.array([tuple(map(int, (p["r"], p["g"], p["b"])))
                        for p in _read_index(root / "class_dict.csv")])
    imgs, labs = [], []
    for r in _read_index(csv_path):
        imgs.append(np.asarray(Image.open(root / r["image"]), np.float32).reshape(-1, 3))
        m = np.asarray(Image.open(root / r["label"])).reshape(-1, 3)
        labs.append(np.argmax((m[:, None, :] == palette[None]).all(-1), axis=1))
    x, y = np.concatenate(imgs), np.concatenate(labs)
    present = np.unique(y)
    means = np.stack([x[y == c].mean(0) for c in present])
    pred = present[np.argmin(((x[:, None] - means[None]) ** 2).sum(-1), axis=1)]
    assert (pred == y).mean() > 0.8


def test_output_appears_only_when_complete(tmp_path, monkeypatch):
    out = tmp_path / "s"
    samples.make_spectrogram(out, files=1, frames_per_file=2, seed=0)
    before = (out / "index.csv").read_text()

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(samples.np, "save", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        samples.make_spectrogram(out, files=3, frames_per_file=2, seed=1, force=True)
    # The old complete folder is intact and no temporary folder is left behind.
    assert (out / "index.csv").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def _kit(*args):
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True)


@pytest.mark.slow
def test_cli_writes_samples(tmp_path):
    r = _kit("samples", "spectrogram", "--out", str(tmp_path / "s"), "--files", "2",
             "--frames-per-file", "3", "--seed", "4")
    assert r.returncode == 0, r.stderr
    assert len(_read_index(tmp_path / "s" / "index.csv")) == 6
    r = _kit("samples", "segmentation", "--out", str(tmp_path / "g"), "--images", "1", "--size", "48")
    assert r.returncode == 0, r.stderr
    assert Image.open(tmp_path / "g" / "images/img_00000.png").size == (48, 48)


@pytest.mark.parametrize("args", [
    ["samples", "spectrogram", "--files", "0", "--frames-per-file", "3"],
    ["samples", "spectrogram", "--files", "2", "--frames-per-file", "-4"],
    ["samples", "segmentation", "--images", "0"],
])
def test_cli_bad_count_prints_one_line_and_exits_2(tmp_path, args):
    r = _kit(*args[:2], "--out", str(tmp_path / "x"), *args[2:])
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "must be positive" in lines[0], r.stderr
    assert not (tmp_path / "x").exists()


def test_samples_refuses_an_existing_path_it_did_not_make(tmp_path):
    """Item 1: a user's file or folder at --out is never replaced, not even with force."""
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.txt").write_text("only copy")
    afile = tmp_path / "notes.txt"
    afile.write_text("only copy too")
    for out in (mine, afile):
        for force in (False, True):
            with pytest.raises(OutputError, match="refusing"):
                samples.make_spectrogram(out, files=1, frames_per_file=2, force=force)
    assert (mine / "thesis.txt").read_text() == "only copy"
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.txt"]
    assert afile.read_text() == "only copy too"
    with pytest.raises(OutputError, match="refusing"):
        samples.make_segmentation(mine, images=1, size=32, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine", "notes.txt"]  # no temp left


def test_samples_force_replaces_only_its_own_marked_folder(tmp_path):
    """Item 1: a marked folder is reused with the same options, replaced only with force."""
    out = tmp_path / "s"
    csv = samples.make_spectrogram(out, files=1, frames_per_file=2, seed=0)
    mark = json.loads((out / samples.MARKER).read_text())
    assert mark["kind"] == "spectrogram-samples" and mark["options"]["files"] == 1
    first = (out / "frames/clip_000000.npy").stat().st_mtime_ns
    assert samples.make_spectrogram(out, files=1, frames_per_file=2, seed=0) == csv  # reused as is
    assert (out / "frames/clip_000000.npy").stat().st_mtime_ns == first
    with pytest.raises(OutputError, match="--force"):
        samples.make_spectrogram(out, files=2, frames_per_file=2, seed=0)
    samples.make_spectrogram(out, files=2, frames_per_file=2, seed=0, force=True)
    assert len((out / "index.csv").read_text().splitlines()) == 1 + 4
    empty = tmp_path / "empty"
    empty.mkdir()  # an empty folder has nothing to lose
    samples.make_segmentation(empty, images=1, size=32)
    assert (empty / samples.MARKER).exists()


@pytest.mark.slow
def test_samples_cli_refuses_with_one_line(tmp_path):
    """Item 1 through the CLI: one line, exit 2, the user's file intact."""
    victim = tmp_path / "x"
    victim.write_text("keep me")
    for extra in ([], ["--force"]):
        r = kit_cli("samples", "spectrogram", "--out", str(victim), "--files", "1", "--frames-per-file", "2",
                 *extra)
        assert "refusing" in one_error_line(r)
    assert victim.read_text() == "keep me"


def test_temp_folders_of_killed_sample_runs_are_removed(tmp_path):
    """Item 11: a new samples run removes the temporary folder a killed run left."""
    stale = tmp_path / f".s.tmp-{dead_pid()}-abc123"
    stale.mkdir()
    (stale / "index.csv").write_text("half")
    samples.make_spectrogram(tmp_path / "s", files=1, frames_per_file=2)
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


def test_cached_samples_are_made_once_and_reused(tmp_path, capsys):
    csv = samples.cached("spectrogram", files=2, frames_per_file=3, workdir=tmp_path)
    assert csv == tmp_path / "samples" / "spectrogram-files2-frames_per_file3-s0" / "index.csv"
    assert "generating sample data" in capsys.readouterr().out
    mtime = csv.stat().st_mtime_ns
    assert samples.cached("spectrogram", files=2, frames_per_file=3, workdir=tmp_path) == csv
    assert capsys.readouterr().out == "" and csv.stat().st_mtime_ns == mtime  # reused, not rewritten
    seg = samples.cached("segmentation", images=2, size=32, workdir=tmp_path, seed=1)
    assert seg.parent.name == "segmentation-images2-size32-s1" and (seg.parent / "class_dict.csv").exists()
    # the message names the bad case and the known ones
    with pytest.raises(ValueError, match=r"(?=.*'video')(?=.*spectrogram)(?=.*segmentation)"):  # in import order
        samples.cached("video", workdir=tmp_path)
