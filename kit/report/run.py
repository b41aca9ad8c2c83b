"""Executing the walkthrough's notebooks headless (nbclient) into a reports folder: each as ``.ipynb``
and HTML, with ``index.html`` (``run_notebooks``). Start-up noise is kept out (``QUIET_ENV``,
``kit.report.noise``; the kernel's own output goes to ``<out>/logs/NAME.log``); files in the folder
without the kit's marker are never overwritten or removed.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from kit.report.html import (
    GENERATOR,
    PLOTLYJS,
    ReportError,
    describe,
    is_kits,
    slim,
    to_html,
    write_atomic,
    write_plotlyjs,
)
from kit.report.index import (
    HEADLINES,
    NOTEBOOK_ENV,
    RUN_ENV,
    RUN_FOLDER,
    RUN_ID_ENV,
    Entry,
    disagreements,
    format_run_time,
    headline_output,
    headlines,
    records,
    thumbnail,
    write_index,
)
from kit.report.noise import clean
from kit.report.pages import page_problems

#: Environment of the kernels ``kit.report`` starts (a caller's ``env`` or an already set variable wins):
#: TensorFlow's C++ errors only, progress bars as text (``kit.progress``), figures as plotly's JSON only.
QUIET_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "KIT_PROGRESS": "text", "PLOTLY_RENDERER": "plotly_mimetype"}


def execute(path: str | os.PathLike, *, fast: bool = False, timeout: int = 1800, env: dict | None = None,
            log: str | os.PathLike | None = None):
    """Runs the notebook at ``path`` in its own folder and returns the executed ``NotebookNode``, its
    streams cleaned. A cell failing without the ``raises-exception`` tag raises nbclient's
    ``CellExecutionError``.

    Args:
        fast: sets ``KIT_FAST=1`` for the kernel.
        timeout: seconds allowed per cell.
        env: extra environment variables for the kernel (on top of ``QUIET_ENV``).
        log: a file for the kernel process's own stdout and stderr (None: inherited).
    """
    import nbformat  # keeps kit.report light: nbformat (--help imports it)

    nb = nbformat.read(Path(path), as_version=4)
    _execute(nb, Path(path), fast=fast, timeout=timeout, env=env, log=log)
    return nb


def _execute(nb, path: Path, *, fast: bool, timeout: int, env: dict | None, log) -> None:
    from nbclient import NotebookClient  # keeps kit.report light: nbclient (--help imports it)

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
        # The kernel holds nothing to save once the last cell replied: stopped at once, no teardown.
        NotebookClient(nb, timeout=timeout, kernel_name="python3", shutdown_kernel="immediate",
                       resources={"metadata": {"path": str(path.parent)}}).execute(**launch)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if fh is not None:
            fh.close()
        clean(nb)


def notebooks(src: str | os.PathLike = "notebooks", only=None) -> list[Path]:
    """The walkthrough's notebooks in order (``NN_name.ipynb``); ``only``: name prefixes to keep."""
    paths = sorted(Path(src).glob("[0-9][0-9]*_*.ipynb"))
    if only:
        paths = [p for p in paths if any(p.name.startswith(o) for o in only)]
    return paths


