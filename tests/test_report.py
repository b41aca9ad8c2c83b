"""kit.report: start-up noise kept out of reports, failures as one line, text progress bars,
the index page with headlines from tagged cells, and failed notebooks never left looking current."""

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from kit import report, samples
from kit.report import html as report_html
from kit.report import index as report_index
from kit.report import noise as report_noise
from kit.report import run as report_run

NOISE = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
    "I0000 00:00:1796029920.050937    5561 cudart_stub.cc:31] Could not find cuda drivers on your machine, "
    "GPU will not be used.\n"
    "E0000 00:00:1796029931.187428    5561 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: "
    "Failed call to cuInit: UNKNOWN ERROR (303)\n"
    "[IPKernelApp] WARNING | Kernel is running over TCP without encryption.\n"
)


REAL_ERROR = "E0000 00:00:1796029931.187428    5561 example.cc:9] a real error stays visible\n"


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _code(source, tags=(), outputs=()):
    c = nbformat.v4.new_code_cell(source)
    if tags:
        c.metadata["tags"] = list(tags)
    c.outputs = list(outputs)
    return c


def _stream(name, text):
    return nbformat.v4.new_output("stream", name=name, text=text)


def test_clean_drops_startup_noise_keeps_results_and_real_errors():
    nb = _nb(_code("import tensorflow", outputs=[
        _stream("stderr", NOISE), _stream("stdout", "kit 0.1.0, TensorFlow 2.21\n"),
        _stream("stderr", REAL_ERROR), _stream("stderr", NOISE)]))
    report_noise.clean(nb)
    outs = nb.cells[0].outputs
    assert [(o.name, o.text) for o in outs] == [("stdout", "kit 0.1.0, TensorFlow 2.21\n"),
                                                 ("stderr", REAL_ERROR)]


def test_clean_leaves_the_finished_text_progress_bar():
    bar = ("memmap:   0%|          | 0/200 [00:00<?, ?ex/s]\rmemmap:  50%|#####     | 100/200\r"
           "memmap: 100%|##########| 200/200 [00:00<00:00]\n")
    nb = _nb(_code("x", outputs=[_stream("stdout", bar[:30]), _stream("stdout", bar[30:]),
                                 _stream("stdout", "7,219 frames/s\n")]))
    report_noise.clean(nb)
    (out,) = nb.cells[0].outputs
    assert out.text == "memmap: 100%|##########| 200/200 [00:00<00:00]\n7,219 frames/s\n"


TF_ERROR = nbformat.v4.new_output(
    "error", ename="AttributeError",
    evalue="in user code:\n\n    File \"x.py\", line 2, in load_frame  *\n        frames = np.load(...)\n\n"
           "    AttributeError: 'SymbolicTensor' object has no attribute 'numpy'\n",
    traceback=["\x1b[0;31mTraceback (most recent call last)\x1b[0m", "  frame one <stuff>",
               "  frame two", "AttributeError: in user code: ..."])


def test_error_shows_its_last_line_with_the_traceback_collapsed():
    assert report_html.last_line(TF_ERROR) == "AttributeError: 'SymbolicTensor' object has no attribute 'numpy'"
    assert report_html.last_line({"ename": "ValueError", "evalue": "bad batch"}) == "ValueError: bad batch"
    page = report.to_html(_nb(_code("boom()", tags=["raises-exception"], outputs=[TF_ERROR])))
    shown, _, hidden = page.partition("<details>")
    assert "AttributeError: 'SymbolicTensor' object has no attribute 'numpy'" in html.unescape(shown)
    assert "Traceback" not in shown and "frame one" not in shown  # the full traceback only inside <details>
    assert "Traceback" in hidden and "frame one &lt;stuff&gt;" in hidden
    assert report_html.GENERATOR in page


def test_progress_bar_is_plain_text_on_stdout_when_headless(monkeypatch, capsys):
    from kit import progress

    monkeypatch.setenv("KIT_PROGRESS", "text")
    bar = progress.tqdm(range(3), desc="demo", mininterval=0)
    assert type(bar).__module__ == "tqdm.std"
    list(bar)
    assert "demo: 100%" in capsys.readouterr().out


