"""Spot vs on-demand: net savings after preemptions."""

from __future__ import annotations

import numpy as np

from .. import plots
from .base import ReviewPanel


class SpotApp(ReviewPanel):
    name = "spot"
    title = "Spot vs on-demand"
    question = "Does spot capacity still pay once preemptions, lost work and restarts are billed?"
    order = 30
    intro = ("Net savings after preemptions: each one costs the work since the last checkpoint "
             "(from the review's checkpoint interval, unless you set the hours), a restart and a "
             "wait for capacity, billed; the spot run fails like the on-demand one too. The "
             "cluster guide's 60% off with 2.4 preemptions a day and 1-2 h lost gives about "
             "53%, not its 22%: the goal-seek shows the hours per preemption its 22% implies. "
             "<a href='spot.ipynb?price_source=custom&spot_discount=0.6&spot_lost_work=custom"
             "&lost_hours_per_preemption=1.5&restart_s=0&failure_rate=custom"
             "&failures_per_1000_gpu_days=0.0001'>The cluster guide's numbers</a> (“GPU "
             "Clusters for LLM Training: A Builder’s Guide”, 2026).")
    # the price, the spot market, what a preemption costs, a measured saving to goal-seek
    fields = ("gpu", "price_source", "price_offer", "provider",
              "spot_discount", "preemptions_per_day", "capacity_wait_h",
              "spot_lost_work", "lost_hours_per_preemption", "restart_s",
              "observed_net_savings")
    #: the notes on prices, failures and checkpoints; training notes are the review page's
    note_subjects = ("prices", "reliability")
    sliders = ("spot_discount",)
    # the net saving on the landing card; the page's headline is its plots
    card_keys = ("net",)
    headline_keys = ()

    def resolved(self, res):
        out = super().resolved(res)
        if res.economics is not None:
            out["lost_hours_per_preemption"] = res.economics.spot.lost_hours_per_preemption
        return out

    def headline(self, res):
        sp = res.economics.spot if res.economics is not None else None
        if sp is None or not sp.offered:
            why = "spot not offered for this GPU" if sp is None or sp.discount is None else \
                "preemptions fill the day: the run never finishes"
            return {"net": ("Net savings", "n/a", None), "why": ("Spot", why, None)}
        mc = self._mc(res)
        out = {"net": ("Net savings", f"{sp.net_savings:.1%}", None),
               "stretch": ("Duration stretch", f"{sp.duration_stretch:.2f}x", None),
               "lost": ("Hours lost per preemption",
                        f"{sp.lost_hours_per_preemption:.2f} h ({sp.lost_hours_source})", None)}
        if mc is not None:
            p = np.percentile(mc.cost_share, [10, 50, 90])
            out["p50"] = ("Cost P10/P50/P90 (of on-demand)", " / ".join(f"{x:.0%}" for x in p), None)
        if sp.breakeven_lost_hours is not None:
            out["breakeven"] = ("Spot stops paying at",
                                f"{sp.breakeven_lost_hours:.2f} h lost per preemption", None)
        if sp.implied_lost_hours is not None:
            out["implied"] = ("Observed savings imply",
                              f"{sp.implied_lost_hours:.2f} h lost per preemption", None)
        return out

    def _mc(self, res):
        from ..review import spot_distribution
        return spot_distribution(res)

    figures_from = (("heatmap", "_heatmap"), ("montecarlo", plots.spot_monte_carlo))

    def _heatmap(self, res, compare=(), label=None):
        heat = (plots.spot_heatmap(res, compare=compare, label=label) if compare
                else plots.spot_heatmap(res))
        sp = res.economics.spot if res.economics is not None else None
        if sp is not None and sp.net_savings is not None:
            heat.update_layout(title=f"Spot net savings: {sp.net_savings:.1%} at this scenario "
                                     "(zero contour in black)")
        return heat
