"""Benchmarks: variants measured side by side in one run, as DataFrames and JSON.

``python -m kit bench NAME`` runs one, and ``run(NAME, config)`` (or its fields as keywords)
does the same from Python. ``BENCHES`` is the one table of them: each bench's module, its
config dataclass (``kit.bench.configs``: frozen, checked, its fields' flags declared with
``kit.bench.config.option``) and its help. Each module has ``run(config, *, log=print)``
(and ``progress`` where it shows a bar) returning a ``BenchResult``, and ``show(result)``;
it is imported only when its bench runs (``module``), so ``python -m kit --help`` builds
every subcommand from the configs alone. ``kit.bench.loaders`` measures every registered
case without a bench of its own: ``bench CASE`` for each.

Results follow one JSON form (``BenchResult.to_json``):
``{"bench": NAME, "run_id", "rows": [{...}, ...], "machine": {...}, ...info, "config": {...}}``,
with ``variant`` and ``examples_per_s`` in loader benches, ratios as ``x_<baseline>`` and
projected epoch times in seconds as ``epoch_s_<N>``.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from kit import cache, report, results, samples
from kit.bench import configs
from kit.bench.config import add_arguments, as_dict, from_args
from kit.cases import registry
from kit.results import new_run_id, this_machine
from kit.util import format_duration, write_json

machine = this_machine  # what benches record; lives with the ledger

__all__ = ["run", "module", "BenchResult", "BENCHES", "register"]


@dataclass
class BenchResult:
    """What a bench's ``run(config)`` returns.

    Attributes:
        name: the bench (``"spectrogram"``, ``"scale"``, ...).
        rows: one row per measured thing.
        config: the bench's config dataclass, as it ran.
        info: the run-level extras its JSON carries beside the rows (``batch_size``, ...).
        run_id: one id shared by the run's rows (``kit.results.new_run_id``).
        machine: what it was measured on (``kit.results.this_machine``, taken when the
            result is made).
    """

    name: str
    rows: pd.DataFrame
    config: Any = None
    info: dict = field(default_factory=dict)
    run_id: str = field(default_factory=new_run_id)
    machine: dict = field(default_factory=this_machine)

    def to_json(self) -> dict:
        """``{"bench", "run_id", "rows", "machine", ...info, "config"}``: missing values as
        None, the config as ``dataclasses.asdict`` gives it (paths as strings)."""
        rows = self.rows.astype(object).where(pd.notna(self.rows), None).to_dict(orient="records")
        obj = {"bench": self.name, "run_id": self.run_id, "rows": rows, "machine": self.machine, **self.info}
        if self.config is not None:
            obj["config"] = as_dict(self.config)
        return obj


@dataclass(frozen=True)
class Bench:
    """One bench of ``BENCHES``.

    Attributes:
        module: its module (``run(config, ...)`` and ``show(result)``), imported when it runs.
        config: its config dataclass (``kit.bench.configs``), which also declares its flags.
        help: its subcommand's help line.
        progress: the help of its ``--no-progress`` flag where its ``run`` shows progress bars
            (``run(config, progress=...)``); None where it has none.
    """

    module: str
    config: type
    help: str
    progress: str | None = None


#: Every bench, in the order ``python -m kit bench --help`` lists them.
BENCHES = {
    "timer": Bench("kit.bench.timer", configs.TimerConfig, "overhead of the StepTimer callback on a training step"),
    "spectrogram": Bench("kit.bench.spectrogram", configs.SpectrogramConfig,
                         "every spectrogram loader variant, interleaved"),
    "transfer": Bench("kit.bench.transfer", configs.TransferConfig,
                      "frozen backbone: generator / fastest loader / cached features", progress="no progress bar"),
    "segmentation": Bench("kit.bench.segmentation", configs.SegmentationConfig,
                          "every segmentation loader variant, interleaved"),
    "scaling": Bench("kit.bench.scaling", configs.ScalingConfig,
                     "training throughput and efficiency per replica count"),
    "digest": Bench("kit.bench.digest", configs.DigestConfig, "cost of the content digest in a store's key"),
    "compare": Bench("kit.bench.compare", configs.CompareConfig,
                     "loader rates and model step rates (1 vs 2 replicas) for epoch times"),
    "scale": Bench("kit.bench.scale", configs.ScaleConfig, "whole epochs at the user's size, warm and cold, against "
                   "the page-in, disk and memory limits", progress="no progress bars"),
    # A subcommand per registered case without a bench of its own (``register``), not one of its own.
    "loaders": Bench("kit.bench.loaders", configs.LoadersConfig, "every loader variant of a case, side by side"),
}


def module(name: str):
    """The module of bench ``name`` (a key of ``BENCHES``), imported on its first use: the one
    place a bench's module is loaded, so that the command line's help imports none of them."""
    if name not in BENCHES:
        raise ValueError(f"unknown bench {name!r}; choose from {', '.join(BENCHES)}")
    return importlib.import_module(BENCHES[name].module)


def run(name: str, config=None, /, **fields) -> BenchResult:
    """Runs the bench ``name`` (``python -m kit bench NAME`` runs the same): the one entry
    notebooks and users call.

    Args:
        name: a key of ``BENCHES``.
        config: the bench's config dataclass; or None, and its fields as keywords
            (``run("segmentation", data=csv, variants="sequence,tfdata_tuned")``).
        fields: the config's fields, and ``log`` (a print-like callable) or ``progress``
            where the bench takes them.

    Returns:
        A ``BenchResult``: ``rows`` (a DataFrame), ``info``, ``config``, ``run_id``, ``machine``.
    """
    bench_module = module(name)
    config_type = BENCHES[name].config
    extras = {k: fields.pop(k) for k in ("log", "progress") if k in fields}
    if config is None:
        config = config_type(**fields)
    elif fields:
        raise TypeError(f"run takes a {config_type.__name__} or its fields, not both")
    elif not isinstance(config, config_type):
        raise TypeError(f"bench {name!r} takes a {config_type.__name__}, got {type(config).__name__}")
    return bench_module.run(config, **extras)


def record(res: BenchResult) -> dict:
    """``res.to_json()``, its rows appended to the results ledger (``kit.results``,
    ``$KIT_RESULTS``) with its info and config as run-level fields.

    Every bench's command ends here, so every ``python -m kit bench ...`` run is in
    the ledger. A ledger that cannot be written is reported, not fatal: the run's
    result still prints and goes to ``--json``.
    """
    obj = res.to_json()
    extra = {k: v for k, v in obj.items() if k not in ("bench", "run_id", "rows", "machine")}
    try:
        where = results.append(obj["rows"], bench=res.name, machine=obj["machine"], run_id=obj["run_id"],
                               extra=extra)
        print(f"results: {len(res.rows)} row(s) appended to {where}", file=sys.stderr)
    except (OSError, ValueError) as e:
        print(f"kit: warning: results not appended to the ledger: {e}", file=sys.stderr)
    return obj


def save(res: BenchResult, json_path=None) -> dict:
    """``record(res)``, then its JSON object written to ``json_path`` (``-``: standard output;
    None: nowhere), as every bench command's ``--json`` does. Returns the object."""
    obj = record(res)
    write_json(json_path, obj)
    return obj


