"""The review app's figures: peak to effective FLOP/s, and the run's cost by way to pay."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from ..review import OPTION_LABELS, Results
from ..review.format import days_text, pct_text, price_text, usd_text
from .base import (
    SCENARIO_COLOURS,
    SYMBOLS,
    USD_AXIS,
    _empty,
    _fig,
    _legend_below,
    _named,
    _runs,
    _tint,
    _wrap_label,
    _zero_axes,
)


def waterfall(results: Results, *, compare=(), label=None) -> go.Figure:
    """Peak to effective FLOP/s per GPU: each loss a bar labelled outside it with the share of
    peak left after it. Compared scenarios: grouped waterfalls, one colour per scenario."""
    runs = [(lab, r, r.economics.waterfall if r.economics is not None else None)
            for lab, r in _runs(results, compare, label)]
    runs = [x for x in runs if x[2] is not None]
    if not runs:
        return _empty("From peak to effective FLOP/s per GPU", "no layout: nothing to predict")
    alone = len(runs) == 1 and not compare
    shares = ", ".join(_named(lab, pct_text(df["share_of_peak"].iloc[-1])) for lab, _, df in runs)
    fig = _fig(f"From peak to effective FLOP/s per GPU: {shares} effective",
               yaxis_title="TFLOP/s per GPU", height=400)
    top = 0.0
    for i, (lab, _, df) in enumerate(runs):
        peak = float(df["tflops_per_gpu"].iloc[0])
        top = max(top, peak)
        steps = [_wrap_label(s) for s in df["step"]] + ["effective"]
        measures = ["absolute"] + ["relative"] * (len(df) - 1) + ["total"]
        y = [peak] + list(-df["lost_tflops"].iloc[1:]) + [0.0]
        share = list(df["share_of_peak"]) + [df["share_of_peak"].iloc[-1]]
        hover = [f"{df['step'].iloc[0]}: {peak:,.0f} TFLOP/s (100%)"]
        hover += [f"{s}: -{lost:,.1f} TFLOP/s, {left:,.0f} left ({pct_text(sh)} of peak)"
                  for s, lost, left, sh in zip(df["step"].iloc[1:], df["lost_tflops"].iloc[1:],
                                               df["tflops_per_gpu"].iloc[1:],
                                               df["share_of_peak"].iloc[1:])]
        hover += [f"effective: {df['tflops_per_gpu'].iloc[-1]:,.0f} TFLOP/s "
                  f"({pct_text(share[-1])} of peak)"]
        c = SCENARIO_COLOURS[i % len(SCENARIO_COLOURS)]
        colours = (dict(increasing=dict(marker_color="#4c78a8"),
                        decreasing=dict(marker_color="#e76f51"),
                        totals=dict(marker_color="#2a9d8f")) if alone else
                   dict(increasing=dict(marker_color=c), decreasing=dict(marker_color=_tint(c, 0.5)),
                        totals=dict(marker_color=c)))
        fig.add_trace(go.Waterfall(
            x=steps, y=y, measure=measures, name=lab or "TFLOP/s",
            text=[pct_text(x) for x in share], textposition="outside",
            # small bars keep their label: never shrunk to the bar, never clipped at the axis
            constraintext="none", cliponaxis=False, textfont=dict(size=11 if alone else 10),
            hovertext=[_named(lab, h) for h in hover], hoverinfo="text",
            connector=dict(line=dict(color="#888", width=1)), **colours))
    fig.update_yaxes(range=[0, top * 1.15], rangemode="tozero")
    fig.update_xaxes(tickangle=0)
    if alone:
        fig.update_layout(showlegend=False)
    else:
        fig.update_layout(waterfallmode="group", waterfallgap=0.25)
        _legend_below(fig, y=-0.3)
    return fig


def cost_by_option(results: Results, *, compare=(), label=None) -> go.Figure:
    """Cash cost (and amortized share) of this run per pricing option, days on the right.
    Both axes start at zero with rounded ticks and the same number of intervals (aligned
    grid). Compared scenarios: bars grouped by scenario."""
    runs = _runs(results, compare, label)
    priced = [(lab, r) for lab, r in runs if r.economics is not None and r.economics.costs_usd]
    if not priced:
        e = results.economics
        return _empty("Cost of this run by pricing option",
                      "no price for this GPU: set prices to custom" if e is not None
                      else "no layout: nothing to cost")
    keys = [k for k in OPTION_LABELS if any(k in r.economics.costs_usd for _, r in priced)]
    x = [OPTION_LABELS[k] for k in keys]
    alone = not compare
    cheap = [_named(lab, f"{OPTION_LABELS[r.cheapest_option]} "
                         f"{usd_text(r.economics.costs_usd[r.cheapest_option])}")
             for lab, r in priced]
    fig = _fig("Cash cost of this run: cheapest " + ", ".join(cheap), height=400)
    usd_max = days_max = 0.0
    for i, (lab, r) in enumerate(priced):
        e = r.economics
        c = SCENARIO_COLOURS[i % len(SCENARIO_COLOURS)]
        group = dict(offsetgroup=str(i), alignmentgroup="costs") if not alone else {}
        cash = [e.costs_usd.get(k) for k in keys]
        prices, offers = r.inputs.option_prices(), r.inputs.price_offers
        at = {k: f" at {price_text(prices[k], offers.get(k))}" for k in prices}
        custom = [[usd_text(v), e.commitments.get(k, ""), at.get(k, "")] for v, k in zip(cash, keys)]
        fig.add_trace(go.Bar(x=x, y=cash, name=_named(lab, "cash cost"), marker_color=c,
                             legendgroup=f"s{i}", customdata=custom,
                             hovertemplate="%{x}: %{customdata[0]} cash%{customdata[2]}"
                                           "<br>%{customdata[1]}"
                                           f"<extra>{_named(lab, 'cash cost')}</extra>", **group))
        if e.costs_amortized_usd:
            am = [e.costs_amortized_usd.get(k) for k in keys]
            fig.add_trace(go.Bar(x=x, y=am, name=_named(lab, "amortized share"),
                                 marker_color=_tint(c, 0.45), legendgroup=f"s{i}",
                                 customdata=[usd_text(v) for v in am],
                                 hovertemplate="%{x}: %{customdata} amortized"
                                               f"<extra>{_named(lab, 'amortized share')}</extra>",
                                 **({"offsetgroup": f"{i}a", "alignmentgroup": "costs"}
                                    if not alone else {})))
            usd_max = max(usd_max, *[v for v in am if v is not None])
        days = [e.run_days.get(k) for k in keys]
        fig.add_trace(go.Scatter(x=x, y=days, name=_named(lab, "days"), yaxis="y2",
                                 mode="markers", legendgroup=f"s{i}",
                                 marker=dict(size=12, color="#2a9d8f" if alone else c,
                                             symbol=SYMBOLS[i % len(SYMBOLS)],
                                             line=dict(color="white", width=1)),
                                 customdata=[days_text(d) for d in days],
                                 hovertemplate="%{x}: %{customdata}"
                                               f"<extra>{_named(lab, 'days')}</extra>",
                                 cliponaxis=False, **group))
        usd_max = max(usd_max, *[v for v in cash if v is not None])
        days_max = max(days_max, *[d for d in days if d is not None and math.isfinite(d)] or [0])
    (top1, step1), (top2, step2) = _zero_axes(usd_max, days_max)
    fig.update_layout(
        barmode="group", scattermode="group",
        yaxis=dict(title="USD (cash, commitments included)", range=[0, top1], dtick=step1,
                   tick0=0, **USD_AXIS),
        yaxis2=dict(title="days", overlaying="y", side="right", range=[0, top2], dtick=step2,
                    tick0=0, showgrid=False, zeroline=False),
        margin=dict(r=70))
    _legend_below(fig, y=-0.15)
    return fig
