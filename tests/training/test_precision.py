"""FP8/MXFP8 precision: which GPU runs what, peaks by part, cast traffic, copies, activation
saving, and utilization checks that know the run's precision.

Reference layer: Llama 3 70B (Llama Team 2024, arXiv:2407.21783, Table 3): h = 8192,
f = 28672 (SwiGLU), a = 64 query heads, a_kv = 8, d = 128, so d_q = 8192 and
P_mm = 2 h d_q + 2 h d_kv + 3 h f = 134,217,728 + 16,777,216 + 704,643,072 = 855,638,016
GEMM weights per layer. Layout: TP t = 8, s = 8192, b = 1, c = 1, T = 8192 tokens.
"""


import numpy as np
import pytest

from llmcost import InputError, catalog
from llmcost import utilization as ut
from llmcost.training import precision as pr
from llmcost.training.arch import ModelSpec
from llmcost.training.layer_options import LayerOptions

L70 = ModelSpec(layers=80, hidden=8192, heads=64, vocab=128256, seq_len=8192, kv_heads=8,
                ffn_hidden=28672, gated_ffn=True)


def fp8_options(**kw):
    """FP8 layer options (another precision where ``kw`` names one)."""
    return LayerOptions(**{"precision": "fp8", **kw})
P_MM_70B = 855_638_016


@pytest.fixture(scope="module")
def gpus():
    return {k: catalog.gpu(k) for k in ("h100-sxm", "a100-80gb", "b200", "gb200", "mi300x")}


# ------------------------------------------------------------------ which GPU runs what

def test_mxfp8_refused_on_h100(gpus):
    with pytest.raises(InputError) as e:
        pr.check_precision("mxfp8", gpus["h100-sxm"])
    assert e.value.param == "precision" and "blackwell" in str(e.value).lower()


def test_fp8_refused_on_a100(gpus):
    for name in ("fp8", "mxfp8"):
        with pytest.raises(InputError) as e:
            pr.check_precision(name, gpus["a100-80gb"])
        assert e.value.param == "precision"
    assert pr.check_precision("bf16", gpus["a100-80gb"]) == "bf16"


def test_precision_arrays_checked_elementwise(gpus):
    ok = pr.check_precision(np.array(["bf16", "fp8", "mxfp8"]), gpus["b200"])
    assert list(ok) == ["bf16", "fp8", "mxfp8"]
    assert list(pr.check_precision(["bf16", "fp8"], gpus["h100-sxm"])) == ["bf16", "fp8"]
    with pytest.raises(InputError, match="mxfp8"):
        pr.check_precision(["bf16", "mxfp8"], gpus["h100-sxm"])
    with pytest.raises(InputError, match="'fp8' is not supported by a100-80gb"):
        pr.check_precision(["bf16", "fp8"], gpus["a100-80gb"])
    with pytest.raises(InputError) as e:
        pr.check_precision("fp4", gpus["b200"])
    assert e.value.param == "precision"


# ------------------------------------------------------------------ peaks by part

def test_gemm_peak_is_fp8_rest_stays_bf16(gpus):
    # H100 SXM datasheet: 989.4 dense BF16, 1978.9 dense FP8 (data/gpus.csv)
    pk = pr.peak_tflops_by_part(gpus["h100-sxm"], "fp8")
    assert (pk.gemm_tflops, pk.other_tflops) == (1978.9, 989.4)
    pk = pr.peak_tflops_by_part(gpus["a100-80gb"], "bf16")
    assert (pk.gemm_tflops, pk.other_tflops) == (312, 312)
    # B200: 2250 BF16, 4500 FP8 (MXFP8 at the FP8 rate), broadcast over an array of names
    pk = pr.peak_tflops_by_part(gpus["b200"], np.array(["bf16", "fp8", "mxfp8"]))
    np.testing.assert_array_equal(pk.gemm_tflops, [2250, 4500, 4500])
    np.testing.assert_array_equal(pk.other_tflops, [2250, 2250, 2250])


# ------------------------------------------------------------------ quantized copies

