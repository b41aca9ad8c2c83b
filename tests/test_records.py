"""kit.notebook.records and what kit.report makes of them: lessons, headline figures, shared figures,
reports/headlines.json and the index's summary."""

import json
from pathlib import Path

import nbformat
import pytest

from kit import notebook, report
from kit.notebook import records
from kit.report import index as report_index
from kit.scenario import USER_EPOCHS


def test_a_lesson_says_held_did_not_hold_or_not_shown(capsys):
    assert notebook.lesson("x beats y", True, measured="2.0x") == "Lesson held: x beats y (2.0x)."
    assert notebook.lesson("x beats y", False, measured="0.8x") == "Lesson did not hold in this run: x beats y (0.8x)."
    assert notebook.lesson("x beats y", None, measured="too small").startswith("Lesson not shown in this run")
    assert "Lesson held: x beats y" in capsys.readouterr().out  # outside a kernel: printed


def test_a_lesson_is_a_visible_call_out_with_its_verdict_claim_and_numbers():
    held = records.call_out("Lesson held", "x beats y", "2.0x", True)
    assert "<b>Lesson held</b>: x beats y" in held and "2.0x" in held and "#2e7d32" in held
    failed = records.call_out("Lesson did not hold in this run", "a < b", "0.8x", False)
    assert "a &lt; b" in failed and "#c62828" in failed  # escaped, in the colour of a failure


def test_a_record_is_plain_json_even_from_numpy_values():
    import numpy as np

    f = notebook.figure("q", np.float64(2.5), "x", {"n": np.int64(3), "ok": np.True_, "r": [np.float32(1.5)]})
    assert json.loads(json.dumps(f)) == {"quantity": "q", "value": 2.5, "unit": "x",
                                         "basis": {"n": 3, "ok": True, "r": [1.5]}}


def test_a_shared_figure_is_measured_once_per_run_and_stated_alike(tmp_path, monkeypatch):
    monkeypatch.setenv(report_index.RUN_ENV, str(tmp_path))
    monkeypatch.setenv(report_index.RUN_ID_ENV, "run-1")
    monkeypatch.setenv(report_index.NOTEBOOK_ENV, "01_first")
    basis = {"files": 10, "batch": 32}
    first, where = notebook.shared("epoch", basis, 400.0, "s", detail={"examples": 500})
    assert where == "measured here" and first["basis"] == {**basis, "examples": 500, "measured_in": "01_first",
                                                          "run": "run-1"}
    monkeypatch.setenv(report_index.NOTEBOOK_ENV, "02_second")
    again, where = notebook.shared("epoch", basis, 480.0, "s")  # its own measurement differs: not stated
    assert again == first and where == "measured in 01_first, this run"
    other, where = notebook.shared("epoch", {"files": 20, "batch": 32}, 480.0, "s")  # another basis: its own
    assert other["value"] == 480.0 and where == "measured here"
    monkeypatch.delenv(report_index.RUN_ENV)
    alone, where = notebook.shared("epoch", basis, 470.0, "s")  # a notebook run by itself states its own
    assert alone["value"] == 470.0 and where == "measured here" and alone["basis"]["run"] == "run-1"


def test_disagreeing_values_of_one_quantity_are_named_whatever_their_basis():
    rows = [{"notebook": "01", "quantity": "epoch", "value": 400.0, "unit": "s", "basis": {"b": 1}},
            {"notebook": "02", "quantity": "epoch", "value": 430.0, "unit": "s", "basis": {"b": 1}},
            {"notebook": "03", "quantity": "other", "value": 900.0, "unit": "s", "basis": {"b": 1}}]
    assert report_index.disagreements(rows) == []  # within 10%; the third is another quantity
    rows.append({"notebook": "04", "quantity": "epoch", "value": 900.0, "unit": "s", "basis": {"b": 2}})
    [line] = report_index.disagreements(rows)  # a name means one thing: another basis is no excuse
    assert line.startswith("epoch: 01 400 s, 02 430 s, 04 900 s")


def test_figures_measured_once_are_the_same_on_every_page_of_a_run(tmp_path, monkeypatch):
    monkeypatch.setenv(report_index.RUN_ENV, str(tmp_path))
    monkeypatch.setenv(report_index.RUN_ID_ENV, "run-1")
    monkeypatch.setenv(report_index.NOTEBOOK_ENV, "01_first")
    calls = []

    def measure(value):
        def run():
            calls.append(value)
            return [notebook.figure(q, value * k, "s", {"k": k}) for k, q in enumerate(("a", "b"), 1)]
        return run

    first, where = notebook.once(["a", "b"], measure(10.0))
    assert where == "measured here" and [f["value"] for f in first] == [10.0, 20.0]
    assert first[0]["basis"] == {"k": 1, "measured_in": "01_first", "run": "run-1"}
    monkeypatch.setenv(report_index.NOTEBOOK_ENV, "05_later")
    again, where = notebook.once(["a", "b"], measure(99.0))
    assert again == first and where == "measured in 01_first, this run" and calls == [10.0]  # never measured again
    with pytest.raises(ValueError, match="expected"):
        notebook.once(["c"], measure(1.0))  # gives a and b, not c
    monkeypatch.delenv(report_index.RUN_ENV)
    alone, where = notebook.once(["a", "b"], measure(7.0))  # outside a run: measured by the page itself
    assert alone[0]["value"] == 7.0 and where == "measured here"


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _code(source, tags=()):
    c = nbformat.v4.new_code_cell(source)
    if tags:
        c.metadata["tags"] = list(tags)
    return c


