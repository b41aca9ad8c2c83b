"""The notebook layer: the setup every notebook runs first, its headline line, and the live explorer.

* ``setup``, ``headline`` (``kit.notebook.session``): ``FAST = kit.notebook.setup()`` as a
  notebook's first call; ``headline(...)`` the figure its index row shows;
* ``kit.notebook.explorer``: widgets over ``kit.plots`` figures, with a static twin for HTML
  (imported by the notebooks that use it: it needs ipywidgets).
"""

from kit.notebook.session import fast, headline, setup, versions

__all__ = ["setup", "headline", "fast", "versions", "explorer"]
