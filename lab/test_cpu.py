"""Where make test's CPU goes: a pytest plugin that records each test's CPU time, in the worker that ran it and
in the child processes it reaped (kernels, ``python -m kit`` commands, servers), and a summary by test file.

The suite is CPU-bound on two cores (both busy to its end), so its wall time follows its CPU seconds: this is the
instrument for cutting it. Record a run, then summarise it:

    KIT_TEST_CPU=/work/acct make test PYTEST="KIT_FAST=1 .venv/bin/python -m pytest --dist loadgroup -p lab.test_cpu"
    python -m lab.test_cpu /work/acct [--top 25]

Each worker appends one JSON line per test to ``$KIT_TEST_CPU/tests-<worker>.jsonl``: the test's id, its
worker's own CPU seconds (``self``), those of the children it reaped while the test ran (``children``; a child
killed and never waited on is missing, and so is a grandchild its parent did not wait on) and its wall seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import defaultdict
from pathlib import Path

import pytest

ENV = "KIT_TEST_CPU"


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    folder = os.environ.get(ENV)
    s, c, t = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), time.monotonic()
    yield
    if not folder:
        return
    rec = {"test": item.nodeid, "self": _cpu(resource.RUSAGE_SELF) - s,
           "children": _cpu(resource.RUSAGE_CHILDREN) - c, "wall": time.monotonic() - t}
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / f"tests-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")


def rows(folder: str | Path) -> list[dict]:
    return [json.loads(line) for p in sorted(Path(folder).glob("tests-*.jsonl")) for line in p.read_text().splitlines()
            if line.strip()]


def by_file(recs: list[dict]) -> list[tuple[str, float, float, float, int]]:
    """``(file, self CPU s, children CPU s, wall s, tests)`` per test file, the most CPU first."""
    acc: dict[str, list] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for r in recs:
        a = acc[r["test"].split("::")[0]]
        a[0] += r["self"]
        a[1] += r["children"]
        a[2] += r["wall"]
        a[3] += 1
    return sorted(((k, *v) for k, v in acc.items()), key=lambda x: -(x[1] + x[2]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m lab.test_cpu", description=__doc__.split("\n\n")[0])
    p.add_argument("folder", help=f"the folder {ENV} named in the run")
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args(argv)
    recs = rows(a.folder)
    if not recs:
        print(f"no test recorded under {a.folder}: was {ENV} set and the plugin loaded (-p lab.test_cpu)?")
        return 1
    own, kids = sum(r["self"] for r in recs), sum(r["children"] for r in recs)
    print(f"{len(recs)} tests: {own + kids:,.0f} CPU-s ({own:,.0f} in the workers, {kids:,.0f} in reaped children)")
    print(f"{'CPU s':>8} {'workers':>8} {'children':>9} {'wall s':>7} {'tests':>6}  file")
    for name, s, c, w, n in by_file(recs)[:a.top]:
        print(f"{s + c:8.0f} {s:8.0f} {c:9.0f} {w:7.0f} {n:6d}  {name}")
    print("the costliest tests:")
    for r in sorted(recs, key=lambda r: -(r["self"] + r["children"]))[:a.top]:
        print(f"{r['self'] + r['children']:8.0f} {r['wall']:7.0f}  {r['test']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
