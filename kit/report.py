"""Executes notebooks headless (nbclient) and writes each as ``.ipynb`` and HTML (nbconvert)."""

from __future__ import annotations

import os
from pathlib import Path


def execute(path: str | os.PathLike, *, fast: bool = False, timeout: int = 1800, env: dict | None = None):
    """Runs a notebook in its own folder and returns the executed ``NotebookNode``.

    Args:
        path: the ``.ipynb`` file.
        fast: sets ``KIT_FAST=1`` for the kernel (the notebooks' parameter cells read it).
        timeout: seconds allowed per cell.
        env: extra environment variables for the kernel.
    """
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    saved = dict(os.environ)
    # Figures carry plotly.js with them, so the HTML export shows them offline too.
    os.environ.setdefault("PLOTLY_RENDERER", "plotly_mimetype+notebook")
    os.environ.update(env or {})
    if fast:
        os.environ["KIT_FAST"] = "1"
    else:
        os.environ.pop("KIT_FAST", None)
    try:
        # Cells tagged raises-exception may fail on purpose; any other error stops the run.
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return nb


def run_notebooks(src: str | os.PathLike = "notebooks", out: str | os.PathLike = "reports", *,
                  fast: bool = False) -> list[Path]:
    """Executes every notebook in ``src`` in order; writes ``out/NAME.ipynb`` and ``out/NAME.html``."""
    import nbformat
    from nbconvert import HTMLExporter

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(Path(src).glob("[0-9][0-9]_*.ipynb")):
        print(f"  {path.name} ...", flush=True)
        nb = execute(path, fast=fast)
        nbformat.write(nb, out / path.name)
        html, _ = HTMLExporter().from_notebook_node(nb)
        (out / path.with_suffix(".html").name).write_text(html)
        written.append(out / path.with_suffix(".html").name)
    return written
