"""Plotly figures as pure functions of the tables ``kit.timing`` and ``kit.bench`` return: each takes
what it draws as arguments. No TensorFlow. The interactive layer over them is ``kit.notebook.explorer``.
"""

from __future__ import annotations

import base64
import io
from typing import Mapping

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from PIL import Image
from plotly.subplots import make_subplots

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
    'epoch_comparison',
    'epoch_scenarios',
    'epoch_vs_replicas',
    'epoch_vs_layout',
    'machines',
    'epoch_order',
]


def throughput(df: pd.DataFrame, *, title: str = "Loader throughput", log: bool = True,
               ratio: str | None = None, in_order: bool = False) -> go.Figure:
    """Bar chart of ``examples_per_s`` per ``variant``; ``ratio`` names an ``x_<name>`` column that
    labels the bars; ``in_order``: bars in ``df``'s order, top to bottom, not by speed."""
    d = df.iloc[::-1] if in_order else df.sort_values("examples_per_s")
    text = None
    if ratio is not None:
        text = [f"{v:,.1f}x" for v in d[ratio]]
    fig = px.bar(d, x="examples_per_s", y="variant", orientation="h", text=text,
                 log_x=log, title=title,
                 labels={"examples_per_s": "examples / s", "variant": ""})
    fig.update_traces(textposition="outside", cliponaxis=False)
    fig.update_layout(height=120 + 45 * len(d), margin=dict(l=10, r=40, t=50, b=40))
    fig.update_yaxes(categoryorder="array", categoryarray=list(d["variant"]))
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


