"""Issue 13: never lose or corrupt a user's data (output folders, stores, manifests, the CLI).

Each test reproduces one finding of the issue on tiny data; the item number is in the name's docstring.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from kit import samples, store
from kit.errors import OutputError


def _kit(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True, cwd=cwd)


def _one_error_line(r):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("kit: error:"), r.stderr
    return lines[0]


@pytest.fixture
def spec(tmp_path):
    """A tiny spectrogram sample: 2 files x 3 frames, and its index."""
    from kit.spectrogram import FrameIndex

    csv = samples.make_spectrogram(tmp_path / "data", files=2, frames_per_file=3, seed=1)
    return FrameIndex.from_csv(csv)


# --------------------------------------------------------------------------- 1. samples --out


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


def test_samples_cli_refuses_with_one_line(tmp_path):
    """Item 1 through the CLI: one line, exit 2, the user's file intact."""
    victim = tmp_path / "x"
    victim.write_text("keep me")
    for extra in ([], ["--force"]):
        r = _kit("samples", "spectrogram", "--out", str(victim), "--files", "1", "--frames-per-file", "2",
                 *extra)
        assert "refusing" in _one_error_line(r)
    assert victim.read_text() == "keep me"


# --------------------------------------------------------------------------- 2. store folder vs sources


def test_convert_refuses_a_store_folder_overlapping_the_sources(spec, tmp_path):
    """Item 2: --out the sources' folder, a folder inside it, or one above it is refused."""
    from kit.spectrogram import convert

    src = spec.files[0].parent
    before = {p.name: p.read_bytes() for p in src.iterdir()}
    for out, how in ((src, "is"), (src / "store", "sits inside"), (tmp_path, "contains")):
        with pytest.raises(store.StoreError, match=how):
            convert(spec, "memmap", out, progress=False)
    assert {p.name: p.read_bytes() for p in src.iterdir()} == before
    assert not (src / "store").exists()
    r = _kit("convert", "spectrogram", "--index", str(spec.csv_path), "--to", "memmap", "--out", str(src))
    assert "holds the index's source files" in _one_error_line(r)
    assert {p.name: p.read_bytes() for p in src.iterdir()} == before


def test_store_refuses_an_existing_folder_that_is_not_a_kit_store(spec, tmp_path):
    """Item 2: an existing non-empty folder without the kit's marker, or of another kind, is refused."""
    from kit.spectrogram import convert

    user = tmp_path / "results"
    user.mkdir()
    (user / "frames.npy").write_bytes(b"user data")
    with pytest.raises(store.StoreError, match="not a kit store"):
        convert(spec, "memmap", user, progress=False)
    assert (user / "frames.npy").read_bytes() == b"user data"
    folder, _ = convert(spec, "memmap", tmp_path / "st", progress=False)
    assert store.store_kind(folder) == "spectrogram-memmap"
    with pytest.raises(store.StoreError, match="kind 'spectrogram-memmap'"):
        convert(spec, "tfrecord", folder, progress=False)
    assert store.verify(folder) == []
    # The same kind again is the kit's own folder: reused.
    again, m = convert(spec, "memmap", folder, progress=False)
    assert again == folder and m.count == 6


# --------------------------------------------------------------------------- 3. manifest names


@pytest.mark.parametrize("name", ["../victim.txt", "ABSOLUTE", "sub/../../victim.txt"])
def test_manifest_names_stay_inside_the_store(spec, tmp_path, name):
    """Item 3: a manifest naming a file outside the store makes neither convert delete it nor verify read it."""
    from kit.spectrogram import convert

    folder, _ = convert(spec, "memmap", tmp_path / "st", progress=False)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    path = folder / store.MANIFEST
    m = json.loads(path.read_text())
    m["shards"][1]["name"] = str(victim) if name == "ABSOLUTE" else name
    m["key"] = "stale"  # so convert rebuilds and removes the old store's files
    path.write_text(json.dumps(m))
    with pytest.raises(store.StoreError, match="leaves the store folder"):
        store.Manifest.load(folder)
    problems = store.verify(folder)
    assert len(problems) == 1 and "leaves the store folder" in problems[0]
    with pytest.raises(store.StoreError, match="leaves the store folder"):
        convert(spec, "memmap", folder, progress=False)
    assert victim.read_text() == "precious"
    r = _kit("verify", str(folder))
    assert "leaves the store folder" in _one_error_line(r)


def test_manifest_name_through_a_link_stays_inside(spec, tmp_path):
    """Item 3: a shard name that is a link leading out of the store is refused too."""
    from kit.spectrogram import convert

    folder, _ = convert(spec, "memmap", tmp_path / "st", progress=False)
    (tmp_path / "outside").mkdir()
    (folder / "link").symlink_to(tmp_path / "outside")
    m = json.loads((folder / store.MANIFEST).read_text())
    m["shards"][1]["name"] = "link/labels.npy"
    (folder / store.MANIFEST).write_text(json.dumps(m))
    with pytest.raises(store.StoreError, match="resolves outside"):
        store.Manifest.load(folder)
    assert np.load(folder / "labels.npy").shape == (6,)
