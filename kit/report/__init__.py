"""The walkthrough's reports: the notebooks executed headless into ``reports/`` (``run``), each as
``.ipynb`` and an offline HTML page (``html``), with ``index.html`` (``index``); TensorFlow's start-up
noise kept out (``noise``); what a reader would see as a fault of a page (``pages``).
"""

from kit.report.html import ReportError, to_html
from kit.report.pages import page_problems
from kit.report.run import execute, run_notebooks

__all__ = ["run_notebooks", "execute", "to_html", "ReportError", "page_problems"]
