"""``python -m kit bench transfer``: a frozen backbone's head, trained three ways, in one run.

The measuring is ``kit.spectrogram.compare_transfer`` (``kit.spectrogram.transfer``: (a) the
generator + frozen backbone + head, (b) the fastest loader + frozen backbone + head, (c) the head
alone on cached features, and the one-time extraction, interleaved in rounds), the function
notebook 07 calls. This bench runs it with a ``TransferConfig`` and checks its figures against
the issue's targets (``TARGETS``).

``run(TransferConfig(...))`` returns a ``kit.bench.BenchResult``.
"""

from __future__ import annotations

import pandas as pd

from kit.bench import BenchResult, print_table
from kit.bench.configs import TransferConfig
from kit.spectrogram.transfer import EPOCH, compare_transfer
from kit.util import format_duration

#: Targets of the issue, on 2 CPU cores and the default bench data.
TARGETS = {"c_epoch_s_max": 15.0, "c_over_a_min": 300.0, "c_over_b_min": 50.0}


def run(config: TransferConfig, *, progress: bool = True, log=print) -> BenchResult:
    """Measures (a), (b), (c) and the extraction (``kit.spectrogram.compare_transfer``).

    Args:
        config: what to measure.
        progress: show the extraction's progress bar.
        log: where progress lines go.

    Returns:
        A ``BenchResult``: its rows the table (one row per path: ``variant``, ``setup``,
        ``examples_per_s``, ``examples``, ``seconds``, ``epoch_s_1000000``, ``x_generator``,
        ``x_<b>``, ``basis``), its info a dict with the backbone's cost, the loader of (b) and
        the targets checked.
    """
    c = config
    df = compare_transfer(c.data, frames=c.frames, batch_size=c.batch_size, rounds=c.rounds, batches=c.batches,
                          head_epochs=c.head_epochs, loader=c.loader, weights=c.weights, alpha=c.alpha,
                          workdir=c.workdir, progress=progress, log=log)
    facts = dict(df.attrs)
    df.attrs.clear()  # the facts go to the info, once
    fastest = facts["fastest_loader"]
    measured, met = _targets(df, fastest)
    info = {"backbone": facts["backbone"], "fastest_loader": fastest, "frames": facts["frames"],
            "epoch_examples": EPOCH, "targets": TARGETS, "measured": measured, "met": met, "data": facts["data"]}
    return BenchResult("transfer", df, config, info)


def _targets(df: pd.DataFrame, fastest: str) -> tuple[dict, dict]:
    """(c)'s measured epoch and ratios, and whether each meets its target (``TARGETS``)."""
    c = df.set_index("variant").loc["feature_cache"]
    measured = {"c_epoch_s": float(c[f"epoch_s_{EPOCH}"]), "c_over_a": float(c["x_generator"]),
                "c_over_b": float(c[f"x_{fastest}"])}
    met = {"c_epoch_s": measured["c_epoch_s"] <= TARGETS["c_epoch_s_max"],
           "c_over_a": measured["c_over_a"] >= TARGETS["c_over_a_min"],
           "c_over_b": measured["c_over_b"] >= TARGETS["c_over_b_min"]}
    return measured, met


def show(res) -> None:
    """Prints a result's table, its basis and the targets met or not."""
    df, info = res.rows, res.info
    fastest = info["fastest_loader"]
    table = df.copy()
    table["epoch_1M"] = [format_duration(s) for s in df[f"epoch_s_{EPOCH}"]]
    print()
    print_table(table, ["setup", "examples_per_s", "epoch_1M", "x_generator", f"x_{fastest}", "examples"])
    print(f"\nbasis: frames trained (column 'examples') over seconds timed, {res.config.rounds} interleaved rounds; "
          f"projected to {EPOCH:,} frames. The extraction row is a one-time cost.")
    m, t, ok = info["measured"], info["targets"], info["met"]

    def mark(key):
        return "met" if ok[key] else "NOT met"

    print(f"targets: (c) epoch {m['c_epoch_s']:.1f} s <= {t['c_epoch_s_max']:g} s: {mark('c_epoch_s')}; "
          f"(c)/(a) {m['c_over_a']:,.0f}x >= {t['c_over_a_min']:g}x: {mark('c_over_a')}; "
          f"(c)/(b) {m['c_over_b']:,.0f}x >= {t['c_over_b_min']:g}x: {mark('c_over_b')}")

