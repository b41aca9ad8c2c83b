"""What the operating system does under a loader: the page cache (``kit.system.pagecache``:
evicting a file's pages for cold reads, residency, warming) and glibc's malloc thresholds, which
TensorFlow's generator op changes for the whole process (``kit.system.malloc``)."""

from kit.system.pagecache import evict, warm_page_cache

__all__ = ["evict", "warm_page_cache"]
