"""kit.store: keyed, atomic, resumable builds; manifest last; verify finds damage."""

import json

import pytest

from kit import store


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
    assert on_disk["shards"][0]["sha256"] == store.sha256_file(tmp_path / "s" / "part-0.bin")
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
    assert [s["name"] for s in m.shards] == [s.name for s in SHARDS]


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
