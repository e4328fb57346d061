"""The sizing app's figures: days against GPUs, memory of the top layouts, scaling over
nodes (predicted and measured), and the fine-tune ladder."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..review import Results, finetune_ladder, layout_memory, scaling_series
from ..review.format import days_text, human_count
from ..review.series import sizing_series
from ..training.memory import MEMORY_TERMS
from .base import DASHES, LABEL_BOX, SCENARIO_COLOURS, SYMBOLS, _fig, _legend_below, _named, _pow2_ticks, _runs
from .tables import frame_table

#: colours of :data:`llmcost.training.memory.MEMORY_TERMS`, in its order (bottom of the stack
#: first)
MEMORY_COLOURS = ("#4c78a8", "#9ecae9", "#72b7b2", "#b279a2", "#f58518", "#e45756", "#54a24b",
                  "#bab0ac")


def _memory_frame(results: Results) -> pd.DataFrame:
    df = layout_memory(results)
    if df.empty:
        return df
    # the weights bar is the dense part, the routed experts (MoE) stacked on it, so the stack
    # is every component of the total once
    return df.assign(weights_gb=df["weights_gb"] - df.get("expert_weights_gb", 0.0))


def memory_stack(results: Results, *, compare=(), label=None) -> go.Figure:
    """Memory per GPU by component for the top layouts, against the GPU's capacity. Compared
    scenarios: the stacks side by side, grouped by scenario."""
    runs = [(lab, r, _memory_frame(r)) for lab, r in _runs(results, compare, label)]
    fig = _fig("Memory per GPU of the top layouts (GB)", barmode="stack", yaxis_title="GB",
               height=400)
    shown = [(lab, r, df) for lab, r, df in runs if not df.empty]
    if not shown:
        return fig
    alone = not compare
    # a term none of the shown layouts has (experts, FP8 copies, ZeRO-3 buffers) stays out
    parts = [(c, n, col) for (c, n), col in zip(MEMORY_TERMS.items(), MEMORY_COLOURS, strict=True)
             if any(c in df and df[c].any() for _, _, df in shown)]
    for comp, name, colour in parts:
        xs, ys, hover = [[], []], [], []
        for lab, _, df in shown:
            n = len(df)
            ticks = [f"#{i + 1}" for i in range(n)]
            if alone:
                xs = ticks
            else:
                xs[0] += [lab] * n
                xs[1] += ticks
            vals = df[comp] if comp in df else pd.Series(0.0, index=df.index)
            ys += list(vals)
            hover += [_named(lab, f"{lay}<br>{name}: {v:,.1f} GB") for lay, v in zip(df["layout"], vals)]
        fig.add_trace(go.Bar(x=xs, y=ys, name=name, marker_color=colour, hovertext=hover,
                             hoverinfo="text"))
    caps = [(lab, r.headline["capacity_gb"], df) for lab, r, df in shown]
    if alone:
        cap = caps[0][1]
        fig.add_hline(y=cap, line_dash="dash", annotation_text=f"capacity {cap:.0f} GB",
                      annotation=dict(bgcolor=LABEL_BOX["bgcolor"], font=LABEL_BOX["font"]))
    else:
        for i, (lab, cap, df) in enumerate(caps):
            fig.add_trace(go.Scatter(x=[[lab, lab], ["#1", f"#{len(df)}"]], y=[cap, cap],
                                     mode="lines+markers", name=_named(lab, f"capacity {cap:.0f} GB"),
                                     line=dict(dash="dash", color="#222", width=2),
                                     marker=dict(symbol="line-ew-open", size=16, color="#222")))
    fig.update_yaxes(rangemode="tozero")
    _legend_below(fig, y=-0.18)
    return fig


def _colour_map(names) -> dict:
    palette = ("#4c78a8", "#e45756", "#54a24b", "#f58518", "#b279a2", "#72b7b2", "#9d755d")
    return {n: palette[i % len(palette)] for i, n in enumerate(dict.fromkeys(names))}


def scaling(results: Results, *, compare=(), label=None) -> go.Figure:
    """Predicted scaling efficiency vs nodes on each fabric; a dash per compared scenario."""
    runs = [(lab, scaling_series(r)) for lab, r in _runs(results, compare, label)]
    fig = _fig("Predicted scaling efficiency vs nodes (batch per replica fixed)",
               xaxis_title="nodes", yaxis_title="efficiency vs first point", xaxis_type="log")
    colours = _colour_map(f for _, df in runs if not df.empty for f in df["fabric"])
    for i, (lab, df) in enumerate(runs):
        if df.empty:
            continue
        for f, part in df.groupby("fabric", sort=False):
            name = _named(lab, f)
            fig.add_trace(go.Scatter(x=part["nodes"], y=part["efficiency"], mode="lines+markers",
                                     name=name, line=dict(color=colours[f], dash=DASHES[i % 4]),
                                     marker=dict(symbol=SYMBOLS[i % 4]),
                                     hovertemplate="%{x:,} nodes: %{y:.1%}"
                                                   f"<extra>{name}</extra>"))
    fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    fig.update_xaxes(**_pow2_ticks([x for _, df in runs if not df.empty for x in df["nodes"]]))
    return fig


def _log_range(values, pad: float) -> list:
    v = [float(x) for x in values if x is not None and math.isfinite(x) and x > 0]
    if not v:
        return [0, 1]
    return [math.log10(min(v) / pad), math.log10(max(v) * pad)]


def sizing_curve(results: Results, *, compare=(), label=None) -> go.Figure:
    """Days vs GPUs (best layout at each size), the target and this plan. The days axis spans
    the meaningful sizes only (finite days under :data:`~llmcost.review.series.MAX_PLOT_DAYS`);
    a note says how many sizes are off the scale."""
    from ..review.series import MAX_PLOT_DAYS
    runs = _runs(results, compare, label)
    h = results.headline
    days = h["days"]
    if compare:
        title = "Days vs GPUs: " + ", ".join(
            _named(lab, f"{days_text(r.headline['days'])} on {r.headline['gpus']:,} GPUs")
            for lab, r in runs)
    else:
        title = (f"Days vs GPUs: {days:,.1f} days on {h['gpus']:,} GPUs" if days is not None
                 else f"Days vs GPUs: no prediction on {h['gpus']:,} GPUs")
    fig = _fig(title, xaxis_title="GPUs", yaxis_title="days", xaxis_type="log",
               yaxis_type="log", height=400)
    xs, ys, notes = [], [], []
    for i, (lab, r) in enumerate(runs):
        t = sizing_series(r)
        if t is not None:
            on = t[t["on_scale"]]
            fig.add_trace(go.Scatter(x=on["gpus"], y=on["days"], mode="lines",
                                     name=_named(lab, "days to train (best layout at each size)"),
                                     line=dict(color=SCENARIO_COLOURS[i % 4], dash=DASHES[i % 4]),
                                     hovertemplate="%{x:,} GPUs: %{y:,.1f} days"
                                                   f"<extra>{_named(lab, 'predicted')}</extra>"))
            xs += list(on["gpus"])
            ys += list(on["days"])
            slow = int((t["days"] > MAX_PLOT_DAYS).sum())
            none = int((~np.isfinite(t["days"])).sum())
            off = [f"{slow} over {MAX_PLOT_DAYS / 365.25:.0f} years"] if slow else []
            off += [f"{none} with no layout that fits"] if none else []
            if off:
                notes.append(_named(lab, f"not shown: of {len(t)} sizes, {', '.join(off)}"))
            # the curve is days to train; a size meets the target when those days plus the
            # schedule headroom do: the line is drawn where the sizing's test puts it
            target, bar = r.scenario.target_days, _sizing_bar(r)
            differs = any(_sizing_bar(x) != bar for _, x in runs)
            if i == 0 or bar != _sizing_bar(results):
                h = r.scenario.headroom
                text = (f"target {target:g} days less {h:.0%} schedule headroom: "
                        f"{days_text(bar)}") if h > 0 else f"target {target:g} days"
                fig.add_hline(y=bar, line_dash="dot", line_color="#666")
                # on a log axis an annotation's y is the exponent (add_hline's own label
                # would land at 10**bar)
                fig.add_annotation(x=0.01, xref="paper", xanchor="left", y=math.log10(bar),
                                   yanchor="bottom", text=_named(lab if differs else None, text),
                                   showarrow=False, bgcolor=LABEL_BOX["bgcolor"])
                ys.append(bar)
        d, g = r.headline["days"], r.headline["gpus"]
        if d is not None and math.isfinite(d):
            fig.add_trace(go.Scatter(x=[g], y=[min(d, MAX_PLOT_DAYS)], mode="markers",
                                     marker=dict(size=12, color=SCENARIO_COLOURS[i % 4],
                                                 symbol=SYMBOLS[i % 4],
                                                 line=dict(color="white", width=1)),
                                     name=_named(lab, f"this plan: {days_text(d)}"),
                                     hovertemplate=f"{g:,} GPUs: {days_text(d)}<extra></extra>"))
            xs.append(g)
            ys.append(min(d, MAX_PLOT_DAYS))
            if d > MAX_PLOT_DAYS:
                notes.append(_named(lab, f"this plan ({days_text(d)}) drawn at the top"))
    fig.update_xaxes(range=_log_range(xs, 1.3), **_pow2_ticks(xs))
    fig.update_yaxes(range=_log_range(ys, 1.5), tickformat=",~r")
    if notes:
        fig.add_annotation(text="<br>".join(notes), xref="paper", yref="paper", x=0.99, y=0.98,
                           xanchor="right", yanchor="top", showarrow=False, align="right",
                           **LABEL_BOX)
    _legend_below(fig)
    return fig


def _sizing_bar(results: Results) -> float:
    """Days to train a size must not exceed to meet the target: t_target / (1 + h) [days]
    (:func:`llmcost.planning.sizing.size_cluster`)."""
    s = results.scenario
    return s.target_days / (1 + s.headroom)


def measured_scaling(analysis) -> go.Figure:
    """A user's measured efficiency, the fitted gradual trend and its extrapolation."""
    t, x = analysis.table, analysis.extrapolated
    fig = _fig(f"Your scaling: {analysis.comm_share_per_doubling:.1%} more time per doubling of nodes",
               xaxis_title="nodes", yaxis_title="efficiency vs first point", xaxis_type="log")
    fig.add_trace(go.Scatter(x=t["nodes"], y=t["efficiency"], mode="markers+lines", name="measured",
                             hovertemplate="%{x:,} nodes: %{y:.1%}<extra>measured</extra>"))
    fig.add_trace(go.Scatter(x=t["nodes"], y=t["fitted_efficiency"], mode="lines", name="fitted",
                             line=dict(dash="dot"),
                             hovertemplate="%{x:,} nodes: %{y:.1%}<extra>fitted</extra>"))
    if len(x):
        fig.add_trace(go.Scatter(x=x["nodes"], y=x["efficiency"], mode="markers", name="extrapolated",
                                 marker=dict(symbol="diamond", size=10),
                                 hovertemplate="%{x:,} nodes: %{y:.1%}<extra>extrapolated</extra>"))
    fig.update_yaxes(tickformat=".0%")
    fig.update_xaxes(tickformat=",d")
    return fig