@pytest.mark.slow
def test_a_run_gathers_headlines_lessons_and_shared_figures_into_the_index(tmp_path, monkeypatch):
    """Two tiny notebooks (no TensorFlow): the second states the first's shared figure, not its own;
    headlines.json holds every figure; the index says what the run found and how many lessons held.
    The reports folder is given relative, as ``make demo`` gives it: each kernel runs in the notebooks'
    folder, and a second run once read the first run's figures from a file named relative to it."""
    monkeypatch.chdir(tmp_path)
    src, out = Path("notebooks"), Path("reports")
    src.mkdir()
    md = nbformat.v4.new_markdown_cell
    common = ("from kit.notebook import figure, headline, lesson, once\n"
              "from kit.scenario import USER_EPOCHS\n"
              "def measure(v):\n"
              "    return lambda: [figure(q, v * (k + 1), 's', {'loader': 'memmap', 'frames_per_file': 30000})"
              " for k, q in enumerate(USER_EPOCHS)]\n")
    one = _nb(md("# 01 · First\n\n**Goal:** measure."), _code("FAST = None", tags=["parameters"]),
              _code(common + "epochs, where = once(list(USER_EPOCHS), measure(400.0))\n"
                    "lesson('the generator waits', True, measured='90% waiting')\n"
                    "headline(f'epoch {epochs[0][\"value\"]:.0f} s ({where})', sample='s', figures=epochs,"
                    " summary='The generator: 400 s')", tags=["headline"]))
    two = _nb(md("# 02 · Second\n\n**Goal:** compare."), _code("FAST = None", tags=["parameters"]),
              _code(common + "epochs, where = once(list(USER_EPOCHS), measure(999.0))\n"
                    "ratio = figure('segmentation_tfdata_over_datagenerator_one_core', 0.8, 'x', {'cores': 1})\n"
                    "lesson('memmap beats the generator', False, measured='0.9x')\n"
                    "headline(f'epoch {epochs[0][\"value\"]:.0f} s ({where})', sample='s', figures=[*epochs, ratio])",
                    tags=["headline"]))
    nbformat.write(one, src / "01_first.ipynb")
    nbformat.write(two, src / "02_second.ipynb")
    runs = []
    for _ in ("first", "second"):  # a second run measures anew, over the first run's files
        said = []
        entries = report.run_notebooks(src, out, fast=True, timeout=120, log=said.append)
        assert [e.status for e in entries] == ["ok", "ok"], said
        assert entries[1].headline.startswith("epoch 400 s (measured in 01_first, this run)")
        rows = json.loads((out / "headlines.json").read_text())
        assert [(r["notebook"], r["quantity"], r["value"]) for r in rows] == [
            *[("01_first", q, 400.0 * k) for k, q in enumerate(USER_EPOCHS, 1)],
            *[("02_second", q, 400.0 * k) for k, q in enumerate(USER_EPOCHS, 1)],
            ("02_second", "segmentation_tfdata_over_datagenerator_one_core", 0.8)]
        assert rows[0]["basis"] == rows[4]["basis"] and report_index.disagreements(rows) == []
        runs.append(rows[0]["basis"]["run"])
        page = (out / "index.html").read_text()
        assert "The spectrogram user reported 40 hours per epoch: their generator at 30,000 frames per file takes" in page
        assert "208 s against their DataGenerator&#x27;s 126 s (0.61x its rate)" in page and "at 0.80x (02_second)" in page
        assert "Lessons: 1 of 2 lessons held, 1 did not in this run" in page
        assert "The generator: 400 s" in page  # the summary sentence, not the long line
        assert "1 of 1 lesson held" in page and "0 of 1 lesson held, 1 did not" in page
        assert "nan" not in page.lower().replace("nanosecond", "")
    assert runs[0] != runs[1] and not (src / "reports").exists()  # each run measured its own, in its own folder


def test_a_headlines_file_the_kit_did_not_write_is_never_replaced(tmp_path):
    src, out = tmp_path / "notebooks", tmp_path / "reports"
    src.mkdir()
    out.mkdir()
    (out / "headlines.json").write_text('{"mine": true}\n')
    with pytest.raises(report.ReportError, match="headlines.json was not written by kit"):
        report.run_notebooks(src, out, fast=True)
    assert (out / "headlines.json").read_text() == '{"mine": true}\n'


def test_records_are_read_back_from_an_executed_notebook():
    nb = _nb(_code("x"))
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={
        "text/plain": "Lesson held: a (b).", report_index.RECORD_MIME: {"kind": "lesson", "held": True}})]
    assert report_index.records(nb) == [{"kind": "lesson", "held": True}]
    assert records.RECORD_MIME == report_index.RECORD_MIME


def test_the_summary_says_nothing_it_did_not_measure():
    e = report_index.Entry("05_x", "05", "t", status="ok")
    assert report_index.summary_lines([e]) == []  # no figures, no lessons: no claims
    assert Path(report_index.__file__).exists()