def test_quantized_copy_bytes_per_element():
    # Hopper FP8: row-wise + transposed copy = 1 + 1; Blackwell FP8: one layout, 1;
    # MXFP8: two orientations of (1 byte + one E8M0 byte per 32) = 2 x 33/32 = 2.0625
    q = pr.quantized_copy_bytes_per_element(np.array(["bf16", "fp8", "mxfp8"]), "hopper")
    np.testing.assert_array_equal(q, [0.0, 2.0, 2.0625])
    assert pr.quantized_copy_bytes_per_element("fp8", "blackwell") == 1.0
    assert pr.quantized_copy_bytes_per_element("mxfp8", "blackwell") == 2.0625
    np.testing.assert_array_equal(
        pr.quantized_copy_bytes_per_element("fp8", np.array(["hopper", "blackwell", "ada"])),
        [2.0, 1.0, 2.0])


def test_weight_copies_llama70b_stage():
    # Llama 3 70B on TP8 PP4: 20 layers per stage; GEMM weights per GPU
    # 20 x 855,638,016 / 8 = 2,139,095,040.
    p = 20 * P_MM_70B / 8
    assert p == 2_139_095_040
    # H100 FP8: x 2 bytes = 4,278,190,080 (4.28 GB beside the 4.28 GB of BF16 weights)
    assert pr.fp8_weight_copy_bytes(p, "fp8", "hopper") == 4_278_190_080
    # B200 MXFP8: x 2.0625 = 4,411,883,520; B200 per-tensor FP8: x 1 = 2,139,095,040
    assert pr.fp8_weight_copy_bytes(p, "mxfp8", "blackwell") == 4_411_883_520
    assert pr.fp8_weight_copy_bytes(p, "fp8", "blackwell") == 2_139_095_040
    assert pr.fp8_weight_copy_bytes(p, "bf16") == 0
    # broadcast: params x precisions
    out = pr.fp8_weight_copy_bytes(np.array([[1e9], [2e9]]), np.array(["bf16", "fp8"]))
    np.testing.assert_array_equal(out, [[0, 2e9], [0, 4e9]])


# ------------------------------------------------------------------ cast traffic

def test_cast_traffic_llama70b_layer_tp8_by_hand():
    # Elements cast per GPU, SP on (h-wide tensors sharded over t), T = 8192:
    #   forward inputs  QKV h/t = 1024, proj d_q/t = 1024, FFN-up h/t = 1024,
    #                   FFN-down f/t = 3584                       -> 6656 per token
    #   backward dY     QKV d_q/t + 2 x 8 x 128 / min(8, 8) = 1024 + 256 = 1280,
    #                   proj h/t = 1024, FFN-up 2f/t = 7168, FFN-down h/t = 1024
    #                                                             -> 10496 per token
    #   (6656 + 10496) x 8192 = 140,509,184 elements.
    # Bytes per element, H100 FP8 current scaling: read 2 + amax read 2 + write 1 + 1 = 6
    #   -> 843,055,104 bytes (0.25 ms at 3.35 TB/s).
    elements = 140_509_184
    kw = dict(seq_len=8192, micro_batch=1, tp=8)
    sp = fp8_options(sequence_parallel=True)
    assert pr.fp8_cast_bytes_per_layer(L70, **kw, options=sp) == elements * 6 == 843_055_104
    # delayed scaling: no amax pass, 4 bytes per element
    assert pr.fp8_cast_bytes_per_layer(L70, **kw, options=sp, scaling="delayed") == elements * 4
    # B200 per-tensor FP8 (FP8-CS): 2 + 2 + 1 = 5; MXFP8: 2 + 2 x 33/32 = 4.0625
    assert pr.fp8_cast_bytes_per_layer(L70, **kw, options=sp,
                                       generation="blackwell") == elements * 5
    assert pr.fp8_cast_bytes_per_layer(L70, **kw, options=fp8_options(precision="mxfp8",
                                                              sequence_parallel=True),
                                       generation="blackwell") == 570_818_560
    assert pr.fp8_cast_bytes_per_layer(L70, **kw, options=fp8_options(precision="bf16",
                                                              sequence_parallel=True)) == 0


