"""Mixture-of-experts through memory, step time, planner, CLI, review and apps (
items 3-6 and the done-when lines)."""

import json
import re

import numpy as np
import pytest

from llmcost import InputError, catalog, review
from llmcost.apps.plotview import shown_figure
from llmcost.apps.review_app import ReviewApp
from llmcost.apps.sizing_app import SizingApp
from llmcost.cli import main
from llmcost.scenario import Scenario
from llmcost.training import comm, planner
from llmcost.training.hardware import Hardware
from llmcost.training.layout import Layout
from llmcost.training.memory import LayerOptions, memory_per_gpu, moe_ffn_activation_bytes
from llmcost.training.step import Options, predict_step

CAT = catalog.default()


def _hw(gid):
    g = CAT.gpu(gid)
    return g, CAT.fabric(g.scale_up), CAT.fabric("ib-ndr")


# ------------------------------------------------------------------ memory

def test_expert_states_shard_by_ep_and_their_optimizer_over_expert_dp():
    """Mixtral 8x7B, 64 GPUs, TP1 PP1, ZeRO-1: the routed experts (32 layers x 8 x 3 x 4096 x
    14336 = 45.1B) are split over EP, their Adam states over the expert data-parallel group
    64 / EP; the rest (1.6B) is replicated with its optimizer over DP = 64."""
    m = CAT.model("mixtral-8x7b")
    experts = 32 * 8 * 3 * 4096 * 14336
    assert m.expert_params == experts
    dense = m.params - experts
    for ep in (1, 8):
        r = memory_per_gpu(m, Layout(gpus=64, tp=1, pp=1, zero_stage=1, ep=ep, global_batch=None), seq_len=4096)
        w = 2 * (dense + experts / ep)
        opt = 12 * (dense / 64 + experts / ep / (64 / ep))
        assert float(r.weights_bytes) == pytest.approx(w, rel=1e-12)
        assert float(r.expert_weights_bytes) == pytest.approx(2 * experts / ep, rel=1e-12)
        assert float(r.optimizer_bytes) == pytest.approx(opt, rel=1e-12)
    # EP 8 holds an eighth of the expert weights
    r1, r8 = (memory_per_gpu(m, Layout(gpus=64, tp=1, pp=1, zero_stage=1, ep=e, global_batch=None),
                             seq_len=4096) for e in (1, 8))
    assert float(r1.weights_bytes - r8.weights_bytes) == pytest.approx(2 * experts * 7 / 8)


def test_moe_block_activations_by_hand():
    # Qwen3-30B-A3B: h 2048, E 128, k 8, f_e 768, no shared expert; s 4096, b 1, t = c = 1
    qwen3 = CAT.model("qwen3-30b-a3b")
    got = moe_ffn_activation_bytes(qwen3, 4096, 1)
    per_token = 4 * 128 + 8 * (4 * 2048 + 6 * 768)     # router probs + k (in, out, inner)
    assert got == 4096 * per_token
    # the busiest rank under imbalance 1.25 holds 1.25 x the routed copies
    hot = moe_ffn_activation_bytes(qwen3, 4096, 1, options=LayerOptions(moe_capacity_factor=1.25))
    assert hot - got == pytest.approx(0.25 * 4096 * 8 * (4 * 2048 + 6 * 768))


