"""Plotly figures as pure functions of the kit's DataFrames.

No TensorFlow here: these functions take the tables that ``kit.timing`` and
``kit.bench`` return and give back ``plotly.graph_objects.Figure`` objects, which
render in JupyterLab, in a headless run's saved output and in the HTML export.
"""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from kit.util import format_duration

__all__ = [
    'throughput',
    'epoch_time',
    'latency',
    'step_breakdown',
    'input_share',
    'stage_costs',
    'segmentation_pair',
    'scaling',
    'gains',
    'log_ticks',
    'integer_ticks',
    'CASE_UNITS',
    'epoch_comparison',
    'epoch_vs_replicas',
    'machines',
    'headless',
    'Choice',
    'interactive',
    'EpochExplorer',
    'epoch_explorer',
    'epoch_explorer_static',
    'epoch_order',
    'figure_widget',
]


def throughput(df: pd.DataFrame, *, title: str = "Loader throughput", log: bool = True,
               ratio: str | None = None) -> go.Figure:
    """Bar chart of examples/s per variant (one row per variant in ``df``).

    Args:
        df: needs ``variant`` and ``examples_per_s``; ``ratio`` names an ``x_<name>``
            column whose values label the bars.
        log: logarithmic axis (loaders differ by orders of magnitude).
    """
    d = df.sort_values("examples_per_s")
    text = None
    if ratio is not None:
        text = [f"{v:,.1f}x" for v in d[ratio]]
    fig = px.bar(d, x="examples_per_s", y="variant", orientation="h", text=text,
                 log_x=log, title=title,
                 labels={"examples_per_s": "examples / s", "variant": ""})
    fig.update_traces(textposition="outside", cliponaxis=False)
    fig.update_layout(height=120 + 45 * len(d), margin=dict(l=10, r=40, t=50, b=40))
    if log:
        fig.update_xaxes(**log_ticks("/s"))
    return fig


def epoch_time(df: pd.DataFrame, column: str, *, title: str | None = None) -> go.Figure:
    """Projected epoch time per variant from an ``epoch_s_<N>`` column, log scale."""
    d = df.sort_values(column, ascending=False)
    n = column.removeprefix("epoch_s_")
    fig = px.bar(d, x=column, y="variant", orientation="h", log_x=True,
                 text=[format_duration(v) for v in d[column]],
                 title=title or f"Projected epoch time for {int(n):,} examples",
                 labels={column: "seconds per epoch", "variant": ""})
    fig.update_traces(textposition="outside", cliponaxis=False)
    fig.update_layout(height=120 + 45 * len(d), margin=dict(l=10, r=60, t=50, b=40))
    fig.update_xaxes(**log_ticks("s"))
    return fig


def latency(samples: dict[str, list[float]], *, title: str = "Batch latency") -> go.Figure:
    """Box plot of per-batch latencies (ms), one box per named loader."""
    fig = go.Figure()
    for name, values in samples.items():
        fig.add_trace(go.Box(x=values, name=name, boxpoints=False))
    fig.update_layout(title=title, xaxis_title="ms between batches",
                      showlegend=False, height=120 + 45 * len(samples))
    fig.update_xaxes(**log_ticks("ms"))
    return fig


def step_breakdown(steps: pd.DataFrame, *, title: str = "Where each training step goes") -> go.Figure:
    """Stacked bars per step: waiting for input vs the rest, from ``StepTimer.steps()``."""
    d = steps.reset_index(drop=True)
    x = d.index
    fig = go.Figure([
        go.Bar(x=x, y=1e3 * d["wait_s"], name="waiting for input"),
        go.Bar(x=x, y=1e3 * d["compute_s"], name="compute and the rest"),
    ])
    fig.update_layout(barmode="stack", title=title, xaxis_title="training step (all epochs)",
                      yaxis_title="ms", height=380)
    return fig


def input_share(epochs: pd.DataFrame, *, title: str = "Share of each epoch spent waiting for input") -> go.Figure:
    """Bar per epoch of ``input_share`` from ``StepTimer.epochs()``, as percent."""
    fig = px.bar(epochs, x="epoch", y=epochs["input_share"] * 100, title=title,
                 labels={"y": "% of step time waiting for input"}, text_auto=".0f")
    fig.update_yaxes(range=[0, 100])
    fig.update_xaxes(**integer_ticks())
    fig.update_layout(height=350)
    return fig


def stage_costs(df: pd.DataFrame, *, title: str = "What one pair costs, stage by stage (one core)") -> go.Figure:
    """Bars of ``ms_per_pair`` per stage, one colour per library (``kit.bench.segmentation.profile``)."""
    fig = px.bar(df, x="ms_per_pair", y="stage", color="library", barmode="group", orientation="h",
                 text=[f"{v:.1f}" for v in df["ms_per_pair"]], title=title,
                 labels={"ms_per_pair": "ms per pair", "stage": ""})
    fig.update_traces(textposition="outside", cliponaxis=False)
    fig.update_layout(height=160 + 40 * df["stage"].nunique() * df["library"].nunique() // 2,
                      margin=dict(l=10, r=40, t=50, b=40), yaxis=dict(autorange="reversed"))
    return fig