def _walkthrough(src: Path, *, fail_01: bool):
    """Three tiny notebooks (no TensorFlow): a headline computed at run time, a deliberate
    failure, a progress bar, start-up noise on stderr; ``fail_01`` makes 01 fail for real."""
    src.mkdir(exist_ok=True)
    md = nbformat.v4.new_markdown_cell
    nb0 = _nb(md("# 00 · First\n\n**Goal:** learn the first thing."),
              _code("import os, sys\nFAST = os.environ.get('KIT_FAST') == '1'", tags=["parameters"]),
              _code("sys.stderr.write('WARNING: All log messages before absl::InitializeLog() is called are "
                    "written to STDERR\\n')\nprint(f'rate {6 * 7} frames/s on {os.cpu_count() > 0}')",
                    tags=["headline"]),
              _code("from kit.progress import tqdm\nfor _ in tqdm(range(50), desc='bar', mininterval=0): pass"),
              _code("raise ValueError('deliberate')", tags=["raises-exception"]))
    nb1 = _nb(md("# 01 · Second\n\n**Goal:** learn the second thing."),
              _code("import os\nFAST = os.environ.get('KIT_FAST') == '1'", tags=["parameters"]),
              _code("1 / 0" if fail_01 else "print('second', 2 ** 10)", tags=["headline"]))
    nb2 = _nb(md("# 02 · Third\n\n**Goal:** no headline cell here."),
              _code("import os\nFAST = os.environ.get('KIT_FAST') == '1'", tags=["parameters"]))
    for name, nb in (("00_first", nb0), ("01_second", nb1), ("02_third", nb2)):
        nbformat.write(nb, src / f"{name}.ipynb")


@pytest.mark.slow
def test_walkthrough_index_headlines_failures_and_stale_reports(tmp_path):
    src, out = tmp_path / "notebooks", tmp_path / "reports"
    _walkthrough(src, fail_01=False)
    said = []
    entries = report.run_notebooks(src, out, fast=True, timeout=120, log=said.append)
    assert [(e.name, e.status) for e in entries] == [("00_first", "ok"), ("01_second", "ok"), ("02_third", "ok")]
    assert entries[0].headline == "rate 42 frames/s on True"  # computed in the run, not in the source
    assert entries[1].headline == "second 1024" and entries[2].headline is None
    index = (out / "index.html").read_text()
    positions = [index.index(f'href="{n}.html"') for n in ("00_first", "01_second", "02_third")]
    assert positions == sorted(positions)
    assert "learn the first thing." in index and "rate 42 frames/s on True" in index
    assert report_html.FAST_BANNER in index and '<span class="fastmark">fast mode</span> rate 42' in index
    # The terminal got the demo's progress only; the kernel's own output went to the log.
    assert all("Kernel is running" not in line and "absl" not in line for line in said)
    assert (out / "logs" / "00_first.log").exists()
    run0 = nbformat.read(out / "00_first.ipynb", as_version=4)
    texts = "".join(o.get("text", "") for c in run0.cells if c.cell_type == "code" for o in c.outputs)
    assert "absl" not in texts and "bar: 100%|" in texts and "50/50" in texts
    assert not any(o.output_type == "display_data" for c in run0.cells if c.cell_type == "code"
                   for o in c.outputs)  # no widget left behind
    html0 = (out / "00_first.html").read_text()
    assert "<details>" in html0 and "ValueError: deliberate" in html0
    assert report_html.FAST_BANNER in html0 and run0.metadata["kit_report"]["fast"] is True
    assert "<script src=" not in html0  # no figure: nothing to load

    # 01 now fails: its old report must not stay as if current.
    _walkthrough(src, fail_01=True)
    said.clear()
    entries = report.run_notebooks(src, out, fast=True, timeout=120, only=["01"], log=said.append)
    by = {e.name: e for e in entries}
    assert by["01_second"].status == "failed"
    assert by["01_second"].error == "ZeroDivisionError: division by zero"
    assert by["00_first"].status == "earlier run" and by["02_third"].status == "earlier run"
    page = (out / "01_second.html").read_text()
    assert "This run failed: ZeroDivisionError: division by zero" in page
    assert "second 1024" not in page
    index = (out / "index.html").read_text()
    assert "FAILED: ZeroDivisionError: division by zero" in index and "second 1024" not in index
    assert any("FAILED" in line for line in said)


