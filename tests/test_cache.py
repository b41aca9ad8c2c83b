"""``python -m kit cache``: lists the kit cache; ``--clean`` removes only what the kit made, inside it."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kit import cache, samples, store
from kit.cache import command as cache_command
from kit.cache import entries as cache_entries
from kit.cache.reuse import USED_ENV, recording, reuse_report, used_by_others
from kit.store.folder import LOCK, MANIFEST, PARTIAL, STORE_MARKER
from kit.store.keys import files_fingerprint, forget_digests

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
    _age(root / "store-old" / MANIFEST, 10)
    samples.make_spectrogram(root / "samples-tiny", files=1, frames_per_file=2, seed=0, height=4, width=3)
    (root / "broken-build" / PARTIAL).mkdir(parents=True)
    (root / "broken-build" / STORE_MARKER).write_text("test-kind")
    for p in [root / "broken-build" / PARTIAL, root / "broken-build", root / "broken-build" / STORE_MARKER]:
        _age(p, 3)
    (root / "notes.txt").write_text("mine")
    (root / "my-folder").mkdir()
    (root / "my-folder" / "data.npy").write_bytes(b"y" * 5000)
    (root / "fake-store").mkdir()
    (root / "fake-store" / "manifest.json").write_text('{"name": "not a kit manifest"}')
    outside = tmp_path / "outside"
    _store(outside, payload=b"z" * 4000)  # a real kit store, but outside the cache
    _age(outside / MANIFEST, 30)
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
    assert (outside / "data.bin").exists() and (outside / MANIFEST).exists()


def test_clean_by_size_stops_within_budget(filled):
    ours = [e for e in cache.scan() if e.kits]
    total = sum(e.bytes for e in ours)
    newest = max(ours, key=lambda e: e.created)
    gone = cache.clean(max_bytes=total - 1, dry_run=True)
    assert len(gone) == 1 and gone[0].path.name == "store-old"
    assert newest.path.exists() and gone[0].path.exists()  # a dry run removes nothing


def test_a_running_build_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE", str(tmp_path))
    (tmp_path / "building" / PARTIAL).mkdir(parents=True)
    (tmp_path / "building" / STORE_MARKER).write_text("test-kind")
    assert cache.clean(max_bytes=0) == [] and (tmp_path / "building").exists()


def _kit(*args, env):
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True, env=env)


@pytest.mark.slow
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
    assert cache_command.parse_size("2GB") == 2_000_000_000 and cache_command.parse_size("0") == 0
    assert cache_command.parse_size("1.5m") == 1_500_000
    assert cache_command.parse_age("7d") == 7 * DAY and cache_command.parse_age("30min") == 1800


# --------------------------------------------------------------------------- what the kit writes besides stores


DIGESTS = "digests.sqlite3"


def _digests(root: Path):
    """The kit's digest database, written by the kit's own writer (``store.files_fingerprint``)."""
    files = sorted((samples.embedded("spectrogram").parent / "frames").glob("*.npy"))[:3]
    forget_digests()
    files_fingerprint(files)
    assert (root / DIGESTS).is_file()


def _sqlite(path: Path, *statements):
    import sqlite3

    db = sqlite3.connect(path)
    with db:
        for s in statements:
            db.execute(s)
    db.close()


@pytest.fixture
def generated(tmp_path, monkeypatch):
    """A cache as the benches leave it: samples from ``samples.cached`` (in ``samples/``) and
    the content-digest database, with an (empty) journal file beside it."""
    root = tmp_path / "cache"
    monkeypatch.setenv("KIT_CACHE", str(root))
    samples.cached("spectrogram", files=2, frames_per_file=3, height=4, width=3)
    samples.cached("segmentation", images=2, size=32)
    _digests(root)
    (root / (DIGESTS + "-journal")).write_bytes(b"")
    return root


def test_generated_samples_and_the_digest_database_are_the_kits(generated):
    root = generated
    by = {e.name: e for e in cache.scan()}
    spec = "samples/spectrogram-files2-frames_per_file3-height4-width3-s0"
    seg = "samples/segmentation-images2-size32-s0"
    assert set(by) == {spec, seg, DIGESTS}  # the journal counts with its database
    assert all(e.kits and e.complete for e in by.values())
    assert by[spec].kind == "spectrogram-samples" and by[spec].holds == "6 frames"
    assert by[seg].kind == "segmentation-samples" and by[seg].holds == "2 pairs"
    assert by[DIGESTS].kind == "content digests" and by[DIGESTS].holds == "3 files"
    assert by[DIGESTS].bytes == (root / DIGESTS).stat().st_size
    listed = _kit("cache", env=dict(os.environ))
    assert listed.returncode == 0 and spec in listed.stdout and "not the kit's" not in listed.stdout


def test_clean_removes_generated_samples_and_the_digest_database(generated):
    root = generated
    would = cache.clean(max_bytes=0, dry_run=True)
    assert len(would) == 3 and (root / DIGESTS).exists() and (root / "samples").is_dir()
    done = _kit("cache", "--clean", "--max-size", "0", env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert "removed 3 entries" in done.stdout and "left alone" not in done.stdout
    assert list(root.iterdir()) == []  # the database, its journal, the samples and their folder


def test_look_alikes_are_not_the_kits(tmp_path, monkeypatch):
    """A digests.sqlite3 that is not SQLite, or SQLite with other tables or columns, and a
    folder or file in samples/ without the kit's marker: listed as not the kit's, kept."""
    root = tmp_path / "cache"
    monkeypatch.setenv("KIT_CACHE", str(root))
    (root / "samples" / "my-clips").mkdir(parents=True)
    (root / "samples" / "my-clips" / "index.csv").write_text("path,frame,label\n")
    (root / "samples" / "notes.txt").write_text("mine")
    (root / "samples" / ".my-clips.tmp-1-abcdefgh").mkdir()  # a kit-like name, foreign content
    (root / "samples" / ".my-clips.tmp-1-abcdefgh" / "thesis.tex").write_text("mine")
    (root / "bench-transfer-abcdefgh").mkdir()
    (root / "bench-transfer-abcdefgh" / "features").mkdir()  # no kit store marker
    homes = {"text": root, "other-table": tmp_path / "c2", "other-columns": tmp_path / "c3"}
    (root / DIGESTS).write_text("not a database")
    for where in list(homes.values())[1:]:
        where.mkdir()
    _sqlite(homes["other-table"] / DIGESTS, "CREATE TABLE digest (k TEXT PRIMARY KEY, d TEXT NOT NULL)",
            "CREATE TABLE mine (x)")
    _sqlite(homes["other-columns"] / DIGESTS, "CREATE TABLE digest (k TEXT PRIMARY KEY, d BLOB)")
    for home in homes.values():
        entries = cache.scan(home)
        assert entries and not any(e.kits for e in entries), [(e.name, e.kind) for e in entries]
        before = {p: p.stat().st_mtime_ns for p in home.rglob("*")}
        assert cache.clean(home, max_bytes=0) == []
        assert {p: p.stat().st_mtime_ns for p in home.rglob("*")} == before
    assert {e.name for e in cache.scan(root)} == {DIGESTS, "samples/my-clips", "samples/notes.txt",
                                                  "samples/.my-clips.tmp-1-abcdefgh", "bench-transfer-abcdefgh"}


def _short_busy_wait(monkeypatch, seconds):
    """``BUSY_WAIT_S`` set to ``seconds`` in every module of the kit's cache that reads it (kit.cache
    re-exports it from the modules that use it: setting it there alone changes no wait)."""
    modules = [m for name, m in list(sys.modules.items())
               if name.startswith("kit.cache.") and hasattr(m, "BUSY_WAIT_S")]
    assert modules
    for m in modules:
        monkeypatch.setattr(m, "BUSY_WAIT_S", seconds)


def _holding(db: Path, statements: str):
    """A process that runs ``statements`` on ``db`` in one open transaction, until told to end."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         f"db = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
         f"for s in {statements!r}.split(';'): db.execute(s).fetchall()\n"
         "print('holding', flush=True); sys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding"
    return holder


