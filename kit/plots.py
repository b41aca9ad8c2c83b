"""Plotly figures as pure functions of the kit's DataFrames.

No TensorFlow here: these functions take the tables that ``kit.timing`` and
``kit.bench`` return and give back ``plotly.graph_objects.Figure`` objects, which
render in JupyterLab, in a headless run's saved output and in the HTML export.
"""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go


def _fmt_duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


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
    return fig


def epoch_time(df: pd.DataFrame, column: str, *, title: str | None = None) -> go.Figure:
    """Projected epoch time per variant from an ``epoch_s_<N>`` column, log scale."""
    d = df.sort_values(column, ascending=False)
    n = column.removeprefix("epoch_s_")
    fig = px.bar(d, x=column, y="variant", orientation="h", log_x=True,
                 text=[_fmt_duration(v) for v in d[column]],
                 title=title or f"Projected epoch time for {int(n):,} examples",
                 labels={column: "seconds per epoch", "variant": ""})
    fig.update_traces(textposition="outside", cliponaxis=False)
    fig.update_layout(height=120 + 45 * len(d), margin=dict(l=10, r=60, t=50, b=40))
    return fig


def latency(samples: dict[str, list[float]], *, title: str = "Batch latency") -> go.Figure:
    """Box plot of per-batch latencies (ms), one box per named loader."""
    fig = go.Figure()
    for name, values in samples.items():
        fig.add_trace(go.Box(x=values, name=name, boxpoints=False))
    fig.update_layout(title=title, xaxis_title="ms between batches", xaxis_type="log",
                      showlegend=False, height=120 + 45 * len(samples))
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
    fig.update_layout(height=350)
    return fig


def interactive(fig_by_option: dict[str, go.Figure], *, description: str = "view"):
    """A dropdown over several static figures (ipywidgets), for JupyterLab.

    The figures themselves stay ordinary plotly figures, so a headless run and the
    HTML export still show the first one; the widget is a layer on top.
    """
    import ipywidgets as widgets

    names = list(fig_by_option)
    out = widgets.Output()
    choice = widgets.Dropdown(options=names, value=names[0], description=description)

    def show(name):
        out.clear_output(wait=True)
        with out:
            fig_by_option[name].show()

    choice.observe(lambda change: show(change["new"]), names="value")
    show(names[0])
    return widgets.VBox([choice, out])


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
    fig.update_layout(title=title, xaxis_title="replicas", yaxis_title="examples / s", yaxis_type="log",
                      height=420)
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
    fig.add_vline(x=1, line_dash="dot", line_color="grey")
    fig.update_traces(textposition="outside", cliponaxis=False)
    fig.update_layout(height=160 + 70 * len(df), margin=dict(l=10, r=60, t=50, b=40),
                      legend=dict(orientation="h", y=-0.2))
    return fig
