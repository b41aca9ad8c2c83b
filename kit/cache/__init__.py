"""The kit cache (``$KIT_CACHE``, default ``~/.cache/kit``): what is in it, what a run reused, trimming it.

* ``scan``, ``summary``, ``root`` (``kit.cache.entries``): every entry with its size, age and
  what built it; only the kit's own entries are ever removed;
* ``clean`` (``kit.cache.trim``): the kit's entries removed, oldest first, until a budget holds,
  leaving alone what another process holds;
* ``recording``, ``reuse_report``, ``used_by_others``, ``record_for_life`` (``kit.cache.reuse``):
  which entries a run reused and which it built;
* ``register`` (``kit.cache.command``): ``python -m kit cache [--clean ...]``.
"""

from kit.cache.command import register
from kit.cache.entries import root, scan, summary
from kit.cache.reuse import USED_ENV, recording, reuse_report, used_by_others
from kit.cache.trim import clean

__all__ = ["root", "summary", "clean", "register",
           # what the kit's other packages call through this one
           "USED_ENV", "recording", "reuse_report", "scan", "used_by_others"]