def result(name: str, df: pd.DataFrame, **extra) -> dict:
    """``record`` of a result made without a config: ``{"bench", "run_id", "rows", "machine", ...extra}``."""
    return record(BenchResult(name, df, info=extra))


def print_table(df: pd.DataFrame, columns=None) -> None:
    d = df if columns is None else df[[c for c in columns if c in df.columns]]
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.float_format", lambda v: f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"):
        print(d.to_string(index=False))


def register(sub) -> None:
    """``bench NAME`` for every bench of ``BENCHES`` (``bench CASE`` for each registered case without
    a bench of its own), each built from its config's flags, and ``demo``."""
    for name, bench in BENCHES.items():
        if name != "loaders":
            _subcommand(sub["bench"], name, bench)
    for case in registry.cases():
        if case.name not in sub["bench"].choices:
            _subcommand(sub["bench"], "loaders", BENCHES["loaders"], command=case.name,
                        help=f"{case.name}: every loader variant side by side ({case.description})",
                        fixed={"case": case.name}, context={"default_batch": case.default_batch})
    demo = sub["root"].add_parser("demo", help="the main job: both loader benches, the notebooks into reports/")
    demo.add_argument("--reports", default="reports", help="folder for executed notebooks and HTML")
    demo.add_argument("--no-notebooks", action="store_true", help="skip executing the notebooks")
    demo.add_argument("--notebooks", default=None, metavar="NN,NN",
                      help="run only these notebooks (name prefixes, e.g. 00,05); the index lists all")
    demo.set_defaults(func=_demo)


def _subcommand(bench_sub, name: str, bench: Bench, *, command: str | None = None, help: str | None = None,
                fixed: dict | None = None, context: dict | None = None) -> None:
    """The subcommand ``command`` (default ``name``) of bench ``name``: its config's flags
    (``kit.bench.config.add_arguments``), ``--no-progress`` where it has progress bars, and
    ``--json``. ``fixed``: config fields the command sets (a case's name)."""
    p = bench_sub.add_parser(command or name, help=help or bench.help)
    add_arguments(p, bench.config, **(context or {}))
    if bench.progress:
        p.add_argument("--no-progress", action="store_true", help=bench.progress)
    p.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")
    p.set_defaults(func=_command, bench_name=name, bench_fixed=fixed or {})


