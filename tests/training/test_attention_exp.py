"""Fused attention bounded by its softmax exponentials (llmcost.training.attention).

Derivation (per attention score element): the forward runs 4 d FLOPs of matmul (QK^T, PV)
and 1 exponential, the backward 2.5 x 4 d = 10 d FLOPs and 1 exponential (the recomputed
P). Matmul peak P over exponential rate X gives the FLOPs per exponential the GPU can
afford: H100 SXM 989.4e12 / 3.865e12 = 256 (132 SMs x 16 exponentials per clock at 1.83
GHz; FlashAttention-3 quotes 989 TFLOPS against 3.9 TFLOPS of special functions), B200
2250e12 / 4.395e12 = 512, B300 the same matmul peak with twice the exponentials: 256.
At head dim 64 the forward needs 256 FLOPs per exponential: balanced on H100 and B300, bound
by the exponentials on B200 (twice the matmul time); at head dim 128 (512) every GPU here
stays bound by its matmuls.
"""

import pytest

from llmcost._validate import InputError
from llmcost.training.attention import flash_attention_time_s, flash_score_elements_per_token

E = 0.33


def test_exp_rates_follow_sm_count_and_clock(cat):
    # SMs x 16 per clock x clock; FA3 §3.1 quotes 3.9 TFLOPS of special functions for H100
    assert cat.gpu("h100-sxm").exp_per_s == pytest.approx(132 * 16 * 1.83e9, rel=2e-3)
    assert cat.gpu("h100-sxm").exp_per_s == pytest.approx(3.9e12, rel=0.01)
    assert cat.gpu("a100-80gb").exp_per_s == pytest.approx(108 * 16 * 1.41e9, rel=2e-3)
    assert cat.gpu("b200").exp_per_s == pytest.approx(148 * 16 * 1.856e9, rel=2e-3)
    # Blackwell Ultra doubles the exponential units at the same matmul peak
    assert cat.gpu("b300").exp_per_s == pytest.approx(2 * cat.gpu("b200").exp_per_s, rel=1e-3)
    assert cat.gpu("gb300").exp_per_s == pytest.approx(2 * cat.gpu("gb200").exp_per_s, rel=1e-3)
    assert cat.gpu("mi300x").exp_per_s is None          # no figure: no ceiling


@pytest.mark.parametrize("gpu, d, fwd_ratio", [
    # forward exponential time / forward matmul time = (P / X) / (4 d)
    ("h100-sxm", 64, 1.0), ("h100-sxm", 128, 0.5),
    ("b200", 64, 2.0), ("b200", 128, 1.0),
    ("b300", 64, 1.0), ("b300", 128, 0.5)])
def test_forward_exp_vs_matmul(cat, gpu, d, fwd_ratio):
    g = cat.gpu(gpu)
    P, X = g.bf16_dense_tflops * 1e12, g.exp_per_s
    assert (1.0 / X) / (4.0 * d / P) == pytest.approx(fwd_ratio, rel=2e-3)
    n = 1e9
    t_mm = 4.0 * d * n / (E * P)                       # one forward's matmuls
    t_exp = n / (E * X)
    expect = max(t_mm, t_exp) + max(2.5 * t_mm, t_exp)  # the backward: 10 d per exponential
    assert flash_attention_time_s(n, d, P, X, E) == pytest.approx(expect)
    # without the bound: FlashAttention's 3.5 forwards of matmul
    assert flash_attention_time_s(n, d, P, None, E) == pytest.approx(3.5 * t_mm)


def test_b200_head_dim_64_is_slower_than_b300(cat):
    # B200 at d = 64: forward 2 t_mm, backward 2.5 t_mm -> 4.5 / 3.5 of the matmul bound;
    # B300 balanced -> exactly the matmul bound
    n, d = 1e9, 64
    t = {g: flash_attention_time_s(n, d, cat.gpu(g).bf16_dense_tflops * 1e12,
                                   cat.gpu(g).exp_per_s, E) for g in ("b200", "b300")}
    t_mm = 4.0 * d * n / (E * 2250e12)
    assert t["b200"] == pytest.approx(4.5 * t_mm, rel=2e-3)
    assert t["b300"] == pytest.approx(3.5 * t_mm, rel=2e-3)


