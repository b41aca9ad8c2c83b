"""The notebook layer: the setup every notebook runs first and its headline line (``setup``,
``headline``), the claims and figures it states (``lesson``, ``figure``, ``shared``, ``once``), a figure with a
chooser (``interactive``), and the epoch explorer over ``kit.plots`` figures, a widget with a static twin for HTML (``epoch_explorer``,
``epoch_explorer_static``: loaded on first use, they need plotly's widgets).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kit import lazy_face
from kit.notebook.records import fast, figure, lesson, once, shared
from kit.notebook.session import headline, setup, versions

if TYPE_CHECKING:
    from kit.notebook.explorer import epoch_explorer, epoch_explorer_static, interactive

_EXPLORER = ("epoch_explorer", "epoch_explorer_static", "interactive")

__all__ = ["setup", "headline", "fast", "versions", "lesson", "figure", "shared", "once", "epoch_explorer",
           "epoch_explorer_static", "interactive"]


__getattr__, __dir__ = lazy_face(__name__, {name: "kit.notebook.explorer" for name in _EXPLORER})
