"""Fused (flash) attention on one GPU: the score elements its kernels compute and the time
they take when the softmax exponentials, not only the matmuls, bound them.

A fused attention kernel computes, per attention score element, 4 d FLOPs of matmul in the
forward (QK^T and PV, d the head dim) and one exponential (softmax, the MUFU.EX2 instruction
of the special function units); the backward recomputes the scores and their exponentials
(one more) and runs 2.5 times the forward's matmul FLOPs (FlashAttention's count). The
exponentials run on units far slower than the tensor cores: H100 SXM5 has 989 TFLOP/s of
BF16 matmul but 3.9 T exponentials/s (Shah et al. 2024 §3.1), 253 FLOPs per exponential, so
at head dim 64 (256 forward FLOPs per exponential) the forward is as bound by the
exponentials as by the matmuls; Blackwell (B200, GB200) doubled the tensor cores but not the
exponential units (~480 FLOPs per exponential); Blackwell Ultra (B300, GB300) doubled the
exponential units again (NVIDIA 2026).

References
----------
1. T. Dao, "FlashAttention-2", arXiv:2307.08691, §3.1 (causal masking skips the blocks
   above the diagonal), §4.1 (backward 2.5x the forward's FLOPs).
2. J. Shah et al., "FlashAttention-3", arXiv:2407.08608, §3.1 (H100 SXM5: 989 TFLOPS of
   FP16 matmul, 3.9 TFLOPS of special functions; exponentials limit small head dims), §3.2
   (softmax overlapped with the matmuls: the slower of the two sets the pace).
3. NVIDIA, "Making Softmax More Efficient with NVIDIA Blackwell Ultra", NVIDIA Technical
   Blog, 2026 (Blackwell Ultra doubles MUFU.EX2 throughput over Blackwell).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v
from .flops import RECOMPUTE_MODES

#: key-block width of FlashAttention-2/3 and cuDNN fused attention [tokens]: a sliding
#: window is computed in whole tiles of this many keys (assumption: 128, the kernels' usual
#: block size for head dims 64-128).
ATTENTION_TILE = 128


def flash_score_elements_per_token(seq_len: ArrayLike, heads: ArrayLike, window: ArrayLike = 0,
                                   window_share: ArrayLike = 0.0,
                                   tile: ArrayLike = ATTENTION_TILE) -> float | np.ndarray:
    r"""Attention score elements a causal fused-attention kernel computes per token per layer.

    .. math:: n = a\,\bigl[(1 - \phi)\,\tfrac{s}{2} + \phi\,\min(k_w, \tfrac{s}{2})\bigr],
              \qquad k_w = T \left\lceil \frac{w + T - 1}{T} \right\rceil

    Causal full attention computes half the s x s scores (s/2 keys per query). A sliding
    window of w keys, on a share phi of the layers, is computed in whole tiles of T keys: a
    block of T queries needs keys from T - 1 + w positions, ceil((w + T - 1)/T) tiles (the
    masked elements are computed and then discarded). gpt-oss (w = 128, T = 128): 256 keys
    per query, four times the w/2 = 64 of a per-element count; never more than causal full
    attention.

    Parameters
    ----------
    seq_len : int or array
        s [tokens].
    heads : int or array
        a, query heads [-].
    window : int or array
        w, sliding window [tokens]; 0: no window.
    window_share : float or array
        phi, share of the layers that use the window [-], in [0, 1].
    tile : int
        T, key-block width [tokens].

    Returns
    -------
    elements : float or array
        [score elements per token per layer], before tensor-parallel sharding.

    References
    ----------
    .. [1] Dao 2023, arXiv:2307.08691, §3.1 (block-wise causal masking).
    """
    s = v.positive("seq_len", seq_len)
    a = v.positive("heads", heads)
    w = v.integer("attention_window", window, minimum=0)
    phi = v.in_range("window_share", window_share, 0, 1)
    t = v.integer("tile", tile)
    keys_w = np.minimum(t * np.ceil((w + t - 1) / t), s / 2.0)
    keys = np.where(w > 0, (1.0 - phi) * s / 2.0 + phi * keys_w, s / 2.0)
    return v.result(a * keys)


def flash_fixed_elements_per_token(heads: ArrayLike, window: ArrayLike = 0, window_share: ArrayLike = 0.0,
                                   tile: ArrayLike = ATTENTION_TILE,
                                   overhead_tiles: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Score elements' worth of matmul time a fused-attention kernel spends per query that
    no score element pays for: the fixed work of each query tile and the causal diagonal.

    .. math:: n_0 = a\,\bigl[c\,T + (1 - \phi)\,\tfrac{T}{2}\bigr]

    Each block of T queries loads its Q tile, fills the pipeline and writes its output and
    log-sum-exp once, whatever the keys it meets: c tiles of keys' worth of time (the
    backward's key blocks, which loop over queries, pay the same). A causal layer also
    computes the whole diagonal tile of which :func:`flash_score_elements_per_token` counts
    half: T/2 keys per query (a windowed layer's tiles are counted whole already). With
    n = a s/2 causal score elements per token the kernel's efficiency falls as

    .. math:: \frac{n}{n + n_0} = \frac{s}{s + (2c + 1)\,T}

    half its plateau at s = (2c + 1) T; with c = 0.9 (FlashAttention-2, fitted to its
    published throughput against sequence length, Shah et al. 2024 Fig. 5) 0.85 at 2k
    tokens, 0.96 at 8k, 0.99 at 64k.

    Parameters
    ----------
    heads, window, window_share, tile
        a, w, phi, T as in :func:`flash_score_elements_per_token` (T the query block too).
    overhead_tiles : float or array
        c, fixed work per query tile in tiles of keys [-].

    Returns
    -------
    fixed : float or array
        n_0 per token and layer [score elements' worth], to be sharded over TP as the
        scores are.

    References
    ----------
    .. [1] Dao 2023, arXiv:2307.08691, §3.1 (block-wise causal masking: the diagonal blocks
       are computed whole), Algorithm 1 (per query block: load Q_i, write O_i and L_i once).
    .. [2] Shah et al. 2024, arXiv:2407.08608, Fig. 5 (forward TFLOP/s against sequence
       length at a fixed number of tokens).
    """
    a = v.positive("heads", heads)
    w = v.integer("attention_window", window, minimum=0)
    phi = np.where(w > 0, v.in_range("window_share", window_share, 0, 1), 0.0)
    t = v.integer("tile", tile)
    c = v.nonnegative("overhead_tiles", overhead_tiles)
    return v.result(a * (c * t + (1.0 - phi) * t / 2.0))


