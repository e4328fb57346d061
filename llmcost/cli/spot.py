"""``llmcost spot``: net savings of spot over on-demand after preemptions."""

from __future__ import annotations

import argparse
import math

import numpy as np

from .. import _validate as v
from ..economics import reliability as rel
from ..economics import spot as spot_mod


def cmd_spot(a) -> dict:
    if a.lost_hours_per_preemption is not None:
        lost = float(v.nonnegative("lost_hours_per_preemption", a.lost_hours_per_preemption))
    elif a.checkpoint_interval_s is not None:
        # one interruption model: a preemption loses what a failure does (reliability)
        lost = float(rel.lost_hours_per_interruption(a.checkpoint_interval_s, a.checkpoint_s))
    else:
        raise v.InputError("lost_hours_per_preemption", "give --lost-hours-per-preemption or "
                                                        "--checkpoint-interval-s")
    market = spot_mod.SpotMarket(a.discount, a.preemptions_per_day, a.capacity_wait_h,
                                 a.billed_share_during_wait)
    failures = spot_mod.RunFailures(a.restart_h, a.failures_per_day or 0.0, a.failure_lost_hours)
    r = spot_mod.spot_net_savings(market, lost, failures)
    lost_total = lost + a.restart_h + a.capacity_wait_h
    breakeven = None
    if a.preemptions_per_day > 0:
        # w* ~ 24 d / r: a vanishing preemption rate overflows to "no limit", as r = 0 does
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            breakeven = float(spot_mod.breakeven_lost_hours(market, failures))
        breakeven = breakeven if math.isfinite(breakeven) else None
    res = {"net_savings": float(r.net_savings), "duration_stretch": float(r.duration_stretch),
           "lost_hours_per_preemption": lost,
           "hours_lost_per_preemption": lost_total,
           "breakeven_lost_hours_per_preemption": breakeven}
    if a.observed_net_savings is not None:
        res["implied_lost_hours_per_preemption"] = float(spot_mod.implied_lost_hours(
            market, a.observed_net_savings, failures))
    if a.monte_carlo_runs:
        mc = spot_mod.spot_monte_carlo(market, a.run_hours, lost_hours_per_preemption=lost,
                                       failures=failures, runs=a.monte_carlo_runs)
        pc = mc.percentiles()
        res["monte_carlo"] = {
            "runs": a.monte_carlo_runs, "run_hours": a.run_hours,
            "net_savings_mean": float(1 - mc.cost_share.mean() / float(r.on_demand_cost_share)),
            "cost_share_p10_p50_p90": [float(x) for x in pc["cost_share"]],
            "duration_share_p10_p50_p90": [float(x) for x in pc["duration_share"]]}
    return res


def _args_spot(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost spot``."""
    sp.add_argument("--discount", type=float, required=True, help="spot price cut (0-1)")
    sp.add_argument("--preemptions-per-day", type=float, required=True)
    sp.add_argument("--lost-hours-per-preemption", type=float,
                    help="billed job-hours lost per preemption (rework); overrides the "
                         "checkpoint interval")
    sp.add_argument("--checkpoint-interval-s", type=float,
                    help="instead of --lost-hours-per-preemption: lost work = interval / 2 "
                         "+ checkpoint stall, as for a failure")
    sp.add_argument("--checkpoint-s", type=float, default=0.0,
                    help="blocking time per checkpoint, with --checkpoint-interval-s")
    sp.add_argument("--restart-h", type=float, default=0.0,
                    help="restart and reload after any interruption")
    sp.add_argument("--capacity-wait-h", type=float, default=0.0)
    sp.add_argument("--billed-share-during-wait", type=float, default=1.0,
                    help="share of nodes billed while waiting for capacity (0-1)")
    sp.add_argument("--failures-per-day", "--on-demand-failures-per-day", type=float,
                    help="job failures per day, suffered by both the spot and on-demand run "
                         "(the second name is the old one)")
    sp.add_argument("--failure-lost-hours", type=float,
                    help="work lost per failure (default: as per preemption)")
    sp.add_argument("--observed-net-savings", type=float,
                    help="goal-seek the hours lost per preemption this saving implies")
    sp.add_argument("--monte-carlo-runs", type=int, default=0)
    sp.add_argument("--run-hours", type=float, default=24 * 18.0, help="useful hours, for Monte Carlo")