def test_a_report_file_the_kit_did_not_write_is_refused(tmp_path):
    src, out = tmp_path / "notebooks", tmp_path / "reports"
    _walkthrough(src, fail_01=False)
    out.mkdir()
    (out / "01_second.html").write_text("<html>my own notes</html>")
    with pytest.raises(report.ReportError, match="01_second.html was not written by kit"):
        report.run_notebooks(src, out, fast=True, timeout=120, log=lambda s: None)
    assert (out / "01_second.html").read_text() == "<html>my own notes</html>"
    assert not (out / "00_first.html").exists()  # refused before running anything


def test_headline_of_a_table_keeps_the_table():
    table = nbformat.v4.new_output("execute_result", execution_count=1, data={
        "text/plain": "  variant  examples_per_s\n0  memmap  1234.5\n1  in_memory  2345.6",
        "text/html": "<table><tr><th>variant</th></tr><tr><td>memmap</td></tr></table>"})
    line = nbformat.v4.new_output("stream", name="stdout", text="\n7,219 frames/s over 136 frames\nmore\n")
    untagged = _code("x", outputs=[nbformat.v4.new_output("stream", name="stdout", text="not this\n")])
    assert report_index.headline_output(_nb(untagged, _code("df", tags=["headline"], outputs=[table]))) == (
        "variant  examples_per_s", table.data["text/html"])
    assert report_index.headline_output(_nb(untagged, _code("m", tags=["headline"], outputs=[line]))) == (
        "7,219 frames/s over 136 frames", None)
    assert report_index.headline_output(_nb(untagged)) == (None, None)
    # A headless run's progress bar comes first (notebook 00 built its store in the headline cell).
    bar = nbformat.v4.new_output("stream", name="stdout",
                                 text="memmap: 100%|##########| 200/200 [00:00<00:00, 4609.63ex/s]\n")
    assert report_index.headline_output(_nb(_code("m", tags=["headline"], outputs=[bar, line]))) == (
        "7,219 frames/s over 136 frames", None)


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]*_*.ipynb")),
                         ids=lambda p: p.name)
def test_every_walkthrough_notebook_tags_one_headline_cell(path):
    """index.html shows each notebook's headline: the first output of its cell tagged ``headline``."""
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "headline" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged headline"
    assert tagged[0].cell_type == "code" and "raises-exception" not in tagged[0].metadata.get("tags", [])


def test_tensorflow_lines_that_ignore_the_log_level_are_noise_and_real_errors_are_not():
    noise = [
        ("I0000 00:00:1796189918.117149    3688 port.cc:153] oneDNN custom operations are on. You may see "
         "slightly different numerical results due to floating-point round-off errors."),
        ("E0000 00:00:1796189924.159666    3688 util.cc:131] oneDNN supports DT_HALF only on platforms with "
         "AVX-512. Falling back to the default Eigen-based implementation if present."),
        ("I0000 00:00:1796190004.213379    6261 cpu_feature_guard.cc:227] This TensorFlow binary is optimized "
         "to use available CPU instructions in performance-critical operations."),
        ("To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild TensorFlow "
         "with the appropriate compiler flags."),
        "W0000 00:00:1796190004.213379    6261 py_utils.cc:38] TF-TRT Warning: Could not find TensorRT",
        ("E0000 00:00:1796190004.213379    6261 cuda_dnn.cc:8579] Unable to register cuDNN factory: "
         "Attempting to register factory for plugin cuDNN when one has already been registered"),
        ("E0000 00:00:1796190004.213379    6261 computation_placer.cc:177] computation placer already "
         "registered. Please check linkage and avoid linking the same target more than once."),
    ]
    assert [line for line in noise if not report_noise.is_noise(line)] == []
    kept = [REAL_ERROR,
            "E0000 00:00:1796190004.213379    6261 op_kernel.cc:1857] INVALID_ARGUMENT: slice index 5 out of bounds",
            "ValueError: oneDNN supports DT_HALF only on platforms with AVX-512",  # not TensorFlow's log line
            "InvalidArgumentError: cuInit"]
    assert [line for line in kept if report_noise.is_noise(line)] == []


