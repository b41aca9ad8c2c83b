"""The walkthrough's index page: ``index.html``, one row per notebook in order, with what it teaches,
the headline it measured in this run, how many of its lessons held and whether it ran; at the top,
what the run found (``summary_lines``). ``records(nb)`` reads what a notebook stated through
``kit.notebook`` (outputs of type ``RECORD_MIME``).
"""

from __future__ import annotations

import html
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from kit.report.html import _PLOTLY_MIME, FAST_BANNER, MARK, PLOTLYJS, ReportError, is_kits, write_atomic
from kit.util import format_duration

#: The output type of what a notebook states through ``kit.notebook`` (``kit.notebook.records``).
RECORD_MIME = "application/vnd.kit.record+json"
#: What ``run_notebooks`` tells each kernel: the run's folder of shared figures, the run's id and
#: the notebook's name (``kit.notebook.records.shared`` reads them).
RUN_ENV, RUN_ID_ENV, NOTEBOOK_ENV = "KIT_RUN_DIR", "KIT_RUN_ID", "KIT_NOTEBOOK"
#: In a reports folder: the run's shared figures, and the list of every headline figure.
RUN_FOLDER, HEADLINES = ".kit-run", "headlines.json"


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
    summary: str | None = None   # the notebook's one sentence for the index (its headline's summary=)
    figures: list = field(default_factory=list)   # its headline figures (kit.notebook.figure / shared)
    lessons: list = field(default_factory=list)   # its lessons: {"claim", "held", "measured"}
    thumbnail: dict | None = None  # its headline's figure, shrunk for the index (``thumbnail``)


def _record(out) -> dict | None:
    """The record (``RECORD_MIME``) an output carries, or None."""
    rec = out.get("data", {}).get(RECORD_MIME) if out.get("output_type") in ("display_data", "execute_result") else None
    if isinstance(rec, str):
        rec = json.loads(rec)
    return rec if isinstance(rec, dict) else None


def records(nb) -> list[dict]:
    """Every record a notebook's outputs carry (``RECORD_MIME``), in order."""
    return [rec for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
            if (rec := _record(o)) is not None]


def headlines(entries: list[Entry]) -> list[dict]:
    """``reports/headlines.json``: one ``{"notebook", "quantity", "value", "unit", "basis"}`` per headline
    figure of the notebooks that ran."""
    return [{"notebook": e.name, **f} for e in entries if e.status == "ok" for f in e.figures]


