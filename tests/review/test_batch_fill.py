"""A batch that does not fill the GPUs: the rule (llmcost/review/fill.py), the batch the review
runs, the refusals that name the user's own key, and what limits MFU.

The rule: a batch fills its GPUs when the review's layout for it exists and twice the batch
would raise the throughput per GPU by less than 10%. The figures below are the step model's,
read through the review (the planner's first layout at each batch).
"""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from llmcost import catalog
from llmcost._validate import InputError
from llmcost.apps.review_app import ReviewApp
from llmcost.cli import main
from llmcost.review import evaluate, fill, stages
from llmcost.scenario import Scenario

CAT = catalog.default()

#: runs at Qwen2.5's long-context length (32,768 tokens: its final pre-training stage)
QWEN_14 = "model=qwen2.5-7b&gpu=h100-sxm&gpus=16384&tokens=2.3e9&seq_len=32768"
LLAMA_B200 = "model=llama3-405b&gpu=b200&gpus=16384&tokens=15.6e12&precision=bf16"
OSS_B300 = "model=gpt-oss-120b&gpu=b300&gpus=2048&tokens=4e12&precision=fp8"


def review(query):
    return evaluate(Scenario.from_query(query, CAT, strict=True)[0], CAT)


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def law_fill(r, gpus=None, batch=None):
    """The fill of a batch (default the batch law's) on the review's GPUs, as the review
    computes it."""
    inp = r.inputs
    space = stages.review_space(r.scenario, inp.model, inp.gpu.gpus_per_node)
    B = batch or round(inp.global_batch_tokens / inp.model.seq_len)
    return stages.batch_fill_at(inp, space, gpus or r.plan.gpus, B)


def law_does_not_fill(r, batch, layout, mfu):
    """The batch law's fill on the review's GPUs, asserted not to fill them at ``batch``
    sequences, where the review's layout starts with ``layout`` at ``mfu``."""
    law = law_fill(r)
    assert law.test.batch == batch and not law.fills
    assert law.test.at.layout.startswith(layout)
    assert law.test.at.mfu == pytest.approx(mfu, abs=0.002)
    return law


# ------------------------------------------------------------------ the rule

def _best_of(throughput):
    """A ``best(gpus, batch)`` from tokens/s per GPU as a function of (gpus, batch), None
    where it returns None (no layout)."""
    def best(gpus, batch):
        t = throughput(gpus, batch)
        return None if t is None else fill.Best(t * gpus, t / 1e4, f"b{batch}", True)
    return best


def test_a_batch_fills_when_doubling_it_gains_less_than_ten_percent():
    # throughput per GPU saturating in the batch per GPU: T = x / (x + 1), x = batch / gpus
    best = _best_of(lambda g, b: (b / g) / (b / g + 1))
    # x = 8: 16/17 over 8/9 = 1.0588, 5.9% more: fills; x = 2: (4/5) / (2/3) = 1.2, 20%: not
    f = fill.fills(best, 64, 512)
    assert f.fills and f.gain == pytest.approx((16 / 17) / (8 / 9) - 1)
    assert not fill.fills(best, 64, 128).fills
    # no layout: fills nothing; a layout that does not fit: memory limits, not the batch
    assert not fill.fills(lambda g, b: None, 64, 512).fills
    assert fill.fills(lambda g, b: fill.Best(1.0, 0.1, "x", False), 64, 512).fills
    # the gain is T(2x) / T(x) - 1 = 1 / (2x + 1), below 10% for x > 4.5: x = 5 (1/11 = 9.1%)
    # fills, x = 4 (1/9 = 11.1%) does not
    assert fill.fills(best, 8, 40).fills and not fill.fills(best, 8, 32).fills


