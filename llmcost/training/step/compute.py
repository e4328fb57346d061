"""Compute time of a step: GEMM and attention efficiency, a layer's FLOPs, matmul and
memory-bound time, the logits, FP8 weight casts and the optimizer step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v
from ..attention import flash_attention_time_s, flash_fixed_elements_per_token, flash_score_elements_per_token
from ..flops import RECOMPUTE_MODES, matmul_params_per_layer
from ..layer_options import LayerOptions
from ..memory import OPTIMIZER_BYTES_PER_PARAM, layer_activation_bytes
from ..memory.activations import _dense_layer_bytes
from ..memory.experts import _moe_block_bytes
from ..precision import Shard, fp8_cast_bytes_per_layer, fp8_weight_cast_bytes, peak_tflops_by_part
from ..recompute import recompute_flops_per_token
from .calibration import DEFAULT_CALIBRATION, Calibration
from .resolve import _Resolved

if TYPE_CHECKING:
    from ..arch import ModelSpec
    from ..hardware import GPUSpec


def gemm_efficiency(m: ArrayLike, n: ArrayLike, k: ArrayLike, peak_tflops: ArrayLike, hbm_tb_per_s: ArrayLike,
                    calibration: Calibration = DEFAULT_CALIBRATION, operand_bytes: ArrayLike = 2.0,
                    output_bytes: ArrayLike = 2.0) -> float | np.ndarray:
    r"""Achieved share of dense peak for an (M x K) by (K x N) GEMM: a roofline in series.

    .. math::
        t = \frac{2MNK}{e_{max} F_{peak}} + k\,\frac{q_i (MK + KN) + q_o MN}{B_{HBM}}
        \quad\Rightarrow\quad
        e = \frac{2MNK}{F_{peak}\, t} = \left(\frac{1}{e_{max}}
            + \frac{k\, R}{I}\right)^{-1},\qquad
        I = \frac{2MNK}{q_i(MK + KN) + q_o MN},\quad R = \frac{F_{peak}}{B_{HBM}}

    A GEMM whose arithmetic intensity I is far above the GPU's ridge point R runs at
    e_max; a thin one (few tokens M per micro-batch, or a narrow shard N, K = h/t, f/t)
    pays for moving its operands. The forward, the data-gradient and the weight-gradient
    GEMMs of a linear layer permute M, N, K, so they share one intensity.

    Parameters
    ----------
    m : float or array
        M, rows: tokens per micro-batch on the GPU, b s / c [-].
    n, k : float or array
        N, K: the per-GPU output and reduction widths, e.g. h / t, f / t [-].
    peak_tflops : float or array
        Dense peak at the GEMM's precision [TFLOP/s].
    hbm_tb_per_s : float or array
        HBM bandwidth [TB/s].
    calibration : Calibration
        e_max (``matmul_efficiency``) and k (``gemm_traffic``).
    operand_bytes, output_bytes : float or array
        q_i, q_o: bytes per input and output element (2 for BF16; FP8 inputs: 1) [bytes].

    Returns
    -------
    efficiency : float or array
        [-] in (0, e_max).

    References
    ----------
    .. [1] Williams et al. 2009, "Roofline", CACM 52(4) (ridge point, arithmetic intensity).
    .. [2] NVIDIA, "Matrix Multiplication Background User's Guide" (Deep Learning
       Performance documentation): arithmetic intensity of a GEMM, 2MNK over the bytes of
       its three matrices.
    """
    M = v.positive("m", m)
    N = v.positive("n", n)
    K = v.positive("k", k)
    ridge = (v.positive("peak_tflops", peak_tflops) * 1e12
             / (v.positive("hbm_tb_per_s", hbm_tb_per_s) * 1e12))
    qi = v.positive("operand_bytes", operand_bytes)
    qo = v.positive("output_bytes", output_bytes)
    intensity = 2.0 * M * N * K / (qi * (M * K + K * N) + qo * M * N)
    return v.result(1.0 / (1.0 / calibration.matmul_efficiency
                           + calibration.gemm_traffic * ridge / intensity))


def matmul_efficiency(width: ArrayLike, peak_tflops: ArrayLike, hbm_tb_per_s: ArrayLike,
                      calibration: Calibration = DEFAULT_CALIBRATION,
                      rows: ArrayLike | None = None) -> float | np.ndarray:
    r"""Achieved share of dense peak for a BF16 GEMM of per-GPU width w and height M.

    :func:`gemm_efficiency` with N = K = w (a square shard) and M rows:

    .. math:: e(w, M) = \left(\frac{1}{e_{max}} + \frac{k\,R}{I}\right)^{-1},\qquad
              I = \frac{M w^2}{2 M w + w^2}

    (I = w/2 when M is unbounded.)

    Parameters
    ----------
    width : float or array
        Per-GPU GEMM width w, e.g. h / t [-].
    peak_tflops : float or array
        Dense peak [TFLOP/s].
    hbm_tb_per_s : float or array
        HBM bandwidth [TB/s].
    calibration : Calibration
    rows : float or array, optional
        Tokens per micro-batch on the GPU, M = b s / c [-]; None: no limit.

    Returns
    -------
    efficiency : float or array
        [-] in (0, e_max).

    References
    ----------
    .. [1] Williams et al. 2009 (roofline); constants fitted to Narayanan et al. 2021,
       Table 1.
    """
    w = v.positive("width", width)
    M = np.inf if rows is None else v.positive("rows", rows)
    if rows is None:
        ridge = v.positive("peak_tflops", peak_tflops) / v.positive("hbm_tb_per_s", hbm_tb_per_s)
        return v.result(1.0 / (1.0 / calibration.matmul_efficiency
                               + calibration.gemm_traffic * ridge / (w / 2.0)))
    return gemm_efficiency(M, w, w, peak_tflops, hbm_tb_per_s, calibration)


def attention_core_flops_per_token(seq_len: ArrayLike, q_dim: ArrayLike, causal: ArrayLike = True,
                                   recompute: ArrayLike = "none") -> float | np.ndarray:
    r"""Hardware FLOPs of the attention core (QK^T and AV) per token per layer, as fused
    (flash) attention executes them.

    .. math:: F_{attn} = 4\, s\, d_q\, \kappa\,(1 + 2.5 + \rho),\qquad
              \kappa = \tfrac12 \text{ causal, else } 1

    The forward does 4 s d_q per token (QK^T and AV, 2 s d_q each); a causal mask lets the
    kernel skip the upper triangle (kappa = 1/2); the backward recomputes the scores and
    does 2.5 times the forward's FLOPs (FlashAttention's own count); recomputation adds one
    more forward (rho = 1 with full or selective recomputation, else 0). The model-FLOPs
    convention of the tool counts 12 s d_q (full, non-causal attention, backward twice
    the forward): :func:`predict_step` credits that in MFU while the hardware time follows
    this count.

    Parameters
    ----------
    seq_len : int or array
        s [tokens].
    q_dim : int or array
        d_q = heads x head dim [-].
    causal : bool or array
        Causal mask skipped by the kernel.
    recompute : {"none", "selective", "full"} or array of these names

    Returns
    -------
    flops : float or array
        [FLOP per token per layer], before tensor-parallel sharding.

    References
    ----------
    .. [1] T. Dao, "FlashAttention-2", arXiv:2307.08691, §3.1 (causal masking skips about
       half the blocks), §4.1 (FLOP count; backward 2.5x the forward, as in the paper's
       benchmark script).
    """
    s = v.positive("seq_len", seq_len)
    d = v.positive("q_dim", q_dim)
    kappa = np.where(v.boolean("causal", causal), 0.5, 1.0)
    rec = v.choices("recompute", recompute, RECOMPUTE_MODES)
    rho = np.where(rec == "none", 0.0, 1.0)
    return v.result(4.0 * s * d * kappa * (3.5 + rho))


def _layer_gemm_elements(tokens: float | np.ndarray, h: float | np.ndarray, d_q: float | np.ndarray,
                         d_kv: float | np.ndarray, ffn: float | np.ndarray, gated: ArrayLike,
                         tp: float | np.ndarray) -> float | np.ndarray:
    # elements (M K + K N + M N) of one layer's forward GEMMs on one GPU: QKV, projection,
    # FC1 (gate and up when gated), FC2; the two backward GEMMs touch the same matrices
    n_qkv = d_q / tp + 2.0 * d_kv
    n_fc1 = np.where(gated, 2.0, 1.0) * ffn / tp
    k_fc2 = ffn / tp
    M = tokens
    return ((M * h + h * n_qkv + M * n_qkv) + (M * d_q / tp + d_q / tp * h + M * h)
            + (M * h + h * n_fc1 + M * n_fc1) + (M * k_fc2 + k_fc2 * h + M * h))


def _moe_layer_gemm_elements(model: ModelSpec, tokens: float | np.ndarray, tp: float | np.ndarray,
                             ep: float | np.ndarray, etp: float | np.ndarray,
                             imbalance: float | np.ndarray) -> float | np.ndarray:
    # one layer's forward GEMM elements on one GPU, the mean over dense and MoE layers:
    # attention projections (MLA: its five), then the dense FFN or the router, shared
    # experts and this rank's E/e experts, each a GEMM of M = e x (tokens/t) k x imbalance
    # / E rows (tokens are sequence-parallel shards inside the MoE block)
    assert model.head_dim is not None and model.v_head_dim is not None and model.kv_heads is not None
    assert model.ffn_hidden is not None  # (these four set in ModelSpec.__post_init__)
    h = model.hidden
    M = tokens
    if model.attention == "mla":
        a, dn, dr, dv = model.heads, model.head_dim, model.qk_rope_head_dim, model.v_head_dim
        rq, rkv = model.q_lora_rank, model.kv_lora_rank
        q = (np.where(rq > 0, (M * h + h * rq + M * rq)
                      + (M * rq + rq * a * (dn + dr) / tp + M * a * (dn + dr) / tp),
                      M * h + h * a * (dn + dr) / tp + M * a * (dn + dr) / tp))
        kv = (M * h + h * (rkv + dr) + M * (rkv + dr)) + (
            M * rkv + rkv * a * (dn + dv) / tp + M * a * (dn + dv) / tp)
        attn = q + kv + (M * a * dv / tp + a * dv / tp * h + M * h)
    else:
        d_q = model.heads * model.head_dim
        n_qkv = d_q / tp + 2.0 * model.kv_heads * model.head_dim / np.minimum(tp, model.kv_heads)
        attn = (M * h + h * n_qkv + M * n_qkv) + (M * d_q / tp + d_q / tp * h + M * h)
    kg1 = 2.0 if model.gated_ffn else 1.0

    def ffn(rows: float | np.ndarray, width: float | np.ndarray) -> float | np.ndarray:
        return (rows * h + h * kg1 * width + rows * kg1 * width) + \
            (rows * width + width * h + rows * h)

    dense = ffn(M, model.ffn_hidden / tp)
    if not model.is_moe:
        return attn + dense
    assert model.moe_ffn_hidden is not None  # set in ModelSpec.__post_init__ for an MoE model
    E, k = model.moe_experts, model.moe_top_k
    Mt = M / tp
    rows = ep * Mt * k * imbalance / E
    routed = E / ep * ffn(rows, model.moe_ffn_hidden / etp)
    router = Mt * h + h * E + Mt * E
    shared = np.where(model.moe_shared_ffn_hidden > 0,
                      ffn(M, max(model.moe_shared_ffn_hidden, 1) / tp), 0.0)
    share = model.moe_layers / model.layers
    return attn + (1.0 - share) * dense + share * (router + routed + shared)


def optimizer_step_s(states_bytes: float | np.ndarray, hbm_bytes_per_s: float | np.ndarray,
                     weight_cast_s: float | np.ndarray = 0.0,
                     casts_per_step: float | np.ndarray = 1) -> float | np.ndarray:
    r"""Optimizer step: every model state read and written once at HBM speed, plus FP8 weight
    casts.

    .. math:: t_{opt} = \frac{2\, S}{B_{HBM}} + n_{cast}\, t_{cast}

    Parameters
    ----------
    states_bytes : float or array
        S, weights + gradients + optimizer states on the GPU [bytes].
    hbm_bytes_per_s : float
        B_HBM [bytes/s].
    weight_cast_s : float or array
        t_cast, quantizing the stage's weights once (0 for BF16) [s].
    casts_per_step : int or array
        n_cast: 1, or m under ZeRO-3, which gathers (and casts) the weights every
        micro-batch [-].

    Returns
    -------
    time_s : float or array
        [s] per step.

    References
    ----------
    .. [1] Williams et al. 2009, "Roofline", CACM 52(4) (memory-bound time = bytes /
       bandwidth).
    """
    return 2.0 * states_bytes / hbm_bytes_per_s + casts_per_step * weight_cast_s


class _LayerFlops(NamedTuple):
    # FLOPs per token of one layer (mean over dense and MoE layers) and what derives them
    attn: float          # model FLOPs of the attention core, 12 s d_q [FLOP/token]
    p_mm: float          # linear-layer parameters the busiest rank multiplies [-]
    d_q: float           # query width for FlashAttention's count [-]
    d_bar: float         # mean head dim of scores and values [-]
    scores: float        # score elements per token (causal, windows in tiles) [-]
    share: float         # MoE layers over all layers [-]
    layer_model: float   # model FLOPs per token (MFU) [FLOP/token]
    layer_hw: np.ndarray  # hardware FLOPs per token (HFU) [FLOP/token]
    rc_mods: tuple       # modules recomputed by name besides the attention core
    on_rc: np.ndarray    # layouts that recompute them (not under full recomputation)


def _layer_flops(model: ModelSpec, s: int, rec: np.ndarray, rec_attn: np.ndarray, mods: tuple[str, ...],
                 imb: float) -> _LayerFlops:
    # the model-FLOPs convention: 6 P_mm + 12 s d_q per token; HFU adds what recomputation
    # runs again
    assert model.head_dim is not None and model.v_head_dim is not None and model.kv_heads is not None
    assert model.ffn_hidden is not None  # (these four set in ModelSpec.__post_init__)
    h, L = model.hidden, model.layers
    p_mm = matmul_params_per_layer(h, model.heads, model.kv_heads, model.ffn_hidden,
                                   model.gated_ffn, model.head_dim)
    d_q: float = model.heads * model.head_dim
    attn = 12.0 * s * d_q
    share = 0.0
    if not model._simple:
        # MLA scores with d_qk = d_n + d_r and values d_v; sliding windows score fewer keys;
        # MoE layers meet k of E experts (the busiest rank does imbalance x the mean)
        attn = 6.0 * s * model.heads * (model.qk_head_dim + model.v_head_dim)
        if model.attention_window and model.window_layers:
            attn = attn * (1.0 - model.window_layers / L
                           * (1.0 - min(model.attention_window, s) / s))
        d_q = attn / (12.0 * s)     # the equivalent width for FlashAttention's count
        d_bar = (model.qk_head_dim + model.v_head_dim) / 2.0
        win = model.attention_window if model.window_layers else 0
        scores = flash_score_elements_per_token(s, model.heads, win,
                                                model.window_layers / L)
        p_model: float | np.ndarray = model.active_matmul_params_per_layer
        share = model.moe_layers / L
        kg = 3.0 if model.gated_ffn else 2.0
        routed = kg * h * (model.moe_ffn_hidden or 0) * model.moe_top_k
        p_mm = p_model + share * (imb - 1.0) * routed
    else:
        p_model = p_mm
        d_bar = model.head_dim
        scores = flash_score_elements_per_token(s, model.heads)
    layer_model = 6.0 * p_model + attn
    # named modules' second forward (GEMMs; the attention core goes with rec_attn)
    rc_mods = tuple(x for x in mods if x != "core_attn")
    on_rc = (rec != "full") & bool(rc_mods)
    layer_hw = np.where(rec == "full", layer_model * 4.0 / 3.0,
                        layer_model + np.where(rec_attn == "selective", attn, 0.0)
                        + np.where(on_rc, recompute_flops_per_token(model, rc_mods, s), 0.0))
    # one model, scalar inputs: p_mm and scores are numpy scalars, the float fields
    return _LayerFlops(attn, p_mm, d_q, d_bar, scores, share, layer_model, layer_hw,  # type: ignore[arg-type]
                       rc_mods, on_rc)


def _layer_matmul_s(model: ModelSpec, gpu: GPUSpec, R: _Resolved, F: _LayerFlops, tokens: float | np.ndarray,
                    rec_f: float | np.ndarray, penalty: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Matmul time of one layer and one micro-batch on one GPU: linear GEMMs and the
    attention core.

    .. math:: t_{mm} = \frac{F_{gemm}}{e_{max} F_{peak}} + k\,\frac{6\,V_{gemm}}{B_{HBM}}
              + t_{attn}

    A roofline in series per GEMM (:func:`gemm_efficiency`) summed over QKV, projection,
    FC1, FC2 (MoE: router, shared and this rank's experts, each of M = e tokens k iota / E
    rows) and their three passes, F_gemm = 6 P_mm M / t (x 4/3 with full recomputation).
    Fused attention: the causal scores at ``attention_efficiency``, each pass bounded by
    its matmuls or its softmax exponentials
    (:func:`~llmcost.training.attention.flash_attention_time_s`); unfused: 12 s d_q full
    attention GEMMs at e_max. FP8 and MXFP8 move the linear GEMMs to the FP8 peak with
    1-byte operands (MXFP8 at ``mxfp8_gemm_efficiency`` of it); attention stays BF16.
    Modules recomputed by name add F_rc / (6 P_mm) of the linear time
    (:func:`llmcost.training.recompute.recompute_flops_per_token`). With TP overlap the GEMMs
    slow by ``tp_overlap_gemm_penalty``.

    Parameters
    ----------
    model : ModelSpec
    gpu : GPUSpec
    R : _Resolved
        The checked layout (arrays broadcast over it), options, constants and memory.
    F : _LayerFlops
        The layer's FLOPs per token (:func:`_layer_flops`).
    tokens : float or array
        M = b s / c, tokens per micro-batch on the GPU [-].
    rec_f : float or array
        rho, 4/3 with full recomputation, else 1 [-].
    penalty : float or array
        1 - ``tp_overlap_gemm_penalty`` with TP overlap on, else 1 [-].

    Returns
    -------
    t_mm, t_attn : float or array
        Matmul time, and its attention-core part [s] per layer per micro-batch.

    References
    ----------
    .. [1] Williams et al. 2009 (roofline); Dao 2023, arXiv:2307.08691 (FlashAttention-2).
    .. [2] NVIDIA Transformer Engine documentation, "Low precision training"; Micikevicius
       et al. 2022, arXiv:2209.05433, §4.
    """
    assert model.kv_heads is not None and model.head_dim is not None and model.ffn_hidden is not None
    cal, tp, h, peak, hbm = R.cal, R.tp, model.hidden, R.peak, R.hbm
    gemm_flops = 6.0 * F.p_mm * rec_f * tokens / tp
    if model._simple:
        gemm_elems = rec_f * _layer_gemm_elements(
            tokens, h, F.d_q, model.kv_heads * model.head_dim / np.minimum(tp, model.kv_heads),
            model.ffn_hidden, model.gated_ffn, tp)
    else:
        gemm_elems = rec_f * _moe_layer_gemm_elements(model, tokens, tp, R.ep, R.etp, R.imb)
    t_lin = (gemm_flops / (peak * cal.matmul_efficiency)
             + cal.gemm_traffic * 6.0 * gemm_elems / hbm) / penalty
    if R.flash.any():
        windowed = not model._simple and bool(model.attention_window and model.window_layers)
        fixed = flash_fixed_elements_per_token(
            model.heads, model.attention_window if windowed else 0,
            model.window_layers / model.layers if windowed else 0.0,
            overhead_tiles=cal.attention_tile_overhead)
        t_flash = flash_attention_time_s(F.scores * tokens / tp, F.d_bar, peak, gpu.exp_per_s,
                                         cal.attention_efficiency, R.rec_attn,
                                         fixed_elements=fixed * tokens / tp) / penalty
    else:
        t_flash = 0.0
    # unfused attention (Megatron 2021): batched GEMMs over the full s x s scores, at e_max;
    # their softmax and score traffic is in the memory-bound term (activations)
    t_unfused = (F.attn * rec_f + np.where(R.rec_attn == "selective", F.attn, 0.0)) \
        * tokens / tp / (peak * cal.matmul_efficiency * penalty)
    t_attn = np.where(R.flash, t_flash, t_unfused)
    t_mm = t_lin + t_attn
    if R.fp8:
        # BF16 layouts keep their exact figures
        pk = peak_tflops_by_part(gpu, R.prec)
        e8 = cal.matmul_efficiency * np.where(R.prec == "mxfp8", cal.mxfp8_gemm_efficiency, 1.0)
        t_lin8 = (gemm_flops / (pk.gemm_tflops * 1e12 * e8)
                  + cal.gemm_traffic * 4.0 * gemm_elems / hbm) / penalty
        t_mm = np.where(R.prec != "bf16", t_lin8 + t_attn, t_mm)
    if F.rc_mods:
        f_rc = recompute_flops_per_token(model, F.rc_mods, R.s, R.imb if model.is_moe else 1.0)
        t_mm = t_mm + np.where(F.on_rc, f_rc / (6.0 * F.p_mm), 0.0) * (t_mm - t_attn)
    return t_mm, t_attn


