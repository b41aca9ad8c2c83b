"""Executes notebooks headless (nbclient) and writes each as ``.ipynb`` and HTML (nbconvert),
with ``index.html``: the walkthrough in order, what each notebook teaches and its headline figure.

What a reader of the reports should not have to wade through is kept out:

* TensorFlow's start-up lines (the absl banner, ``cuInit ... (303)``, ``cudart_stub``, oneDNN's)
  and Jupyter's "Kernel is running over TCP": the kernel starts with ``TF_CPP_MIN_LOG_LEVEL=2``,
  what TensorFlow prints regardless (``NOISE``) is dropped at the kernel's file descriptor 2
  by ``kit.notebook.setup`` (``keep_stderr_quiet``) and from the stream outputs (``clean``),
  and the kernel's own stdout/stderr go to ``<out>/logs/NAME.log`` instead of the terminal;
* full tracebacks of the cells that fail on purpose: the HTML shows the error type and
  message, with the traceback in a collapsed ``<details>`` block;
* progress widgets that need a live front end: ``KIT_PROGRESS=text`` makes the kit's bars
  plain text (``kit.progress``), and carriage-return updates are coalesced so the saved
  output shows the finished bar;
* a copy of plotly.js per page and notebook, and anything from a CDN: the pages load one
  ``plotly.min.js`` beside them (``write_plotlyjs``) and no require.js, MathJax, mermaid or
  widget script; the saved notebooks keep each figure as plotly's JSON (``slim``), which
  JupyterLab draws with its own plotly.js. The reports open offline.

Everything written carries a marker (``<meta name="generator" content="kit.report">`` in HTML,
``metadata.kit_report`` in notebooks); files in the output folder without it are never
overwritten or removed.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    'QUIET_ENV',
    'NOISE',
    'GENERATOR',
    'ReportError',
    'is_noise',
    'quiet_stderr',
    'keep_stderr_quiet',
    'execute',
    'clean',
    'last_line',
    'to_html',
    'slim',
    'PLOTLYJS',
    'write_plotlyjs',
    'FAST_BANNER',
    'is_kits',
    'Entry',
    'describe',
    'headline',
    'headline_output',
    'write_index',
    'notebooks',
    'run_notebooks',
]

#: Environment of the kernels ``kit.report`` starts (a caller's ``env`` or an already set
#: variable wins).
QUIET_ENV = {
    # TensorFlow's C++ INFO and WARNING lines (errors still print); it must be set before
    # TensorFlow loads, which is why it goes into the kernel's environment.
    "TF_CPP_MIN_LOG_LEVEL": "2",
    # the kit's progress bars as plain text (see kit.progress)
    "KIT_PROGRESS": "text",
    # figures as plotly's JSON only: the HTML draws them with the shared plotly.min.js
    # (to_html), JupyterLab with its own; no copy of plotly.js goes into the notebook
    "PLOTLY_RENDERER": "plotly_mimetype",
}

#: Lines of stream output that are start-up noise, not results. TF_CPP_MIN_LOG_LEVEL does not
#: silence the absl banner nor the lines logged before absl is initialised (TF 2.21).
NOISE = [
    re.compile(r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"),
    # glog-style INFO/WARNING lines: "I0000 00:00:1796.050937    5561 cudart_stub.cc:31] ..."
    re.compile(r"^[IW]\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\] "),
    # the CUDA probes' errors on a machine without a usable GPU (other errors stay visible)
    re.compile(r"^E\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\] .*"
               r"(cuInit|Unable to register cu\w+ factory|CUDA error|cuda drivers"
               r"|computation placer already registered)"),
    # a notice logged at error level whenever float16 runs on a CPU without AVX-512 FP16
    re.compile(r"^E\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\] oneDNN supports DT_HALF only"),
    re.compile(r"^To enable the following instructions: .* rebuild TensorFlow"),
    re.compile(r"^\[IPKernelApp\] WARNING \| Kernel is running over TCP"),
]

GENERATOR = "kit.report"
_MARK = f'<meta name="generator" content="{GENERATOR}">'
_CR = re.compile(r"[^\n]*\r(?=[^\n])")


class ReportError(RuntimeError):
    """The reports folder holds a file the kit did not write, where it would write one."""


def is_noise(line: str) -> bool:
    """Whether a line of output is start-up noise (``NOISE``)."""
    return any(p.match(line) for p in NOISE)


#: The filter process of ``quiet_stderr``: stdin is the pipe that replaced fd 2, stdout the
#: original stderr, argv[1] the ``NOISE`` patterns as JSON. Standard library only (-I -S).
_FILTER = r"""
import json, os, re, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the command, which then closes the pipe
noise = [re.compile(p) for p in json.loads(sys.argv[1])]
def keep(part):
    line = part.decode("utf-8", "replace")
    return not any(p.match(line) for p in noise)
