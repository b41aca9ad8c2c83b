"""What the operating system does under a loader: the page cache (``kit.system.pagecache``:
evicting a file's pages for cold reads, residency, warming)."""

from kit.system.pagecache import evict, warm_page_cache

__all__ = ["evict", "warm_page_cache"]