def _layer_memory_bound_s(model: ModelSpec, gpu: GPUSpec, R: _Resolved, F: _LayerFlops, tokens: float | np.ndarray,
                          rec_f: float | np.ndarray) -> float | np.ndarray:
    r"""Memory-bound and fixed time of one layer and one micro-batch on one GPU.

    .. math:: t_{elem} = \gamma\,\frac{A_{layer}}{B_{HBM}}\,\rho
              + \rho\,(\sigma\, t_{moe} + t_{host}) + \frac{V_{cast}}{B_{HBM}},
              \qquad \rho = \tfrac43 \text{ full recomputation, else } 1

    Norms, softmax, dropout and activations move gamma bytes per byte of the layer's
    stored activations A (:func:`llmcost.training.memory.activation_bytes_per_layer`; MoE:
    the busiest rank's expert block); each MoE layer pays the dispatcher's host round trip
    t_moe (``moe_layer_overhead_s``) unless ``cuda_graphs`` is "full"; every layer the
    stack's host time t_host (``layer_host_overhead_s``, 0 for megatron); FP8 adds its
    quantization bytes V_cast (:func:`llmcost.training.precision.fp8_cast_bytes_per_layer`,
    physical bytes, not scaled by gamma). A module recomputed by name moves gamma / 3
    bytes per BF16 byte it frees (one forward of the three passes).

    Parameters
    ----------
    model : ModelSpec
    gpu : GPUSpec
    R : _Resolved
        The checked layout (arrays broadcast over it), options, constants and memory.
    F : _LayerFlops
        The layer's FLOPs per token (:func:`_layer_flops`).
    tokens : float or array
        M = b s / c, tokens per micro-batch on the GPU [-].
    rec_f : float or array
        rho, 4/3 with full recomputation, else 1 [-].

    Returns
    -------
    t_elem : float or array
        [s] per layer per micro-batch.

    References
    ----------
    .. [1] Williams et al. 2009 (roofline); Korthikanti et al. 2022, arXiv:2205.05198, §4
       (activation bytes per layer).
    """
    cal, opt, s, b, tp, cp, hbm = R.cal, R.opt, R.s, R.b, R.tp, R.cp, R.hbm
    moe_on = model.is_moe
    # the resolved sizes are checked: the block formulas, not their checking entry points
    shard = Shard(s, b, tp, cp)
    act = _dense_layer_bytes(model, shard, LayerOptions(flash_attention=R.flash, sequence_parallel=R.sp))
    assert model.ffn_hidden is not None  # set in ModelSpec.__post_init__
    if moe_on:
        assert model.moe_ffn_hidden is not None  # set in ModelSpec.__post_init__ for an MoE model
        dense_inner = tokens * (6.0 if model.gated_ffn else 4.0) * model.ffn_hidden / tp
        moe_block = _moe_block_bytes(model, shard, R.etp, LayerOptions(moe_capacity_factor=R.imb))
        act = act + F.share * (moe_block - dense_inner)
    t_elem = cal.elementwise_traffic * act * rec_f / hbm
    host = 0.0 if R.graphs == "full" else 1.0
    if moe_on:
        t_elem = t_elem + F.share * cal.moe_layer_overhead_s * host * rec_f
    t_elem = t_elem + cal.layer_host_overhead_s * rec_f
    if R.fp8:
        t_elem = t_elem + fp8_cast_bytes_per_layer(
            model, s, b, tp, cp, LayerOptions(R.rec, sequence_parallel=R.sp, precision=R.prec),
            gpu.generation, opt.fp8_scaling) / hbm
    if F.rc_mods:
        imb = R.imb if moe_on else 1.0
        kept = [layer_activation_bytes(model, s, b, tp, cp, R.etp, LayerOptions(
            "none", x, R.flash, R.sp, moe_capacity_factor=imb)) for x in ((), F.rc_mods)]
        t_elem = t_elem + np.where(F.on_rc, cal.elementwise_traffic / 3.0 * (kept[0] - kept[1])
                                   / hbm, 0.0)
        if moe_on and "moe" in F.rc_mods:
            t_elem = t_elem + np.where(F.on_rc, F.share * cal.moe_layer_overhead_s * host / 3.0,
                                       0.0)
    return t_elem


