"""kit.store: keyed, atomic, resumable builds; manifest last; verify finds damage. Issue 13: a store
never writes into a folder it did not make, its names stay inside it, its key follows its sources'
content, concurrent builds never mix, a flipped byte is found at open, a full disk is one line."""

import errno
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from helpers import dead_pid, flip, kit_cli, one_error_line, rewrite_keeping_size_and_mtime

from kit import store
from kit.store import checks, folder, keys
from kit.store.checks import check_open
from kit.store.files import KERNEL_READ_DEFAULT, ask_to_read, kernel_read_bytes, load_npy, open_memmap
from kit.store.folder import (
    MANIFEST,
    PARTIAL,
    STORE_MARKER,
    check_free_space,
    claim,
    default_workdir,
    store_kind,
    store_lock,
)
from kit.store.keys import files_fingerprint, forget_digests


def _writer(log, fail_on=None):
    def write(shard, tmp, advance):
        if shard.name == fail_on:
            raise RuntimeError(f"interrupted while writing {shard.name}")
        log.append(shard.name)
        tmp.write_bytes((shard.name * shard.count).encode())
        advance(shard.count)
    return write


SHARDS = [store.Shard(f"part-{i}.bin", 3 + i) for i in range(4)]


def test_build_writes_shards_and_manifest(tmp_path):
    log = []
    m = store.build(tmp_path / "s", kind="test", key="k1", shards=SHARDS, write=_writer(log),
                    meta={"shape": [2, 2]}, progress=False)
    assert log == [s.name for s in SHARDS]
    assert m.count == 3 + 4 + 5 + 6 and m.meta["shape"] == [2, 2]
    on_disk = json.loads((tmp_path / "s" / MANIFEST).read_text())
    assert on_disk["key"] == "k1" and [s["name"] for s in on_disk["shards"]] == log
    assert on_disk["shards"][0]["sha256"] == checks.sha256_file(tmp_path / "s" / "part-0.bin")
    assert not (tmp_path / "s" / PARTIAL).exists()
    assert store.verify(tmp_path / "s") == []


def test_complete_store_with_same_key_is_reused(tmp_path):
    store.build(tmp_path, kind="test", key="k1", shards=SHARDS, write=_writer([]), progress=False)
    log = []
    store.build(tmp_path, kind="test", key="k1", shards=SHARDS, write=_writer(log), progress=False)
    assert log == []


def test_interrupted_build_resumes_without_redoing_finished_shards(tmp_path):
    log = []
    with pytest.raises(RuntimeError, match="interrupted"):
        store.build(tmp_path, kind="test", key="k1", shards=SHARDS,
                    write=_writer(log, fail_on="part-2.bin"), progress=False)
    assert log == ["part-0.bin", "part-1.bin"]
    assert not (tmp_path / MANIFEST).exists()  # never looks complete
    assert store.complete(tmp_path) is None
    assert not list(tmp_path.glob("*.tmp-*"))  # no half-written shard left
    log2 = []
    store.build(tmp_path, kind="test", key="k1", shards=SHARDS, write=_writer(log2), progress=False)
    assert log2 == ["part-2.bin", "part-3.bin"]
    assert store.verify(tmp_path) == []


def test_a_changed_key_never_reuses_stale_shards(tmp_path):
    with pytest.raises(RuntimeError):
        store.build(tmp_path, kind="test", key="old", shards=SHARDS,
                    write=_writer([], fail_on="part-3.bin"), progress=False)
    log = []
    store.build(tmp_path, kind="test", key="new", shards=SHARDS, write=_writer(log), progress=False)
    assert log == [s.name for s in SHARDS]
    log = []
    m = store.build(tmp_path, kind="test", key="newer", shards=SHARDS[:2], write=_writer(log),
                    progress=False)
    assert log == ["part-0.bin", "part-1.bin"] and m.key == "newer"
    assert not (tmp_path / "part-3.bin").exists()