def disagreements(rows: list[dict], tolerance: float = 0.10) -> list[str]:
    """The quantities whose values differ by more than ``tolerance`` across the notebooks that state
    them (one line each): a quantity's name means one thing and has one value per run."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(r["quantity"], []).append(r)
    out = []
    for quantity, rs in groups.items():
        values = [r["value"] for r in rs]
        if min(values) > 0 and max(values) / min(values) > 1 + tolerance:
            out.append(f"{quantity}: " + ", ".join(f"{r['notebook']} {r['value']:,.4g} {r['unit']}" for r in rs)
                       + f" differ by more than {tolerance:.0%}")
    return out


def _lesson_count(lessons: list) -> str:
    held = sum(x["held"] is True for x in lessons)
    failed = sum(x["held"] is False for x in lessons)
    unshown = sum(x["held"] is None for x in lessons)
    text = f"{held} of {len(lessons)} lesson{'s' if len(lessons) != 1 else ''} held"
    if failed:
        text += f", {failed} did not"
    if unshown:
        text += f", {unshown} not shown"
    return text


def summary_lines(entries: list[Entry]) -> list[str]:
    """What the run found: one line per user (the spectrogram user's epoch here and on their GPUs, the
    best fix and its epoch; the segmentation user's 208 s / 126 s beside this run's one-core ratio), then
    how many lessons held. Each line only from the figures the notebooks stated in this run."""
    from kit.scenario import SEGMENTATION, SEGMENTATION_ONE_CORE, SPECTROGRAM  # the users, declared once

    figs = {f["quantity"]: (e, f) for e in entries if e.status == "ok" for f in e.figures}
    lines = []
    if all(q in figs for q in ("user_epoch_generator_this_machine", "user_epoch_generator_user_gpus",
                               "user_epoch_best_this_machine", "user_epoch_best_user_gpus")):
        def d(q):
            return format_duration(figs[q][1]["value"])

        b = figs["user_epoch_generator_this_machine"][1]["basis"]
        best = figs["user_epoch_best_user_gpus"][1]["basis"]
        lines.append(f"The spectrogram user reported {SPECTROGRAM.reported} per epoch: their "
                     f"generator at {b.get('frames_per_file', '?'):,} frames per file takes "
                     f"{d('user_epoch_generator_this_machine')} here and {d('user_epoch_generator_user_gpus')} on their "
                     f"{SPECTROGRAM.gpus} GPUs; the best fix, {best.get('loader', '?')}: "
                     f"{d('user_epoch_best_this_machine')} here, {d('user_epoch_best_user_gpus')} on their GPUs "
                     f"({b.get('measured_in', '?')}).")
    if SEGMENTATION_ONE_CORE in figs:
        e, f = figs[SEGMENTATION_ONE_CORE]
        lines.append(f"The segmentation user's tf.data rewrite took {SEGMENTATION.tfdata_s:g} s against their DataGenerator's "
                     f"{SEGMENTATION.datagenerator_s:g} s ({SEGMENTATION.tfdata_over_datagenerator:.2f}x its rate) on one "
                     f"core; pinned to one core here it reads at {f['value']:.2f}x ({e.name}).")
    lessons = [x for e in entries if e.status == "ok" for x in e.lessons]
    if lessons:
        lines.append(f"Lessons: {_lesson_count(lessons)} in this run (each checked against the run's numbers on its page).")
    return lines


def headline_output(nb) -> tuple[str | None, str | None]:
    """``(line, table)``: the line ``kit.notebook.headline`` showed, else the first non-empty line of
    the first text output of the cell tagged ``headline``, with ``table`` its HTML when that output
    is a DataFrame (whose first line is only its header)."""
    for rec in records(nb):
        if rec.get("kind") == "headline" and rec.get("text"):
            return str(rec["text"]).strip(), None
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


#: A figure larger than this (its JSON, in characters) is left out of the index rather than shrunk.
THUMBNAIL_MAX_CHARS = 150_000


def thumbnail(nb) -> dict | None:
    """The notebook's headline figure made small for the index (traces and axes kept; sliders,
    buttons, legend dropped, title shortened): the first plotly figure from the headline's cell on,
    else the notebook's first; None without one."""
    cells = [c for c in nb.cells if c.cell_type == "code"]

    def is_headline(cell):
        return "headline" in cell.metadata.get("tags", []) or any(
            (rec := _record(o)) is not None and rec.get("kind") == "headline" for o in cell.get("outputs", []))

    def figure_of(cell):
        for o in cell.get("outputs", []):
            fig = o.get("data", {}).get(_PLOTLY_MIME) if o.output_type in ("display_data", "execute_result") else None
            if isinstance(fig, dict) and fig.get("data"):
                return fig
        return None

    start = next((i for i, c in enumerate(cells) if is_headline(c)), 0)
    fig = next((f for c in cells[start:] + cells[:start] if (f := figure_of(c)) is not None), None)
    if fig is None or len(json.dumps(fig)) > THUMBNAIL_MAX_CHARS:
        return None
    layout = {k: v for k, v in (fig.get("layout") or {}).items()
              if k not in ("sliders", "updatemenus", "height", "width", "margin", "legend", "annotations")}
    title = layout.get("title")
    text = title.get("text") if isinstance(title, dict) else title
    layout["title"] = {"text": (text[:60] + "...") if text and len(text) > 63 else (text or ""), "font": {"size": 11}}
    for axis in [k for k in layout if k.startswith(("xaxis", "yaxis"))]:
        a = dict(layout[axis])
        a.pop("title", None)
        a["tickfont"] = {"size": 9}
        layout[axis] = a
    layout.update(height=170, width=300, showlegend=False, margin={"l": 40, "r": 10, "t": 28, "b": 24},
                  font={"size": 9})
    data = [{k: v for k, v in t.items() if k not in ("text", "texttemplate", "hovertemplate", "customdata")}
            for t in fig["data"]]
    return {"data": data, "layout": layout}


#: tqdm's text bar ("memmap: 100%|#####| 200/200 [...]"): never a headline.
_PROGRESS_BAR = re.compile(r"\d+%\|")


