"""Issue 54's done-when, checked on the reports folder of one demo run: ``python -m lab.demo_check reports/``.

Prints, for the run: whether the required quantities exist and each quantity agrees within 10% across the
notebooks that state it, which notebooks state the user's four epochs, ``prefetch_overlap_gain``, whether
the index states the 40 hours and 208 s / 126 s and notebook 05 the 40 hours, what ``page_problems`` finds
on each page, and each lesson's verdict. Exits 1 when a check fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat

from kit.report import page_problems
from kit.report.index import disagreements, records
from kit.scenario import PREFETCH_GAIN, SEGMENTATION_ONE_CORE, USER_EPOCHS


def check(reports: Path) -> tuple[list[str], list[dict]]:
    """``(failures, lessons)`` of the run in ``reports``: each failure one line; each lesson
    ``{"notebook", "claim", "held"}``."""
    failures = []
    rows = json.loads((reports / "headlines.json").read_text())
    stated: dict = {}
    for r in rows:
        stated.setdefault(r["quantity"], set()).add(r["notebook"])
    for q in (*USER_EPOCHS, SEGMENTATION_ONE_CORE, PREFETCH_GAIN):
        if q not in stated:
            failures.append(f"{q}: stated by no notebook")
    for q in USER_EPOCHS:
        if len(stated.get(q, ())) < 2:
            failures.append(f"{q}: stated by {sorted(stated.get(q, ()))}, fewer than two notebooks")
    failures += disagreements(rows)
    gains = [r["value"] for r in rows if r["quantity"] == PREFETCH_GAIN]
    if gains and min(gains) < 1.3:
        failures.append(f"{PREFETCH_GAIN} {min(gains):.2f} < 1.3")
    index = (reports / "index.html").read_text()
    for text in ("40 hours", "208 s", "126 s"):
        if text not in index:
            failures.append(f"index.html does not state {text!r}")
    lessons = []
    for path in sorted(reports.glob("[0-9]*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        failures += [f"{path.stem}: {p}" for p in page_problems(nb)]
        if path.stem.startswith("05_") and "40 hours" not in json.dumps(nb.cells):
            failures.append("05 does not state the 40 hours")
        lessons += [{"notebook": path.stem, "claim": r["claim"], "held": r["held"]} for r in records(nb)
                    if r.get("kind") == "lesson"]
    return failures, lessons


def main(argv=None) -> int:
    reports = Path((argv or sys.argv[1:] or ["reports"])[0])
    failures, lessons = check(reports)
    rows = json.loads((reports / "headlines.json").read_text())
    for r in rows:
        print(f"{r['notebook'][:3]} {r['quantity']}: {r['value']:,.4g} {r['unit']}")
    for x in lessons:
        print(f"lesson {x['notebook'][:3]} {x['held']}: {x['claim']}")
    print("\n".join(failures) or "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
