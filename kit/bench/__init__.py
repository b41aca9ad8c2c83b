"""Benchmarks: variants measured side by side in one run, as DataFrames and JSON.

``python -m kit bench NAME`` runs one; each lives in its own module here and adds
its subcommand through ``register``. Results follow one JSON form:
``{"bench": NAME, "rows": [{...}, ...], "machine": {...}}``, with ``variant`` and
``examples_per_s`` in loader benches, ratios as ``x_<baseline>`` and projected
epoch times in seconds as ``epoch_s_<N>``.
"""

from __future__ import annotations

import importlib
import os
import platform

import pandas as pd

#: bench modules, each with ``register(bench_subparsers)``.
MODULES = [
    "kit.bench.timer",
    "kit.bench.spectrogram",
    "kit.bench.transfer",
    "kit.bench.segmentation",
    "kit.bench.scaling",
]


def machine() -> dict:
    """What the figures were measured on."""
    info = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
    }
    try:
        import tensorflow as tf

        info["tensorflow"] = tf.__version__
        info["gpus"] = [d.name for d in tf.config.list_physical_devices("GPU")]
    except ImportError:
        pass
    return info


def result(name: str, df: pd.DataFrame, **extra) -> dict:
    """The JSON object of a bench: ``{"bench", "rows", "machine", ...extra}``."""
    return {"bench": name, "rows": df.to_dict(orient="records"), "machine": machine(), **extra}


def print_table(df: pd.DataFrame, columns=None) -> None:
    d = df if columns is None else df[[c for c in columns if c in df.columns]]
    with pd.option_context("display.width", 200, "display.max_columns", 30,
                           "display.float_format", lambda v: f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"):
        print(d.to_string(index=False))


def register(sub) -> None:
    for name in MODULES:
        importlib.import_module(name).register(sub["bench"])
    demo = sub["root"].add_parser("demo", help="the main job: samples, loader bench, notebooks to reports/")
    demo.add_argument("--reports", default="reports", help="folder for executed notebooks and HTML")
    demo.add_argument("--no-notebooks", action="store_true", help="skip executing the notebooks")
    demo.set_defaults(func=_demo)


def _demo(args) -> int:
    from kit.bench import spectrogram

    print("== kit demo: the spectrogram loaders, side by side (python -m kit bench spectrogram)")
    spectrogram.main(spectrogram.defaults(json=os.path.join(args.reports, "bench_spectrogram.json")))
    if not args.no_notebooks:
        from kit import report

        print(f"== executing the notebooks into {args.reports}/ (HTML next to each)")
        report.run_notebooks("notebooks", args.reports)
    return 0
