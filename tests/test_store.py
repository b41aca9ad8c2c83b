"""kit.store: keyed, atomic, resumable builds; manifest last; verify finds damage."""

import json

import pytest

from kit import store
from kit.store import checks, keys


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
    on_disk = json.loads((tmp_path / "s" / store.MANIFEST).read_text())
    assert on_disk["key"] == "k1" and [s["name"] for s in on_disk["shards"]] == log
    assert on_disk["shards"][0]["sha256"] == checks.sha256_file(tmp_path / "s" / "part-0.bin")
    assert not (tmp_path / "s" / store.PARTIAL).exists()
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
    assert not (tmp_path / store.MANIFEST).exists()  # never looks complete
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
                nested(depth, lambda: store.load_npy(path))
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

    mapped, read = store.load_npy(path), store.load_npy(path, mmap=False)
    assert isinstance(mapped, np.memmap) and not isinstance(read, np.memmap)
    np.testing.assert_array_equal(read, np.load(path))
    np.testing.assert_array_equal(mapped, read)


def test_load_npy_reads_as_np_load_does(tmp_path):
    import numpy as np

    path = tmp_path / "a.npy"
    for a in (np.asfortranarray(np.arange(24.0).reshape(4, 6)), np.zeros((0, 3), np.float16), np.float64(3.5)):
        np.save(path, a)
        got = store.load_npy(path, mmap=False)
        assert got.shape == a.shape and got.dtype == a.dtype and np.array_equal(got, a)
    np.save(path, np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="Object arrays"):
        store.load_npy(path, mmap=False)
    np.save(path, np.arange(100.0))
    path.write_bytes(path.read_bytes()[:-16])
    with pytest.raises(ValueError, match="truncated: 98 of 100"):
        store.load_npy(path, mmap=False)


# --------------------------------------------------------------------------- the manifest on disk

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
    (tmp_path / store.MANIFEST).write_text(OLD_MANIFEST)
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
    store.check_open(tmp_path, m, progress=False)
    log = []
    again = store.build(tmp_path, kind="test", key="k1", shards=OLD_SHARDS, write=_old_writer(log), progress=False)
    assert log == [] and again == m


def test_a_new_build_writes_the_manifest_as_before(tmp_path):
    m = store.build(tmp_path, kind="test", key="k1", shards=OLD_SHARDS, write=_old_writer([]),
                    meta={"shape": [2, 2]}, progress=False)
    on_disk = json.loads((tmp_path / store.MANIFEST).read_text())
    old = json.loads(OLD_MANIFEST)
    assert on_disk["meta"].keys() == old["meta"].keys()
    on_disk["meta"].update(created=old["meta"]["created"], build_seconds=old["meta"]["build_seconds"])
    assert json.dumps(on_disk, indent=1, sort_keys=True) == OLD_MANIFEST
    assert (tmp_path / store.MANIFEST).read_text() == _dumped(m)


def test_a_real_store_manifest_from_before_loads_typed(tmp_path):
    (tmp_path / store.MANIFEST).write_text(OLD_MEMMAP_MANIFEST)
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
    (tmp_path / store.MANIFEST).write_text(text)
    m = store.Manifest.load(tmp_path)
    assert [s.ends for s in m.shards] == [None, None] and m.shards[0].get("ends") is None
    assert _dumped(m) == text


def test_names_set_on_kit_store_reach_the_part_that_uses_them(tmp_path, monkeypatch):
    """bench digest and the tests set ``kit.store._DIGESTS`` and patch ``kit.store.free_bytes``:
    the part that uses each name sees the new value, and the old one comes back after."""
    fresh = keys._DigestCache()
    monkeypatch.setattr(store, "_DIGESTS", fresh)
    assert keys._DIGESTS is fresh and store._DIGESTS is fresh
    monkeypatch.setattr(store, "free_bytes", lambda path: 10)
    with pytest.raises(store.StoreError, match="needs 0.0 GB free under"):
        store.check_free_space(tmp_path, 11)
    monkeypatch.undo()
    assert keys._DIGESTS is store._DIGESTS is not fresh
    store.check_free_space(tmp_path, 11)
