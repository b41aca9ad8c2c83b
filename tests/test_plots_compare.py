"""kit.plots for notebook 05: the epoch figures, the live explorer's update path, the static
twins, headless display, and the axes (powers of ten with units, integer epochs)."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from kit import explorer, plots, timing

SCALE = {"spectrogram": {"examples": 1_000_000, "replicas": 2},
         "segmentation": {"examples": 420, "replicas": 1}}


def _configs():
    return pd.DataFrame({
        "case": ["spectrogram"] * 3 + ["segmentation"] * 2,
        "variant": ["generator", "memmap", "feature_cache", "sequence", "class_index"],
        "loader_rate": [7.0, 300_000.0, 200_000.0, 17.0, 3000.0],
        "compute_rate": [2560.0, 2560.0, 80_000.0, 5.0, 5.0],
        "efficiency": [1.0] * 5, "loader_basis": "l", "compute_basis": "c"})


def test_explorer_starts_at_the_users_scale_and_states_the_regime():
    ex = explorer.epoch_explorer(_configs(), scale=SCALE)
    bar = ex.figure.data[0]
    # 1e6 frames, 2 replicas: generator 1e6/7; memmap 1e6/5120; feature cache 1e6/160000.
    assert list(bar.y) == ["generator", "memmap", "feature_cache"]
    assert list(bar.x) == pytest.approx([1e6 / 7, 1e6 / 5120, 1e6 / 160_000])
    assert list(bar.marker.color) == [plots.BOUND_COLOURS["input"]] + [plots.BOUND_COLOURS["compute"]] * 2
    assert "input-bound: more GPUs will not help" in ex.message
    assert "Best next change: loader generator -> feature_cache" in ex.message
    assert "22,857.1x faster" in ex.message  # (1e6/7) / 6.25 s


def test_explorer_update_path_changes_the_figure_in_place():
    ex = explorer.epoch_explorer(_configs(), scale=SCALE)
    fig = ex.figure
    ex.update(examples=1000, loaders=("memmap",))
    assert ex.figure is fig  # the same FigureWidget, redrawn
    assert list(fig.data[0].y) == ["memmap"] and fig.data[0].x[0] == pytest.approx(1000 / 5120)
    assert "compute-bound" in ex.message and "replicas 2 -> 8" in ex.message
    ex.update(step_ms=10.0, step_batch=100)  # "my step takes 10 ms at batch 100": 10,000/s per replica
    assert fig.data[0].x[0] == pytest.approx(1000 / 20_000)
    ex.update(case="segmentation")
    assert list(fig.data[0].y) == ["sequence", "class_index"]
    assert "420 pairs, 1 replica(s)" in fig.layout.title.text
    with pytest.raises(ValueError, match="unknown control"):
        ex.update(colour="red")
    with pytest.raises(ValueError, match="case must be one of"):
        ex.update(case="video")


def test_explorer_widgets_drive_the_same_update():
    ex = explorer.epoch_explorer(_configs(), scale=SCALE)
    drawn = list(ex.figure.data[0].x)
    box = ex.live()
    assert box is ex.live()  # built once
    # The FigureWidget starts from the drawn state.
    assert isinstance(ex.figure, go.FigureWidget) and list(ex.figure.data[0].x) == drawn
    assert ex.figure in box.children[2].children and "Best next change" in ex._text.value
    before = list(ex.figure.data[0].x)
    ex._controls["examples"].value = 1e8  # what moving the slider does
    assert ex.state["examples"] == 100_000_000
    assert list(ex.figure.data[0].x) == pytest.approx([100 * x for x in before])
    ex._controls["replicas"].value = 8
    assert "8 replica(s)" in ex._text.value
    ex._controls["case"].value = "segmentation"
    assert ex._controls["loaders"].value == ("sequence", "class_index")


def test_static_explorer_precomputes_every_slider_and_dropdown_value():
    spec = _configs()[lambda d: d["case"] == "spectrogram"]
    fig = explorer.epoch_explorer_static(spec, examples=1_000_000, replicas=2)
    slider = fig.layout.sliders[0]
    labels = [s.label for s in slider.steps]
    assert labels[0] == "1,000" and labels[-1] == "100,000,000" and "1,000,000" in labels
    assert labels[slider.active] == "1,000,000"
    assert len(fig.data) == 8 and [t.visible for t in fig.data].count(True) == 1 and fig.data[1].visible
    # A slider step sets each replica trace's x to examples / min(loader, r x compute).
    step = slider.steps[labels.index("1,000")]
    xs = step.args[0]["x"]
    assert len(xs) == 8
    assert xs[0] == pytest.approx([1000 / 7, 1000 / 2560, 1000 / 80_000])
    assert xs[7] == pytest.approx([1000 / 7, 1000 / (8 * 2560), 1000 / 200_000])
    menu = fig.layout.updatemenus[0]
    assert menu.active == 1 and menu.buttons[3].args[0]["visible"] == [r == 4 for r in range(1, 9)]


def test_headless_display_is_a_static_figure(monkeypatch):

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.delenv("KIT_WIDGETS", raising=False)
    assert explorer.headless()
    ex = explorer.epoch_explorer(_configs(), scale=SCALE)
    ex._ipython_display_()
    choice = explorer.interactive({"a": go.Figure(go.Bar(y=[1])), "b": go.Figure(go.Scatter(y=[2]))})
    choice._ipython_display_()
    assert all(type(o) is go.Figure for o in shown) and len(shown) == 2
    assert shown[0].layout.sliders and shown[1].layout.updatemenus
    monkeypatch.setenv("JPY_SESSION_NAME", "/x/05_compare_epoch_times.ipynb")  # what jupyter-server sets
    assert not explorer.headless()
    ex._ipython_display_()
    assert type(shown[-1]).__name__ == "VBox"
    monkeypatch.setenv("KIT_WIDGETS", "0")
    assert explorer.headless()


def test_interactive_static_twin_switches_with_plotly_dropdown():
    a = go.Figure(go.Bar(y=[1, 2]), layout=dict(title="A"))
    b = go.Figure([go.Scatter(y=[2]), go.Scatter(y=[3])], layout=dict(title="B"))
    c = explorer.interactive({"a": a, "b": b})
    s = c.static()
    assert [t.visible for t in s.data] == [True, False, False]
    buttons = s.layout.updatemenus[0].buttons
    assert buttons[1].args[0]["visible"] == [False, True, True] and buttons[1].args[1]["title"]["text"] == "B"
    c.live()
    c.select("b")
    assert len(c.figure.data) == 2 and c.figure.layout.title.text == "B"


def test_epoch_comparison_and_replicas_figures():
    t = pd.concat([timing.epoch_table(_configs()[lambda d: d["case"] == case], examples=s["examples"],
                                      replicas=s["replicas"]) for case, s in SCALE.items()])
    fig = plots.epoch_comparison(t)
    xs = sorted(x for tr in fig.data for x in tr.x)
    assert xs == pytest.approx(sorted(t["epoch_s"]))
    assert {tr.name for tr in fig.data} == {"input-bound", "compute-bound"}
    spec = timing.epoch_table(_configs()[lambda d: d["case"] == "spectrogram"], examples=1_000_000,
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


def _rates():
    rows = [
        {"case": "spectrogram", "kind": "loader", "variant": "generator", "examples_per_s": 7.0, "basis": "g"},
        {"case": "spectrogram", "kind": "loader", "variant": "feature_cache", "examples_per_s": 2e5, "basis": "f"},
        {"case": "segmentation", "kind": "loader", "variant": "sequence", "examples_per_s": 17.0, "basis": "s"},
    ]
    for model, rate in (("backbone+head", 300.0), ("head", 80_000.0)):
        rows.append({"case": "spectrogram", "kind": "compute", "variant": model, "replicas": 1,
                     "per_replica_examples_per_s": rate, "efficiency": 1.0, "basis": f"{model} x1"})
        rows.append({"case": "spectrogram", "kind": "compute", "variant": model, "replicas": 2,
                     "per_replica_examples_per_s": rate * 0.8, "efficiency": 0.8, "basis": f"{model} x2"})
    rows.append({"case": "segmentation", "kind": "compute", "variant": "unet", "replicas": 1,
                 "per_replica_examples_per_s": 5.0, "efficiency": 1.0, "basis": "unet"})
    return pd.DataFrame(rows)


def test_configurations_pair_each_loader_with_its_cases_model():
    from kit.bench import compare

    c = compare.configurations(_rates()).set_index("variant")
    assert c.loc["generator", "model"] == "backbone+head" and c.loc["generator", "compute_rate"] == 300.0
    assert c.loc["feature_cache", "model"] == "head" and c.loc["feature_cache", "compute_rate"] == 80_000.0
    gen = c.loc["generator", "scaling"]  # measured 0.8 at 2 replicas; 1 at one; Amdahl beyond
    assert gen.efficiency(1) == 1.0 and gen.efficiency(2) == 0.8
    assert gen.efficiency(8) == pytest.approx(1 / (1 + 0.25 * 7))  # 1/0.8 - 1 = 0.25 per extra replica
    assert gen.basis(2).startswith("measured") and gen.basis(8).startswith("assumed: Amdahl")
    seq = c.loc["sequence", "scaling"]  # the U-Net was measured at one replica only: linear, assumed
    assert c.loc["sequence", "model"] == "unet" and seq.efficiency(4) == 1.0 and seq.basis(4).startswith("assumed")
    assert c.loc["generator", "loader_basis"] == "g" and c.loc["generator", "compute_basis"] == "backbone+head x1"
    half = compare.configurations(_rates(), efficiency=0.5)["scaling"]
    assert all(s.efficiency(1) == 1.0 and s.efficiency(2) == 0.5 and s.efficiency(8) == 0.5 for s in half)


def test_saved_comparison_skips_fast_runs_and_other_machines(tmp_path):
    from kit import results
    from kit.bench import compare

    ledger = tmp_path / "results.jsonl"
    here = {"host": "here", "cpus": 2}
    results.append(_rates(), bench="compare", machine=here, run_id="full", extra={"fast": False}, file=ledger)
    results.append(_rates(), bench="compare", machine=here, run_id="quick", extra={"fast": True}, file=ledger)
    results.append(_rates(), bench="compare", machine={"host": "there"}, run_id="other", file=ledger)
    df = results.load(ledger)
    got = compare.saved(df, results.machine_label(here))
    assert set(got["run_id"]) == {"full"} and len(got) == len(_rates())
    assert compare.saved(df.iloc[:0]).empty
    assert compare.saved(df, "nobody").empty


def test_widgets_in_a_headless_run_leave_static_figures(tmp_path):
    """Issue 15: ``explorer.interactive`` once made a headless run wait out the cell timeout and saved
    no figure. Run headless (as ``kit.report`` does), each widget leaves a plotly figure at once."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from kit import report

    nb = new_notebook(cells=[
        new_code_cell("import pandas as pd, plotly.graph_objects as go\nfrom kit import explorer"),
        new_code_cell("explorer.interactive({'a': go.Figure(go.Bar(y=[1, 2])), 'b': go.Figure(go.Bar(y=[2, 1]))})"),
        new_code_cell("explorer.epoch_explorer(pd.DataFrame({'case': ['spectrogram'], 'variant': ['memmap'],"
                      " 'loader_rate': [1e5], 'compute_rate': [1e3], 'efficiency': [1.0]}))"),
    ])
    path = tmp_path / "widgets.ipynb"
    nbformat.write(nb, path)
    done = report.execute(path, timeout=120)  # a widget waiting on a front end would time out here
    for cell in done.cells[1:]:
        kinds = [k for o in cell.outputs for k in o.get("data", {})]
        assert "application/vnd.plotly.v1+json" in kinds, cell.source
        assert "application/vnd.jupyter.widget-view+json" not in kinds
        assert not [o for o in cell.outputs if o.output_type == "error"]


