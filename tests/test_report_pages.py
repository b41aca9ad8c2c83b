"""kit.report.pages.page_problems on small hand-built notebooks: each fault a reader would see is
found and names its cell; a clean page gives []."""

from __future__ import annotations

import html

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from kit.report.index import RECORD_MIME
from kit.report.pages import is_log_line, page_problems


def table(df: pd.DataFrame):
    """``df`` as a notebook displays it: its HTML and its text."""
    return new_output("execute_result", data={"text/html": df.to_html(), "text/plain": repr(df)}, execution_count=1)


def stream(text: str, name: str = "stdout"):
    return new_output("stream", name=name, text=text)


def headline(line: str):
    return new_output("display_data", data={"text/plain": line, RECORD_MIME: {"kind": "headline", "text": line}})


def page(*cells):
    """A notebook of a markdown cell, then one code cell per list of outputs (or a markdown string)."""
    nb = new_notebook(cells=[new_markdown_cell("# A page")])
    for c in cells:
        nb.cells.append(new_markdown_cell(c) if isinstance(c, str) else new_code_cell("x", outputs=list(c)))
    return nbformat.from_dict(nb)


CLEAN = pd.DataFrame({"variant": ["generator", "memmap"], "examples_per_s": [7.0, 30_000.0], "note": ["", "fast"]})


def test_a_clean_page_has_no_problems():
    nb = page([stream("1,200 frames of (96, 64)\n")], [table(CLEAN)],
              "The spectrogram user's epoch.", [headline("memmap: 30,000 frames/s [fast mode: 20 frames]")])
    assert page_problems(nb) == []


def test_a_blank_that_is_an_empty_string_is_clean():
    df = pd.DataFrame({"fix": ["memmap", "cache"], "expected_gain": [2.4, ""], "why blank": ["", "not found"]})
    assert page_problems(page([table(df)])) == []


@pytest.mark.parametrize("missing, shown", [(np.nan, "NaN"), (pd.NA, "<NA>"), (None, "None"), (pd.NaT, "NaT")])
def test_a_table_with_a_missing_cell_is_found_with_its_cell_and_column(missing, shown):
    df = pd.DataFrame({"variant": ["generator", "memmap"], "gain": pd.Series([1.0, missing], dtype=object)})
    assert shown in html.unescape(df.to_html())
    problems = page_problems(page([stream("ok\n")], [table(df)]))
    assert len(problems) == 1, problems
    assert problems[0].startswith("cell 2: a table shows 1 missing-value cell") and "gain" in problems[0]


def test_missing_cells_are_counted_per_column_and_named_past_an_index_name():
    df = pd.DataFrame({"a": [np.nan, 1.0, np.nan], "b": [1.0, np.nan, 2.0]},
                      index=pd.Index(["x", "y", "z"], name="variant"))
    (problem,) = page_problems(page([table(df)]))
    assert problem == "cell 1: a table shows 3 missing-value cells (a: 2, b: 1)"


def test_a_text_only_table_with_nan_is_found_but_a_printed_value_is_not():
    series = pd.Series([1.0, np.nan], index=["generator", "memmap"])
    text_only = new_output("execute_result", data={"text/plain": repr(series)}, execution_count=1)
    value = new_output("execute_result", data={"text/plain": "{'gain': None, 'rows': 2}"}, execution_count=2)
    assert page_problems(page([text_only])) == ["cell 1: a table shows 1 missing-value cell(s) (NaN)"]
    assert page_problems(page([value])) == []


@pytest.mark.parametrize("line", [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1796.050937    5561 cudart_stub.cc:31] Could not find cuda drivers on your machine.",
    "E0000 00:00:1796.2    5561 cuda_executor.cc:1228] failed call to cuInit: UNKNOWN ERROR (303)",
    "W0000 00:00:1733.1   77 op_level_cost_estimator.cc:699] Error in PredictCost() for the op",
    "2026-12-06 05:28:00.1: I tensorflow/core/util/port.cc:153] oneDNN custom operations are on.",
])
def test_a_log_line_in_any_output_is_found(line):
    assert is_log_line(line)
    for out in (stream(f"before\n{line}\nafter\n", "stderr"),
                new_output("display_data", data={"text/plain": f"the doctor:\n{line}"})):
        (problem,) = page_problems(page([stream("fine\n")], [out]))
        assert problem.startswith("cell 2: 1 log line(s) in the output")


def test_ordinary_warnings_are_not_log_lines():
    assert not is_log_line("WARNING: the rounds are far apart; the gain is uncertain")
    assert not is_log_line("I measured 7 frames/s")


def test_the_seeds_names_are_found_in_markdown_and_output():
    problems = page_problems(page("The user of seed 000 trains a head.", [stream("as in Seed 004\n")]))
    assert problems == ["cell 1: markdown says 'seed 000': name the user instead",
                        "cell 2: the output says 'Seed 004': name the user instead"]
    assert page_problems(page("Seeded with seed 0; 4,000 frames.")) == []


def test_a_headline_shown_twice_is_found():
    line = "memmap: 30,000 frames/s, 4,300x the generator [fast mode: 20 frames; a demonstration]"
    echoed = new_output("execute_result", data={"text/plain": repr(line)}, execution_count=3)
    (problem,) = page_problems(page([headline(line), echoed]))
    assert problem.startswith("cell 1: the headline shown 2 times")
    (problem,) = page_problems(page([headline(line)], [stream(line + "\n")]))
    assert problem.startswith("cells 1, 2: the headline shown 2 times")


