"""Results -> plotly Figures. No widgets here, no formulas: every number comes from review."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from . import catalog
from .review import (Results, breakeven_tornado, decision_grid, goodput_series, layout_memory,
                     measured_utilization, scaling_series, spot_distribution, spot_grid,
                     tco_series)
from .scenario import Scenario

TEMPLATE = "plotly_white"
OPTION_LABELS = {"on_demand": "on-demand", "reserved_1y": "reserved 1 y",
                 "reserved_3y": "reserved 3 y", "spot": "spot", "on_prem": "on-premises"}


def _fig(title: str, **layout) -> go.Figure:
    fig = go.Figure()
    layout.setdefault("height", 360)
    fig.update_layout(title=title, template=TEMPLATE, margin=dict(l=60, r=20, t=50, b=50),
                      **layout)
    return fig


def waterfall(results: Results) -> go.Figure:
    df = results.waterfall
    fig = _fig(f"From peak to effective FLOP/s per GPU: {df['share_of_peak'].iloc[-1]:.1%} effective",
               yaxis_title="TFLOP/s per GPU")
    measures = ["absolute"] + ["relative"] * (len(df) - 1)
    y = [df["tflops_per_gpu"].iloc[0]] + list(-df["lost_tflops"].iloc[1:])
    fig.add_trace(go.Waterfall(x=list(df["step"]), y=y, measure=measures,
                               text=[f"{x:.0%}" for x in df["share_of_peak"]],
                               textposition="outside", name="TFLOP/s"))
    fig.add_trace(go.Bar(x=["effective"], y=[df["tflops_per_gpu"].iloc[-1]],
                         name="effective", marker_color="#2a9d8f"))
    fig.update_layout(showlegend=False)
    return fig


def cost_by_option(results: Results) -> go.Figure:
    keys = list(results.run_costs_usd)
    fig = _fig(f"Cost and days by pricing option: on-demand ${results.run_costs_usd['on_demand']:,.0f}",
               yaxis_title="USD",
               yaxis2=dict(title="days", overlaying="y", side="right", showgrid=False))
    fig.add_trace(go.Bar(x=[OPTION_LABELS[k] for k in keys], y=[results.run_costs_usd[k] for k in keys],
                         name="cost (USD)"))
    fig.add_trace(go.Scatter(x=[OPTION_LABELS[k] for k in keys], y=[results.run_days[k] for k in keys],
                             name="days", yaxis="y2", mode="markers", marker=dict(size=12)))
    return fig


def memory_stack(results: Results) -> go.Figure:
    df = layout_memory(results)
    fig = _fig("Memory per GPU of the top layouts (GB)", barmode="stack", yaxis_title="GB",
               height=400)
    for comp in ("weights_gb", "grads_gb", "optimizer_gb", "activations_gb", "overhead_gb"):
        if comp in df:
            fig.add_trace(go.Bar(x=[f"#{i + 1}" for i in range(len(df))], y=df[comp],
                                 name=comp.replace("_gb", ""), hovertext=df["layout"]))
    cap = results.headline["capacity_gb"]
    fig.add_hline(y=cap, line_dash="dash", annotation_text=f"capacity {cap:.0f} GB")
    return fig


def scaling(results: Results) -> go.Figure:
    df = scaling_series(results.scenario, results)
    fig = _fig("Predicted scaling efficiency vs nodes (batch per replica fixed)",
               xaxis_title="nodes", yaxis_title="efficiency vs first point", xaxis_type="log")
    for f, part in df.groupby("fabric", sort=False):
        fig.add_trace(go.Scatter(x=part["nodes"], y=part["efficiency"], mode="lines+markers", name=f))
    return fig


def sizing_curve(results: Results) -> go.Figure:
    fig = _fig(f"Days vs GPUs: {results.headline['days']:,.1f} days on {results.headline['gpus']:,} GPUs",
               xaxis_title="GPUs",
               yaxis_title="days", xaxis_type="log", yaxis_type="log")
    sz = results.sizing
    if sz is not None:
        t = sz.table[np.isfinite(sz.table["days"])]
        fig.add_trace(go.Scatter(x=t["gpus"], y=t["days"], mode="lines", name="predicted days"))
        if results.scenario.sizing == "days":
            fig.add_hline(y=results.scenario.target_days, line_dash="dot", annotation_text="target")
    fig.add_trace(go.Scatter(x=[results.headline["gpus"]], y=[results.headline["days"]],
                             mode="markers", marker=dict(size=12), name="this plan"))
    return fig


def tco_curves(s: Scenario) -> go.Figure:
    df = tco_series(s)
    fig = _fig("Cumulative cost per node", xaxis_title="months", yaxis_title="USD")
    for k in df.columns[1:]:
        fig.add_trace(go.Scatter(x=df["months"], y=df[k], mode="lines", name=OPTION_LABELS[k]))
    d = df["on_prem"] - df["on_demand"]
    cross = np.nonzero(d.to_numpy() <= 0)[0]
    if cross.size:
        i = cross[0]
        fig.add_vline(x=float(df["months"].iloc[i]), line_dash="dash",
                      annotation_text=f"breakeven vs on-demand: {df['months'].iloc[i]:.1f} months")
    return fig


def decision_map(s: Scenario) -> go.Figure:
    u, m, names, best = decision_grid(s)
    labels = [OPTION_LABELS[n] for n in names]
    fig = _fig("Cheapest option by utilization and horizon (hardware not resold)",
               xaxis_title="horizon (months)",
               yaxis_title="utilization", height=400)
    fig.add_trace(go.Heatmap(x=[str(int(x)) for x in m], y=u, z=best, zmin=0, zmax=len(names) - 1,
                             colorscale="Viridis", text=np.array(labels, dtype=object)[best],
                             hovertemplate="%{y:.0%}, %{x} months: %{text}<extra></extra>",
                             colorbar=dict(tickvals=list(range(len(names))), ticktext=labels)))
    return fig


def tornado(s: Scenario) -> go.Figure:
    df = breakeven_tornado(s)
    base = float(df["base"].iloc[0]) if len(df) else np.nan
    fig = _fig(f"Breakeven month sensitivity (+-20%), base {base:.1f} months",
               xaxis_title="breakeven month", barmode="overlay")
    fig.add_trace(go.Bar(y=df["input"], x=df["low"] - base, base=base, orientation="h", name="-20%"))
    fig.add_trace(go.Bar(y=df["input"], x=df["high"] - base, base=base, orientation="h", name="+20%"))
    return fig


def spot_heatmap(s: Scenario) -> go.Figure:
    r, L, sav = spot_grid(s)
    fig = _fig("Spot net savings by preemption rate and hours lost", xaxis_title="hours lost per preemption",
               yaxis_title="preemptions per day", height=420)
    # colour from -100% (spot costs twice on-demand) to the discount, the most spot can save
    shown = np.clip(sav, -1.0, s.spot_discount)
    fig.add_trace(go.Contour(x=L, y=r, z=shown, colorscale="RdBu", zmid=0, zmin=-1.0,
                             zmax=s.spot_discount,
                             contours=dict(start=-1.0, end=s.spot_discount, size=0.1),
                             colorbar=dict(title="net", tickformat=".0%")))
    fig.add_trace(go.Contour(x=L, y=r, z=sav, contours=dict(start=0, end=0, size=1, coloring="none"),
                             line=dict(width=3, color="black"), showscale=False, name="zero"))
    fig.add_trace(go.Scatter(x=[s.lost_hours_per_preemption], y=[s.preemptions_per_day],
                             mode="markers+text", text=["this scenario"], textposition="top center",
                             marker=dict(size=12, color="black"), name="scenario"))
    return fig


def spot_monte_carlo(s: Scenario) -> go.Figure:
    mc = spot_distribution(s)
    fig = _fig("Monte Carlo: spot cost and duration (share of the ideal on-demand run)",
               xaxis_title="share", barmode="overlay")
    fig.add_trace(go.Histogram(x=mc.cost_share, name="cost", opacity=0.6, nbinsx=60))
    fig.add_trace(go.Histogram(x=mc.duration_share, name="duration", opacity=0.6, nbinsx=60))
    return fig


def goodput_curve(results: Results) -> go.Figure:
    df = goodput_series(results)
    r = results.reliability
    fig = _fig("Goodput vs checkpoint interval", xaxis_title="interval (s)", yaxis_title="goodput",
               xaxis_type="log")
    for mode in ("sync", "async"):
        fig.add_trace(go.Scatter(x=df["interval_s"], y=df[mode], mode="lines",
                                 name=f"{mode} ({df[f'{mode}_stall_s'].iloc[0]:.1f} s stall)"))
    for name, key, dash, pos in (("Young", "young_interval_s", "dot", "top left"),
                                 ("Daly", "daly_interval_s", "dash", "bottom right")):
        x = r[key]
        fig.add_trace(go.Scatter(x=[x, x], y=[float(df[["sync", "async"]].min().min()), 1.0],
                                 mode="lines", line=dict(dash=dash, color="black", width=1),
                                 name=f"{name}: {x / 60:,.1f} min ({results.scenario.checkpoint_mode})"))
    return fig


def utilization_vs_published(s: Scenario) -> go.Figure:
    mu = measured_utilization(s)
    runs = catalog.published_runs()
    runs = runs.assign(value=runs["mfu"].fillna(runs["pct_of_peak"])).dropna(subset=["value"])
    fig = _fig("Your run vs published runs", yaxis_title="share of dense peak", height=400)
    fig.add_trace(go.Bar(x=list(runs["id"]), y=runs["value"], name="published",
                         hovertext=runs["source"]))
    fig.add_trace(go.Bar(x=["your run"], y=[mu["effective_utilization"]], name="your run",
                         marker_color="#e76f51"))
    fig.add_hline(y=0.6, line_dash="dot", annotation_text="above 60%: rarer than any large run")
    return fig


def frame_table(df: pd.DataFrame, title: str, columns: dict) -> go.Figure:
    cols = [c for c in columns if c in df]
    fig = _fig(title, height=80 + 28 * min(len(df), 10))
    fig.add_trace(go.Table(header=dict(values=[columns[c][0] for c in cols]),
                           cells=dict(values=[[columns[c][1].format(x) for x in df[c].head(10)]
                                              for c in cols])))
    return fig


def measured_scaling(analysis) -> go.Figure:
    """A user's measured efficiency, the fitted gradual trend and its extrapolation."""
    t, x = analysis.table, analysis.extrapolated
    fig = _fig(f"Your scaling: {analysis.comm_share_per_doubling:.1%} more time per doubling of nodes",
               xaxis_title="nodes", yaxis_title="efficiency vs first point", xaxis_type="log")
    fig.add_trace(go.Scatter(x=t["nodes"], y=t["efficiency"], mode="markers+lines", name="measured"))
    fig.add_trace(go.Scatter(x=t["nodes"], y=t["fitted_efficiency"], mode="lines", name="fitted",
                             line=dict(dash="dot")))
    if len(x):
        fig.add_trace(go.Scatter(x=x["nodes"], y=x["efficiency"], mode="markers", name="extrapolated",
                                 marker=dict(symbol="diamond", size=10)))
    return fig
