"""The interactive layer over ``kit.plots``: in JupyterLab, ipywidgets controls over a plotly
``FigureWidget`` updated in place; headless and in the HTML export, the same view as one static
figure with plotly's own sliders and dropdowns. No TensorFlow here.
"""

from __future__ import annotations

import functools
import os
from copy import deepcopy
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import traitlets

from kit.plots import BOUND_COLOURS, epoch_text, log_ticks
from kit.timing.epoch_model import best_next_change, compute_rate_from_step, epoch_table
from kit.util import format_duration

#: The explorer's scaling choices: the measured efficiency (Amdahl's law beyond it), or one assumed.
_EFFICIENCY_CHOICES = {"measured": None, "linear (1.0)": 1.0, **{f"{e:.1f} assumed": e for e in (0.9, 0.8, 0.7, 0.6, 0.5)}}
_EFFICIENCY_KEYS = {v: k for k, v in _EFFICIENCY_CHOICES.items()}


def headless() -> bool:
    """True unless a live Jupyter front end runs this kernel (headless runs get static figures: a
    widget shows nothing in a saved notebook). ``KIT_WIDGETS=1`` / ``0`` forces either way."""
    force = os.environ.get("KIT_WIDGETS")
    if force in ("0", "1"):
        return force == "0"
    return "JPY_SESSION_NAME" not in os.environ  # jupyter-server sets it for the kernels it starts


# plotly's FigureWidget front end, loaded so that no kernel message is lost: anywidget gives a
# widget's module 2 seconds to load, then drops every later message to it, and plotly's module
# (all of plotly.js) can take longer, leaving empty axes (plotly/plotly.py#4998, #5027). This
# module loads at once and imports plotly's in the background (once per page), handing it the
# model and each view; the state in between is whole (``_push``).
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


@functools.cache
def _figure_widget_class():
    """plotly's ``FigureWidget`` with the front-end module above; plotly's own where its
    bundle is not where plotly 6/7 keeps it."""
    import plotly.basewidget  # keeps kit.notebook.explorer light: anywidget (seconds); only a live widget needs it

    bundle = Path(plotly.basewidget.__file__).parent / "package_data" / "widgetbundle.js"
    if not bundle.is_file():
        return go.FigureWidget
    return type("FigureWidget", (go.FigureWidget,), {
        "__module__": __name__,
        "__doc__": "plotly's FigureWidget whose front end never drops a message (see kit.notebook.explorer).",
        "_esm": _FIGURE_WIDGET_ESM,
        "_plotly_esm": traitlets.Unicode(bundle.read_text(encoding="utf-8")).tag(sync=True),
        "_plotly_key": traitlets.Unicode(f"plotly {plotly.__version__} {bundle.stat().st_size}").tag(sync=True),
    })


def figure_widget(fig: go.Figure | None = None) -> go.FigureWidget:
    """A ``FigureWidget`` of ``fig`` whose browser side draws it and every later change however long
    plotly.js takes to load (``_FIGURE_WIDGET_ESM``); call ``_push`` after each change."""
    widget = _figure_widget_class()(fig)
    _push(widget)
    return widget


def _push(widget) -> None:
    """Sends a FigureWidget's whole figure as the model's state, which plotly's view draws from: right
    whatever arrived before plotly's module loaded, for every view drawn later."""
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
        from IPython.display import display  # keeps kit.notebook.explorer light: IPython; looked up when shown

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
        import ipywidgets as widgets  # keeps kit.notebook.explorer light: ipywidgets, only the live widgets need it

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
    """A dropdown over several figures: live, a ``FigureWidget`` switched in place; headless, one
    static figure holding all of them with plotly's own dropdown."""
    return Choice(fig_by_option, description)


