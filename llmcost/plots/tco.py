"""The TCO and spot apps' figures: cumulative cost, the cheapest option by utilization and
horizon, the breakeven tornado, spot savings and its Monte Carlo."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from ..review import OPTION_LABELS, Results, breakeven_tornado, decision_grid, spot_distribution, spot_grid, tco_series
from ..review.format import pct_text, usd_text
from .base import DASHES, LABEL_BOX, SCENARIO_COLOURS, SYMBOLS, USD_AXIS, _fig, _legend_below, _named, _runs


def _view(results: Results) -> str:
    s = results.scenario
    view = "cash, hardware resold at market value" if s.resale == "market" else \
        "cash, hardware not resold"
    if s.discount_rate > 0:
        view += f", all cash flows discounted at {s.discount_rate:.0%}/year"
    return view


#: one fixed colour per option, so the decision map reads as categories
OPTION_COLOURS = {"on_demand": "#4c78a8", "reserved_1y": "#72b7b2", "reserved_3y": "#54a24b",
                  "spot": "#f58518", "on_prem": "#b279a2"}


def tco_curves(results: Results, *, compare=(), label=None) -> go.Figure:
    """Cumulative cash cost of each option over months, the breakeven marked (the headline's
    number). Compared scenarios: a dash per scenario, one colour per option."""
    runs = _runs(results, compare, label)
    e = results.economics
    gpus = e.billed_gpus if e is not None else results.plan.gpus
    title = f"Cumulative cost of {gpus:,} GPUs ({_view(results)})"
    if compare:
        title = "Cumulative cost: " + ", ".join(
            _named(lab, f"{(r.economics.billed_gpus if r.economics else r.plan.gpus):,} GPUs")
            for lab, r in runs) + f" ({_view(results)})"
    fig = _fig(title, xaxis_title="months", yaxis_title="USD", height=400)
    for i, (lab, r) in enumerate(runs):
        df = tco_series(r)
        for k in df.columns[1:]:
            name = _named(lab, OPTION_LABELS[k])
            fig.add_trace(go.Scatter(x=df["months"], y=df[k], mode="lines", name=name,
                                     line=dict(color=OPTION_COLOURS.get(k), dash=DASHES[i % 4]),
                                     customdata=[usd_text(v) for v in df[k]],
                                     hovertemplate="%{x:.1f} months: %{customdata}"
                                                   f"<extra>{name}</extra>"))
    # scenarios with the same breakeven share one line and one label
    lines = {}
    for lab, r in runs:
        ee = r.economics
        be = ee.breakeven_months if ee is not None else None
        if be is not None and be <= r.scenario.horizon_months:
            lines.setdefault(round(be, 1), (be, []))[1].append(lab)
    for i, (be, labs) in enumerate(lines.values()):
        who = ", ".join(x for x in labs if x)
        # the same number as the headline: the breakeven stage's, not a grid crossing
        fig.add_vline(x=be, line_dash=DASHES[(i + 1) % 4], line_color="#333",
                      annotation_text=_named(who, f"buying beats on-demand after {be:.1f} months"),
                      annotation_position="top right" if i % 2 == 0 else "bottom right",
                      annotation=dict(bgcolor=LABEL_BOX["bgcolor"], font=LABEL_BOX["font"]))
    fig.update_yaxes(rangemode="tozero", **USD_AXIS)
    fig.update_xaxes(rangemode="tozero")
    _legend_below(fig)
    return fig


def decision_map(results: Results, *, compare=(), label=None) -> go.Figure:
    """The cheapest option over utilization x horizon, as categories: one flat colour and one
    legend entry per option, no colour scale. The scenario's own point is marked (compared
    scenarios' points too, on this scenario's prices)."""
    u, m, names, best = decision_grid(results)
    fig = _fig(f"Cheapest option by utilization and horizon ({_view(results)})",
               xaxis_title="horizon (months)", yaxis_title="utilization", height=420)
    if not names:
        return fig
    labels = np.array([OPTION_LABELS[n] for n in names], dtype=object)
    n = len(names)
    scale = []
    for i, name in enumerate(names):
        c = OPTION_COLOURS.get(name, "#999999")
        scale += [[i / n, c], [(i + 1) / n, c]]
    fig.add_trace(go.Heatmap(x=m, y=u, z=best, zmin=-0.5, zmax=n - 0.5, colorscale=scale,
                             showscale=False, text=labels[best], name="cheapest",
                             hovertemplate="%{y:.0%} utilization, %{x} months: %{text}"
                                           "<extra></extra>"))
    present = set(np.unique(best).tolist())
    for i, name in enumerate(names):
        # legend entries only: the heatmap itself has no legend
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", showlegend=True,
                                 name=OPTION_LABELS[name] + ("" if i in present
                                                             else " (never cheapest here)"),
                                 marker=dict(symbol="square", size=14,
                                             color=OPTION_COLOURS.get(name, "#999999"))))
    points = {}     # scenarios at the same point share one marker and one label
    for lab, r in _runs(results, compare, label):
        s = r.scenario
        if m.min() <= s.horizon_months <= m.max() and u.min() <= s.utilization <= u.max():
            points.setdefault((s.horizon_months, s.utilization), []).append(lab or "this scenario")
    for i, ((x, y), tags) in enumerate(points.items()):
        tag = ", ".join(tags)
        fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers",
                                 name=f"{tag}: {pct_text(y, 0)}, {x:g} months",
                                 marker=dict(size=13, color="white", symbol=SYMBOLS[i % 4],
                                             line=dict(color="black", width=2))))
        fig.add_annotation(x=x, y=y, text=tag, showarrow=True, arrowhead=0, ax=0,
                           ay=-26 if y < 0.8 else 26, **LABEL_BOX)
    fig.update_xaxes(tickvals=list(m), range=[0, float(m.max()) * 1.04], showgrid=False)
    fig.update_yaxes(tickformat=".0%", showgrid=False)
    fig.update_layout(legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top",
                                  title=dict(text="cheapest")),
                      margin=dict(r=190))
    return fig


def tornado(results: Results, *, compare=(), label=None) -> go.Figure:
    """Breakeven month when each input moves +-20%. Compared scenarios: their base breakeven
    as a vertical line (the bars are the current scenario's)."""
    df = breakeven_tornado(results)
    base = float(df["base"].iloc[0]) if len(df) else np.nan
    title = (f"Breakeven month sensitivity (+-20%), base {base:.1f} months" if len(df)
             else "Breakeven month sensitivity: no breakeven to vary")
    fig = _fig(title, xaxis_title="breakeven month", barmode="overlay")
    for col, name, colour in (("low", "input -20%", "#4c78a8"), ("high", "input +20%", "#e45756")):
        fig.add_trace(go.Bar(y=df["input"], x=df[col] - base, base=base, orientation="h",
                             name=name, marker_color=colour, opacity=0.85,
                             customdata=df[col],
                             hovertemplate="%{y}: %{customdata:.1f} months"
                                           f"<extra>{name}</extra>"))
    if len(df):
        fig.add_vline(x=base, line_color="#222", line_width=1)
    for i, (lab, r) in enumerate(_runs(results, compare, label)[1:], start=1):
        be = r.economics.breakeven_months if r.economics is not None else None
        if be is not None and math.isfinite(be):
            fig.add_vline(x=be, line_dash=DASHES[i % 4], line_color=SCENARIO_COLOURS[i % 4],
                          annotation_text=f"{lab}: base {be:.1f} months",
                          annotation=dict(bgcolor=LABEL_BOX["bgcolor"]))
    fig.update_yaxes(automargin=True)
    _legend_below(fig)
    return fig


def spot_heatmap(results: Results, *, compare=(), label=None) -> go.Figure:
    """Net savings over preemption rate x hours lost, the zero contour, this scenario marked
    with a boxed label; the colorbar at the right, the legend under the plot (apart).
    Compared scenarios: their points on this scenario's surface."""
    r, L, sav = spot_grid(results)
    sp = results.economics.spot if results.economics is not None else None
    fig = _fig("Spot net savings by preemption rate and hours lost",
               xaxis_title="hours lost per preemption", yaxis_title="preemptions per day",
               height=460)
    if sp is None or sp.discount is None:
        fig.add_annotation(text="spot is not offered for this GPU", showarrow=False,
                           x=0.5, y=0.5, xref="paper", yref="paper")
        return fig
    d = sp.discount
    # colour from -100% (spot costs twice on-demand) to the discount, the most spot can save
    shown = np.clip(sav, -1.0, d)
    fig.add_trace(go.Contour(x=L, y=r, z=shown, colorscale="RdBu", zmid=0, zmin=-1.0, zmax=d,
                             contours=dict(start=-1.0, end=d, size=0.1), name="net savings",
                             customdata=sav,
                             hovertemplate="%{y:.1f} per day, %{x:.1f} h lost: "
                                           "%{customdata:.1%}<extra></extra>",
                             colorbar=dict(title=dict(text="net savings", side="right"),
                                           tickformat=".0%", dtick=0.2, x=1.0, xanchor="left",
                                           y=0.5, yanchor="middle", len=1.0, thickness=16)))
    fig.add_trace(go.Contour(x=L, y=r, z=sav, contours=dict(start=0, end=0, size=1, coloring="none"),
                             line=dict(width=3, color="black"), showscale=False,
                             name="zero: spot costs as much as on-demand", showlegend=True,
                             hoverinfo="skip"))
    if np.isnan(sav).any():
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", showlegend=True,
                                 name="blank: preemptions fill the day (never finishes)",
                                 marker=dict(symbol="square", size=12, color="white",
                                             line=dict(color="#888", width=1))))
    for i, (lab, res) in enumerate(_runs(results, compare, label)):
        e = res.economics
        if e is None or e.spot.discount is None:
            continue
        x, y = e.spot.lost_hours_per_preemption, e.spot.preemptions_per_day
        tag = lab or "this scenario"
        net = pct_text(e.spot.net_savings) if e.spot.net_savings is not None else "never finishes"
        fig.add_trace(go.Scatter(x=[x], y=[y], mode="markers", name=f"{tag}: {net}",
                                 marker=dict(size=13, color="black" if i == 0 else "white",
                                             symbol=SYMBOLS[i % 4],
                                             line=dict(color="black", width=2)),
                                 hovertemplate=f"{tag}: %{{y:.2f}} per day, %{{x:.2f}} h lost, "
                                               f"{net}<extra></extra>", cliponaxis=False))
        fig.add_annotation(x=x, y=y, text=f"{tag}: {net}", showarrow=True, arrowhead=0,
                           ax=40 if x < L.max() / 2 else -40, ay=-28 - 22 * i, **LABEL_BOX)
    fig.update_layout(margin=dict(r=100))
    _legend_below(fig)
    return fig


