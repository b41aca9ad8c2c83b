"""What the operating system does under a loader: the page cache and malloc's buffers.

* ``kit.system.pagecache``: evicting a file's pages (cold reads), residency, warming, first touch
  and reclaim;
* ``kit.system.memory``: freed batch buffers kept mapped from one batch to the next (glibc
  malloc's thresholds, ``keep_freed_memory``).
"""

from kit.system.memory import keep_freed_memory
from kit.system.pagecache import evict, warm_page_cache

__all__ = ["evict", "warm_page_cache", "keep_freed_memory"]