def test_quiet_stderr_drops_noise_written_below_python_and_keeps_the_rest(tmp_path):
    code = ("import os, sys\nfrom kit.report.noise import quiet_stderr\nwith quiet_stderr():\n"
            f"    os.write(2, {NOISE.encode()!r})\n"
            f"    os.write(2, {REAL_ERROR.encode()!r})\n"
            "    print('python line', file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stderr == REAL_ERROR + "python line\n"


def _figure_outputs():
    """The outputs plotly's ``plotly_mimetype+notebook`` renderer leaves in a notebook: the
    library once (about 5 MB), then per figure its JSON beside HTML that needs that library."""
    import plotly.graph_objects as go
    import plotly.io as pio
    from plotly.offline import get_plotlyjs

    fig = go.Figure(go.Bar(x=["generator", "memmap"], y=[7, 7219]), layout={"title": "frames per second"})
    library = nbformat.v4.new_output("display_data", data={"text/html": f"<script>{get_plotlyjs()}</script>"})
    bundle = {**pio.renderers["plotly_mimetype"].to_mimebundle(fig.to_dict()),
              **pio.renderers["notebook"].to_mimebundle(fig.to_dict())}
    return library, nbformat.v4.new_output("display_data", data=bundle)


def test_a_page_draws_figures_from_their_json_with_one_shared_plotlyjs_and_nothing_from_a_cdn():
    library, figure = _figure_outputs()
    assert len(library.data["text/html"]) > 4_000_000 and "cdnjs" in figure.data["text/html"]  # MathJax
    nb = _nb(nbformat.v4.new_markdown_cell("# 00 · Figures"), _code("fig.show()", outputs=[library, figure]))
    page = report.to_html(nb)
    assert len(page) < 1_000_000  # nbconvert's CSS and the figure; no plotly.js
    assert page.count('<script src="plotly.min.js" charset="utf-8"></script>') == 1
    assert "Plotly.newPlot" in page and "frames per second" in page
    srcs = re.findall(r"<script[^>]*\bsrc=\"([^\"]*)\"", page)
    assert srcs == ["plotly.min.js"]  # no require.js, MathJax, mermaid nor widget manager
    for remote in ("cdn.", "cdnjs", "unpkg", "jsdelivr", "mathjax/", "require.min.js"):
        assert remote not in page, remote
    assert 'src="../shared/plotly.min.js"' in report.to_html(nb, plotlyjs="../shared/plotly.min.js")
    plain = report.to_html(_nb(_code("print(1)", outputs=[_stream("stdout", "1\n")])))
    assert "<script src=" not in plain  # no figure, nothing to load

    report_html.slim(nb)  # what run_notebooks saves: each figure as its plotly JSON alone
    (out,) = nb.cells[1].outputs
    assert list(out.data) == ["application/vnd.plotly.v1+json"]
    saved = nbformat.writes(nb)
    assert len(saved) < 50_000 and "plotly.js v" not in saved  # the JSON with its template; no library
    assert "Plotly.newPlot" in report.to_html(nb)  # the page is still drawn from the saved notebook


def test_plotlyjs_is_written_once_and_never_over_a_file_the_kit_did_not_write(tmp_path):
    import plotly

    target = report_html.write_plotlyjs(tmp_path)
    assert target == tmp_path / "plotly.min.js" and report_html.is_kits(target)
    head = target.read_text()[:200]
    assert head.startswith("/* kit.report: ") and plotly.__version__ in head and "plotly.js v" in head
    mtime = target.stat().st_mtime_ns
    assert report_html.write_plotlyjs(tmp_path) == target and target.stat().st_mtime_ns == mtime  # left as it is
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "plotly.min.js").write_text("/* my own build */")
    with pytest.raises(report.ReportError, match="plotly.min.js was not written by kit"):
        report_html.write_plotlyjs(mine)
    src = tmp_path / "notebooks"
    _walkthrough(src, fail_01=False)
    with pytest.raises(report.ReportError, match="plotly.min.js was not written by kit"):
        report.run_notebooks(src, mine, fast=True, timeout=120, log=lambda s: None)
    assert (mine / "plotly.min.js").read_text() == "/* my own build */" and not (mine / "index.html").exists()