def test_parallel_build(tmp_path):
    log = []
    m = store.build(tmp_path, kind="test", key="k", shards=SHARDS, write=_writer(log), workers=3,
                    progress=False)
    assert sorted(log) == sorted(s.name for s in SHARDS)
    assert [s.name for s in m.shards] == [s.name for s in SHARDS]


def test_verify_names_truncated_corrupt_and_missing_files(tmp_path):
    store.build(tmp_path, kind="test", key="k", shards=SHARDS, write=_writer([]), progress=False)
    with open(tmp_path / "part-0.bin", "r+b") as f:
        f.truncate(2)
    data = bytearray((tmp_path / "part-1.bin").read_bytes())
    data[0] ^= 0xFF
    (tmp_path / "part-1.bin").write_bytes(bytes(data))
    (tmp_path / "part-3.bin").unlink()
    problems = store.verify(tmp_path)
    assert len(problems) == 3
    assert "part-0.bin" in problems[0] and "truncated" in problems[0]
    assert "part-1.bin" in problems[1] and "corrupt" in problems[1]
    assert "part-3.bin" in problems[2] and "missing" in problems[2]


def test_verify_without_manifest(tmp_path):
    assert "no manifest.json" in store.verify(tmp_path)[0]


def test_fingerprint_is_stable_and_sensitive():
    assert store.fingerprint({"a": 1, "b": [1, 2]}) == store.fingerprint({"b": [1, 2], "a": 1})
    assert store.fingerprint("x", 1) != store.fingerprint("x", 2)


@pytest.mark.slow
def test_load_npy_from_many_threads_at_once(tmp_path):
    """The store writers and checks load .npy headers in a thread pool. On CPython 3.11 a
    bare np.load there can fail with "AST constructor recursion depth mismatch" (CI met it;
    this loop, with np.load, fails a few times in 4,000 on the dev VM). load_npy must not."""
    import gc
    import sys
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    path = tmp_path / "frames.npy"
    np.save(path, np.arange(12 * 96 * 64, dtype=np.float32).reshape(12, 96, 64))

    class Finalized:  # garbage whose finalizer runs Python code mid-parse, as TF's objects do
        def __del__(self):
            sum(range(100))

    def nested(depth, fn):  # each thread parses at a different Python stack depth
        return fn() if depth == 0 else nested(depth - 1, fn)

    def loads(depth):
        errors = 0
        for _ in range(500):
            junk = [Finalized() for _ in range(3)]
            for j in junk:
                j.me = j
            del junk
            try:
                nested(depth, lambda: load_npy(path))
            except SystemError:
                errors += 1
        return errors

    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(3, 1, 1)
    try:
        with ThreadPoolExecutor(8) as pool:
            errors = list(pool.map(loads, range(8)))
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)
    assert errors == [0] * 8

    mapped, read = load_npy(path), load_npy(path, mmap=False)
    assert isinstance(mapped, np.memmap) and not isinstance(read, np.memmap)
    np.testing.assert_array_equal(read, np.load(path))
    np.testing.assert_array_equal(mapped, read)


def test_load_npy_reads_as_np_load_does(tmp_path):
    import numpy as np

    path = tmp_path / "a.npy"
    for a in (np.asfortranarray(np.arange(24.0).reshape(4, 6)), np.zeros((0, 3), np.float16), np.float64(3.5)):
        np.save(path, a)
        got = load_npy(path, mmap=False)
        assert got.shape == a.shape and got.dtype == a.dtype and np.array_equal(got, a)
    np.save(path, np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="Object arrays"):
        load_npy(path, mmap=False)
    np.save(path, np.arange(100.0))
    path.write_bytes(path.read_bytes()[:-16])
    with pytest.raises(ValueError, match="truncated: 98 of 100"):
        load_npy(path, mmap=False)


