"""kit.notebook.explorer: the live explorer's update path and widgets, the static twins, headless display;
every view of notebook 05 states the same epoch time (issue 29, item 1)."""

import plotly.graph_objects as go
import pytest
from helpers import SCALE, compare_rates, epoch_configs

from kit import plots
from kit.notebook import explorer
from kit.timing import epoch_model
from kit.timing import epoch_model as compare


def test_explorer_starts_at_the_users_scale_and_states_the_regime():
    ex = explorer.epoch_explorer(epoch_configs(), scale=SCALE)
    bar = ex.figure.data[0]
    # 1e6 frames, 2 replicas: generator 1e6/7; memmap 1e6/5120; feature cache 1e6/160000.
    assert list(bar.y) == ["generator", "memmap", "feature_cache"]
    assert list(bar.x) == pytest.approx([1e6 / 7, 1e6 / 5120, 1e6 / 160_000])
    assert list(bar.marker.color) == [plots.BOUND_COLOURS["input"]] + [plots.BOUND_COLOURS["compute"]] * 2
    assert "input-bound: more GPUs will not help" in ex.message
    assert "Best next change: loader generator -> feature_cache" in ex.message
    assert "22,857.1x faster" in ex.message  # (1e6/7) / 6.25 s


def test_explorer_update_path_changes_the_figure_in_place():
    ex = explorer.epoch_explorer(epoch_configs(), scale=SCALE)
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
    ex = explorer.epoch_explorer(epoch_configs(), scale=SCALE)
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
    spec = epoch_configs()[lambda d: d["case"] == "spectrogram"]
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
    ex = explorer.epoch_explorer(epoch_configs(), scale=SCALE)
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


@pytest.mark.slow
def test_widgets_in_a_headless_run_leave_static_figures(tmp_path):
    """Issue 15: ``explorer.interactive`` once made a headless run wait out the cell timeout and saved
    no figure. Run headless (as ``kit.report`` does), each widget leaves a plotly figure at once."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from kit import report

    nb = new_notebook(cells=[
        new_code_cell("import pandas as pd, plotly.graph_objects as go\nfrom kit.notebook import explorer"),
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

    ex = explorer.epoch_explorer(epoch_configs(), scale=SCALE)
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


EXAMPLES = {"spectrogram": 1_000_000, "segmentation": 420}


def _bars(trace) -> dict:
    return dict(zip(trace.y, trace.x))


@pytest.mark.parametrize("replicas", [1, 2, 8])
def test_table_explorers_replica_figure_headline_and_best_change_agree(replicas):
    configs = compare.configurations(compare_rates())
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
