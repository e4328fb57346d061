"""Stored activations of a dense transformer layer (Korthikanti et al., generalised): GQA and
MLA attention, gated FFNs, per-operator checkpointing, cached linear inputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v
from ..layer_options import LayerOptions, _unpack
from ..precision import PRECISIONS, Shard, _check_shard, _saved_input_bytes
from ..recompute import check_recompute_modules
from .options import ACTIVATION_PRECISIONS

if TYPE_CHECKING:
    from ..arch import ModelSpec

_DEFAULT_OPTIONS = LayerOptions()


def _model_modules(model: ModelSpec, options: LayerOptions) -> tuple[str, ...]:
    """The options' named modules, checked against what the model has."""
    return check_recompute_modules(options.recompute_modules, model.attention, model.is_moe,
                                   model.moe_shared_ffn_hidden > 0)


def _gqa_attention_block(s: float | np.ndarray, h: float | np.ndarray, a: float | np.ndarray, t: float | np.ndarray,
                         d_q: float | np.ndarray, d_kv_gpu: float | np.ndarray, sp_div: float | np.ndarray,
                         drop: float | np.ndarray, flash: np.ndarray, rec: np.ndarray, mods: tuple[str, ...],
                         lin: float | np.ndarray) -> np.ndarray:
    """Per-token bytes of a GQA attention block (see :func:`activation_bytes_per_layer`)."""
    norm = (2.0 * h + h * drop + lin * h * ("layernorm" not in mods)) / sp_div
    qkv = 2.0 * d_q / t + 4.0 * d_kv_gpu
    out = np.where(flash, 2.0 * d_q / t + np.where(lin < 2.0, lin, 0.0) * d_q / t,
                   lin * d_q / t)
    scores = np.where(drop, 5.0, 2.0) * a * s / t
    scores = np.where((rec == "none") & ~flash & ("core_attn" not in mods), scores, 0.0)
    return norm + qkv + out + scores


def _ffn_block(h: float | np.ndarray, f: float | np.ndarray, t: float | np.ndarray, sp_div: float | np.ndarray,
               drop: float | np.ndarray, gated: ArrayLike, mods: tuple[str, ...], lin: float | np.ndarray,
               inner: bool = True) -> float | np.ndarray:
    """Per-token bytes of a dense FFN block; ``inner=False``: its norm part only."""
    norm = (2.0 * h + h * drop + lin * h * ("layernorm" not in mods)) / sp_div
    if not inner or "mlp" in mods:
        return norm
    return norm + (np.where(gated, 4.0, 2.0) * f + lin * f) / t


