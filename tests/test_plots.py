"""kit.plots: the epoch figures, the replica figure's assumed points, the axes (powers of ten with
units, integer epochs)."""

import numpy as np
import pandas as pd
import pytest
from helpers import SCALE, compare_rates, epoch_configs

from kit import plots, timing
from kit.timing import epoch_model
from kit.timing import epoch_model as compare


def test_epoch_comparison_and_replicas_figures():
    t = pd.concat([timing.epoch_table(epoch_configs()[lambda d, case=case: d["case"] == case], examples=s["examples"],
                                      replicas=s["replicas"]) for case, s in SCALE.items()])
    fig = plots.epoch_comparison(t)
    xs = sorted(x for tr in fig.data for x in tr.x)
    assert xs == pytest.approx(sorted(t["epoch_s"]))
    assert {tr.name for tr in fig.data} == {"input-bound", "compute-bound"}
    spec = timing.epoch_table(epoch_configs()[lambda d: d["case"] == "spectrogram"], examples=1_000_000,
                              replicas=range(1, 9))
    fig = plots.epoch_vs_replicas(spec)
    gen = [tr for tr in fig.data if tr.name == "generator"][0]
    assert list(gen.y) == pytest.approx([1e6 / 7] * 8)  # flat: the loader is the ceiling
    assert fig.layout.xaxis.dtick == 1 and fig.layout.xaxis.tickformat == "d"


def test_machines_figure_groups_by_machine():
    rates = pd.DataFrame({"variant": ["memmap", "memmap"], "examples_per_s": [1e5, 1e6],
                          "machine_label": ["laptop", "server"]})
    fig = plots.machines(rates, examples=1_000_000)
    assert [tr.name for tr in fig.data] == ["laptop", "server"]
    assert [tr.x[0] for tr in fig.data] == pytest.approx([10.0, 1.0])


def test_log_axes_label_powers_of_ten_only_with_units():
    ax = plots.log_ticks("s")
    vals = np.log10(ax["tickvals"])
    assert np.allclose(vals, np.round(vals))  # only powers of ten: no minor labels
    labels = dict(zip(np.round(vals).astype(int), ax["ticktext"]))
    assert labels[0] == "1 s" and labels[2] == "100 s" and labels[3] == "1,000 s" and labels[-1] == "0.1 s"
    assert labels[6] == "10⁶ s"
    assert plots._power_label(3, "/s") == "1,000/s"
    df = pd.DataFrame({"variant": ["a", "b"], "examples_per_s": [10.0, 1e5], "epoch_s_1000": [100.0, 0.01]})
    assert plots._power_label(1, "x") == "10x"
    gains = plots.gains(pd.DataFrame({"fix": ["f"], "expected_gain": [1.5], "measured_gain": [21.0]}))
    for fig in (plots.throughput(df), plots.epoch_time(df, "epoch_s_1000"), plots.latency({"a": [1.0, 30.0]}), gains):
        assert fig.layout.xaxis.type == "log" and list(fig.layout.xaxis.tickvals) == ax["tickvals"]
    epochs = pd.DataFrame({"epoch": [0, 1, 2], "input_share": [0.5, 0.6, 0.7]})
    assert plots.input_share(epochs).layout.xaxis.dtick == 1


def test_the_replica_figure_marks_assumed_points():
    configs = compare.configurations(compare_rates())
    rows = configs[configs["case"] == "spectrogram"]
    fig = plots.epoch_vs_replicas(epoch_model.epoch_table(rows, examples=1_000_000, replicas=range(1, 9)))
    line = next(t for t in fig.data if t.name == "memmap")
    assert list(line.marker.symbol) == ["circle", "circle"] + ["circle-open"] * 6
    assert "assumed" in fig.layout.title.text and "assumed" in line.text[7]


def test_a_ladder_is_drawn_in_its_order_not_by_speed():
    """Notebook 02's rungs were once sorted by speed, so the chart did not read as a ladder."""
    df = pd.DataFrame({"variant": ["generator", "map", "+prefetch", "+vectorise"],
                       "examples_per_s": [10.0, 500.0, 400.0, 9000.0]})
    top_down = list(plots.throughput(df, in_order=True).layout.yaxis.categoryarray)[::-1]
    assert top_down == ["generator", "map", "+prefetch", "+vectorise"]  # plotly draws the first category lowest
    assert list(plots.throughput(df).layout.yaxis.categoryarray) == ["generator", "+prefetch", "map", "+vectorise"]


def test_the_epoch_comparison_names_each_case_s_unit_from_its_arguments():
    """The figure takes the units it labels with (issue 53 item 4), never the case registry."""
    configs = compare.configurations(compare_rates())
    t = pd.concat([timing.epoch_table(configs[configs["case"] == case], examples=s["examples"],
                                      replicas=s["replicas"]) for case, s in SCALE.items()])
    titles = [a.text for a in plots.epoch_comparison(t).layout.annotations]
    assert titles == ["spectrogram: 1,000,000 frames, 2 replica(s)", "segmentation: 420 pairs, 1 replica(s)"]
    bare = t.drop(columns="unit")
    assert plots.epoch_comparison(bare).layout.annotations[1].text.startswith("segmentation: 420 examples")
    fig = plots.epoch_comparison(bare, units={"segmentation": "scenes"})
    assert fig.layout.annotations[1].text == "segmentation: 420 scenes, 1 replica(s)"