def segmentation_pair(image, ids, colours, *, title: str = "An image and its mask") -> go.Figure:
    """An image and its class-id mask side by side, the mask drawn in the palette's colours.

    Args:
        image: ``(H, W, 3)`` uint8 (or float in [0, 1]).
        ids: ``(H, W)`` class ids; ids outside the palette (ignored) are drawn white.
        colours: ``(C, 3)`` palette colours.
    """
    import base64
    import io

    import numpy as np
    from PIL import Image
    from plotly.subplots import make_subplots

    image = np.asarray(image)
    if image.dtype != np.uint8:
        image = np.rint(np.clip(image, 0, 1) * 255).astype(np.uint8)
    table = np.full((256, 3), 255, np.uint8)
    table[:len(colours)] = np.asarray(colours, np.uint8)
    mask = table[np.asarray(ids, np.uint8)]

    def png(a):  # embedded as PNG: small in the saved notebook and the HTML export
        buf = io.BytesIO()
        Image.fromarray(a).save(buf, format="PNG")
        return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()

    fig = make_subplots(1, 2, subplot_titles=("image", "class ids, in the palette's colours"))
    fig.add_trace(go.Image(source=png(image)), 1, 1)
    fig.add_trace(go.Image(source=png(mask)), 1, 2)
    fig.update_layout(title=title, height=380, margin=dict(l=10, r=10, t=70, b=10))
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False)
    return fig


def scaling(df: pd.DataFrame, *, title: str = "Training throughput against replicas") -> go.Figure:
    """Examples/s per replica count (``kit.bench.scaling`` rows), one line per variant.

    Dotted: linear scaling from the smallest count. Dashed: what the loader alone
    delivers at that global batch (``input_examples_per_s``), the ceiling no number of
    replicas can pass.
    """
    fig = go.Figure()
    for i, (variant, d) in enumerate(df.sort_values("replicas").groupby("variant", sort=False)):
        colour = px.colors.qualitative.Plotly[i % len(px.colors.qualitative.Plotly)]
        base = d.iloc[0]
        fig.add_trace(go.Scatter(x=d["replicas"], y=d["examples_per_s"], mode="lines+markers",
                                 name=f"{variant}: training", line=dict(color=colour),
                                 text=[f"efficiency {e:.2f}" for e in d["efficiency"]]))
        fig.add_trace(go.Scatter(x=d["replicas"], y=base["examples_per_s"] * d["replicas"] / base["replicas"],
                                 mode="lines", name=f"{variant}: linear", line=dict(color=colour, dash="dot")))
        fig.add_trace(go.Scatter(x=d["replicas"], y=d["input_examples_per_s"], mode="lines",
                                 name=f"{variant}: loader alone", line=dict(color=colour, dash="dash")))
    fig.update_layout(title=title, xaxis_title="replicas", yaxis_title="examples / s", height=420)
    fig.update_yaxes(**log_ticks("/s"))
    fig.update_xaxes(tickmode="array", tickvals=sorted(df["replicas"].unique()))
    return fig


def gains(df: pd.DataFrame, *, title: str = "What the doctor expected, and what the fix measured") -> go.Figure:
    """Grouped bars per fix: ``expected_gain`` (the doctor's) next to ``measured_gain`` (the fix
    applied and measured side by side), log scale, a line at 1x (no change).

    Args:
        df: one row per fix, with ``fix``, ``expected_gain`` and ``measured_gain``.
    """
    long = df.melt(id_vars=["fix"], value_vars=["expected_gain", "measured_gain"],
                   var_name="gain", value_name="factor")
    long["gain"] = long["gain"].map({"expected_gain": "expected (doctor)", "measured_gain": "measured (fix applied)"})
    fig = px.bar(long, x="factor", y="fix", color="gain", barmode="group", orientation="h", log_x=True,
                 text=[f"{v:,.1f}x" for v in long["factor"]], title=title,
                 labels={"factor": "speed-up (x, log scale)", "fix": "", "gain": ""})
    fig.update_xaxes(**log_ticks("x"))
    fig.add_vline(x=1, line_dash="dot", line_color="grey")
    fig.update_traces(textposition="outside", cliponaxis=False)
    fig.update_layout(height=160 + 70 * len(df), margin=dict(l=10, r=60, t=50, b=40),
                      legend=dict(orientation="h", y=-0.2))
    return fig


# --------------------------------------------------------------------------- axes


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _power_label(k: int, unit: str) -> str:
    """1, 10, 100, 1,000, 10,000 then 10⁵ ...; 0.1, 0.01, 0.001 then 10⁻⁴ (with the unit)."""
    if 0 <= k <= 4:
        text = f"{10 ** k:,}"
    elif -3 <= k < 0:
        text = f"{10.0 ** k:.{-k}f}"
    else:
        text = "10" + str(k).translate(_SUPERSCRIPT)
    return f"{text}{unit}" if unit.startswith("/") or unit == "x" else f"{text} {unit}".strip()