def test_the_index_of_a_fast_run_says_so_at_the_top_and_on_each_headline(tmp_path):
    entries = [report_index.Entry("00_a", "00 · A", "first", status="ok", headline="7,219 frames/s", seconds=3.0,
                            html="00_a.html"),
               report_index.Entry("01_b", "01 · B", "second", status="ok", headline="x", seconds=4.0, html="01_b.html",
                            headline_table="<table><tr><td>x</td></tr></table>"),
               report_index.Entry("02_c", "02 · C", "third", status="failed", error="ValueError: bad", html="02_c.html"),
               report_index.Entry("03_d", "03 · D", "fourth")]
    page = report_index.write_index(entries, tmp_path, fast=True).read_text()
    assert report_html.FAST_BANNER == ("fast mode: small samples, figures are a demonstration, "
                                "not measurements of your scale")
    assert page.index(report_html.FAST_BANNER) < page.index("<h1>")  # at the top
    marked = re.findall(r'<span class="fastmark">fast mode</span> (.*?)</td><td', page)
    assert marked == ["7,219 frames/s", '<div class="table"><table><tr><td>x</td></tr></table></div>']
    assert "FAILED: ValueError: bad" in page
    full = report_index.write_index(entries, tmp_path, fast=False).read_text()
    assert report_html.FAST_BANNER not in full and "fastmark\">" not in full and "7,219 frames/s" in full


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


