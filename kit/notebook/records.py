"""What a notebook states: a teaching claim checked against this run's numbers (``lesson``), a
headline figure (``figure``) and a figure measured once per demo run, kept in the run's folder for
the later notebooks (``shared``). Each is an output with two forms: the line a reader sees and the
record (``RECORD_MIME``) that ``kit.report`` reads.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from kit.report.html import write_atomic
from kit.report.index import NOTEBOOK_ENV, RECORD_MIME, RUN_ENV, RUN_ID_ENV


def fast() -> bool:
    """True when ``KIT_FAST=1`` (``make test``): the notebooks shrink to seconds."""
    return os.environ.get("KIT_FAST") == "1"


def _plain(obj):
    """``obj`` with NumPy scalars as Python ones, so that a record is JSON (a notebook's outputs are)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    item = getattr(obj, "item", None)
    return item() if callable(item) and type(obj).__module__ == "numpy" else obj


def shell():
    """The running IPython shell, or None (plain Python): IPython is only asked where it is loaded."""
    return getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()


def show(line: str, record: dict, *, html: str | None = None) -> str:
    """Displays ``line`` with ``record`` beside it (``RECORD_MIME``) in a kernel (and ``html``, the form
    JupyterLab and the HTML report draw), else prints ``line``; returns ``line``."""
    if shell() is None:
        print(line)
        return line
    from IPython.display import display  # keeps kit.notebook light: IPython, loaded by the kernel already

    data = {"text/plain": line, RECORD_MIME: _plain(record)}
    if html is not None:
        data["text/html"] = html
    display(data, raw=True)
    return line


#: A lesson's call-out: its mark and colours (border, background) by verdict.
_CALL_OUT = {True: ("&#10004;", "#2e7d32", "#e8f5e9"), False: ("&#10008;", "#c62828", "#ffebee"),
             None: ("&#8505;", "#616161", "#f5f5f5")}


def call_out(verdict: str, claim: str, measured: str, held: bool | None) -> str:
    """A lesson as a boxed call-out (HTML): the verdict in bold, the claim, the numbers that decided it."""
    import html as _html

    mark, border, background = _CALL_OUT[held]
    return (f'<div class="kit-lesson" style="border-left:4px solid {border};background:{background};'
            f'padding:6px 10px;margin:4px 0">{mark} <b>{_html.escape(verdict)}</b>: {_html.escape(claim)}'
            f'<br><small>{_html.escape(measured)}</small></div>')


def lesson(claim: str, held: bool | None, *, measured: str) -> str:
    """Shows whether a teaching ``claim`` held in this run (None: this run cannot show it, e.g. fast
    mode's samples), with the numbers that decided it (``measured``, or why it cannot be shown).
    Returns the line shown."""
    said = {True: "Lesson held", False: "Lesson did not hold in this run", None: "Lesson not shown in this run"}
    held = None if held is None else bool(held)
    line = f"{said[held]}: {claim} ({measured})."
    return show(line, {"kind": "lesson", "claim": claim, "held": held, "measured": measured, "fast": fast()},
                html=call_out(said[held], claim, measured, held))


def figure(quantity: str, value: float, unit: str, basis: dict) -> dict:
    """One headline figure for ``kit.notebook.headline(..., figures=[...])``."""
    return {"quantity": quantity, "value": float(value), "unit": unit, "basis": _plain(dict(basis))}


def _run_file() -> Path | None:
    folder = os.environ.get(RUN_ENV)
    return Path(folder) / "shared.json" if folder else None


def shared(quantity: str, basis: dict, value: float, unit: str, *, detail: dict | None = None) -> tuple[dict, str]:
    """``quantity`` on ``basis`` as this run states it: the value an earlier notebook of this run kept,
    else ``value``, kept for the later ones (outside a demo run: this notebook's own).

    Returns:
        ``(figure, where)``: the figure (its basis with ``measured_in`` and the run's id) and where it
        was measured ("measured here", "measured in 01_..., this run"). ``detail`` goes into a new
        figure's basis without being part of what must match.
    """
    here = os.environ.get(NOTEBOOK_ENV, "this notebook")
    path = _run_file()
    key = json.dumps([quantity, basis], sort_keys=True)
    kept = {}
    if path is not None and path.exists():
        kept = json.loads(path.read_text())
    if key in kept:
        f = kept[key]
        where = "measured here" if f["basis"]["measured_in"] == here else f"measured in {f['basis']['measured_in']}, this run"
        return f, where
    run = os.environ.get(RUN_ID_ENV)
    f = figure(quantity, value, unit, {**basis, **(detail or {}), "measured_in": here, "run": run})
    if path is not None:
        kept[key] = f
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(kept, indent=1) + "\n")  # never half a file for the next notebook
    return f, "measured here"


def once(quantities: list[str], measure) -> tuple[list[dict], str]:
    """The figures ``quantities`` as this run states them, whatever page states them: those an earlier
    notebook of this run kept, else ``measure()``'s (a figure per quantity, in order), kept for the later
    ones with ``measured_in`` and the run's id in their basis. A quantity has one value per run.

    Returns:
        ``(figures, where)``, ``where`` as ``shared``'s.
    """
    here = os.environ.get(NOTEBOOK_ENV, "this notebook")
    path = _run_file()
    keys = [json.dumps([q, "once"]) for q in quantities]
    kept = json.loads(path.read_text()) if path is not None and path.exists() else {}
    if all(k in kept for k in keys):
        figures = [kept[k] for k in keys]
        first = figures[0]["basis"]["measured_in"]
        return figures, "measured here" if first == here else f"measured in {first}, this run"
    figures = measure()
    if [f["quantity"] for f in figures] != list(quantities):
        raise ValueError(f"measure() gave {[f['quantity'] for f in figures]}, expected {list(quantities)}")
    run = os.environ.get(RUN_ID_ENV)
    figures = [{**f, "basis": {**f["basis"], "measured_in": here, "run": run}} for f in figures]
    if path is not None:
        kept.update(zip(keys, figures))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(kept, indent=1) + "\n")
    return figures, "measured here"