buf = b""
while chunk := os.read(0, 1 << 16):
    *parts, buf = re.split(rb"(?<=[\r\n])", buf + chunk)
    out = b"".join(p for p in parts if keep(p))
    if out:
        os.write(1, out)
if buf and keep(buf):
    os.write(1, buf)
"""


class _StderrFilter:
    """A pipe in place of file descriptor 2, read by a small process that forwards to the
    original stderr every line that is not ``NOISE``, as it arrives. A process rather than a
    thread: what is written just before a crash (a fatal ``F`` line, then abort) still arrives."""

    def __init__(self):
        import subprocess

        sys.stderr.flush()
        self.saved = os.dup(2)
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _FILTER, json.dumps([p.pattern for p in NOISE])],
                stdin=r, stdout=self.saved, stderr=self.saved, close_fds=True)
        except BaseException:
            for fd in (r, w, self.saved):
                os.close(fd)
            raise
        os.close(r)
        os.dup2(w, 2)
        os.close(w)

    def close(self, timeout: float) -> None:
        import subprocess

        sys.stderr.flush()
        os.dup2(self.saved, 2)  # closes the pipe's last write end here, unless a child holds one
        os.close(self.saved)
        try:
            self.proc.wait(timeout=timeout)  # it has forwarded everything
        except subprocess.TimeoutExpired:
            pass  # a child still writes to the pipe: the filter serves it until it exits


@contextmanager
def quiet_stderr():
    """Drops ``NOISE`` lines written to file descriptor 2 while inside, by Python or by C++
    (TensorFlow logs through absl, below ``sys.stderr``); every other byte passes through.

    A pipe replaces fd 2 and a small process forwards what is not noise to the original
    stderr. Leaving waits at most 5 s for it (a child process may hold the pipe open).
    """
    f = _StderrFilter()
    try:
        yield
    finally:
        f.close(timeout=5)


_kept: _StderrFilter | None = None


def keep_stderr_quiet() -> None:
    """Drops ``NOISE`` lines from file descriptor 2 for the rest of the process (as
    ``quiet_stderr``); a second call does nothing. At exit fd 2 is restored and what is
    in the pipe is forwarded (waiting at most 1 s).

    For a Jupyter kernel, whose fd 2 goes to the notebook: ``kit.notebook.setup`` calls it
    before TensorFlow loads, so its start-up lines never reach the cell.
    """
    global _kept
    if _kept is None:
        import atexit

        _kept = _StderrFilter()
        atexit.register(_kept.close, 1.0)


# --------------------------------------------------------------------------- executing


def execute(path: str | os.PathLike, *, fast: bool = False, timeout: int = 1800, env: dict | None = None,
            log: str | os.PathLike | None = None):
    """Runs a notebook in its own folder and returns the executed ``NotebookNode``.

    Stream outputs are cleaned (``clean``). A cell that fails without the
    ``raises-exception`` tag raises nbclient's ``CellExecutionError``; the notebook
    passed in keeps what ran until then (see ``run_notebooks``).

    Args:
        path: the ``.ipynb`` file.
        fast: sets ``KIT_FAST=1`` for the kernel (the notebooks' parameter cells read it).
        timeout: seconds allowed per cell.
        env: extra environment variables for the kernel (on top of ``QUIET_ENV``).
        log: a file for the kernel process's own stdout and stderr (None: inherited).
    """
    import nbformat

    nb = nbformat.read(Path(path), as_version=4)
    _execute(nb, Path(path), fast=fast, timeout=timeout, env=env, log=log)
    return nb


def _execute(nb, path: Path, *, fast: bool, timeout: int, env: dict | None, log) -> None:
    from nbclient import NotebookClient

    saved = dict(os.environ)
    for k, v in QUIET_ENV.items():
        os.environ.setdefault(k, v)
    os.environ.update(env or {})
    if fast:
        os.environ["KIT_FAST"] = "1"
    else:
        os.environ.pop("KIT_FAST", None)
    fh = None
    try:
        launch = {}
        if log is not None:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
            fh = open(log, "w")
            launch = {"stdout": fh, "stderr": fh}
        # Cells tagged raises-exception may fail on purpose; any other error stops the run.
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute(**launch)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if fh is not None:
            fh.close()
        clean(nb)


def _drop_noise(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if not is_noise(line))


def clean(nb):
    """Removes start-up noise from stream outputs and coalesces streams (in place).

    Consecutive outputs of one stream are merged and text overwritten by a carriage
    return is dropped, so a text progress bar shows its last state; ``NOISE`` lines are
    removed and outputs left empty are dropped. Returns ``nb``.
    """
    for cell in nb.cells:
        if cell.cell_type != "code" or not cell.get("outputs"):
            continue
        merged = []
        for out in cell.outputs:
            if (out.output_type == "stream" and merged and merged[-1].output_type == "stream"
                    and merged[-1].name == out.name):
                merged[-1].text += out.text
            else:
                merged.append(out)
        kept = []
        for out in merged:
            if out.output_type == "stream":
                out.text = _drop_noise(_CR.sub("", out.text))
                if not out.text.strip():
                    continue
            kept.append(out)
        cell.outputs = kept
    return nb


# --------------------------------------------------------------------------- HTML


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
    from nbconvert.filters.ansi import ansi2html

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
    import plotly.io as pio

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
    import copy

    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

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
    head = _MARK
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
    import plotly
    from plotly.offline import get_plotlyjs

    target = Path(out) / PLOTLYJS
    text = f"{_JS_MARK}plotly.js of the installed plotly {plotly.__version__} */\n{get_plotlyjs()}"
    if target.exists():
        if not is_kits(target):
            raise ReportError(f"{target} was not written by kit; move it away or use another reports folder")
        if target.read_text(encoding="utf-8", errors="replace") == text:
            return target
    _write(target, text)
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
        if _MARK in head:
            return True
        if source is None:
            return False
        # written before the marker: nbconvert's export of this notebook (its H1 in it)
        import nbformat

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


# --------------------------------------------------------------------------- the walkthrough


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


def _fmt_s(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s // 60:.0f} min {s % 60:02.0f} s"


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
    rows = []
    for e in entries:
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
            status = f'<span class="ok">ran in {_fmt_s(e.seconds)}</span>' if e.seconds is not None else "ok"
        elif e.status == "failed":
            figure = f'<span class="bad">FAILED: {html.escape(e.error or "")}</span>'
            status = '<span class="bad">failed</span>'
        elif e.status == "earlier run":
            figure = '<span class="dim">not run this time; the link is an earlier run\'s report</span>'
            status = '<span class="dim">earlier run</span>'
        else:
            figure = '<span class="dim">not run</span>'
            status = '<span class="dim">not run</span>'
        rows.append(f"<tr><td>{link}<div class='teach'>{html.escape(e.teaches)}</div></td>"
                    f"<td class='fig'>{figure}</td><td style='white-space:nowrap'>{status}</td></tr>")
    page = f"""<!DOCTYPE html>
<html><head>
{_MARK}
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
    _write(target, page)
    return target


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def notebooks(src: str | os.PathLike = "notebooks", only=None) -> list[Path]:
    """The walkthrough's notebooks in order (``NN_name.ipynb``); ``only``: name prefixes to keep."""
    paths = sorted(Path(src).glob("[0-9][0-9]_*.ipynb"))
    if only:
        paths = [p for p in paths if any(p.name.startswith(o) for o in only)]
    return paths


def run_notebooks(src: str | os.PathLike = "notebooks", out: str | os.PathLike = "reports", *,
                  fast: bool = False, only=None, timeout: int = 1800, log=print) -> list[Entry]:
    """Executes the notebooks in order into ``out``; writes ``NAME.ipynb``, ``NAME.html``,
    ``logs/NAME.log``, ``plotly.min.js`` (the pages' one copy) and ``index.html``
    (rewritten after each notebook).

    A notebook that fails does not stop the others: its HTML shows what ran, with a
    banner saying it failed, and the index marks it failed. The previous run's report of
    a notebook is removed before it runs, so an interrupted run never leaves an old
    report looking current.

    Args:
        src: folder of the notebooks.
        out: reports folder.
        fast: run in fast mode (``KIT_FAST=1``).
        only: name prefixes (``["00", "05"]``) to run; the index still lists every notebook.
        timeout: seconds allowed per cell.
        log: where progress lines go.

    Returns:
        One ``Entry`` per notebook of ``src``.

    Raises:
        ReportError: a file the kit would write exists and is not the kit's.
    """
    import nbformat
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    out = Path(out)
    every = notebooks(src)
    chosen = set(notebooks(src, only))
    # Refuse before running anything if a file we would replace is not ours.
    for p in chosen:
        for target in (out / p.name, out / p.with_suffix(".html").name):
            if target.exists() and not is_kits(target, p):
                raise ReportError(f"{target} was not written by kit; move it away or use another reports folder")
    for target in (out / "index.html", out / PLOTLYJS):
        if target.exists() and not is_kits(target):
            raise ReportError(f"{target} was not written by kit; move it away or use another reports folder")
    out.mkdir(parents=True, exist_ok=True)
    write_plotlyjs(out)  # the one copy every page loads

    entries = []
    for p in every:
        title, teaches = describe(nbformat.read(p, as_version=4))
        e = Entry(p.stem, title, teaches)
        html_path = out / p.with_suffix(".html").name
        if p not in chosen and html_path.exists() and is_kits(html_path, p):
            e.status, e.html = "earlier run", html_path.name  # kept from a previous run, said so
        entries.append(e)
    chosen_list = [p for p in every if p in chosen]
    for n, p in enumerate(chosen_list, 1):
        e = entries[every.index(p)]
        html_path, nb_path = out / p.with_suffix(".html").name, out / p.name
        for stale in (html_path, nb_path):  # ours (checked above): never left looking current
            stale.unlink(missing_ok=True)
        log(f"  [{n}/{len(chosen_list)}] {p.stem} ...")
        nb = nbformat.read(p, as_version=4)
        t0 = time.perf_counter()
        failed = None
        try:
            _execute(nb, p, fast=fast, timeout=timeout, env=None, log=out / "logs" / f"{p.stem}.log")
        except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
            failed = _one_line(err, nb)
        e.seconds = time.perf_counter() - t0
        nb.metadata["kit_report"] = {"generator": GENERATOR, "status": "failed" if failed else "ok",
                                     "seconds": round(e.seconds, 1), "fast": fast}
        nbformat.write(slim(nb), nb_path)
        _write(html_path, to_html(nb, failed=failed, fast=fast))
        e.html = html_path.name
        if failed:
            e.status, e.error = "failed", failed
            log(f"        FAILED after {_fmt_s(e.seconds)}: {failed} (see {html_path})")
        else:
            e.status = "ok"
            e.headline, e.headline_table = headline_output(nb)
            log(f"        done in {_fmt_s(e.seconds)}"
                + (f": {e.headline}" if e.headline and not e.headline_table else ""))
        write_index(entries, out, fast=fast)
    write_index(entries, out, fast=fast)
    return entries


def _one_line(err: Exception, nb) -> str:
    """The failing cell's error as ``Type: message``, else the exception's first line."""
    for cell in nb.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if o.output_type == "error" and "raises-exception" not in cell.metadata.get("tags", []):
                return f"{o.ename}: {o.evalue}".splitlines()[0][:300]
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:300]