def test_cast_traffic_without_sp_and_with_full_recompute():
    kw = dict(seq_len=8192, micro_batch=1, tp=8)
    # no SP: the norm outputs and row-parallel dY are full width (8192) on every rank:
    #   forward 8192 + 1024 + 8192 + 3584 = 20992; backward 1280 + 8192 + 7168 + 8192 = 24832
    #   (20992 + 24832) x 8192 x 6 = 2,252,341,248
    assert pr.fp8_cast_bytes_per_layer(L70, **kw) == 2_252_341_248
    # full recompute with SP: the forward casts run twice:
    #   (2 x 6656 + 10496) x 8192 x 6 = 1,170,210,816
    out = pr.fp8_cast_bytes_per_layer(L70, **kw, options=fp8_options(
        sequence_parallel=True, recompute=np.array(["none", "selective", "full"])))
    np.testing.assert_array_equal(out, [843_055_104, 843_055_104, 1_170_210_816])
    # context parallelism splits the tokens: CP2 halves the traffic
    assert pr.fp8_cast_bytes_per_layer(L70, **kw, cp=2, options=fp8_options(
        sequence_parallel=True)) == 843_055_104 / 2


def test_weight_cast_per_step_llama70b_layer():
    # one layer's GEMM weights on a TP8 GPU: 855,638,016 / 8 = 106,954,752
    p = P_MM_70B / 8
    # H100 FP8-CS: read 2 + amax read 2 + write 2 = 6 bytes -> 641,728,512
    assert pr.fp8_weight_cast_bytes(p, "fp8") == 641_728_512
    # MXFP8: read 2 + write 2.0625 -> 434,503,680; FP32 weights read 4 bytes instead
    assert pr.fp8_weight_cast_bytes(p, "mxfp8", "blackwell") == 434_503_680
    assert pr.fp8_weight_cast_bytes(p, "fp8", weight_bytes=4.0) == p * (4 + 4 + 2)
    np.testing.assert_array_equal(
        pr.fp8_weight_cast_bytes(p, np.array(["bf16", "fp8"]), scaling="delayed"), [0, p * 4])


# ------------------------------------------------------------------ activation memory

def test_activation_saving_llama70b_layer_tp8_by_hand():
    kw = dict(seq_len=8192, micro_batch=1, tp=8)
    sp = dict(sequence_parallel=True)
    # per token, FP8 saves 1 byte on each GEMM input element (2 -> 1):
    #   QKV and FFN-up inputs 2h/t = 2048, FFN-down input f/t = 3584;
    #   with flash attention the projection input (= attention output, kept in BF16 by
    #   FlashAttention) gains an FP8 copy: -d_q/t = -1024.
    #   (2048 + 3584 - 1024) x 8192 = 4608 x 8192 = 37,748,736 bytes (37.7 MB per layer)
    assert pr.fp8_activation_saving_bytes_per_layer(L70, **kw, options=fp8_options(**sp)) == 37_748_736
    # without flash attention the projection input is saved only by the linear layer:
    #   (2048 + 3584 + 1024) x 8192 = 54,525,952
    assert pr.fp8_activation_saving_bytes_per_layer(L70, **kw, options=fp8_options(
        flash_attention=False, **sp)) == 54_525_952
    # MXFP8 keeps 33/32 bytes: (31/32)(2048 + 3584) - (33/32) 1024 = 4400 per token
    #   -> 36,044,800
    assert pr.fp8_activation_saving_bytes_per_layer(L70, **kw, options=fp8_options(
        precision="mxfp8", **sp)) == 36_044_800
    out = pr.fp8_activation_saving_bytes_per_layer(L70, **kw, options=LayerOptions(
        recompute=np.array(["none", "selective", "full"]),
        precision=np.array([["fp8"], ["bf16"]]), **sp))
    np.testing.assert_array_equal(out, [[37_748_736, 37_748_736, 0], [0, 0, 0]])


