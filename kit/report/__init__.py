"""The walkthrough's reports: the notebooks executed headless into ``reports/``, each as ``.ipynb``
and an HTML page that opens offline, with ``index.html`` first.

* ``run_notebooks``, ``execute`` (``kit.report.run``): the notebooks executed in order (nbclient);
* ``to_html``, ``ReportError`` (``kit.report.html``): one executed notebook as a page with one shared
  local plotly.js, the kit's marker on everything it writes;
* ``write_index`` (``kit.report.index``): the index page, one row per notebook;
* ``quiet_stderr``, ``keep_stderr_quiet`` (``kit.report.noise``): TensorFlow's start-up noise kept out.
"""

from kit.report.html import ReportError, to_html
from kit.report.noise import quiet_stderr
from kit.report.run import execute, run_notebooks

__all__ = ["run_notebooks", "execute", "to_html", "ReportError",
           # what the kit's other packages call through this one
           "quiet_stderr"]