def test_recompute_adds_one_forward():
    n, d, P, X = 1e9, 64, 2250e12, 2250e12 / 512
    t_mm, t_exp = 4 * d * n / (E * P), n / (E * X)
    assert (flash_attention_time_s(n, d, P, X, E, "full")
            - flash_attention_time_s(n, d, P, X, E)) == pytest.approx(max(t_mm, t_exp))


def test_score_elements_causal_and_tiled_window():
    s, a = 4096, 64
    assert flash_score_elements_per_token(s, a) == pytest.approx(a * s / 2)
    # gpt-oss: 128-token window on half the layers, in 128-key tiles -> 2 tiles per query
    # block: (2048 + 256) / 2 keys per query
    assert flash_score_elements_per_token(s, a, 128, 0.5) == pytest.approx(a * 1152)
    # a window wider than half the sequence costs no more than causal attention
    assert flash_score_elements_per_token(s, a, 4000, 1.0) == pytest.approx(a * s / 2)


def test_bad_input_names_parameter():
    with pytest.raises(InputError, match="window_share"):
        flash_score_elements_per_token(4096, 64, 128, 1.5)
    with pytest.raises(InputError, match="attention_efficiency"):
        flash_attention_time_s(1e9, 64, 1e15, 1e12, 0.0)


# ------------------------------------------------------------------ a query tile's fixed work

#: FlashAttention-2's causal forward (head dim 64) on H100 against sequence length, as printed
#: on the bars of Shah et al. 2024 (arXiv:2407.08608) Fig. 5 [TFLOP/s]
FA2_CAUSAL = {512: 180, 1024: 229, 2048: 262, 4096: 284, 8192: 295, 16384: 299}


def test_fixed_work_per_query_tile_gives_the_kernels_sequence_shape():
    from llmcost.training.attention import ATTENTION_TILE, flash_fixed_elements_per_token
    from llmcost.training.step import DEFAULT_CALIBRATION
    c, T, a = DEFAULT_CALIBRATION.attention_tile_overhead, ATTENTION_TILE, 32
    # per query: c T keys of fixed work, plus the masked half of the causal diagonal tile
    assert flash_fixed_elements_per_token(a, overhead_tiles=c) == pytest.approx(a * (c * T + T / 2))
    # a windowed layer's tiles are counted whole already: the fixed work alone
    assert flash_fixed_elements_per_token(a, 128, 1.0, overhead_tiles=c) == pytest.approx(a * c * T)
    assert flash_fixed_elements_per_token(a, 128, 0.5, overhead_tiles=c) == pytest.approx(
        a * (c * T + T / 4))
    # efficiency n / (n + n0) with n = a s / 2: s / (s + (2c + 1) T); against the 16k point the
    # published throughput falls as the formula does, every point within 2%
    def eff(s):
        n = flash_score_elements_per_token(s, a)
        return n / (n + flash_fixed_elements_per_token(a, overhead_tiles=c))
    for s, tflops in FA2_CAUSAL.items():
        assert eff(s) == pytest.approx(s / (s + (2 * c + 1) * T))
        assert eff(s) / eff(16384) == pytest.approx(tflops / FA2_CAUSAL[16384], rel=0.02), s
    # the causal diagonal alone (c = 0: s / (s + T)) puts 512 tokens at 0.81 of 16k, a third
    # above the published 0.60
    no_fixed = (512 / (512 + T)) / (16384 / (16384 + T))
    assert no_fixed > 1.3 * FA2_CAUSAL[512] / FA2_CAUSAL[16384]


def test_fixed_work_adds_matmul_time_not_exponentials():
    # n0 runs at the matmul rate; the exponentials stay one per score element
    n, n0, d, P, X = 1e9, 3e8, 64, 989.4e12, 3.865e12
    t_mm, t_exp = 4 * d * (n + n0) / (E * P), n / (E * X)
    assert flash_attention_time_s(n, d, P, X, E, fixed_elements=n0) == pytest.approx(
        max(t_mm, t_exp) + max(2.5 * t_mm, t_exp))
    assert flash_attention_time_s(n, d, P, None, E, fixed_elements=n0) == pytest.approx(
        3.5 * t_mm)
    with pytest.raises(InputError, match="fixed_elements"):
        flash_attention_time_s(n, d, P, X, E, fixed_elements=-1.0)