def test_two_headlines_are_one_too_many():
    assert page_problems(page([headline("the first headline of the page, long enough")],
                              [headline("a second headline of the page, different")])) == ["2 headlines: a page has one"]


# ------------------------------------------------------------------------- what pages state, computed


def order_epochs(rates: dict) -> pd.DataFrame:
    """A ``read_cold_and_warm`` table of 1,000 frames from ``{order: (cold_per_s, warm_per_s)}``."""
    rows = []
    for order, (cold, warm) in rates.items():
        rows.append({"order": order, "state": "cold", "examples_per_s": cold, "epoch_s": 1000 / cold,
                     "disk_s": max(0.0, 1000 / cold - 1000 / warm)})
        rows.append({"order": order, "state": "warm", "examples_per_s": warm, "epoch_s": 1000 / warm, "disk_s": ""})
    return pd.DataFrame(rows).astype({"disk_s": object})


def test_order_why_names_the_winner_and_its_measured_reason():
    from kit.spectrogram.order import order_why

    said = order_why(order_epochs({"random": (1000, 2000), "blocks": (500, 625)}), store_mb=5)
    assert said.startswith("Read cold, the **random** order won here: 1,000 frames/s against 500 for `blocks`")
    assert "`blocks` took 1.100 s more per epoch than random" in said  # 1.6 s against 0.5 s warm
    assert "0.500 s (random) and 0.400 s (blocks)" in said and "less, but not enough to repay that work" in said
    said = order_why(order_epochs({"random": (400, 2000), "blocks": (800, 1000)}), store_mb=5)
    assert said.startswith("Read cold, the **blocks** order won here: 800 frames/s against 400 for `random`")
    assert "0.250 s (blocks) and 2.000 s (random)" in said and "saving more than the 0.500 s its own work" in said


def test_read_cold_and_warm_gives_a_blank_not_a_nan_on_warm_rows(tmp_path):
    from kit.spectrogram.order import read_cold_and_warm

    files = [tmp_path / "store.bin"]
    files[0].write_bytes(b"x" * 4096)
    epoch = [(np.zeros((2, 3)), np.array([0, 1]))] * 2
    df = read_cold_and_warm({"a": epoch, "b": epoch}, files, expected=4, rounds=2)
    assert list(zip(df["order"], df["state"])) == [("a", "cold"), ("a", "warm"), ("b", "cold"), ("b", "warm")]
    assert (df.loc[df["state"] == "warm", "disk_s"] == "").all()
    assert (df.loc[df["state"] == "cold", "disk_s"].astype(float) >= 0).all()
    assert page_problems(page([table(df)])) == []


def test_the_batch_arithmetic_and_the_input_ceiling():
    from kit import distribute

    assert distribute.batch_arithmetic(1_000_000, 256, 2) == {"per_replica_batch": 128, "steps_per_epoch": 3907}
    with pytest.raises(ValueError, match="does not split"):
        distribute.batch_arithmetic(1000, 256, 3)
    assert distribute.epoch_floor_s(1_000_000, 7.0) == pytest.approx(142_857.14, rel=1e-6)
    line = distribute.ceiling_line(frames=1_000_000, global_batch=256, replicas=2,
                                   loader_rates={"generator": 7.0, "in_memory": 40_000.0})
    assert line == ("global batch 256 on 2 replicas: 128 per replica, 3,907 steps per 1,000,000-frame epoch; the "
                    "input ceiling, each loader alone, whatever the replica count: generator 7 frames/s, so no epoch "
                    "under 39.7 h; in_memory 40,000 frames/s, so no epoch under 25.0 s")
    assert len(distribute.ceiling_summary(frames=1_000_000, loader="the generator", loader_rate=7.0)) <= 180


def test_the_input_ceiling_names_what_the_loaders_read_in_the_same_sentence():
    from kit import distribute

    line = distribute.ceiling_line(frames=1_000_000, global_batch=256, replicas=2, loader_rates={"generator": 7.0},
                                   where="on files of 12 frames")
    assert "the input ceiling, each loader alone on files of 12 frames, whatever the replica count: generator" in line


@pytest.mark.slow
def test_a_demo_run_says_what_a_reader_would_see_as_a_fault_of_a_page(tmp_path):
    import nbformat

    from kit import report

    src = tmp_path / "notebooks"
    src.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# 01 · A page\n\n**Goal:** show a table."),
                nbformat.v4.new_code_cell("FAST = None", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("import pandas as pd\npd.DataFrame({'a': [1.0, None]})")]
    nbformat.write(nb, src / "01_page.ipynb")
    said = []
    [entry] = report.run_notebooks(src, tmp_path / "reports", fast=True, timeout=120, log=said.append)
    assert entry.status == "ok"
    assert any(line.strip().startswith("on the page: cell 2: a table shows 1 missing-value cell") for line in said), said


def test_the_index_says_what_a_page_teaches_from_its_goal_alone():
    import nbformat

    from kit.report.html import describe

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 01 · A page\n\n**Goal:** measure the\ngenerator.\n\n"
                                              "Terms the page uses: [docs/glossary.md](../docs/glossary.md).")]
    assert describe(nb) == ("01 · A page", "measure the generator.")
