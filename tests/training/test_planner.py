"""The planner against a brute-force loop, its counts, the Pareto front and the seed heuristic."""

import dataclasses
import itertools

import numpy as np
import pytest

from llmcost import catalog
from llmcost.training import planner as pl
from llmcost.training import step as st
from llmcost.training.arch import ModelSpec
from llmcost.training.hardware import Hardware
from llmcost.training.layout import Layout

CAT = catalog.default()
A100, NVL3, HDR = CAT.gpu("a100-80gb"), CAT.fabric("nvlink3"), CAT.fabric("ib-hdr")
HW = Hardware(A100, NVL3, HDR)
SMALL = pl.Space(cp=(1, 2), micro_batch=(1, 2, 4), zero_stage=(0, 3),
                 recompute=("none", "full"), interleave=(1, 2, 3))


@pytest.mark.slow
@pytest.mark.parametrize("tps, pps", [
    # every rule of the loop still applies (TP 1 without SP, interleaving only where the stage's
    # layers and the micro-batches divide); make test-grid runs every TP and PP
    pytest.param((1, 2, 8), (1, 3, 8), id="some-tp-pp"),
    pytest.param((1, 2, 4, 8), (1, 2, 3, 4, 6, 8, 12, 24), id="every-tp-pp", marks=pytest.mark.grid)])
def test_planner_equals_brute_force_loop(tps, pps):
    m = CAT.model("megatron-gpt-1.7b")   # 24 layers, 24 heads, s 2048
    gpus, B = 32, 64
    P = pl.plan(m, HW, gpus, B, pl.Search(dataclasses.replace(SMALL, tp=tps, pp=pps)))
    # The loop: every combination, the rules written out again, one predict_step per layout.
    expected = {}
    for t, p, c, b, z, r, sp, v, fa, to in itertools.product(
            tps, pps, (1, 2), (1, 2, 4), (0, 3), ("none", "full"),
            (False, True), (1, 2, 3), (False, True), (False, True)):
        if 24 % t or 24 % p or gpus % (t * p * c):
            continue
        d = gpus // (t * p * c)
        if B % (b * d):
            continue
        mb = B // (b * d)
        if v > 1 and (p == 1 or (24 // p) % v or mb % p):
            continue
        if (sp or to) and t == 1:
            continue
        pred = st.predict_step(m, Hardware(A100, NVL3, HDR), Layout(gpus=gpus, tp=t, pp=p, cp=c, micro_batch=b,
                                                                    global_batch=B, interleave=v, zero_stage=z,
                                                                    recompute=r, sequence_parallel=sp,
                                                                    flash_attention=fa, tp_comm_overlap=to),
                               with_scaling=False)
        expected[(t, p, c, b, z, r, sp, v, fa, to)] = (float(pred.step_time_s), bool(pred.fits),
                                                      float(pred.memory_bytes) / 1e9)
    assert P.evaluated == len(expected)
    assert P.feasible == sum(f for _, f, _ in expected.values())
    for _, row in P.layouts.iterrows():
        key = (row.tp, row.pp, row.cp, row.micro_batch, row.zero_stage, row.recompute,
               bool(row.sequence_parallel), row.interleave, bool(row.flash_attention),
               bool(row.tp_comm_overlap))
        t_, fits, mem = expected[key]
        assert row.step_time_s == pytest.approx(t_, rel=1e-12)
        assert bool(row.fits) == fits and row.memory_gb == pytest.approx(mem, rel=1e-12)
    best_loop = min((t_ for t_, f, _ in expected.values() if f))
    assert P.layouts.iloc[0]["step_time_s"] == pytest.approx(best_loop)


def test_gpt3_1024_gpus_counts():
    m = ModelSpec(layers=96, hidden=12288, heads=96, vocab=51200, seq_len=2048)
    P = pl.plan(m, HW, 1024, 1536)
    assert P.evaluated >= 100_000
    assert 0 < P.feasible < P.evaluated
    top = P.top(5)
    assert top["fits"].all() and top["step_time_s"].is_monotonic_increasing
    assert (top["tp"] * top["pp"] * top["cp"] * top["dp"] == 1024).all()


def test_pareto_front_is_not_dominated():
    m = CAT.model("megatron-gpt-18.4b")
    P = pl.plan(m, HW, 256, 1024, pl.Search(SMALL))
    f = P.layouts[P.layouts["fits"]]
    for _, p in P.pareto.iterrows():
        dominated = ((f["step_time_s"] < p["step_time_s"]) & (f["headroom_gb"] > p["headroom_gb"])).any()
        assert not dominated
    assert P.pareto["step_time_s"].is_monotonic_increasing
    assert P.pareto["headroom_gb"].is_monotonic_increasing


def test_seed_heuristic_constrains_and_costs():
    m = CAT.model("llama2-70b")
    h100 = CAT.gpu("h100-sxm")
    hw = Hardware(h100, CAT.fabric("nvlink4"), CAT.fabric("ib-ndr"))
    free = pl.plan(m, hw, 128, 256, pl.Search(SMALL))
    seed = pl.plan(m, hw, 128, 256, pl.Search(SMALL, heuristic="seed"))
    L = seed.layouts
    assert (L["tp"] <= 8).all() and (L["tp"] * L["pp"] <= 32).all()
    assert seed.evaluated <= free.evaluated
    assert seed.top(1)["step_time_s"].iloc[0] >= free.top(1)["step_time_s"].iloc[0]


def test_cost_ranking_across_cluster_sizes():
    m = CAT.model("megatron-gpt-7.5b")
    P = pl.plan(m, HW, [64, 128, 256], 512, pl.Search(SMALL, usd_per_gpu_hour=2.0, rank_by="cost"))
    f = P.layouts[P.layouts["fits"]]
    assert f["usd_per_million_tokens"].is_monotonic_increasing
    # $ per million tokens = price x GPUs / tokens per second / 3600 x 1e6
    r = f.iloc[0]
    assert r["usd_per_million_tokens"] == pytest.approx(2.0 * r["gpus"] / r["tokens_per_s"] / 3600 * 1e6)


def test_why_slower_names_terms():
    m = CAT.model("megatron-gpt-18.4b")
    P = pl.plan(m, HW, 256, 1024, pl.Search(SMALL))
    others, _ = pl.runners_up(P.layouts, 1)
    text = pl.why_slower(P.layouts.iloc[0], others.iloc[0])
    assert "per step" in text and " s " in text


@pytest.mark.parametrize("kw, param", [
    (dict(rank_by="cost"), "usd_per_gpu_hour"),
    (dict(rank_by="speed"), "rank_by"),
    (dict(usd_per_gpu_hour=-1.0), "usd_per_gpu_hour"),
    (dict(heuristic="greedy"), "heuristic"),
    (dict(simplest_within=1.5), "simplest_within"),
    (dict(memory_margin=1.0), "memory_margin"),
    # the memory options are one checked group, not a dict of keywords
    (dict(memory={"moe_probs_at": "activation"}), "memory"),
])
def test_search_refuses_bad_input_naming_the_field(kw, param):
    with pytest.raises(ValueError) as e:
        pl.Search(SMALL, **kw)
    assert getattr(e.value, "param", None) == param


def test_search_is_a_cache_key():
    """Equal searches are equal and hash alike, so a plan can be cached on the search itself."""
    from llmcost.training.memory import MemoryOptions
    a = pl.Search(SMALL, memory=MemoryOptions(moe_probs_at="activation"))
    b = pl.Search(SMALL, memory=MemoryOptions(moe_probs_at="activation"))
    assert a == b and hash(a) == hash(b)
    assert a != pl.Search(SMALL)
