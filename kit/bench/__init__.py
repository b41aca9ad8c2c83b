"""Benchmarks: variants measured side by side in one run, as DataFrames and JSON.

``python -m kit bench NAME`` runs one; ``run(NAME, config)`` (or the config's fields as keywords)
does the same from Python. ``BENCHES`` lists them: each bench's module (imported only when it
runs, so ``python -m kit --help`` imports none), its config dataclass (``kit.bench.configs``,
flags declared with ``kit.bench.options.option``) and its help. Each module has
``run(config, *, log=print)`` returning a ``BenchResult``, and ``show(result)``.
``bench CASE`` (``kit.bench.loaders``) measures each registered case without a bench of its own.

A result's JSON (``BenchResult.to_json``): ``{"bench", "run_id", "rows", "machine", ...info,
"config"}``; loader benches' rows have ``variant`` and ``examples_per_s``, ratios as
``x_<baseline>`` and projected epoch times in seconds as ``epoch_s_<N>``.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from kit import results, timing
from kit.bench import configs
from kit.bench.options import add_arguments, as_dict, from_args
from kit.cases import registry
from kit.results import new_run_id, this_machine
from kit.util import write_json

__all__ = ["run", "save", "BenchResult", "BENCHES"]


@dataclass
class BenchResult:
    """What a bench's ``run(config)`` returns.

    Attributes:
        name: the bench (``"spectrogram"``, ...).
        rows: one row per measured thing.
        config: the bench's config dataclass, as it ran.
        info: run-level extras its JSON carries beside the rows (``batch_size``, ...).
        run_id: one id shared by the run's rows.
        machine: what it was measured on (``kit.results.this_machine``).
    """

    name: str
    rows: pd.DataFrame
    config: Any = None
    info: dict = field(default_factory=dict)
    run_id: str = field(default_factory=new_run_id)
    machine: dict = field(default_factory=this_machine)

    def to_json(self) -> dict:
        """``{"bench", "run_id", "rows", "machine", ...info, "config"}``, missing values as None."""
        rows = self.rows.astype(object).where(pd.notna(self.rows), None).to_dict(orient="records")
        obj = {"bench": self.name, "run_id": self.run_id, "rows": rows, "machine": self.machine, **self.info}
        if self.config is not None:
            obj["config"] = as_dict(self.config)
        return obj


@dataclass(frozen=True)
class Bench:
    """One bench of ``BENCHES``: its module, its config dataclass, its help line, and the help of its
    ``--no-progress`` flag where its ``run`` takes ``progress`` (else None)."""

    module: str
    config: type
    help: str
    progress: str | None = None


#: Every bench, in the order ``python -m kit bench --help`` lists them.
BENCHES = {
    "spectrogram": Bench("kit.bench.spectrogram", configs.SpectrogramConfig,
                         "every spectrogram loader variant, interleaved"),
    "transfer": Bench("kit.bench.transfer", configs.TransferConfig,
                      "frozen backbone: generator / fastest loader / cached features", progress="no progress bar"),
    "segmentation": Bench("kit.bench.segmentation", configs.SegmentationConfig,
                          "every segmentation loader variant, interleaved"),
    "scaling": Bench("kit.bench.scaling", configs.ScalingConfig,
                     "training throughput and efficiency per replica count"),
    "compare": Bench("kit.bench.compare", configs.CompareConfig,
                     "loader rates and model step rates (1 vs 2 replicas) for epoch times"),
    # One subcommand per registered case without a bench of its own (``register``), none of its own.
    "loaders": Bench("kit.bench.loaders", configs.LoadersConfig, "every loader variant of a case, side by side"),
}


def module(name: str):
    """The module of bench ``name`` (a key of ``BENCHES``), imported on first use."""
    if name not in BENCHES:
        raise ValueError(f"unknown bench {name!r}; choose from {', '.join(BENCHES)}")
    return importlib.import_module(BENCHES[name].module)


def run(name: str, config=None, /, **fields) -> BenchResult:
    """Runs the bench ``name``, as ``python -m kit bench NAME`` does.

    Args:
        name: a key of ``BENCHES``.
        config: the bench's config dataclass; or None, and its fields as keywords
            (``run("segmentation", data=csv, variants="sequence,tfdata_tuned")``).
        fields: the config's fields, and ``log`` or ``progress`` where the bench takes them.

    Returns:
        A ``BenchResult``.
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
    """``res.to_json()``, its rows appended to the results ledger (``kit.results``). A ledger that
    cannot be written is a warning, not an error."""
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
    """``record(res)``, then its JSON written to ``json_path`` (``-``: standard output; None: nowhere)."""
    obj = record(res)
    write_json(json_path, obj)
    return obj


