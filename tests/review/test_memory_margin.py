"""The review's layout leaves memory for what the memory model does not count.

Among the layouts within SIMPLEST_WITHIN (2%) of the fastest, the review prefers those that
leave MEMORY_MARGIN (5%) of the GPU free: the model counts 2% allocator fragmentation, and
stacks without expandable segments lose more (llm-foundry's sweep: eager FSDP > 9.5%). A
layout above 95% is chosen only when nothing in the band leaves more, and the review says so.
"""

import pandas as pd
import pytest

from llmcost import catalog
from llmcost.review import evaluate
from llmcost.review.stages import (
    MEMORY_MARGIN,
    REVIEW_MEMORY,
    SIMPLEST_WITHIN,
    options_for,
    review_space,
)
from llmcost.scenario import Scenario
from llmcost.training import planner

CAT = catalog.default()
# Mixtral 8x7B on 64 H100: the fastest layout uses 99% of memory, one 1% slower 74%
TIGHT = "model=mixtral-8x7b&gpu=h100-sxm&gpus=64&tokens=1e12"
TIGHT_BAND = "model=llama3-70b&gpu=h100-sxm&gpus=1024&tokens=1.5e13"


def _plan(r, margin):
    inp = r.inputs
    s = inp.scenario
    space = review_space(s, inp.model, inp.gpu.gpus_per_node)
    search = planner.Search(space, precision=s.precision, simplest_within=SIMPLEST_WITHIN,
                            memory_margin=margin, memory=REVIEW_MEMORY)
    return planner.plan(inp.model, inp.hardware, r.plan.gpus,
                        r.plan.global_batch, search, options_for(s)).layouts


def test_memory_tight_is_the_share_left_free():
    # 80 of 85.9 GB leaves 6.9%: not tight at 5%; 82 GB leaves 4.5%: tight
    assert not planner.memory_tight(80.0, 85.9, 0.05)
    assert planner.memory_tight(82.0, 85.9, 0.05)
    assert not planner.memory_tight(85.9, 85.9, 0.0)


def test_simplest_first_puts_a_roomy_layout_ahead_of_a_tight_simpler_one():
    # two layouts within 2%: the simpler at 99% of memory, the other (one more dimension,
    # selective recompute) at 80%; a third beyond the band stays last whatever its memory
    df = pd.DataFrame({
        "fits": [True, True, True], "step_time_s": [1.000, 1.010, 1.100],
        "memory_gb": [85.0, 68.7, 40.0], "capacity_gb": [85.9] * 3,
        "tp": [1, 1, 1], "pp": [1, 1, 1], "interleave": [1, 1, 1], "cp": [1, 1, 1],
        "ep": [1, 1, 1], "etp": [1, 1, 1], "zero_stage": [1, 1, 1],
        "recompute": ["none", "selective", "none"]})
    assert list(planner._simplest_first(df, "step_time_s", 0.02, 0.0)["memory_gb"]) == \
        [85.0, 68.7, 40.0]
    assert list(planner._simplest_first(df, "step_time_s", 0.02, 0.05)["memory_gb"]) == \
        [68.7, 85.0, 40.0]


@pytest.mark.slow
def test_plan_refuses_a_margin_out_of_range():
    r = evaluate(Scenario.from_query(TIGHT, CAT)[0], CAT)
    with pytest.raises(ValueError, match="memory_margin"):
        _plan(r, 1.0)
    # refused even where it would not rank (no simplest_within band)
    with pytest.raises(ValueError, match="memory_margin"):
        planner.Search(memory_margin=-0.1)


@pytest.mark.parametrize("query", [
    TIGHT,
    TIGHT_BAND,
    "model=llama3-8b&gpu=a100-40gb&gpus=64&tokens=1e12&stack=fsdp",
])
def test_review_layout_leaves_the_margin_when_a_layout_in_the_band_does(query):
    r = evaluate(Scenario.from_query(query, CAT)[0], CAT)
    chosen = r.plan.layouts.iloc[0]
    by_speed = _plan(r, 0.0)
    fastest = float(by_speed[by_speed["fits"]]["step_time_s"].min())
    band = by_speed[by_speed["fits"] & (by_speed["step_time_s"] <= fastest * (1 + SIMPLEST_WITHIN))]
    roomy = ~planner.memory_tight(band["memory_gb"], band["capacity_gb"], MEMORY_MARGIN)
    # the choice is within the band, and roomy whenever the band holds a roomy layout
    assert float(chosen["step_time_s"]) <= fastest * (1 + SIMPLEST_WITHIN) * (1 + 1e-12)
    tight = bool(planner.memory_tight(chosen["memory_gb"], chosen["capacity_gb"],
                                      MEMORY_MARGIN))
    assert tight == (not roomy.any())
    said = any("leaves 5% free" in w for w in r.warnings)
    assert said == tight


def test_a_tight_band_is_kept_and_said():
    # Llama 3 70B on 1,024 H100 at the review's batch: every layout within 2% of the fastest
    # uses more than 95% of memory in the model (TP2 PP4 CP2 at 84.8 of 85.9 GB; the first
    # roomy one, TP4 PP2, is 3% slower), so the fastest stays and the review says so
    r = evaluate(Scenario.from_query(TIGHT_BAND, CAT)[0], CAT)
    by_speed = _plan(r, 0.0)
    fastest = float(by_speed[by_speed["fits"]]["step_time_s"].min())
    band = by_speed[by_speed["fits"] & (by_speed["step_time_s"] <= fastest * (1 + SIMPLEST_WITHIN))]
    assert planner.memory_tight(band["memory_gb"], band["capacity_gb"], MEMORY_MARGIN).all()
    chosen = r.plan.layouts.iloc[0]
    assert float(chosen["step_time_s"]) == pytest.approx(fastest, rel=1e-12)
    note = [w for w in r.warnings if "check the run's peak memory early" in w]
    assert len(note) == 1
    assert f"{float(chosen['memory_gb']):.1f} of {float(chosen['capacity_gb']):.1f} GB" in note[0]
