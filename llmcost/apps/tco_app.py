"""Rent vs buy: cloud options against owning the cluster, in cash."""

from __future__ import annotations

from .. import plots
from ..review import OPTION_LABELS
from .base import ReviewPanel


class TcoApp(ReviewPanel):
    name = "tco"
    title = "Rent vs buy"
    question = "Rent or buy: after how many months does owning the cluster beat the cloud?"
    order = 20
    card_keys = ("breakeven_months",)
    intro = ("Cloud on-demand and spot bill the hours you use; a reservation bills every hour of "
             "its term; owning pays capex up front and power, space, staff, storage and upkeep "
             "each month. Cash view: hardware is not resold unless you ask. The rule of thumb "
             "of the cluster guide (“GPU Clusters for LLM Training: A Builder’s Guide”, "
             "2026): about 7-8 months to break even at 90% utilization, buy at 80%+ for 12+ "
             "months. Costs are for the review's cluster; prices per GPU-hour.")
    fields = ("gpu", "gpus", "price_source", "price_offer", "provider", "on_demand_usd_per_gpu_hour",
              "reserved_1y_usd_per_gpu_hour", "reserved_3y_usd_per_gpu_hour", "spot_discount",
              "onprem_capex_usd_per_gpu", "onprem_power_kw_per_gpu", "onprem_opex_usd_per_gpu_month",
              "pue", "usd_per_kwh", "life_years", "residual_share", "resale", "utilization",
              "horizon_months", "discount_rate")
    #: the notes on prices and offers; training notes are the review page's
    note_subjects = ("prices",)
    sliders = ("utilization", "residual_share")
    headline_keys = ("breakeven_months",)

    def headline(self, res):
        out = super().headline(res)
        e = res.economics
        if e is None:
            return out
        if res.inputs.prices is None or res.inputs.onprem is None:
            out["breakeven_months"] = ("Buying beats on-demand after", "n/a (no price)", None)
        for k, x in e.usd_per_used_gpu_hour.items():
            out[f"per_{k}"] = (f"{OPTION_LABELS[k]}: $ per used GPU-h", f"${x:,.2f}", None)
        return out

    figures_from = (("curves", plots.tco_curves), ("map", plots.decision_map),
                    ("tornado", plots.tornado))
