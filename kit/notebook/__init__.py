"""The notebook layer: the setup every notebook runs first and its headline line (``session``), the
claims and figures it states (``records``), and widgets over ``kit.plots`` figures with a static twin
for HTML (``explorer``, imported where used: it needs ipywidgets).
"""

from kit.notebook.records import figure, lesson, shared
from kit.notebook.session import fast, headline, setup, versions

__all__ = ["setup", "headline", "fast", "versions", "lesson", "figure", "shared", "explorer"]