def log_ticks(unit: str = "", *, low: int = -4, high: int = 12) -> dict:
    """Axis settings for a log axis: a labelled tick at each power of ten only, with the unit.

    No minor labels ("2", "5" between decades): ``tickvals`` fixes the ticks, so only
    the powers of ten inside the visible range show. Spread into ``update_xaxes`` or
    ``update_yaxes``.
    """
    ks = range(low, high + 1)
    return dict(type="log", tickmode="array", tickvals=[10.0 ** k for k in ks],
                ticktext=[_power_label(k, unit) for k in ks], minor=dict(showgrid=False, ticks=""))


def integer_ticks() -> dict:
    """Axis settings for counts (epochs, replicas, steps): integer ticks only."""
    return dict(tickmode="linear", tick0=0, dtick=1, tickformat="d")


# --------------------------------------------------------------------------- epoch-time comparison


CASE_UNITS = {"spectrogram": "frames", "segmentation": "pairs"}
#: The explorer's scaling choices: the measured efficiency (Amdahl's law beyond it), or one assumed.
_EFFICIENCY_CHOICES = {"measured": None, "linear (1.0)": 1.0, **{f"{e:.1f} assumed": e for e in (0.9, 0.8, 0.7, 0.6, 0.5)}}
_EFFICIENCY_KEYS = {v: k for k, v in _EFFICIENCY_CHOICES.items()}
_BOUND_COLOURS = {"input": "#d62728", "compute": "#1f77b4"}


def _epoch_text(t: pd.DataFrame) -> list[str]:
    kinds = t["efficiency_kind"] if "efficiency_kind" in t.columns else [""] * len(t)
    return [f"{format_duration(s)} ({b}-bound{', efficiency assumed' if k == 'assumed' else ''})"
            for s, b, k in zip(t["epoch_s"], t["bound"], kinds)]


def epoch_comparison(table: pd.DataFrame, *, title: str = "Projected epoch time per configuration") -> go.Figure:
    """Bars of projected epoch time per configuration, one panel per case, coloured by
    what bounds it (input or compute): ``kit.timing.epoch_table`` rows at one scale per case.

    Args:
        table: ``epoch_table`` rows with ``case``, ``variant``, ``examples``, ``replicas``,
            ``epoch_s`` and ``bound``.
    """
    from plotly.subplots import make_subplots

    cases = list(dict.fromkeys(table["case"]))
    titles = []
    for case in cases:
        d = table[table["case"] == case].iloc[0]
        titles.append(f"{case}: {int(d['examples']):,} {CASE_UNITS.get(case, 'examples')}, "
                      f"{int(d['replicas'])} replica(s)")
    heights = [max(2, (table["case"] == c).sum()) for c in cases]
    fig = make_subplots(rows=len(cases), cols=1, subplot_titles=titles, row_heights=heights,
                        vertical_spacing=0.12 if len(cases) > 1 else 0.0)
    shown = set()
    for i, case in enumerate(cases, start=1):
        d = table[table["case"] == case].sort_values("epoch_s", ascending=False)
        for bound in ("input", "compute"):
            b = d[d["bound"] == bound]
            fig.add_trace(go.Bar(x=b["epoch_s"], y=b["variant"], orientation="h", name=f"{bound}-bound",
                                 marker_color=_BOUND_COLOURS[bound], text=_epoch_text(b), textposition="outside",
                                 cliponaxis=False, legendgroup=bound, showlegend=bound not in shown),
                          row=i, col=1)
            shown.add(bound)
        fig.update_yaxes(categoryorder="array", categoryarray=list(d["variant"]), row=i, col=1)
    fig.update_xaxes(**log_ticks("s"))
    fig.update_xaxes(title_text="seconds per epoch", row=len(cases), col=1)  # under the last panel only
    fig.update_layout(title=title, barmode="overlay", height=140 + 42 * len(table),
                      margin=dict(l=10, r=120, t=80, b=40), legend=dict(orientation="h", y=-0.08))
    return fig