def test_the_search_finds_the_smallest_batch_and_the_largest_gpu_count_on_the_grid():
    # fills exactly when batch >= 5 x gpus (gain below 10% there, 50% below it)
    def best(g, b):
        return fill.Best(g * (1.0 if b >= 5 * g else 0.5 * b / (5 * g)), 0.1, "x", True)

    f = fill.batch_fill(best, 1024, 100, 8192, 8, cap=1 << 20, snap=lambda b: b)
    assert not f.fills
    # 5 x 1024 = 5,120: the powers of two 128 ... 8,192 (the first that fills), then the
    # octave below it, 4,096 x 1.25 = 5,120
    assert f.fill_batch == 5120
    # 100 sequences fill 20 GPUs: halving 512, 256, ... 16 (fills), then 28, 24, 20 on
    # whole nodes of 8: 16 is the largest whole-node count at most 20
    assert f.largest_gpus == 16
    assert "fills at most 16 GPUs" in f.largest_text()
    assert "a batch of 5,120 sequences (41.9M tokens) fills 1,024 GPUs" in f.filling_text()
    # a batch that fills is its own answer
    g = fill.batch_fill(best, 16, 100, 8192, 8, cap=1 << 20, snap=lambda b: b)
    assert g.fills and g.fill_batch == 100 and g.largest_gpus == 16 and g.advice() == ""


# ------------------------------------------------------------------ the runs

@pytest.mark.slow
def test_14_sequences_on_16384_gpus_are_raised_to_the_batch_that_fills_them():
    r = review(QWEN_14)
    # the batch law at 2.3B tokens: 492k tokens, 14 sequences of 32,768 (rounded from 15)
    assert r.inputs.batch.sequences == 14
    law = law_fill(r)
    assert law.test.batch == 14 and law.test.at is None and not law.fills
    # the largest GPU count 14 sequences fill: 24 (TP4 PP3 CP2, one replica); 32 do not
    assert law.largest_gpus == 24
    at24 = law_fill(r, gpus=24).test
    assert at24.fills and at24.at.layout.startswith("TP4 PP3 (9/10/9) CP2 DP1")
    assert not law_fill(r, gpus=32).fills
    # the batch that fills 16,384: 2,048 sequences (doubling gains 9.5%); 1,792, the grid's
    # point below, gains 40%
    assert law.fill_batch == 2048 and law.filling.gain == pytest.approx(0.095, abs=0.005)
    assert law_fill(r, batch=1792).test.gain > 0.3
    # answered with it, and saying so
    assert r.plan.global_batch == 2048 and r.plan.layout.description.startswith(
        "TP4 PP1 CP2 DP2048")
    j = r.to_json()
    assert j["global_batch_tokens"] == 2048 * 32768
    why = j["global_batch_reason"]
    assert why.startswith("2,048 sequences (67.1M tokens), raised to fill the GPUs")
    assert "no layout splits a batch of 14 sequences" in why and "it fills at most 24 GPUs" in why
    assert "DeepSeek LLM batch law" in why               # and the law's own source
    assert not any("multiple of" in w for w in j["warnings"])


@pytest.mark.slow
def test_a_given_batch_of_1024_tokens_on_16384_gpus_is_refused_naming_it():
    q = "model=qwen2.5-7b&gpu=h100-sxm&gpus=16384&global_batch_tokens=1024&seq_len=32768"
    with pytest.raises(InputError) as e:
        review(q)
    msg = str(e.value)
    assert e.value.param == "global_batch_tokens" and msg.startswith("global_batch_tokens=1024: ")
    # the true cause, the largest count it fills, and the batch that fills 16,384 GPUs
    assert "no layout splits a batch of 1 sequence (32.8k tokens) over 16,384 GPUs" in msg
    assert "it fills at most 8 GPUs" in msg
    assert "a batch of 2,048 sequences (67.1M tokens) fills 16,384 GPUs" in msg
    assert "multiple of" not in msg
    code, out, err = cli("review", "--json", "--query", q)
    assert code == 2 and out == "" and err.count("\n") == 1 and "global_batch_tokens=1024" in err