def step_breakdown(steps: pd.DataFrame, *, title: str = "Where each training step goes", warmup: int = 1) -> go.Figure:
    """Stacked bars per step: waiting for input vs the rest, from ``StepTimer.steps()`` (or
    ``Measurement.steps()``), the first ``warmup`` steps of each epoch left out (tracing, buffers filling)."""
    d = steps
    if warmup and "step" in d.columns:
        d = d[d["step"] >= warmup]
    d = d.reset_index(drop=True)
    x = d.index
    fig = go.Figure([
        go.Bar(x=x, y=1e3 * d["wait_s"], name="waiting for input"),
        go.Bar(x=x, y=1e3 * d["compute_s"], name="compute and the rest"),
    ])
    fig.update_layout(barmode="stack", title=title,
                      xaxis_title="training step (all epochs)" + (f"; the first {warmup} of each left out" if warmup else ""),
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
    """An image (``(H, W, 3)`` uint8, or float in [0, 1]) and its class ids ``(H, W)`` side by side,
    the ids drawn in the palette's ``(C, 3)`` colours (ids outside it white)."""
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
    """Examples/s per replica count (``kit.bench.scaling`` rows), one line per variant; dotted: linear
    scaling from the smallest count; dashed: the loader alone (``input_examples_per_s``), the ceiling."""
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
    """Grouped bars per ``fix``: ``expected_gain`` (the doctor's) next to ``measured_gain``, log scale,
    a line at 1x."""
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
    """Settings for a log axis (spread into ``update_xaxes``): a labelled tick at each power of ten
    only, with the unit, no minor labels."""
    ks = range(low, high + 1)
    return dict(type="log", tickmode="array", tickvals=[10.0 ** k for k in ks],
                ticktext=[_power_label(k, unit) for k in ks], minor=dict(showgrid=False, ticks=""))


def integer_ticks() -> dict:
    """Axis settings for counts (epochs, replicas, steps): integer ticks only."""
    return dict(tickmode="linear", tick0=0, dtick=1, tickformat="d")


# --------------------------------------------------------------------------- epoch-time comparison


BOUND_COLOURS = {"input": "#d62728", "compute": "#1f77b4", "input or compute": "#9467bd"}


def epoch_text(t: pd.DataFrame) -> list[str]:
    """Bar labels: each epoch's duration, what bounds it, and whether its efficiency was assumed."""
    kinds = t["efficiency_kind"] if "efficiency_kind" in t.columns else [""] * len(t)
    return [f"{format_duration(s)} ({b}-bound{', efficiency assumed' if k == 'assumed' else ''})"
            for s, b, k in zip(t["epoch_s"], t["bound"], kinds)]


def epoch_comparison(table: pd.DataFrame, *, units: Mapping[str, str] | None = None,
                     title: str = "Projected epoch time per configuration") -> go.Figure:
    """Bars of projected epoch time per configuration, one panel per case, coloured by what bounds it.

    Args:
        table: ``kit.timing.epoch_table`` rows at one scale per case: ``case``, ``variant``,
            ``examples``, ``replicas``, ``epoch_s``, ``bound``.
        units: what one example of each case is (``{"spectrogram": "frames"}``); None: the table's
            ``unit`` column (``kit.timing.configurations`` gives one), else "examples".
    """
    cases = list(dict.fromkeys(table["case"]))
    titles = []
    for case in cases:
        d = table[table["case"] == case].iloc[0]
        what = (units or {}).get(case) or (d["unit"] if isinstance(d.get("unit"), str) else "examples")
        titles.append(f"{case}: {int(d['examples']):,} {what}, {int(d['replicas'])} replica(s)")
    heights = [max(2, (table["case"] == c).sum()) for c in cases]
    fig = make_subplots(rows=len(cases), cols=1, subplot_titles=titles, row_heights=heights,
                        vertical_spacing=0.12 if len(cases) > 1 else 0.0)
    shown = set()
    for i, case in enumerate(cases, start=1):
        d = table[table["case"] == case].sort_values("epoch_s", ascending=False)
        for bound in ("input", "compute"):
            b = d[d["bound"] == bound]
            fig.add_trace(go.Bar(x=b["epoch_s"], y=b["variant"], orientation="h", name=f"{bound}-bound",
                                 marker_color=BOUND_COLOURS[bound], text=epoch_text(b), textposition="outside",
                                 cliponaxis=False, legendgroup=bound, showlegend=bound not in shown),
                          row=i, col=1)
            shown.add(bound)
        fig.update_yaxes(categoryorder="array", categoryarray=list(d["variant"]), row=i, col=1)
    fig.update_xaxes(**log_ticks("s"))
    fig.update_xaxes(title_text="seconds per epoch", row=len(cases), col=1)  # under the last panel only
    fig.update_layout(title=title, barmode="overlay", height=140 + 42 * len(table),
                      margin=dict(l=10, r=260, t=80, b=40), legend=dict(orientation="h", y=-0.08))
    return fig


def epoch_scenarios(table: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Each loader's epoch in each scenario (``kit.timing.gpu.scenarios`` rows), the first shown and
    buttons for the others or all; bars coloured by ``bound_range``, whiskers over an assumed rate's range."""
    names = list(dict.fromkeys(table["scenario"]))
    first = table[table["scenario"] == names[0]].sort_values("epoch_s", ascending=False)
    order = list(first["variant"])
    fig = go.Figure()
    owner, notes = [], {}
    for k, name in enumerate(names):
        d = table[table["scenario"] == name].set_index("variant").reindex(order).dropna(subset=["epoch_s"])
        ranged = d["epoch_max_s"] > 1.01 * d["epoch_min_s"]
        notes[name] = [dict(x=float(np.log10(max(s, hi))), y=v, xanchor="left", xshift=6, showarrow=False,
                            font=dict(size=11), yshift=(18 if len(names) > 1 else 0) * (k - 0.5),  # "both": grouped, the first at the bottom
                            text=f"{format_duration(s)} ({r}-bound"
                                 + (f"; {format_duration(lo)}-{format_duration(hi)} assumed" if g else "") + ")")
                       for v, s, r, g, lo, hi in zip(d.index, d["epoch_s"], d["bound_range"], ranged,
                                                     d["epoch_min_s"], d["epoch_max_s"])]
        for bound in ("input", "input or compute", "compute"):
            b = d[d["bound_range"] == bound]
            if b.empty:
                continue
            fig.add_trace(go.Bar(x=b["epoch_s"], y=list(b.index), orientation="h", name=f"{name}: {bound}-bound",
                                 marker_color=BOUND_COLOURS[bound], opacity=1.0 if k == 0 else 0.6,
                                 visible=k == 0, offsetgroup=str(k),
                                 error_x=dict(type="data", symmetric=False, array=b["epoch_max_s"] - b["epoch_s"],
                                              arrayminus=b["epoch_s"] - b["epoch_min_s"],
                                              visible=bool(ranged[b.index].any()))))
            owner.append(name)
    buttons = [dict(label=name, method="update",
                    args=[{"visible": [o == name for o in owner]},
                          {"barmode": "overlay", "annotations": [dict(n, yshift=0) for n in notes[name]]}])
               for name in names]
    buttons.append(dict(label="both", method="update",
                        args=[{"visible": [True] * len(owner)},
                              {"barmode": "group", "annotations": [n for name in names for n in notes[name]]}]))
    examples, replicas = int(table["examples"].iloc[0]), int(table["replicas"].iloc[0])
    fig.update_yaxes(categoryorder="array", categoryarray=order)
    fig.update_xaxes(title_text="seconds per epoch", **log_ticks("s"))
    fig.update_layout(title=dict(text=title or f"{examples:,} examples on {replicas} replicas: the user's GPUs "
                                               f"and this machine", y=0.98, yanchor="top"),
                      annotations=[dict(n, yshift=0) for n in notes[names[0]]],
                      barmode="overlay", height=240 + 60 * len(order), margin=dict(l=10, r=330, t=120, b=40),
                      updatemenus=[dict(type="buttons", direction="right", buttons=buttons, x=0, xanchor="left",
                                        y=1.03, yanchor="bottom", active=0)],
                      legend=dict(orientation="h", y=-0.12))
    return fig


def epoch_vs_replicas(table: pd.DataFrame, *, title: str | None = None) -> go.Figure:
    """Epoch time against replicas, one line per loader (``epoch_table`` rows of one case at one
    ``examples``); dotted: the loader alone, the floor no replica count passes."""
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


def epoch_vs_layout(table: pd.DataFrame, fit, *, target_s: float, reached: int | None, examples: int = 1_000_000,
                    title: str | None = None) -> go.Figure:
    """The generator's epoch against frames per file: the measured layouts (``table``, from
    ``kit.spectrogram.layouts.epoch_table``), their ``fit``, the user's epoch ``target_s`` (dashed) and
    ``reached``, the frames per file where the fit reaches it (None: nowhere)."""
    top = max(float(table["frames_per_file"].max()), float(reached or 0)) * 2
    xs = np.geomspace(max(1.0, float(table["frames_per_file"].min()) / 2), top, 60)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=xs, y=fit.epoch_s(xs, examples), mode="lines", name="fitted: " + fit.basis,
                             line=dict(color="#636efa"), hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=table["frames_per_file"], y=table["epoch_s"], mode="markers", name="measured",
                             marker=dict(size=10, color="#ef553b"),
                             text=[f"{n:,} frames per file: {format_duration(e)} per epoch; read amplification "
                                   + (f"{a:,.0f}x" if pd.notna(a) else "not counted")
                                   for n, e, a in zip(table["frames_per_file"], table["epoch_s"],
                                                      table.get("amplification", pd.Series(np.nan, index=table.index)))],
                             hoverinfo="text"))
    fig.add_trace(go.Scatter(x=[xs[0], xs[-1]], y=[target_s, target_s], mode="lines",
                             name=f"the user's epoch: {format_duration(target_s)}",
                             line=dict(color="#00cc96", dash="dash")))
    if reached is not None:
        fig.add_trace(go.Scatter(x=[reached], y=[target_s], mode="markers+text", name=f"reached at {reached:,} "
                                 "frames per file", marker=dict(symbol="star", size=14, color="#00cc96"),
                                 text=[f"{reached:,} frames per file"], textposition="top left"))
    fig.update_layout(title=title or f"The generator's epoch of {examples:,} frames against the files' layout",
                      xaxis_title="frames per file (read amplification: each frame reads its whole file)",
                      yaxis_title="seconds per epoch", height=500,
                      legend=dict(orientation="h", yanchor="top", y=-0.2, x=0))
    fig.update_xaxes(type="log")
    fig.update_yaxes(**log_ticks("s"))
    return fig


def machines(rates: pd.DataFrame, *, examples: int = 1_000_000, title: str | None = None) -> go.Figure:
    """Machine against machine: the epoch of ``examples`` each loader alone allows, from loader rows
    (``variant``, ``examples_per_s``, ``machine_label``) of several machines."""
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


def epoch_order(orders: dict[str, "pd.Series | list"], *, title: str = "Which frame each epoch reads when",
                max_points: int = 4000) -> go.Figure:
    """Frame read against position in the epoch, one panel per named order (name -> the row numbers
    of one epoch, in the order read), thinned to ``max_points`` per order."""
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
