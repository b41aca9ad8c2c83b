"""``python -m kit bench spectrogram --cold``: the stores evicted from the page cache before their
variants' rounds, a ``disk_read`` limit read cold (``kit.bench.limits``), and a run without the flag
as it was."""

import builtins
import csv
import json
import os

import numpy as np
import pytest

from kit.bench import limits
from kit.system.pagecache import cached_fraction, warm_page_cache
from tests.helpers import keeps_pages_in_memory


def _on_disk_file(folder, nbytes=4 << 20):
    """A file of ``nbytes`` in ``folder``, its pages cached; skips where they cannot be evicted there."""
    f = folder / "store.bin"
    f.write_bytes(np.random.default_rng(0).integers(0, 255, nbytes, dtype=np.uint8).tobytes())
    why = limits.in_memory([f])
    if why or keeps_pages_in_memory(f):
        pytest.skip(why or f"{folder} keeps its files in memory: pages cannot be evicted there")
    warm_page_cache([f])
    if cached_fraction([f]) is None:
        pytest.skip("mincore cannot be asked here: whether pages left the page cache cannot be seen")
    return f


def test_evict_drops_a_files_pages(tmp_path):
    f = _on_disk_file(tmp_path)
    assert cached_fraction([f]) > 0.9
    left = limits.evict([f])
    assert left is not None and left <= limits.STAYED
    assert cached_fraction([f]) <= limits.STAYED


def test_nothing_cold_opens_a_file_for_writing(tmp_path, monkeypatch):
    f = _on_disk_file(tmp_path)
    before = (f.read_bytes(), f.stat().st_mtime_ns, f.stat().st_size)
    flags, modes = [], []
    real_os_open, real_open = os.open, builtins.open

    def os_open(path, flag, *a, **k):
        flags.append((str(path), flag))
        return real_os_open(path, flag, *a, **k)

    def py_open(file, mode="r", *a, **k):
        modes.append((str(file), mode))
        return real_open(file, mode, *a, **k)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", py_open)
    limits.evict([f])
    rate, left = limits.disk_read([f], seconds=0.01, threads=2)
    cold = limits.Cold({"memmap": [f]})
    assert cold.why_not is None and cold.variants == ["memmap"]
    assert list(limits.iterate(cold.source("memmap", [1, 2]))) == [1, 2] and cold.left["memmap"]
    monkeypatch.undo()
    assert rate > 0 and left is not None and left <= limits.STAYED
    assert [p for p, fl in flags if p == str(f)], "the file was never opened"
    assert all(fl & os.O_ACCMODE == os.O_RDONLY and not fl & (os.O_CREAT | os.O_TRUNC | os.O_APPEND)
               for _, fl in flags), flags
    assert not [m for _, m in modes if set(m) & set("wax+")], modes
    assert (f.read_bytes(), f.stat().st_mtime_ns, f.stat().st_size) == before


def test_a_cold_source_evicts_its_store_before_each_pass(tmp_path):
    f = _on_disk_file(tmp_path)
    cold = limits.Cold({"memmap": [f]})
    src = cold.source("memmap", lambda: iter([1, 2, 3]))
    for _ in range(2):
        warm_page_cache([f])
        assert list(limits.iterate(src)) == [1, 2, 3]
        assert cached_fraction([f]) <= limits.STAYED
    assert len(cold.left["memmap"]) == 2  # one a pass (the check that eviction works here is not a pass)
    assert cold.source("in_memory", [4]) == [4]  # a variant without a store: as it was


def test_the_read_is_split_into_contiguous_parts_that_cover_every_byte(tmp_path):
    files = []
    for i, n in enumerate([10, 0, 7, 30]):
        files.append(tmp_path / f"f{i}")
        files[-1].write_bytes(b"x" * n)
    for threads in (1, 2, 3, 5, 60):
        parts = limits._parts(files, threads)
        assert len(parts) == min(threads, 47)
        spans = [(f, s, e) for p in parts for f, s, e in p]
        assert sum(e - s for _, s, e in spans) == 47 and all(e > s for _, s, e in spans)
        assert [(f.name, s) for f, s, _ in spans] == sorted((f.name, s) for f, s, _ in spans)  # in order


