"""Progress bars: tqdm's notebook widget in JupyterLab, its plain text bar in headless runs.

A headless run (``kit.report``, nbclient, CI) sets ``KIT_PROGRESS=text``: the widget would
need a live front end (its saved text form reads ``0%``), while the text bar's last update
is the finished bar that the saved notebook and its HTML show.
"""

from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm as auto_bar
from tqdm.std import tqdm as text_bar

__all__ = ['tqdm']


def tqdm(*args, **kwargs):
    """``tqdm.auto.tqdm``, or ``tqdm.std.tqdm`` on standard output when ``KIT_PROGRESS=text``."""
    if os.environ.get("KIT_PROGRESS") == "text":
        # stdout, not stderr: in a saved notebook stderr is drawn as a red block.
        kwargs.setdefault("file", sys.stdout)
        return text_bar(*args, **kwargs)
    return auto_bar(*args, **kwargs)