def endless(loader):
    """``loader``'s epochs one after another, for rounds sized by time (``kit.timing.compare``'s
    ``min_seconds``), which may read past an epoch's end: a ``tf.data.Dataset`` repeated, anything
    else (a ``PyDataset``, a Grain loader) a callable that iterates it again at each end."""
    if hasattr(loader, "element_spec") and hasattr(loader, "repeat"):
        return loader.repeat()

    def epochs():
        while True:
            it = timing.iterate(loader)
            first = next(it, None)
            if first is None:  # a loader with no batches: end, rather than ask again forever
                return
            yield first
            yield from it  # closing this generator closes the epoch's (a PyDataset's workers stop)

    return epochs


def ratio_cells(df: pd.DataFrame, baselines) -> tuple[pd.DataFrame, list[str]]:
    """A copy of ``df`` whose ``x_<b>`` columns read ``ratio [lowest-highest round]``, marked ``~``
    where the rounds' ratios straddle 1; and a line for each such ratio, naming the two loaders."""
    table, notes = df.copy(), []
    for b in baselines:
        lo, hi = df.get(f"x_{b}_min"), df.get(f"x_{b}_max")
        if f"x_{b}" not in df or lo is None or hi is None:
            continue
        straddle = (lo < 1) & (hi > 1)
        table[f"x_{b}"] = [f"{x:.3g} [{a:.3g}-{c:.3g}]" + ("~" if s else "")
                           for x, a, c, s in zip(df[f"x_{b}"], lo, hi, straddle)]
        notes += [f"~ {v} against {b}: its rounds' ratios straddle 1 ({a:.3g} to {c:.3g}), so this run does not "
                  f"say which of the two is faster" for v, a, c, s in zip(df["variant"], lo, hi, straddle) if s]
    return table, notes


def print_table(df: pd.DataFrame, columns=None) -> None:
    d = df if columns is None else df[[c for c in columns if c in df.columns]]
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.float_format", lambda v: f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"):
        print(d.to_string(index=False))


def register(sub) -> None:
    """``bench NAME`` for every bench of ``BENCHES``, and ``bench CASE`` for each registered case
    without a bench of its own, each built from its config's flags."""
    for name, bench in BENCHES.items():
        if name != "loaders":
            _subcommand(sub["bench"], name, bench)
    for case in registry.cases():
        if case.name not in sub["bench"].choices:
            _subcommand(sub["bench"], "loaders", BENCHES["loaders"], command=case.name,
                        help=f"{case.name}: every loader variant side by side ({case.description})",
                        fixed={"case": case.name}, context={"default_batch": case.default_batch})


def _subcommand(bench_sub, name: str, bench: Bench, *, command: str | None = None, help: str | None = None,
                fixed: dict | None = None, context: dict | None = None) -> None:
    p = bench_sub.add_parser(command or name, help=help or bench.help)
    add_arguments(p, bench.config, **(context or {}))
    if bench.progress:
        p.add_argument("--no-progress", action="store_true", help=bench.progress)
    p.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")
    p.set_defaults(func=_command, bench_name=name, bench_fixed=fixed or {})


def _command(args) -> int:
    """``python -m kit bench NAME``: run, print, append to the ledger, write ``--json``."""
    name, bench = args.bench_name, BENCHES[args.bench_name]
    config = from_args(bench.config, args, **args.bench_fixed)
    bench_module = module(name)
    res = bench_module.run(config, **({"progress": not args.no_progress} if bench.progress else {}))
    bench_module.show(res)
    save(res, args.json)
    return 0