def test_activation_saving_is_half_korthikanti_gemm_inputs():
    # Korthikanti §4.1, GPT layout, t = 1: the GEMM inputs among the 34 sbh are the QKV
    # input 2sbh, projection input 2sbh, fc1 input 2sbh and fc2 input 8sbh = 14 sbh;
    # FP8 halves them: 7 sbh. GPT-3 175B, s = 2048, b = 1: 7 x 2048 x 12288 = 176,160,768.
    gpt3 = ModelSpec(layers=96, hidden=12288, heads=96, vocab=50257, seq_len=2048)
    out = pr.fp8_activation_saving_bytes_per_layer(gpt3, options=fp8_options(flash_attention=False))
    assert out == 7 * 2048 * 12288 == 176_160_768


# ------------------------------------------------------------------ end-to-end sanity

def test_fp8_speedup_on_h100_is_well_below_2x(gpus):
    """Plain roofline of one Llama 3 70B layer per micro-batch on H100, TP8, SP, s = 8192.

    Per token and layer, GEMM FLOPs 6 P_mm = 5,133,828,096 and attention FLOPs
    12 s d_q = 805,306,368, so the GEMM share is g = 6.375 / 7.375 = 51/59 = 0.8644.
    If FP8 doubled the GEMM rate and cost nothing else, the speed-up would be at most
    1 / (g/2 + 1 - g) = 2 / (2 - g) = 118/67 = 1.761. The casts cost real traffic:
      BF16: (5.1338e9 + 8.0531e8) x 1024 / 989.4e12                       = 6.147 ms
      FP8:  5.1338e9 x 1024 / 1978.9e12 + 8.0531e8 x 1024 / 989.4e12      = 3.490 ms
            + casts 843,055,104 B / 3.35 TB/s                             = 0.252 ms
            + weight cast 641,728,512 B per step / 16 micro-batches / 3.35 TB/s = 0.012 ms
      speed-up 6.147 / 3.754 = 1.638.
    """
    h100 = gpus["h100-sxm"]
    T, t, m = 8192, 8, 16
    gemm, attn = 6.0 * P_MM_70B, 12.0 * 8192 * 8192
    bf16 = pr.peak_tflops_by_part(h100, "bf16")
    fp8 = pr.peak_tflops_by_part(h100, "fp8")
    hbm = h100.hbm_bandwidth_tb_per_s * 1e12
    t_bf16 = (gemm / bf16.gemm_tflops + attn / bf16.other_tflops) * T / t / 1e12
    casts = pr.fp8_cast_bytes_per_layer(L70, 8192, 1, tp=t, options=fp8_options(sequence_parallel=True))
    weights = pr.fp8_weight_cast_bytes(P_MM_70B / t, "fp8")
    t_fp8 = ((gemm / fp8.gemm_tflops + attn / fp8.other_tflops) * T / t / 1e12
             + casts / hbm + weights / m / hbm)
    speedup = t_bf16 / t_fp8
    g = gemm / (gemm + attn)
    assert g == pytest.approx(51 / 59)
    assert 1.0 < speedup < 2.0 / (2.0 - g) == pytest.approx(118 / 67)
    assert speedup == pytest.approx(1.638, abs=0.002)
    # B200 MXFP8 on the same layer: the same FLOP share, a smaller cast cost per element
    b200 = gpus["b200"]
    bf = pr.peak_tflops_by_part(b200, "bf16")
    mx = pr.peak_tflops_by_part(b200, "mxfp8")
    hbm_b = b200.hbm_bandwidth_tb_per_s * 1e12
    tb = (gemm / bf.gemm_tflops + attn / bf.other_tflops) * T / t / 1e12
    tm = ((gemm / mx.gemm_tflops + attn / mx.other_tflops) * T / t / 1e12
          + pr.fp8_cast_bytes_per_layer(L70, 8192, 1, tp=t, options=fp8_options(
              precision="mxfp8", sequence_parallel=True), generation="blackwell") / hbm_b)
    assert 1.0 < tb / tm < 118 / 67


# ------------------------------------------------------------------ utilization knows precision