class EpochExplorer(_Shown):
    """Live controls over the epoch-time model (``kit.timing.epoch_table``), drawn in one figure.

    Controls: dataset size, replicas (1 to 8), the compute rate per device (measured, or "my step
    takes N ms at batch B"), scaling, loaders and case. Under the figure, the first selected loader's
    regime and the best single next change with its gain. Every control calls ``update()``.

    Args:
        configs: ``kit.timing.configurations`` rows.
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
        self.figure: go.Figure | go.FigureWidget | None = None
        self.message = ""
        self.best: dict | None = None

    def _rows(self, case: str) -> pd.DataFrame:
        return self.configs[self.configs["case"] == case]

    def compute_rate(self) -> float | None:
        """The per-replica compute rate typed in ("N ms at batch B"), or None: the measured one."""
        s = self.state
        return compute_rate_from_step(s["step_ms"], s["step_batch"]) if s["step_ms"] else None

    def table(self) -> pd.DataFrame:
        """The epoch table of the selected loaders at the current settings (1 to 8 replicas)."""
        s = self.state
        rows = self._rows(s["case"])
        rows = rows[rows["variant"].isin(s["loaders"])]
        return epoch_table(rows, examples=s["examples"], replicas=range(1, self.MAX_REPLICAS + 1),
                           compute_rate=self.compute_rate(), efficiency=s["efficiency"])

    def summary(self, table: pd.DataFrame) -> str:
        """The regime of the current configuration and the best next change."""
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
            bar.text = epoch_text(at)
            bar.marker.color = [BOUND_COLOURS[b] for b in at["bound"]]
            fig.layout.title.text = (f"{self.state['case']}: epoch of {self.state['examples']:,} "
                                     f"{unit_of(self.configs, self.state['case'])}, "
                                     f"{self.state['replicas']} replica(s)")
            fig.layout.height = 160 + 45 * max(1, len(at))
        if self._widget is not None:
            _push(fig)
            self._text.value = f"<b>{self.message}</b>"
            self._sync_controls()

    def _figure(self) -> go.Figure:
        if self.figure is None:  # a plain figure until ``live()`` turns it into a FigureWidget
            self.figure = go.Figure(go.Bar(orientation="h", textposition="outside", cliponaxis=False))
            self.figure.update_xaxes(**log_ticks("s"), title_text="seconds per epoch (red: input-bound)")
            self.figure.update_layout(margin=dict(l=10, r=260, t=50, b=40))
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
        import ipywidgets as widgets  # keeps kit.notebook.explorer light: ipywidgets, only the live widgets need it

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
    """Projected epoch time per loader of one case's ``configs``, with plotly's own controls for the
    HTML export: a slider for the dataset size (1e3 to 1e8 and ``examples``), a dropdown for the
    replicas (1 to 8), every value precomputed (``kit.timing.epoch_table``)."""
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
                             name=f"{r} replica(s)", text=epoch_text(d), textposition="outside", cliponaxis=False,
                             marker_color=[BOUND_COLOURS[b] for b in d["bound"]]))
    steps = []
    for n in sizes:  # each step restyles every trace, so the dropdown's choice stays
        per = [t[(t["replicas"] == r) & (t["examples"] == n)].set_index("variant").loc[order] for r in counts]
        steps.append(dict(method="restyle", label=f"{n:,}",
                          args=[{"x": [list(d["epoch_s"]) for d in per], "text": [epoch_text(d) for d in per],
                                 "marker.color": [[BOUND_COLOURS[b] for b in d["bound"]] for d in per]}]))
    units = unit_of(configs, case)
    fig.update_layout(
        title=title or f"{case}: projected epoch time per loader (red: input-bound, blue: compute-bound)",
        sliders=[dict(active=sizes.index(int(examples)), steps=steps, currentvalue=dict(prefix=f"{units} per epoch: "),
                      pad=dict(t=50))],
        updatemenus=[dict(buttons=[dict(label=f"{r} replica(s)", method="update",
                                        args=[{"visible": [q == r for q in counts]}]) for r in counts],
                          active=counts.index(replicas), direction="down", x=1, xanchor="right", y=1.18,
                          yanchor="top")],
        height=260 + 40 * len(order), margin=dict(l=10, r=260, t=90, b=40), showlegend=False)
    fig.update_xaxes(**log_ticks("s"), title_text="seconds per epoch")
    return fig


def unit_of(configs: pd.DataFrame, case: str) -> str:
    """What one example of ``case`` is (``"frames"``), from the ``unit`` column that
    ``kit.timing.configurations`` gives its rows; ``"examples"`` where the table has none."""
    if "unit" not in configs.columns:
        return "examples"
    units = configs.loc[configs["case"] == case, "unit"].dropna() if "case" in configs.columns else configs["unit"]
    return str(units.iloc[0]) if len(units) else "examples"
