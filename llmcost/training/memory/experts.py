"""Mixture-of-experts terms: an MoE FFN's stored activations and the expert-parallel layout
it needs.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v
from ..arch import ModelSpec
from ..layer_options import LayerOptions, _unpack
from ..precision import Shard, _check_shard
from .activations import _DEFAULT_OPTIONS, _model_modules


def check_expert_layout(model: ModelSpec, gpus: ArrayLike, tp: ArrayLike, pp: ArrayLike, cp: ArrayLike,
                        ep: ArrayLike = 1, etp: ArrayLike = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate expert parallelism; raise InputError naming the parameter at fault.

    Megatron-Core folds the expert-parallel group into the data-parallel x tensor x context
    ranks of a pipeline stage: e x t_e must divide gpus / p, and e the routed experts.

    Parameters
    ----------
    model : ModelSpec
    gpus, tp, pp, cp : int or array
        Layout [-] (see :func:`check_layout`).
    ep, etp : int or array
        Expert-parallel size e and expert tensor-parallel size t_e [-]; both 1 for a dense
        model.

    Returns
    -------
    ep, etp, edp : int arrays
        Validated sizes and the expert data-parallel size gpus / (p e t_e) [-].

    References
    ----------
    .. [1] Megatron-Core documentation, "Mixture of Experts" (parallel folding: EP and ETP
       over the DP x TP x CP ranks of a pipeline stage); Narayanan et al. 2021 §2.
    """
    e = v.integer("ep", ep)
    te = v.integer("etp", etp)
    if not model.is_moe:
        if np.any(e > 1) or np.any(te > 1):
            raise v.InputError("ep" if np.any(e > 1) else "etp",
                               f"expert parallelism needs a mixture-of-experts model; "
                               f"{model.id} is dense: use ep=1 and etp=1")
        return e, te, np.asarray(gpus) // np.asarray(pp)
    v.divides("ep", e, "moe_experts", model.moe_experts)
    v.divides("etp", te, "moe_ffn_hidden", model.moe_ffn_hidden)
    v.multiple_of("gpus", gpus, "pp x ep x etp", np.asarray(pp) * e * te)
    return e, te, np.asarray(gpus) // (np.asarray(pp) * e * te)