def test_fp8_run_against_fp8_peak_is_not_a_sparse_peak(gpus):
    h100 = gpus["h100-sxm"]
    # 37% of the 1978.9 FP8 dense peak is 0.37 x 1978.9 / 989.4 = 74.0% of the BF16 peak
    a = ut.assess_utilization(0.37, peak_tflops=1978.9, gpu=h100, precision="fp8")
    assert a.ok and [f.code for f in a.findings] == ["fp8-peak"]
    assert "74.0%" in a.findings[0].message
    # the same figure for a BF16 run is still the sparsity figure
    bf = ut.assess_utilization(0.37, peak_tflops=1978.9, gpu=h100)
    assert not bf.ok and bf.findings[0].code == "sparse-peak"
    # 2 x the FP8 dense peak is the FP8 sparsity figure
    sp = ut.assess_utilization(0.35, peak_tflops=2 * 1978.9, gpu=h100, precision="fp8")
    assert [f.code for f in sp.findings] == ["sparse-peak"]


def test_fp8_mfu_on_bf16_scale_is_not_rare(gpus):
    # Megatron-Bridge 25.11, DGX-H100 FP8-CS, Llama 3 70B: 719 model TFLOP/s/GPU
    # = 719 / 989.4 = 72.7% of the BF16 dense peak = 36.3% of the FP8 peak.
    u = 719 / 989.4
    assert [f.code for f in ut.assess_utilization(u, peak_tflops=989.4, gpu=gpus["h100-sxm"],
                                                  precision="fp8").findings] == []
    assert [f.code for f in ut.assess_utilization(u, precision="fp8").findings] == []
    # the same figure for a BF16 run is rare
    assert [f.code for f in ut.assess_utilization(u).findings] == ["rare"]
    # above the FP8 ceiling (2x the BF16 peak) is impossible; 2.1 / 2 = 105%
    a = ut.assess_utilization(2.1, precision="fp8")
    assert not a.ok and a.findings[0].code == "above-peak" and "1.05 x the peak" in a.findings[0].message
    # 25% of the BF16 peak is 12.5% of the FP8 peak: low for an FP8 run, not for BF16
    assert [f.code for f in ut.assess_utilization(0.25, precision="mxfp8").findings] == ["low"]
    assert not ut.assess_utilization(0.25).findings


def test_utilization_refuses_precision_the_gpu_lacks(gpus):
    with pytest.raises(InputError) as e:
        ut.assess_utilization(0.4, gpu=gpus["a100-80gb"], precision="fp8")
    assert e.value.param == "precision"
    with pytest.raises(InputError) as e:
        ut.assess_utilization(0.4, precision="fp16")
    assert e.value.param == "precision"


# ------------------------------------------------------------------ input errors, docstrings

@pytest.mark.parametrize("call,param", [
    (lambda: pr.fp8_cast_bytes_per_layer(L70, scaling="lazy"), "scaling"),
    (lambda: pr.fp8_cast_bytes_per_layer(L70, 8192, 0), "micro_batch"),
    (lambda: pr.fp8_cast_bytes_per_layer(L70.with_(kv_heads=5)), "kv_heads"),
    (lambda: pr.fp8_cast_bytes_per_layer(L70, options=fp8_options(recompute="some")), "recompute"),
    (lambda: pr.fp8_cast_bytes_per_layer(L70, options=fp8_options(precision="fp4")), "precision"),
    (lambda: pr.fp8_weight_cast_bytes(-1.0), "gemm_params"),
    (lambda: pr.fp8_weight_cast_bytes(1.0, weight_bytes=0), "weight_bytes"),
    (lambda: pr.fp8_weight_copy_bytes(1.0, "int8"), "precision"),
    (lambda: pr.quantized_copy_bytes_per_element("fp8", 9), "generation"),
    (lambda: pr.fp8_activation_saving_bytes_per_layer(L70, 8192, 1, tp=0), "tp"),
    (lambda: pr.fp8_activation_saving_bytes_per_layer(L70, options=fp8_options(
        flash_attention="yes")), "flash_attention"),
])
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises(InputError) as e:
        call()
    assert e.value.param == param
