"""Results -> plotly Figures. No widgets here, no formulas: every number comes from review.

Every figure function that takes a :class:`~llmcost.review.Results` also takes
``compare=()``: a sequence of ``(label, Results)`` of other pinned scenarios, overlaid on the
current one (``label``, "current" by default when there is something to compare with). Curves
get one trace per scenario (the same colour, a dash per scenario, "A: ..." in the legend);
bar charts group their bars by scenario; maps, heatmaps and tables that cannot overlay mark
the other scenarios' points or stay single. With ``compare=()`` a figure shows the current
scenario alone.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .review import (
    OPTION_LABELS,
    Results,
    breakeven_tornado,
    decision_grid,
    finetune_ladder,
    goodput_series,
    layout_memory,
    scaling_series,
    spot_distribution,
    spot_grid,
    tco_series,
)
from .review.format import days_text, human_count, minutes_text, pct_text, usd_text
from .review.series import sizing_series
from .training.memory import MEMORY_TERMS

#: the trace types the figures draw: the template keeps its defaults for these alone
TRACE_TYPES = ("bar", "contour", "heatmap", "histogram", "scatter", "table", "waterfall")


def _lean_template(name: str = "plotly_white") -> go.layout.Template:
    """``name``'s defaults for :data:`TRACE_TYPES` and the 2-D plot only (no polar, ternary,
    3-D or map subplots): the figures look the same, and each carries 3 kB of template
    instead of 7 kB to the page (every figure sent holds its template). A Template object,
    validated once: given as a dict, plotly validates it again at every layout update
    (100-250 ms more per figure)."""
    import plotly.io as pio
    full = pio.templates[name].to_plotly_json()
    return go.layout.Template({"data": {k: v for k, v in full["data"].items() if k in TRACE_TYPES},
                               "layout": {k: v for k, v in full["layout"].items()
                                          if k not in ("polar", "ternary", "scene", "geo")}})


TEMPLATE = _lean_template()
#: titles wrap at about this many characters, so they never run past the plot's width
TITLE_CHARS = 75
#: one colour, dash and marker per scenario (current first), for bars and markers
SCENARIO_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2")
DASHES = ("solid", "dash", "dot", "dashdot")
SYMBOLS = ("circle", "diamond", "square", "triangle-up")
#: a readable label on top of a plot: white box, thin border
LABEL_BOX = dict(bgcolor="rgba(255,255,255,0.9)", bordercolor="#444", borderwidth=1, borderpad=3,
                 font=dict(size=12, color="#111"))
#: money on an axis: "$4M", "$1B" (plotly's "B" exponent format writes billions as B)
USD_AXIS = dict(tickprefix="$", exponentformat="B", separatethousands=True)


# ---------------------------------------------------------------- shared presentation
def _wrap(text: str, width: int = TITLE_CHARS) -> str:
    """Break a long title into lines of at most ``width`` characters at spaces (<br>)."""
    lines = []
    for part in text.split("<br>"):
        cur = ""
        for word in part.split(" "):
            if cur and len(cur) + 1 + len(word) > width:
                lines.append(cur)
                cur = word
            else:
                cur = f"{cur} {word}" if cur else word
        lines.append(cur)
    return "<br>".join(lines)


def _title(text: str, height: int, width: int = TITLE_CHARS) -> dict:
    wrapped = _wrap(text, width)
    lines = wrapped.count("<br>") + 1
    # centred on its own lines, in pixels from the figure's top: plotly anchors a multi-line
    # title's "top" and "bottom" on one of its lines, which clips it or runs it into the plot
    return dict(text=wrapped, x=0.01, xanchor="left", yref="container", yanchor="middle",
                y=1 - (8 + 11 * lines) / height)


def _fig(title: str, **layout) -> go.Figure:
    fig = go.Figure()
    layout.setdefault("height", 360)
    lines = _wrap(title).count("<br>") + 1
    fig.update_layout(title=_title(title, layout["height"]), template=TEMPLATE,
                      margin=dict(l=70, r=30, t=30 + 24 * lines, b=60),
                      hoverlabel=dict(namelength=-1), **layout)
    return fig


def _legend_below(fig: go.Figure, y: float = -0.22) -> go.Figure:
    """A horizontal legend under the plot (and its axis title): clear of the plot area and of
    any colorbar at the right."""
    fig.update_layout(legend=dict(orientation="h", x=0, xanchor="left", y=y, yanchor="top"))
    return fig


def _empty(title: str, why: str) -> go.Figure:
    fig = _fig(title)
    fig.add_annotation(text=why, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def _runs(results: Results, compare=(), label: str | None = None) -> list:
    """[(label, Results)], the current scenario first; its label is None when it is alone."""
    compare = tuple(compare or ())
    if not compare:
        return [(None, results)]
    return [(label or "current", results)] + [(str(lab), r) for lab, r in compare]


def _named(lab, name: str) -> str:
    return f"{lab}: {name}" if lab else name


def _tint(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _nice_step(x: float) -> float:
    """The smallest 1, 2, 2.5 or 5 x 10^k at least ``x``."""
    if not (x > 0 and math.isfinite(x)):
        return 1.0
    k = 10.0 ** math.floor(math.log10(x))
    for m in (1.0, 2.0, 2.5, 5.0, 10.0):
        if m * k >= x * (1 - 1e-12):
            return m * k
    return 10.0 * k


def _zero_axes(primary_max: float, secondary_max: float, ticks: int = 5):
    """Ranges and tick steps of two zero-based axes with the same number of rounded ticks, so
    their grid lines coincide: ((top, step), (top, step))."""
    s1 = _nice_step(max(primary_max, 0.0) * 1.05 / ticks)
    n = max(1, math.ceil(max(primary_max, 0.0) * 1.05 / s1))
    s2 = _nice_step(max(secondary_max, 0.0) * 1.05 / n)
    return (n * s1, s1), (n * s2, s2)


def _pow2_ticks(values, most: int = 10) -> dict:
    """Tick values at powers of two spanning ``values`` (GPU and node counts come in powers of
    two), at most ``most`` of them, written with thousands separators."""
    v = [float(x) for x in values if x is not None and math.isfinite(x) and x > 0]
    if not v:
        return {}
    lo, hi = math.floor(math.log2(min(v))), math.ceil(math.log2(max(v)))
    every = max(1, math.ceil((hi - lo + 1) / most))
    ticks = [2.0 ** k for k in range(lo, hi + 1, every)]
    return dict(tickvals=ticks, ticktext=[human_count(t) for t in ticks])


def _wrap_label(text: str, width: int = 16) -> str:
    return _wrap(str(text), width)


# ---------------------------------------------------------------- review app
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
        custom = [[usd_text(v), e.commitments.get(k, "")] for v, k in zip(cash, keys)]
        fig.add_trace(go.Bar(x=x, y=cash, name=_named(lab, "cash cost"), marker_color=c,
                             legendgroup=f"s{i}", customdata=custom,
                             hovertemplate="%{x}: %{customdata[0]} cash<br>%{customdata[1]}"
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
    from .review.series import MAX_PLOT_DAYS
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


MODE_COLOURS = {"sync": "#4c78a8", "async": "#e45756", "peer-memory": "#54a24b"}


def goodput_curve(results: Results, *, compare=(), label=None) -> go.Figure:
    """Goodput vs checkpoint interval in minutes (the headline's unit), one curve per mode
    (sync, async, peer-memory under stated assumptions), the chosen interval of the
    scenario's mode marked and labelled. Each point carries its interval in seconds as
    ``customdata``. Compared scenarios: a dash per scenario and their chosen points."""
    runs = _runs(results, compare, label)
    r = results.reliability
    chosen_mode = results.scenario.checkpoint_mode
    fig = _fig(f"Goodput vs checkpoint interval: {r.goodput:.2%} ({chosen_mode}) at the chosen "
               f"{r.interval_s / 60:,.1f} min", xaxis_title="compute between checkpoints (min)",
               yaxis_title="goodput", xaxis_type="log", height=460 + 90 * (len(runs) - 1))
    lows = []
    for i, (lab, res) in enumerate(runs):
        df = goodput_series(res)
        lows.append(float(df["goodput"].min()))
        mode_here = res.scenario.checkpoint_mode
        for mode, part in df.groupby("mode", sort=False):
            stall, up, peer = (float(part[k].iloc[0]) for k in ("stall_s", "upload_s", "peer_copy_s"))
            if mode == "sync":
                name = f"sync ({stall:,.1f} s stall to the shared tier)"
            elif mode == "async":
                name = f"async ({stall:,.2f} s local stall, {up:,.1f} s background upload)"
            else:
                name = (f"peer-memory (assumed: peer copy {peer:,.2f} s = the async local stall; "
                        "every failure leaves the peer alive)")
            name = _named(lab, name)
            fig.add_trace(go.Scatter(
                x=part["interval_s"] / 60, y=part["goodput"], customdata=part["interval_s"],
                mode="lines", name=name,
                legendgroup=f"mode-{mode}" if i == 0 else f"mode-{mode}-{i}",
                line=dict(width=3 if mode == mode_here else 1.5, color=MODE_COLOURS.get(mode),
                          dash=DASHES[i % 4]),
                hovertemplate=f"{_named(lab, mode)}: %{{y:.2%}} at %{{x:,.1f}} min "
                              f"(%{{customdata:,.0f}} s)<extra></extra>"))
    low = min(lows)
    df = goodput_series(results)
    up = float(df.loc[df["mode"] == "async", "upload_s"].iloc[0])
    if up > 0:
        fig.add_trace(go.Scatter(x=[up / 60] * 2, y=[low, 1.0], mode="lines",
                                 line=dict(dash="dot", color="grey", width=1),
                                 name=_named(runs[0][0], f"upload {minutes_text(up)}: async snapshots "
                                             "never come faster"),
                                 hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=[r.daly_interval_s / 60] * 2, y=[low, 1.0], mode="lines",
                             line=dict(dash="dash", color="black", width=1),
                             name=_named(runs[0][0], f"Daly: {r.daly_interval_s / 60:,.1f} min "
                                                     f"({chosen_mode} stall)"),
                             hoverinfo="skip"))
    for i, (lab, res) in enumerate(runs):
        rr, mode = res.reliability, res.scenario.checkpoint_mode
        text = f"chosen ({mode}): {rr.interval_s / 60:,.1f} min, goodput {rr.goodput:.2%}"
        fig.add_trace(go.Scatter(x=[rr.interval_s / 60], y=[rr.goodput], mode="markers",
                                 customdata=[rr.interval_s],
                                 marker=dict(size=12, color="#e76f51" if i == 0 else "white",
                                             symbol=SYMBOLS[i % 4],
                                             line=dict(color="#222", width=1.5)),
                                 name=text if i == 0 and not compare else f"{lab}: {text}"
                                 if lab else text,
                                 hovertemplate=f"{_named(lab, text)} "
                                               "(%{customdata:,.0f} s)<extra></extra>"))
        fig.add_annotation(x=math.log10(rr.interval_s / 60), y=rr.goodput,
                           text=_named(lab, f"chosen {rr.interval_s / 60:,.1f} min"),
                           showarrow=True, arrowhead=0, ax=-60, ay=34 + 26 * i, **LABEL_BOX)
    fig.update_yaxes(tickformat=".0%", range=[max(0.0, low - 0.03), 1.01])
    fig.update_xaxes(tickformat=",~r")
    _legend_below(fig)
    return fig


def _cell(fmt: str, x) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "NO"
    return fmt.format(x)


#: a table's plot area at its narrowest (a 1,100 px page) [px], a character of its 12 px
#: font at its widest average [px], and a wrapped line's and a cell's padding [px]
TABLE_MIN_PX, TABLE_CHAR_PX, TABLE_LINE_PX, TABLE_PAD_PX = 540, 6.8, 17, 12


def _lines(text: str, chars: int) -> int:
    """Lines ``text`` wraps to at ``chars`` per line, at spaces (a longer word takes its own
    lines)."""
    n, cur = 0, 0
    for word in str(text).split():
        w = len(word)
        if cur and cur + 1 + w <= chars:
            cur += 1 + w
        else:
            n += 1 + max(0, (w - 1) // max(chars, 1))
            cur = w if w <= chars else w % max(chars, 1)
    return max(n, 1)


def _fit_table(fig: go.Figure, header: list, cells: list, widths=None) -> go.Figure:
    """Size a table so that no row is clipped or scrolled at the narrowest page: column
    weights from the longest word of each column (or ``widths``), each row's height from the
    lines its cells wrap to, the figure's height their sum."""
    if widths is None:
        widths = [max([len(w) for w in str(h).split()] + [len(w) for x in col
                                                         for w in str(x).split()] + [4])
                  for h, col in zip(header, cells)]
        widths = [min(w, 40) for w in widths]
    total = float(sum(widths))
    chars = [max(3, int(TABLE_MIN_PX * w / total / TABLE_CHAR_PX) - 1) for w in widths]
    head_lines = max(_lines(h, c) for h, c in zip(header, chars))
    rows = len(cells[0]) if cells else 0
    row_lines = [max(_lines(col[r], c) for col, c in zip(cells, chars)) for r in range(rows)]
    head_px = TABLE_PAD_PX + TABLE_LINE_PX * head_lines
    body_px = sum(TABLE_PAD_PX + TABLE_LINE_PX * n for n in row_lines)
    fig.update_traces(columnwidth=list(widths), header=dict(height=head_px),
                      cells=dict(height=TABLE_PAD_PX + TABLE_LINE_PX))
    top, bottom = fig.layout.margin.t or 60, 20
    height = int(top + head_px + body_px + bottom + 10)
    title = fig.layout.title.text or ""
    fig.update_layout(height=height, margin=dict(b=bottom),
                      title=_title(title.replace("<br>", " "), height))
    return fig


def storage_tiers_table(results: Results, *, compare=(), label=None) -> go.Figure:
    """What each storage tier must carry vs what it offers (hot per node, warm aggregate).
    A table: the current scenario's only, whatever ``compare`` holds."""
    from .review.series import storage_tiers
    df = storage_tiers(results)
    cols = {"tier": ("tier", "{}"), "role": ("role", "{}"), "per": ("per", "{}"),
            "checkpoints_kept": ("copies kept", "{:.0f}"),
            "capacity_needed_tb": ("capacity needed (TB)", "{:,.3g}"),
            "write_burst_needed_gb_per_s": ("burst write needed (GB/s)", "{:,.3g}"),
            "write_average_needed_gb_per_s": ("average write needed (GB/s)", "{:,.3g}"),
            "offered_write_gb_per_s": ("write offered (GB/s)", "{:,.3g}"),
            "read_gb_per_s": ("data reads (GB/s)", "{:,.3g}"),
            "meets_burst": ("meets burst", "{}"), "meets_average": ("meets average", "{}")}
    fig = _fig(f"Storage tiers for {results.scenario.checkpoint_mode} checkpoints: needed vs "
               "offered", height=200 + 40 * len(df))
    header = [cols[c][0] for c in cols]
    cells = [[_cell(cols[c][1], x) for x in df[c]] for c in cols]
    fig.add_trace(go.Table(header=dict(values=header), cells=dict(values=cells)))
    return _fit_table(fig, header, cells)


def notice_table(results: Results, *, compare=(), label=None) -> go.Figure:
    """Checkpoint-on-notice: one preempted node's share of the checkpoint, written to local
    NVMe or the shared tier, against AWS's 2 min and GCP's 30 s spot notices. A table: the
    current scenario's only."""
    from .review.series import notice_checks
    df = notice_checks(results)
    cols = {"cloud": ("cloud", "{}"), "notice_s": ("notice (s)", "{:,.0f}"),
            "detect_s": ("detection (s)", "{:,.0f}"), "target": ("written to", "{}"),
            "node_gb": ("GB per node", "{:,.3g}"), "write_gb_per_s": ("write (GB/s)", "{:,.3g}"),
            "write_s": ("detect + write (s)", "{:,.1f}"), "slack_s": ("slack (s)", "{:,.1f}"),
            "fits": ("fits", "{}")}
    fig = _fig("Checkpoint on a spot notice (a local NVMe copy survives only if the disk "
               "outlives the node)", height=170 + 30 * len(df))
    header = [cols[c][0] for c in cols]
    cells = [[_cell(cols[c][1], x) for x in df[c]] for c in cols]
    fig.add_trace(go.Table(header=dict(values=header), cells=dict(values=cells)))
    return _fit_table(fig, header, cells)


def utilization_vs_published(mu, runs: pd.DataFrame, *, compare=(), label=None) -> go.Figure:
    """``mu``: :func:`llmcost.review.measured_utilization`; ``runs``: the catalog's published
    runs. ``compare``: (label, measured run) of pinned scenarios, a bar each."""
    runs = runs.assign(value=runs["mfu"].fillna(runs["pct_of_peak"])).dropna(subset=["value"])
    fig = _fig("Your run vs published runs", yaxis_title="share of dense peak", height=400)
    fig.add_trace(go.Bar(x=list(runs["id"]), y=runs["value"], name="published",
                         hovertext=runs["source"], marker_color="#4c78a8",
                         hovertemplate="%{x}: %{y:.1%}<br>%{hovertext}<extra></extra>"))
    mine = _runs(mu, compare, label)
    for i, (lab, m) in enumerate(mine):
        name = "your run" if lab is None else f"{lab}: your run"
        if m.effective_utilization > 1:
            # above the peak is not a utilization: the page says so, the axis does not show it
            continue
        fig.add_trace(go.Bar(x=[name], y=[m.effective_utilization], name=name,
                             marker_color="#e76f51" if i == 0 else SCENARIO_COLOURS[i % 4],
                             hovertemplate="%{x}: %{y:.1%}<extra></extra>"))
    fig.add_hline(y=0.6, line_dash="dot", annotation_text="above 60%: rarer than any large run",
                  annotation=dict(bgcolor=LABEL_BOX["bgcolor"]))
    fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    _legend_below(fig, y=-0.3)
    return fig


def frame_table(df: pd.DataFrame, title: str, columns: dict, widths=None) -> go.Figure:
    """The first 10 rows of ``df`` as a table, ``columns``: column -> (header, format); sized
    so that no row is clipped (:func:`_fit_table`)."""
    cols = [c for c in columns if c in df]
    fig = _fig(title, height=80 + 28 * min(len(df), 10))
    header = [columns[c][0] for c in cols]
    cells = [[columns[c][1].format(x) for x in df[c].head(10)] for c in cols]
    fig.add_trace(go.Table(header=dict(values=header), cells=dict(values=cells)))
    return _fit_table(fig, header, cells, widths)


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


def cluster_busbw(check: dict) -> go.Figure:
    """Measured bus bandwidth against message size with the expected curve, per collective:
    ``check`` is :func:`llmcost.checks.check.check`'s dict (its ``collectives`` rows)."""
    rows = check.get("collectives") or []
    if not rows:
        return _empty("Bus bandwidth vs message size", "no nccl-tests output read")
    judged = any(r["expected_busbw_gb_per_s"] is not None for r in rows)
    fig = _fig("Bus bandwidth vs message size: measured" + (" and expected" if judged else
                                                            " (placement unknown: no expectation)"),
               height=380)
    for op, colour in zip(dict.fromkeys(r["op"] for r in rows), SCENARIO_COLOURS * 3):
        mine = [r for r in rows if r["op"] == op]
        x = [r["size_bytes"] for r in mine]
        fig.add_trace(go.Scatter(x=x, y=[r["busbw_gb_per_s"] for r in mine], mode="lines+markers",
                                 name=f"{op} measured", line=dict(color=colour)))
        if any(r["expected_busbw_gb_per_s"] is not None for r in mine):
            fig.add_trace(go.Scatter(x=x, y=[r["expected_busbw_gb_per_s"] for r in mine],
                                     mode="lines", name=f"{op} expected",
                                     line=dict(color=colour, dash="dash")))
    fig.update_xaxes(type="log", title="message size [bytes]")
    fig.update_yaxes(title="bus bandwidth [GB/s]", rangemode="tozero")
    return _legend_below(fig)


def cluster_steps(step, step_time_s, predicted_step_time_s=None, band_s=None) -> go.Figure:
    """Step time over the logged steps, with the predicted step time as a line and the step
    model's band around it.

    Parameters
    ----------
    step, step_time_s : array
        From :class:`llmcost.checks.train_log.TrainLog` [-], [s].
    predicted_step_time_s : float, optional
        The review's prediction for the run's layout [s].
    band_s : (float, float), optional
        The prediction band of the step time [s] (``steps["predicted_step_time_band_s"]``).
    """
    step, t = np.asarray(step, float), np.asarray(step_time_s, float)
    ok = np.isfinite(t)
    if not ok.any():
        return _empty("Step time over the run", "the log gives no step time")
    fig = _fig("Step time over the run, measured"
               + (" and predicted" if predicted_step_time_s else ""), height=340)
    fig.add_trace(go.Scatter(x=step[ok].tolist(), y=t[ok].tolist(), mode="lines+markers", name="measured",
                             line=dict(color=SCENARIO_COLOURS[0])))
    ends = [float(step[ok].min()), float(step[ok].max())]
    if band_s:
        fig.add_trace(go.Scatter(x=ends, y=[band_s[1]] * 2, mode="lines", showlegend=False,
                                 line=dict(width=0), hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=ends, y=[band_s[0]] * 2, mode="lines", name="prediction band",
                                 line=dict(width=0), fill="tonexty",
                                 fillcolor=_tint(SCENARIO_COLOURS[1], 0.2)))
    if predicted_step_time_s:
        fig.add_trace(go.Scatter(x=ends,
                                 y=[predicted_step_time_s] * 2, mode="lines", name="predicted",
                                 line=dict(color=SCENARIO_COLOURS[1], dash="dash")))
    fig.update_xaxes(title="step")
    fig.update_yaxes(title="step time [s]", rangemode="tozero")
    return _legend_below(fig)


def serving_pareto(answer: dict) -> go.Figure:
    """Output tokens/s per GPU against TPOT across the planner's layouts and concurrencies,
    the Pareto front as InferenceX draws it: ``answer`` is ``llmcost serve``'s dict (its
    ``pareto`` points, from :func:`llmcost.serving.serve.plan`)."""
    pts = answer.get("pareto") or []
    if not pts:
        return _empty("Throughput per GPU vs TPOT", "no layout fits: no front to draw")
    fig = _fig("Throughput per GPU vs time per output token: the best layouts", height=380)
    fig.add_trace(go.Scatter(
        x=[p["tpot_ms"] for p in pts], y=[p["output_tokens_per_s_per_gpu"] for p in pts],
        mode="lines+markers", name="Pareto front", line=dict(color=SCENARIO_COLOURS[0]),
        text=[f"TP{p['tp']} EP{p['ep']}, {p['concurrency']} in flight" for p in pts],
        hovertemplate="%{text}<br>TPOT %{x:.1f} ms<br>%{y:,.0f} tokens/s per GPU<extra></extra>"))
    if "tpot_ms" in answer:
        fig.add_trace(go.Scatter(x=[answer["tpot_ms"]], y=[answer["output_tokens_per_s_per_gpu"]],
                                 mode="markers", name="chosen", marker=dict(size=12,
                                                                             symbol="star")))
    fig.update_xaxes(title="TPOT [ms]", rangemode="tozero")
    fig.update_yaxes(title="output tokens/s per GPU", rangemode="tozero")
    return _legend_below(fig)


def serving_memory(answer: dict, memory_gb: float) -> go.Figure:
    """One GPU's HBM split: weights, KV cache at the answer's concurrency, activations and
    what is left [GB]; ``memory_gb`` the GPU's HBM [GB]."""
    parts = {"weights": answer.get("weights_gb_per_gpu", 0.0),
             "KV cache": answer.get("kv_gb_per_gpu", 0.0),
             "activations": answer.get("activations_gb_per_gpu", 0.0)}
    free = memory_gb - sum(parts.values())
    fig = _fig(f"Memory per GPU: {sum(parts.values()):,.1f} of {memory_gb:,.1f} GB"
               + ("" if free >= 0 else " (does not fit)"), height=260)
    for (name, gb), colour in zip(list(parts.items()) + [("free", max(free, 0.0))],
                                  list(SCENARIO_COLOURS[:len(parts)]) + ["#dddddd"]):
        fig.add_trace(go.Bar(x=[gb], y=["GPU"], orientation="h", name=name,
                             marker=dict(color=colour)))
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title="GB (1e9 bytes)")
    return _legend_below(fig, y=-0.5)


