"""Notebook 05 in a real browser: run headless, its exported HTML (plotly's own controls), then run again
in JupyterLab (live widgets); notebook 00 run headless, then run and saved in JupyterLab as `make lab`
serves it, leaving git clean. Each is its notebook's two runs on one kit cache (test_notebooks.py runs
them only where these tests skip).

Headless Chromium from Debian's ``chromium`` package, driven by Playwright for Python launched with
``executable_path`` (no browser is ever downloaded). ``make test`` installs the package when it runs as
root; elsewhere these tests are skipped with the command that enables them. Screenshots go to
``reports/browser/``. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from helpers import CHROMIUM, assert_ran_in_fast_mode, browser_missing

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "05_compare_epoch_times.ipynb"
SHOTS = ROOT / "reports" / "browser"
#: Bounds of the waits (seconds). The notebook's fast mode measures for about a minute on 2 idle cores.
LAB_START_S, RUN_ALL_S, UPDATE_S = 90, 600, 60
#: A busy machine, made certain: every JavaScript module over 1 MB loaded from a blob (plotly's
#: 5 MB FigureWidget module) finishes loading this many seconds late, the main thread free
#: meanwhile. Past 2 s anywidget gives up on a widget whose module has not loaded and drops the
#: kernel's messages to it, which left the figure's axes empty (see kit.plots.figure_widget).
LATE_MODULE_S = 3
_LATE_MODULES_JS = """(() => {
  const create = URL.createObjectURL;
  URL.createObjectURL = function (blob) {
    const url = create.call(URL, blob);
    if (!(blob instanceof Blob && blob.size > 1e6 && /javascript/.test(blob.type))) return url;
    const late = `await new Promise(r => setTimeout(r, ${LATE_MS})); export * from "${url}"; export { default } from "${url}";`;
    return create.call(URL, new Blob([late], { type: "text/javascript" }));
  };
})();"""

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None

pytestmark = [
    pytest.mark.slow,  # JupyterLab, a kernel and Chromium for each test: make check leaves them out
    # (where they skip, test_notebooks.py runs notebooks 05 and 00 twice headless instead)
    pytest.mark.skipif(browser_missing() is not None, reason=str(browser_missing())),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()


@contextlib.contextmanager
def _serve_lab(root_dir: Path, log_path: Path, *args: str):
    """JupyterLab on 127.0.0.1 with a token and the kit's fast mode, serving ``root_dir``; yields url and token."""
    port, token = _free_port(), os.urandom(16).hex()
    env = {**os.environ, "KIT_FAST": "1", "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root_dir}",
           "--LabApp.expose_app_in_browser=True", "--ServerApp.open_browser=False", *args]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(log_path, "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root_dir)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + LAB_START_S
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5) as r:
                    json.load(r)
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(f"JupyterLab did not start within {LAB_START_S} s:\n" + log_path.read_text()[-3000:])
                time.sleep(0.5)
        # Without the token the server refuses: the login is on.
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{url}/api/contents", timeout=5)
        yield {"url": url, "token": token}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


_ERRORS_JS = """() => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  const errors = [];
  for (const cell of nb.model.cells) {
    if (cell.type !== 'code') continue;
    for (let i = 0; i < cell.outputs.length; i++) {
      const o = cell.outputs.get(i).toJSON();
      if (o.output_type === 'error') errors.push(o.ename + ': ' + o.evalue);
    }
  }
  return errors;
}"""

_ALL_RUN_JS = """() => {
  const nb = window.jupyterapp.shell.currentWidget && window.jupyterapp.shell.currentWidget.content;
  if (!nb || !nb.model) return false;
  const code = Array.from(nb.model.cells).filter(c => c.type === 'code');
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  return code.length > 0 && code.every(c => c.executionCount !== null) && kernel.status === 'idle';
}"""

