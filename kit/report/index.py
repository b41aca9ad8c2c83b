"""The walkthrough's index page: ``index.html``, one row per notebook in order, with what it
teaches, the headline it measured in this run (``headline_output``: the first output of its cell
tagged ``headline``) and whether it ran.
"""

from __future__ import annotations

import html
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from kit.report.html import FAST_BANNER, MARK, ReportError, is_kits, write_atomic

__all__ = ["Entry", "headline", "headline_output", "format_run_time", "write_index"]


@dataclass
class Entry:
    """One notebook of the walkthrough in ``index.html``."""

    name: str
    title: str
    teaches: str
    status: str = "not run"      # "ok", "failed" or "not run"
    headline: str | None = None
    headline_table: str | None = None  # the HTML of a headline that is a table
    error: str | None = None
    seconds: float | None = None
    html: str | None = None


def headline(nb) -> str | None:
    """The first line of the first text output of the cell tagged ``headline``, if any."""
    return headline_output(nb)[0]


def headline_output(nb) -> tuple[str | None, str | None]:
    """``(line, table)`` from the first text output of the cell tagged ``headline``.

    ``line`` is that output's first non-empty line. When the output is a table (a
    DataFrame: several lines of text and an HTML form) ``table`` is its HTML, which the
    index shows, since a table's first line is only its header.
    """
    for cell in nb.cells:
        if cell.cell_type != "code" or "headline" not in cell.metadata.get("tags", []):
            continue
        for out in cell.get("outputs", []):
            table = None
            if out.output_type == "stream" and out.name == "stdout":
                text = out.text
            elif out.output_type in ("execute_result", "display_data") and "text/plain" in out.get("data", {}):
                text = out.data["text/plain"]
                rich = out.data.get("text/html")
                if rich and "<table" in rich and len(text.strip().splitlines()) > 1:
                    table = rich
            else:
                continue
            for line in text.splitlines():
                if line.strip() and not _PROGRESS_BAR.search(line):
                    return line.strip(), table
    return None, None


#: tqdm's text bar ("memmap: 100%|#####| 200/200 [...]"), which a headless run prints to
#: stdout before the figure: never a headline.
_PROGRESS_BAR = re.compile(r"\d+%\|")


def format_run_time(s: float) -> str:
    """How long a notebook ran: ``42 s``, ``3 min 07 s``."""
    return f"{s:.0f} s" if s < 90 else f"{s // 60:.0f} min {s % 60:02.0f} s"


def _index_row(e: Entry, fast: bool) -> str:
    """One notebook's row of the index: its linked title and goal, its headline, its status."""
    name = html.escape(e.title or e.name)
    link = f'<a href="{html.escape(e.html)}">{name}</a>' if e.html else name
    if e.status == "ok":
        if e.headline_table:
            figure = f'<div class="table">{e.headline_table}</div>'
        elif e.headline:
            figure = html.escape(e.headline)
        else:
            figure = '<span class="dim">(no headline cell)</span>'
        if fast and (e.headline_table or e.headline):
            figure = f'<span class="fastmark">fast mode</span> {figure}'
        status = f'<span class="ok">ran in {format_run_time(e.seconds)}</span>' if e.seconds is not None else "ok"
    elif e.status == "failed":
        figure = f'<span class="bad">FAILED: {html.escape(e.error or "")}</span>'
        status = '<span class="bad">failed</span>'
    elif e.status == "earlier run":
        figure = '<span class="dim">not run this time; the link is an earlier run\'s report</span>'
        status = '<span class="dim">earlier run</span>'
    else:
        figure = '<span class="dim">not run</span>'
        status = '<span class="dim">not run</span>'
    return (f"<tr><td>{link}<div class='teach'>{html.escape(e.teaches)}</div></td>"
            f"<td class='fig'>{figure}</td><td style='white-space:nowrap'>{status}</td></tr>")


def write_index(entries: list[Entry], out: str | os.PathLike, *, title: str = "kit: the walkthrough",
                extra: str = "", fast: bool = False) -> Path:
    """Writes ``out/index.html``: one row per notebook, in order, linking its HTML.

    ``fast``: the notebooks ran in fast mode; the page says so at the top (``FAST_BANNER``)
    and marks each headline of this run.
    """
    out = Path(out)
    target = out / "index.html"
    if target.exists() and not is_kits(target):
        raise ReportError(f"{target} was not written by kit; move it away or use another reports folder")
    rows = [_index_row(e, fast) for e in entries]
    page = f"""<!DOCTYPE html>
<html><head>
{MARK}
<meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font: 15px/1.45 system-ui, sans-serif; max-width: 1100px; margin: 2em auto; color: #222; }}
table {{ border-collapse: collapse; width: 100%; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 8px 10px; vertical-align: top; text-align: left; }}
.teach {{ color: #555; font-size: 13px; }} .fig {{ font-family: monospace; font-size: 13px; }}
.table table {{ font-size: 12px; width: auto; }} .table td, .table th {{ padding: 2px 6px; text-align: right; }}
.ok {{ color: #2a7a2a; }} .bad {{ color: #c9302c; font-weight: bold; }} .dim {{ color: #999; }}
.fast {{ background: #fcf8e3; color: #8a6d3b; border: 1px solid #faebcc; padding: 10px 14px; font-size: 17px; }}
.fastmark {{ background: #f0ad4e; color: white; border-radius: 3px; padding: 0 5px; font: bold 11px sans-serif; }}
</style></head><body>
{f'<p class="fast"><strong>{html.escape(FAST_BANNER)}.</strong></p>' if fast else ""}
<h1>{html.escape(title)}</h1>
<p>Each notebook was executed headless in this run; the figure beside it is the first output of its
<code>headline</code> cell, measured in this run{" in fast mode" if fast else ""}.
Click a title to read the notebook.</p>
<table><tr><th style="width:42%">notebook: what it teaches</th><th>headline measured in this run</th>
<th style="white-space:nowrap">status</th></tr>
{chr(10).join(rows)}
</table>
{extra}
<p class="dim">Written by kit.report at {time.strftime("%Y-%m-%d %H:%M:%S %Z")}.</p>
</body></html>
"""
    write_atomic(target, page)
    return target