def spot_monte_carlo(results: Results, *, compare=(), label=None) -> go.Figure:
    """Monte Carlo of the run on spot: cost and duration as shares of the ideal on-demand
    run. Compared scenarios: a colour per scenario, cost solid and duration hatched."""
    fig = _fig("Monte Carlo: spot cost and duration (share of the ideal on-demand run)",
               xaxis_title="share of the ideal on-demand run", yaxis_title="runs",
               barmode="overlay")
    alone = not compare
    for i, (lab, r) in enumerate(_runs(results, compare, label)):
        mc = spot_distribution(r)
        if mc is None:
            continue
        for what, x, colour, pattern in (("cost", mc.cost_share, "#4c78a8", ""),
                                         ("duration", mc.duration_share, "#f58518", "/")):
            c = colour if alone else SCENARIO_COLOURS[i % 4]
            name = _named(lab, what)
            fig.add_trace(go.Histogram(x=x, name=name, opacity=0.6, nbinsx=60,
                                       marker=dict(color=c, pattern=dict(shape="" if alone
                                                                         else pattern)),
                                       hovertemplate="%{x}: %{y:,} runs"
                                                     f"<extra>{name}</extra>"))
    fig.update_xaxes(tickformat=".0%")
    _legend_below(fig)
    return fig