#: What plotly drew in the live explorer's figure, read from the page: the data plotly.js holds
#: (``_fullData``: after plotly's defaults), the bars' SVG paths and their text labels, and the title.
_DRAWN_JS = """(gd) => {
  const full = (gd._fullData || []).filter(t => t.type === 'bar');
  const bars = Array.from(gd.querySelectorAll('.barlayer .trace .point path'));
  return {
    x: full.length ? Array.from(full[0].x) : [],
    y: full.length ? Array.from(full[0].y) : [],
    paths: bars.map(p => p.getAttribute('d') || ''),
    labels: Array.from(gd.querySelectorAll('.barlayer .trace text')).map(t => t.textContent),
    title: (gd.querySelector('.gtitle') || {}).textContent || '',
    marked: gd.__kitMark === true,
  };
}"""

#: True once plotly has drawn one non-empty bar per bar value (not the empty axes of a figure
#: whose data never reached the browser).
_BARS_DRAWN_JS = """(gd) => {
  const full = (gd._fullData || []).filter(t => t.type === 'bar');
  if (!full.length || !full[0].x || full[0].x.length === 0) return false;
  const paths = Array.from(gd.querySelectorAll('.barlayer .trace .point path'))
    .map(p => p.getAttribute('d') || '').filter(d => d.length > 2 && d !== 'M0,0Z');
  return paths.length === full[0].x.length;
}"""


def _dismiss_toasts(page):
    """Closes JupyterLab's notices (its news question) so they cover nothing in the screenshots."""
    for button in page.locator(".Toastify button", has_text="No").all():
        button.click(timeout=5000)


def _open_in_lab(page, lab, name):
    """Opens notebook ``name`` in JupyterLab and waits until its kernel is idle."""
    page.goto(f"{lab['url']}/lab/tree/{name}?reset&token={lab['token']}")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                           " && window.jupyterapp.shell.currentWidget.sessionContext"
                           " && window.jupyterapp.shell.currentWidget.sessionContext.session"
                           " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                           " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
                           timeout=LAB_START_S * 1000)