#: manifest.json of a store built by ``store.build`` before the store became a package
#: (shards ``_old_bytes``, meta ``{"shape": [2, 2]}``), verbatim.
OLD_MANIFEST = """{
 "count": 5,
 "key": "k1",
 "kind": "test",
 "meta": {
  "build_seconds": 0.10485910099998819,
  "built": 5,
  "created": "2026-12-02T05:52:03+0000",
  "shape": [
   2,
   2
  ]
 },
 "shards": [
  {
   "bytes": 1280,
   "count": 2,
   "ends": "b61be6634df7133fd75fb504391df285",
   "name": "part-0.bin",
   "sha256": "1a028f34e1b2c89ada8fe1122163b0ac5e278ec8f5a1ad22f812c513e1376233"
  },
  {
   "bytes": 2688,
   "count": 3,
   "ends": "bacc354e9c4984d5a660487e9faa80d2",
   "name": "sub/part-1.bin",
   "sha256": "78a54687bfa73b525fe87f653bc37dc2aee272676c12797baa0acccdbfa2dc07"
  }
 ],
 "version": 2
}"""


#: manifest.json of a spectrogram memmap store (``spectrogram.convert``, 3 files of 4 frames
#: of 8x4) built before the store became a package, verbatim.
OLD_MEMMAP_MANIFEST = """{
 "count": 12,
 "key": "7c86aab23d481ab4769cc9f15e0049b3ddd15b598befa6fdf948a8cf6f7265ac",
 "kind": "spectrogram-memmap",
 "meta": {
  "build_seconds": 0.006209858000033819,
  "built": 12,
  "classes": [
   "alarm",
   "bird",
   "engine",
   "rain",
   "speech"
  ],
  "count": 12,
  "created": "2026-12-02T05:51:54+0000",
  "dtype": "float32",
  "frame_shape": [
   8,
   4
  ],
  "index_key": "ee70b1e6d67da504fd0390b43ad1fc6089d4233f21d5b3a01ada86c6d936576f",
  "module": "kit.spectrogram.convert",
  "nonfinite": "error",
  "options": {
   "dtype": "float32"
  },
  "source": "/tmp/store_fixture/src/index.csv"
 },
 "shards": [
  {
   "bytes": 1664,
   "count": 12,
   "ends": "8661272b80c62e5886224988a4f025cf",
   "name": "frames.npy",
   "sha256": "3870be0eaf28f2aa0422bcbb6ce3b44d31e7d95ec3dd7463f299b930074b1a39"
  },
  {
   "bytes": 224,
   "count": 0,
   "ends": "cad675ea4b7998265d9d1553392c14da",
   "name": "labels.npy",
   "sha256": "755ff20d85b17db45b61b209017b239456bfc68294571ab09aa87c7c60c89380"
  }
 ],
 "version": 2
}"""


OLD_SHARDS = [store.Shard("part-0.bin", 2), store.Shard("sub/part-1.bin", 3)]


def _old_bytes(shard):
    return (shard.name * (64 * shard.count)).encode()


def _old_writer(log):
    def write(shard, tmp, advance):
        log.append(shard.name)
        tmp.write_bytes(_old_bytes(shard))
        advance(shard.count)
    return write


def _dumped(manifest):
    return json.dumps(manifest.to_dict(), indent=1, sort_keys=True)


def test_a_store_built_before_the_split_loads_verifies_and_is_reused(tmp_path):
    (tmp_path / "sub").mkdir()
    for s in OLD_SHARDS:
        (tmp_path / s.name).write_bytes(_old_bytes(s))
    (tmp_path / MANIFEST).write_text(OLD_MANIFEST)
    m = store.Manifest.load(tmp_path)
    assert m == store.Manifest(kind="test", key="k1", count=5, version=2, meta={
        "build_seconds": 0.10485910099998819, "built": 5, "created": "2026-12-02T05:52:03+0000", "shape": [2, 2]},
        shards=[store.ShardRecord("part-0.bin", 2, 1280,
                                  "1a028f34e1b2c89ada8fe1122163b0ac5e278ec8f5a1ad22f812c513e1376233",
                                  "b61be6634df7133fd75fb504391df285"),
                store.ShardRecord("sub/part-1.bin", 3, 2688,
                                  "78a54687bfa73b525fe87f653bc37dc2aee272676c12797baa0acccdbfa2dc07",
                                  "bacc354e9c4984d5a660487e9faa80d2")])
    assert _dumped(m) == OLD_MANIFEST  # written back, byte for byte
    assert store.verify(tmp_path) == []
    check_open(tmp_path, m, progress=False)
    log = []
    again = store.build(tmp_path, kind="test", key="k1", shards=OLD_SHARDS, write=_old_writer(log), progress=False)
    assert log == [] and again == m


