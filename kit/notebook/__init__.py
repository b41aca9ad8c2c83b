"""The notebook layer: the setup every notebook runs first, its headline line, and the live explorer.

* ``setup``, ``headline`` (``kit.notebook.session``): ``FAST = kit.notebook.setup()`` as a
  notebook's first call; ``headline(...)`` the figure its index row shows;
* ``lesson``, ``figure``, ``shared`` (``kit.notebook.records``): a teaching claim checked against
  the run's numbers, a headline figure with its basis, a figure measured once per demo run;
* ``kit.notebook.explorer``: widgets over ``kit.plots`` figures, with a static twin for HTML
  (imported by the notebooks that use it: it needs ipywidgets).
"""

from kit.notebook.records import figure, lesson, shared
from kit.notebook.session import fast, headline, setup, versions

__all__ = ["setup", "headline", "fast", "versions", "lesson", "figure", "shared", "explorer"]
