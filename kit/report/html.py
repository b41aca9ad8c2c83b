"""The report pages: each executed notebook as one HTML page that opens offline, the one shared
plotly.js of a reports folder, and the marker by which the kit knows the files it wrote.

* ``to_html``: a notebook as a page, errors as their last line (``last_line``) with the
  traceback collapsed, figures drawn from their plotly JSON by the folder's ``plotly.min.js``
  (``write_plotlyjs``), nothing loaded from a CDN; ``slim`` keeps plotly.js out of a saved notebook;
* ``GENERATOR`` / ``is_kits``: everything written carries a marker (``<meta name="generator"
  content="kit.report">`` in HTML, ``metadata.kit_report`` in notebooks); a file without it is
  never overwritten or removed (``ReportError``);
* ``describe``: a notebook's title (its H1, which is also its page's title) and its one-line goal.
"""

from __future__ import annotations

import copy
import html
import json
import os
import re
from pathlib import Path

import plotly
import plotly.io as pio
from jinja2 import DictLoader
from plotly.offline import get_plotlyjs

__all__ = ["GENERATOR", "MARK", "ReportError", "write_atomic", "FAST_BANNER", "PLOTLYJS", "last_line", "slim",
           "to_html", "write_plotlyjs", "is_kits", "describe"]

GENERATOR = "kit.report"
#: The marker in the head of every HTML page the kit writes.
MARK = f'<meta name="generator" content="{GENERATOR}">'


class ReportError(RuntimeError):
    """The reports folder holds a file the kit did not write, where it would write one."""


