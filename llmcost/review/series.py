"""Series behind the apps' plots, computed from a Results object (and cached on it): a plot
draws these, it never runs a model itself."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import utilization as ut
from ..economics import reliability as rel
from ..economics import spot, tco
from ..scenario import Scenario
from ..training import planner
from ..training.memory import memory_per_gpu
from .results import Results
from .stages import options_for


def _cached(fn):
    def wrapper(results: Results, *a, **kw):
        key = (fn.__name__, a, tuple(sorted(kw.items())))
        if key not in results._series:
            results._series[key] = fn(results, *a, **kw)
        return results._series[key]
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@_cached
def layout_memory(results: Results, top: int = 5) -> pd.DataFrame:
    """Memory per GPU by component for the top layouts (one vectorized call)."""
    m = results.inputs.model
    L = results.plan.layouts.head(top)
    if L.empty:
        return pd.DataFrame()
    B = results.plan.global_batch
    mem = memory_per_gpu(m, L["gpus"].to_numpy(), L["tp"].to_numpy(), L["pp"].to_numpy(),
                         L["cp"].to_numpy(), L["zero_stage"].to_numpy(),
                         L["micro_batch"].to_numpy(), B, L["recompute"].to_numpy(),
                         L["sequence_parallel"].to_numpy(), L["flash_attention"].to_numpy(),
                         interleave=L["interleave"].to_numpy(),
                         # the review's space balances uneven stages automatically (None),
                         # as the planner did for every row shown
                         precision=results.scenario.precision,
                         generation=results.inputs.gpu.generation,
                         ep=L["ep"].to_numpy(), etp=L["etp"].to_numpy(),
                         **({"moe_capacity_factor": options_for(results.scenario).moe_load_imbalance}
                            if m.is_moe else {}))
    df = pd.DataFrame({k: np.atleast_1d(x) for k, x in mem.to_gb().items()})
    df.insert(0, "layout", [planner.describe_layout(r) for _, r in L.iterrows()])
    return df


@_cached
def tco_series(results: Results, points: int = 121) -> pd.DataFrame:
    """Cumulative cash cost of each option for this cluster (its billed GPUs) over months."""
    s, e, inp = results.scenario, results.economics, results.inputs
    months = np.linspace(0, s.horizon_months, points)
    if e is None or (e.prices is None and inp.onprem is None):
        return pd.DataFrame({"months": months})
    costs = tco.option_costs_usd(months, s.utilization, e.prices or tco.CloudPrices(), e.onprem,
                                 gpus=e.billed_gpus,
                                 discount_rate=s.discount_rate, resale=s.resale)
    return pd.DataFrame({"months": months,
                         **{k: np.broadcast_to(x, months.shape) for k, x in costs.items()}})


@_cached
def decision_grid(results: Results):
    """Cheapest option over utilization x horizon, in the review's cash convention."""
    s, e, inp = results.scenario, results.economics, results.inputs
    u = np.linspace(0.1, 1.0, 19)
    m = np.array([3, 6, 9, 12, 18, 24, 36, 48, 60])
    if e is None or (e.prices is None and inp.onprem is None):
        return u, m, (), np.zeros((len(u), len(m)), int)
    names, best, _ = tco.decision_map(u, m, e.prices or tco.CloudPrices(), e.onprem,
                                      discount_rate=s.discount_rate,
                                      resale=s.resale)
    return u, m, names, best


@_cached
def breakeven_tornado(results: Results, swing: float = 0.2) -> pd.DataFrame:
    """Breakeven month when each input moves +-swing (the rest held): a tornado chart."""
    s, inp, e = results.scenario, results.inputs, results.economics
    if e is None or e.breakeven_months is None or inp.onprem is None or e.prices is None:
        return pd.DataFrame(columns=["input", "low", "high", "base", "span"])
    base_prem, price = inp.onprem, e.prices.on_demand

    def be(price=price, capex=base_prem.capex_usd, u=s.utilization, **prem):
        op = replace(base_prem, **prem)
        u = min(1.0, u)
        m = float(tco.breakeven_months(price, capex, u, float(tco.onprem_opex_usd_per_gpu_month(op, u)),
                                       s.discount_rate))
        return m if math.isfinite(m) else np.nan

    cur = {"cloud price": ("price", price), "capex per GPU": ("capex", base_prem.capex_usd),
           "utilization": ("u", s.utilization),
           "power per GPU": ("power_w_per_gpu", base_prem.power_w_per_gpu),
           "electricity price": ("usd_per_kwh", base_prem.usd_per_kwh), "PUE": ("pue", base_prem.pue)}
    rows = []
    for label, (k, val) in cur.items():
        lo_v, hi_v = val * (1 - swing), val * (1 + swing)
        if k == "pue":
            lo_v = max(1.0, lo_v)
        rows.append({"input": label, "low": be(**{k: lo_v}), "high": be(**{k: hi_v}),
                     "base": e.breakeven_months})
    df = pd.DataFrame(rows)
    df["span"] = (df["high"] - df["low"]).abs()
    return df.sort_values("span").reset_index(drop=True)