def test_a_new_build_writes_the_manifest_as_before(tmp_path):
    m = store.build(tmp_path, kind="test", key="k1", shards=OLD_SHARDS, write=_old_writer([]),
                    meta={"shape": [2, 2]}, progress=False)
    on_disk = json.loads((tmp_path / MANIFEST).read_text())
    old = json.loads(OLD_MANIFEST)
    assert on_disk["meta"].keys() == old["meta"].keys()
    on_disk["meta"].update(created=old["meta"]["created"], build_seconds=old["meta"]["build_seconds"])
    assert json.dumps(on_disk, indent=1, sort_keys=True) == OLD_MANIFEST
    assert (tmp_path / MANIFEST).read_text() == _dumped(m)


def test_a_real_store_manifest_from_before_loads_typed(tmp_path):
    (tmp_path / MANIFEST).write_text(OLD_MEMMAP_MANIFEST)
    m = store.Manifest.load(tmp_path)
    assert (m.kind, m.count, m.version) == ("spectrogram-memmap", 12, 2)
    assert all(isinstance(s, store.ShardRecord) for s in m.shards)
    frames, labels = m.shards
    assert (frames.name, frames.count, frames.bytes) == ("frames.npy", 12, 1664)
    assert (labels.name, labels.count, labels.bytes) == ("labels.npy", 0, 224)
    assert frames.sha256.startswith("3870be0e") and frames.ends == "8661272b80c62e5886224988a4f025cf"
    assert m.meta["frame_shape"] == [8, 4] and m.meta["options"] == {"dtype": "float32"}
    assert _dumped(m) == OLD_MEMMAP_MANIFEST
    # Read by key, as the callers that knew shards as dicts still do.
    assert frames["bytes"] == 1664 and frames.get("ends") == frames.ends and frames.get("nope", 1) == 1
    with pytest.raises(KeyError):
        frames["task"]


def test_a_format_1_manifest_without_ends_loads_and_is_written_back_the_same(tmp_path):
    old = json.loads(OLD_MANIFEST)
    old["version"] = 1
    for s in old["shards"]:
        del s["ends"]
    text = json.dumps(old, indent=1, sort_keys=True)
    (tmp_path / MANIFEST).write_text(text)
    m = store.Manifest.load(tmp_path)
    assert [s.ends for s in m.shards] == [None, None] and m.shards[0].get("ends") is None
    assert _dumped(m) == text


