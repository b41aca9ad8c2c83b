"""The notebook layer: the setup every notebook runs first and its headline line (``setup``,
``headline``), the claims and figures it states (``lesson``, ``figure``, ``shared``), and the epoch
explorer over ``kit.plots`` figures, a widget with a static twin for HTML (``epoch_explorer``,
``epoch_explorer_static``: loaded on first use, they need plotly's widgets).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from kit.notebook.records import fast, figure, lesson, shared
from kit.notebook.session import headline, setup, versions

if TYPE_CHECKING:
    from kit.notebook.explorer import epoch_explorer, epoch_explorer_static

_EXPLORER = ("epoch_explorer", "epoch_explorer_static")

__all__ = ["setup", "headline", "fast", "versions", "lesson", "figure", "shared", "epoch_explorer",
           "epoch_explorer_static"]


def __getattr__(name):
    if name in _EXPLORER:  # kit.notebook.explorer imports plotly's widgets: loaded on first use
        return getattr(importlib.import_module("kit.notebook.explorer"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_EXPLORER])