def serving_cost(answer: dict) -> go.Figure:
    """$ per million output tokens by pricing option (all GPU time charged to outputs)."""
    usd = answer.get("usd_per_million_output_tokens") or {}
    if not usd:
        return _empty("$ per million output tokens", "no price for this GPU in the catalog")
    names = list(usd)
    fig = _fig("$ per million output tokens by pricing option", height=320)
    fig.add_trace(go.Bar(x=[OPTION_LABELS.get(k, k) for k in names], y=[usd[k] for k in names],
                         marker=dict(color=SCENARIO_COLOURS[0]),
                         text=[f"${usd[k]:,.3f}" for k in names], textposition="outside"))
    fig.update_yaxes(title="USD per 1e6 output tokens", rangemode="tozero")
    return fig


#: a colour per GPU of the comparison (cycled)
OFFER_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6",
                 "#9d755d", "#bab0ac", "#eeca3b")


def offers_cost_days(comparison) -> go.Figure:
    """Cost against forecast days of one run, a marker per GPU x offer x option that has a
    cost (:func:`llmcost.review.compare.compare`), a colour per GPU; a GPU without
    calibration hollow, a spot row beyond its documented capacity a cross."""
    rows = [r for r in comparison.rows if r.cost_usd is not None and r.days is not None]
    if not rows:
        return _empty("Cost and days by GPU, offer and option", "no offer prices this run")
    fig = _fig("Cost and days of the run by GPU, offer and option (hollow: no calibration; "
               "x: spot capacity not documented)", height=420,
               xaxis_title="forecast days", yaxis_title="cash cost [USD]")
    for gpu, colour in zip(dict.fromkeys(r.gpu for r in rows), OFFER_COLOURS * 3):
        mine = [r for r in rows if r.gpu == gpu]
        fig.add_trace(go.Scatter(
            x=[r.days for r in mine], y=[r.cost_usd for r in mine], mode="markers", name=gpu,
            marker=dict(color=colour, size=10, line=dict(color=colour, width=2),
                        symbol=["x" if r.flag else "circle" if r.calibrated else "circle-open"
                                for r in mine]),
            text=[f"{r.offer or 'buy'} · {OPTION_LABELS.get(r.option, r.option)}"
                  for r in mine],
            hovertemplate="%{text}<br>%{x:.1f} days, $%{y:,.0f}<extra>" + gpu + "</extra>"))
    fig.update_yaxes(rangemode="tozero", tickprefix="$")
    fig.update_xaxes(rangemode="tozero")
    return _legend_below(fig)
