"""Mixture-of-experts layers and multi-head latent attention: parameters and FLOPs.

One function per model, scalars or numpy arrays in, same shape out. Symbols: h model width,
E routed experts, k experts per token (top-k), f_e one routed expert's FFN width, f_s the
shared experts' total FFN width, a heads; MLA (DeepSeek-V2/V3) compresses queries to a rank
r_q and keys/values to a rank r_kv, with d_n (no-position) and d_r (RoPE) query/key dims per
head and d_v value dims per head.

Training FLOPs of an MoE model count the weights a token meets, not the weights stored:
6 N_active per token plus attention (Kaplan's 6N rule with N the activated parameters, as the
DeepSeek-V3 report's 37B "activated" parameters and Mixtral's 13B "active" ones are used).

References
----------
1. DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, §2.1 (MLA, Eq. 1-11),
   §2.1.2 (DeepSeekMoE: shared and routed experts, Eq. 12-16), §2.2 (multi-token prediction,
   Eq. 21-25), §4.2 (hyper-parameters: 61 layers, first 3 dense, 1 shared + 256 routed experts
   of width 2048, top-8; 671B total, 37B activated; MTP module 14B with the shared embedding
   and head, 11.6B without).
2. A. Q. Jiang et al., "Mixtral of Experts", arXiv:2401.04088, §2 (top-2 of 8 SwiGLU
   experts; 47B parameters, 13B active).
3. N. Shazeer et al., "Outrageously Large Neural Networks: The Sparsely-Gated
   Mixture-of-Experts Layer", arXiv:1701.06538 (the router h x E).
4. J. Kaplan et al. 2020, arXiv:2001.08361, §2.1 (C = 6 N per token).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v

ATTENTIONS = ("gqa", "mla")

#: share of the MoE dispatch/combine all-to-all hidden behind compute, by named recipe [-]:
#:
#: - "none": nothing overlapped (Megatron-Core's dropless dispatcher without overlap flags);
#: - "1f1b": Megatron-Core's EP overlap in the 1F1B schedule
#:   (``--overlap-moe-expert-parallel-comm``, with DeepEP/HybridEP), as the Megatron-Bridge
#:   25.11-26.08 MoE recipes run it: 0.71, fitted with the dispatcher cost to the 106
#:   expressible MoE rows of that summary
#:   (log-std 0.089; ``make validate FIT=1``, benchmarks/validate.py MOE_A2A_OVERLAP);
#: - "dualpipe": DeepSeek-V3's DualPipe, which overlaps forward and backward chunks so that
#:   the all-to-all overhead is "near-zero" (arXiv:2412.19437 §3.2.1, Fig. 4): 0.95, an
#:   assumption for "near-zero".
A2A_OVERLAP = {"none": 0.0, "1f1b": 0.71, "dualpipe": 0.95}
#: which vocabulary matrices a model's published "active" count includes
ACTIVE_CONVENTIONS = ("embedding+head", "head")


def mla_attention_params(hidden: ArrayLike, heads: ArrayLike, q_lora_rank: ArrayLike, kv_lora_rank: ArrayLike,
                         qk_nope_head_dim: ArrayLike, qk_rope_head_dim: ArrayLike,
                         v_head_dim: ArrayLike) -> float | np.ndarray:
    r"""Weights of one multi-head latent attention block (projections and latent norms).

    .. math::
        P_{MLA} = \underbrace{h r_q + r_q + r_q\, a (d_n + d_r)}_{\text{queries}}
                + \underbrace{h (r_{kv} + d_r) + r_{kv} + r_{kv}\, a (d_n + d_v)}_{\text{keys, values}}
                + \underbrace{a d_v h}_{\text{output}}

    With r_q = 0 the queries are projected directly: h a (d_n + d_r).

    Parameters
    ----------
    hidden, heads : int or array
        h, a [-].
    q_lora_rank, kv_lora_rank : int or array
        r_q (0: no query compression), r_kv [-].
    qk_nope_head_dim, qk_rope_head_dim, v_head_dim : int or array
        d_n, d_r, d_v per head [-].

    Returns
    -------
    params : int or array
        [-]. DeepSeek-V3 (h 7168, a 128, r_q 1536, r_kv 512, d_n 128, d_r 64, d_v 128):
        187,107,328 per layer.

    References
    ----------
    .. [1] DeepSeek-V3 report, arXiv:2412.19437, §2.1.1, Eq. 1-11 (W^DQ, W^UQ, W^QR,
       W^DKV, W^KR, W^UK, W^UV, W^O; RMSNorm on both latents).
    """
    h = v.integer("hidden", hidden)
    a = v.integer("heads", heads)
    rq = v.integer("q_lora_rank", q_lora_rank, minimum=0)
    rkv = v.integer("kv_lora_rank", kv_lora_rank)
    dn = v.integer("qk_nope_head_dim", qk_nope_head_dim)
    dr = v.integer("qk_rope_head_dim", qk_rope_head_dim, minimum=0)
    dv = v.integer("v_head_dim", v_head_dim)
    q = np.where(rq > 0, h * rq + rq + rq * a * (dn + dr), h * a * (dn + dr))
    kv = h * (rkv + dr) + rkv + rkv * a * (dn + dv)
    return v.result(q + kv + a * dv * h)


def gqa_attention_params(hidden: ArrayLike, heads: ArrayLike, kv_heads: ArrayLike, head_dim: ArrayLike,
                         qkv_bias: ArrayLike = False, out_bias: ArrayLike = False) -> float | np.ndarray:
    r"""Weights (and biases) of one grouped-query attention block.

    .. math:: P = 2 h d_q + 2 h d_{kv} + [\text{qkv bias}](d_q + 2 d_{kv})
              + [\text{output bias}]\,h,\quad d_q = a d,\ d_{kv} = a_{kv} d

    Parameters
    ----------
    hidden, heads, kv_heads, head_dim : int or array
        h, a, a_kv, d [-].
    qkv_bias, out_bias : bool
        Biases on the query/key/value and output projections (gpt-oss: both).

    Returns
    -------
    params : int or array
        [-].

    References
    ----------
    .. [1] J. Ainslie et al., "GQA", arXiv:2305.13245, §2.
    """
    h = v.integer("hidden", hidden)
    a = v.integer("heads", heads)
    akv = v.integer("kv_heads", kv_heads)
    d = v.integer("head_dim", head_dim)
    dq, dkv = a * d, akv * d
    bias = v.boolean("qkv_bias", qkv_bias) * (dq + 2 * dkv) + v.boolean("out_bias", out_bias) * h
    return v.result(2 * h * dq + 2 * h * dkv + bias)


def moe_ffn_params(hidden: ArrayLike, experts: ArrayLike, top_k: ArrayLike, expert_ffn_hidden: ArrayLike,
                   shared_ffn_hidden: ArrayLike = 0, gated: ArrayLike = True, expert_biases: ArrayLike = False,
                   router_bias: ArrayLike = False) -> tuple[float | np.ndarray, float | np.ndarray]:
    r"""Total and activated weights of one MoE feed-forward block.

    .. math::
        P_{expert} &= k_g h f_e + [\text{biases}]\,((k_g - 1) f_e + h),\quad k_g = 3
        \text{ (gated) or } 2\\
        P_{total} &= h E + [\text{router bias}]\,E + E\,P_{expert} + k_g h f_s\\
        P_{active} &= h E + [\text{router bias}]\,E + k\,P_{expert} + k_g h f_s

    Parameters
    ----------
    hidden : int or array
        h [-].
    experts, top_k : int or array
        Routed experts E and experts per token k [-], 1 <= k <= E.
    expert_ffn_hidden : int or array
        f_e, one routed expert's inner width [-].
    shared_ffn_hidden : int or array
        f_s, the shared experts' total inner width [-] (DeepSeek-V3: 1 x 2048; 0: none).
    gated : bool
        SwiGLU experts (three matrices) [-].
    expert_biases, router_bias : bool
        Biases in the experts (gpt-oss: 2 f_e on the fused gate/up, h on the down
        projection) and on the router (gpt-oss; DeepSeek-V3's balancing bias).

    Returns
    -------
    total, active : int or array
        [-]. Mixtral 8x7B (h 4096, E 8, k 2, f_e 14336): 1,409,318,912 and 352,354,304.

    References
    ----------
    .. [1] Shazeer et al. 2017, arXiv:1701.06538 (router); Jiang et al. 2024,
       arXiv:2401.04088 §2 (top-k SwiGLU experts); DeepSeek-V3 report §2.1.2, Eq. 12
       (shared + routed experts).
    """
    h = v.integer("hidden", hidden)
    E = v.integer("moe_experts", experts)
    k = v.integer("moe_top_k", top_k)
    if np.any(k > E):
        raise v.InputError("moe_top_k", f"moe_top_k must be at most moe_experts ({int(np.max(E))}), "
                                        f"got {int(np.max(k))}")
    fe = v.integer("moe_ffn_hidden", expert_ffn_hidden)
    fs = v.integer("moe_shared_ffn_hidden", shared_ffn_hidden, minimum=0)
    kg = np.where(v.boolean("gated", gated), 3, 2)
    expert = kg * h * fe + v.boolean("expert_biases", expert_biases) * ((kg - 1) * fe + h)
    router = h * E + v.boolean("router_bias", router_bias) * E
    shared = kg * h * fs
    return v.result(router + E * expert + shared), v.result(router + k * expert + shared)


def moe_layer_count(layers: ArrayLike, dense_layers: ArrayLike = 0, layer_step: ArrayLike = 1) -> float | np.ndarray:
    r"""Number of MoE layers: after the first dense ones, every n-th layer.

    .. math:: l_{MoE} = \#\{i \in [l_d, l) : (i + 1) \bmod n = 0\}

    Parameters
    ----------
    layers : int or array
        l [-].
    dense_layers : int or array
        l_d, leading dense layers [-] (DeepSeek-V3 ``first_k_dense_replace`` = 3).
    layer_step : int or array
        n [-] (Llama 4 Maverick ``interleave_moe_layer_step`` = 2: layers 2, 4, ... are MoE).

    Returns
    -------
    count : int or array
        [-]. DeepSeek-V3: 58 of 61; Llama 4 Maverick: 24 of 48.

    References
    ----------
    .. [1] DeepSeek-V3 report, §4.2; meta-llama/llama-models, models/llama4/model.py
       (a layer is MoE iff (layer_id + 1) % interleave_moe_layer_step == 0).
    """
    L = v.integer("layers", layers)
    d = v.integer("moe_dense_layers", dense_layers, minimum=0)
    n = v.integer("moe_layer_step", layer_step)
    if np.any(d > L):
        raise v.InputError("moe_dense_layers", f"moe_dense_layers must be at most layers "
                                               f"({int(np.max(L))}), got {int(np.max(d))}")
    # multiples of n in (d, L]
    return v.result(L // n - d // n)


def attention_score_flops_per_token(layers: ArrayLike, seq_len: ArrayLike, heads: ArrayLike, qk_head_dim: ArrayLike,
                                    v_head_dim: ArrayLike) -> float | np.ndarray:
    r"""Training FLOPs of the attention scores and their product with V, per token.

    .. math:: C_{attn} = 6\, l\, s\, a\, (d_{qk} + d_v)

    (2 FLOPs per multiply-add, forward plus a backward of twice the forward, over the full
    s x s score matrix as Korthikanti et al. count it). For d_qk = d_v = d this is the
    12 l s d_q of :func:`llmcost.training.flops.flops_per_token`; MLA scores use
    d_qk = d_n + d_r.

    Parameters
    ----------
    layers, seq_len, heads, qk_head_dim, v_head_dim : int or array
        l, s, a, d_qk, d_v [-].

    Returns
    -------
    flops : float or array
        [FLOP per token].

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, Eq. 7; DeepSeek-V3 report §2.1.1.
    """
    L = v.integer("layers", layers)
    s = v.integer("seq_len", seq_len)
    a = v.integer("heads", heads)
    dqk = v.integer("qk_head_dim", qk_head_dim)
    dv = v.integer("v_head_dim", v_head_dim)
    return v.result(6.0 * L * s * a * (dqk + dv))
