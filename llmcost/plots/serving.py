"""The serving app's figures: throughput per GPU against TPOT, one GPU's memory, and the
cost per million output tokens."""

from __future__ import annotations

import plotly.graph_objects as go

from ..review import OPTION_LABELS
from .base import SCENARIO_COLOURS, _empty, _fig, _legend_below


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
    if answer.get("tpot_ms") is not None:
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
    if not answer.get("fits", True):
        return _empty("$ per million output tokens", "the load does not fit: nothing to price")
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
