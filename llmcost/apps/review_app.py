"""The architecture review: days, layout, MFU, reliability and cost of one run."""

from __future__ import annotations

from .. import plots
from ..review.format import usd_text
from .base import TRAINING_RUN_CONTROLS, ReviewPanel


class ReviewApp(ReviewPanel):
    name = "review"
    title = "Architecture review"
    question = ("How many GPUs and days, which parallel layout, and what does the run cost "
                "under each way to pay?")
    order = 0
    card_keys = ("days", "gpu_hours", "realized_ratio", "cost_on_demand_usd", "mfu")
    intro = ("Pick the model, the tokens, the GPU, the fabric and the cluster size (or a target "
             "number of days): the planner finds the best parallel layout, the step-time model "
             "predicts MFU, and failures, checkpoints and data stalls turn it into the floor: the "
             "days of the cluster's best case. The forecast is the floor times what comparable "
             "published runs realized over theirs, with the band of their spread: the days "
             "and dollars a team is held to. Prices, capex and power follow the GPU from the catalog unless you set "
             "them. Costs are cash: a reservation is billed for its whole term.")
    fields = TRAINING_RUN_CONTROLS + (
        "data_stall", "data_stall_share", "checkpoint_mode",
        "price_source", "price_offer", "provider", "on_demand_usd_per_gpu_hour",
        "reserved_1y_usd_per_gpu_hour", "reserved_3y_usd_per_gpu_hour", "spot_discount",
        "onprem_capex_usd_per_gpu",
        "utilization", "resale")
    sliders = ("data_stall_share", "utilization")
    headline_keys = ("days", "gpus", "gpu_hours", "realized_ratio", "cost_on_demand_usd",
                     "cheapest_option", "mfu", "effective_utilization", "memory_gb_per_gpu", "fits", "best_layout",
                     "goodput", "global_batch_tokens", "meets_target")

    figures_from = (("waterfall", plots.waterfall), ("costs", plots.cost_by_option))

    def tables(self, res) -> list[dict]:
        """The cost of the run under each way to pay: the figures of ``llmcost review
        --json``'s run_days, costs_usd, costs_amortized_usd, usd_per_used_gpu_hour and
        commitments (Results.cost_table)."""
        rows = [[r["label"], f"{r['run_days']:,.1f}" if r["run_days"] is not None else "n/a",
                 usd_text(r["cash_usd"]), usd_text(r["amortized_usd"]),
                 usd_text(r["usd_per_used_gpu_hour"]), r["commitment"] or "pay as you go"]
                for r in res.cost_table()]
        if not rows:
            return []
        return [{"title": "Cost by way to pay", "cls": "llmc-cost-table",
                 "columns": ["option", "days", "cash", "amortized", "$ per used GPU-h",
                             "commits to"],
                 "rows": rows}]
