"""Progress bars: tqdm's notebook widget in JupyterLab, its text bar where ``KIT_PROGRESS=text`` (a
headless run, whose saved notebook shows the text bar's last state, not a widget's ``0%``).
"""

from __future__ import annotations

import os
import sys

from tqdm.auto import tqdm as auto_bar
from tqdm.std import tqdm as text_bar


def tqdm(*args, **kwargs):
    """``tqdm.auto.tqdm``, or ``tqdm.std.tqdm`` on standard output when ``KIT_PROGRESS=text``."""
    if os.environ.get("KIT_PROGRESS") == "text":
        # stdout, not stderr: in a saved notebook stderr is drawn as a red block.
        kwargs.setdefault("file", sys.stdout)
        return text_bar(*args, **kwargs)
    return auto_bar(*args, **kwargs)
