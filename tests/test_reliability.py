"""Issue 13: never lose or corrupt a user's data (output folders, stores, manifests, the CLI).

Each test reproduces one finding of the issue on tiny data; the item number is in the name's docstring.
"""

import errno
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kit import samples, store
from kit.errors import OutputError
from kit.store import checks, keys
from kit.store.folder import claim


def _kit(*args, cwd=None):
    # Bounded: a server the CLI wrongly started would serve forever.
    return subprocess.run([sys.executable, "-m", "kit", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


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


# --------------------------------------------------------------------------- 4. the key follows content


def _rewrite_keeping_size_and_mtime(path, data: bytes):
    st = path.stat()
    assert len(data) == st.st_size
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns


def test_a_source_rewritten_with_same_size_and_mtime_gets_a_new_store(spec, tmp_path):
    """Item 4: a rewrite keeping size and mtime (in place, as `cp -p` onto a file) changes the key."""
    from kit.spectrogram import FrameIndex, convert

    folder, _ = convert(spec, "memmap", progress=False)
    first = np.load(folder / "frames.npy")
    src = spec.files[0]
    new = np.load(src) + 1.0
    buf = tmp_path / "new.npy"
    np.save(buf, new.astype(np.float32))
    _rewrite_keeping_size_and_mtime(src, buf.read_bytes())
    again = FrameIndex.from_csv(spec.csv_path)
    assert again.fingerprint() != spec.fingerprint()
    folder2, _ = convert(again, "memmap", progress=False)
    assert folder2 != folder
    np.testing.assert_array_equal(np.load(folder2 / "frames.npy")[:3], new)
    np.testing.assert_array_equal(np.load(folder / "frames.npy"), first)  # the old store untouched


def test_cp_p_onto_the_same_inode_changes_the_digest(tmp_path):
    """Item 4: `cp -p` over an existing file keeps its inode, size and mtime; the digest still follows."""
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"x" * 300_000)
    b.write_bytes(b"y" * 300_000)
    os.utime(b, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns))
    before = store.files_fingerprint([a])[0]
    ino = a.stat().st_ino
    subprocess.run(["cp", "-p", str(b), str(a)], check=True)
    after = store.files_fingerprint([a])[0]
    assert a.stat().st_ino == ino and before[1:3] == after[1:3]  # same inode, size, mtime
    assert before[3] != after[3]


def test_digests_are_computed_once_per_file_and_cached_on_disk(tmp_path, monkeypatch):
    """Item 4: each file is read once; a new process finds the digests in the cache."""
    files = []
    for i in range(3):
        files.append(tmp_path / f"f{i}.bin")
        files[-1].write_bytes(bytes([i]) * 400_000)
    calls = []
    real = keys.content_digest
    monkeypatch.setattr(keys, "content_digest", lambda p, mode="sample": calls.append(p) or real(p, mode))
    first = store.files_fingerprint(files)
    assert len(calls) == 3
    assert store.files_fingerprint(files) == first and len(calls) == 3
    monkeypatch.setattr(keys, "_DIGESTS", keys._DigestCache())  # as in a new process
    assert store.files_fingerprint(files) == first and len(calls) == 3
    assert (store.default_workdir() / "digests.sqlite3").exists()


def test_full_digest_sees_what_the_sample_skips(tmp_path, monkeypatch):
    """Item 4: the full-hash option (digest="full" or KIT_DIGEST=full) catches a change between samples."""
    f = tmp_path / "big.bin"
    data = bytearray(np.random.default_rng(0).bytes(1 << 20))
    f.write_bytes(bytes(data))
    sample, full = store.files_fingerprint([f])[0][3], store.files_fingerprint([f], digest="full")[0][3]
    data[200_000] ^= 0xFF  # between the sampled blocks
    _rewrite_keeping_size_and_mtime(f, bytes(data))
    assert store.files_fingerprint([f])[0][3] == sample
    assert store.files_fingerprint([f], digest="full")[0][3] != full
    monkeypatch.setenv("KIT_DIGEST", "full")
    assert store.files_fingerprint([f])[0][3] != full
    monkeypatch.setenv("KIT_DIGEST", "sha1")
    with pytest.raises(ValueError, match="digest must be one of"):
        store.files_fingerprint([f])


# --------------------------------------------------------------------------- 5. concurrent builds