def ladder_table(results: Results, *, compare=(), label=None) -> go.Figure:
    """The infrastructure overview's ladder ("LLM Training Infrastructure": adapt, fine-tune,
    train at scale), cheapest first. A table: the current scenario's only."""
    L = finetune_ladder(results)
    df = L.frame()
    df["hours"] = df["hours"].map(lambda x: "-" if x is None or x != x else f"{x:,.1f}")
    df["gpus"] = [("-" if m == "adapt" else f"{n:,}") for m, n in zip(df["method"], df["gpus"])]
    # two "$" in one cell make plotly.js typeset it as LaTeX (and show nothing)
    df["note"] = df["note"].str.replace("$", "USD ", regex=False)
    cols = {"method": ("rung", "{}"), "gpu": ("GPU", "{}"), "gpus": ("GPUs", "{}"),
            "hours": ("hours", "{}"), "cost_usd": ("cost", "${:,.0f}"), "note": ("how", "{}")}
    title = (f"Fine-tune ladder for {L.model}, cheapest first ({human_count(L.finetune_tokens)} "
             f"fine-tune tokens; pretraining on {human_count(results.scenario.tokens)} tokens)"
             + (f"; not ranked, uncalibrated: {', '.join(L.uncalibrated)}" if L.uncalibrated
                else ""))
    return frame_table(df, title, cols, widths=[8, 9, 6, 8, 11, 40])
