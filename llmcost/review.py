"""evaluate(Scenario) -> Results: the numbers an architecture review asks for, in one place.

The apps and the HTML report read these results; they compute nothing themselves.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import pandas as pd

from . import catalog
from . import utilization as ut
from .economics import reliability as rel
from .economics import sizing, spot, tco
from .economics.waterfall import waterfall_from_step
from .scenario import Scenario, describe
from .training import planner
from .training.memory import memory_per_gpu
from .training.step import Options, predict_step

#: The planner's space inside the apps: every TP/PP, the common choices of the rest (a full
#: search is `llmcost plan`); keeps a control change well under a second.
REVIEW_SPACE = planner.Space(cp=(1, 2), micro_batch=(1, 2), zero_stage=(1, 3),
                             recompute=("none", "selective", "full"), interleave=(1, 2, 4),
                             flash_attention=(True,), tp_comm_overlap=(False,))
OPTIONS = Options(flash_attention=True)


@dataclass
class Results:
    scenario: Scenario
    headline: dict
    layouts: pd.DataFrame
    best: dict
    memory_gb: dict
    waterfall: pd.DataFrame
    run_costs_usd: dict
    run_days: dict
    reliability: dict
    tco: dict
    spot: dict
    notes: list = field(default_factory=list)
    sizing: object = None


def _node_prices(s: Scenario) -> tco.CloudPrices:
    return tco.CloudPrices(on_demand=s.on_demand_usd_per_node_hour,
                           reserved_1y=s.reserved_1y_usd_per_node_hour,
                           reserved_3y=s.reserved_3y_usd_per_node_hour,
                           spot=s.spot_usd_per_node_hour)


def onprem_of(s: Scenario) -> tco.OnPrem:
    return tco.OnPrem(server_usd=s.onprem_capex_usd_per_node,
                      power_w=s.onprem_power_kw_per_node * 1000, pue=s.pue,
                      usd_per_kwh=s.usd_per_kwh,
                      staff_usd_per_month=s.onprem_other_usd_per_node_month,
                      life_years=s.life_years, residual_share=s.residual_share)


def evaluate(s: Scenario) -> Results:
    """All headline figures, tables and series of a review for one Scenario."""
    cat = catalog.default()
    m, g = cat.model(s.model), cat.gpu(s.gpu)
    up, out = cat.fabric(g.scale_up), cat.fabric(s.fabric)
    node = g.gpus_per_node
    seq = m.seq_len
    B = max(1, int(round(s.global_batch_tokens / seq)))
    notes = []

    sized = None
    if s.sizing == "days":
        sized = sizing.size_cluster(m, s.tokens, g, up, out, s.target_days, s.global_batch_tokens,
                                    s.headroom, options=OPTIONS)
        notes += list(sized.notes)
        gpus = sized.gpus or s.gpus
        if sized.global_batch and sized.global_batch != B:
            notes.append(f"global batch rounded from {B} to {sized.global_batch} sequences to "
                         f"split evenly over {gpus} GPUs")
            B = sized.global_batch
    else:
        gpus = s.gpus

    P = planner.plan(m, g, up, out, gpus, B, REVIEW_SPACE, OPTIONS,
                     usd_per_gpu_hour=s.on_demand_usd_per_node_hour / node)
    if P.evaluated == 0:
        raise ValueError(f"no valid layout for {gpus} GPUs and a global batch of {B} sequences: "
                         f"use a GPU count that is a multiple of {node} and a power-of-two-friendly batch")
    fitting = planner.distinct(P.layouts[P.layouts["fits"]])
    if fitting.empty:
        notes.append(f"{m.id} does not fit on {gpus} x {g.id} in any layout tried: showing the "
                     "smallest-memory layout; add GPUs or pick a larger GPU")
        best_row = P.layouts.sort_values("memory_gb").iloc[0]
        layouts = planner.distinct(P.layouts.sort_values("memory_gb")).head(10)
    else:
        best_row = fitting.iloc[0]
        layouts = fitting.head(10)
    best = {k: (x.item() if hasattr(x, "item") else x) for k, x in best_row.items()}
    best["description"] = planner.describe_layout(best_row)

    pred = predict_step(m, g, up, out, gpus, best["tp"], best["pp"], B, best["cp"],
                        best["micro_batch"], best["interleave"], best["recompute"],
                        best["sequence_parallel"], best["zero_stage"], OPTIONS,
                        flash_attention=best["flash_attention"])
    mem = memory_per_gpu(m, gpus, best["tp"], best["pp"], best["cp"], best["zero_stage"],
                         best["micro_batch"], B, best["recompute"], best["sequence_parallel"],
                         best["flash_attention"], interleave=best["interleave"])
    memory_gb = {k: float(x) for k, x in mem.to_gb().items()}

    # ---- failures and checkpoints at this size
    nodes = max(1, math.ceil(gpus / node))
    mtbf_h = s.mtbf_h if s.mtbf_h > 0 else float(rel.mtbf_h(rel.job_failures_per_day(
        nodes, s.node_failures_per_1000_node_days)))
    size_b = float(rel.checkpoint_size_bytes(m.params))
    stall = float(rel.checkpoint_stall_s(size_b, s.checkpoint_mode, nodes, s.shared_storage_gbps,
                                         local_write_gbps=s.local_write_gbps,
                                         gpus_per_node=node))
    M = mtbf_h * 3600
    interval = s.checkpoint_interval_s if s.checkpoint_interval_s > 0 else float(
        rel.daly_interval_s(stall, M))
    gb = rel.goodput_breakdown(interval, stall, M, s.restart_s)
    reliability = {"mtbf_h": mtbf_h, "checkpoint_bytes": size_b, "checkpoint_stall_s": stall,
                   "interval_s": interval, "young_interval_s": float(rel.young_interval_s(stall, M)),
                   "daly_interval_s": float(rel.daly_interval_s(stall, M)),
                   "goodput": float(gb.goodput), "checkpoint_share": float(gb.checkpoint_share),
                   "rework_share": float(gb.rework_share), "restart_share": float(gb.restart_share),
                   "nodes": nodes}

    # ---- days and dollars
    tps = float(pred.tokens_per_s)
    useful = float(gb.goodput) * (1 - s.data_stall_share)
    days = s.tokens / tps / useful / 86400
    sp = spot.spot_net_savings(s.spot_discount, s.preemptions_per_day,
                               s.lost_hours_per_preemption, s.restart_h, s.capacity_wait_h)
    spot_days = days * float(sp.duration_stretch)
    node_hours = nodes * days * 24
    prem = onprem_of(s)
    per_gpu_h = tco.cost_per_useful_gpu_hour(s.horizon_months, s.utilization, _node_prices(s),
                                             prem, gpus_per_node=node)
    run_costs = {
        "on_demand": node_hours * s.on_demand_usd_per_node_hour,
        "reserved_1y": node_hours * s.reserved_1y_usd_per_node_hour,
        "reserved_3y": node_hours * s.reserved_3y_usd_per_node_hour,
        # billed node-hours stretch by preemptions (less any unbilled capacity wait)
        "spot": node_hours * s.spot_usd_per_node_hour * float(sp.spot_cost_share)
        / (1 - s.spot_discount),
        "on_prem": node_hours * node * float(per_gpu_h["on_prem"]),
    }
    run_days = {k: days for k in run_costs}
    run_days["spot"] = spot_days

    fpt = m.flops_per_token("none")
    wf = waterfall_from_step(pred, g.bf16_dense_tflops, data_stall_share=s.data_stall_share,
                             checkpoint_share=float(gb.checkpoint_share),
                             failure_share=float(gb.rework_share + gb.restart_share),
                             flops_per_token=fpt,
                             usd_per_gpu_hour=s.on_demand_usd_per_node_hour / node)
    eff_util = float(wf["share_of_peak"].iloc[-1])
    verdict = ut.assess_utilization(float(pred.mfu))

    # ---- rent vs buy, spot
    be = float(tco.breakeven_months(s.on_demand_usd_per_node_hour, s.onprem_capex_usd_per_node,
                                    s.utilization,
                                    float(tco.onprem_opex_usd_per_month(prem, s.utilization))))
    tco_res = {"breakeven_months": be if math.isfinite(be) else None,
               "usd_per_useful_gpu_hour": {k: float(x) for k, x in per_gpu_h.items()}}
    spot_res = {"net_savings": float(sp.net_savings), "duration_stretch": float(sp.duration_stretch),
                "breakeven_lost_hours": float(spot.breakeven_lost_hours(
                    s.spot_discount, s.preemptions_per_day)) if s.preemptions_per_day > 0 else None}
    if s.preemptions_per_day > 0 and s.observed_net_savings <= s.spot_discount:
        spot_res["implied_lost_hours"] = float(spot.implied_lost_hours(
            s.spot_discount, s.preemptions_per_day, s.observed_net_savings))

    headline = {
        "days": days,
        "cost_on_demand_usd": run_costs["on_demand"],
        "gpus": gpus,
        "mfu": float(pred.mfu),
        "effective_utilization": eff_util,
        "memory_gb_per_gpu": memory_gb["total_gb"],
        "capacity_gb": g.memory_bytes / 1e9,
        "fits": bool(pred.fits),
        "best_layout": best["description"],
        "goodput": float(gb.goodput),
    }
    if sized is not None:
        headline["meets_target"] = bool(sized.meets_target)
    notes += [f.message for f in verdict.findings]
    return Results(s, headline, layouts, best, memory_gb, wf, run_costs, run_days, reliability,
                   tco_res, spot_res, notes, sized)


HEADLINE_LABELS = {
    "days": ("Days to train", "{:,.1f}"),
    "cost_on_demand_usd": ("Cost on demand", "${:,.0f}"),
    "gpus": ("GPUs", "{:,}"),
    "mfu": ("MFU", "{:.1%}"),
    "effective_utilization": ("Effective utilization", "{:.1%}"),
    "memory_gb_per_gpu": ("Memory per GPU (GB)", "{:,.1f}"),
    "fits": ("Fits in memory", "{}"),
    "best_layout": ("Best layout", "{}"),
    "goodput": ("Goodput", "{:.1%}"),
    "meets_target": ("Meets target days", "{}"),
}


def format_headline(key: str, value) -> str:
    label, fmt = HEADLINE_LABELS.get(key, (key, "{}"))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return fmt.format(value)


def assumptions_table(s: Scenario) -> pd.DataFrame:
    rows = []
    for k, val in s.to_dict().items():
        d = describe(k)
        rows.append({"group": d["group"], "setting": d["label"], "value": val, "unit": d["unit"],
                     "key": k})
    return pd.DataFrame(rows)


def html_report(results: Results, figures: dict | None = None, title="llmcost review") -> str:
    """A standalone HTML page: assumptions, headline figures, notes and plots (plotly.js
    embedded once, so the file opens offline)."""
    s = results.scenario
    head = "".join(f"<tr><th>{html.escape(HEADLINE_LABELS.get(k, (k,))[0])}</th>"
                   f"<td>{html.escape(format_headline(k, x))}</td></tr>"
                   for k, x in results.headline.items())
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in results.notes) or "<li>none</li>"
    assumptions = assumptions_table(s).drop(columns=["key"]).to_html(index=False, border=0)
    plots = ""
    first = True
    for name, fig in (figures or {}).items():
        plots += f"<h3>{html.escape(name)}</h3>" + fig.to_html(
            full_html=False, include_plotlyjs=True if first else False)
        first = False
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}}
table{{border-collapse:collapse}}td,th{{padding:2px 10px;text-align:left;border-bottom:1px solid #ddd}}</style>
</head><body><h1>{html.escape(title)}</h1>
<p>Model {html.escape(s.model)} on {results.headline['gpus']:,} x {html.escape(s.gpu)}
({html.escape(s.fabric)}). Generated by llmcost.</p>
<h2>Headline</h2><table>{head}</table>
<h2>Notes</h2><ul>{notes}</ul>
<h2>Plots</h2>{plots}
<h2>Assumptions</h2>{assumptions}
</body></html>"""


def scenario_table(results: Results) -> pd.DataFrame:
    return pd.DataFrame([{"option": k, "days": results.run_days[k], "cost_usd": c}
                         for k, c in results.run_costs_usd.items()])
