"""The kit cache (``$KIT_CACHE``, default ``~/.cache/kit``): what is in it (``scan``, ``summary``) and
trimming it (``clean``), as ``python -m kit cache`` does (``kit.cache.command``); what a run reused is
``kit.cache.reuse``'s. Only the kit's own entries are ever removed.
"""

from kit.cache.entries import root, scan, summary
from kit.cache.trim import clean

__all__ = ["root", "scan", "summary", "clean"]
