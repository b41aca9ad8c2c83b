"""``python -m kit bench CASE`` for every registered case without a bench of its own: its loader variants
measured side by side, interleaved, against the case's own pattern, projected to the users' scale.

The spectrogram and segmentation cases have their own benches (stores warmed, the user's reports,
profiles); a case added to the registry (``kit.cases.registry``: a third one, a user's) gets this one.
``run(LoadersConfig(...))`` returns a ``kit.bench.BenchResult``; ``run(case=..., ...)``, the config's
fields as keywords, returns its rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kit import timing
from kit.bench import BenchResult, print_table, save
from kit.bench.config import check_int, configure, optional_int, optional_path
from kit.cases import registry
from kit.util import positive_int

__all__ = ["LoadersConfig", "run", "register", "config_from_args", "show", "main"]


@dataclass(frozen=True)
class LoadersConfig:
    """What ``run`` measures: every variant of ``case`` (or ``variants``) over the index CSV ``data``
    (default: the case's embedded samples), ``rounds`` interleaved rounds of ``batches`` batches."""

    case: str
    data: Path | None = None
    variants: tuple | str | None = None
    batch_size: int | None = None
    rounds: int = 3
    batches: int = 10

    def __post_init__(self):
        known = registry.get(self.case).variants()  # an unknown case: one error naming the known ones
        optional_path(self, "data")
        if isinstance(self.variants, str):
            object.__setattr__(self, "variants", tuple(v.strip() for v in self.variants.split(",") if v.strip()))
        unknown = [v for v in self.variants or () if v not in known]
        if unknown:
            raise ValueError(f"unknown variant(s) {', '.join(unknown)}; choose from {', '.join(known)}")
        optional_int("batch_size", self.batch_size)
        check_int("rounds", self.rounds)
        check_int("batches", self.batches)


def run(config: LoadersConfig | None = None, /, **options):
    """Every variant of the case, measured interleaved (``kit.timing.compare``): one row per variant
    with ``x_<the case's own pattern>`` and the epoch at the users' scale (``epoch_s_<N>``)."""
    config, as_arguments = configure(LoadersConfig, config, (), options)
    res = _run(config)
    return res.rows if as_arguments else res


def _run(config: LoadersConfig):
    case = registry.get(config.case)
    csv = config.data or case.embedded
    if csv is None:
        raise ValueError(f"case {case.name!r} has no embedded samples: give --data CSV "
                         f"(python -m kit samples {case.name} --out DIR writes some)")
    names = list(config.variants or case.variants())
    batch = config.batch_size or case.default_batch
    loaders = {v: case.loader(csv, v, batch_size=batch) for v in names}
    baseline = case.default_variant if case.default_variant in loaders else names[0]
    epochs = [case.scale.examples] if case.scale else []
    rows = timing.compare(loaders, baselines=[baseline], num_batches=config.batches, warmup=1, rounds=config.rounds,
                          epoch_examples=epochs)
    rows.insert(0, "case", case.name)
    info = {"data": str(csv), "batch_size": batch, "unit": case.unit}
    return BenchResult(case.name, rows, config, info)


def register(bench_sub) -> None:
    """A ``bench CASE`` subcommand for each registered case that has no bench of its own."""
    taken = set(bench_sub.choices)
    for case in registry.cases():
        if case.name in taken:
            continue
        p = bench_sub.add_parser(case.name, help=f"{case.name}: every loader variant side by side ({case.description})")
        p.add_argument("--data", type=Path, default=None,
                       help="index CSV (default: the case's embedded samples)")
        p.add_argument("--variants", default=None, help="comma-separated variants (default: every one)")
        p.add_argument("--batch-size", type=positive_int, default=None,
                       help=f"examples per batch (default: the case's, {case.default_batch})")
        p.add_argument("--rounds", type=positive_int, default=3,
                       help="interleaved rounds: each measures every variant once, in turn (default 3)")
        p.add_argument("--batches", type=positive_int, default=10, help="timed batches per variant per round (default 10)")
        p.add_argument("--json", default=None, help="write the result as JSON to this file (- for stdout)")
        p.set_defaults(func=main, bench_case=case.name)


def config_from_args(args) -> LoadersConfig:
    return LoadersConfig(case=args.bench_case, data=args.data, variants=args.variants, batch_size=args.batch_size,
                         rounds=args.rounds, batches=args.batches)


def show(res) -> None:
    print_table(res.rows, ["case", "variant", "examples_per_s", "round_min", "round_max",
                           *[c for c in res.rows.columns if c.startswith(("x_", "epoch_s_"))]])


def main(args) -> int:
    res = run(config_from_args(args))
    show(res)
    save(res, args.json)
    return 0
