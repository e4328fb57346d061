"""The memory stack's layouts as the planner predicted them: each top layout's memory by
component comes from its Layout (stage split, precision, recompute modules, optimizer
moments) and the review's memory options, so its total is the plan's memory_gb."""

import numpy as np
import pytest

from llmcost import review
from llmcost.review import series
from llmcost.scenario import Scenario
from llmcost.training.memory import MEMORY_TERMS


@pytest.mark.parametrize("query", [
    # MoE: the planner searches recompute modules and BF16 moments, and the review reads
    # MoE activations at the router's probabilities (was: the stack ignored all three,
    # 111.8 GB shown for the 85.7 GB best layout)
    "model=mixtral-8x7b&gpu=h100-sxm&gpus=64&tokens=1e12",
    # dense, pipelined: the stage split from the row
    "model=llama3-70b&gpu=h100-sxm&gpus=512&tokens=1e12",
])
def test_stack_totals_are_the_plans_memory(query):
    r = review.evaluate(Scenario.from_query(query)[0])
    top = r.plan.layouts.head(5)
    df = series.layout_memory(r)
    np.testing.assert_allclose(df["total_gb"], top["memory_gb"], rtol=1e-12)
    # the terms add up to each total (the experts' part is inside the weights)
    parts = sum(df[k] for k in MEMORY_TERMS if k != "expert_weights_gb")
    np.testing.assert_allclose(parts, df["total_gb"], rtol=1e-12)


def test_bf16_moments_shrink_the_optimizer_states_to_two_thirds():
    # AdamW per parameter: FP32 master 4 B + two moments, 4 B each (12 B) or 2 B each in BF16
    # (8 B), sharded alike: the same layout's optimizer states in the ratio 8 / 12
    r = review.evaluate(Scenario.from_query(
        "model=mixtral-8x7b&gpu=h100-sxm&gpus=64&tokens=1e12")[0])
    top = r.plan.layouts.head(5).reset_index(drop=True)
    df = series.layout_memory(r)
    layout_cols = ["tp", "pp", "cp", "ep", "dp", "micro_batch", "zero_stage", "recompute",
                   "recompute_modules"]
    pairs = [(i, j) for i in top.index for j in top.index
             if top.loc[i, "optimizer_moments"] == "fp32"
             and top.loc[j, "optimizer_moments"] == "bf16"
             and (top.loc[i, layout_cols] == top.loc[j, layout_cols]).all()]
    assert pairs
    for i, j in pairs:
        assert df.loc[j, "optimizer_gb"] / df.loc[i, "optimizer_gb"] == pytest.approx(8 / 12,
                                                                                      rel=1e-12)
        assert df.loc[j, "weights_gb"] == pytest.approx(df.loc[i, "weights_gb"], rel=1e-12)
