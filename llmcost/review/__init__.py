"""evaluate(Scenario) -> Results: the numbers an architecture review asks for, in one place.

A chain of named stages (:class:`ReviewChain`): resolve -> size -> plan -> predict ->
reliability -> economics. The apps, the plots, the report (review/report.py) and ``llmcost review`` read
these results; they compute nothing themselves.
"""

from .chain import DEFAULT_CHAIN, ReviewChain, evaluate
from .format import HEADLINE_LABELS, OPTION_LABELS, format_headline, headline_items
from .ladder import LadderResult, Pretraining, ladder
from .results import (
                      EconomicsResult,
                      Flag,
                      Inputs,
                      Layout,
                      PlanResult,
                      PredictResult,
                      ReliabilityResult,
                      Results,
                      SizeResult,
                      SpotSummary,
)
from .series import (
                      breakeven_tornado,
                      decision_grid,
                      finetune_ladder,
                      goodput_series,
                      layout_memory,
                      measured_utilization,
                      scaling_series,
                      spot_distribution,
                      spot_grid,
                      tco_series,
)
from .stages import REVIEW_SPACE, STEP_OPTIONS

__all__ = ["evaluate", "ReviewChain", "DEFAULT_CHAIN", "Results", "Inputs", "Layout",
           "PlanResult", "PredictResult", "ReliabilityResult", "EconomicsResult", "SizeResult",
           "SpotSummary", "Flag", "HEADLINE_LABELS", "OPTION_LABELS", "format_headline",
           "headline_items", "layout_memory", "tco_series",
           "decision_grid", "breakeven_tornado", "spot_grid", "spot_distribution",
           "scaling_series", "goodput_series", "measured_utilization", "STEP_OPTIONS",
           "REVIEW_SPACE", "ladder", "LadderResult", "Pretraining", "finetune_ladder"]