SLIDER = '''import plotly.graph_objects as go
frames = [go.Frame(name=f"k={k}", data=[go.Scatter(x=[0, 1, 2], y=[0, k, 2 * k])]) for k in (1, 2, 3)]
steps = [dict(label=f.name, method="animate",
              args=[[f.name], dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0))])
         for f in frames]
go.Figure(frames[0].data, frames=frames,
          layout=dict(title="slope", yaxis=dict(range=[0, 7]), sliders=[dict(active=0, steps=steps)])).show()'''


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_a_report_page_draws_its_figure_and_its_slider_works_offline(tmp_path):
    """A notebook drawing a plotly figure with a slider (over frames), run as run_notebooks runs
    the walkthrough, opened in headless Chromium with every request off this machine blocked."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]' installs playwright")
    src, out = tmp_path / "notebooks", tmp_path / "reports"
    src.mkdir()
    nbformat.write(_nb(nbformat.v4.new_markdown_cell("# 00 · Slider\n\n**Goal:** a figure with a slider."),
                       _code(SLIDER)), src / "00_slider.ipynb")
    (entry,) = report.run_notebooks(src, out, fast=True, timeout=120, log=lambda s: None)
    assert entry.status == "ok"
    saved = nbformat.read(out / "00_slider.ipynb", as_version=4)
    (fig,) = saved.cells[1].outputs
    assert list(fig.data) == ["application/vnd.plotly.v1+json"]
    assert len(fig.data["application/vnd.plotly.v1+json"]["frames"]) == 3
    assert (out / "00_slider.ipynb").stat().st_size < 50_000 and (out / "00_slider.html").stat().st_size < 1_000_000

    blocked, requested, errors = [], [], []

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page()
            page.route("**/*", route)
            page.on("request", lambda r: requested.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((out / "00_slider.html").as_uri())
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
            state = "(() => { const g = document.querySelector('.js-plotly-plot'); " \
                    "return [g.layout.sliders[0].active, Array.from(g.data[0].y)]; })()"
            assert page.evaluate(state) == [0, [0, 1, 2]]
            rail = page.locator(".slider-rail-touch-rect").first
            rail.scroll_into_view_if_needed()
            box = rail.bounding_box()
            page.mouse.click(box["x"] + box["width"] - 3, box["y"] + box["height"] / 2)  # the last step
            page.wait_for_function("document.querySelector('.js-plotly-plot').layout.sliders[0].active === 2",
                                   timeout=10_000)
            # The frame is drawn after the slider moves (plotly animates to it): waited for, bounded; a
            # slider that moved without drawing its frame still fails the assertion below.
            try:
                page.wait_for_function("document.querySelector('.js-plotly-plot').data[0].y[2] === 6", timeout=10_000)
            except sync_api.TimeoutError:
                pass  # the assertion below says what was drawn instead
            assert page.evaluate(state) == [2, [0, 3, 6]]  # the frame k=3 drawn
            page.wait_for_timeout(500)  # the grip's own transition
            page.screenshot(path=str(tmp_path / "slider.png"))
            assert blocked == [] and errors == []
            assert requested == [(out / "00_slider.html").as_uri(), (out / "plotly.min.js").as_uri()]
            # the route does catch what leaves the machine
            (out / "control.html").write_text('<img src="https://cdn.jsdelivr.net/npm/x.png">')
            page.goto((out / "control.html").as_uri())
            page.wait_for_timeout(500)
            assert blocked == ["https://cdn.jsdelivr.net/npm/x.png"]
            # the index draws the notebook's figure small, with the same plotly.js and nothing else
            blocked.clear(), requested.clear()
            page.goto((out / "index.html").as_uri())
            page.wait_for_selector(".thumb .main-svg", timeout=60_000)
            assert page.evaluate("document.querySelector('.thumb').layout.height") == 170
            assert requested == [(out / "index.html").as_uri(), (out / "plotly.min.js").as_uri()]
            assert blocked == [] and errors == []
        finally:
            browser.close()


def test_the_index_thumbnail_is_the_headline_figure_made_small():
    plotly_mime = "application/vnd.plotly.v1+json"

    def fig(name, **layout):
        return nbformat.v4.new_output("display_data", data={plotly_mime: {
            "data": [{"type": "bar", "name": name, "x": [1, 2], "text": ["a", "b"]}],
            "layout": {"title": {"text": "a long title " * 8}, "height": 600, "sliders": [{"steps": []}],
                       "updatemenus": [{}], "xaxis": {"title": {"text": "s"}, "type": "log"}, **layout}}})

    nb = _nb(_code("first", outputs=[fig("before")]), _code("x", tags=["headline"], outputs=[_stream("stdout", "h\n")]),
             _code("after", outputs=[fig("after")]))
    small = report_index.thumbnail(nb)
    assert [t["name"] for t in small["data"]] == ["after"]  # the first figure from the headline cell on
    assert "text" not in small["data"][0] and small["data"][0]["x"] == [1, 2]
    lay = small["layout"]
    assert lay["height"] == 170 and lay["showlegend"] is False and "sliders" not in lay and "updatemenus" not in lay
    assert len(lay["title"]["text"]) <= 63 and lay["xaxis"]["type"] == "log" and "title" not in lay["xaxis"]
    assert report_index.thumbnail(_nb(_code("x", tags=["headline"]))) is None  # no figure: no thumbnail
    # a notebook whose only figure precedes the headline cell still gets it
    assert report_index.thumbnail(_nb(_code("first", outputs=[fig("before")]), _code("x", tags=["headline"])))[
        "data"][0]["name"] == "before"


@pytest.mark.slow
def test_the_command_line_keeps_tensorflow_startup_lines_out_of_the_terminal(tmp_path):
    """``python -m kit`` filters stderr (kit/__main__.py): a command that loads TensorFlow
    prints none of its start-up lines, and an error still prints its line."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["KIT_RESULTS"] = str(tmp_path / "ledger.jsonl")
    store = tmp_path / "store"  # a TFRecord conversion: TensorFlow writes every record
    run = subprocess.run([sys.executable, "-m", "kit", "convert", "spectrogram", "--index",
                          str(samples.embedded("spectrogram")), "--to", "tfrecord", "--out", str(store)],
                         env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert [line for line in run.stderr.splitlines() if report_noise.is_noise(line)] == []
    assert "absl" not in run.stderr and "oneDNN" not in run.stderr and "cuInit" not in run.stderr
    assert list(store.glob("shard-*.tfrecord")) and "frames in 1 file(s)" in run.stdout
    bad = subprocess.run([sys.executable, "-m", "kit", "verify", str(tmp_path / "nothing")],
                         env=env, capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("kit: error: ") and "no manifest.json" in bad.stderr


def test_the_walkthrough_order_takes_a_split_notebook_after_its_first_part(tmp_path):
    """``03b_...`` (a notebook split off 03) runs right after 03; files without a number are not notebooks
    of the walkthrough; ``only=["03"]`` keeps both parts."""
    for name in ("04_d.ipynb", "03b_c.ipynb", "03_b.ipynb", "00_a.ipynb", "scratch.ipynb", "1_x.ipynb"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in report_run.notebooks(tmp_path)] == ["00_a.ipynb", "03_b.ipynb", "03b_c.ipynb", "04_d.ipynb"]
    assert [p.name for p in report_run.notebooks(tmp_path, only=["03"])] == ["03_b.ipynb", "03b_c.ipynb"]