@_cached
def spot_grid(results: Results):
    """Net savings over preemption rate x hours lost, the other terms as in the review."""
    s, r, e = results.scenario, results.reliability, results.economics
    d = e.spot.discount if e is not None and e.spot.discount is not None else None
    rates = np.linspace(0, 6, 61)
    lost = np.linspace(0, 8, 81)
    R, LL = np.meshgrid(rates, lost, indexing="ij")
    sav = np.full(R.shape, np.nan)
    if d is None:
        return rates, lost, sav
    per_event = LL + r.restart_h + s.capacity_wait_h
    ok = (R * per_event + r.failures_per_day * (r.lost_hours_per_interruption + r.restart_h)) < 24
    res = spot.spot_net_savings(d, R[ok], LL[ok], r.restart_h, s.capacity_wait_h,
                                failures_per_day=r.failures_per_day,
                                failure_lost_hours=r.lost_hours_per_interruption)
    sav[ok] = res.net_savings
    return rates, lost, sav


@_cached
def spot_distribution(results: Results, runs: int = 20_000, seed: int = 0):
    """Monte Carlo of this run on spot (its useful hours), the same terms as the closed form."""
    s, r, e = results.scenario, results.reliability, results.economics
    if e is None or not e.spot.offered:
        return None
    hours = e.run_hours if e.run_hours else 24 * 18.0
    return spot.spot_monte_carlo(e.spot.discount, s.preemptions_per_day, min(hours, 24 * 3650),
                                 lost_hours_per_preemption=e.spot.lost_hours_per_preemption,
                                 restart_h=r.restart_h, capacity_wait_h=s.capacity_wait_h,
                                 failures_per_day=r.failures_per_day,
                                 failure_lost_hours=r.lost_hours_per_interruption,
                                 runs=runs, seed=seed)


@_cached
def scaling_series(results: Results, fabrics=("ib-ndr", "roce-400")) -> pd.DataFrame:
    """Predicted MFU and efficiency vs node count for the best layout on each fabric."""
    from ..training.scaling import weak_scaling
    s, inp, L = results.scenario, results.inputs, results.plan.layout
    if L is None:
        return pd.DataFrame()
    cat, m, g = inp.catalog, inp.model, inp.gpu
    unit = L.tp * L.pp * L.cp
    first = max(1, int(math.ceil(unit / g.gpus_per_node)))
    nodes = np.array([first * 2**k for k in range(0, 9)])
    seqs = max(1, L.num_microbatches * L.micro_batch)
    out = []
    for f in dict.fromkeys((s.fabric, *fabrics)):
        try:
            t, _ = weak_scaling(m, g, inp.scale_up, cat.fabric(f), nodes, L.tp, L.pp, L.cp, seqs,
                                L.micro_batch, L.zero_stage, L.recompute, L.sequence_parallel,
                                L.interleave, options_for(s))
        except ValueError:
            continue
        t["fabric"] = f
        out.append(t)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


@_cached
def finetune_ladder(results: Results):
    """The fine-tune ladder for the review's model: pretraining on the review's tokens."""
    from .ladder import ladder
    s, inp = results.scenario, results.inputs
    return ladder(inp.model, inp.catalog, s.finetune_tokens, s.tokens)


@_cached
def goodput_series(results: Results, points: int = 200) -> pd.DataFrame:
    """Goodput vs checkpoint interval for sync and async writes, at this size."""
    r, s, g = results.reliability, results.scenario, results.inputs.gpu
    M = r.job_mtbf_h * 3600
    taus = np.geomspace(max(r.daly_interval_s / 20, 1), r.daly_interval_s * 20, points)
    df = pd.DataFrame({"interval_s": taus})
    for mode in ("sync", "async"):
        stall = float(rel.checkpoint_stall_s(r.checkpoint_bytes, mode, r.nodes,
                                             s.shared_storage_gbps, local_write_gbps=s.local_write_gbps,
                                             gpus_per_node=g.gpus_per_node))
        df[mode] = rel.goodput(taus, stall, M, s.restart_s)
        df[f"{mode}_stall_s"] = stall
    return df


@dataclass(frozen=True)
class MeasuredRun:
    """The effective-utilization app's figures for a measured run."""

    effective_utilization: float
    tokens_per_s: float
    flops_per_token: float
    peak_tflops: float
    achieved_tflops_per_gpu: float
    hfu_if_full_recompute: float
    published_mfu: float | None
    findings: tuple


def measured_utilization(s: Scenario, cat=None) -> MeasuredRun:
    """The effective-utilization app's numbers for the measured run in the Scenario."""
    from .. import catalog as catalog_mod
    cat = catalog_mod.default() if cat is None else cat
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
    verdict = ut.assess_utilization(u, published=published, peak_tflops=peak, gpu=g)  # BF16 run
    return MeasuredRun(u, tps, fpt, peak,
                       float(ut.achieved_tflops_per_gpu(tps, fpt, s.measured_gpus)),
                       float(ut.hfu(tps, hw, peak, s.measured_gpus)), published,
                       tuple(verdict.findings))