@pytest.mark.slow
def test_a_given_batch_that_does_not_fill_the_gpus_is_kept_with_its_cost():
    # 256 sequences of 32,768 on 16,384 GPUs: kept (TP4 PP8 CP2 DP256, one micro-batch each,
    # MFU 5.7%), with what it costs against the 2,048 that fill them
    r = review("model=qwen2.5-7b&gpu=h100-sxm&gpus=16384&global_batch_tokens=8388608&seq_len=32768")
    assert r.plan.global_batch == 256
    assert r.to_json()["global_batch_reason"] == "given by the scenario"
    f = r.plan.batch_fill
    assert not f.fills and f.fill_batch == 2048 and f.largest_gpus == 2048
    kept = [w for w in r.warnings if w.startswith("global_batch_tokens=8388608 kept: ")]
    assert len(kept) == 1
    assert "a batch of 2,048 sequences (67.1M tokens) fills 16,384 GPUs" in kept[0]
    ratio = f.filling.at.tokens_per_s / f.test.at.tokens_per_s
    assert ratio > 8
    assert f"the run takes {ratio:.2f}x the days it takes at 2,048" in kept[0]
    assert r.predict.mfu_limit.limit == "batch"
    assert r.to_json()["mfu_limit"]["limit"] == "batch"
    assert r.to_json()["batch_fill"]["fill_batch"] == 2048


@pytest.mark.slow
def test_llama3_405b_on_16384_b200_runs_the_batch_that_fills_them():
    r = review(LLAMA_B200)
    # the batch law's 2,048 sequences (16.8M tokens, Llama 3's own) do not fill 16,384 B200:
    # at 2,048 the review's layout is TP8 PP32x4 CP2 DP32 at MFU 34.3%, twice the batch gives
    # 39.3%: +14.5%. They fill at most 8,192 GPUs (+8.7% there)
    law = law_does_not_fill(r, 2048, "TP8 PP32x4 (3/4/3) CP2 DP32", 0.343)
    assert law.test.gain == pytest.approx(0.145, abs=0.005)
    assert law.largest_gpus == 8192
    # 4,096 sequences (33.6M tokens) fill them: doubling again gains 8.7%; 3,584 and 3,072, the
    # grid's points below, gain 19% and 13%
    assert law.fill_batch == 4096 and law.filling.gain == pytest.approx(0.087, abs=0.005)
    assert law_fill(r, batch=3584).test.gain > 0.1 and law_fill(r, batch=3072).test.gain > 0.1
    # the review runs 4,096: TP4 PP32x4 CP2 DP64 at MFU 39.3% (was 34.3%), 34.0 days (was
    # 39.0), half the 192 GB used (was a quarter, at TP8)
    assert r.plan.global_batch == 4096
    lay = r.plan.layout
    assert (lay.tp, lay.pp, lay.interleave, lay.cp, lay.dp) == (4, 32, 4, 2, 64)
    assert r.predict.mfu == pytest.approx(0.393, abs=0.002)
    assert r.forecast.floor_days == pytest.approx(34.0, abs=0.3)     # the floor's days
    assert 0.45 < r.predict.memory_gb_per_gpu / r.predict.capacity_gb < 0.6
    # PP32 at that batch is the step model's choice, not the batch's: the fastest PP16 layout
    # (TP4 PP16x4 CP2 DP128, 32 micro-batches) is 2.6% slower, beyond the 2% within which the
    # review takes the simpler layout, because with half the stages each GPU holds twice the
    # parameters: its exposed gradient sync is 0.70 s against 0.31 s
    L = stages.review_plan(r.inputs, stages.review_space(r.scenario, r.inputs.model, 8),
                           16384, 4096).layouts
    first = L.iloc[0]
    pp16 = L[(L["pp"] == 16) & L["fits"]].iloc[0]
    assert pp16["step_time_s"] / first["step_time_s"] - 1 == pytest.approx(0.026, abs=0.003)
    assert pp16["step_time_s"] / first["step_time_s"] - 1 > stages.SIMPLEST_WITHIN
    assert float(pp16["dp_comm_s"]) == pytest.approx(0.70, abs=0.01)
    assert float(first["dp_comm_s"]) == pytest.approx(0.31, abs=0.01)
    # the batch fills, so what limits MFU is the largest share of the step: compute
    lim = r.predict.mfu_limit
    assert lim.limit == "compute" and lim.shares["bubble"] < lim.shares["compute"]
    assert sum(lim.shares.values()) + r.predict.mfu == pytest.approx(1, abs=1e-9)


