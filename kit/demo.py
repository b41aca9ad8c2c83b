"""``python -m kit demo`` (``make demo``): each case's loader bench, then every notebook into ``--reports``.

With ``KIT_FAST=1`` (as ``make test`` sets) the benches run on the embedded samples in one short
round and the notebooks in fast mode: the same path, in seconds.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from kit import bench, cache, report, samples
from kit.bench import configs
from kit.cache.reuse import USED_ENV, recording, reuse_report, used_by_others
from kit.cases import registry
from kit.report.noise import quiet_stderr
from kit.util import format_duration

#: The cases whose demo runs a bench of their own; every other registered case with embedded
#: samples gets the generic loader bench (``kit.bench.loaders``).
BENCHES = ("spectrogram", "segmentation")


def register(sub) -> None:
    """The ``demo`` subcommand."""
    p = sub["root"].add_parser("demo", help="the main job: both loader benches, the notebooks into reports/")
    p.add_argument("--reports", default="reports", help="folder for executed notebooks and HTML")
    p.add_argument("--no-notebooks", action="store_true", help="skip executing the notebooks")
    p.add_argument("--notebooks", default=None, metavar="NN,NN",
                   help="run only these notebooks (name prefixes, e.g. 00,05); the index lists all")
    p.set_defaults(func=demo)


def demo(args) -> int:
    """The command: TensorFlow's C++ log lines and start-up noise filtered, the ledger under ``--reports``."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow loads
    os.environ.setdefault("KIT_RESULTS", os.path.abspath(os.path.join(args.reports, "results.jsonl")))
    with quiet_stderr():
        return steps(args)


def config(name: str, fast: bool):
    """The demo's bench config for the case ``name``; with ``fast``, on the embedded samples in one short round."""
    quick: dict[str, Any]
    if name == "spectrogram":
        quick = dict(data=samples.embedded("spectrogram"), rounds=1, num_batches=2, round_seconds=0.05,
                     generator_seconds=1.0, limit_seconds=0.05)
        return configs.SpectrogramConfig(**(quick if fast else {}))
    if name == "segmentation":
        quick = dict(data=samples.embedded("segmentation"), rounds=1, num_batches=2, batch_size=1, size=(64, 64),
                     seconds=0.5, slow_seconds=1.0)
        return configs.SegmentationConfig(**(quick if fast else {}))
    return configs.LoadersConfig(case=name, rounds=1 if fast else 3, batches=2 if fast else 10)


def steps(args) -> int:
    """The benches, the notebooks, then what the run reused and built in the kit cache. Returns the exit status."""
    fast = os.environ.get("KIT_FAST") == "1"
    t0 = time.perf_counter()
    before = cache.scan()  # the end says which of these were reused and what was built

    cases = [c for c in registry.cases() if c.name in BENCHES or c.embedded is not None]
    total = len(cases) + (0 if args.no_notebooks else 1)
    mode = " (fast mode: embedded samples, one short round)" if fast else ""
    with recording() as used:  # the cache entries the benches open
        for k, case in enumerate(cases, start=1):
            print(f"{chr(10) if k > 1 else ''}== [{k}/{total}] the {case.name} loaders, side by side{mode} "
                  f"(python -m kit bench {case.name})", flush=True)
            name = case.name if case.name in BENCHES else "loaders"
            res = bench.run(name, config(case.name, fast))
            bench.module(name).show(res)
            bench.save(res, os.path.join(args.reports, f"bench_{case.name}.json"))
    failed = []
    if not args.no_notebooks:
        only = [s.strip() for s in args.notebooks.split(",") if s.strip()] if args.notebooks else None
        print(f"\n== [{total}/{total}] executing the notebooks{' in fast mode' if fast else ''} into "
              f"{args.reports}/ (kernel logs in {args.reports}/logs/)", flush=True)
        with tempfile.TemporaryDirectory(prefix="kit-demo-") as tmp:  # the kernels say what they opened
            os.environ[USED_ENV] = os.path.join(tmp, "used.txt")
            try:
                entries = report.run_notebooks("notebooks", args.reports, fast=fast, only=only)
            finally:
                used |= used_by_others(os.environ.pop(USED_ENV))
        failed = [e for e in entries if e.status == "failed"]
    took = format_duration(time.perf_counter() - t0)
    print()
    if failed:
        print(f"== {len(failed)} notebook(s) failed: " + "; ".join(f"{e.name}: {e.error}" for e in failed))
    index = os.path.join(args.reports, "index.html")
    if args.no_notebooks:
        print(f"== done in {took}; results in {os.path.join(args.reports, 'bench_*.json')}")
    else:
        print(f"== done in {took}. Open {index} ({Path(index).resolve().as_uri()})")
    for line in reuse_report(before, cache.scan(), used):  # reused unchanged; built new or rebuilt
        print(("== the kit cache: " if not line.startswith(" ") else "  ") + line)
    print(f"== {cache.summary()}")
    return 1 if failed else 0
