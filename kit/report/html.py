"""The report pages: each executed notebook as one HTML page that opens offline (``to_html``: errors
as their last line, figures drawn by the folder's one ``plotly.min.js``, nothing from a CDN), and the
marker by which the kit knows the files it wrote (``is_kits``): a file without it is never
overwritten or removed (``ReportError``).
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
    """An error output's ``Type: message`` (TensorFlow's errors from traced code carry the real
    message on the last line)."""
    ename = out.get("ename", "Error")
    lines = [ln.strip() for ln in str(out.get("evalue", "")).splitlines() if ln.strip()]
    if not lines:
        return ename
    last = lines[-1]
    return last if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Warning)\b.*:", last) else f"{ename}: {last}"


def _error_html(out) -> str:
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
#: nbconvert's lab page without the scripts it takes from CDNs (require.js, MathJax, mermaid, the
#: widget manager): nothing here needs them.
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
    """Whether an HTML output carries the plotly.js library (about 5 MB)."""
    return len(html_text) > 100_000 and re.search(r"\*\s*plotly\.js v\d", html_text[:20_000]) is not None


def slim(nb):
    """Keeps plotly.js out of a notebook (in place; returns it): drops the outputs carrying the library
    and the HTML beside each figure's plotly JSON, which JupyterLab and ``to_html`` draw themselves."""
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
    """A figure's plotly JSON as an HTML ``<div>`` drawn by the page's plotly.js."""
    fig = dict(fig)
    config = fig.pop("config", None) or {}
    return pio.to_html(fig, config=config, include_plotlyjs=False, include_mathjax=False, full_html=False,
                       auto_play=False, default_width="100%", default_height=525, validate=False)


def to_html(nb, *, failed: str | None = None, fast: bool = False, plotlyjs: str = PLOTLYJS) -> str:
    """An executed notebook (not modified) as an HTML page, errors shown as their last line.

    The page loads nothing from the network but plotly.js at ``plotlyjs`` (relative to the page),
    where it has figures. ``failed`` (a one-line reason) and ``fast`` put a banner at the top.
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
    """Writes ``out/plotly.min.js`` from the installed plotly, the one copy the pages of ``out`` load
    (an identical file is left as it is); ``ReportError`` if the file there is not the kit's."""
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
    """Whether ``path`` is a report file that ``kit.report`` wrote: its marker says so, or (reports of
    ``source`` from before the marker) an HTML export with its title, a notebook with its cells."""
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
    sources = [_text(c.get("source")) for c in d.get("cells", [])]
    return bool(sources) and sources == [_text(c.get("source")) for c in src.get("cells", [])]


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
                rest = "\n".join(lines[i + 1:]).strip()  # its paragraphs kept apart: the goal is the first
                para = rest.split("\n\n")[0] if rest else ""
                teaches = re.sub(r"^\*\*Goal:\*\*\s*", "", " ".join(para.split()))
        if title:
            break
    return title, teaches