def write_atomic(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` under a temporary name, then renames it: never half a page."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def last_line(out) -> str:
    """An error output's ``Type: message``. TensorFlow's errors raised in traced code carry
    the user's frames in the message, and the real message on its last line."""
    ename = out.get("ename", "Error")
    lines = [ln.strip() for ln in str(out.get("evalue", "")).splitlines() if ln.strip()]
    if not lines:
        return ename
    last = lines[-1]
    return last if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Warning)\b.*:", last) else f"{ename}: {last}"


def _error_html(out) -> str:
    """An error output as its last line, with the full traceback collapsed."""
    from nbconvert.filters.ansi import ansi2html  # keeps kit.report light: nbconvert (--help imports it)

    last = last_line(out)
    trace = "\n".join(out.get("traceback", []))
    return ('<div class="kit-error" style="border-left:4px solid #d9534f;padding:4px 10px;'
            'background:#fdf2f2;font-family:monospace;white-space:pre-wrap">'
            f"<strong>{html.escape(last)}</strong>"
            "<details><summary>full traceback</summary>"
            f'<pre style="white-space:pre-wrap">{ansi2html(trace)}</pre></details></div>')


#: The one copy of plotly.js in a reports folder, which its pages load (``write_plotlyjs``).
PLOTLYJS = "plotly.min.js"
_PLOTLY_MIME = "application/vnd.plotly.v1+json"
_JS_MARK = f"/* {GENERATOR}: "
#: nbconvert's lab page without the scripts it takes from CDNs: require.js (no output here
#: needs it), MathJax (no notebook has LaTeX), mermaid, and the widget manager (a headless
#: run draws static figures, see kit.plots.headless).
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{% block html_head_js %}{% endblock html_head_js %}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{% block html_head_js_mathjax %}{% endblock html_head_js_mathjax %}
{% block html_head_js_mermaidjs %}{% endblock html_head_js_mermaidjs %}
"""
_REMOTE_SCRIPT = re.compile(r"""<script\b[^>]*\bsrc=["']?(https?:)?//[^>]*>\s*</script>""", re.IGNORECASE)
#: What the index and each page of a fast run say at the top.
FAST_BANNER = "fast mode: small samples, figures are a demonstration, not measurements of your scale"


def _text(v) -> str:
    return "".join(v) if isinstance(v, list) else (v or "")


def _is_plotlyjs(html_text: str) -> bool:
    """Whether an HTML output carries the plotly.js library (plotly's "notebook" renderer
    shows it once per kernel: about 5 MB)."""
    return len(html_text) > 100_000 and re.search(r"\*\s*plotly\.js v\d", html_text[:20_000]) is not None


def slim(nb):
    """Keeps plotly.js out of a notebook (in place) and returns it.

    Drops the outputs that carry the library and the HTML beside each figure's plotly
    JSON (that HTML needs the library), so a figure is its ``application/vnd.plotly.v1+json``
    output alone: JupyterLab draws it with its own plotly.js, ``to_html`` with the shared one.
    """
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if _PLOTLY_MIME in data:
                data.pop("text/html", None)
            elif out.output_type == "display_data" and _is_plotlyjs(_text(data.get("text/html"))):
                continue
            kept.append(out)
        cell.outputs = kept
    return nb


def _figure_html(fig: dict) -> str:
    """A figure's plotly JSON as an HTML ``<div>`` drawn by the page's plotly.js (as plotly's
    notebook renderer draws it, without the library and without MathJax)."""

    fig = dict(fig)
    config = fig.pop("config", None) or {}
    return pio.to_html(fig, config=config, include_plotlyjs=False, include_mathjax=False, full_html=False,
                       auto_play=False, default_width="100%", default_height=525, validate=False)


def to_html(nb, *, failed: str | None = None, fast: bool = False, plotlyjs: str = PLOTLYJS) -> str:
    """The notebook as an HTML page, errors shown as their last line.

    The page loads nothing from the network. Its plotly figures (drawn from their plotly
    JSON) need plotly.js at ``plotlyjs``, relative to the page: ``run_notebooks`` writes it
    there (``write_plotlyjs``); a page without figures loads nothing.

    Args:
        nb: an executed notebook (not modified).
        failed: a one-line reason; puts a banner at the top saying the run failed.
        fast: puts a banner at the top saying the run was in fast mode (``FAST_BANNER``).
        plotlyjs: where the page loads plotly.js from.
    """

    import nbformat  # keeps kit.report light: nbformat (--help imports it)
    from nbconvert import HTMLExporter  # keeps kit.report light: nbconvert (--help imports it)

    nb = copy.deepcopy(nb)
    figures = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            if o.output_type == "error":
                o = nbformat.v4.new_output("display_data", data={"text/html": _error_html(o)})
            elif _PLOTLY_MIME in data:
                data["text/html"] = _figure_html(data[_PLOTLY_MIME])
                figures = True
            elif "text/html" in data:
                if _is_plotlyjs(_text(data["text/html"])):
                    continue  # the page loads the shared copy instead
                data["text/html"] = _REMOTE_SCRIPT.sub("", _text(data["text/html"]))
            outputs.append(o)
        cell.outputs = outputs
    exporter = HTMLExporter(extra_loaders=[DictLoader({"kit_report.html.j2": _TEMPLATE})],
                            template_file="kit_report.html.j2")
    body, _ = exporter.from_notebook_node(nb)
    head = MARK
    if figures:
        head += f'\n<script src="{html.escape(plotlyjs)}" charset="utf-8"></script>'
    banner = ""
    if failed:
        banner += ('<div style="background:#d9534f;color:white;padding:10px;font:16px sans-serif">'
                   f"This run failed: {html.escape(failed)}. Cells after the failure did not run."
                   "</div>")
    if fast:
        banner += ('<div class="kit-fast" style="background:#fcf8e3;color:#8a6d3b;padding:10px;'
                   f'font:16px sans-serif;border-bottom:1px solid #faebcc">{html.escape(FAST_BANNER)}.</div>')
    body = body.replace("<head>", f"<head>\n{head}", 1)
    if banner:
        body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + banner, body, count=1)
    return body


def write_plotlyjs(out: str | os.PathLike) -> Path:
    """Writes ``out/plotly.min.js`` (``PLOTLYJS``) from the installed plotly package: the
    one copy the pages of ``out`` load. An identical file is left as it is.

    Raises:
        ReportError: the file there was not written by kit.
    """

    target = Path(out) / PLOTLYJS
    text = f"{_JS_MARK}plotly.js of the installed plotly {plotly.__version__} */\n{get_plotlyjs()}"
    if target.exists():
        if not is_kits(target):
            raise ReportError(f"{target} was not written by kit; move it away or use another reports folder")
        if target.read_text(encoding="utf-8", errors="replace") == text:
            return target
    write_atomic(target, text)
    return target


def is_kits(path: Path, source: Path | None = None) -> bool:
    """Whether ``path`` is a report file that ``kit.report`` wrote.

    Its marker says so; for reports of ``source`` written before the marker existed,
    an HTML export titled with the notebook's name, or a notebook with the same cells.
    """
    path = Path(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(1 << 16)
    except (FileNotFoundError, IsADirectoryError):
        return False
    if path.suffix == ".html":
        if MARK in head:
            return True
        if source is None:
            return False
        # written before the marker: nbconvert's export of this notebook (its H1 in it)
        import nbformat  # keeps kit.report light: nbformat (--help imports it)

        title, _ = describe(nbformat.read(source, as_version=4))
        text = path.read_text(encoding="utf-8", errors="replace")
        return bool(title) and "jp-Notebook" in text and html.escape(title, quote=False) in text
    if path.suffix == ".ipynb":
        return _ipynb_marked(path, source)
    if path.suffix == ".js":
        return head.startswith(_JS_MARK)
    return False


def _ipynb_marked(path: Path, source: Path | None) -> bool:
    try:
        with open(path) as f:
            d = json.load(f)
        if "kit_report" in d.get("metadata", {}):
            return True
        if source is None:
            return False
        with open(source) as f:
            src = json.load(f)
    except (OSError, ValueError):
        return False
    sources = [("".join(c.get("source", "")) if isinstance(c.get("source"), list) else c.get("source"))
               for c in d.get("cells", [])]
    return bool(sources) and sources == [
        ("".join(c.get("source", "")) if isinstance(c.get("source"), list) else c.get("source"))
        for c in src.get("cells", [])]


def describe(nb) -> tuple[str, str]:
    """(title, what it teaches): the notebook's H1 and its one-line goal."""
    title, teaches = "", ""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("# ") and not title:
                title = line[2:].strip()
                rest = " ".join(lines[i + 1:]).strip()
                para = rest.split("\n\n")[0] if rest else ""
                teaches = re.sub(r"^\*\*Goal:\*\*\s*", "", " ".join(para.split()))
        if title:
            break
    return title, teaches
