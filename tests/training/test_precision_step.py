"""Precision wired through the step model, memory, planner, sizing and CLI.

Reference run: Llama 3 70B on 64 H100 as Megatron-Bridge lays it out (TP4 PP8, interleave
5, micro-batch 1, s = 8192, sequence parallel, fused attention, TP comm overlap; global batch
256 sequences in releases 26.02-26.04.01). Its published FP8-CS throughputs, 1,602-1,664
tokens/s/GPU, are calibration rows of data/calibration_runs.csv: they check the result
here, nothing is fitted to them.

Llama 3 70B (Llama Team 2024, arXiv:2407.21783, Table 3): l = 80, h = 8192, f = 28672
(SwiGLU), a = 64, a_kv = 8, d = 128, so the GEMM weights per layer are
P_mm = 2 h d_q + 2 h d_kv + 3 h f = 855,638,016.
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from llmcost import InputError, catalog
from llmcost import utilization as ut
from llmcost.cli import main
from llmcost.economics import sizing
from llmcost.training import planner
from llmcost.training.hardware import Hardware
from llmcost.training.layout import Layout
from llmcost.training.memory import MemoryOptions, memory_per_gpu
from llmcost.training.step import Options, predict_step

P_MM_70B = 855_638_016
#: Megatron-Bridge performance-recipe options (as benchmarks/validate.py states them)
MB_OPTIONS = Options(flash_attention=True, tp_comm_overlap=True)
RUNS = Path(__file__).resolve().parents[2] / "data" / "calibration_runs.csv"


@pytest.fixture(scope="module")
def h100(cat):
    g = cat.gpu("h100-sxm")
    return g, cat.fabric(g.scale_up), cat.fabric("ib-ndr")


def llama70b_mb(cat, h100, precision, global_batch=256, options=MB_OPTIONS):
    g, up, out = h100
    return predict_step(cat.model("llama3-70b"), Hardware(g, up, out), Layout(gpus=64, tp=4, pp=8,
                                                                              global_batch=global_batch,
                                                                              interleave=5, sequence_parallel=True,
                                                                              precision=precision,
                                                                              flash_attention=None,
                                                                              tp_comm_overlap=None),
                        options=options, seq_len=8192, with_scaling=False)


# ------------------------------------------------------------------ speed-up and calibration rows

def test_fp8_speedup_llama70b_h100_between_1x_and_roofline_bound(cat, h100):
    """Per token and layer, GEMM FLOPs 6 P_mm = 5,133,828,096 and attention FLOPs
    12 s d_q = 12 x 8192 x 8192 = 805,306,368: GEMM share g = 51/59 (tests/test_precision.py).
    Doubling only the GEMM rate bounds the speed-up by 2 / (2 - g) = 118/67 = 1.761; the
    casts, the BF16 attention and logits, communication and the bubble keep it lower."""
    bf16 = llama70b_mb(cat, h100, "bf16")
    fp8 = llama70b_mb(cat, h100, "fp8")
    speedup = float(fp8.tokens_per_s / bf16.tokens_per_s)
    g = 6 * P_MM_70B / (6 * P_MM_70B + 12 * 8192 * 8192)
    assert g == pytest.approx(51 / 59)
    assert 1.0 < speedup < 2 / (2 - g) == pytest.approx(118 / 67)
    # communication and the BF16 parts are unchanged; only compute (and the bubble it
    # paces) shrinks, and the weight casts add to the optimizer term
    assert fp8.tp_comm_s == bf16.tp_comm_s and fp8.pp_p2p_s == bf16.pp_p2p_s
    assert fp8.compute_s < bf16.compute_s and fp8.optimizer_s > bf16.optimizer_s


def test_fp8_llama70b_h100_against_megatron_bridge_rows(cat, h100):
    """Measured FP8-CS tokens/s/GPU on this layout (Megatron-Bridge@067f987, performance
    summary 26.02, 26.02.01, 26.04, 26.04.01 at B = 256; 25.11 at B = 128). Within the
    issue's 10% mean-error target, where the old hidden path (every FLOP at the FP8 peak, no
    casts) predicted 1,951 at B = 256: 17-20% too fast."""
    rows = pd.read_csv(RUNS)
    rows = rows[(rows["model"] == "llama3-70b") & (rows["gpu"] == "h100-sxm")
                & (rows["task"] == "pretrain") & (rows["precision"] == "fp8")
                & rows["source_table"].str.startswith("megatron-bridge")]
    assert len(rows) == 5 and rows["tokens_per_s_per_gpu"].between(1602, 1664).all()
    for B, measured in rows.groupby("global_batch")["tokens_per_s_per_gpu"]:
        pred = float(llama70b_mb(cat, h100, "fp8", global_batch=int(B)).tokens_per_s) / 64
        err = pred / measured.to_numpy() - 1
        assert np.all(np.abs(err) < 0.10), (B, pred, list(measured))


def test_mfu_against_bf16_peak_for_every_precision(cat, h100):
    fp8 = llama70b_mb(cat, h100, "fp8")
    m = cat.model("llama3-70b")
    per_gpu = float(fp8.tokens_per_s) / 64
    # model FLOPs per token (recompute none) x tokens/s/GPU over the BF16 dense 989.4 TFLOP/s
    assert float(fp8.mfu) == pytest.approx(m.flops_per_token("none", 8192) * per_gpu / 989.4e12,
                                           rel=1e-9)
    fp8_share = float(fp8.model_tflops_per_gpu) / 1978.9
    assert float(fp8.mfu) > fp8_share and float(fp8.mfu) == pytest.approx(2 * fp8_share,
                                                                           rel=1e-3)
    # above 60% of the BF16 peak, which the utilization checks do not call rare for FP8
    assert float(fp8.mfu) > 0.6
    codes = [f.code for f in ut.assess_utilization(float(fp8.mfu), gpu=h100[0],
                                                   precision="fp8").findings]
    assert "rare" not in codes and "above-peak" not in codes


def test_weight_casts_in_optimizer_term_by_hand(cat, h100):
    # pacing stage: 80 / 8 = 10 layers; GEMM weights per GPU 10 x 855,638,016 / 4
    # = 2,139,095,040; FP8-CS on H100 reads 2 + 2 (amax) and writes 1 + 1 (transposed copy)
    # = 6 bytes each: 12,834,570,240 bytes / 3.35 TB/s = 3.831 ms per step.
    bf16 = llama70b_mb(cat, h100, "bf16")
    fp8 = llama70b_mb(cat, h100, "fp8")
    assert float(fp8.optimizer_s - bf16.optimizer_s) == pytest.approx(
        12_834_570_240 / 3.35e12, rel=1e-9)
    # delayed scaling skips the amax read: 4 bytes per element
    delayed = llama70b_mb(cat, h100, "fp8", options=Options(
        flash_attention=True, tp_comm_overlap=True, fp8_scaling="delayed"))
    assert float(delayed.optimizer_s - bf16.optimizer_s) == pytest.approx(
        2_139_095_040 * 4 / 3.35e12, rel=1e-9)
    assert delayed.step_time_s < fp8.step_time_s


def test_precision_array_matches_scalar_calls(cat, h100):
    both = llama70b_mb(cat, h100, np.array(["bf16", "fp8"]))
    for i, name in enumerate(("bf16", "fp8")):
        one = llama70b_mb(cat, h100, name)
        assert both.step_time_s[i] == pytest.approx(float(one.step_time_s), rel=1e-12)
        assert both.memory_bytes[i] == pytest.approx(float(one.memory_bytes), rel=1e-12)
    # precision=None keeps options.precision
    opt = Options(flash_attention=True, tp_comm_overlap=True, precision="fp8")
    p = llama70b_mb(cat, h100, None, options=opt)
    assert float(p.step_time_s) == float(llama70b_mb(cat, h100, "fp8").step_time_s)


def test_mxfp8_on_blackwell_between_1x_and_bound(cat):
    g = cat.gpu("b200")
    up, out = cat.fabric(g.scale_up), cat.fabric("ib-xdr")
    kw = dict(options=MB_OPTIONS, seq_len=8192, with_scaling=False)
    m = cat.model("llama3-70b")
    # flash attention and TP overlap as MB_OPTIONS say
    t = {p: float(predict_step(m, Hardware(g, up, out),
                               Layout(gpus=64, tp=4, pp=8, global_batch=256, precision=p, interleave=5,
                                      sequence_parallel=True, flash_attention=None, tp_comm_overlap=None),
                               **kw).tokens_per_s)
         for p in ("bf16", "fp8", "mxfp8")}
    for p in ("fp8", "mxfp8"):
        assert 1.0 < t[p] / t["bf16"] < 118 / 67


@pytest.mark.parametrize("gpu", ["b200", "gb200", "gb300"])
def test_mxfp8_slower_than_fp8_as_measured(cat, gpu):
    """Megatron-Bridge 25.11 ran Llama 3 8B with FP8-CS and with MXFP8 on the same layout
    (TP1 PP1 CP1, micro-batch 2, 128 sequences of 8,192, 8 GPUs): MXFP8 was 3.6-5.5% slower
    (data/calibration_runs.csv). The model's MXFP8 GEMM efficiency is fitted to the ratios
    of five such pairs (residuals within 1.7%); without it MXFP8 came out ~1% faster."""
    rows = pd.read_csv(RUNS)
    r = rows[(rows["source_table"] == "megatron-bridge 25.11") & (rows["gpu"] == gpu)
             & (rows["model"] == "llama3-8b")].set_index("precision")["tokens_per_s_per_gpu"]
    measured = r["mxfp8"] / r["fp8"]
    assert 0.94 < measured < 0.97
    g = cat.gpu(gpu)
    kw = dict(options=Options(flash_attention=True), seq_len=8192, with_scaling=False)
    t = {p: float(predict_step(cat.model("llama3-8b"), Hardware(g, cat.fabric(g.scale_up), cat.fabric("ib-ndr")),
                               Layout(gpus=8, tp=1, pp=1, global_batch=128, precision=p, micro_batch=2,
                                      flash_attention=True), **kw).tokens_per_s) for p in ("fp8", "mxfp8")}
    assert t["mxfp8"] / t["fp8"] == pytest.approx(measured, abs=0.02)
    assert t["mxfp8"] < t["fp8"]


# ------------------------------------------------------------------ refusals

@pytest.mark.parametrize("gpu,prec", [("h100-sxm", "mxfp8"), ("a100-80gb", "fp8"),
                                      ("a100-80gb", "mxfp8")])
def test_predict_refuses_precision_gpu_lacks(cat, gpu, prec):
    g = cat.gpu(gpu)
    m = cat.model("llama3-8b")
    hw = Hardware(g, cat.fabric(g.scale_up), cat.fabric("ib-ndr"))
    with pytest.raises(InputError) as e:
        predict_step(m, hw, Layout(gpus=8, tp=8, pp=1, global_batch=8, precision=prec))
    assert e.value.param == "precision"
    with pytest.raises(InputError) as e:
        predict_step(m, hw, Layout(gpus=8, tp=8, pp=1, global_batch=8, precision=None),
                     options=Options(precision=prec))
    assert e.value.param == "precision"
    with pytest.raises(InputError) as e:
        planner.plan(m, Hardware(g, cat.fabric(g.scale_up), cat.fabric("ib-ndr")), 8, 8,
                     planner.Search(precision=prec))
    assert e.value.param == "precision"
    with pytest.raises(InputError) as e:
        sizing.size_cluster(m, Hardware(g, cat.fabric(g.scale_up), cat.fabric("ib-ndr")),
                            sizing.Target(30, 1e9), search=sizing.Search(precision=prec))
    assert e.value.param == "precision"


@pytest.mark.parametrize("cmd", ["predict", "plan", "size"])
@pytest.mark.parametrize("gpu,prec", [("h100-sxm", "mxfp8"), ("a100-80gb", "fp8")])
def test_cli_refuses_precision_gpu_lacks(capsys, cmd, gpu, prec):
    argv = {"predict": ["predict", "--model", "llama3-8b", "--gpus", "8", "--tp", "8", "--pp",
                        "1", "--global-batch", "8"],
            "plan": ["plan", "--model", "llama3-8b", "--gpus", "8", "--global-batch", "8"],
            "size": ["size", "--model", "llama3-8b", "--days", "30"]}[cmd]
    code = main(argv + ["--gpu", gpu, "--precision", prec])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "precision" in err and prec in err


def test_memory_refuses_fp8_with_lora(cat):
    with pytest.raises(InputError) as e:
        memory_per_gpu(cat.model("llama3-8b"), Layout(gpus=8, tp=8, pp=1, precision="fp8", global_batch=None),
                       MemoryOptions(finetune="lora"))
    assert e.value.param == "precision"


# ------------------------------------------------------------------ memory by hand

def test_fp8_memory_llama70b_tp8_pp4_by_hand(cat):
    """64 H100, TP8 PP4 (20 layers per stage), SP, flash attention, no recompute, mb 1,
    many micro-batches. The first stage is the peak: 1F1B keeps p = 4 micro-batches of its
    20 layers, 80 layers' activations.
    - FP8 copies of its GEMM weights (Hopper: row-wise + transposed, 2 bytes):
      20 x 855,638,016 / 8 x 2 = 4,278,190,080 bytes.
    - Activations saved per layer (tests/test_precision.py, by hand): QKV and FFN-up
      inputs 2h/t = 2048, FFN-down input f/t = 3584 at 1 byte instead of 2, and the FP8
      copy of the attention output FlashAttention keeps in BF16 anyway, -d_q/t = -1024:
      4608 x 8192 tokens = 37,748,736 bytes; x 80 layers = 3,019,898,880.
    - Net tensors +1,258,291,200; with 2% fragmentation on top (memory.FRAGMENTATION),
      +1,283,457,024."""
    m = cat.model("llama3-70b")
    kw = dict(seq_len=8192, generation="hopper")
    lay = dict(gpus=64, tp=8, pp=4, cp=1, zero_stage=0, micro_batch=1, global_batch=None,
               recompute="none", sequence_parallel=True, flash_attention=True)
    bf = memory_per_gpu(m, Layout(**lay, precision="bf16"), **kw)
    f8 = memory_per_gpu(m, Layout(**lay, precision="fp8"), **kw)
    assert int(f8.peak_stage) == int(bf.peak_stage) == 0
    assert float(f8.fp8_weights_bytes) == 4_278_190_080 and float(bf.fp8_weights_bytes) == 0
    assert float(bf.activations_bytes - f8.activations_bytes) == 3_019_898_880
    assert f8.weights_bytes == bf.weights_bytes        # the BF16 weights stay
    assert float(f8.total_bytes - bf.total_bytes) == pytest.approx(1_258_291_200 * 1.02, rel=1e-12)
    assert f8.to_gb()["fp8_weights_gb"] == pytest.approx(4.27819008)
    # ZeRO-3 gathers one layer at a time: 855,638,016 / 8 x 2 = 213,909,504
    z3 = memory_per_gpu(m, Layout(**{**lay, "zero_stage": 3}, precision="fp8"), **kw)
    assert float(z3.fp8_weights_bytes) == 213_909_504
    # Blackwell keeps one FP8 layout (1 byte); MXFP8 two with E8M0 scales (2 x 33/32)
    bw = memory_per_gpu(m, Layout(**lay, precision="fp8"), seq_len=8192, generation="blackwell")
    mx = memory_per_gpu(m, Layout(**lay, precision="mxfp8"), seq_len=8192, generation="blackwell")
    assert float(bw.fp8_weights_bytes) == 2_139_095_040
    assert float(mx.fp8_weights_bytes) == 2_139_095_040 * 2.0625


def test_predict_step_passes_generation_to_memory(cat):
    g = cat.gpu("b200")
    p = predict_step(cat.model("llama3-70b"), Hardware(g, cat.fabric(g.scale_up), cat.fabric("ib-xdr")),
                     Layout(gpus=64, tp=8, pp=4, global_batch=256, sequence_parallel=True, precision="fp8",
                            flash_attention=False), seq_len=8192, with_scaling=False)
    assert float(p.memory.fp8_weights_bytes) == 2_139_095_040   # 1 byte on Blackwell


# ------------------------------------------------------------------ planner and sizing

def test_plan_runs_every_layout_in_the_given_precision(cat, h100):
    g, up, out = h100
    m = cat.model("llama3-70b")
    space = planner.Space(tp=(4, 8), cp=(1,), micro_batch=(1,), zero_stage=(1,),
                          recompute=("none", "full"), interleave=(1, 5))
    bf = planner.plan(m, Hardware(g, up, out), 64, 256, planner.Search(space), MB_OPTIONS,
                      seq_len=8192)
    f8 = planner.plan(m, Hardware(g, up, out), 64, 256, planner.Search(space, precision="fp8"),
                      MB_OPTIONS, seq_len=8192)
    assert f8.evaluated == bf.evaluated          # precision is not a search dimension
    assert set(f8.layouts["precision"]) == {"fp8"} and set(bf.layouts["precision"]) == {"bf16"}
    assert "FP8" in planner.describe_layout(f8.layouts.iloc[0])
    assert "BF16" not in planner.describe_layout(bf.layouts.iloc[0])
    assert f8.top(1)["step_time_s"].iloc[0] < bf.top(1)["step_time_s"].iloc[0]


@pytest.mark.slow
def test_size_cluster_fp8_needs_no_more_gpus(cat, h100):
    g, up, out = h100
    m = cat.model("llama3-70b")
    bf = sizing.size_cluster(m, Hardware(g, up, out), sizing.Target(30, 2e12))
    f8 = sizing.size_cluster(m, Hardware(g, up, out), sizing.Target(30, 2e12),
                             search=sizing.Search(sizing.SIZING_SPACE, precision="fp8"))
    assert bf.meets_target and f8.meets_target and f8.gpus <= bf.gpus


# ------------------------------------------------------------------ CLI

def test_cli_predict_json_has_precision(capsys):
    base = ["predict", "--model", "llama3-70b", "--seq-len", "8192", "--gpu", "h100-sxm",
            "--gpus", "64", "--tp", "4", "--pp", "8", "--interleave", "5", "--global-batch",
            "256", "--sequence-parallel", "--tp-comm-overlap", "--json"]
    res = {}
    for prec in ("bf16", "fp8"):
        assert main(base + ["--precision", prec]) == 0
        res[prec] = json.loads(capsys.readouterr().out)
    assert res["bf16"]["precision"] == "bf16" and res["fp8"]["precision"] == "fp8"
    assert res["fp8"]["memory_breakdown_gb"]["fp8_weights_gb"] > 0
    assert res["bf16"]["memory_breakdown_gb"]["fp8_weights_gb"] == 0
    assert res["fp8"]["tokens_per_s"] > res["bf16"]["tokens_per_s"]
    # the default is BF16
    assert main(base) == 0
    assert json.loads(capsys.readouterr().out)["step_time_s"] == res["bf16"]["step_time_s"]


def test_cli_plan_and_size_json_have_precision(capsys):
    assert main(["plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "8",
                 "--global-batch", "8", "--precision", "fp8", "--top", "1", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["precision"] == "fp8" and "FP8" in r["layouts"][0]["description"]
    assert main(["size", "--model", "llama3-8b", "--days", "30", "--gpu", "b200",
                 "--precision", "mxfp8", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["precision"] == "mxfp8"


def test_cli_mfu_fp8_run_is_not_a_sparse_peak(capsys):
    # the 26.04.01 row: 1,664 tokens/s/GPU on 64 H100, 256 x 8192 tokens per step:
    # 2,097,152 / (1664 x 64) = 19.692 s per step
    wall = 256 * 8192 / (1664 * 64)
    argv = ["mfu", "--model", "llama3-70b", "--seq-len", "8192", "--gpu", "h100-sxm",
            "--gpus", "64", "--global-batch", "256", "--steps", "1",
            "--wall-clock-s", repr(wall), "--json"]
    assert main(argv + ["--precision", "fp8"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["peak_tflops"] == 989.4 and r["peak_basis"] == "bf16 dense"
    codes = [f["code"] for f in r["findings"]]
    assert "sparse-peak" not in codes and "rare" not in codes
    fpt = catalog.model("llama3-70b").flops_per_token("none", 8192)
    assert r["effective_utilization"] == pytest.approx(fpt * 1664 / 989.4e12)
    # the same figure claimed for a BF16 run is above every published one
    assert main(argv) == 0
    assert "rare" in [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert main(argv + ["--precision", "mxfp8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "precision" in err