def _drive_lab(page, lab, page_errors):
    page.add_init_script(_LATE_MODULES_JS.replace("${LATE_MS}", str(LATE_MODULE_S * 1000)))
    _open_in_lab(page, lab, NOTEBOOK.name)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(_ALL_RUN_JS, timeout=RUN_ALL_S * 1000, polling=1000)
    assert page.evaluate(_ERRORS_JS) == []
    assert page.locator(".jp-OutputArea-output:has-text('Traceback')").count() == 0

    # The live explorer: its controls, the FigureWidget and the summary line. JupyterLab may
    # render cells lazily: bring the explorer's cell into view first.
    cell = page.locator(".jp-CodeCell").filter(has_text=".epoch_explorer(user_configs").first
    cell.scroll_into_view_if_needed()
    box = cell.locator(".widget-vbox").first
    plot = box.locator(".js-plotly-plot")
    plot.first.wait_for(timeout=2 * UPDATE_S * 1000)
    summary = box.locator(".widget-html").first
    summary.wait_for(timeout=UPDATE_S * 1000)
    # plotly drew the bars: the figure's data reached the browser (not empty axes).
    plot.first.evaluate("(gd) => new Promise((ok, fail) => { const t0 = Date.now(); (function poll() {"
                        f" if (({_BARS_DRAWN_JS})(gd)) ok(true);"
                        f" else if (Date.now() - t0 > {UPDATE_S * 1000}) fail(new Error('no bars drawn'));"
                        " else setTimeout(poll, 250); })(); })")
    assert plot.count() == 1
    plot.first.evaluate("(gd) => { gd.__kitMark = true; }")  # the same element must redraw, not a new one
    _dismiss_toasts(page)
    page.wait_for_timeout(500)  # let plotly finish drawing before the picture
    box.screenshot(path=str(SHOTS / "lab_05_explorer_before.png"))
    text_before = summary.inner_text()
    assert "replica(s)" in text_before and "per epoch of 1,000,000" in text_before
    before = plot.first.evaluate(_DRAWN_JS)
    assert before["marked"] and len(before["x"]) == len(before["y"]) == len(before["paths"]) == len(before["labels"]) > 0
    assert all(x > 0 for x in before["x"]) and "1,000,000" in before["title"]

    slider = box.locator(".widget-slider").filter(has_text="examples").first
    readout_before = slider.locator(".widget-readout").inner_text()
    handle = slider.locator(".noUi-handle").first
    hb = handle.bounding_box()
    page.mouse.move(hb["x"] + hb["width"] / 2, hb["y"] + hb["height"] / 2)
    page.mouse.down()
    page.mouse.move(hb["x"] + hb["width"] / 2 + 60, hb["y"] + hb["height"] / 2, steps=8)
    page.mouse.up()
    # The kernel ran the update path and the figure in the page redrew: plotly's data, the
    # bars' labels and the title now state the new size.
    plot.first.evaluate("(gd, before) => new Promise((ok, fail) => { const t0 = Date.now(); (function poll() {"
                        f" const now = ({_DRAWN_JS})(gd);"
                        " if (now.title !== before.title && JSON.stringify(now.x) !== JSON.stringify(before.x)"
                        "     && JSON.stringify(now.labels) !== JSON.stringify(before.labels)) ok(true);"
                        f" else if (Date.now() - t0 > {UPDATE_S * 1000}) fail(new Error('the figure did not change'));"
                        " else setTimeout(poll, 250); })(); })", before)
    page.wait_for_function("([el, text]) => el.innerText !== text", arg=[summary.element_handle(), text_before],
                           timeout=UPDATE_S * 1000)  # and the summary line under it
    _dismiss_toasts(page)
    page.wait_for_timeout(1000)
    box.screenshot(path=str(SHOTS / "lab_05_explorer_after.png"))
    page.screenshot(path=str(SHOTS / "lab_05_page.png"), full_page=True)
    assert slider.locator(".widget-readout").inner_text() != readout_before
    text_after = summary.inner_text()
    assert text_after != text_before and "per epoch of 1,000,000;" not in text_after
    examples = int(text_after.split("per epoch of ", 1)[1].split(";", 1)[0].replace(",", ""))
    after = plot.first.evaluate(_DRAWN_JS)
    # In place: the same plot element and still one of them, redrawn.
    assert after["marked"] and plot.count() == 1
    assert f"{examples:,}" in after["title"]
    # Every bar is examples / rate: the new size scales each bar by the same factor, same loaders.
    assert sorted(after["y"]) == sorted(before["y"]) and len(after["paths"]) == len(after["labels"]) == len(after["x"])
    assert all(d and d != "M0,0Z" for d in after["paths"])
    scaled = {y: x * examples / 1_000_000 for y, x in zip(before["y"], before["x"])}
    assert dict(zip(after["y"], after["x"])) == pytest.approx(scaled, rel=1e-9)
    assert page.evaluate(_ERRORS_JS) == []
    assert page.locator(".jp-OutputArea-output:has-text('Traceback')").count() == 0
    # No widget failed in the page (anywidget reports a model it gave up on as an uncaught error).
    assert [e for e in page_errors if "anywidget" in e or "[kit]" in e or "plotly" in e.lower()] == []