def activation_bytes_per_layer(model: ModelSpec, seq_len: ArrayLike | None = None, micro_batch: ArrayLike = 1,
                               tp: ArrayLike = 1, cp: ArrayLike = 1,
                               options: LayerOptions = _DEFAULT_OPTIONS) -> float | np.ndarray:
    r"""Activation memory one transformer layer keeps for its backward pass, per GPU.

    Per token and layer, with 16-bit activations and 1-byte dropout masks (Korthikanti §4.1):

    .. math::
        R &= 4h + 2h + 2h + 2h\,[\text{dropout}]   &&\text{(norm inputs, QKV and FFN inputs, masks)}\\
        S &= 2(d_q + d_{kv}) + 2 d_{kv} + 2 d_q + F &&\text{(Q, K, V, projection input, FFN inner)}\\
        A &= (5\,[\text{dropout}] \text{ or } 2)\; a\, s &&\text{(softmax, mask, dropout output)}

    F = 2f + 2f (activation input and output) for a plain FFN, 6f (fc1 output for gate and
    up, down-projection input) for a gated one. Per layer:

    .. math::
        M = \frac{s}{c} b \left(R\,/\,t^{[SP]} + S/t + A/t\right)

    where the score term A is dropped with flash attention or selective recomputation, and
    full recomputation keeps only the layer input, 2h (divided by t with SP). For MHA,
    f = 4h and dropout this is Table 2 of [1]: s b h (10 + 24/t + 5as/(ht)) with TP,
    s b h (34/t + 5as/(ht)) with TP + SP, s b h 34/t with SP + selective, 2 s b h with full.

    Tensor by tensor, the inputs of the linear layers are the two norm outputs (QKV and
    FFN-up inputs, h each), the projection input (d_q / t, the attention output) and the
    FFN-down input (f / t, the activation output). Cached at q bytes per element instead of
    2 (``linear_input_bytes``: 1 for FP8, 1 + 1/32 for MXFP8, as Transformer Engine saves
    the column-wise quantized input), each costs q instead of 2 bytes, except that fused
    attention keeps its BF16 output for its own backward, so the projection's quantized
    copy comes on top: 2 d_q/t + q d_q/t ([3] fusion 1). This equals the BF16 count less
    :func:`llmcost.training.precision.fp8_activation_saving_bytes_per_layer`.

    Named modules recomputed (``recompute_modules``, Megatron-Core's names,
    :data:`llmcost.training.recompute.RECOMPUTE_MODULES`) free what they would save:
    "layernorm" the two norm outputs, 2 q h / t^[SP] (Megatron discards the norm output and
    the linear keeps no quantized copy of it: ``set_save_original_input``); "mlp" the FFN
    inner tensors, (2 k_g' f + q f)/t with k_g' = 2 gated, 1 plain (normal checkpoint: its
    input, the norm output, is kept); "core_attn" the scores A (nothing with flash
    attention, which keeps only Q, K, V and its output). ``recompute="selective"`` is
    "core_attn". The MoE and MLA modules act on :func:`moe_ffn_activation_bytes` and
    :func:`mla_attention_activation_bytes`.

    Parameters
    ----------
    model : ModelSpec
        h, a, a_kv and d (:attr:`~llmcost.training.arch.ModelSpec.attention_shape`), f, the
        FFN's gating and ``dropout`` (after attention and FFN and on the attention scores;
        GPT-3/Megatron: yes, Llama-class pretraining: no). Every layer is counted as a
        dense GQA layer (:func:`layer_activation_bytes` adds MLA and MoE blocks).
    seq_len : int or array, optional
        s [tokens]; default the model's.
    micro_batch : int or array
        b [sequences].
    tp, cp : int or array
        Tensor- and context-parallel sizes t, c [-]; context parallelism splits the sequence.
    options : LayerOptions
        ``sequence_parallel`` (shards the norm/dropout region over t), ``recompute``,
        ``flash_attention`` (drops A), ``recompute_modules`` ("core_attn", "layernorm",
        "mlp" act here; checked against the model, ignored where ``recompute="full"``) and
        ``linear_input_bytes`` q (2 BF16, 1 FP8, 1 + 1/32 MXFP8 [bytes]).

    Returns
    -------
    bytes : float or array
        Activation bytes per layer per GPU [bytes].

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, §4.1-4.2, Table 2.
    .. [2] Megatron-LM (commit d98e8a6), megatron/core/transformer/transformer_config.py
       (``recompute_modules``) and transformer_layer.py (layernorm recompute,
       ``set_save_original_input`` under FP8).
    .. [3] Transformer Engine docs, "Low precision training: Performance Considerations"
       (Handling transposes, Memory usage).
    """
    return _checked_block(_dense_layer_bytes, model, seq_len, micro_batch, tp, cp, options)


def _checked_block(block: Callable[[ModelSpec, Shard, LayerOptions], float | np.ndarray], model: ModelSpec,
                   seq_len: ArrayLike | None, micro_batch: ArrayLike, tp: ArrayLike, cp: ArrayLike,
                   options: LayerOptions) -> float | np.ndarray:
    """A block's bytes once its sizes and the options' modules are checked against the model."""
    _model_modules(model, options)
    return v.result(block(model, _check_shard(model, seq_len, micro_batch, tp, cp), options))


