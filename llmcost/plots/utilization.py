"""The utilization app's figures: a measured run against published ones, and the cluster
check's bus bandwidth and step times."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .base import LABEL_BOX, SCENARIO_COLOURS, _empty, _fig, _legend_below, _runs, _tint


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