def test_a_file_system_that_keeps_files_in_memory_is_named(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("/dev/vda / ext4 rw 0 0\n"
                      "overlay /ctr overlay rw,lowerdir=/l,upperdir=/run/up/upper,workdir=/run/up/work 0 0\n"
                      "tmpfs /run/up tmpfs rw 0 0\n"
                      "tmpfs /my\\040shm tmpfs rw 0 0\n")
    assert limits.filesystem("/var/x", str(mounts)) == "ext4"
    assert limits.filesystem("/ctr/cache/store", str(mounts)) == "overlay on tmpfs"
    assert limits.filesystem("/my shm/x", str(mounts)) == "tmpfs"
    assert "overlay on tmpfs" in limits.in_memory(["/ctr/cache/store"], str(mounts))
    assert limits.in_memory(["/var/x"], str(mounts)) is None


def test_cold_says_why_not_where_files_stay_in_memory():
    shm = "/dev/shm"
    if not os.path.isdir(shm) or "tmpfs" not in limits.filesystem(shm):
        pytest.skip("no tmpfs at /dev/shm to try")
    import tempfile

    with tempfile.NamedTemporaryFile(dir=shm) as t:
        t.write(b"x" * 8192)
        t.flush()
        cold = limits.Cold({"memmap": [t.name]})
        assert cold.variants == [] and "tmpfs" in cold.why_not and "cannot be measured" in cold.why_not
        assert cold.source("memmap", [1]) == [1]  # read warm, as without --cold
        lim = limits.Limits((np.zeros((2, 3), np.float32),), None, seconds=0.01, cold=cold,
                            cold_files=([t.name], "memmap store's file"))
        lim.read()
        got = lim.to_json()["disk_read"]
        assert got["rate"] is None and got["reads"] == [] and "tmpfs" in got["why_not"]


# ------------------------------------------------------------------------- the bench, with and without --cold

#: A run's JSON keys without --cold, as they were before the flag (top level, limits, rows); its config
#: records every field of the bench's config, ``cold`` (False) among them.
KEYS = ["batch_size", "bench", "config", "epoch_examples", "limits", "machine", "rows", "run_id"]
LIMITS = ["memory_copy_1_thread", "memory_copy_2_threads", "page_cache_read", "tfdata_elements"]
ROW = ["batch_size", "batches", "batches_announced", "batches_per_s", "description", "epoch_examples", "epoch_s_64",
       "examples", "examples_per_s", "fraction_of_limit", "latency_p50_ms", "latency_p95_ms", "limit",
       "limit_examples_per_s", "peak_rss_mb", "round_max", "round_min", "variant", "wait_share", "wall_s",
       "x_in_memory", "x_in_memory_max", "x_in_memory_min"]
CONFIG = ["batch_size", "data", "epoch_examples", "generator_seconds", "limit_seconds", "num_batches",
          "round_seconds", "rounds", "variants", "warmup", "workdir", "cold"]


@pytest.fixture
def user_data(tmp_path):
    """A user's folder: 4 float32 files of 16 frames of 96x64 (the user's data: never evicted)."""
    rng = np.random.default_rng(5)
    (tmp_path / "mine").mkdir()
    rows = []
    for i in range(4):
        np.save(tmp_path / "mine" / f"c{i}.npy", rng.standard_normal((16, 96, 64)).astype(np.float32))
        rows += [(f"c{i}.npy", j, ("dog", "cat")[(i + j) % 2]) for j in range(16)]
    with open(tmp_path / "mine" / "index.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["path", "frame", "label"])
        w.writerows(rows)
    return tmp_path / "mine" / "index.csv"


def _bench(csv_path, out, capsys, *extra):
    from kit import cli

    code = cli.main(["bench", "spectrogram", "--data", str(csv_path), "--variants", "memmap,in_memory",
                     "--rounds", "1", "--batches", "2", "--round-seconds", "0.001", "--limit-seconds", "0.01",
                     "--json", str(out), *extra])
    printed = capsys.readouterr().out
    assert code == 0, printed[-3000:]
    return json.loads(out.read_text()), printed


def test_the_bench_without_cold_keeps_its_keys(user_data, tmp_path, capsys):
    result, printed = _bench(user_data, tmp_path / "warm.json", capsys)
    assert sorted(result) == KEYS and sorted(result["limits"]) == LIMITS
    assert sorted(result["config"]) == sorted(CONFIG) and result["config"]["cold"] is False
    assert all(sorted(r) == ROW for r in result["rows"])
    assert all(sorted(v) == ["how", "rate", "reads", "unit"] for v in result["limits"].values())
    assert "cold:" not in printed and "read_cold" not in printed and "disk_read" not in printed


def test_the_bench_cold_reads_the_disk_or_says_why_not(user_data, tmp_path, capsys, monkeypatch):
    evicted = []
    real = limits.evict

    def evict(files):
        evicted.extend(str(f) for f in files)
        return real(files)

    monkeypatch.setattr(limits, "evict", evict)
    result, printed = _bench(user_data, tmp_path / "cold.json", capsys, "--cold")
    assert result["config"]["cold"] is True
    disk, cold = result["limits"]["disk_read"], result["cold"]
    rows = {r["variant"]: r for r in result["rows"]}
    assert disk["unit"] == "bytes/s" and disk["how"]
    if disk["rate"] is None:  # a file system that keeps the kit cache in memory: said, and read warm
        assert disk["why_not"] and cold["why_not"] == disk["why_not"] and cold["variants"] == []
        assert not any(r["read_cold"] for r in rows.values()) and "not measured" in printed
    else:
        assert disk["rate"] == max(disk["reads"]) > 0 and len(disk["reads"]) == 2 and disk["left_cached"] is not None
        assert cold["why_not"] is None and cold["variants"] == ["memmap"] and cold["left_cached"]["memmap"] <= 0.05
        assert rows["memmap"]["read_cold"] and not rows["in_memory"]["read_cold"]
        assert "disk_read" in printed and "read cold" in printed
    for r in rows.values():
        assert r["limit"] in result["limits"] and r["fraction_of_limit"] > 0
    # Only the kit's own store was evicted, never the user's data.
    assert evicted and not [p for p in evicted if str(user_data.parent) in p]
    assert all(p.startswith(os.environ["KIT_CACHE"]) for p in evicted)
