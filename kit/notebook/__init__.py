"""The notebook layer: the setup every notebook runs first and its headline line (``setup``,
``headline``), the claims and figures it states (``lesson``, ``figure``, ``shared``), and the epoch
explorer over ``kit.plots`` figures, a widget with a static twin for HTML (``epoch_explorer``,
``epoch_explorer_static``: loaded on first use, they need plotly's widgets).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit import lazy_face
from kit.notebook.records import fast, figure, lesson, shared
from kit.notebook.session import headline, setup, versions

if TYPE_CHECKING:
    from kit.notebook.explorer import epoch_explorer, epoch_explorer_static

_EXPLORER = ("epoch_explorer", "epoch_explorer_static")

__all__ = ["setup", "headline", "fast", "versions", "lesson", "figure", "shared", "epoch_explorer",
           "epoch_explorer_static"]


__getattr__, __dir__ = lazy_face(__name__, {name: "kit.notebook.explorer" for name in _EXPLORER})
