"""Uneven pipeline stages: the automatic split, explicit first/last stages, the heaviest
stage's memory, the slowest stage's pace, the planner and the CLI (Llama 3.1 405B as Meta ran
it: TP8 PP16 on 8,192 H100, 126 layers, arXiv:2407.21783 §3.3.2 and Table 4)."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from llmcost import catalog
from llmcost._validate import InputError
from llmcost.cli import main
from llmcost.training import memory as mem
from llmcost.training import planner as pl
from llmcost.training import step as st
from llmcost.training.hardware import Hardware
from llmcost.training.layout import Layout

CAT = catalog.default()
L405 = CAT.model("llama3-405b")
H100 = CAT.gpu("h100-sxm")
NVL4, NDR = CAT.fabric(H100.scale_up), CAT.fabric("ib-ndr")
GIB = 2 ** 30


@pytest.mark.parametrize("layers,pp,expected", [
    # L' = ceil(126/16) = 8, deficit 16*8 - 126 = 2: one from the first, one from the last
    (126, 16, (7, 8, 7)),
    # BLOOM: L' = ceil(70/12) = 6, deficit 72 - 70 = 2
    (70, 12, (5, 6, 5)),
    # L' = ceil(127/16) = 8, deficit 1: taken from the first stage only
    (127, 16, (7, 8, 8)),
    # L' = ceil(80/3) = 27, deficit 1
    (80, 3, (26, 27, 27)),
    # even: 96 / 8 = 12 everywhere
    (96, 8, (12, 12, 12)),
    # one stage holds everything
    (126, 1, (126, 126, 126)),
])
def test_automatic_split_by_hand(layers, pp, expected):
    f, mid, last = mem.pipeline_stage_layers(layers, pp)
    assert (int(f), int(mid), int(last)) == expected
    # the stages hold every layer once
    n_mid = max(pp - 2, 0)
    assert (int(f) + n_mid * int(mid) + int(last) if pp > 1 else int(f)) == layers


def test_automatic_split_beyond_one_layer_per_end():
    # 126 on PP5: L' = 26, 130 - 126 = 4 layers short, two from each end: 24 + 3 x 26 + 24
    assert [int(x) for x in mem.pipeline_stage_layers(126, 5)] == [24, 26, 24]
    # 13 on PP8: L' = 2, 3 short: 2 - 1 = 1 first, 2 - 2 = 0 last: no layer left, refused
    with pytest.raises(InputError) as e:
        mem.pipeline_stage_layers(13, 8)
    assert e.value.param == "pp" and "first_stage_layers" in str(e.value)


def test_explicit_first_and_last():
    # (126 - 6 - 8) / 14 = 8 layers on each middle stage
    assert [int(x) for x in mem.pipeline_stage_layers(126, 16, 6, 8)] == [6, 8, 8]
    # only the first given: the other 15 stages split 120 evenly (Megatron-Core), 8 each
    assert [int(x) for x in mem.pipeline_stage_layers(126, 16, first_stage_layers=6)] == [6, 8, 8]
    # PP5 refused automatically, but 21 + 3 x 28 + 21 = 126 is a valid explicit split
    assert [int(x) for x in mem.pipeline_stage_layers(126, 5, 21, 21)] == [21, 28, 21]
    # two stages: first + last = layers
    f, _, last = mem.pipeline_stage_layers(126, 2, 60, 66)
    assert [int(f), int(last)] == [60, 66]
    # one stage: the ends are ignored
    assert [int(x) for x in mem.pipeline_stage_layers(126, 1, 5, 5)] == [126, 126, 126]


@pytest.mark.parametrize("kwargs,param,allowed", [
    # 126 - 6 - 5 = 115 is not a multiple of 14; first = 126 - 5 - 14 j: 107, 93, ... 9
    (dict(pp=16, first_stage_layers=6, last_stage_layers=5), "first_stage_layers",
     "9, 23, 37, 51, 65, 79, 93, 107 (with last_stage_layers=5)"),
    # two stages: 126 - 60 = 66 is the only first stage that fits
    (dict(pp=2, first_stage_layers=60, last_stage_layers=60), "first_stage_layers", "66"),
    # a last stage of 200 layers leaves nothing for the other 15; last = 126 - 15 j
    (dict(pp=16, last_stage_layers=200), "last_stage_layers", "6, 21, 36, 51, 66, 81, 96, 111"),
])
def test_bad_first_last_refused(kwargs, param, allowed):
    with pytest.raises(InputError) as e:
        mem.pipeline_stage_layers(126, **kwargs)
    assert e.value.param == param
    assert f"allowed: {allowed}" in str(e.value)


def test_interleaving_rules():
    # automatic 7/8/7 is Megatron-Core's embedding/loss-in-the-split layout: 8 slots per
    # stage, so v = 2, 4, 8 are allowed and v = 3 is not
    for v_ in (2, 4, 8):
        mem.pipeline_stage_layers(126, 16, interleave=v_)
    with pytest.raises(InputError) as e:
        mem.pipeline_stage_layers(126, 16, interleave=3)
    assert e.value.param == "interleave"
    # the same split given explicitly is the same layout (a plan's row passed back)
    mem.pipeline_stage_layers(126, 16, 7, 7, interleave=8)
    # another explicit split: every stage's layers must divide by v, and 6 does not by 4
    mem.pipeline_stage_layers(126, 16, 6, 8, interleave=2)
    with pytest.raises(InputError) as e:
        mem.pipeline_stage_layers(126, 16, 6, 8, interleave=4)
    assert e.value.param == "interleave" and "first 6, middle 8, last 8" in str(e.value)


def test_memory_is_the_heaviest_stage_by_hand():
    # Llama 3.1 405B, TP8 PP16 (7/8/7), DP64 on 8,192 GPUs, batch 2048, b = 1 (m = 32),
    # full recomputation + SP (activations: the layer input only, 2h/t bytes per token),
    # ZeRO-1 over DP, Adam (2 + 2 + 12 bytes per parameter).
    br = mem.memory_per_gpu(L405, Layout(gpus=8192, tp=8, pp=16, micro_batch=1, global_batch=2048, zero_stage=1,
                                         recompute="full", sequence_parallel=True))
    h, V, s, t = 16384, 128256, 8192, 8
    # one layer: Q and O 2 h^2, K and V 2 h (8 x 128), gated FFN 3 h 53248, two RMSNorms 2h
    layer = 2 * h * h + 2 * h * 1024 + 3 * h * 53248 + 2 * h
    assert layer == 3_187_703_808
    first = 7 * layer + V * h             # 24,415,272,960 (embedding)
    middle = 8 * layer                    # 25,501,630,464: the heaviest
    last = 7 * layer + V * h + h          # 24,415,289,344 (LM head, final norm)
    assert middle > max(first, last)
    psi = middle / t                      # 3,187,703,808 per GPU
    states = 2 * psi + 2 * psi + 12 * psi / 64
    act_layer = s * 1 * 2 * h / t         # 33,554,432 bytes per layer per micro-batch
    # 1F1B: stage 1 holds p - 1 = 15 micro-batches of its 8 layers; stage 0 holds 16 x 7
    # and the layer being recomputed rebuilds its activations once (Chen et al. 2016 §3):
    # per token without recomputation 8h/t (the two norms' inputs and outputs) + 2 d_q/t
    # (Q) + 4 d_kv/t (K, V) + 2 d_q/t (flash output) + 6f/t (gated FFN inner)
    # = 16,384 + 4,096 + 512 + 4,096 + 39,936 = 65,024 bytes, less the kept 2h/t = 4,096
    rebuilt = s * (8 * h / t + 4 * h / t + 4 * 1024 / t + 6 * 53248 / t - 2 * h / t)
    assert rebuilt == 8192 * 60_928
    act_middle = 15 * 8 * act_layer + rebuilt   # 4,525,654,016
    tensors = states + act_middle
    total = tensors + 1e9 + 0.02 * tensors  # framework overhead (memory.FRAGMENTATION)
    assert float(br.total_bytes) == pytest.approx(total, rel=1e-12)
    assert float(br.weights_bytes) == pytest.approx(2 * psi, rel=1e-12)
    assert float(br.activations_bytes) == pytest.approx(act_middle, rel=1e-12)
    assert int(br.peak_stage) == 1 and int(br.peak_stage_layers) == 8
    # the first stage: fewer layers and parameters, so less memory although 16 micro-batches
    first_total = 4 * first / t + 12 * first / t / 64 + 16 * 7 * act_layer + rebuilt
    assert first_total < tensors


def test_even_pipeline_unchanged():
    # 96 layers on PP8: the default (even) and explicit 12/12 ends are the same layout
    m = CAT.model("gpt3-175b")
    a100, nvl3, hdr = CAT.gpu("a100-80gb"), CAT.fabric("nvlink3"), CAT.fabric("ib-hdr")
    lay = Layout(gpus=1024, tp=8, pp=8, global_batch=1536, interleave=2, recompute="full",
                 sequence_parallel=True, zero_stage=1, flash_attention=False)
    even = st.predict_step(m, Hardware(a100, nvl3, hdr), lay)
    given = st.predict_step(m, Hardware(a100, nvl3, hdr),
                            replace(lay, first_stage_layers=12, last_stage_layers=12))
    for k in ("step_time_s", "pp_bubble_s", "compute_s", "dp_comm_s", "memory_bytes"):
        assert float(getattr(given, k)) == float(getattr(even, k))
    # an even pipeline is paced by its last stage (the logits), and peaks on its first
    assert int(even.slowest_stage) == 7 and int(even.memory.peak_stage) == 0
    assert [int(even.first_stage_layers), int(even.last_stage_layers)] == [12, 12]


def test_bubble_follows_the_slowest_stage():
    # 126 layers as 7/8/7 and 124 as 6/8/6 share their slowest stage, a middle stage of 8
    # layers (an end stage of 7 or 6 layers plus the LM head, ~0.66 of a layer in FLOPs:
    # 6 V h = 1.26e10 vs 6 x 3.19e9 + attention per token, is lighter). The pipeline runs at
    # that stage's pace, so bubble and per-step compute are the same, although an average
    # stage holds 126/16 = 7.875 vs 124/16 = 7.75 layers.
    hw = Hardware(H100, NVL4, NDR)
    lay = Layout(gpus=8192, tp=8, pp=16, global_batch=2048, sequence_parallel=True, zero_stage=1,
                 flash_attention=False)
    a = st.predict_step(L405, hw, lay)
    b = st.predict_step(L405.with_(layers=124), hw,
                        replace(lay, first_stage_layers=6, last_stage_layers=6))
    assert int(a.slowest_stage) == 1 and int(b.slowest_stage) == 1
    assert float(a.pp_bubble_s) == pytest.approx(float(b.pp_bubble_s), rel=1e-12)
    assert float(a.compute_s) == pytest.approx(float(b.compute_s), rel=1e-12)
    # 128 layers on PP16 (8 each): the last stage adds the LM head to 8 layers, so it is
    # slower than 7/8/7's slowest stage
    c = st.predict_step(L405.with_(layers=128), hw, lay)
    assert int(c.slowest_stage) == 15
    assert float(c.pp_bubble_s) > float(a.pp_bubble_s) * 1.02


def test_planner_finds_pp16_for_405b():
    assert 16 in pl.pipeline_depths(L405) and 5 not in pl.pipeline_depths(L405)
    space = pl.Space(tp=(8,), cp=(1,), micro_batch=(1,), zero_stage=(1,),
                     recompute=("none",), sequence_parallel=(True,), interleave=(1,),
                     flash_attention=(True,), tp_comm_overlap=(False,))
    P = pl.plan(L405, Hardware(H100, NVL4, NDR), 8192, 2048, pl.Search(space))
    row = P.layouts[P.layouts["pp"] == 16].iloc[0]
    assert (int(row["first_stage_layers"]), int(row["middle_stage_layers"]),
            int(row["last_stage_layers"])) == (7, 8, 7)
    assert "PP16 (7/8/7)" in pl.describe_layout(row)
    assert bool(row["fits"])
    # the plan's row and a direct prediction of the same layout agree
    p = st.predict_step(L405, Hardware(H100, NVL4, NDR), Layout(gpus=8192, tp=8, pp=16, cp=1, micro_batch=1,
                                                                global_batch=2048, interleave=1, zero_stage=1,
                                                                recompute="none", sequence_parallel=True,
                                                                flash_attention=True), with_scaling=False)
    assert float(row["step_time_s"]) == pytest.approx(float(p.step_time_s), rel=1e-12)


def test_cli_predict_llama31_405b_as_meta_ran_it(capsys):
    # Table 4 of arXiv:2407.21783: TP8 CP1 PP16 DP64, sequence 8192, 16M tokens per batch;
    # §3.3.2: no activation checkpointing at 8K sequences
    code = main(["predict", "--model", "llama3-405b", "--gpu", "h100-sxm", "--gpus", "8192",
                 "--tp", "8", "--pp", "16", "--global-batch", "2048", "--sequence-parallel",
                 "--zero", "1", "--recompute", "none", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert code == 0
    assert r["layout"]["stage_layers"] == {"first": 7, "middle": 8, "middle_stages": 14,
                                           "last": 7}
    assert r["layout"]["dp"] == 64 and r["layout"]["num_microbatches"] == 32
    assert r["fits"] and r["memory_gb_per_gpu"] * 1e9 <= 80 * GIB
    # 2048 x 8192 tokens per step
    assert r["tokens_per_s"] * r["step_time_s"] == pytest.approx(2048 * 8192, rel=1e-9)


@pytest.mark.parametrize("gpus, published_mfu", [(8192, 0.43), (16384, 0.41)])
def test_llama31_405b_as_meta_ran_it_fits_and_predicts_published_mfu(capsys, gpus,
                                                                      published_mfu):
    """Done when: TP8 PP16 on 8,192 and 16,384 H100 fits in 80 GiB and predicts
    within 15% of the published 43% and 41% MFU (arXiv:2407.21783, Table 4).

    The layout is the paper's (§3.3.2), not a fit: interleaved with V chunks per rank, one
    layer less on the first and last stage, whose first / last chunk holds only the
    embedding / the head, so 126 layers fill 16 V - 2 one-layer chunks: V = 8. No
    activation checkpointing at 8K. FSDP shards gradients and optimizer states but keeps
    the weights (ZeRO-2). 16M tokens per step = 2,048 sequences of 8,192. The network is
    Meta's tuned RoCE (§3.3.1; data/fabrics.csv roce-400-tuned)."""
    code = main(["predict", "--model", "llama3-405b", "--gpu", "h100-sxm", "--gpus", str(gpus),
                 "--tp", "8", "--pp", "16", "--interleave", "8", "--global-batch", "2048",
                 "--sequence-parallel", "--zero", "2", "--recompute", "none",
                 "--fabric", "roce-400-tuned", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert code == 0
    assert r["layout"]["stage_layers"]["first"] == 7 and r["layout"]["interleave"] == 8
    assert r["fits"] and r["memory_gb_per_gpu"] * 1e9 <= 80 * GIB
    assert r["mfu"] == pytest.approx(published_mfu, rel=0.15)
    # MFU is model FLOPs over the BF16 peak: tokens/s x 6 (l P_mm + V h) + 12 l s d_q
    m = catalog.default().model("llama3-405b")
    per_token = m.flops_per_token()
    assert r["mfu"] == pytest.approx(r["tokens_per_s"] * per_token / (gpus * 989.4e12),
                                     rel=1e-6)
    # the model's page quotes these figures
    page = (Path(__file__).resolve().parents[2] / "docs" / "model.md").read_text()
    key = "predicts" if gpus == 16384 else "41%;"
    assert f"{key} {100 * r['mfu']:.1f}% " in page


def test_cli_refuses_a_bad_split(capsys):
    code = main(["predict", "--model", "llama3-405b", "--gpu", "h100-sxm", "--gpus", "8192",
                 "--tp", "8", "--pp", "16", "--global-batch", "2048",
                 "--first-stage-layers", "6", "--last-stage-layers", "5", "--json"])
    err = capsys.readouterr().err
    assert code == 2 and "first_stage_layers" in err and "allowed: 9, 23" in err


def test_plan_rows_pass_back_as_explicit_stages():
    # what the review does with the chosen row: the columns first/last_stage_layers given
    # back explicitly describe the same layouts, interleaved ones included (PP32x4 as 3/4/3)
    space = pl.Space(tp=(8,), cp=(1,), micro_batch=(1,), zero_stage=(1,),
                     recompute=("none",), sequence_parallel=(True,), interleave=(1, 2, 4),
                     flash_attention=(True,), tp_comm_overlap=(False,))
    L = pl.plan(L405, Hardware(H100, NVL4, NDR), 16384, 2048, pl.Search(space)).layouts
    assert ((L["pp"] == 32) & (L["interleave"] == 4)).any()
    p = st.predict_step(L405, Hardware(H100, NVL4, NDR), Layout(gpus=16384, tp=L["tp"].to_numpy(),
                                                                pp=L["pp"].to_numpy(), cp=1, micro_batch=1,
                                                                global_batch=2048,
                                                                interleave=L["interleave"].to_numpy(), zero_stage=1,
                                                                recompute="none", sequence_parallel=True,
                                                                flash_attention=True,
                                                                first_stage_layers=L["first_stage_layers"].to_numpy(),
                                                                last_stage_layers=L["last_stage_layers"].to_numpy()),
                        with_scaling=False)
    np.testing.assert_allclose(p.step_time_s, L["step_time_s"].to_numpy(), rtol=1e-12)