def _dense_layer_bytes(model: ModelSpec, shard: Shard, options: LayerOptions) -> float | np.ndarray:
    """:func:`activation_bytes_per_layer` of checked sizes."""
    s, b, t, c = shard
    rec, mods, flash, sp, lin = _unpack(options)
    h, a, f, gated, drop = model.hidden, model.heads, model.ffn_hidden, model.gated_ffn, model.dropout
    kv, d = model.attention_shape
    assert f is not None  # set in ModelSpec.__post_init__
    d_q = a * d
    # Beyond t = kv_heads, Megatron replicates KV heads: each GPU keeps one head's K and V.
    d_kv_gpu = kv * d / np.minimum(t, kv)
    tokens = s / c * b
    sp_div = np.where(sp, t, 1)
    per_token = (_gqa_attention_block(s, h, a, t, d_q, d_kv_gpu, sp_div, drop, flash, rec,
                                      mods, lin)
                 + _ffn_block(h, f, t, sp_div, drop, gated, mods, lin))
    per_token = np.where(rec == "full", 2.0 * h / sp_div, per_token)
    return tokens * per_token


def mla_attention_activation_bytes(model: ModelSpec, seq_len: ArrayLike | None = None, micro_batch: ArrayLike = 1,
                                   tp: ArrayLike = 1, cp: ArrayLike = 1,
                                   options: LayerOptions = _DEFAULT_OPTIONS) -> float | np.ndarray:
    r"""Activation memory of one multi-head latent attention block (DeepSeek-V2/V3), per GPU:
    the attention half of a layer, in the accounting of :func:`activation_bytes_per_layer`.

    Per token, the tensors the block keeps for its backward (Megatron-Core's MLA: queries
    compressed to r_q, keys and values to r_kv plus a shared RoPE key of d_r; a heads of
    d_n + d_r query/key dims and d_v value dims; q bytes per cached linear-input element):

    .. math::
        M = \frac{s b}{c}\Big[\underbrace{\frac{2h + h\,[\text{drop}]}{t^{[SP]}}}_{\text{norm input, mask}}
            + \underbrace{\frac{q\,h}{t^{[SP]}}}_{\text{norm output}\ (\text{layernorm})}
            + \underbrace{\frac{2 (r_q + r_{kv} + d_r)}{t^{[SP]}}}_{\text{latents}}
            + \underbrace{\frac{q\,(r_q + r_{kv})}{t^{[SP]}}
              + \frac{2a\,(2 (d_n + d_r) + d_v)}{t}}_{\text{up-projection inputs; Q, K, V}\
              (\text{mla\_up\_proj})}
            + O + A\Big]

    The down-projections read the norm output (one fused down-projection, Megatron's
    ``linear_qkv_down_proj``: one cached copy); the latents (down-projection outputs) are the
    inputs of the up-projections' fused latent norms; the up-projection inputs are the
    normed latents; Q, K (the shared RoPE key broadcast to every head) and V are what the
    attention core keeps. The attention output O = 2 a d_v / t with fused attention (which
    keeps it), plus the output projection's quantized copy q a d_v / t when q < 2; q a d_v / t
    without (only the projection keeps it). A = (5 or 2) a s / t, the scores, only for
    unfused attention without recomputation. With r_q = 0 the queries are projected from the
    norm output directly (no query latent).

    "layernorm" frees the norm output; "mla_up_proj" (an output-discarding checkpoint of the
    up-projections, latent norms and RoPE) frees the normed latents and Q, K, V, keeping the
    latents it recomputes them from: 2 a (2 (d_n + d_r) + d_v) / t + q (r_q + r_kv) / t^[SP].
    DeepSeek-V3 (h 7168, a 128, r_q 1536, r_kv 512, d_n 128, d_r 64, d_v 128, t = 1, BF16):
    2 x 128 x 512 + 2 x 2048 = 135,168 bytes per token, 554 MB per layer for 4,096 tokens.
    Full recomputation keeps 2h / t^[SP].

    Parameters
    ----------
    model : ModelSpec
        A model with ``attention="mla"``: h, a, r_q (``q_lora_rank``, 0: no query
        compression), r_kv (``kv_lora_rank``), d_n (``head_dim``), d_r
        (``qk_rope_head_dim``), d_v (``v_head_dim``) and ``dropout``.
    seq_len : int or array, optional
        s [tokens]; default the model's.
    micro_batch : int or array
        b [sequences].
    tp, cp : int or array
        t, c [-].
    options : LayerOptions
        ``sequence_parallel``, ``recompute``, ``flash_attention``, ``recompute_modules``
        ("core_attn", "layernorm", "mla_up_proj" act here) and ``linear_input_bytes`` q
        [bytes] (:func:`activation_bytes_per_layer`).

    Returns
    -------
    bytes : float or array
        Activation bytes of the attention block per GPU [bytes].

    References
    ----------
    .. [1] DeepSeek-AI, arXiv:2412.19437, §2.1.1 (MLA, Eq. 1-11), §3.2.3 (recomputation of
       RMSNorm and MLA up-projections), §4.2 (hyper-parameters).
    .. [2] Megatron-LM (commit d98e8a6), megatron/core/transformer/multi_latent_attention.py
       (``get_query_key_value_tensors``: down-projections, latent norms, up-projections and
       RoPE; ``CheckpointWithoutOutput`` for "mla_up_proj").
    .. [3] Korthikanti et al. 2022, arXiv:2205.05198, §4.1 (per-tensor accounting).
    """
    if model.attention != "mla":
        raise v.InputError("model", f"mla_attention_activation_bytes needs a model with "
                                    f"attention='mla'; {model.id} has {model.attention!r}: use "
                                    f"activation_bytes_per_layer")
    return _checked_block(_mla_block_bytes, model, seq_len, micro_batch, tp, cp, options)