def flash_attention_time_s(score_elements: ArrayLike, head_dim: ArrayLike, peak_flops: ArrayLike,
                           exp_per_s: ArrayLike | None, efficiency: ArrayLike, recompute: ArrayLike = "none",
                           exp_efficiency: ArrayLike | None = None,
                           fixed_elements: ArrayLike = 0.0) -> float | np.ndarray:
    r"""Time of fused attention's forward and backward for given score elements.

    .. math::
        t = (1 + \rho)\max\Bigl(\frac{4 \bar d\,(n + n_0)}{e P}, \frac{n}{e_x X}\Bigr)
          + \max\Bigl(\frac{2.5 \cdot 4 \bar d\,(n + n_0)}{e P}, \frac{n}{e_x X}\Bigr)

    with n score elements, n_0 the elements' worth of fixed work per query tile
    (:func:`flash_fixed_elements_per_token`; 0: none), d-bar the mean of the query-key and
    value head dims, P the dense BF16 peak, X the exponentials per second of the special function units, e the
    attention efficiency of the matmuls and e_x that of the exponentials (assumption: the
    same, e_x = e). Each pass runs its matmuls and its exponentials overlapped, as
    FlashAttention-3 schedules them (ping-pong warpgroups, softmax of one block under the
    matmuls of the next), so the slower sets the pass's time; the forward (1 exponential per
    4 d-bar FLOPs) meets the exponential bound first, the backward (1 per 10 d-bar) later.
    rho = 1 adds the forward once more under full or selective recomputation. Without an
    exponential rate (X = 0 or None) the matmul term alone: FlashAttention's FLOP count at
    efficiency e, 4 d-bar (n + n_0) (3.5 + rho) / (e P). e is the plateau a long sequence
    reaches; n_0 is what lowers it for short ones.

    Parameters
    ----------
    score_elements : float or array
        n, score elements [-] (:func:`flash_score_elements_per_token` x tokens).
    head_dim : float or array
        d-bar [-].
    peak_flops : float or array
        P [FLOP/s].
    exp_per_s : float, array or None
        X [1/s]; None or 0: no exponential bound.
    efficiency : float or array
        e [-].
    recompute : {"none", "selective", "full"} or array of these names
    exp_efficiency : float, optional
        e_x [-]; default e.
    fixed_elements : float or array
        n_0 [-], same units as n.

    Returns
    -------
    time : float or array
        [s].

    References
    ----------
    .. [1] Shah et al. 2024, arXiv:2407.08608, §3.1-3.2; Dao 2023, arXiv:2307.08691, §4.1.
    """
    n = v.nonnegative("score_elements", score_elements)
    d = v.positive("head_dim", head_dim)
    p = v.positive("peak_flops", peak_flops)
    e = v.in_range("attention_efficiency", efficiency, 0, 1, low_inclusive=False)
    rec = v.choices("recompute", recompute, RECOMPUTE_MODES)
    rho = np.where(rec == "none", 0.0, 1.0)
    t_fwd_mm = 4.0 * d * (n + v.nonnegative("fixed_elements", fixed_elements)) / (e * p)
    if not exp_per_s:
        return v.result((3.5 + rho) * t_fwd_mm)
    ex = v.in_range("exp_efficiency", e if exp_efficiency is None else exp_efficiency, 0, 1,
                  low_inclusive=False)
    t_exp = n / (ex * v.positive("exp_per_s", exp_per_s))
    return v.result((1.0 + rho) * np.maximum(t_fwd_mm, t_exp)
                    + np.maximum(2.5 * t_fwd_mm, t_exp))
