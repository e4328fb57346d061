"""The offers app's figure: cost against days per GPU, offer and way to pay."""

from __future__ import annotations

import plotly.graph_objects as go

from ..review import OPTION_LABELS
from .base import _empty, _fig, _legend_below

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