def run_notebooks(src: str | os.PathLike = "notebooks", out: str | os.PathLike = "reports", *,
                  fast: bool = False, only=None, timeout: int = 1800, log=print) -> list[Entry]:
    """Executes the notebooks of ``src`` in order into ``out``: ``NAME.ipynb``, ``NAME.html``,
    ``logs/NAME.log``, ``plotly.min.js``, ``headlines.json`` and ``index.html`` (rewritten after each).

    A failing notebook does not stop the others: its page shows what ran under a banner. A
    notebook's previous report is removed before it runs, so none is left looking current.

    Args:
        fast: fast mode (``KIT_FAST=1``).
        only: name prefixes (``["00", "05"]``) to run; the index still lists every notebook.
        timeout: seconds allowed per cell.
        log: where progress lines go.

    Returns:
        One ``Entry`` per notebook of ``src``; ``ReportError`` if a file to write is not the kit's.
    """
    import nbformat  # keeps kit.report light: nbformat (--help imports it)

    out = Path(out)
    every = notebooks(src)
    chosen = set(notebooks(src, only))
    _refuse_foreign(out, chosen)  # before running anything
    out.mkdir(parents=True, exist_ok=True)
    write_plotlyjs(out)  # the one copy every page loads
    # This run's shared figures (kit.notebook.shared): measured once, stated by every later notebook.
    run_dir = out / RUN_FOLDER
    run_dir.mkdir(exist_ok=True)
    (run_dir / "shared.json").unlink(missing_ok=True)  # the kit's own file: a new run measures anew
    # absolute: each kernel runs in its notebook's folder, where a relative path would name another file
    run_env = {RUN_ENV: str(run_dir.resolve()), RUN_ID_ENV: time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"}
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
        log(f"  [{n}/{len(chosen_list)}] {p.stem} ...")
        _run_one(p, entries[every.index(p)], out, fast=fast, timeout=timeout, log=log,
                 env={**run_env, NOTEBOOK_ENV: p.stem})
        write_index(entries, out, fast=fast)
    write_index(entries, out, fast=fast)
    rows = headlines(entries)
    write_atomic(out / HEADLINES, json.dumps(rows, indent=1) + "\n")
    for line in disagreements(rows):
        log(f"  headlines: {line}")
    return entries


def _refuse_foreign(out: Path, chosen) -> None:
    """Raises ``ReportError`` if a file ``run_notebooks`` would replace is not the kit's."""
    targets = {out / name: p for p in chosen for name in (p.name, p.with_suffix(".html").name)}
    targets.update({out / "index.html": None, out / PLOTLYJS: None, out / HEADLINES: None})
    for target, source in targets.items():
        if target.exists() and not (_our_headlines(target) if target.name == HEADLINES else is_kits(target, source)):
            raise ReportError(f"{target} was not written by kit; move it away or use another reports folder")


def _our_headlines(path: Path) -> bool:
    """Whether ``path`` is a headlines list as ``run_notebooks`` writes it (a list of figure records)."""
    try:
        rows = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(rows, list) and all(isinstance(r, dict) and {"notebook", "quantity", "basis"} <= r.keys()
                                          for r in rows)


def _run_one(p: Path, e: Entry, out: Path, *, fast: bool, timeout: int, log, env: dict | None = None) -> None:
    """Executes notebook ``p`` into ``out`` (its ``.ipynb``, HTML page and log) and fills in its ``e``."""
    import nbformat  # keeps kit.report light: nbformat (--help imports it)
    from nbclient.exceptions import (  # keeps kit.report light: nbclient (--help imports it)
        CellExecutionError,
        CellTimeoutError,
        DeadKernelError,
    )

    html_path, nb_path = out / p.with_suffix(".html").name, out / p.name
    for stale in (html_path, nb_path):  # ours (checked before): never left looking current
        stale.unlink(missing_ok=True)
    nb = nbformat.read(p, as_version=4)
    t0 = time.perf_counter()
    failed = None
    try:
        _execute(nb, p, fast=fast, timeout=timeout, env=env, log=out / "logs" / f"{p.stem}.log")
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
        failed = _one_line(err, nb)
    e.seconds = time.perf_counter() - t0
    nb.metadata["kit_report"] = {"generator": GENERATOR, "status": "failed" if failed else "ok",
                                 "seconds": round(e.seconds, 1), "fast": fast}
    nbformat.write(slim(nb), nb_path)
    write_atomic(html_path, to_html(nb, failed=failed, fast=fast))
    e.html = html_path.name
    if failed:
        e.status, e.error = "failed", failed
        log(f"        FAILED after {format_run_time(e.seconds)}: {failed} (see {html_path})")
    else:
        e.status = "ok"
        e.headline, e.headline_table = headline_output(nb)
        e.thumbnail = thumbnail(nb)
        said = records(nb)
        e.lessons = [r for r in said if r.get("kind") == "lesson"]
        for r in said:
            if r.get("kind") == "headline":
                e.summary, e.figures = r.get("summary"), list(r.get("figures") or [])
        log(f"        done in {format_run_time(e.seconds)}"
            + (f": {e.headline}" if e.headline and not e.headline_table else ""))
        for problem in page_problems(nb):  # what a reader would see as a fault of the page (kit.report.pages)
            log(f"        on the page: {problem}")


def _one_line(err: Exception, nb) -> str:
    """The failing cell's error as ``Type: message``, else the exception's first line."""
    for cell in nb.cells:
        for o in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if o.output_type == "error" and "raises-exception" not in cell.metadata.get("tags", []):
                return f"{o.ename}: {o.evalue}".splitlines()[0][:300]
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"[:300]