def test_live_figure_loads_plotly_js_in_the_background_and_sends_the_whole_figure(monkeypatch):
    """The FigureWidget's front end is a small module (anywidget gives it 2 s to load before it
    drops the kernel's messages; plotly's own bundle takes longer in a busy browser), which
    imports plotly's own bundle, sent alongside; each update sends the whole figure as state."""
    from pathlib import Path

    import plotly.basewidget

    ex = explorer.epoch_explorer(_configs(), scale=SCALE)
    ex.live()
    w = ex.figure
    assert isinstance(w, go.FigureWidget) and type(w) is not go.FigureWidget  # a subclass of plotly's
    bundle = Path(plotly.basewidget.__file__).parent / "package_data" / "widgetbundle.js"
    assert len(w._esm) < 5000 and "import(" in w._esm and w._plotly_esm == bundle.read_text(encoding="utf-8")
    sent = []
    monkeypatch.setattr(w, "send_state", lambda key=None: sent.append(w.get_state(key)))
    ex._controls["examples"].value = 1e8
    state = sent[-1]
    assert set(state) == {"_widget_data", "_widget_layout"}
    assert state["_widget_data"][0]["x"] == pytest.approx(list(w.data[0].x))
    assert "100,000,000" in state["_widget_layout"]["title"]["text"]
    assert ex.figure is w  # updated in place