def format_run_time(s: float) -> str:
    """How long a notebook ran: ``42 s``, ``3 min 07 s``."""
    return f"{s:.0f} s" if s < 90 else f"{s // 60:.0f} min {s % 60:02.0f} s"


def _index_row(e: Entry, fast: bool) -> str:
    """One notebook's row of the index: its linked title and goal, its headline, its status."""
    name = html.escape(e.title or e.name)
    link = f'<a href="{html.escape(e.html)}">{name}</a>' if e.html else name
    if e.status == "ok":
        if e.summary:
            figure = f'<span class="sum">{html.escape(e.summary)}</span>'
        elif e.headline_table:
            figure = f'<div class="table">{e.headline_table}</div>'
        elif e.headline:
            figure = html.escape(e.headline)
        else:
            figure = '<span class="dim">(no headline cell)</span>'
        if fast and (e.headline_table or e.headline):
            figure = f'<span class="fastmark">fast mode</span> {figure}'
        status = f'<span class="ok">ran in {format_run_time(e.seconds)}</span>' if e.seconds is not None else "ok"
        if e.lessons:
            bad = any(x["held"] is False for x in e.lessons)
            status += f'<div class="{"bad" if bad else "dim"}">{html.escape(_lesson_count(e.lessons))}</div>'
    elif e.status == "failed":
        figure = f'<span class="bad">FAILED: {html.escape(e.error or "")}</span>'
        status = '<span class="bad">failed</span>'
    elif e.status == "earlier run":
        figure = '<span class="dim">not run this time; the link is an earlier run\'s report</span>'
        status = '<span class="dim">earlier run</span>'
    else:
        figure = '<span class="dim">not run</span>'
        status = '<span class="dim">not run</span>'
    small = ""
    if e.status == "ok" and e.thumbnail is not None:
        small = (f"<div class='thumb' data-figure='{html.escape(json.dumps(e.thumbnail), quote=True)}'></div>")
    return (f"<tr><td>{link}<div class='teach'>{html.escape(e.teaches)}</div></td>"
            f"<td class='fig'>{figure}</td><td>{small}</td><td style='white-space:nowrap'>{status}</td></tr>")


def write_index(entries: list[Entry], out: str | os.PathLike, *, title: str = "kit: the walkthrough",
                extra: str = "", fast: bool = False, plotlyjs: str = PLOTLYJS) -> Path:
    """Writes ``out/index.html``: one row per notebook, in order, linking its HTML; ``fast`` says so at
    the top and on each headline. Thumbnails are drawn by the folder's ``plotlyjs``, nothing else loads."""
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
.sum {{ font-family: system-ui, sans-serif; font-size: 14px; }} .found {{ font-size: 16px; }}
.thumb {{ width: 300px; height: 170px; }}
.fastmark {{ background: #f0ad4e; color: white; border-radius: 3px; padding: 0 5px; font: bold 11px sans-serif; }}
</style></head><body>
{f'<p class="fast"><strong>{html.escape(FAST_BANNER)}.</strong></p>' if fast else ""}
<h1>{html.escape(title)}</h1>
{"".join(f'<p class="found">{html.escape(x)}</p>' for x in summary_lines(entries))}
<p>Each notebook was executed headless in this run; the sentence beside it is its headline, measured in
this run{" in fast mode" if fast else ""} (the full line is on its page), with how many of its lessons held.
Click a title to read the notebook.</p>
<table><tr><th style="width:32%">notebook: what it teaches</th><th>headline measured in this run</th>
<th>its figure</th><th style="white-space:nowrap">status</th></tr>
{chr(10).join(rows)}
</table>
{_THUMBNAILS_JS.format(src=html.escape(plotlyjs)) if any(e.thumbnail for e in entries if e.status == "ok") else ""}
{extra}
<p class="dim">Written by kit.report at {time.strftime("%Y-%m-%d %H:%M:%S %Z")}.</p>
</body></html>
"""
    write_atomic(target, page)
    return target


#: Draws each row's small figure with the folder's plotly.js; static (no hover, no mode bar).
_THUMBNAILS_JS = """<script src="{src}"></script>
<script>
for (const el of document.querySelectorAll('.thumb')) {{
  const fig = JSON.parse(el.dataset.figure);
  Plotly.newPlot(el, fig.data, fig.layout, {{staticPlot: true, displayModeBar: false}});
}}
</script>"""
