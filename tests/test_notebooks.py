"""Every notebook: committed without outputs, a parameters cell of plain values, and runs headless
(nbclient, and papermill with ``-p FAST True``)."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from helpers import assert_ran_in_fast_mode, browser_missing

from kit import report

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert any(p.name.startswith("00_") for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_clean_with_parameters_cell(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for c in code:
        assert not c.get("outputs") and c.get("execution_count") is None, f"{path.name} has outputs"
    first = code[0]
    assert "parameters" in first.metadata.get("tags", []), f"{path.name}: first code cell not tagged"
    # Plain values only, so that papermill's injected cell (after this one) sets them; the sizes
    # are derived in the next cell, from what FAST is by then.
    for stmt in ast.parse(first.source).body:
        assert isinstance(stmt, ast.Assign), f"{path.name}: the parameters cell holds assignments only"
        ast.literal_eval(stmt.value)  # raises on anything but a plain value
    assert "FAST = None" in first.source, f"{path.name}: FAST = None in the parameters cell"
    assert "kit.notebook.setup(fast=FAST" in code[1].source, f"{path.name}: setup(fast=FAST) after the parameters"
    tagged = [c for c in code if "headline" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and "kit.notebook.headline(" in tagged[0].source, \
        f"{path.name}: one cell tagged headline, printing through kit.notebook.headline"
    headings = [line for c in nb.cells if c.cell_type == "markdown"
                for line in c.source.splitlines() if line.startswith("# ")]
    assert len(headings) == 1, f"{path.name}: one H1 expected, found {headings}"
    walls = {i: len(c.source.split()) for i, c in enumerate(nb.cells)
             if c.cell_type == "markdown" and len(c.source.split()) > 200}
    assert not walls, f"{path.name}: markdown cells over 200 words (cell: words) {walls}; split them in steps"


def test_teaching_cells_are_short():
    """A page teaches in short cells: the median code cell at most 8 non-blank lines, and no notebook
    with more than one code cell over 15."""
    sizes, long = [], {}
    for path in NOTEBOOKS:
        cells = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        n = [sum(1 for line in c.source.splitlines() if line.strip()) for c in cells]
        sizes += n
        if sum(k > 15 for k in n) > 1:
            long[path.name] = [k for k in n if k > 15]
    assert long == {}, f"notebooks with more than one code cell over 15 lines: {long}"
    assert sorted(sizes)[len(sizes) // 2] <= 8


#: Terms the pages use that a learner cannot be expected to know: each, where a notebook uses it,
#: has its entry in docs/glossary.md (a bold heading naming it).
JARGON = ("input_headroom", "batch_mates_kept", "files_per_batch", "same_position", "Amdahl", "efficiency",
          "page cache", "shuffle buffer", "input-bound", "compute-bound", "FAST MODE", "page-in limit")


def test_pages_link_a_glossary_of_the_terms_they_use_and_name_the_users_not_the_seeds():
    root = NOTEBOOKS[0].parent.parent
    glossary = (root / "docs" / "glossary.md").read_text()
    entries = " ".join(line.lower() for line in glossary.splitlines() if line.startswith("**"))
    used = set()
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        first = next(c for c in nb.cells if c.cell_type == "markdown")
        assert "../docs/glossary.md" in first.source, f"{path.name}: its first cell links the glossary"
        text = " ".join(c.source for c in nb.cells).lower()
        used |= {term for term in JARGON if term.lower() in text}
        assert "seed 000" not in text and "seed 004" not in text, f"{path.name}: say 'the spectrogram user'"
    assert used, "the check reads the notebooks' text"
    assert sorted(t for t in used if t.lower() not in entries) == [], "terms used without a glossary entry"
    from kit.cases import registry

    for case in registry.cases():  # what the CLI's help, the benches and the index print of a case
        assert "seed 0" not in case.description, case.name


@pytest.mark.slow
def test_papermill_runs_a_notebook_in_fast_mode_by_its_parameter(tmp_path):
    """``papermill NB OUT -p FAST True`` without KIT_FAST: fast mode all the same (its parameter once
    came too late, after the cell that had derived the sizes), and the executed notebook carries
    its figures as plotly JSON without a copy of plotly.js (nbconvert's once weighed 5 MB)."""
    path = next(p for p in NOTEBOOKS if p.name.startswith("00_"))
    out = tmp_path / path.name
    env = {k: v for k, v in os.environ.items() if k != "KIT_FAST"}
    subprocess.run([sys.executable, "-m", "papermill", str(path), str(out), "-p", "FAST", "True",
                    "--cwd", str(path.parent), "--no-progress-bar"], env=env, check=True, timeout=900,
                   capture_output=True)
    nb = nbformat.read(out, as_version=4)
    assert_ran_in_fast_mode(nb, "papermill")
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "FAST = True" in injected[0].source
    figures = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
               if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert figures, "no plotly figure in the executed notebook"
    assert "plotly.js v" not in out.read_text()[:2_000_000]
    assert out.stat().st_size < 1_000_000, f"{out.stat().st_size} bytes"


#: The two runs of notebooks 05 and 00 are test_browser.py's wherever a browser is at hand: first
#: headless (05's HTML export then checked in the browser), then in JupyterLab (05's live slider
#: checked; 00 saved, leaving git clean), on one kit cache. Here only where that file skips, so no
#: run of them is repeated.
IN_THE_BROWSER = ("00_", "05_")
#: Run once: notebooks 01, 04 and 08 build only kinds of cache entry that notebooks run twice here reopen in
#: their second run (the test below checks it), so their second runs would reopen nothing new; 08 is the
#: longest page (its doctor runs are time budgets), and the notebooks are most of make test's CPU (lab/test_cpu.py).
ONCE = ("01_", "04_", "08_")
#: The kinds of kit cache entry, each with a notebook run twice here that builds it and reopens it.
REOPENED_BY = {"spectrogram-samples": "02", "spectrogram-memmap": "03", "segmentation-samples": "06",
               "feature-cache": "07", "content digests": "03"}
TWICE = [p for p in NOTEBOOKS if not (p.name.startswith(IN_THE_BROWSER) and browser_missing() is None)
         and not p.name.startswith(ONCE)]


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """One demo run's folder of shared figures for the notebooks a test process runs: as in ``make demo``,
    the user's epochs (``kit.spectrogram.user_epochs``) are measured by the first notebook that states them
    and stated alike by the rest."""
    from kit.report.index import RUN_ENV, RUN_ID_ENV

    return {RUN_ENV: str(tmp_path_factory.mktemp("demo-run")), RUN_ID_ENV: "tests"}


@pytest.mark.slow
@pytest.mark.parametrize("path", TWICE, ids=lambda p: p.name)
def test_runs_headless_in_fast_mode_twice(path, demo_run):
    """The first run builds the notebook's caches and stores in this test's own KIT_CACHE;
    the second run finds them in place (a second ``make demo`` once failed in 07 there).
    Each run's headline is one rounded line, marked as fast mode with its sample."""
    from kit.report.index import NOTEBOOK_ENV

    for run in ("first", "second"):
        nb = report.execute(path, fast=True, timeout=600, env={**demo_run, NOTEBOOK_ENV: path.stem})
        assert_ran_in_fast_mode(nb, run)


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name.startswith(ONCE)], ids=lambda p: p.name)
def test_runs_headless_in_fast_mode_once_building_only_what_others_reopen(path, demo_run):
    from kit import cache
    from kit.report.index import NOTEBOOK_ENV

    nb = report.execute(path, fast=True, timeout=600, env={**demo_run, NOTEBOOK_ENV: path.stem})
    assert_ran_in_fast_mode(nb, "first")
    kinds = {e.kind for e in cache.scan(os.environ["KIT_CACHE"])}
    assert kinds and kinds <= set(REOPENED_BY), f"{path.name} builds {kinds - set(REOPENED_BY)}: run it twice"
    twice = {p.name[:2] for p in TWICE}
    assert set(REOPENED_BY.values()) <= twice


def test_the_bookkeeping_closes_each_page():
    """The headline and the figures it records are one closing cell, after every teaching cell (the
    lessons stay beside the numbers they read); only the summary's markdown, and a cell that removes the
    page's own temporary folders, come after it."""
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        [at] = [i for i, c in enumerate(cells) if "headline" in c.metadata.get("tags", [])]
        after = [c.source for c in cells[at + 1:] if c.cell_type == "code"]
        assert all("rmtree" in src and "headline" not in src and "lesson(" not in src for src in after), \
            f"{path.name}: code after the closing headline cell: {after}"
        assert "lesson(" not in cells[at].source, f"{path.name}: a lesson in the closing cell; keep it beside its numbers"
