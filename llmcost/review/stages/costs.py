"""The economics stage: days and dollars of the forecast run per way to pay, spot under the
interruption model, rent against buy."""

from __future__ import annotations

import math
from dataclasses import replace

from ... import _validate as v
from ...economics import napkin, spot, tco
from ...economics import reliability as rel
from ...economics.waterfall import RunLosses, waterfall_from_step
from ...scenario import Scenario
from ...training import stacks
from ...training.step import calibration_note
from ...training.uncertainty import throughput_band
from ..results import (
    EconomicsResult,
    ForecastResult,
    Inputs,
    PlanResult,
    PredictResult,
    ReliabilityResult,
    SpotSummary,
)
from .prediction import g_peak_ratio
from .space import stack_of

HOURS_PER_YEAR = 8760.0


def spot_summary(inp: Inputs, r: ReliabilityResult) -> SpotSummary:
    """Spot under the same interruption model as failures: each preemption loses the work
    since the last checkpoint and a restart, unless the scenario sets its own hours.

    The spot run's checkpoint interval is Daly's optimum for failures plus preemptions; the
    extra checkpoint stalls that shorter interval costs (delta / tau) are second order and
    not counted."""
    s = inp.scenario
    custom = s.spot_lost_work == "custom"
    # a spot run is interrupted by failures and preemptions: it checkpoints at the optimum
    # for both (Daly at the combined rate), unless the scenario fixes the interval
    rate = r.failures_per_day + s.preemptions_per_day
    if s.checkpoint_interval_s > 0 or s.preemptions_per_day == 0:
        tau = r.interval_s
    else:
        tau = float(rel.daly_interval_s(r.checkpoint_stall_s, 24 * 3600 / rate))
    w = s.lost_hours_per_preemption if custom else float(
        rel.lost_hours_per_interruption(tau, r.checkpoint_stall_s))
    d = inp.spot_discount
    failures = spot.RunFailures(restart_h=r.restart_h, failures_per_day=r.failures_per_day,
                                failure_lost_hours=r.lost_hours_per_interruption)
    asked = dict(preemptions_per_day=s.preemptions_per_day, lost_hours_per_preemption=w,
                 lost_hours_source=s.spot_lost_work, checkpoint_interval_s=tau)
    not_run = dict(net_savings=None, duration_stretch=None, breakeven_lost_hours=None,
                   implied_lost_hours=None)
    if d is None:
        return SpotSummary(offered=False, discount=None, **asked, **not_run)
    try:
        market = spot.SpotMarket(d, s.preemptions_per_day, s.capacity_wait_h)
        res = spot.spot_net_savings(market, w, failures)
    except v.InputError:
        # preemptions x hours lost fill the day: the spot run never finishes
        return SpotSummary(offered=False, discount=d, **asked, **not_run)
    be = implied = None
    if s.preemptions_per_day > 0:
        be = float(spot.breakeven_lost_hours(market, failures))
        # the goal-seek answers the saving the user observed: the default figure (the cluster
        # guide's 22%) is an example, so when these terms cannot give it, it is left out, not
        # refused
        entered = s.observed_net_savings != Scenario.__dataclass_fields__["observed_net_savings"].default
        if s.observed_net_savings <= d:
            try:
                implied = float(spot.implied_lost_hours(market, s.observed_net_savings,
                                                        failures))
            except v.InputError:
                if entered:
                    raise
                implied = None
    return SpotSummary(offered=True, discount=d, **asked, net_savings=float(res.net_savings),
                       duration_stretch=float(res.duration_stretch), breakeven_lost_hours=be,
                       implied_lost_hours=implied, result=res)