def test_forget_digests_makes_the_next_fingerprint_read_the_database(tmp_path, monkeypatch):
    """lab.digest's ways and the tests start from an empty in-memory digest cache."""
    monkeypatch.setenv("KIT_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "a.npy"
    np.save(f, np.arange(10))
    first = files_fingerprint([f])
    held = keys._DIGESTS
    forget_digests()
    assert keys._DIGESTS is not held
    assert files_fingerprint([f]) == first


def test_free_space_is_read_where_the_check_uses_it(tmp_path, monkeypatch):
    monkeypatch.setattr(folder, "free_bytes", lambda path: 10)
    with pytest.raises(store.StoreError, match="needs 0.0 GB free under"):
        check_free_space(tmp_path, 11)
    monkeypatch.undo()
    check_free_space(tmp_path, 11)


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
    r = kit_cli("convert", "spectrogram", "--index", str(spec.csv_path), "--to", "memmap", "--out", str(src))
    assert "holds the index's source files" in one_error_line(r)
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
    assert store_kind(folder) == "spectrogram-memmap"
    with pytest.raises(store.StoreError, match="kind 'spectrogram-memmap'"):
        convert(spec, "tfrecord", folder, progress=False)
    assert store.verify(folder) == []
    # The same kind again is the kit's own folder: reused.
    again, m = convert(spec, "memmap", folder, progress=False)
    assert again == folder and m.count == 6


@pytest.mark.parametrize("name", ["../victim.txt", "ABSOLUTE", "sub/../../victim.txt"])
def test_manifest_names_stay_inside_the_store(spec, tmp_path, name):
    """Item 3: a manifest naming a file outside the store makes neither convert delete it nor verify read it."""
    from kit.spectrogram import convert

    folder, _ = convert(spec, "memmap", tmp_path / "st", progress=False)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    path = folder / MANIFEST
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
    r = kit_cli("verify", str(folder))
    assert "leaves the store folder" in one_error_line(r)


def test_manifest_name_through_a_link_stays_inside(spec, tmp_path):
    """Item 3: a shard name that is a link leading out of the store is refused too."""
    from kit.spectrogram import convert

    folder, _ = convert(spec, "memmap", tmp_path / "st", progress=False)
    (tmp_path / "outside").mkdir()
    (folder / "link").symlink_to(tmp_path / "outside")
    m = json.loads((folder / MANIFEST).read_text())
    m["shards"][1]["name"] = "link/labels.npy"
    (folder / MANIFEST).write_text(json.dumps(m))
    with pytest.raises(store.StoreError, match="resolves outside"):
        store.Manifest.load(folder)
    assert np.load(folder / "labels.npy").shape == (6,)


def test_a_source_rewritten_with_same_size_and_mtime_gets_a_new_store(spec, tmp_path):
    """Item 4: a rewrite keeping size and mtime (in place, as `cp -p` onto a file) changes the key."""
    from kit.spectrogram import FrameIndex, convert

    folder, _ = convert(spec, "memmap", progress=False)
    first = np.load(folder / "frames.npy")
    src = spec.files[0]
    new = np.load(src) + 1.0
    buf = tmp_path / "new.npy"
    np.save(buf, new.astype(np.float32))
    rewrite_keeping_size_and_mtime(src, buf.read_bytes())
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
    before = files_fingerprint([a])[0]
    ino = a.stat().st_ino
    subprocess.run(["cp", "-p", str(b), str(a)], check=True)
    after = files_fingerprint([a])[0]
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
    first = files_fingerprint(files)
    assert len(calls) == 3
    assert files_fingerprint(files) == first and len(calls) == 3
    monkeypatch.setattr(keys, "_DIGESTS", keys._DigestCache())  # as in a new process
    assert files_fingerprint(files) == first and len(calls) == 3
    assert (default_workdir() / "digests.sqlite3").exists()


def test_full_digest_sees_what_the_sample_skips(tmp_path, monkeypatch):
    """Item 4: the full-hash option (digest="full" or KIT_DIGEST=full) catches a change between samples."""
    f = tmp_path / "big.bin"
    data = bytearray(np.random.default_rng(0).bytes(1 << 20))
    f.write_bytes(bytes(data))
    sample, full = files_fingerprint([f])[0][3], files_fingerprint([f], digest="full")[0][3]
    data[200_000] ^= 0xFF  # between the sampled blocks
    rewrite_keeping_size_and_mtime(f, bytes(data))
    assert files_fingerprint([f])[0][3] == sample
    assert files_fingerprint([f], digest="full")[0][3] != full
    monkeypatch.setenv("KIT_DIGEST", "full")
    assert files_fingerprint([f])[0][3] != full
    monkeypatch.setenv("KIT_DIGEST", "sha1")
    with pytest.raises(ValueError, match="digest must be one of"):
        files_fingerprint([f])


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


@pytest.mark.slow
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
        assert store_kind(tmp_path / f"s{i}") == "test"
        assert sorted(p.name for p in (tmp_path / f"s{i}").iterdir()) == [STORE_MARKER]  # no temp left


def test_a_folder_holding_only_a_marker_being_written_is_claimed(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / f"{STORE_MARKER}.tmp-123-456").write_text("test\n")  # another claim, mid-write
    assert claim(folder, "test") == folder
    assert store_kind(folder) == "test"
    (folder / "mine.txt").write_text("x")
    (folder / STORE_MARKER).unlink()
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
    check_open(tmp_path / "s", m)


def test_a_held_build_lock_is_a_bounded_wait(tmp_path):
    """Item 5: a builder waiting on another one gives up after lock_timeout with a clear error."""
    folder = tmp_path / "s"
    claim(folder, "test")
    with store_lock(folder):
        with pytest.raises(store.StoreError, match="another process .pid \\d+. is building"):
            store.build(folder, kind="test", key="k", shards=[store.Shard("a", 1)],
                        write=lambda s, t, a: t.write_bytes(b"a"), progress=False, lock_timeout=0.3)
    with pytest.raises(ValueError, match="non-negative"):
        with store_lock(folder, timeout=-1):
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


def test_memmap_loader_refuses_a_flipped_byte(spec, monkeypatch):
    """Item 6: a flipped byte in frames.npy is found at open (once per change; check=False opts out)."""
    from kit.spectrogram import convert, make_loader

    folder, m = convert(spec, "memmap", progress=False)
    middle = (folder / "frames.npy").stat().st_size // 2  # past the head's 64 KiB, before the tail's
    flip(folder / "frames.npy", middle)
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
    flip(folder / "frames.npy", middle)
    hashed.clear()
    convert(spec, "memmap", progress=False)
    convert(spec, "memmap", progress=False)
    assert [p.name for p in hashed] == ["frames.npy"]  # labels.npy unchanged since its check


def test_a_build_without_enough_free_space_is_refused_before_writing(spec, tmp_path, monkeypatch):
    """Item 10: free space is checked first; the error says how much is needed."""
    import shutil

    from kit.spectrogram import convert

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
    mm = open_memmap(path, dtype=np.float32, shape=(256, 1024))
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


def test_temp_files_of_killed_builds_are_removed(tmp_path):
    """Item 11: a new build removes *.tmp-PID-TID files whose process is gone, and keeps live ones."""
    folder = tmp_path / "s"
    claim(folder, "test")
    dead = folder / f"part-0.bin.tmp-{dead_pid()}-140000"
    live = folder / f"part-1.bin.tmp-{os.getpid()}-1"
    nested = folder / "sub" / f"x.tmp-{dead_pid()}-7"
    nested.parent.mkdir()
    for p in (dead, live, nested):
        p.write_bytes(b"half written")
    store.build(folder, kind="test", key="k", shards=[store.Shard("part-0.bin", 1)],
                write=lambda s, t, a: t.write_bytes(b"ok"), progress=False)
    assert not dead.exists() and not nested.exists() and live.exists()


def test_ask_to_read_covers_the_range_in_pieces_the_kernel_reads_whole(tmp_path, monkeypatch):
    """Linux reads at most the device's readahead window or largest request for one
    POSIX_FADV_WILLNEED (128 KB on many disks) and drops the rest: a 3 MB block asked for
    in one call was mostly not read. ``ask_to_read`` asks in pieces of that size."""
    f = tmp_path / "f.bin"
    f.write_bytes(b"x" * 10_000)
    piece = kernel_read_bytes(f)
    assert piece >= KERNEL_READ_DEFAULT and piece % 1024 == 0
    assert kernel_read_bytes(tmp_path / "missing") == KERNEL_READ_DEFAULT
    calls = []
    monkeypatch.setattr(os, "posix_fadvise", lambda fd, o, n, advice: calls.append((o, n, advice)))
    fd = os.open(f, os.O_RDONLY)
    try:
        assert ask_to_read(fd, 100, 1000, 300) == 4
        assert calls == [(100, 300, os.POSIX_FADV_WILLNEED), (400, 300, os.POSIX_FADV_WILLNEED),
                         (700, 300, os.POSIX_FADV_WILLNEED), (1000, 100, os.POSIX_FADV_WILLNEED)]
        monkeypatch.delattr(os, "posix_fadvise")
        assert ask_to_read(fd, 0, 1000, 300) == 0
    finally:
        os.close(fd)
