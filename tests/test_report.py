"""kit.report: start-up noise kept out of reports, failures as one line, text progress bars,
the index page with headlines from tagged cells, and failed notebooks never left looking current."""

import html
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from kit import report

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
    report.clean(nb)
    outs = nb.cells[0].outputs
    assert [(o.name, o.text) for o in outs] == [("stdout", "kit 0.1.0, TensorFlow 2.21\n"),
                                                 ("stderr", REAL_ERROR)]


def test_clean_leaves_the_finished_text_progress_bar():
    bar = ("memmap:   0%|          | 0/200 [00:00<?, ?ex/s]\rmemmap:  50%|#####     | 100/200\r"
           "memmap: 100%|##########| 200/200 [00:00<00:00]\n")
    nb = _nb(_code("x", outputs=[_stream("stdout", bar[:30]), _stream("stdout", bar[30:]),
                                 _stream("stdout", "7,219 frames/s\n")]))
    report.clean(nb)
    (out,) = nb.cells[0].outputs
    assert out.text == "memmap: 100%|##########| 200/200 [00:00<00:00]\n7,219 frames/s\n"


TF_ERROR = nbformat.v4.new_output(
    "error", ename="AttributeError",
    evalue="in user code:\n\n    File \"x.py\", line 2, in load_frame  *\n        frames = np.load(...)\n\n"
           "    AttributeError: 'SymbolicTensor' object has no attribute 'numpy'\n",
    traceback=["\x1b[0;31mTraceback (most recent call last)\x1b[0m", "  frame one <stuff>",
               "  frame two", "AttributeError: in user code: ..."])


def test_error_shows_its_last_line_with_the_traceback_collapsed():
    assert report.last_line(TF_ERROR) == "AttributeError: 'SymbolicTensor' object has no attribute 'numpy'"
    assert report.last_line({"ename": "ValueError", "evalue": "bad batch"}) == "ValueError: bad batch"
    page = report.to_html(_nb(_code("boom()", tags=["raises-exception"], outputs=[TF_ERROR])))
    shown, _, hidden = page.partition("<details>")
    assert "AttributeError: 'SymbolicTensor' object has no attribute 'numpy'" in html.unescape(shown)
    assert "Traceback" not in shown and "frame one" not in shown  # the full traceback only inside <details>
    assert "Traceback" in hidden and "frame one &lt;stuff&gt;" in hidden
    assert report.GENERATOR in page


def test_progress_bar_is_plain_text_on_stdout_when_headless(monkeypatch, capsys):
    from kit import progress

    monkeypatch.setenv("KIT_PROGRESS", "text")
    bar = progress.tqdm(range(3), desc="demo", mininterval=0)
    assert type(bar).__module__ == "tqdm.std"
    list(bar)
    assert "demo: 100%" in capsys.readouterr().out


# --------------------------------------------------------------------------- a small walkthrough

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


# --------------------------------------------------------------------------- make lab's git filter

@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0,
                    reason="needs git")
def test_lab_filter_keeps_an_executed_notebook_out_of_git(tmp_path):
    pytest.importorskip("nbstripout", reason="pip install -e '.[dev]' installs nbstripout")
    root = Path(__file__).resolve().parent.parent
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    (repo / ".gitattributes").write_text((root / ".gitattributes").read_text())
    committed = root / "notebooks" / "00_quickstart.ipynb"
    target = repo / "notebooks" / committed.name
    target.write_bytes(committed.read_bytes())

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "clean notebook")
    subprocess.run(["sh", str(root / "scripts" / "strip_outputs_filter.sh"), sys.executable], cwd=repo, check=True)
    # What a JupyterLab run saves: outputs, counts, the kernel's language details, cell metadata.
    nb = nbformat.read(target, as_version=4)
    for i, c in enumerate(x for x in nb.cells if x.cell_type == "code"):
        c.execution_count = i + 1
        c.outputs = [nbformat.v4.new_output("stream", name="stdout", text="a result\n" * 50)]
        c.metadata["execution"] = {"iopub.execute_input": "2026-11-30T09:00:00Z"}
        c.metadata["scrolled"] = True
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7", "mimetype": "text/x-python",
                                    "codemirror_mode": {"name": "ipython", "version": 3},
                                    "file_extension": ".py", "nbconvert_exporter": "python",
                                    "pygments_lexer": "ipython3"}
    nbformat.write(nb, target)
    assert "a result" in target.read_text()  # the file on disk keeps its outputs
    assert git("diff", "--no-textconv", "--stat") == ""  # compared through the clean filter
    # git status lists the file until it is staged (its size differs from the index's); staging
    # it through the filter stages nothing: no output can be committed.
    git("add", "-A")
    assert git("status", "--porcelain") == "" and git("diff", "--cached", "--stat") == ""


def test_headline_of_a_table_keeps_the_table():
    table = nbformat.v4.new_output("execute_result", execution_count=1, data={
        "text/plain": "  variant  examples_per_s\n0  memmap  1234.5\n1  in_memory  2345.6",
        "text/html": "<table><tr><th>variant</th></tr><tr><td>memmap</td></tr></table>"})
    line = nbformat.v4.new_output("stream", name="stdout", text="\n7,219 frames/s over 136 frames\nmore\n")
    untagged = _code("x", outputs=[nbformat.v4.new_output("stream", name="stdout", text="not this\n")])
    assert report.headline_output(_nb(untagged, _code("df", tags=["headline"], outputs=[table]))) == (
        "variant  examples_per_s", table.data["text/html"])
    assert report.headline_output(_nb(untagged, _code("m", tags=["headline"], outputs=[line]))) == (
        "7,219 frames/s over 136 frames", None)
    assert report.headline_output(_nb(untagged)) == (None, None)
    # A headless run's progress bar comes first (notebook 00 built its store in the headline cell).
    bar = nbformat.v4.new_output("stream", name="stdout",
                                 text="memmap: 100%|##########| 200/200 [00:00<00:00, 4609.63ex/s]\n")
    assert report.headline_output(_nb(_code("m", tags=["headline"], outputs=[bar, line]))) == (
        "7,219 frames/s over 136 frames", None)


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb")),
                         ids=lambda p: p.name)
def test_every_walkthrough_notebook_tags_one_headline_cell(path):
    """index.html shows each notebook's headline: the first output of its cell tagged ``headline``."""
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "headline" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged headline"
    assert tagged[0].cell_type == "code" and "raises-exception" not in tagged[0].metadata.get("tags", [])