@pytest.mark.slow
def test_llama3_405b_on_16384_h100_keeps_its_published_batch():
    # Meta's own run: 2,048 sequences of 8,192 fill 16,384 H100 (doubling gains 7.2%)
    r = review("model=llama3-405b&gpu=h100-sxm&gpus=16384&tokens=15.6e12&fabric=roce-400-tuned"
               "&precision=bf16")
    f = r.plan.batch_fill
    assert r.plan.global_batch == 2048 and f.fills
    assert f.test.gain == pytest.approx(0.072, abs=0.005)
    assert "fills 16,384 GPUs: twice the batch would raise" in r.to_json()["global_batch_reason"]


@pytest.mark.slow
def test_gpt_oss_120b_on_2048_b300_is_not_held_at_a_70_percent_bubble():
    r = review(OSS_B300)
    # the batch law's 2,560 sequences do not split over DP2048 at PP1: the review's layout was
    # TP1 PP8 EP64 DP256 with 10 micro-batches, bubble 7/10 = 70% of the ideal step, MFU 11.1%
    law = law_does_not_fill(r, 2560, "TP1 PP8 (3/5/3) EP64 DP256", 0.111)
    # 4,096 sequences fill the 2,048 GPUs: PP1 EP64 DP2048, micro-batch 2, no bubble
    assert law.fill_batch == 4096 and r.plan.global_batch == 4096
    lay = r.plan.layout
    assert (lay.tp, lay.pp, lay.ep, lay.dp, lay.micro_batch) == (1, 1, 64, 2048, 2)
    assert r.predict.bubble_share == 0
    assert r.predict.mfu == pytest.approx(0.282, abs=0.002)
    assert r.forecast.floor_days == pytest.approx(1.24, abs=0.02)     # the floor; was 3.16
    # what limits it now: small per-GPU matmuls (compute), not the batch or a bubble
    assert r.predict.mfu_limit.limit == "compute"
    assert "of the dense FP8 peak" in r.predict.mfu_limit.reason



@pytest.mark.slow
def test_a_batch_near_the_law_that_splits_over_more_replicas_runs_instead():
    """16,128 H100 (126 nodes of 8 = 2^8 x 63): the law's 2,048 sequences and the batches the
    fill search tries (4,096, 5,120) split only with 63 pipeline stages, 2 of Llama 3.1 405B's
    126 layers each; 2,016 = 32 x 63 splits over 63 replicas. The review runs the batch within
    5% whose best layout is fastest, as sizing does, so a size sizing finds answers alike when
    given as a GPU count (sizing at 90 days: 16,128 GPUs, 77.6 days at 4,032 sequences)."""
    q = "model=llama3-405b&gpu=h100-sxm&tokens=1.56e13&gpus=16128"
    r = review(q)
    lay = r.plan.layout
    assert r.plan.global_batch % 63 == 0 and lay.dp % 63 == 0 and lay.pp < 63
    # the batch law's batch as given: kept, split by the 63-stage pipeline only
    forced = review(q + "&batch=custom&global_batch_tokens=16777216")
    assert forced.plan.global_batch == 2048 and forced.plan.layout.pp == 63
    assert r.headline["days"] < 0.8 * forced.headline["days"]


@pytest.mark.slow
@pytest.mark.parametrize("query, days", [
    # the helper-review cases: Llama 3.1 405B at its 15.6T tokens in 90 days, Llama 3 70B at
    # 1.4T in 30; both were answered at one batch by sizing and another by the review of the
    # GPU count found (16,128 GPUs: 77.6 against 102.5 days)
    ("model=llama3-405b&gpu=h100-sxm&tokens=1.56e13", 90),
    ("model=llama3-70b&gpu=h100-sxm&tokens=1.411e12", 30),
])
def test_a_size_found_by_days_answers_alike_as_a_gpu_count(query, days):
    sized = review(f"{query}&sizing=days&target_days={days}")
    given = review(f"{query}&gpus={sized.plan.gpus}")
    assert sized.size.meets_target and sized.headline["days"] <= days
    assert given.headline["days"] == pytest.approx(sized.headline["days"], rel=0.01)


