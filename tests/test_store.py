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
