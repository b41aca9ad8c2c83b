"""``python -m kit bench CASE`` for every registered case without a bench of its own: its loader variants
measured side by side, interleaved, against the case's own pattern, projected to the users' scale.

The spectrogram and segmentation cases have their own benches (stores warmed, the user's reports,
profiles); a case added to the registry (``kit.cases.registry``: a third one, a user's) gets this one.
``run(LoadersConfig(...))`` returns a ``kit.bench.BenchResult``; ``python -m kit bench CASE`` is
registered for each such case by ``kit.bench.register``, from ``LoadersConfig``'s flags.
"""

from __future__ import annotations

from kit import timing
from kit.bench import BenchResult, print_table
from kit.bench.configs import LoadersConfig
from kit.cases import registry


def run(config: LoadersConfig, *, log=print) -> BenchResult:
    """Every variant of the case, measured interleaved (``kit.timing.compare``): one row per variant
    with ``x_<the case's own pattern>`` and the epoch at the users' scale (``epoch_s_<N>``)
    (``log``: unused, as every bench's ``run`` takes it)."""
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


def show(res) -> None:
    print_table(res.rows, ["case", "variant", "examples_per_s", "round_min", "round_max",
                           *[c for c in res.rows.columns if c.startswith(("x_", "epoch_s_"))]])

