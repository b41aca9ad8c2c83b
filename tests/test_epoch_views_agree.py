"""Issue 29, item 1: every view of notebook 05 states the same epoch time for the same loader,
case and replica count, because each one computes it from ``kit.epoch_model``."""

import pandas as pd
import pytest

from kit import epoch_model, explorer, plots
from kit.bench import compare

EXAMPLES = {"spectrogram": 1_000_000, "segmentation": 420}


def _rates():
    """One comparison as ``compare.run`` returns it: loaders, and each model at 1 and 2 replicas
    with a 2-replica efficiency well below 1 (what logical CPU devices measure)."""
    rows = []
    for case, variant, rate in (("spectrogram", "generator", 7.0), ("spectrogram", "memmap", 30_000.0),
                                ("spectrogram", "tfrecord", 9_000.0), ("spectrogram", "feature_cache", 2e5),
                                ("segmentation", "sequence", 17.0), ("segmentation", "class_index", 900.0)):
        rows.append({"case": case, "kind": "loader", "variant": variant, "examples_per_s": rate, "basis": variant})
    for case, model, rate, eff in (("spectrogram", "backbone+head", 2_000.0, 0.536),
                                   ("spectrogram", "head", 80_000.0, 0.7), ("segmentation", "unet", 5.0, 0.9)):
        rows.append({"case": case, "kind": "compute", "variant": model, "replicas": 1, "devices": "CPU",
                     "per_replica_examples_per_s": rate, "efficiency": 1.0, "basis": f"{model} x1"})
        rows.append({"case": case, "kind": "compute", "variant": model, "replicas": 2, "devices": "CPU",
                     "per_replica_examples_per_s": rate * eff, "efficiency": eff, "basis": f"{model} x2"})
    return pd.DataFrame(rows)


def _bars(trace) -> dict:
    return dict(zip(trace.y, trace.x))


@pytest.mark.parametrize("replicas", [1, 2, 8])
def test_table_explorers_replica_figure_headline_and_best_change_agree(replicas):
    configs = compare.configurations(_rates())
    for case, examples in EXAMPLES.items():
        rows = configs[configs["case"] == case]
        # the notebook's table (cell "Projected epoch time")
        table = epoch_model.epoch_table(rows, examples=examples, replicas=replicas).set_index("variant")["epoch_s"]
        # the live explorer, moved to this case, size and replica count
        ex = explorer.epoch_explorer(configs, scale={case: {"examples": examples, "replicas": replicas}})
        ex.update(case=case, examples=examples, replicas=replicas)
        live = _bars(ex.figure.data[0])
        # the static explorer: the trace of this replica count, at this size
        static = explorer.epoch_explorer_static(rows, examples=examples, replicas=replicas)
        static_bars = _bars(static.data[replicas - 1])
        # epoch against replicas: each loader's line at this count
        by_r = plots.epoch_vs_replicas(epoch_model.epoch_table(rows, examples=examples, replicas=range(1, 9)))
        lines = {t.name: dict(zip(t.x, t.y)) for t in by_r.data if t.mode == "lines+markers"}
        for variant, seconds in table.items():
            assert live[variant] == pytest.approx(seconds, rel=1e-3)
            assert static_bars[variant] == pytest.approx(seconds, rel=1e-3)
            assert lines[variant][replicas] == pytest.approx(seconds, rel=1e-3)
        # the headline (index page): the slowest and the fastest loader's epochs
        line = compare.headline(epoch_model.epoch_table(rows, examples=examples, replicas=replicas))
        for variant in (table.idxmax(), table.idxmin()):
            assert f"{variant} {epoch_model.format_duration(table[variant])}" in line
        # the explorer's best next change: its target is a row of the same model
        if ex.best is not None:
            full = epoch_model.epoch_table(rows, examples=examples, replicas=range(1, 9))
            target = full.loc[ex.best["row"]]
            assert ex.best["to_s"] == pytest.approx(target["epoch_s"], rel=1e-3)
            assert ex.best["from_s"] == pytest.approx(table[ex.state["loaders"][0]], rel=1e-3)


def test_at_one_replica_the_epoch_is_examples_over_the_slower_rate():
    configs = compare.configurations(_rates())
    t = epoch_model.epoch_table(configs, examples=1_000_000, replicas=1)
    assert (t["efficiency"] == 1.0).all() and (t["efficiency_kind"] == "exact").all()
    for r in t.itertuples():
        assert r.epoch_s == pytest.approx(1_000_000 / min(r.loader_rate, r.compute_rate), rel=1e-9)


def test_efficiency_is_measured_where_measured_and_assumed_elsewhere():
    s = epoch_model.Scaling.measured({1: 1.0, 2: 0.536})
    assert s.efficiency(1) == 1.0 and s.efficiency(2) == 0.536
    serial = 1 / 0.536 - 1  # Amdahl through one point: 1/e - 1 = s (n - 1)
    assert s.serial == pytest.approx(serial)
    assert s.efficiency(8) == pytest.approx(1 / (1 + serial * 7))
    assert list(s.kind([1, 2, 8])) == ["exact", "measured", "assumed"]
    assert "Amdahl" in s.basis(8) and "2 replicas" in s.basis(8)
    # two measured points: the least-squares serial share, each measured point kept as measured
    two = epoch_model.Scaling.measured({2: 0.9, 4: 0.7})
    x, y = [1, 3], [1 / 0.9 - 1, 1 / 0.7 - 1]
    assert two.serial == pytest.approx((x[0] * y[0] + x[1] * y[1]) / (x[0] ** 2 + x[1] ** 2))
    assert two.efficiency(4) == 0.7 and two.efficiency(3) == pytest.approx(1 / (1 + two.serial * 2))
    # a superlinear measurement counts as linear; nothing measured above one: linear, assumed
    assert epoch_model.Scaling.measured({2: 1.2}).efficiency(8) == 1.0
    assert epoch_model.Scaling.measured({1: 1.0}).basis(4).startswith("assumed: linear")
    with pytest.raises(ValueError, match="efficiency must be in"):
        epoch_model.Scaling.constant(1.5)


def test_the_replica_figure_marks_assumed_points():
    configs = compare.configurations(_rates())
    rows = configs[configs["case"] == "spectrogram"]
    fig = plots.epoch_vs_replicas(epoch_model.epoch_table(rows, examples=1_000_000, replicas=range(1, 9)))
    line = next(t for t in fig.data if t.name == "memmap")
    assert list(line.marker.symbol) == ["circle", "circle"] + ["circle-open"] * 6
    assert "assumed" in fig.layout.title.text and "assumed" in line.text[7]
