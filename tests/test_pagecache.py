"""kit.system.pagecache: eviction (a loader's mappings released first), residency and reclaim detection."""

import numpy as np
import pytest
from helpers import keeps_pages_in_memory


def test_a_memmap_loaders_mapping_is_released_before_a_cold_epoch(spec_index):
    """``lab.scale`` measured a 'cold' memmap epoch at 1.7x the disk's sequential read:
    the loader of the warm epoch still mapped frames.npy (TensorFlow keeps its
    numpy_function), and posix_fadvise(DONTNEED) leaves mapped pages cached. Now
    ``evict`` releases the loaders' mappings first, and refuses a file still mapped."""
    from kit.spectrogram import convert, make_loader
    from kit.spectrogram.loaders import release_store_mappings
    from kit.system import pagecache

    folder, _ = convert(spec_index, "memmap", progress=False)
    frames = folder / "frames.npy"
    loader = make_loader("memmap", spec_index, batch_size=16, progress=False)
    first = [y.numpy() for _, y in loader]
    assert pagecache.mapped([frames]) == [str(frames.resolve())]  # mapped by the loader's batches
    pagecache.evict([frames])  # releases it, then drops the pages
    assert pagecache.mapped([frames]) == []
    again = [y.numpy() for _, y in loader]  # a live loader maps its file again
    assert sum(len(y) for y in again) == sum(len(y) for y in first) == len(spec_index)
    assert release_store_mappings() == 1 and release_store_mappings() == 0
    held = np.load(frames, mmap_mode="r")  # a mapping the kit does not hold: refused, not measured
    with pytest.raises(RuntimeError, match="this process still maps it"):
        pagecache.evict([frames])
    del held


def test_evict_drops_the_pages_and_says_how_many_stayed(tmp_path):
    from kit.system import pagecache

    f = tmp_path / "store.bin"
    f.write_bytes(np.random.default_rng(0).integers(0, 255, 8 << 20, dtype=np.uint8).tobytes())
    pagecache.warm_page_cache([f])
    assert pagecache.cached_fraction([f]) == 1.0  # just read: every page cached
    (tmp_path / "empty").touch()
    assert pagecache.cached_fraction([tmp_path / "empty"]) is None  # no pages to ask about
    if keeps_pages_in_memory(f):
        pytest.skip(f"{tmp_path} is on tmpfs: its pages are the file, no eviction drops them")
    left = pagecache.evict([f])
    assert left is not None and left < 0.05, left  # lab.scale_report.CACHED_AFTER_EVICT
    assert pagecache.cached_fraction([f]) == left


def test_proactive_reclaim_reads_damons_pageout_schemes(tmp_path):
    from kit.system import pagecache

    assert pagecache.proactive_reclaim(str(tmp_path)) is None  # no DAMON at all
    ctx = tmp_path / "kernel/mm/damon/admin/kdamonds/0/contexts/0"
    scheme = ctx / "schemes/0"
    values = {ctx.parent.parent / "state": "on", ctx / "monitoring_attrs/intervals/aggr_us": "5000000",
              scheme / "action": "pageout", scheme / "access_pattern/age/min": "12",
              scheme / "quotas/bytes": "134217728", scheme / "quotas/reset_interval_ms": "1000",
              scheme / "ops_filters/0/type": "anon", scheme / "ops_filters/0/allow": "N",
              scheme / "ops_filters/1/type": "unmapped", scheme / "ops_filters/1/allow": "Y"}
    for path, value in values.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    assert pagecache.proactive_reclaim(str(tmp_path)) == (
        "DAMON (kdamond 0) pages out memory (not anon, only unmapped pages) it has not seen used for 60 s, "
        "up to 134 MB every 1 s")
    (scheme / "action").write_text("stat\n")  # only counts: drops nothing
    assert pagecache.proactive_reclaim(str(tmp_path)) is None
    (scheme / "action").write_text("pageout\n")
    (ctx.parent.parent / "state").write_text("off\n")
    assert pagecache.proactive_reclaim(str(tmp_path)) is None
    enabled = tmp_path / "module/damon_reclaim/parameters/enabled"
    enabled.parent.mkdir(parents=True)
    enabled.write_text("Y\n")
    assert "DAMON_RECLAIM" in pagecache.proactive_reclaim(str(tmp_path))
