"""``python -m kit cache``: lists the kit cache; ``--clean`` removes only what the kit made, inside it."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kit import cache, samples, store

DAY = 86400


def _store(folder: Path, kind: str = "test-kind", payload: bytes = b"x" * 1000):
    def write(shard, tmp, advance):
        tmp.write_bytes(payload)
        advance(shard.count)

    return store.build(folder, kind=kind, key=kind + str(len(payload)), shards=[store.Shard("data.bin", 1)],
                       write=write, progress=False)


def _age(path: Path, days: float):
    t = time.time() - days * DAY
    os.utime(path, (t, t))


@pytest.fixture
def filled(tmp_path, monkeypatch):
    """A cache with two kit stores (one 10 days old), kit samples, an interrupted build,
    and things the kit did not make: a file, a folder, a folder with a look-alike manifest,
    and a link to a folder outside the cache."""
    root = tmp_path / "cache"
    monkeypatch.setenv("KIT_CACHE", str(root))
    _store(root / "store-new", payload=b"n" * 3000)
    _store(root / "store-old", payload=b"o" * 2000)
    _age(root / "store-old" / store.MANIFEST, 10)
    samples.make_spectrogram(root / "samples-tiny", files=1, frames_per_file=2, seed=0, height=4, width=3)
    (root / "broken-build" / store.PARTIAL).mkdir(parents=True)
    (root / "broken-build" / store.STORE_MARKER).write_text("test-kind")
    for p in [root / "broken-build" / store.PARTIAL, root / "broken-build", root / "broken-build" / store.STORE_MARKER]:
        _age(p, 3)
    (root / "notes.txt").write_text("mine")
    (root / "my-folder").mkdir()
    (root / "my-folder" / "data.npy").write_bytes(b"y" * 5000)
    (root / "fake-store").mkdir()
    (root / "fake-store" / "manifest.json").write_text('{"name": "not a kit manifest"}')
    outside = tmp_path / "outside"
    _store(outside, payload=b"z" * 4000)  # a real kit store, but outside the cache
    _age(outside / store.MANIFEST, 30)
    (root / "link-out").symlink_to(outside, target_is_directory=True)
    return root, outside


def test_scan_tells_the_kits_entries_from_the_rest(filled):
    root, _ = filled
    by = {e.path.name: e for e in cache.scan()}
    assert set(by) == {"store-new", "store-old", "samples-tiny", "broken-build", "notes.txt", "my-folder",
                       "fake-store", "link-out"}
    assert {n for n, e in by.items() if e.kits} == {"store-new", "store-old", "samples-tiny", "broken-build"}
    assert by["store-new"].kind == "test-kind" and by["store-new"].bytes > 3000
    assert by["samples-tiny"].kind == "spectrogram-samples"
    assert "frames_per_file=2" in by["samples-tiny"].built_by
    assert not by["broken-build"].complete
    assert 9.9 * DAY < by["store-old"].age_s < 10.1 * DAY
    assert by["link-out"].bytes < 1000  # the link itself, never what it points to


def test_clean_by_age_removes_only_old_kit_entries(filled):
    root, outside = filled
    gone = cache.clean(older_than=2 * DAY)
    assert sorted(e.path.name for e in gone) == ["broken-build", "store-old"]
    left = {p.name for p in root.iterdir()}
    assert left == {"store-new", "samples-tiny", "notes.txt", "my-folder", "fake-store", "link-out"}
    assert (outside / "data.bin").exists()  # 30 days old, but outside the cache


def test_clean_by_size_removes_oldest_first_and_never_foreign(filled):
    root, outside = filled
    gone = cache.clean(max_bytes=0)
    assert {e.path.name for e in gone} == {"store-new", "store-old", "samples-tiny", "broken-build"}
    assert [e.path.name for e in gone][:2] == ["store-old", "broken-build"]  # oldest first
    assert {p.name for p in root.iterdir()} == {"notes.txt", "my-folder", "fake-store", "link-out"}
    assert (root / "notes.txt").read_text() == "mine" and (root / "my-folder" / "data.npy").exists()
    assert (outside / "data.bin").exists() and (outside / store.MANIFEST).exists()


def test_clean_by_size_stops_within_budget(filled):
    ours = [e for e in cache.scan() if e.kits]
    total = sum(e.bytes for e in ours)
    newest = max(ours, key=lambda e: e.created)
    gone = cache.clean(max_bytes=total - 1, dry_run=True)
    assert len(gone) == 1 and gone[0].path.name == "store-old"
    assert newest.path.exists() and gone[0].path.exists()  # a dry run removes nothing


def test_a_running_build_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE", str(tmp_path))
    (tmp_path / "building" / store.PARTIAL).mkdir(parents=True)
    (tmp_path / "building" / store.STORE_MARKER).write_text("test-kind")
    assert cache.clean(max_bytes=0) == [] and (tmp_path / "building").exists()


def _kit(*args, env):
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True, env=env)


def test_command_lists_and_cleans(filled):
    root, outside = filled
    env = dict(os.environ)
    listed = _kit("cache", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "store-old" in listed.stdout and "10 d" in listed.stdout
    assert "left alone" in listed.stdout and str(root) in listed.stdout
    refused = _kit("cache", "--clean", env=env)
    assert refused.returncode == 2 and "--older-than" in refused.stderr
    bad = _kit("cache", "--clean", "--max-size", "lots", env=env)
    assert bad.returncode == 2 and "lots" in bad.stderr
    done = _kit("cache", "--clean", "--older-than", "7d", env=env)
    assert done.returncode == 0, done.stderr
    assert "removed 1 entries" in done.stdout and not (root / "store-old").exists()
    assert (root / "store-new").exists() and (outside / "data.bin").exists()


def test_parse_units():
    assert cache.parse_size("2GB") == 2_000_000_000 and cache.parse_size("0") == 0
    assert cache.parse_size("1.5m") == 1_500_000
    assert cache.parse_age("7d") == 7 * DAY and cache.parse_age("30min") == 1800