_BUILDER = r"""
import sys, time
from pathlib import Path
from kit import store
folder, key, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
def write(shard, tmp, advance):
    time.sleep(delay)
    tmp.write_bytes((key + shard.name).encode() * shard.count)
shards = [store.Shard(f"part-{i}.bin", 50 + i) for i in range(4)]
m = store.build(folder, kind="test", key=key, shards=shards, write=write, progress=False, lock_timeout=60)
print("built", m.key)
"""


def _builders(folder, *keys, delay=0.1):
    procs = [subprocess.Popen([sys.executable, "-c", _BUILDER, str(folder), k, str(delay)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in keys]
    return [(p.wait(timeout=120), *p.communicate()) for p in procs]


_CLAIMER = r"""
import sys, time
from pathlib import Path
from kit.store.folder import StoreError, claim
root, start = Path(sys.argv[1]), float(sys.argv[2])
while time.time() < start:
    pass
refused = []
for i in range(300):
    try:
        claim(root / f"s{i}", "test")
    except StoreError as e:
        refused.append(str(e))
print(len(refused), refused[:1])
"""


def test_two_processes_claiming_the_same_new_folders_never_refuse_each_other(tmp_path):
    """A claim once read the other's marker while it was still empty (or listed it just after
    finding none) and refused the folder as foreign: 1-111 refusals in 400 such claims."""
    import time

    start = str(time.time() + 2)
    procs = [subprocess.Popen([sys.executable, "-c", _CLAIMER, str(tmp_path), start],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    out = [(p.wait(timeout=120), *p.communicate()) for p in procs]
    assert [o[0] for o in out] == [0, 0], out
    assert [o[1].split()[0] for o in out] == ["0", "0"], out
    for i in range(300):
        assert store.store_kind(tmp_path / f"s{i}") == "test"
        assert sorted(p.name for p in (tmp_path / f"s{i}").iterdir()) == [store.STORE_MARKER]  # no temp left


def test_a_folder_holding_only_a_marker_being_written_is_claimed(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / f"{store.STORE_MARKER}.tmp-123-456").write_text("test\n")  # another claim, mid-write
    assert claim(folder, "test") == folder
    assert store.store_kind(folder) == "test"
    (folder / "mine.txt").write_text("x")
    (folder / store.STORE_MARKER).unlink()
    with pytest.raises(store.StoreError, match="is not a kit store"):  # a file of someone else's still is
        claim(folder, "test")


def test_two_identical_concurrent_builds_both_succeed(tmp_path):
    """Item 5: the second builder waits on the lock, then finds the store complete."""
    results = _builders(tmp_path / "s", "k1", "k1")
    assert [r[0] for r in results] == [0, 0], results
    assert all(r[1].strip() == "built k1" for r in results)
    assert store.verify(tmp_path / "s") == []


def test_two_builds_with_other_options_never_mix(tmp_path):
    """Item 5: builds of two keys at once leave a store whose manifest matches every shard."""
    results = _builders(tmp_path / "s", "k1", "k2")
    assert [r[0] for r in results] == [0, 0], results
    m = store.Manifest.load(tmp_path / "s")
    assert store.verify(tmp_path / "s") == []
    for s in m.shards:
        assert (tmp_path / "s" / s["name"]).read_bytes().startswith((m.key + s["name"]).encode())
    store.check_open(tmp_path / "s", m)


def test_a_held_build_lock_is_a_bounded_wait(tmp_path):
    """Item 5: a builder waiting on another one gives up after lock_timeout with a clear error."""
    folder = tmp_path / "s"
    claim(folder, "test")
    with store.store_lock(folder):
        with pytest.raises(store.StoreError, match="another process .pid \\d+. is building"):
            store.build(folder, kind="test", key="k", shards=[store.Shard("a", 1)],
                        write=lambda s, t, a: t.write_bytes(b"a"), progress=False, lock_timeout=0.3)
    with pytest.raises(ValueError, match="non-negative"):
        with store.store_lock(folder, timeout=-1):
            pass


def test_a_manifest_over_shards_of_another_build_is_refused_at_open(tmp_path):
    """Item 5: shards of the same sizes but from another build are found at open (head/tail digests)."""
    def writer(tag):
        return lambda s, tmp, adv: tmp.write_bytes(tag * 100_000)
    shards = [store.Shard("a.bin", 1), store.Shard("b.bin", 1)]
    store.build(tmp_path / "one", kind="test", key="k1", shards=shards, write=writer(b"1"), progress=False)
    store.build(tmp_path / "two", kind="test", key="k2", shards=shards, write=writer(b"2"), progress=False)
    os.replace(tmp_path / "two" / "b.bin", tmp_path / "one" / "b.bin")
    with pytest.raises(store.StoreError, match="b.bin: its head or tail differs"):
        store.build(tmp_path / "one", kind="test", key="k1", shards=shards, write=writer(b"1"),
                    progress=False, check=False)


# --------------------------------------------------------------------------- 6. corrupt stores


def _flip(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    _rewrite_keeping_size_and_mtime(path, bytes(data))


def test_memmap_loader_refuses_a_flipped_byte(spec, monkeypatch):
    """Item 6: a flipped byte in frames.npy is found at open (once per change; check=False opts out)."""
    from kit.spectrogram import convert, make_loader

    folder, m = convert(spec, "memmap", progress=False)
    middle = (folder / "frames.npy").stat().st_size // 2  # past the head's 64 KiB, before the tail's
    _flip(folder / "frames.npy", middle)
    hashed = []
    real = checks.sha256_file
    monkeypatch.setattr(checks, "sha256_file", lambda p, *a, **k: hashed.append(p) or real(p, *a, **k))
    for _ in range(2):  # refused every time, not only once
        with pytest.raises(store.StoreError, match="frames.npy: checksum differs from the manifest"):
            make_loader("memmap", spec, batch_size=4, progress=False)
    assert convert(spec, "memmap", check=False, progress=False)[1].key == m.key
    hashed.clear()
    make_loader("memmap", spec, batch_size=4, progress=False, check_store=False)  # the loader's own opt-out
    assert hashed == []
    with pytest.raises(store.StoreError, match="checksum differs"):  # one opt-out does not stick
        make_loader("memmap", spec, batch_size=4, progress=False, check_store=None)
    with pytest.raises(ValueError, match="check_store must be True, False or None"):
        make_loader("memmap", spec, batch_size=4, progress=False, check_store="no")
    monkeypatch.setenv("KIT_CHECK_STORES", "0")
    make_loader("memmap", spec, batch_size=4, progress=False)
    # A sound store is hashed once, then its check is remembered by (inode, size, mtime, ctime).
    monkeypatch.delenv("KIT_CHECK_STORES")
    _flip(folder / "frames.npy", middle)
    hashed.clear()
    convert(spec, "memmap", progress=False)
    convert(spec, "memmap", progress=False)
    assert [p.name for p in hashed] == ["frames.npy"]  # labels.npy unchanged since its check


def test_memmap_labels_come_from_the_index(spec, monkeypatch):
    """Item 6: a corrupt labels.npy never reaches training: labels come from the index."""
    from kit.spectrogram import convert, make_loader

    folder, _ = convert(spec, "memmap", progress=False)
    bad = np.full(len(spec), 72057594037927940, np.int64)
    raw = folder / "labels.npy"
    tmp = raw.with_name("bad.npy")
    np.save(tmp, bad)
    _rewrite_keeping_size_and_mtime(raw, tmp.read_bytes())
    tmp.unlink()
    with pytest.raises(store.StoreError, match="labels.npy"):  # the check at open finds it ...
        make_loader("memmap", spec, batch_size=4, progress=False)
    # ... and were it missed (checks turned off), the loader still never reads labels.npy.
    monkeypatch.setattr(store, "check_open", lambda *a, **k: None)
    ys = np.concatenate([y.numpy() for _, y in make_loader("memmap", spec, batch_size=4, shuffle=False,
                                                            progress=False)])
    np.testing.assert_array_equal(ys, spec.labels)


def test_corrupt_tfrecord_shard_error_names_the_shard(spec):
    """Item 6: a corrupt TFRecord shard is named (TensorFlow's own error names no file)."""
    from kit.spectrogram import convert, make_loader

    folder, m = convert(spec, "tfrecord", shard_mb=0.05, progress=False)
    victim = folder / m.shards[1]["name"]
    _flip(victim, victim.stat().st_size // 2)
    with pytest.raises(store.StoreError, match=f"{victim.name}: .*corrupt"):
        make_loader("tfrecord", spec, batch_size=4, progress=False, shard_mb=0.05)


def test_class_index_refuses_a_flipped_byte_unless_the_loader_opts_out(tmp_path):
    """Item 6, the segmentation case: a flipped byte in a class_index shard is found at open;
    ``check_store=False`` in make_loader skips the checksums, for that call only."""
    from kit.segmentation import PairIndex, Palette, convert, make_loader

    csv = samples.make_segmentation(tmp_path / "seg", images=3, size=160)  # shards past the 64 KiB head and tail
    index, palette = PairIndex.from_csv(csv), Palette.from_csv(csv.parent / "class_dict.csv")

    def load(**options):
        return make_loader("class_index", index, palette, batch_size=2, size=(160, 160),
                           workdir=tmp_path / "work", progress=False, **options)

    load()
    folder, m = convert(index, palette, size=(160, 160), workdir=tmp_path / "work", progress=False)
    victim = folder / m.shards[0]["name"]
    assert victim.stat().st_size > 3 * 65536
    _flip(victim, victim.stat().st_size // 2)
    with pytest.raises(store.StoreError, match=f"{victim.name}: checksum differs from the manifest"):
        load()
    assert sum(len(y) for _, y in load(check_store=False)) == 3  # opted out: read as it is
    with pytest.raises(store.StoreError, match=f"{victim.name}: checksum differs from the manifest"):
        load()
    with pytest.raises(ValueError, match="check_store must be True, False or None, got 0"):
        load(check_store=0)


# --------------------------------------------------------------------------- 10. disk full


def test_a_build_without_enough_free_space_is_refused_before_writing(spec, tmp_path, monkeypatch):
    """Item 10: free space is checked first; the error says how much is needed."""
    from kit.spectrogram import convert

    import shutil

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage._replace(free=1000))
    with pytest.raises(store.StoreError, match=r"the store st needs 0.0 GB free under .*st, which has 0.0 GB"):
        convert(spec, "memmap", tmp_path / "st", progress=False)
    assert not list((tmp_path / "st").glob("*.npy"))


def test_disk_full_while_writing_removes_the_partial_file_and_says_so(spec, tmp_path, monkeypatch, capsys):
    """Item 10: ENOSPC while writing: the temp file is removed and the CLI prints one line."""
    from kit.cli import main

    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    out = tmp_path / "st"
    assert main(["convert", "spectrogram", "--index", str(spec.csv_path), "--to", "memmap",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    err = [line for line in err.splitlines() if line.startswith("kit:")]  # and the progress bar
    assert len(err) == 1 and err[0].startswith("kit: error:") and "disk full" in err[0], err
    assert "frames.npy" in err[0]
    assert not [p for p in out.rglob("*") if ".tmp-" in p.name]


def test_memmap_shards_reserve_their_blocks(tmp_path):
    """Item 10: a memmap shard's blocks are allocated before it is written (no SIGBUS on a full disk)."""
    path = tmp_path / "x.npy"
    mm = store.open_memmap(path, dtype=np.float32, shape=(256, 1024))
    del mm
    st = path.stat()
    assert st.st_blocks * 512 >= st.st_size


def test_tfrecord_disk_full_is_one_line(spec, tmp_path, monkeypatch):
    """Item 10: TensorFlow's disk-full error while writing TFRecords becomes one StoreError line."""
    import tensorflow as tf

    from kit.spectrogram import convert

    class Full(tf.io.TFRecordWriter):
        def write(self, record):
            raise tf.errors.ResourceExhaustedError(None, None, "/x; No space left on device")

    monkeypatch.setattr(tf.io, "TFRecordWriter", Full)
    with pytest.raises(store.StoreError, match="disk full while writing") as e:
        convert(spec, "tfrecord", tmp_path / "st", shard_mb=0.05, workers=1, progress=False)
    assert "\n" not in str(e.value)
    assert not [p for p in (tmp_path / "st").rglob("*") if ".tmp-" in p.name]


# --------------------------------------------------------------------------- 11. stale temp files


def _dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_temp_files_of_killed_builds_are_removed(tmp_path):
    """Item 11: a new build removes *.tmp-PID-TID files whose process is gone, and keeps live ones."""
    folder = tmp_path / "s"
    claim(folder, "test")
    dead = folder / f"part-0.bin.tmp-{_dead_pid()}-140000"
    live = folder / f"part-1.bin.tmp-{os.getpid()}-1"
    nested = folder / "sub" / f"x.tmp-{_dead_pid()}-7"
    nested.parent.mkdir()
    for p in (dead, live, nested):
        p.write_bytes(b"half written")
    store.build(folder, kind="test", key="k", shards=[store.Shard("part-0.bin", 1)],
                write=lambda s, t, a: t.write_bytes(b"ok"), progress=False)
    assert not dead.exists() and not nested.exists() and live.exists()


def test_temp_folders_of_killed_sample_runs_are_removed(tmp_path):
    """Item 11: a new samples run removes the temporary folder a killed run left."""
    stale = tmp_path / f".s.tmp-{_dead_pid()}-abc123"
    stale.mkdir()
    (stale / "index.csv").write_text("half")
    samples.make_spectrogram(tmp_path / "s", files=1, frames_per_file=2)
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s"]


# --------------------------------------------------------------------------- 12. the CLI


@pytest.mark.parametrize("args, says", [
    (["samples", "spectrogram", "--out", "/dev/null/x", "--files", "1", "--frames-per-file", "1"],
     "/dev/null"),
    (["convert", "spectrogram", "--index", "DATA", "--to", "memmap", "--out", "/dev/null/x"], "/dev/null"),
    (["convert", "spectrogram", "--index", "FOLDER", "--to", "memmap", "--out", "OUT"], "directory"),
    (["convert", "spectrogram", "--index", "DATA", "--to", "tfrecord", "--out", "OUT", "--shard-mb", "0"],
     "--shard-mb: must be a positive number, got 0"),
    (["convert", "spectrogram", "--index", "DATA", "--to", "tfrecord", "--out", "OUT", "--seed", "-1"],
     "--seed: must be non-negative, got -1"),
    (["convert", "spectrogram", "--index", "DATA", "--to", "tfrecord", "--out", "OUT", "--workers", "0"],
     "--workers: must be positive"),
    (["samples", "spectrogram", "--out", "OUT", "--files", "1", "--frames-per-file", "1", "--seed", "-1"],
     "--seed: must be non-negative, got -1"),
    (["bench", "timer", "--steps", "0"], "--steps: must be positive, got 0"),
    (["bench", "timer", "--rounds", "0"], "--rounds: must be positive, got 0"),
    (["bench", "timer", "--batch-size", "0"], "--batch-size: must be positive, got 0"),
    (["bench", "spectrogram", "--batches", "0"], "--batches: must be positive, got 0"),
    (["bench", "spectrogram", "--generator-seconds", "-1"], "--generator-seconds: must be a positive number"),
    (["service", "dispatcher", "--port", "70000"], "--port: must be a port in 1..65535"),
    (["service", "dispatcher", "--port", "0"], "--port: must be a port in 1..65535"),
    (["service", "dispatcher", "--worker-timeout-s", "-5"], "--worker-timeout-s: must be a positive"),
    (["service", "worker", "--dispatcher", "localhost:5000", "--port", "0"], "--port: must be a port in 1..65535"),
    (["service", "worker", "--dispatcher", "localhost:5000", "--port", "70000"], "--port: must be a port in 1..65535"),
    (["service", "dispatcher", "--bind", "192.0.2.1"], "bind: '192.0.2.1' is not an address of this machine"),
    (["service", "worker", "--dispatcher", "192.0.2.1:5000"], "a worker reached at 127.0.0.1 (--bind 127.0.0.1) "
                                                               "cannot serve the dispatcher at 192.0.2.1:5000"),
    (["service", "worker", "--dispatcher", "localhost:5000", "--port", "-1"], "--port: must be a port in 1..65535"),
    (["service", "worker", "--dispatcher", "localhost:5000", "--heartbeat-s", "0"], "--heartbeat-s: must be a"),
])
def test_cli_bad_values_get_one_line_and_exit_2(spec, tmp_path, args, says):
    """Item 12: tracebacks and silently altered values become `kit: error:` naming the option, exit 2."""
    subs = {"DATA": str(spec.csv_path), "FOLDER": str(spec.csv_path.parent), "OUT": str(tmp_path / "o")}
    r = _kit(*[subs.get(a, a) for a in args])
    assert says in _one_error_line(r)
    assert not (tmp_path / "o").exists()


def test_cli_verify_on_a_malformed_manifest(tmp_path):
    """Item 12: verify on a manifest that is not valid JSON, or lacks fields: one line, exit 2."""
    (tmp_path / store.MANIFEST).write_text("{not json")
    assert "not valid JSON" in _one_error_line(_kit("verify", str(tmp_path)))
    (tmp_path / store.MANIFEST).write_text(json.dumps({"kind": "x", "shards": "all"}))
    assert "malformed manifest" in _one_error_line(_kit("verify", str(tmp_path)))
    (tmp_path / store.MANIFEST).write_text(json.dumps({"kind": "x", "key": "k", "count": 1,
                                                       "shards": [{"name": "a"}]}))
    assert "malformed manifest" in _one_error_line(_kit("verify", str(tmp_path)))


def test_a_bad_palette_colour_is_shown_as_plain_numbers(tmp_path):
    """Item 12: a colour out of range is shown as (300, 0, 0), not np.int64(300)."""
    from kit.errors import DataError
    from kit.segmentation import Palette

    (tmp_path / "class_dict.csv").write_text("name,r,g,b\nSky,300,0,0\n")
    with pytest.raises(DataError, match=r"line 2: colour \(300, 0, 0\) is not three integers"):
        Palette.from_csv(tmp_path / "class_dict.csv")


# --------------------------------------------------------------------------- 7. labels and class lists


def _index(spec, rows, name="index.csv", header="path,frame,label"):
    """An index CSV beside the spec data, rows (frame number over the two files, label)."""
    csv = spec.csv_path.parent / name
    files = ["frames/clip_000000.npy", "frames/clip_000001.npy"]
    csv.write_text(header + "\n" + "".join(f"{files[f // 3]},{f % 3},{lab}\n" for f, lab in rows))
    return csv


def test_integer_labels_stay_integers_and_a_stray_string_names_its_line(spec):
    """Item 7: ints plus one stray string were re-sorted as strings (2 became 4, 10 became 2)."""
    from kit.errors import DataError
    from kit.spectrogram import FrameIndex

    csv = _index(spec, [(0, 2), (1, 10), (2, 0), (3, 1), (4, 3), (5, 2)])
    assert FrameIndex.from_csv(csv).labels.tolist() == [2, 10, 0, 1, 3, 2]
    csv = _index(spec, [(0, 2), (1, 10), (2, 0), (3, "cat"), (4, 3), (5, 2)])
    with pytest.raises(DataError, match=r"index.csv line 5: label 'cat' is a name among integer labels"):
        FrameIndex.from_csv(csv)


def test_one_class_list_gives_the_same_ids_in_every_split(spec):
    """Item 7: train.csv and val.csv with string labels got different ids for the same class."""
    from kit.errors import DataError
    from kit.spectrogram import FrameIndex

    train = _index(spec, [(0, "bird"), (1, "rain"), (2, "speech")], "train.csv")
    val = _index(spec, [(3, "rain"), (4, "speech")], "val.csv")
    a, b = FrameIndex.from_csv(train), FrameIndex.from_csv(val)
    assert a.classes != b.classes  # without a class list each file sorts its own names
    names = ("bird", "rain", "speech")
    a, b = FrameIndex.from_csv(train, classes=names), FrameIndex.from_csv(val, classes=names)
    assert a.labels.tolist() == [0, 1, 2] and b.labels.tolist() == [1, 2] and b.classes == names
    (spec.csv_path.parent / "classes.txt").write_text("bird\nrain\nspeech\n")
    assert FrameIndex.from_csv(val).labels.tolist() == [1, 2]  # the classes.txt beside the index
    odd = _index(spec, [(3, "rain"), (4, "thunder")], "odd.csv")
    with pytest.raises(DataError, match=r"odd.csv line 3: label 'thunder' is not in the class list"):
        FrameIndex.from_csv(odd)
    (spec.csv_path.parent / "classes.txt").write_text("bird\nrain\nbird\n")
    with pytest.raises(DataError, match=r"classes.txt lines 1 and 3: the class name 'bird' twice"):
        FrameIndex.from_csv(val)


def test_an_id_far_beyond_the_labels_is_an_error_not_an_allocation(spec):
    """Item 7: label 20000000000 exhausted 21 GB making class names."""
    from kit.errors import DataError
    from kit.spectrogram import FrameIndex

    csv = _index(spec, [(0, 0), (1, 20000000000), (2, 1)])
    with pytest.raises(DataError, match=r"line 3: label 20000000000 is far beyond the 3 distinct labels"):
        FrameIndex.from_csv(csv)
    assert FrameIndex.from_csv(_index(spec, [(0, 0), (1, 999)])).num_classes == 1000  # sparse is fine


# --------------------------------------------------------------------------- 8. rows, palette names, NaN


def test_duplicate_rows_and_one_frame_with_two_labels_are_errors(spec):
    """Item 8: a row listed twice, or one (path, frame) with two labels, names both lines."""
    from kit.errors import DataError
    from kit.spectrogram import FrameIndex

    with pytest.raises(DataError, match=r"index.csv lines 2 and 4: the same frame .* listed twice"):
        FrameIndex.from_csv(_index(spec, [(0, "a"), (1, "b"), (0, "a")]))
    with pytest.raises(DataError, match=r"index.csv lines 3 and 4: the same frame .* with two labels"):
        FrameIndex.from_csv(_index(spec, [(0, "a"), (1, "b"), (1, "c")]))


def test_duplicate_or_empty_palette_names_and_duplicate_pairs_are_errors(tmp_path):
    """Item 8: the palette's class names are unique and not empty; a pair is listed once."""
    from kit.errors import DataError
    from kit.segmentation import PairIndex, Palette

    (tmp_path / "p.csv").write_text("name,r,g,b\nSky,1,2,3\nRoad,4,5,6\nSky,7,8,9\n")
    with pytest.raises(DataError, match=r"p.csv lines 2 and 4: the class name 'Sky' twice"):
        Palette.from_csv(tmp_path / "p.csv")
    (tmp_path / "p.csv").write_text('name,r,g,b\nSky,1,2,3\n" ",4,5,6\n')
    with pytest.raises(DataError, match=r"p.csv line 3: empty class name"):
        Palette.from_csv(tmp_path / "p.csv")
    csv = samples.make_segmentation(tmp_path / "g", images=2, size=32)
    rows = csv.read_text().splitlines()
    csv.write_text("\n".join(rows + [rows[1]]) + "\n")
    with pytest.raises(DataError, match=r"index.csv lines 2 and 4: the same image .* listed twice"):
        PairIndex.from_csv(csv)


def test_nan_or_inf_in_frames_is_an_error_in_convert_and_verify(spec, tmp_path):
    """Item 8: NaN/inf frames are refused by convert (naming file and frame), a warning on request."""
    from kit.errors import DataError
    from kit.spectrogram import FrameIndex, convert

    src = spec.files[1]
    frames = np.load(src)
    frames[2, 5, 5] = np.nan
    np.save(src, frames)
    index = FrameIndex.from_csv(spec.csv_path)
    for fmt in ("memmap", "tfrecord"):
        with pytest.raises(DataError, match=r"clip_000001.npy frame 2 \(index row 5\): holds NaN or inf"):
            convert(index, fmt, tmp_path / fmt, progress=False)
    with pytest.warns(UserWarning, match="holds NaN or inf"):
        folder, m = convert(index, "memmap", tmp_path / "warned", nonfinite="warn", progress=False)
    assert store.verify(folder) == []  # converted on purpose with nonfinite="warn"
    meta = json.loads((folder / store.MANIFEST).read_text())
    meta["meta"]["nonfinite"] = "error"
    (folder / store.MANIFEST).write_text(json.dumps(meta))
    problems = store.verify(folder)
    assert len(problems) == 1 and "frames.npy: frame 5 holds NaN or inf" in problems[0]


def test_service_servers_refuse_ports_and_timeouts_out_of_range():
    """Item 12 (and 9's port rule): port 70000 served on 4464; negative timeouts were accepted."""
    from kit import distribute

    with pytest.raises(ValueError, match="port must be in 1..65535"):
        distribute.run_dispatcher(port=70000)
    with pytest.raises(ValueError, match="port must be in 1..65535"):
        distribute.run_dispatcher(port=0)
    with pytest.raises(ValueError, match="worker_timeout_s must be positive"):
        distribute.run_dispatcher(worker_timeout_s=-1)
    with pytest.raises(ValueError, match="port must be in 1..65535"):
        distribute.run_worker(dispatcher="localhost:5000", port=-2)
    with pytest.raises(ValueError, match="heartbeat_s must be positive"):
        distribute.run_worker(dispatcher="localhost:5000", heartbeat_s=0)


def test_service_servers_check_their_bind_address_and_port():
    """Item 9: --bind (default 127.0.0.1) must be an address of this machine, the port free there."""
    import socket

    from kit import distribute

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ValueError, match=f"port {port} is already in use on 127.0.0.1"):
            distribute.run_dispatcher(port=port)
    with pytest.raises(ValueError, match="'192.0.2.1' is not an address of this machine"):
        distribute.run_worker(dispatcher="localhost:5000", bind="192.0.2.1")
    with pytest.raises(ValueError, match="cannot serve the dispatcher at 192.0.2.1:5000 on another machine"):
        distribute.run_worker(dispatcher="192.0.2.1:5000")
    with pytest.raises(ValueError, match="needs one address of this machine"):
        with distribute.local_service(1, bind="0.0.0.0"):
            pass


def _raised_within(seconds, fn, *args, **kwargs):
    """The exception ``fn`` raises, on a thread: a regression that blocks fails the test, never hangs it."""
    import threading

    out = []

    def run():
        try:
            fn(*args, **kwargs)
            out.append(None)
        except Exception as e:  # handed to the test, which checks it
            out.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert out, f"{getattr(fn, '__name__', fn)} still blocked after {seconds} s"
    return out[0]


def test_a_port_that_accepts_but_is_no_dispatcher_is_refused_within_the_timeout():
    """Item 9: a TCP connect was the whole check; a port that accepts connections and never answers
    (a hung process, another program) then blocked the dataset's registration forever."""
    import socket

    import tensorflow as tf

    from kit import distribute

    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        port = mute.getsockname()[1]
        error = _raised_within(120, distribute.through_service, tf.data.Dataset.range(8).batch(4),
                               f"grpc://127.0.0.1:{port}", examples=8, timeout_s=1)
    assert isinstance(error, ValueError)
    assert f"no tf.data service dispatcher answers at 127.0.0.1:{port} (no answer within 1 s)" in str(error)


def test_a_service_without_workers_times_out_and_a_gone_dispatcher_is_named():
    """Item 9: a job no worker serves waited forever. Each wait is now bounded (``timeout_s``): the error
    names the dispatcher and the count, and no reading thread is left; the next epoch first checks that
    the dispatcher still answers. (The same with every worker killed mid-epoch, in real processes:
    test_distribute.py::test_service_every_worker_killed_mid_epoch_raises_within_the_timeout.)"""
    import threading

    import tensorflow as tf

    from kit import distribute

    service = tf.data.experimental.service
    dispatcher = service.DispatchServer(service.DispatcherConfig(port=distribute.free_port()))
    address = dispatcher.target.split("://")[1]
    try:
        ds = distribute.through_service(tf.data.Dataset.range(8).batch(4), dispatcher.target, examples=8,
                                        timeout_s=1)
        error = _raised_within(120, list, ds)
        assert isinstance(error, tf.errors.UnknownError)
        assert (f"ServiceTimeoutError: no batch from the tf.data service dispatcher at {address} for 1 s: 0 of 8 "
                "examples arrived this epoch") in error.message
        assert not [t for t in threading.enumerate() if t.name.startswith("kit-service")]
    finally:
        dispatcher._stop()
    error = _raised_within(120, list, ds)
    assert isinstance(error, tf.errors.InvalidArgumentError)
    assert f"no tf.data service dispatcher answers at {address}" in error.message
    with pytest.raises(ValueError, match="timeout_s must be a positive number of seconds, got 0"):
        distribute.through_service(tf.data.Dataset.range(8).batch(4), dispatcher.target, examples=8, timeout_s=0)


def test_a_service_address_without_a_dispatcher_is_refused_before_the_epoch():
    """Item 9 (part): service= naming an address where no dispatcher listens blocked silently."""
    import tensorflow as tf

    from kit import distribute

    port = distribute.free_port()
    with pytest.raises(ValueError, match=rf"no tf.data service dispatcher answers at 127.0.0.1:{port}"):
        distribute.through_service(tf.data.Dataset.range(8).batch(4), f"grpc://127.0.0.1:{port}")