def moe_ffn_activation_bytes(model: ModelSpec, seq_len: ArrayLike | None = None, micro_batch: ArrayLike = 1,
                             tp: ArrayLike = 1, cp: ArrayLike = 1, etp: ArrayLike = 1,
                             options: LayerOptions = _DEFAULT_OPTIONS) -> float | np.ndarray:
    r"""Activation memory of one MoE feed-forward block per GPU (what replaces a dense FFN's
    inner activations).

    The block runs on the sequence-parallel shard of s b / (c t) tokens. Per token: the
    router's probabilities (FP32, 4E), and for each of its k expert copies the dispatched
    input (2h), the expert's inner activations (F_e / t_e: fc1 output and activation output,
    6 f_e gated, 4 f_e plain) and the expert output before the weighted combine (2h); the
    most loaded rank receives c_f times the mean. A shared expert keeps F_s / t over the
    TP-gathered tokens:

    .. math::
        M = \frac{s b}{c\,t}\left(4E + k c_f \left(4h + \frac{F_e}{t_e}\right)\right)
            + \frac{s b}{c} \frac{F_s}{t}

    Tensor by tensor, with q bytes per cached linear-input element (2 BF16, 1 FP8): per
    expert copy the fc1 input q h (the dispatched token; DeepSeek-V3 dispatches it in FP8
    already), the fc1 output (2 k_g' f_e / t_e, k_g' = 2 gated, 1 plain, BF16: the
    activation's input), the fc2 input q f_e / t_e (the activation's output), and the expert
    output 2h if the combine applies the router's probabilities (``probs_at="combine"``; it
    keeps the outputs for their gradient), or instead the copy's FP32 probability, 4 bytes,
    if the activation applies them (``probs_at="activation"``: Megatron-Core's grouped MLP
    from [2]'s commit 2659630 on, whose unpermute then keeps nothing). The shared experts keep
    (2 k_g' f_s + q f_s) / t. The router keeps its own BF16 input, so with q < 2 the FFN
    input (the pre-FFN norm output, counted as q h / t^[SP] in the dense FFN's part) is kept
    twice: 2h for the router and q h for the shared experts' fc1 (2h alone without shared
    experts, or when they or the whole block are recomputed, whose checkpoint keeps the BF16
    input): this function adds that difference.

    Recomputed modules free: "moe_act" the fc2 inputs (q f_e / t_e per copy; Megatron keeps
    no quantized copy, ``set_save_original_input``); "shared_experts" the shared experts'
    inner tensors; "moe" everything of the block (a normal checkpoint that keeps only its
    input); "layernorm" the router's copy of the norm output.

    Parameters
    ----------
    model : ModelSpec
        A mixture-of-experts model: h, E (``moe_experts``), k (``moe_top_k``), f_e
        (``moe_ffn_hidden``), f_s (``moe_shared_ffn_hidden``) and the FFN's gating.
    seq_len : int or array, optional
        s [tokens]; default the model's.
    micro_batch : int or array
        b [sequences].
    tp, cp, etp : int or array
        t, c, t_e [-].
    options : LayerOptions
        ``moe_capacity_factor`` c_f >= 1 (tokens the busiest expert rank holds over the
        mean [-]); ``recompute_modules`` ("layernorm", "moe_act", "shared_experts", "moe" act
        here); ``linear_input_bytes`` q [bytes] (:func:`activation_bytes_per_layer`);
        ``moe_probs_at``, where the router's probabilities scale the experts' work;
        ``sequence_parallel``, whether the norm output the router keeps is sharded over t
        (as the routed tokens are).

    Returns
    -------
    bytes : float or array
        [bytes] per layer per micro-batch.

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, §4.1 (the per-tensor accounting, 2
       bytes per 16-bit element); Megatron-Core MoE token dispatcher (permute, expert
       compute, unpermute); W. Fedus et al., "Switch Transformers", arXiv:2101.03961, §2.2
       (capacity factor).
    .. [2] Megatron-LM commit 2659630 (2025-04-09, "perf(MoE): Memory efficient token
       permutation"): the probabilities move into the experts' activation
       (``activation_func_with_probs``), the unpermute takes none; at commit d98e8a6,
       megatron/core/transformer/moe/experts.py ("moe_act" recompute,
       ``set_save_original_input``), moe_layer.py ("shared_experts", "moe"), router.py
       (``router_gating_linear`` keeps its input).
    .. [3] DeepSeek-AI, arXiv:2412.19437, §3.3.3 (FP8 dispatch of the up-projection input).
    """
    if not model.is_moe:
        raise v.InputError("model", f"moe_ffn_activation_bytes needs a mixture-of-experts "
                                    f"model; {model.id} is dense: use activation_bytes_per_layer")
    _model_modules(model, options)
    shard = _check_shard(model, seq_len, micro_batch, tp, cp)
    return v.result(_moe_block_bytes(model, shard, v.integer("etp", etp), options))


def _moe_block_bytes(model: ModelSpec, shard: Shard, te: float | np.ndarray,
                     options: LayerOptions) -> float | np.ndarray:
    """:func:`moe_ffn_activation_bytes` of checked sizes."""
    s, b, t, c = shard
    _, mods, _, _, lin = _unpack(options)
    cf = np.asarray(options.moe_capacity_factor)
    h, E, k, fe, fs = (model.hidden, model.moe_experts, model.moe_top_k, model.moe_ffn_hidden,
                       model.moe_shared_ffn_hidden)
    assert fe is not None  # set in ModelSpec.__post_init__ for an MoE model
    sp_div = np.where(options.sequence_parallel, t, 1)
    act_in = np.where(model.gated_ffn, 4.0, 2.0)
    tokens = s * b / c
    whole = "moe" in mods
    combine = 2.0 * h if options.moe_probs_at == "combine" else 4.0
    copy = lin * h + (act_in * fe + lin * fe * ("moe_act" not in mods)) / te + combine
    routed = 0.0 if whole else tokens / t * (4.0 * E + k * cf * copy)
    shared_kept = not whole and "shared_experts" not in mods
    shared = tokens * (act_in + lin) * fs / t * shared_kept
    # the FFN input beyond the dense FFN's q h: the router's BF16 copy (with q < 2)
    fc1_copy = np.where(fs > 0, lin * h, 0.0) * shared_kept
    router = np.where(lin < 2.0, 2.0 * h + fc1_copy - lin * h, 0.0) * ("layernorm" not in mods)
    return routed + shared + tokens * router / sp_div