def epoch_vs_replicas(table: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Epoch time against replicas, one line per loader: where each line goes flat is
    that loader's ceiling (the dotted line: the loader alone, ``examples / loader_rate``).

    Args:
        table: ``epoch_table`` rows of one case at one ``examples``, several ``replicas``.
    """
    fig = go.Figure()
    palette = px.colors.qualitative.Plotly
    examples = int(table["examples"].iloc[0])
    for i, (variant, d) in enumerate(table.sort_values("replicas").groupby("variant", sort=False)):
        colour = palette[i % len(palette)]
        kinds = d["efficiency_kind"] if "efficiency_kind" in d.columns else pd.Series("measured", index=d.index)
        fig.add_trace(go.Scatter(x=d["replicas"], y=d["epoch_s"], mode="lines+markers", name=variant,
                                 line=dict(color=colour), legendgroup=variant,
                                 marker=dict(symbol=["circle-open" if k == "assumed" else "circle" for k in kinds],
                                             size=9),
                                 text=[f"{variant}, {r} replica(s): {format_duration(s)}, {b}-bound; "
                                       f"efficiency {e:.2f} ({k})"
                                       for r, s, b, e, k in zip(d["replicas"], d["epoch_s"], d["bound"],
                                                                d.get("efficiency", pd.Series(1.0, index=d.index)),
                                                                kinds)],
                                 hoverinfo="text"))
        ceiling = examples / float(d["loader_rate"].iloc[0])
        fig.add_trace(go.Scatter(x=[d["replicas"].min(), d["replicas"].max()], y=[ceiling, ceiling], mode="lines",
                                 line=dict(color=colour, dash="dot", width=1), legendgroup=variant,
                                 showlegend=False, hoverinfo="text",
                                 text=f"{variant} alone: {format_duration(ceiling)}"))
    case = table["case"].iloc[0] if "case" in table.columns else ""
    assumed = "efficiency_kind" in table.columns and (table["efficiency_kind"] == "assumed").any()
    fig.update_layout(title=title or f"{case}: epoch of {examples:,} examples against replicas "
                                     "(dotted: the loader alone, the floor no replica count passes"
                                     + ("; open markers: efficiency assumed, Amdahl's law fitted to the "
                                        "measured counts" if assumed else "") + ")",
                      xaxis_title="replicas", yaxis_title="seconds per epoch", height=450)
    fig.update_yaxes(**log_ticks("s"))
    fig.update_xaxes(**integer_ticks())
    return fig


def machines(rates: pd.DataFrame, *, examples: int = 1_000_000, title: str | None = None) -> go.Figure:
    """Machine against machine: the epoch time each loader alone allows, per machine.

    Args:
        rates: loader rows (``variant``, ``examples_per_s``, ``machine_label``) of
            several machines, e.g. each machine's latest bench from ``kit.results``.
        examples: the epoch to project to.
    """
    d = rates.assign(epoch_s=examples / rates["examples_per_s"])
    fig = go.Figure()
    for label, m in d.groupby("machine_label", sort=False):
        fig.add_trace(go.Bar(x=m["epoch_s"], y=m["variant"], orientation="h", name=label,
                             text=[format_duration(s) for s in m["epoch_s"]], textposition="outside",
                             cliponaxis=False))
    fig.update_layout(title=title or f"The loader alone, machine against machine: epoch of {examples:,} examples",
                      barmode="group", height=160 + 30 * len(d), legend=dict(orientation="h", y=-0.15),
                      margin=dict(l=10, r=100, t=60, b=40))
    fig.update_xaxes(**log_ticks("s"), title_text="seconds per epoch")
    return fig


# --------------------------------------------------------------------------- live and static explorers


def headless() -> bool:
    """True unless a live Jupyter front end (JupyterLab or Notebook 7, through jupyter-server)
    runs this kernel. Headless runs (nbclient, nbconvert, ``kit.report``, plain Python)
    get static figures: a widget there shows nothing in the saved notebook or the HTML.
    ``KIT_WIDGETS=1`` / ``0`` forces either way."""
    import os

    force = os.environ.get("KIT_WIDGETS")
    if force in ("0", "1"):
        return force == "0"
    return "JPY_SESSION_NAME" not in os.environ  # jupyter-server sets it for the kernels it starts


# plotly's FigureWidget front end, loaded so that no kernel message can be lost. plotly 6+
# builds FigureWidget on anywidget, whose front end (0.9.17 and later) gives a widget's
# module 2 seconds to load and initialise; past that it marks the model failed, and every
# later message from the kernel to that model is dropped: the data the figure was built
# with (it follows the widget's opening as separate messages) and every update. plotly's
# module bundles all of plotly.js (about 5 MB); importing it takes longer than 2 s in a
# busy browser (3 to 4 s measured in headless Chromium on a loaded 2-core machine), so the
# figure drew empty axes and never changed (plotly/plotly.py#4998, #5027). This module is
# a few lines: it loads at once, marks the model ready, and imports plotly's own module in
# the background (once per page, shared by every figure), handing it the model and each
# view when it arrives. The messages in between reach the model's state (the kit sends the
# whole figure after each change, see ``_push``), which plotly's view draws from.
_FIGURE_WIDGET_ESM = """
const loaded = (globalThis.__kitPlotlyWidget ??= new Map());
function plotlyModule(model) {
  const key = model.get("_plotly_key");
  if (!loaded.has(key)) {
    const url = URL.createObjectURL(new Blob([model.get("_plotly_esm")], { type: "text/javascript" }));
    loaded.set(key, import(url).finally(() => URL.revokeObjectURL(url)));
  }
  return loaded.get(key);
}
export default () => {
  let plotly;
  return {
    initialize({ model }) {
      plotly = plotlyModule(model).then(async (mod) => {
        const widget = typeof mod.default === "function" ? await mod.default() : mod.default;
        await widget.initialize?.({ model });
        return widget;
      });
      plotly.catch((error) => console.error("[kit] plotly's FigureWidget module failed to load", error));
    },
    async render({ model, el }) {
      const widget = await plotly;
      return widget.render({ model, el });
    },
  };
};
"""


def _figure_widget_class():
    """plotly's ``FigureWidget`` with the front-end module above; plotly's own where its
    bundle is not where plotly 6/7 keeps it."""
    from pathlib import Path

    import plotly
    import plotly.basewidget

    cls = getattr(_figure_widget_class, "cls", None)
    if cls is not None:
        return cls
    bundle = Path(plotly.basewidget.__file__).parent / "package_data" / "widgetbundle.js"
    if not bundle.is_file():
        _figure_widget_class.cls = go.FigureWidget
        return go.FigureWidget
    import traitlets

    cls = type("FigureWidget", (go.FigureWidget,), {
        "__module__": __name__,
        "__doc__": "plotly's FigureWidget whose front end never drops a message (see kit.plots).",
        "_esm": _FIGURE_WIDGET_ESM,
        "_plotly_esm": traitlets.Unicode(bundle.read_text(encoding="utf-8")).tag(sync=True),
        "_plotly_key": traitlets.Unicode(f"plotly {plotly.__version__} {bundle.stat().st_size}").tag(sync=True),
    })
    _figure_widget_class.cls = cls
    return cls


def figure_widget(fig: go.Figure | None = None) -> go.FigureWidget:
    """A ``plotly.graph_objects.FigureWidget`` of ``fig`` (a subclass) whose browser side
    draws the figure and every later change reliably, however long plotly.js takes to
    load (see ``_FIGURE_WIDGET_ESM``). Change it as any FigureWidget; call ``_push`` after."""
    widget = _figure_widget_class()(fig)
    _push(widget)
    return widget


def _push(widget) -> None:
    """Sends a FigureWidget's whole figure (data and layout) as the model's state.

    plotly's view draws from that state when it renders and applies the changes that
    follow as plotly.js updates; the model keeps that state current only from the
    changes it receives after plotly's module has loaded. Sending the whole figure after
    each change makes the state right whatever arrived before, for every view drawn
    later (a scrolled-back cell, a second view of the same widget).
    """
    from copy import deepcopy

    widget._widget_data = deepcopy(widget._data)
    widget._widget_layout = deepcopy(widget._layout_obj._props)
    widget.send_state(["_widget_data", "_widget_layout"])


class _Shown:
    """Shows ``live()`` (widgets) in a live front end, ``static()`` (a plain figure) otherwise."""

    def live(self):
        raise NotImplementedError

    def static(self) -> go.Figure:
        raise NotImplementedError

    def _ipython_display_(self):
        from IPython.display import display

        display(self.static() if headless() else self.live())


class Choice(_Shown):
    """A dropdown over several figures: see ``interactive``."""

    def __init__(self, fig_by_option: dict[str, go.Figure], description: str):
        if not fig_by_option:
            raise ValueError("interactive needs at least one figure")
        self.figures = dict(fig_by_option)
        self.description = description
        self._widget = None

    def live(self):
        import ipywidgets as widgets

        if self._widget is None:
            names = list(self.figures)
            self.figure = figure_widget(self.figures[names[0]])
            self.dropdown = widgets.Dropdown(options=names, value=names[0], description=self.description)
            self.dropdown.observe(lambda change: self.select(change["new"]), names="value")
            self._widget = widgets.VBox([self.dropdown, self.figure])
        return self._widget

    def select(self, name: str) -> None:
        """Shows figure ``name`` in the live figure, in place."""
        self.live()
        new = self.figures[name]
        with self.figure.batch_update():
            self.figure.data = []
            self.figure.add_traces(list(new.data))
            self.figure.layout = new.layout
        _push(self.figure)

    def static(self) -> go.Figure:
        """All figures in one, a plotly dropdown switching between them (works offline)."""
        names = list(self.figures)
        fig = go.Figure(self.figures[names[0]])
        fig.data = []
        spans, start = [], 0
        for name in names:
            traces = list(self.figures[name].data)
            fig.add_traces(traces)
            spans.append((start, start + len(traces)))
            start += len(traces)
        n = start
        buttons = []
        for name, (a, b) in zip(names, spans):
            layout = self.figures[name].layout.to_plotly_json()
            layout.pop("template", None)
            layout.pop("updatemenus", None)
            buttons.append(dict(label=name, method="update",
                                args=[{"visible": [a <= i < b for i in range(n)]}, layout]))
        for i, trace in enumerate(fig.data):
            trace.visible = spans[0][0] <= i < spans[0][1]
        fig.update_layout(updatemenus=[dict(buttons=buttons, direction="down", x=1, xanchor="right", y=1.15,
                                            yanchor="top", showactive=True)])
        return fig


def interactive(fig_by_option: dict[str, go.Figure], *, description: str = "view") -> Choice:
    """A dropdown over several figures.

    In JupyterLab: an ipywidgets dropdown over a ``FigureWidget`` that switches in
    place. In a headless run (nbclient, ``kit.report``, nbconvert) it finishes at once
    and leaves one static figure holding all of them, with plotly's own dropdown, so
    the saved notebook and its HTML show every option offline.
    """
    return Choice(fig_by_option, description)


class EpochExplorer(_Shown):
    """Live controls over the epoch-time model, drawn in one ``FigureWidget`` updated in place.

    Controls: dataset size (log slider, 1e3 to 1e8 examples), replicas (1 to 8), the
    model's compute rate per device (the measured one, or "my step takes N ms at batch
    B"), scaling (the configurations' measured efficiency, Amdahl's law beyond it, or an
    efficiency you assume above one replica), loaders (multi-select) and case. Under the
    figure a line states the regime of the current configuration (the first selected
    loader), the efficiency and its basis, and the best single next change (another
    loader, or another replica count) with its gain. Every figure comes from
    ``kit.epoch_model.epoch_table``, as the notebook's table does.

    ``update()`` is the path every control calls; tests call it directly.

    Args:
        configs: ``kit.bench.compare.configurations`` rows: ``case``, ``variant``,
            ``loader_rate``, ``compute_rate`` (per replica), ``scaling`` and the bases.
        scale: per case, ``{"examples", "replicas"}`` to start from (the users' scale).
    """

    MAX_REPLICAS = 8

    def __init__(self, configs: pd.DataFrame, *, scale: dict | None = None):
        if configs.empty:
            raise ValueError("EpochExplorer needs at least one configuration")
        self.configs = configs.reset_index(drop=True)
        self.scale = scale or {}
        self.cases = list(dict.fromkeys(self.configs["case"]))
        case = self.cases[0]
        start = self.scale.get(case, {})
        self.state = {"case": case, "examples": int(start.get("examples", 1_000_000)),
                      "replicas": int(start.get("replicas", 1)), "step_ms": None, "step_batch": 128,
                      "efficiency": None, "loaders": tuple(self._rows(case)["variant"])}
        self._widget = None
        self.figure = None
        self.message = ""
        self.best: dict | None = None

    # the model -------------------------------------------------------------
    def _rows(self, case: str) -> pd.DataFrame:
        return self.configs[self.configs["case"] == case]

    def compute_rate(self) -> float | None:
        """The per-replica compute rate typed in ("N ms at batch B"), or None: the measured one."""
        from kit.epoch_model import compute_rate_from_step

        s = self.state
        return compute_rate_from_step(s["step_ms"], s["step_batch"]) if s["step_ms"] else None

    def table(self) -> pd.DataFrame:
        """The epoch table of the selected loaders at the current settings (1 to 8 replicas)."""
        from kit.epoch_model import epoch_table

        s = self.state
        rows = self._rows(s["case"])
        rows = rows[rows["variant"].isin(s["loaders"])]
        return epoch_table(rows, examples=s["examples"], replicas=range(1, self.MAX_REPLICAS + 1),
                           compute_rate=self.compute_rate(), efficiency=s["efficiency"])

    def summary(self, table: pd.DataFrame) -> str:
        """The regime of the current configuration and the best next change."""
        from kit.epoch_model import best_next_change

        s = self.state
        self.best = None
        if table.empty:
            return "select at least one loader"
        current_variant = s["loaders"][0]
        at = table[(table["variant"] == current_variant) & (table["replicas"] == s["replicas"])]
        cur = at.iloc[0]
        # One change at a time: another loader at these replicas, or these loaders at another count.
        options = table[(table["replicas"] == s["replicas"]) | (table["variant"] == current_variant)]
        best = self.best = best_next_change(options, at.index[0])
        regime = ("input-bound: more GPUs will not help" if cur["bound"] == "input" else "compute-bound")
        text = (f"{current_variant}, {s['replicas']} replica(s): {format_duration(cur['epoch_s'])} per epoch of "
                f"{s['examples']:,}; {regime}; efficiency {cur['efficiency']:.2f} ({cur['efficiency_kind']})")
        if best:
            text += (f". Best next change: {best['change']}, {format_duration(best['to_s'])} "
                     f"({best['gain']:,.1f}x faster"
                     + (", efficiency assumed" if best["efficiency_kind"] == "assumed" else "") + ")")
        else:
            text += ". Nothing selected is faster"
        return text

    def update(self, **changes) -> None:
        """Applies control values (``case``, ``examples``, ``replicas``, ``step_ms``,
        ``step_batch``, ``efficiency``, ``loaders``) and redraws the figure in place."""
        unknown = set(changes) - set(self.state)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; known: {sorted(self.state)}")
        eff = changes.get("efficiency")
        if eff is not None and not 0 < float(eff) <= 1:
            raise ValueError(f"efficiency must be None (measured) or in (0, 1], got {eff!r}")
        if "case" in changes and changes["case"] != self.state["case"]:
            case = changes["case"]
            if case not in self.cases:
                raise ValueError(f"case must be one of {self.cases}, got {case!r}")
            start = self.scale.get(case, {})
            self.state.update(examples=int(start.get("examples", self.state["examples"])),
                              replicas=int(start.get("replicas", 1)),
                              loaders=tuple(self._rows(case)["variant"]))
        self.state.update(changes)
        self.state["loaders"] = tuple(v for v in self._rows(self.state["case"])["variant"]
                                      if v in self.state["loaders"])
        t = self.table()
        self.message = self.summary(t)
        at = t[t["replicas"] == self.state["replicas"]].sort_values("epoch_s", ascending=False)
        fig = self._figure()
        with fig.batch_update():
            bar = fig.data[0]
            bar.x = list(at["epoch_s"])
            bar.y = list(at["variant"])
            bar.text = _epoch_text(at)
            bar.marker.color = [_BOUND_COLOURS[b] for b in at["bound"]]
            fig.layout.title.text = (f"{self.state['case']}: epoch of {self.state['examples']:,} "
                                     f"{CASE_UNITS.get(self.state['case'], 'examples')}, "
                                     f"{self.state['replicas']} replica(s)")
            fig.layout.height = 160 + 45 * max(1, len(at))
        if self._widget is not None:
            _push(fig)
            self._text.value = f"<b>{self.message}</b>"
            self._sync_controls()

    # drawing ---------------------------------------------------------------
    def _figure(self) -> go.Figure:
        if self.figure is None:  # a plain figure until ``live()`` turns it into a FigureWidget
            self.figure = go.Figure(go.Bar(orientation="h", textposition="outside", cliponaxis=False))
            self.figure.update_xaxes(**log_ticks("s"), title_text="seconds per epoch (red: input-bound)")
            self.figure.update_layout(margin=dict(l=10, r=140, t=50, b=40))
        return self.figure

    def _sync_controls(self) -> None:
        c, s = self._controls, self.state
        self._syncing = True
        try:
            c["case"].value = s["case"]
            c["loaders"].options = list(self._rows(s["case"])["variant"])
            c["loaders"].value = s["loaders"]
            c["examples"].value = s["examples"]
            c["replicas"].value = s["replicas"]
            key = _EFFICIENCY_KEYS.get(s["efficiency"], f"{s['efficiency']} assumed")
            if key not in self._choices:  # an efficiency set by update(), not by the dropdown
                self._choices[key] = s["efficiency"]
                c["efficiency"].options = list(self._choices)
            c["efficiency"].value = key
        finally:
            self._syncing = False

    def live(self):
        import ipywidgets as widgets

        if self._widget is not None:
            return self._widget
        s = self.state
        self._syncing = False
        self._choices = dict(_EFFICIENCY_CHOICES)
        c = self._controls = {
            "case": widgets.Dropdown(options=self.cases, value=s["case"], description="case"),
            "examples": widgets.FloatLogSlider(value=s["examples"], base=10, min=3, max=8, step=0.25,
                                               description="examples", readout_format=".3s",
                                               continuous_update=False),
            "replicas": widgets.IntSlider(value=s["replicas"], min=1, max=self.MAX_REPLICAS, description="replicas",
                                          continuous_update=False),
            "efficiency": widgets.Dropdown(options=list(self._choices),
                                           value=_EFFICIENCY_KEYS.get(s["efficiency"], "measured"),
                                           description="scaling"),
            "step_ms": widgets.FloatText(value=0.0, description="my step (ms, 0: measured)",
                                         style={"description_width": "initial"}),
            "step_batch": widgets.IntText(value=s["step_batch"], description="at batch",
                                          style={"description_width": "initial"}),
            "loaders": widgets.SelectMultiple(options=list(self._rows(s["case"])["variant"]), value=s["loaders"],
                                              description="loaders", rows=7),
        }

        def on(name, convert):
            def handler(change):
                if not self._syncing:
                    self.update(**{name: convert(change["new"])})
            c[name].observe(handler, names="value")

        on("case", str)
        on("examples", lambda v: int(round(v)))
        on("replicas", int)
        on("efficiency", lambda v: self._choices[v])
        on("step_ms", lambda v: float(v) if v and v > 0 else None)
        on("step_batch", lambda v: max(1, int(v)))
        on("loaders", tuple)
        self.update()  # the current state drawn into the plain figure, which the FigureWidget starts from
        self.figure = figure_widget(self.figure)
        self._text = widgets.HTML(f"<b>{self.message}</b>")
        box = widgets.VBox([
            widgets.HBox([c["case"], c["examples"], c["replicas"]]),
            widgets.HBox([c["efficiency"], c["step_ms"], c["step_batch"]]),
            widgets.HBox([c["loaders"], self.figure]),
            self._text,
        ])
        self._widget = box
        return box

    def static(self) -> go.Figure:
        """The same exploration without a kernel: see ``epoch_explorer_static``."""
        s = self.state
        return epoch_explorer_static(self._rows(s["case"])[lambda d: d["variant"].isin(s["loaders"])],
                                     examples=s["examples"], replicas=s["replicas"],
                                     compute_rate=self.compute_rate(), efficiency=s["efficiency"])


def epoch_explorer(configs: pd.DataFrame, *, scale: dict | None = None) -> EpochExplorer:
    """Live controls over projected epoch times (see ``EpochExplorer``); static when headless."""
    ex = EpochExplorer(configs, scale=scale)
    ex.update()
    return ex


def epoch_explorer_static(configs: pd.DataFrame, *, examples: int, replicas: int = 1, compute_rate=None,
                          efficiency=None, title: str | None = None) -> go.Figure:
    """Projected epoch time per loader with plotly's own controls, for the HTML export.

    A slider sets the dataset size (1e3 to 1e8 examples, and ``examples``), a dropdown
    the replicas (1 to 8); every value is precomputed into the figure, so the page
    stays interactive offline with no kernel. ``configs`` rows are of one case. The efficiency
    at each replica count is the configurations' ``scaling`` (``efficiency`` overrides it), as in
    ``kit.epoch_model.epoch_table``; an assumed one is said in the bar's text.
    """
    from kit.epoch_model import epoch_table

    if configs.empty:
        raise ValueError("epoch_explorer_static needs at least one configuration")
    case = configs["case"].iloc[0] if "case" in configs.columns else ""
    sizes = sorted({int(round(10 ** (k / 2))) for k in range(6, 17)} | {int(examples)})
    counts = list(range(1, EpochExplorer.MAX_REPLICAS + 1))
    t = epoch_table(configs, examples=sizes, replicas=counts, compute_rate=compute_rate, efficiency=efficiency)
    order = list(t[(t["examples"] == examples) & (t["replicas"] == replicas)]
                 .sort_values("epoch_s", ascending=False)["variant"])
    fig = go.Figure()
    for r in counts:  # one trace per replica count; the dropdown shows one
        d = t[(t["replicas"] == r) & (t["examples"] == examples)].set_index("variant").loc[order]
        fig.add_trace(go.Bar(x=d["epoch_s"], y=order, orientation="h", visible=r == replicas,
                             name=f"{r} replica(s)", text=_epoch_text(d), textposition="outside", cliponaxis=False,
                             marker_color=[_BOUND_COLOURS[b] for b in d["bound"]]))
    steps = []
    for n in sizes:  # each step restyles every trace, so the dropdown's choice stays
        per = [t[(t["replicas"] == r) & (t["examples"] == n)].set_index("variant").loc[order] for r in counts]
        steps.append(dict(method="restyle", label=f"{n:,}",
                          args=[{"x": [list(d["epoch_s"]) for d in per], "text": [_epoch_text(d) for d in per],
                                 "marker.color": [[_BOUND_COLOURS[b] for b in d["bound"]] for d in per]}]))
    unit = CASE_UNITS.get(case, "examples")
    fig.update_layout(
        title=title or f"{case}: projected epoch time per loader (red: input-bound, blue: compute-bound)",
        sliders=[dict(active=sizes.index(int(examples)), steps=steps, currentvalue=dict(prefix=f"{unit} per epoch: "),
                      pad=dict(t=50))],
        updatemenus=[dict(buttons=[dict(label=f"{r} replica(s)", method="update",
                                        args=[{"visible": [q == r for q in counts]}]) for r in counts],
                          active=counts.index(replicas), direction="down", x=1, xanchor="right", y=1.18,
                          yanchor="top")],
        height=260 + 40 * len(order), margin=dict(l=10, r=140, t=90, b=40), showlegend=False)
    fig.update_xaxes(**log_ticks("s"), title_text="seconds per epoch")
    return fig


def epoch_order(orders: dict[str, "pd.Series | list"], *, title: str = "Which frame each epoch reads when",
                max_points: int = 4000) -> go.Figure:
    """Frame number against position in the epoch, one panel per named order: a fully
    random order fills the square; a block order stays near the diagonal band by window.

    Args:
        orders: name -> the row numbers of one epoch, in the order read.
        max_points: points drawn per order (evenly thinned), so large epochs stay light.
    """
    frames = []
    for name, rows in orders.items():
        rows = list(rows)
        step = max(1, len(rows) // max_points)
        frames.append(pd.DataFrame({"position in the epoch": range(0, len(rows), step),
                                    "frame read": rows[::step], "order": name}))
    d = pd.concat(frames, ignore_index=True)
    fig = px.scatter(d, x="position in the epoch", y="frame read", facet_col="order", title=title)
    fig.update_traces(marker=dict(size=3))
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=60, b=40))
    return fig
