"""The architecture review: days, layout, MFU, reliability and cost of one run."""

from __future__ import annotations

from .. import plots
from .base import ReviewPanel


class ReviewApp(ReviewPanel):
    name = "review"
    title = "Architecture review"
    question = ("How many GPUs and days, which parallel layout, and what does the run cost "
                "under each way to pay?")
    order = 0
    card_keys = ("days", "cost_on_demand_usd", "mfu")
    intro = ("Pick the model, the tokens, the GPU, the fabric and the cluster size (or a target "
             "number of days): the planner finds the best parallel layout, the step-time model "
             "predicts MFU, and failures, checkpoints and data stalls turn it into days and "
             "dollars. Prices, capex and power follow the GPU from the catalog unless you set "
             "them. Costs are cash: a reservation is billed for its whole term.")
    fields = ("model", "tokens", "gpu", "fabric", "fabric_gb_per_s_per_gpu", "fabric_technology",
              "precision", "stack", "sizing", "gpus", "target_days", "seq_len",
              "batch", "global_batch_tokens", "moe_load_imbalance", "moe_overlap", "moe_a2a_overlap",
              "data_stall", "data_stall_share", "checkpoint_mode",
              "price_source", "price_offer", "on_demand_usd_per_gpu_hour",
              "reserved_1y_usd_per_gpu_hour", "reserved_3y_usd_per_gpu_hour", "spot_discount",
              "onprem_capex_usd_per_gpu",
              "utilization", "resale")
    sliders = ("data_stall_share", "utilization")
    headline_keys = ("days", "gpus", "gpu_hours", "cost_on_demand_usd", "cheapest_option", "mfu",
                     "effective_utilization", "memory_gb_per_gpu", "fits", "best_layout",
                     "goodput", "global_batch_tokens", "meets_target")

    figures_from = (("waterfall", plots.waterfall), ("costs", plots.cost_by_option))