def test_expert_layout_rules_name_the_parameter():
    m = CAT.model("mixtral-8x7b")
    with pytest.raises(InputError) as e:
        memory_per_gpu(m, Layout(gpus=64, tp=1, pp=1, ep=3, global_batch=None))
    assert e.value.param == "ep"
    with pytest.raises(InputError) as e:
        memory_per_gpu(m, Layout(gpus=8, tp=1, pp=1, ep=16 // 2, etp=2, global_batch=None))      # 8 x 2 > 8 GPUs
    assert e.value.param == "gpus"
    with pytest.raises(InputError) as e:
        memory_per_gpu(CAT.model("llama3-8b"), Layout(gpus=8, tp=1, pp=1, ep=8, global_batch=None))
    assert e.value.param == "ep" and "dense" in str(e.value)


# ------------------------------------------------------------------ step time

def test_alltoall_alpha_beta_by_hand():
    # 8 ranks in one NVLink domain: 7/8 of S over NVLink at 450 GB/s x 0.77
    t = comm.hierarchical_alltoall_time_s(1e9, 8, 8, comm.Links.of(450, 50, 1, 4, 0.77, 0.9))
    assert t == pytest.approx(1e-6 + 7 / 8 * 1e9 / (450e9 * 0.77))
    # 64 ranks, 8 per node: 56/64 over the NIC at 50 GB/s x 0.9 is the slower path
    t = comm.hierarchical_alltoall_time_s(1e9, 64, 8, comm.Links.of(450, 50, 1, 4, 0.77, 0.9))
    assert t == pytest.approx(4e-6 + 56 / 64 * 1e9 / (50e9 * 0.9))
    # a GB200 NVL72 domain keeps EP 64 on NVLink
    t72 = comm.hierarchical_alltoall_time_s(1e9, 64, 72, comm.Links.of(900, 100, 1, 1, 0.77, 0.9))
    assert t72 == pytest.approx(1e-6 + 63 / 64 * 1e9 / (900e9 * 0.77))
    assert comm.hierarchical_alltoall_time_s(1e9, 1, 8, comm.Links.of(450, 50)) == 0


def _qwen3_30b(ep, **kw):
    g, up, out = _hw("h100-sxm")
    opts = Options(flash_attention=True, **kw)
    return predict_step(CAT.model("qwen3-30b-a3b"), Hardware(g, up, out), Layout(gpus=64, tp=1, pp=4, micro_batch=1,
                                                                                 global_batch=512, zero_stage=1,
                                                                                 ep=ep, flash_attention=None,
                                                                                 tp_comm_overlap=None,
                                                                                 precision=None), options=opts,
                        seq_len=4096, with_scaling=False)


def test_moe_step_terms_and_trends():
    base = _qwen3_30b(8)
    # MFU counts active FLOPs: 6 N_active-matmul + attention per token
    m = CAT.model("qwen3-30b-a3b").with_(seq_len=4096)
    flops = float(base.tokens_per_s) * m.flops_per_token()
    assert float(base.mfu) == pytest.approx(flops / (64 * 989.4e12), rel=1e-9)
    # the breakdown adds up to the step
    total = sum(float(getattr(base, k)) for k in base.BREAKDOWN)
    assert total == pytest.approx(float(base.step_time_s), rel=1e-9)
    assert float(base.ep_comm_s) > 0
    # EP 8 on an 8-GPU node stays on NVLink; EP 16 crosses the fabric: more all-to-all time
    assert float(_qwen3_30b(16).ep_comm_s) > float(base.ep_comm_s)
    # hiding the all-to-all helps; imbalance hurts; EP 1 has no all-to-all
    assert float(_qwen3_30b(8, moe_a2a_overlap=1.0).step_time_s) < float(base.step_time_s)
    assert float(_qwen3_30b(8, moe_load_imbalance=1.5).step_time_s) > float(base.step_time_s)
    assert float(_qwen3_30b(1).ep_comm_s) == 0


def test_dense_predictions_unchanged_by_moe_plumbing():
    g, up, out = _hw("h100-sxm")
    p = predict_step(CAT.model("llama3-70b"), Hardware(g, up, out), Layout(gpus=64, tp=8, pp=4, global_batch=256,
                                                                           sequence_parallel=True,
                                                                           flash_attention=True),
                     options=Options(flash_attention=True), with_scaling=False)
    assert float(p.ep_comm_s) == 0 and float(p.memory.expert_weights_bytes) == 0


@pytest.mark.slow
def test_planner_searches_expert_parallelism():
    g, up, out = _hw("b200")
    P = planner.plan(CAT.model("qwen3-235b-a22b"), Hardware(g, up, out), 256, 1024,
                     planner.Search(precision="mxfp8"))
    assert P.feasible > 0
    eps = set(P.layouts["ep"])
    assert {1, 8, 32, 128} <= eps
    row = P.layouts.iloc[0]
    # the row re-predicted alone is the same layout
    p = predict_step(CAT.model("qwen3-235b-a22b"), Hardware(g, up, out), Layout(gpus=int(row["gpus"]),
                                                                                tp=int(row["tp"]),
                                                                                pp=int(row["pp"]),
                                                                                cp=int(row["cp"]),
                                                                                micro_batch=int(row["micro_batch"]),
                                                                                global_batch=1024,
                                                                                interleave=int(row["interleave"]),
                                                                                zero_stage=int(row["zero_stage"]),
                                                                                recompute=row["recompute"],
                                                                                sequence_parallel=bool(row["sequence_parallel"]),
                                                                                flash_attention=bool(row["flash_attention"]),
                                                                                tp_comm_overlap=bool(row["tp_comm_overlap"]),
                                                                                precision="mxfp8",
                                                                                ep=int(row["ep"]),
                                                                                etp=int(row["etp"])),
                     with_scaling=False)
    assert float(p.step_time_s) == pytest.approx(float(row["step_time_s"]), rel=1e-12)


# ------------------------------------------------------------------ CLI and review

@pytest.mark.parametrize("prec", ["bf16", "fp8", "mxfp8"])
def test_cli_predict_and_plan_accept_ep(capsys, prec):
    gpu = "b200" if prec == "mxfp8" else "h100-sxm"
    code = main(["predict", "--model", "mixtral-8x7b", "--gpu", gpu, "--gpus", "64", "--tp", "1",
                 "--pp", "4", "--ep", "8", "--etp", "1", "--global-batch", "512",
                 "--precision", prec, "--json"])
    r = json.loads(capsys.readouterr().out)
    assert code == 0 and r["layout"]["ep"] == 8 and r["precision"] == prec
    assert r["active_params"] < r["params"] and r["breakdown_s"]["ep_comm_s"] > 0
    code = main(["plan", "--model", "qwen3-30b-a3b", "--gpu", gpu, "--gpus", "16",
                 "--global-batch", "256", "--ep", "8", "16", "--etp", "1", "--precision", prec,
                 "--top", "3", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert code == 0
    assert r["layouts"] and all(x["layout"]["ep"] in (8, 16) for x in r["layouts"])
    assert all("EP" in x["description"] for x in r["layouts"])


def test_cli_refuses_ep_on_a_dense_model(capsys):
    code = main(["predict", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tp",
                 "1", "--pp", "1", "--ep", "8", "--global-batch", "64"])
    err = capsys.readouterr().err
    assert code == 2 and "ep" in err and len(err.strip().splitlines()) == 1


# every app on each MoE scenario (a grid): make test only
@pytest.mark.slow
@pytest.mark.parametrize("query", [
    # DeepSeek-V3 on H800 and on H100 (the H800's export twin): in the grid (40 s each);
    # make test keeps the Qwen3 MoE here, and reviews DeepSeek-V3 on H800 at its covering point
    pytest.param("model=deepseek-v3&gpu=h800&gpus=2048&precision=fp8&tokens=14800000000000",
                 marks=pytest.mark.grid),
    pytest.param("model=deepseek-v3&gpu=h100-sxm&gpus=2048&precision=fp8&tokens=14800000000000",
                 marks=pytest.mark.grid),
    "model=qwen3-235b-a22b&gpu=b200&gpus=256&precision=mxfp8&tokens=36000000000000",
])
def test_review_app_plans_moe_without_errors(query):
    p = ReviewApp(query=query)
    assert p.last_error is None and p.warning_box.value == ""
    r = review.evaluate(p.scenario)
    assert r.plan.fits and r.plan.layout.ep > 1
    assert r.predict.fits and 0 < r.predict.mfu < 1
    assert f"EP{r.plan.layout.ep}" in r.plan.layout.description
    # the sizing app's memory chart shows the experts' weights, its table EP
    sz = SizingApp(query=query)
    assert sz.last_error is None
    mem = shown_figure(sz.outputs["memory"])
    names = [t["name"] for t in mem["data"]]
    assert "expert weights" in names
    table = shown_figure(sz.outputs["layouts"])
    assert table["data"][0]["cells"]["values"][0][0] == sz.results.plan.layout.description
    assert "EP" in sz.results.plan.layout.description
    # the band is the MoE one
    assert "MoE" in r.economics.band.reason
    # MFU counts the active FLOPs (6 N_active + attention per token), and the floor's days
    # are the tokens at that speed over the useful share of the hours; the headline's, the
    # forecast, are the floor's x the realized ratio of comparable published runs
    m = CAT.model(p.scenario.model)
    g = CAT.gpu(p.scenario.gpu)
    assert r.predict.mfu == pytest.approx(
        r.predict.tokens_per_s * m.flops_per_token() / (p.scenario.gpus * g.bf16_dense_tflops
                                                         * 1e12), rel=1e-9)
    assert r.forecast.floor_days == pytest.approx(
        p.scenario.tokens / r.predict.tokens_per_s / 86400 / r.economics.useful_share, rel=1e-9)
    assert r.headline["days"] == pytest.approx(
        r.forecast.floor_days * r.forecast.realized.value, rel=1e-12)
    # the share link carries the MoE controls
    p.set(moe_load_imbalance=1.0)
    assert "moe_load_imbalance=1&" in p.share.value
    assert m.is_moe


def test_review_days_fall_when_the_all_to_all_is_hidden():
    s = Scenario(model="deepseek-v3", gpu="h800", gpus=2048, precision="fp8", tokens=14.8e12,
                 moe_overlap="none")
    a = review.evaluate(s)
    b = review.evaluate(Scenario(**{**s.__dict__, "moe_overlap": "custom", "moe_a2a_overlap": 1.0}))
    assert b.headline["days"] < a.headline["days"]
    # the named recipes in order: nothing hidden, Megatron's 1F1B overlap, DualPipe
    days = [review.evaluate(Scenario(**{**s.__dict__, "moe_overlap": o})).headline["days"]
            for o in ("none", "1f1b", "dualpipe")]
    assert days[0] > days[1] > days[2]


# ------------------------------------------------------------------ CUDA graphs

def _qwen3_30b_gb300(graphs):
    g, up, out = _hw("gb300")
    opts = Options(flash_attention=True, moe_load_imbalance=1.0, cuda_graphs=graphs)
    return predict_step(CAT.model("qwen3-30b-a3b"), Hardware(g, up, out), Layout(gpus=8, tp=1, pp=1, micro_batch=8,
                                                                                 global_batch=512,
                                                                                 precision="mxfp8", ep=8,
                                                                                 flash_attention=None,
                                                                                 tp_comm_overlap=None),
                        options=opts, seq_len=4096, with_scaling=False)


def test_full_iteration_graph_removes_the_moe_host_overhead_by_hand():
    """Qwen3-30B-A3B, 8 GB300, EP 8, micro-batch 8, GBS 512: m = 512 / (8 x 8) = 8
    micro-batches, 48 MoE layers on the one stage; a full-iteration graph removes the fixed
    cost of every layer and micro-batch, m x 48 x moe_layer_overhead_s, and nothing else."""
    from llmcost.training.step import calibration_for
    eager, partial, full = (_qwen3_30b_gb300(x) for x in ("none", "partial", "full"))
    ovh = calibration_for(CAT.gpu("gb300")).moe_layer_overhead_s
    assert float(eager.compute_s - full.compute_s) == pytest.approx(8 * 48 * ovh, rel=1e-9)
    # per-module graphs keep the dispatcher's host round trip
    assert float(partial.step_time_s) == float(eager.step_time_s)
    assert float(full.ep_comm_s) == pytest.approx(float(eager.ep_comm_s), rel=1e-12)


def test_cuda_graphs_leave_dense_models_alone_and_name_a_bad_value():
    g, up, out = _hw("h100-sxm")
    m = CAT.model("llama3-70b")
    a, b = (predict_step(m, Hardware(g, up, out), Layout(gpus=64, tp=8, pp=4, global_batch=256,
                                                         sequence_parallel=True, flash_attention=True),
                         options=Options(flash_attention=True, cuda_graphs=x), with_scaling=False)
            for x in ("none", "full"))
    assert float(a.step_time_s) == float(b.step_time_s)
    with pytest.raises(InputError) as e:
        _qwen3_30b_gb300("everything")
    assert e.value.param == "cuda_graphs"


def _validate_module():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "validate.py"
    spec = importlib.util.spec_from_file_location("validate_graphs", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_recipe_graphs_explain_the_26_06_step_on_unchanged_layouts():
    """The Megatron-Bridge summary ran Qwen3-30B-A3B (GB300, MXFP8, EP 8, mb 8) and
    Qwen3-235B-A22B (GB300, MXFP8, PP4 VP12 EP32 mb 2) with the same layouts in 26.04 and
    26.06; between them the recipes switched to full-iteration CUDA graphs (tags v0.4.0 ->
    v0.5.0). Measured speed-ups: 45,275 / 31,470 = 1.44 and 9,015 / 6,994 = 1.29. Given only
    the recipe's graph mode, the step model predicts the 30B ratio within 10%; for the
    deep-pipeline, small-micro-batch 235B layout it overstates the gain (about 1.54): a
    constant host overhead per layer is the known limit, so only the direction is held."""
    val = _validate_module()
    rows = val.load_rows().set_index("id")
    ratios = []
    for old, new in (("mb-26.04-pretrain-qwen3-30b-a3b-gb300-mxfp8",
                      "mb-26.06-pretrain-qwen3-30b-a3b-gb300-mxfp8"),
                     ("mb-26.04-pretrain-qwen3-235b-a22b-gb300-mxfp8",
                      "mb-26.06-pretrain-qwen3-235b-a22b-gb300-mxfp8")):
        a, b = rows.loc[old], rows.loc[new]
        assert val.layout_text(a) == val.layout_text(b)
        assert (val.recipe_cuda_graphs(a), val.recipe_cuda_graphs(b)) == ("none", "full")
        measured = b["tokens_per_s_per_gpu"] / a["tokens_per_s_per_gpu"]
        pa, pb = (val.predict_row(r, val.catalog_model(CAT, r), CAT)[0] for r in (a, b))
        ratios.append((measured, pb / pa))
    (m30, p30), (m235, p235) = ratios
    assert m30 == pytest.approx(1.44, abs=0.01) and m235 == pytest.approx(1.29, abs=0.01)
    assert p30 == pytest.approx(m30, rel=0.10)
    assert 1.0 < p235 < 1.7


@pytest.mark.slow
def test_qwen3_residuals_on_nvl72_shrink_with_the_recipe_graphs():
    """Qwen3 on GB200 / GB300 (32 rows): predicting every row as eager leaves the 26.06+
    full-graph rows 25-40% slow; with each recipe's graph mode the mean signed residual of
    each of the four model x GPU groups is smaller in magnitude."""
    val = _validate_module()
    rows = val.load_rows()
    sel = rows[rows["model"].isin(["Qwen3_30B_a3B", "Qwen3_235B_a22B"])
               & rows["gpu"].isin(["gb200", "gb300"]) & (rows["task"] == "pretrain")]
    assert len(sel) == 32
    for (_, gpu), g in sel.groupby(["model", "gpu"]):
        with_graphs, eager = [], []
        for _, r in g.iterrows():
            m = val.catalog_model(CAT, r)
            meas = r["tokens_per_s_per_gpu"]
            with_graphs.append(val.predict_row(r, m, CAT)[0] / meas - 1)
            eager.append(val.predict_row(r, m, CAT, None, {"cuda_graphs": "none"})[0]
                         / meas - 1)
        assert abs(np.mean(with_graphs)) < abs(np.mean(eager))


def test_deepseek_v3_pretraining_throughput_out_of_sample():
    """DeepSeek-V3 (arXiv:2412.19437), not used to fit anything: 2.664 M H800 GPU-hours for
    14.8 T pre-training tokens (Table 1; "180K H800 GPU hours per trillion tokens", §1):
    14.8e12 / (2.664e6 x 3600) = 1,543 tokens/s per GPU. Layout as §3.2 describes it: 2,048
    H800, PP16 (61 layers: 3 on the first stage, 2 on the last), EP64 over 8 nodes, ZeRO-1
    data parallel, FP8 GEMMs (§3.3), global batch 15,360 x 4,096 tokens (§4.2, after the
    ramp). Assumptions from the paper's words: DualPipe leaves "near-zero all-to-all
    communication overhead" (overlap 0.95, the middle of "nearly all", 0.9-1.0) and the
    auxiliary-loss-free balancing keeps experts balanced (imbalance 1.0). The MTP module (one
    layer more, ~2%) is left out. Within 20%, the issue's target; over overlap 0.9-1.0 the
    prediction spans 1,549-1,863, so the assumption, not a constant, sets the band."""
    measured = 14.8e12 / (2.664e6 * 3600)
    assert measured == pytest.approx(1543, abs=1)
    m = CAT.model("deepseek-v3")
    gpu, up, out = _hw("h800")

    def per_gpu(overlap):
        p = predict_step(m, Hardware(gpu, up, out), Layout(gpus=2048, tp=1, pp=16, micro_batch=1,
                                                           global_batch=15360, zero_stage=1, precision="fp8",
                                                           first_stage_layers=3, last_stage_layers=2, ep=64,
                                                           flash_attention=True),
                         options=Options(flash_attention=True, moe_load_imbalance=1.0, moe_a2a_overlap=overlap),
                         seq_len=4096, with_scaling=False)
        return float(p.tokens_per_s) / 2048

    assert per_gpu(0.95) / measured - 1 == pytest.approx(0.0, abs=0.20)
    # the all-to-all is what DualPipe hides: without the overlap the run would take 2x longer
    assert per_gpu(0.0) < 0.5 * per_gpu(0.95)


def test_review_notes_an_exposed_all_to_all_with_its_share_of_the_step():
    """DeepSeek-V3 on 2,048 H800 with nothing hidden: the note gives the exposed
    all-to-all and the step from the same prediction, and its share; stating the overlap
    DualPipe reaches (0.95) removes it, and dense models never get it."""
    from llmcost.review.stages import a2a_note
    s = Scenario(model="deepseek-v3", gpu="h800", gpus=2048, precision="fp8", tokens=14.8e12,
                 moe_load_imbalance=1.0, moe_overlap="none")
    r = review.evaluate(s)
    a2a, step = float(r.predict.step.ep_comm_s), r.predict.step_time_s
    notes = [w for w in r.warnings if w.startswith("MoE all-to-all")]
    assert a2a / step > 0.10
    assert notes == [f"MoE all-to-all: {a2a:,.2f} s of the {step:,.2f} s step "
                     f"({a2a / step:.0%}), none of it hidden; DeepSeek-V3's DualPipe leaves "
                     "\"near-zero all-to-all communication overhead\" (arXiv:2412.19437, "
                     "\u00a73.2.1) and Megatron-LM's expert-parallel overlap hides part of it: if "
                     "your stack overlaps it, pick it under 'MoE all-to-all overlap' "
                     "(moe_overlap=1f1b or dualpipe)"]
    hidden = review.evaluate(Scenario(**{**s.__dict__, "moe_overlap": "dualpipe"}))
    assert not [w for w in hidden.warnings if w.startswith("MoE all-to-all")]
    assert not [w for w in review.evaluate(Scenario()).warnings if w.startswith("MoE")]
    # the threshold: more than 10% of the step
    assert a2a_note(1.0, 10.0, 0.0) is None
    assert "(11%), 50% of it hidden" in a2a_note(1.1, 10.0, 0.5)