def test_notebook_05_twice_headless_with_its_html_then_in_jupyterlab(tmp_path, browser):
    """Notebook 05 twice on one kit cache (as test_notebooks.py runs the others): first headless as
    `make demo` runs it, its exported HTML keeping plotly's slider working offline; then in
    JupyterLab, where the second run finds the first one's caches and ledger and the live
    explorer's slider redraws its figure in place."""
    from kit import report

    src = tmp_path / "notebooks"
    src.mkdir()
    shutil.copy(NOTEBOOK, src / NOTEBOOK.name)
    out = tmp_path / "reports"
    entry, = report.run_notebooks(src, out, fast=True, log=lambda line: None)
    assert entry.status == "ok", entry.error
    assert_ran_in_fast_mode(nbformat.read(out / NOTEBOOK.name, as_version=4), "first")
    html = out / entry.html
    assert html.name == "05_compare_epoch_times.html"
    # both machines: the user's two GPUs (the default view, compute measured or assumed) and this one
    assert entry.headline and entry.headline.startswith("The user's 40 hours: the generator at their layout takes")
    assert re.search(r"on their GPUs \((input|compute)-bound, compute (assumed|measured)\) and [\d.]+ \w+ here",
                     entry.headline)
    assert entry.summary.startswith("The user's 40 hours: generator ") and "; here " in entry.summary
    assert {r["claim"] for r in entry.lessons} >= {
        "on the user's GPUs the generator is the limit: input-bound over the whole assumed range"}
    assert "[FAST MODE: " in entry.headline  # a fast-mode figure says so, with its sample
    _check_exported_html(browser, html)

    with _serve_lab(src, tmp_path / "lab.log") as lab:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(UPDATE_S * 1000)
        page_errors: list[str] = []
        page.on("pageerror", lambda error: page_errors.append(str(error)))
        page.on("console", lambda m: page_errors.append(m.text) if m.type == "error" and "[kit]" in m.text else None)
        try:
            _drive_lab(page, lab, page_errors)
            _save(page, src / NOTEBOOK.name)
        except Exception:
            page.screenshot(path=str(SHOTS / "lab_05_failure.png"), full_page=True)  # what the page showed
            raise
    assert_ran_in_fast_mode(nbformat.read(src / NOTEBOOK.name, as_version=4), "second")


def _check_exported_html(browser, html: Path):
    """The exported page of 05 opened offline: plotly's own slider redraws the static figure."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(UPDATE_S * 1000)
    blocked = []

    def offline(route):  # anything but the file itself is refused: the page must work offline
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", offline)
    page.goto(html.as_uri())
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .slider-container').length > 0",
                           timeout=UPDATE_S * 1000)
    gd = page.locator(".js-plotly-plot").filter(has=page.locator(".slider-container")).first
    gd.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    gd.screenshot(path=str(SHOTS / "html_05_static_before.png"))
    # _fullData: what plotly drew (gd.data may still hold the figure's base64-packed arrays).
    read = ("(gd) => ({x: Array.from(gd._fullData.find(t => t.visible === true).x),"
            " active: gd.layout.sliders[0].active})")
    before = gd.evaluate(read)
    assert len(before["x"]) > 0
    rail = gd.locator(".slider-rail-touch-rect").first
    rb = rail.bounding_box()
    page.mouse.click(rb["x"] + 5, rb["y"] + rb["height"] / 2)  # the rail's left end: 1,000 examples
    page.wait_for_function("(args) => { const gd = document.querySelectorAll('.js-plotly-plot')[args.i];"
                           " return gd.layout.sliders[0].active !== args.active; }",
                           arg={"i": gd.evaluate("(gd) => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                                                 ".indexOf(gd)"), "active": before["active"]},
                           timeout=UPDATE_S * 1000)
    page.wait_for_timeout(500)
    after = gd.evaluate(read)
    gd.screenshot(path=str(SHOTS / "html_05_static_after.png"))
    page.screenshot(path=str(SHOTS / "html_05_page.png"), full_page=True)
    assert after["active"] == 0
    assert len(after["x"]) == len(before["x"]) and all(a < b for a, b in zip(after["x"], before["x"]))
    assert page.locator(".jp-OutputArea-output:has-text('Traceback')").count() == 0
    # Plotly.js came from the file, not the network.
    assert page.evaluate("() => typeof window.Plotly") == "object"




# --------------------------------------------------------------------------- make lab leaves git clean

QUICKSTART = ROOT / "notebooks" / "00_quickstart.ipynb"  # the quickest notebook
SAVE_S = 60  # bound of the wait for the saved file


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True, timeout=120).stdout


@pytest.fixture
def lab_repo(tmp_path):
    """JupyterLab as `make lab` runs it (filter installed, scripts/lab_config.py, serving notebooks/) in a
    temporary git repository holding notebook 00 as committed."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    pytest.importorskip("nbstripout", reason="pip install -e '.[dev]' installs nbstripout")
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    (repo / "scripts").mkdir()
    for rel in (".gitattributes", ".gitignore", "scripts/strip_outputs_filter.sh", "scripts/lab_config.py",
                f"notebooks/{QUICKSTART.name}"):
        shutil.copy(ROOT / rel, repo / rel)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--no-gpg-sign", "-m", "as committed")
    subprocess.run(["sh", "scripts/strip_outputs_filter.sh", sys.executable], cwd=repo, check=True, timeout=120)
    assert _git(repo, "status", "--porcelain") == ""
    with _serve_lab(repo / "notebooks", tmp_path / "lab.log",
                    f"--config={repo / 'scripts' / 'lab_config.py'}") as served:
        yield {**served, "repo": repo, "notebook": repo / "notebooks" / QUICKSTART.name}


