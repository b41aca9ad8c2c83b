"""The kit cache (``$KIT_CACHE``, default ``~/.cache/kit``): what is in it (``scan``, ``summary``),
what a run reused (``recording``, ``reuse_report``), trimming it (``clean``), and ``python -m kit cache``.
Only the kit's own entries are ever removed.
"""

from kit.cache.command import register
from kit.cache.entries import root, scan, summary
from kit.cache.reuse import USED_ENV, recording, reuse_report, used_by_others
from kit.cache.trim import clean

__all__ = ["root", "summary", "clean", "register",
           # what the kit's other packages call through this one
           "USED_ENV", "recording", "reuse_report", "scan", "used_by_others"]
