"""evaluate(Scenario) -> Results: the numbers an architecture review asks for, in one place.

The apps and the HTML report read these results; they compute nothing themselves.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np
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
    """Cloud prices per node-hour; spot carries its preemption overhead (billed hours per
    useful hour, from the spot model) so that every option buys the same useful work."""
    try:
        sp = spot.spot_net_savings(s.spot_discount, s.preemptions_per_day,
                                   s.lost_hours_per_preemption, s.restart_h, s.capacity_wait_h)
        overhead = max(1.0, float(sp.spot_cost_share) / (1 - s.spot_discount))
    except ValueError:
        overhead = 1.0
    return tco.CloudPrices(on_demand=s.on_demand_usd_per_node_hour,
                           reserved_1y=s.reserved_1y_usd_per_node_hour or None,
                           reserved_3y=s.reserved_3y_usd_per_node_hour or None,
                           spot=s.spot_usd_per_node_hour or None, spot_overhead=overhead)


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

    # the days-vs-GPUs curve is shown either way; it picks the size only when sizing by days
    sized = sizing.size_cluster(m, s.tokens, g, up, out, s.target_days, s.global_batch_tokens,
                                s.headroom, options=OPTIONS)
    if s.sizing == "days":
        notes += list(sized.notes)
        gpus = sized.gpus or s.gpus
        if sized.global_batch and sized.global_batch != B:
            notes.append(f"global batch rounded from {B} to {sized.global_batch} sequences to "
                         f"split evenly over {gpus} GPUs")
            B = sized.global_batch
    else:
        gpus = s.gpus

    B2 = _splittable_batch(m, gpus, B, node)
    if B2 is None:
        raise ValueError(f"no valid layout for {gpus} GPUs near a global batch of {B} sequences: "
                         f"try a GPU count that is a multiple of {node}")
    if B2 != B:
        notes.append(f"global batch adjusted from {B} to {B2} sequences so that it splits evenly "
                     f"over {gpus} GPUs")
        B = B2
    P = planner.plan(m, g, up, out, gpus, B, REVIEW_SPACE, OPTIONS,
                     usd_per_gpu_hour=s.on_demand_usd_per_node_hour / node)
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
    memory_gb = {k: float(x) for k, x in pred.memory.to_gb().items()}

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
                   "nodes": nodes,
                   "bandwidth_for_10s_gbps": float(rel.storage_bandwidth_for_stall_gbps(size_b, 10.0))}

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
    run_costs = {"on_demand": node_hours * s.on_demand_usd_per_node_hour}
    if s.reserved_1y_usd_per_node_hour:
        run_costs["reserved_1y"] = node_hours * s.reserved_1y_usd_per_node_hour
    if s.reserved_3y_usd_per_node_hour:
        run_costs["reserved_3y"] = node_hours * s.reserved_3y_usd_per_node_hour
    if s.spot_usd_per_node_hour:
        # billed node-hours stretch by preemptions (less any unbilled capacity wait)
        run_costs["spot"] = (node_hours * s.spot_usd_per_node_hour * float(sp.spot_cost_share)
                             / (1 - s.spot_discount))
    run_costs["on_prem"] = node_hours * node * float(per_gpu_h["on_prem"])
    run_days = {k: spot_days if k == "spot" else days for k in run_costs}

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
    if s.sizing == "days":
        headline["meets_target"] = bool(sized.meets_target)
    notes += [f.message for f in verdict.findings]
    return Results(s, headline, layouts, best, memory_gb, wf, run_costs, run_days, reliability,
                   tco_res, spot_res, notes, sized)


def _splittable_batch(m, gpus, B, node):
    """B if some layout splits it over ``gpus``; else, within 5% (then 12.5%, 25%), the batch
    with the most valid layouts (the nearest on ties); None if there is none."""
    def count(b):
        return len(planner.enumerate_layouts(m, gpus, b, node, REVIEW_SPACE)["tp"])

    if count(B):
        return B
    for band in (0.05, 0.125, 0.25):
        lo, hi = max(1, int(B * (1 - band))), int(B * (1 + band)) + 1
        scored = [(count(b), -abs(b - B), b) for b in range(lo, hi)]
        best = max(scored)
        if best[0] > 0:
            return best[2]
    return None


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


# ------------------------------------------------------------------ series for the apps

def layout_memory(results: Results, top: int = 5) -> pd.DataFrame:
    """Memory per GPU by component for the top layouts (one vectorized call)."""
    s = results.scenario
    cat = catalog.default()
    m = cat.model(s.model)
    L = results.layouts.head(top)
    if L.empty:
        return pd.DataFrame()
    B = int(L["num_microbatches"].iloc[0] * L["micro_batch"].iloc[0] * L["dp"].iloc[0])
    mem = memory_per_gpu(m, L["gpus"].to_numpy(), L["tp"].to_numpy(), L["pp"].to_numpy(),
                         L["cp"].to_numpy(), L["zero_stage"].to_numpy(),
                         L["micro_batch"].to_numpy(), B, L["recompute"].to_numpy(),
                         L["sequence_parallel"].to_numpy(), L["flash_attention"].to_numpy(),
                         interleave=L["interleave"].to_numpy())
    df = pd.DataFrame({k: np.atleast_1d(x) for k, x in mem.to_gb().items()})
    df.insert(0, "layout", [planner.describe_layout(r) for _, r in L.iterrows()])
    return df


def tco_series(s: Scenario, months=None) -> pd.DataFrame:
    """Cumulative cost per node of each option over the horizon (months 0..horizon)."""
    months = np.linspace(0, s.horizon_months, 121) if months is None else np.asarray(months)
    costs = tco.option_costs_usd(months, s.utilization, _node_prices(s), onprem_of(s),
                                 include_residual=False)
    df = pd.DataFrame({"months": months, **{k: np.broadcast_to(x, months.shape) for k, x in costs.items()}})
    return df


def decision_grid(s: Scenario, utilization=None, months=None):
    u = np.linspace(0.1, 1.0, 19) if utilization is None else np.asarray(utilization)
    m = np.array([3, 6, 9, 12, 18, 24, 36, 48, 60]) if months is None else np.asarray(months)
    # cash view: hardware bought for the horizon is not assumed resold at book value
    names, best, costs = tco.decision_map(u, m, _node_prices(s), onprem_of(s),
                                          include_residual=False)
    return u, m, names, best


def breakeven_tornado(s: Scenario, swing=0.2) -> pd.DataFrame:
    """Breakeven month when each input moves +-swing (the rest held): a tornado chart."""
    def be(**kw):
        x = {"price": s.on_demand_usd_per_node_hour, "capex": s.onprem_capex_usd_per_node,
             "utilization": s.utilization, "power": s.onprem_power_kw_per_node,
             "kwh": s.usd_per_kwh, "pue": s.pue, "other": s.onprem_other_usd_per_node_month}
        x.update(kw)
        prem = tco.OnPrem(server_usd=x["capex"], power_w=x["power"] * 1000, pue=max(1.0, x["pue"]),
                          usd_per_kwh=x["kwh"], staff_usd_per_month=x["other"])
        u = min(1.0, x["utilization"])
        m = float(tco.breakeven_months(x["price"], x["capex"], u,
                                       float(tco.onprem_opex_usd_per_month(prem, u))))
        return m if math.isfinite(m) else np.nan

    base = be()
    labels = {"price": "cloud price", "capex": "capex per node", "utilization": "utilization",
              "power": "power per node", "kwh": "electricity price", "pue": "PUE"}
    cur = {"price": s.on_demand_usd_per_node_hour, "capex": s.onprem_capex_usd_per_node,
           "utilization": s.utilization, "power": s.onprem_power_kw_per_node,
           "kwh": s.usd_per_kwh, "pue": s.pue}
    rows = [{"input": labels[k], "low": be(**{k: val * (1 - swing)}), "high": be(**{k: val * (1 + swing)}),
             "base": base} for k, val in cur.items()]
    df = pd.DataFrame(rows)
    df["span"] = (df["high"] - df["low"]).abs()
    return df.sort_values("span").reset_index(drop=True)


def spot_grid(s: Scenario, rates=None, lost=None):
    r = np.linspace(0, 6, 61) if rates is None else np.asarray(rates)
    L = np.linspace(0, 8, 81) if lost is None else np.asarray(lost)
    R, LL = np.meshgrid(r, L, indexing="ij")
    ok = R * (LL + s.restart_h + s.capacity_wait_h) < 24
    sav = np.full(R.shape, np.nan)
    res = spot.spot_net_savings(s.spot_discount, R[ok], LL[ok], s.restart_h, s.capacity_wait_h)
    sav[ok] = res.net_savings
    return r, L, sav


def spot_distribution(s: Scenario, run_hours=24 * 18.0, runs=20_000, seed=0):
    return spot.spot_monte_carlo(s.spot_discount, s.preemptions_per_day, run_hours,
                                 lost_hours_per_preemption=s.lost_hours_per_preemption,
                                 restart_h=s.restart_h, capacity_wait_h=s.capacity_wait_h,
                                 runs=runs, seed=seed)


def scaling_series(s: Scenario, results: Results, fabrics=("ib-ndr", "roce-400"), nodes=None):
    """Predicted MFU and efficiency vs node count for the best layout on each fabric."""
    from .training.scaling import weak_scaling
    cat = catalog.default()
    m, g = cat.model(s.model), cat.gpu(s.gpu)
    b = results.best
    unit = b["tp"] * b["pp"] * b["cp"]
    first = max(1, int(math.ceil(unit / g.gpus_per_node)))
    nodes = np.array([first * 2**k for k in range(0, 9)]) if nodes is None else np.asarray(nodes)
    seqs = max(1, int(b["num_microbatches"] * b["micro_batch"]))
    out = []
    for f in dict.fromkeys((s.fabric, *fabrics)):
        try:
            t, _ = weak_scaling(m, g, cat.fabric(g.scale_up), cat.fabric(f), nodes, b["tp"], b["pp"],
                                b["cp"], seqs, b["micro_batch"], b["zero_stage"], b["recompute"],
                                b["sequence_parallel"], b["interleave"], OPTIONS)
        except ValueError:
            continue
        t["fabric"] = f
        out.append(t)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def goodput_series(results: Results, points=200) -> pd.DataFrame:
    r = results.reliability
    s = results.scenario
    M = r["mtbf_h"] * 3600
    taus = np.geomspace(max(r["daly_interval_s"] / 20, 1), r["daly_interval_s"] * 20, points)
    df = pd.DataFrame({"interval_s": taus})
    cat = catalog.default()
    g = cat.gpu(s.gpu)
    for mode in ("sync", "async"):
        stall = float(rel.checkpoint_stall_s(r["checkpoint_bytes"], mode, r["nodes"],
                                             s.shared_storage_gbps, local_write_gbps=s.local_write_gbps,
                                             gpus_per_node=g.gpus_per_node))
        df[mode] = rel.goodput(taus, stall, M, s.restart_s)
        df[f"{mode}_stall_s"] = stall
    return df


def measured_utilization(s: Scenario) -> dict:
    """The effective-utilization app's numbers for the measured run in the Scenario."""
    cat = catalog.default()
    m, g = cat.model(s.model), cat.gpu(s.gpu)
    fpt = s.measured_flops_per_token or m.flops_per_token("none", int(s.measured_seq_len))
    peak = s.measured_peak_tflops or g.bf16_dense_tflops
    u = float(ut.effective_utilization(fpt, s.measured_global_batch, s.measured_seq_len,
                                       s.measured_steps, peak, s.measured_gpus,
                                       s.measured_wall_clock_s))
    tps = s.measured_global_batch * s.measured_seq_len * s.measured_steps / s.measured_wall_clock_s
    hw = m.flops_per_token("full", int(s.measured_seq_len))
    runs = cat.published_runs()
    same = runs[(runs["model"] == m.id) & runs["mfu"].notna()]
    published = float(same["mfu"].max()) if len(same) else None
    verdict = ut.assess_utilization(u, published=published, peak_tflops=peak, gpu=g)
    return {"effective_utilization": u, "tokens_per_s": tps, "flops_per_token": fpt,
            "peak_tflops": peak,
            "achieved_tflops_per_gpu": float(ut.achieved_tflops_per_gpu(tps, fpt, s.measured_gpus)),
            "hfu_if_full_recompute": float(ut.hfu(tps, hw, peak, s.measured_gpus)),
            "published_mfu": published, "findings": verdict.findings}