def economics(inp: Inputs, pl: PlanResult, pr: PredictResult | None,
              r: ReliabilityResult, fc: ForecastResult) -> EconomicsResult:
    """Days and dollars of the run as forecast (``fc``), and rent vs buy for this cluster."""
    s, g = inp.scenario, inp.gpu
    stall_share, useful = fc.data_stall_share, fc.useful_share
    sp = spot_summary(inp, r)
    billed = int(math.ceil(pl.gpus / inp.billing_gpus) * inp.billing_gpus)
    costs, amort, commit, run_days = {}, {}, {}, {}
    days = fc.days
    hours = days * 24 if days is not None else None
    prices = inp.prices
    if prices is not None and sp.offered and prices.spot is not None:
        # billed spot hours per useful hour, from the spot model (one stored spot figure)
        overhead = (1 - sp.net_savings) / (1 - sp.discount) if prices.on_demand else 1.0
        prices = replace(prices, spot_overhead=max(1.0, overhead))
    elif prices is not None and prices.spot is not None:
        prices = replace(prices, spot=None)        # the spot run never finishes
    cloud_prices = prices if prices is not None else tco.CloudPrices()
    op = inp.onprem if inp.onprem is not None else tco.OnPrem(capex_usd_per_gpu=None)
    if hours is not None and (prices is not None or inp.onprem is not None):
        costs = tco.run_costs_usd(hours, billed, cloud_prices, op, s.discount_rate, s.resale)
        amort = tco.run_costs_amortized_usd(hours, billed, cloud_prices, op, s.utilization,
                                            s.discount_rate, s.resale)
        costs = {k: float(x) for k, x in costs.items()}
        amort = {k: float(x) for k, x in amort.items()}
        for k in costs:
            run_days[k] = days * (sp.duration_stretch if k == "spot" else 1.0)
        for k, years in (("reserved_1y", 1), ("reserved_3y", 3)):
            if k in costs:
                terms = math.ceil(hours / (years * HOURS_PER_YEAR))
                commit[k] = (f"{terms} x {years}-year term{'s' if terms > 1 else ''} on "
                             f"{billed:,} GPUs ({terms * years * HOURS_PER_YEAR:,.0f} h billed; "
                             f"the run uses {hours:,.0f} h)")
        if "on_prem" in costs:
            commit["on_prem"] = (f"{billed:,} GPUs bought"
                                 + (" and resold at market value after the run"
                                    if s.resale == "market" else "; not resold (cash view)"))
    be, per_h = None, {}
    if prices is not None and prices.on_demand and inp.onprem is not None:
        opex = float(tco.onprem_opex_usd_per_gpu_month(inp.onprem, s.utilization))
        b = float(tco.breakeven_months(prices.on_demand, inp.onprem.capex_usd, s.utilization, opex,
                                       s.discount_rate))
        be = b if math.isfinite(b) else None
    if prices is not None or inp.onprem is not None:
        per_h = {k: float(x) for k, x in tco.cost_per_useful_gpu_hour(
            s.horizon_months, s.utilization, cloud_prices, op, discount_rate=s.discount_rate,
            resale=s.resale).items()}
    band = None
    costs_range = {}
    if pr is not None and days is not None:
        # the step model's own error on published step times (shown as the prediction band);
        # about the share of the peak the GEMMs run at (FP8: the FP8 peak)
        band = throughput_band(g.generation, s.precision, pr.mfu * g_peak_ratio(g, s.precision),
                               inp.catalog.step_model_errors(), moe=inp.model.is_moe,
                               note=calibration_note(g),
                               stack_note=stacks.calibration_note(stack_of(s)),
                               stack_error=stacks.stack(stack_of(s)).held_out_error)
        if costs and fc.days_band is not None:
            lo, hi = (tco.run_costs_usd(d * 24, billed, cloud_prices, op, s.discount_rate,
                                        s.resale) for d in fc.days_band)
            costs_range = {k: (float(lo[k]), float(hi[k])) for k in costs}
    wf = eff = None
    if pr is not None:
        wf = waterfall_from_step(pr.step, g.bf16_dense_tflops,
                                 RunLosses(data_stall_share=stall_share, checkpoint_share=r.checkpoint_share,
                                           failure_share=r.rework_share + r.restart_share),
                                 flops_per_token=inp.model.flops_per_token("none"),
                                 usd_per_gpu_hour=(inp.prices.on_demand
                                                   if inp.prices and inp.prices.on_demand else None))
        eff = float(wf["share_of_peak"].iloc[-1])
    m = inp.model
    nap = float(napkin.napkin_gpu_hours(m.active_params, s.tokens, g.peak_tflops("bf16") * 1e12))
    factors = {}
    if pr is not None and pr.mfu > 0 and useful > 0:
        fpt = pr.model_tflops_per_gpu * 1e12 / (pr.tokens_per_s / pl.gpus)
        factors = {k: float(x) for k, x in
                   napkin.napkin_factors(fpt, m.active_params, pr.mfu, useful,
                                         realized_ratio=fc.realized.value).items()}
    return EconomicsResult(useful_share=useful, days=days, run_hours=hours, billed_gpus=billed,
                           costs_usd=costs, costs_amortized_usd=amort, commitments=commit,
                           run_days=run_days, breakeven_months=be, usd_per_used_gpu_hour=per_h,
                           spot=sp, waterfall=wf, effective_utilization=eff, prices=prices,
                           onprem=op, band=band,
                           costs_usd_range=costs_range, data_stall_share=stall_share,
                           gpu_hours=fc.gpu_hours,
                           napkin_gpu_hours=nap, napkin_factors=factors)