def _mla_block_bytes(model: ModelSpec, shard: Shard, options: LayerOptions) -> float | np.ndarray:
    """:func:`mla_attention_activation_bytes` of checked sizes."""
    s, b, t, c = shard
    rec, mods, flash, _, lin = _unpack(options)
    h, a, drop = model.hidden, model.heads, model.dropout
    rq, rkv, dn, dr, dv = (model.q_lora_rank, model.kv_lora_rank, model.head_dim,
                           model.qk_rope_head_dim, model.v_head_dim)
    assert dn is not None and dv is not None  # set in ModelSpec.__post_init__
    sp_div = np.where(options.sequence_parallel, t, 1)
    norm = (2.0 * h + h * drop + lin * h * ("layernorm" not in mods)) / sp_div
    latents = 2.0 * (rq + rkv + dr) / sp_div
    up = 0.0 if "mla_up_proj" in mods else (lin * (rq + rkv) / sp_div
                                            + 2.0 * a * (2.0 * (dn + dr) + dv) / t)
    out = np.where(flash, 2.0 * a * dv / t + np.where(lin < 2.0, lin, 0.0) * a * dv / t,
                   lin * a * dv / t)
    scores = np.where(drop, 5.0, 2.0) * a * s / t
    scores = np.where((rec == "none") & ~flash & ("core_attn" not in mods), scores, 0.0)
    per_token = np.where(rec == "full", 2.0 * h / sp_div, norm + latents + up + out + scores)
    return s / c * b * per_token