def logits_s(tokens: float | np.ndarray, hidden: float | np.ndarray, vocab: float | np.ndarray,
             tp: float | np.ndarray, peak_flops: float | np.ndarray, hbm_bytes_per_s: float | np.ndarray,
             calibration: Calibration = DEFAULT_CALIBRATION) -> float | np.ndarray:
    r"""LM head of one micro-batch on the last pipeline stage: its GEMM and its softmax.

    .. math:: t_{logits} = \frac{6 V h M / t}{e_{max} F_{peak}}
              + k\,\frac{6 (M h + h V / t + M V / t)}{B_{HBM}}
              + \gamma\,\frac{4 M V / t}{B_{HBM}}

    Parameters
    ----------
    tokens : float or array
        M, tokens per micro-batch on the GPU [-].
    hidden, vocab : int
        h, V [-].
    tp : int or array
        t [-].
    peak_flops : float
        Dense BF16 peak [FLOP/s].
    hbm_bytes_per_s : float
        [bytes/s].
    calibration : Calibration

    Returns
    -------
    time_s : float or array
        [s] per micro-batch.

    References
    ----------
    .. [1] Williams et al. 2009 (roofline); Narayanan et al. 2021, arXiv:2104.04473, §3.2
       (logit FLOPs 6 B s V h per step).
    """
    cal, h, V = calibration, hidden, vocab
    logit_elems = tokens * h + h * V / tp + tokens * V / tp
    return 6.0 * V * h * tokens / tp / (peak_flops * cal.matmul_efficiency) + \
        cal.gemm_traffic * 6.0 * logit_elems / hbm_bytes_per_s + \
        cal.elementwise_traffic * 4.0 * tokens * V / tp / hbm_bytes_per_s


def _fp8_weight_cast_s(model: ModelSpec, gpu: GPUSpec, R: _Resolved, F: _LayerFlops, n_slow: float | np.ndarray,
                       optimizer: str) -> float | np.ndarray:
    # the pacing stage's weights quantized once (FP8 master copies are cast per step)
    w_bytes = OPTIMIZER_BYTES_PER_PARAM[optimizer][0]
    w_local = n_slow * F.p_mm / R.tp if not model.is_moe else n_slow * (
        (model.layer_params - model.expert_layer_params) / R.tp
        + model.expert_layer_params / (R.ep * R.etp))
    return fp8_weight_cast_bytes(w_local, R.prec, gpu.generation, R.opt.fp8_scaling,
                                 w_bytes) / R.hbm