def test_a_digest_database_in_use_is_left_alone(generated, monkeypatch):
    """Another process midway through a write, or a read, holds the database: clean leaves
    it (a writer: listed as in use; a reader: waited for BUSY_WAIT_S, then skipped and said
    so); once released, it goes."""
    root = generated
    _short_busy_wait(monkeypatch, 0.3)
    _age(root / DIGESTS, 3)
    writer = _holding(root / DIGESTS, "BEGIN EXCLUSIVE;INSERT INTO digest VALUES ('x', 'y')")
    try:
        gone = cache.clean(max_bytes=0)
        assert DIGESTS not in {e.path.name for e in gone} and (root / DIGESTS).exists()
        busy = {e.name: e for e in cache.scan()}[DIGESTS]
        assert busy.kits and busy.kind == "content digests (in use)"
    finally:
        writer.communicate("\n", timeout=30)
    reader = _holding(root / DIGESTS, "BEGIN;SELECT COUNT(*) FROM digest")
    try:
        held = []
        assert cache.clean(max_bytes=0, skipped=held) == [] and [e.name for e in held] == [DIGESTS]
        assert (root / DIGESTS).exists()
    finally:
        reader.communicate("\n", timeout=30)
    assert {e.name for e in cache.clean(max_bytes=0)} == {DIGESTS}
    assert not (root / DIGESTS).exists() and not (root / (DIGESTS + "-journal")).exists()