def test_sizing_tries_the_round_node_counts_teams_build():
    """2^k x 1, 1.25, 1.5 and 1.75 nodes beyond the every-node range (all of 1-256): 2,048
    nodes of 8 are the 16,384 H100 of Meta's Llama 3 405B run (arXiv:2407.21783, §3.3)."""
    from llmcost.planning.sizes import candidate_sizes
    nodes = set((candidate_sizes(8, 4096) // 8).tolist())
    assert set(range(1, 257)) <= nodes
    assert {320, 384, 448, 512, 1024, 1280, 1536, 1792, 2048, 3584, 4096} <= nodes

# ------------------------------------------------------------------ given layout keys

@pytest.mark.parametrize("query, key, words", [
    ("model=llama3-8b&gpus=64&ep=8", "ep", "ep=8: the model is dense, it has no experts"),
    ("model=llama3-8b&gpus=64&etp=2", "etp", "etp=2: the model is dense, it has no experts"),
    ("model=mixtral-8x7b&gpus=64&ep=3", "ep", "ep=3: expert parallelism splits the 8 routed"),
    ("model=llama3-8b&gpus=64&first_stage_layers=3&pp=1", "first_stage_layers",
     "first_stage_layers=3 with pp=1: stage layers split a pipeline"),
    ("model=llama3-8b&gpus=64&first_stage_layers=3&last_stage_layers=4&pp=1",
     "first_stage_layers", "first_stage_layers=3 and last_stage_layers=4 with pp=1"),
    ("model=llama3-8b&gpus=64&vp=2&pp=1", "vp", "vp=2 with pp=1"),
])
def test_a_given_key_that_cannot_be_used_is_refused_naming_it(query, key, words):
    with pytest.raises(InputError) as e:
        review(query)
    assert e.value.param == key and str(e.value).startswith(words)
    code, out, err = cli("review", "--query", query)
    assert code == 2 and out == "" and err.count("\n") == 1 and words in err


def test_stage_layers_without_pp_restrict_the_planner_to_a_pipeline():
    # the planner's own choice for llama3-8b on 64 H100 is PP1, which has no stages to split:
    # with first_stage_layers=3 it searches PP > 1 and uses the 3 layers
    r = review("model=llama3-8b&gpu=h100-sxm&gpus=64&first_stage_layers=3")
    lay = r.plan.layout
    assert lay.pp > 1 and lay.first_stage_layers == 3
    assert review("model=llama3-8b&gpu=h100-sxm&gpus=64").plan.layout.pp == 1
    j = json.loads(json.dumps(r.to_json()))
    assert j["layout"]["first_stage_layers"] == 3


@pytest.mark.slow
def test_the_app_shows_a_refused_batch_beside_its_control():
    p = ReviewApp(query="model=qwen2.5-7b&gpu=h100-sxm&gpus=8&global_batch_tokens=32768&seq_len=32768")
    assert p.results is not None and p.errors["global_batch_tokens"].value == ""
    before = p.results
    p.set(gpus=16384)
    err = p.errors["global_batch_tokens"].value
    assert err.startswith("global_batch_tokens=32768: no layout splits a batch of 1 sequence")
    # the last good figures stay
    assert p.results is before and p.scenario.gpus == 8


@pytest.mark.parametrize("B", [24_576, 1_000_003, 7])
def test_on_a_tie_the_batch_near_the_law_is_the_laws_own(B):
    """When every batch within 5% splits over as many layouts (a 1T model on 512 L40S: DP 1
    only), the law's batch stays, even where the search's step (1/400 of the band) skips it:
    the fill search once proposed 24,577 sequences for 24,576."""
    from llmcost.review.stages.planning import _most_split_in_band
    assert _most_split_in_band(lambda b: np.ones(len(np.asarray(b)), dtype=np.int64), B, 0.05) == B