def op_sac_bytes_per_token(hidden: float | np.ndarray, heads: float | np.ndarray, d_q: float | np.ndarray,
                           d_kv_gpu: float | np.ndarray, ffn_hidden: float | np.ndarray, gated_ffn: ArrayLike = True,
                           tp: float | np.ndarray = 1, sequence_parallel: ArrayLike = False) -> float | np.ndarray:
    r"""Bytes a dense layer keeps per token under torchtitan's per-op selective checkpointing.

    The checkpointed block keeps its input, the fused attention's output with its FP32
    log-sum-exp per head, and the output of every other matmul
    (:func:`llmcost.training.recompute.op_sac_matmuls`); everything else is recomputed in
    the backward pass. With BF16 linears, gated FFN:

    .. math::
        M = \frac{2h}{t^{[SP]}} + \frac{2 d_q}{t} + 2 d_{kv}' + \frac{2 d_q + 4a}{t}
            + \frac{2f}{t} + 2h + [SP]\,\frac{4h}{t}

    (input; Q; V; attention output and log-sum-exp; gate; down projection, whose output is
    the full h before its reduce-scatter; with sequence parallelism the two reduce-scatter
    outputs, which the policy saves too). A plain FFN saves its first projection (2f/t) and
    not the second. FP8 linears keep the same, their outputs in BF16
    (:func:`llmcost.training.recompute.op_sac_matmuls`).

    Parameters
    ----------
    hidden, heads : int
        h, a [-].
    d_q : int
        Query width a d [-].
    d_kv_gpu : float or array
        d_kv', one GPU's K (or V) width, kv d / min(t, kv) [-].
    ffn_hidden : int
        f [-].
    gated_ffn, sequence_parallel : bool or array
    tp : int or array
        t [-].

    Returns
    -------
    bytes : float or array
        [bytes per token per layer].

    References
    ----------
    .. [1] pytorch/torchtitan, torchtitan/models/llama3/parallelize.py (2024-12: ``_save_list``
       holds ``aten.mm``, the flash and efficient SDPA kernels, ``reduce_scatter_tensor`` and
       ``aten.max``; ``_custom_policy`` skips every second mm).
    .. [2] Dao 2023, arXiv:2307.08691 (FlashAttention-2 keeps the output and the row
       log-sum-exp for its backward).
    """
    h, a, t = hidden, heads, tp
    sp = np.asarray(sequence_parallel)
    sp_div = np.where(sp, t, 1)
    kept = (2.0 * h / sp_div + 2.0 * d_q / t + 2.0 * d_kv_gpu + (2.0 * d_q + 4.0 * a) / t
            + 2.0 * ffn_hidden / t + np.where(gated_ffn, 2.0 * h, 0.0)
            + np.where(sp & (np.asarray(t) > 1), 4.0 * h / t, 0.0))
    return v.result(kept)


def cached_linear_input_bytes(precision: ArrayLike = "bf16",
                              activation_precision: ArrayLike | None = None) -> float | np.ndarray:
    r"""Bytes per element a linear layer caches of its input for the backward pass.

    .. math:: q = 2\ (\text{BF16 input kept}),\quad 1\ (\text{FP8}),\quad
              1 + 1/32\ (\text{MXFP8: one 8-bit scale per 32 elements})

    FP8 GEMMs cache their input quantized (Transformer Engine keeps only the column-wise
    copy; DeepSeek-V3 caches FP8 activations); Megatron's ``save_original_input`` keeps the
    16-bit input instead. What q does to each tensor: :func:`activation_bytes_per_layer`.

    Parameters
    ----------
    precision : {"bf16", "fp8", "mxfp8"} or array of these names
        GEMM precision.
    activation_precision : {"bf16", "fp8"} or array of these names, optional
        How the inputs are cached; None: "fp8" where the GEMMs run FP8 or MXFP8, "bf16"
        otherwise. "fp8" needs FP8 or MXFP8 GEMMs.

    Returns
    -------
    q : float or array
        [bytes per element].

    References
    ----------
    .. [1] Transformer Engine docs, "Low precision training: Performance Considerations"
       (Memory usage: quantized saved inputs).
    .. [2] DeepSeek-AI, arXiv:2412.19437, §3.3.3 (FP8 cached activations).
    """
    prec = v.choices("precision", precision, PRECISIONS)
    if activation_precision is None:
        act_prec = np.where(prec == "bf16", "bf16", "fp8")
    else:
        act_prec = v.choices("activation_precision", activation_precision, ACTIVATION_PRECISIONS)
        bad = np.broadcast_to((act_prec == "fp8") & (prec == "bf16"),
                              np.broadcast(act_prec, prec).shape)
        if bad.any():
            raise v.InputError("activation_precision", "activation_precision 'fp8' caches the "
                                                       "quantized inputs of FP8 GEMMs; with "
                                                       "precision 'bf16' there are none: use "
                                                       "precision 'fp8' or 'mxfp8', or "
                                                       "activation_precision 'bf16'")
    return v.result(np.where(act_prec == "fp8", _saved_input_bytes(prec), 2.0))