def test_a_store_being_built_is_left_alone(tmp_path, monkeypatch):
    """A store whose build lock another holder has (a build, or a reader checking it at
    open) is skipped after BUSY_WAIT_S, however old its manifest."""
    import fcntl

    monkeypatch.setenv("KIT_CACHE", str(tmp_path))
    _short_busy_wait(monkeypatch, 0.2)
    _store(tmp_path / "store-a")
    _age(tmp_path / "store-a" / MANIFEST, 10)
    fd = os.open(tmp_path / "store-a" / LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        assert cache.clean(older_than=DAY) == [] and (tmp_path / "store-a" / "data.bin").exists()
        held = []
        assert cache.clean(older_than=DAY, skipped=held) == [] and [e.name for e in held] == ["store-a"]
    finally:
        os.close(fd)
    assert [e.name for e in cache.clean(older_than=DAY)] == ["store-a"] and not (tmp_path / "store-a").exists()


def test_killed_builds_leftovers_are_the_kits(tmp_path, monkeypatch):
    """A killed sample build's temporary folder (its process gone) and a killed bench
    transfer's scratch feature cache: the kit's, cleaned once older than BUSY_S; a sample
    build whose process is alive is kept."""
    monkeypatch.setenv("KIT_CACHE", str(tmp_path))
    gone_pid = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout.strip()
    dead = tmp_path / "samples" / f".spectrogram-x.tmp-{gone_pid}-abcdefgh"
    live = tmp_path / "samples" / f".spectrogram-y.tmp-{os.getpid()}-abcdefgh"
    for d in (dead, live):
        (d / "frames").mkdir(parents=True)
        (d / "frames" / "clip_000000.npy").write_bytes(b"x" * 100)
    scratch = tmp_path / "bench-transfer-abcd_123"
    _store(scratch / "features", kind="feature-cache")
    for p in [*dead.rglob("*"), dead, *live.rglob("*"), live, *scratch.rglob("*"), scratch]:
        _age(p, 1)
    by = {e.name: e for e in cache.scan()}
    assert by[f"samples/{dead.name}"].kits and not by[f"samples/{dead.name}"].complete
    assert by[scratch.name].kits and by[scratch.name].kind == "feature-cache (scratch)"
    assert {e.path.name for e in cache.clean(max_bytes=0)} == {dead.name, scratch.name}
    assert live.exists() and not dead.exists() and not scratch.exists()


# --------------------------------------------------------------------------- reuse


def test_reuse_report_names_what_was_reused_and_built(tmp_path, monkeypatch):
    """Reused: entries there before, unchanged, and opened in the run; built: new or rebuilt."""
    import numpy as np

    monkeypatch.setenv("KIT_CACHE", str(tmp_path))
    csv = samples.cached("spectrogram", files=2, frames_per_file=3, height=4, width=3)
    _store(tmp_path / "store-used", payload=b"u" * 3000)
    _store(tmp_path / "store-idle", payload=b"i" * 2000)
    _store(tmp_path / "store-rebuilt", payload=b"r" * 1000)
    for name in ("store-used", "store-idle", "store-rebuilt"):
        _age(tmp_path / name / MANIFEST, 2)
    before = cache.scan()
    with recording() as used:
        np.load(csv.parent / "frames" / "clip_000000.npy")
        store.Manifest.load(tmp_path / "store-used")
        _store(tmp_path / "store-new", payload=b"n" * 500)
        (tmp_path / "store-rebuilt" / MANIFEST).touch()
    open(tmp_path / "store-idle" / MANIFEST).close()  # after the run: not counted
    assert {"samples/" + csv.parent.name, "store-used", "store-new"} <= used
    assert "store-idle" not in used
    after = {e.name: e for e in cache.scan()}
    lines = reuse_report(before, list(after.values()), used)
    text = "\n".join(lines)
    reused = lines[:lines.index(next(s for s in lines if s.startswith("built")))]
    assert reused[0] == (f"reused from earlier runs: 2 entries, "
                         f"{cache_entries.fmt_bytes(after['store-used'].bytes + after['samples/' + csv.parent.name].bytes)}")
    assert any("store-used" in s and cache_entries.fmt_bytes(after["store-used"].bytes) in s for s in reused)
    assert any(csv.parent.name in s and "6 frames" in s for s in reused)
    built = text[text.index("built or updated in this run: 2 entries"):]
    assert "store-new" in built and "store-rebuilt" in built
    assert "store-idle" not in text
    assert reuse_report(before, before, set()) == ["nothing reused from the kit cache or built in it"]


def test_a_results_ledger_in_the_cache_is_the_kits_and_a_look_alike_is_not(tmp_path):
    """Outside a checkout the ledger lives in the cache (kit.results.ledger_path)."""
    from kit import results

    results.append([{"variant": "memmap", "examples_per_s": 1.0}], bench="spectrogram", machine={"host": "h"},
                   file=tmp_path / "results.jsonl")
    entry = cache_entries.classify(tmp_path / "results.jsonl")
    assert entry.kits and entry.kind == "results ledger"
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.jsonl").write_text('{"my": "own notes"}\n')
    assert not cache_entries.classify(other / "results.jsonl").kits


def test_a_child_process_says_which_cache_entries_it_opened_at_exit(tmp_path):
    """What `python -m kit demo` learns from the notebooks' kernels (kit.notebook.session starts it)."""
    kc = tmp_path / "cache"
    csv = samples.cached("spectrogram", files=2, frames_per_file=3, workdir=kc)
    used = tmp_path / "used.txt"
    code = ("import numpy as np, sys; from kit.cache import reuse; assert reuse.record_for_life(); "
            "np.load(sys.argv[1], allow_pickle=False)")
    npy = next(csv.parent.rglob("*.npy"))
    env = {**os.environ, "KIT_CACHE": str(kc), USED_ENV: str(used)}
    subprocess.run([sys.executable, "-c", code, str(npy)], env=env, check=True, timeout=120)
    assert used_by_others(used) == {f"samples/{csv.parent.name}"}
    env.pop(USED_ENV)
    subprocess.run([sys.executable, "-c", code.replace("assert reuse.record_for_life()", "pass"), str(npy)],
                   env=env, check=True, timeout=120)
    assert used_by_others(used) == {f"samples/{csv.parent.name}"}  # nothing more without the variable
    assert used_by_others(tmp_path / "none.txt") == set()