def _saved_with_outputs(path: Path) -> bool:
    try:
        nb = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    return all(c["execution_count"] is not None for c in code) and any(c["outputs"] for c in code)


def _save(page, path: Path):
    """Saves the current notebook in JupyterLab; waits (bounded) until ``path`` holds its outputs."""
    # The save command's promise resolves once the server has written the file and run its hooks.
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    deadline = time.monotonic() + SAVE_S
    while not _saved_with_outputs(path):
        assert time.monotonic() < deadline, f"no outputs saved to {path} within {SAVE_S} s"
        time.sleep(0.5)


#: Where a run in the current notebook stands: every code cell run, any queued or running, the kernel.
_RUN_STATE_JS = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const code = Array.from(w.content.model.cells).filter(c => c.type === 'code');
  const kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  return {done: code.every(c => c.executionCount !== null), running: code.some(c => c.executionState === 'running'),
          kernel: kernel ? kernel.status : 'none'};
}"""


def _run_all_cells(page, *, attempts=3, stall_s=10):
    """Runs all cells; again after a run stalled (cells unrun, none queued, the kernel idle for ``stall_s``):
    a kernel connection dropped on a busy machine cancels the queued cells. Bounded by RUN_ALL_S."""
    deadline = time.monotonic() + RUN_ALL_S
    for _ in range(attempts):
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        stalled_since = None
        while time.monotonic() < deadline:
            state = page.evaluate(_RUN_STATE_JS)
            if state["done"] and not state["running"] and state["kernel"] == "idle":
                return
            if state["running"] or state["kernel"] != "idle":
                stalled_since = None
            elif stalled_since is None:
                stalled_since = time.monotonic()
            elif time.monotonic() - stalled_since > stall_s:
                break
            time.sleep(1)
    pytest.fail(f"the cells did not all run in {attempts} attempts within {RUN_ALL_S} s: {page.evaluate(_RUN_STATE_JS)}")


def test_lab_run_all_and_save_leaves_git_clean(lab_repo, browser):
    """Notebook 00 twice on one kit cache (as test_notebooks.py runs the others): first headless, then
    run all and saved in JupyterLab as `make lab` serves it, which leaves git clean."""
    from kit import report

    repo, path = lab_repo["repo"], lab_repo["notebook"]
    committed = path.read_bytes()
    assert_ran_in_fast_mode(report.execute(path, fast=True, timeout=600), "first")
    assert path.read_bytes() == committed and _git(repo, "status", "--porcelain") == ""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(UPDATE_S * 1000)
    try:
        _open_in_lab(page, lab_repo, path.name)
        _run_all_cells(page)
        assert page.evaluate(_ERRORS_JS) == []
        _save(page, path)
        _dismiss_toasts(page)
        page.screenshot(path=str(SHOTS / "lab_00_saved.png"))
    except Exception:
        page.screenshot(path=str(SHOTS / "lab_00_failure.png"), full_page=True)
        raise
    saved = path.read_bytes()
    assert saved != committed and len(saved) > len(committed)  # the file on disk keeps its outputs
    assert _git(repo, "status", "--porcelain") == ""
    assert _git(repo, "diff", "HEAD", "--stat") == ""
    # What git reads through the filter is the committed blob, byte for byte.
    assert _git(repo, "hash-object", f"notebooks/{path.name}") == _git(repo, "rev-parse", f"HEAD:notebooks/{path.name}")
    assert_ran_in_fast_mode(nbformat.read(path, as_version=4), "second")
