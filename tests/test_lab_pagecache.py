"""lab.pagecache: the warming read and the disk's reference reads (the disk alone, the page-in limit),
free-page-reporting detection, and lab/experiments/first_touch.py."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import keeps_pages_in_memory

from kit.store.files import ask_to_read
from kit.system.pagecache import Residency, cached_fraction, evict

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # lab/ is not installed: imported from the repository root
    sys.path.insert(0, str(ROOT))


@pytest.mark.parametrize("ahead", [0, 2, 4])
def test_the_warming_read_asks_for_its_next_chunks_ahead(tmp_path, monkeypatch, ahead):
    """``read_through`` (the disk's reference read before ``cache_through``; now the read
    that warms a store) went one request at a time. It asks for its next ``ahead`` chunks
    while it reads each one: every chunk asked for before it is read. The chunks asked for
    run on across files: asking within each file only, a TFRecord store's shards were read
    slower than its loader read them, 4 at a time."""
    from lab import pagecache

    chunk = 4096
    sizes = [4096 * 5 + 100, 4096, 4096 * 2 + 1]  # 6 reads (the last short), 1, then 3
    files = []
    for k, size in enumerate(sizes):
        files.append(tmp_path / f"shard-{k}.bin")
        files[-1].write_bytes(np.random.default_rng(k).integers(0, 255, size, dtype=np.uint8).tobytes())
    events = []
    real_advise, real_open = os.posix_fadvise, open

    def name(fd):
        return Path(os.readlink(f"/proc/self/fd/{fd}")).name

    def advise(fd, offset, length, advice):
        if advice == os.POSIX_FADV_WILLNEED:
            events.append(("ask", name(fd), offset, length))
        return real_advise(fd, offset, length, advice)

    class Reading:  # the file object read_through opens, its reads recorded
        def __init__(self, *a, **k):
            self.f = real_open(*a, **k)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def fileno(self):
            return self.f.fileno()

        def readinto(self, view):
            at = self.f.tell()
            n = self.f.readinto(view)
            if n:
                events.append(("read", name(self.f.fileno()), at, n))
            return n

    monkeypatch.setattr(os, "posix_fadvise", advise)
    monkeypatch.setattr(pagecache, "open", Reading, raising=False)
    assert pagecache.read_through(files, chunk=chunk, ahead=ahead)[0] == sum(sizes)
    reads = [e[1:] for e in events if e[0] == "read"]
    everything = [(f.name, o, min(chunk, size - o)) for f, size in zip(files, sizes) for o in range(0, size, chunk)]
    assert reads == everything  # the files in order, each front to back
    if not ahead:
        assert len(events) == len(reads)
        return
    for i, event in enumerate(events):
        if event[0] == "read":  # asked for earlier, and the next `ahead` chunks, in whichever file, by now
            asked = [e[1:] for e in events[:i] if e[0] == "ask"]
            j = everything.index(event[1:])
            for f, o, _ in everything[j:j + ahead]:
                assert any(af == f and lo <= o < lo + n for af, lo, n in asked), (i, f, o)
    # Every chunk asked for once.
    asked = [e[1:] for e in events if e[0] == "ask"]
    assert sorted(asked) == sorted(everything)



def _shards(folder, sizes, chunk):
    """Files of ``sizes`` random bytes, and every ``(name, offset)`` of their ``chunk``-sized pieces, in order."""
    files = []
    for k, size in enumerate(sizes):
        files.append(folder / f"shard-{k}.bin")
        files[-1].write_bytes(np.random.default_rng(k).integers(0, 255, size, dtype=np.uint8).tobytes())
    return files, [(f.name, o) for f, size in zip(files, sizes) for o in range(0, size, chunk)]

@pytest.mark.parametrize("ahead", [1, 3])
def test_the_disks_reference_read_brings_every_chunk_in_without_copying(tmp_path, monkeypatch, ahead):
    """``cache_through``: the disk's rate with nothing copied (a one-thread copying read was
    bound by its copy, and the memmap loader, which copies nothing, ran 1.15x faster than
    that 'limit'). Every chunk of every file is asked for in order, at most ``ahead`` ahead of
    the chunk it waits for, and found in the page cache before the next is asked for."""
    from lab import pagecache

    chunk = 4 * 4096
    sizes = [chunk * 3 + 100, 4096, chunk * 2]  # 4 chunks (the last short), 1, then 2
    files, everything = _shards(tmp_path, sizes, chunk)
    events = []
    real_ask, real_cached = ask_to_read, Residency.cached
    reads = []
    real_pread = os.pread

    def ask(fd, offset, length, piece):
        events.append(("ask", Path(os.readlink(f"/proc/self/fd/{fd}")).name, offset))
        return real_ask(fd, offset, length, piece)

    def cached(self, offset=0, length=None):
        got = real_cached(self, offset, length)
        if length is not None and got[0] == got[1]:
            events.append(("in", self.name, offset))
        return got

    def pread(fd, n, offset):
        reads.append(offset)
        return real_pread(fd, n, offset)

    real_init = Residency.__init__

    def init(self, path):
        real_init(self, path)
        self.name = Path(path).name

    monkeypatch.setattr(pagecache, "ask_to_read", ask)
    monkeypatch.setattr(Residency, "cached", cached)
    monkeypatch.setattr(Residency, "__init__", init)
    monkeypatch.setattr(os, "pread", pread)
    if not keeps_pages_in_memory(tmp_path):
        evict(files)
    nbytes, seconds = pagecache.cache_through(files, chunk=chunk, ahead=ahead)
    assert nbytes == sum(sizes) and seconds > 0
    assert [e[1:] for e in events if e[0] == "ask"] == everything  # each chunk asked for once, in order
    found = [e[1:] for e in events if e[0] == "in"]
    assert found == everything
    for j, c in enumerate(everything):  # chunk j+ahead asked for only once chunk j was in ...
        if j + ahead < len(everything):
            assert events.index(("in", *c)) < events.index(("ask", *everything[j + ahead])), events
        # ... and while it waits for chunk j, the next ahead - 1 are asked for already.
        last = everything[min(j + ahead - 1, len(everything) - 1)]
        assert events.index(("ask", *last)) < events.index(("in", *c)), events
    assert not reads  # the kernel brought every chunk: nothing read by hand
    assert cached_fraction(files) == 1.0


def test_the_disks_reference_read_reads_what_the_kernel_does_not_bring(tmp_path, monkeypatch):
    """A hint may be dropped: a chunk that makes no progress for ``stall_s`` is read by hand,
    so the reference read always ends, with every page in."""
    from lab import pagecache

    if keeps_pages_in_memory(tmp_path):
        pytest.skip(f"{tmp_path} is on tmpfs: its pages are the file, always cached")
    f = tmp_path / "store.bin"
    f.write_bytes(np.random.default_rng(0).integers(0, 255, 5 * 4096 * 4, dtype=np.uint8).tobytes())
    evict([f])
    monkeypatch.setattr(pagecache, "ask_to_read", lambda *a: 0)  # the kernel is asked nothing
    nbytes, _ = pagecache.cache_through([f], chunk=4 * 4096, ahead=2, stall_s=0.05)
    assert nbytes == f.stat().st_size
    assert cached_fraction([f]) == 1.0


def test_the_page_in_limit_touches_every_page_once_after_asking_ahead(tmp_path, monkeypatch):
    """``page_in``: every chunk of every file asked for once, in order and ahead of the chunk it
    touches; every page of the files touched (cached after), empty files skipped."""
    from lab import pagecache

    chunk = 4 * 4096
    sizes = [chunk * 3 + 100, 0, 4096, chunk * 2]
    files, everything = _shards(tmp_path, sizes, chunk)
    asked = []
    real_ask = ask_to_read

    def ask(fd, offset, length, piece):
        asked.append((Path(os.readlink(f"/proc/self/fd/{fd}")).name, offset))
        return real_ask(fd, offset, length, piece)

    monkeypatch.setattr(pagecache, "ask_to_read", ask)
    if not keeps_pages_in_memory(tmp_path):
        evict(files)
    nbytes, seconds = pagecache.page_in(files, chunk=chunk, ahead=2)
    assert nbytes == sum(sizes) and seconds > 0
    assert asked == everything
    assert cached_fraction([f for f, size in zip(files, sizes) if size]) == 1.0


def test_free_page_reporting_reads_the_virtio_balloons_features(tmp_path):
    """This project's VM hands freed memory back to its host (a virtio balloon with free page
    reporting): an evicted store's pages go back, and a cold epoch's first read of each page
    costs a fault in the host. The bench names it when it finds it."""
    from lab import pagecache

    assert pagecache.free_page_reporting(str(tmp_path)) is None  # no virtio devices at all
    devices = tmp_path / "bus/virtio/devices"
    for name, device, features in (("virtio0", "0x0002", "0" * 5 + "1" + "0" * 10),  # a disk: bit 5 is not reporting
                                   ("virtio1", "0x0005", "0110000100000000")):  # a balloon without reporting
        (devices / name).mkdir(parents=True)
        (devices / name / "device").write_text(device + "\n")
        (devices / name / "features").write_text(features + "\n")
    assert pagecache.free_page_reporting(str(tmp_path)) is None
    (devices / "virtio1" / "features").write_text("0110010100000000\n")  # this VM's balloon: bit 5 set
    assert pagecache.free_page_reporting(str(tmp_path)) == (
        "a virtio balloon hands freed memory back to the host (free page reporting)")
    order = tmp_path / "module/page_reporting/parameters/page_reporting_order"
    order.parent.mkdir(parents=True)
    order.write_text("9\n")
    import mmap

    assert pagecache.free_page_reporting(str(tmp_path)).endswith(f"in blocks of {(mmap.PAGESIZE << 9) / 2**20:g} MB)")


def test_first_touch_script_copies_a_file_twice_and_reports_both(tmp_path):
    """``python -m lab.experiments.first_touch --file``: the file evicted, brought in with nothing copied,
    then copied out twice; one line for each copy, with its rate and CPU."""
    f = tmp_path / "store.bin"
    f.write_bytes(np.random.default_rng(0).integers(0, 255, 3 << 20, dtype=np.uint8).tobytes())
    r = subprocess.run([sys.executable, "-m", "lab.experiments.first_touch", "--file", str(f), "--gb", "0.002"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"{f}: evicted" in r.stdout and "nothing copied" in r.stdout, r.stdout
    lines = [line for line in r.stdout.splitlines() if "copy (" in line]
    assert len(lines) == 2 and lines[0].lstrip().startswith("first copy") and "second copy" in lines[1], r.stdout
    assert all("GB/s" in line and "(0.0 GB)" in line for line in lines), lines  # 2 MB copied each time