def _command(args) -> int:
    """``python -m kit bench NAME``: the config from the arguments, the bench's ``run``, its table
    printed, the result appended to the ledger and written to ``--json``."""
    name, bench = args.bench_name, BENCHES[args.bench_name]
    config = from_args(bench.config, args, **args.bench_fixed)
    bench_module = module(name)
    res = bench_module.run(config, **({"progress": not args.no_progress} if bench.progress else {}))
    bench_module.show(res)
    save(res, args.json)
    return 0


def _demo(args) -> int:
    """``make demo``: both cases' loader benches, then every notebook into ``--reports``.

    With ``KIT_FAST=1`` (as ``make test`` sets) the benches run on the embedded samples
    in one short round and the notebooks in fast mode: the same path, in seconds.
    """
    # Before TensorFlow loads: its C++ INFO and WARNING lines are not the demo's progress,
    # nor is what it prints regardless (the absl banner, the CUDA probes): filtered.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("KIT_RESULTS", os.path.abspath(os.path.join(args.reports, "results.jsonl")))
    with report.quiet_stderr():
        return _demo_steps(args)


def _demo_config(name: str, fast: bool):
    """The config of the demo's bench for the case ``name``: its own bench (``spectrogram``,
    ``segmentation``: the user's reports, stores warmed), else the generic loader bench; with
    ``fast``, on the embedded samples in one short round."""
    quick: dict[str, Any]
    if name == "spectrogram":
        quick = dict(data=samples.embedded("spectrogram"), rounds=1, num_batches=2, generator_seconds=1.0)
        return configs.SpectrogramConfig(**(quick if fast else {}))
    if name == "segmentation":
        quick = dict(data=samples.embedded("segmentation"), rounds=1, num_batches=2, batch_size=1, size=(64, 64),
                     seconds=0.5, slow_seconds=1.0)
        return configs.SegmentationConfig(**(quick if fast else {}))
    return configs.LoadersConfig(case=name, rounds=1 if fast else 3, batches=2 if fast else 10)


#: The cases whose demo runs a bench of their own; every other registered case with embedded
#: samples gets the generic loader bench (``kit.bench.loaders``).
_DEMO_BENCHES = ("spectrogram", "segmentation")


def _demo_steps(args) -> int:
    fast = os.environ.get("KIT_FAST") == "1"
    t0 = time.perf_counter()
    before = cache.scan()  # the end says which of these were reused and what was built

    cases = [c for c in registry.cases() if c.name in _DEMO_BENCHES or c.embedded is not None]
    steps = len(cases) + (0 if args.no_notebooks else 1)
    mode = " (fast mode: embedded samples, one short round)" if fast else ""
    with cache.recording() as used:  # the cache entries the benches open
        for k, case in enumerate(cases, start=1):
            print(f"{chr(10) if k > 1 else ''}== [{k}/{steps}] the {case.name} loaders, side by side{mode} "
                  f"(python -m kit bench {case.name})", flush=True)
            name = case.name if case.name in _DEMO_BENCHES else "loaders"
            res = run(name, _demo_config(case.name, fast))
            module(name).show(res)
            save(res, os.path.join(args.reports, f"bench_{case.name}.json"))
    failed = []
    if not args.no_notebooks:
        only = [s.strip() for s in args.notebooks.split(",") if s.strip()] if args.notebooks else None
        print(f"\n== [{steps}/{steps}] executing the notebooks{' in fast mode' if fast else ''} into {args.reports}/ "
              f"(kernel logs in {args.reports}/logs/)", flush=True)
        with tempfile.TemporaryDirectory(prefix="kit-demo-") as tmp:  # the kernels say what they opened
            os.environ[cache.USED_ENV] = os.path.join(tmp, "used.txt")
            try:
                entries = report.run_notebooks("notebooks", args.reports, fast=fast, only=only)
            finally:
                used |= cache.used_by_others(os.environ.pop(cache.USED_ENV))
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
    # Reused: what the benches and the notebooks' kernels opened, unchanged; built: new or rebuilt.
    for line in cache.reuse_report(before, cache.scan(), used):
        print(("== the kit cache: " if not line.startswith(" ") else "  ") + line)
    print(f"== {cache.summary()}")
    return 1 if failed else 0
