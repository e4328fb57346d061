"""A model's stored activations per layer by recomputation choice, and the working memory
recomputation rebuilds at the peak.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v
from ..arch import ModelSpec
from ..flops import RECOMPUTE_MODES
from ..layer_options import LayerOptions, _unpack
from ..precision import _check_shard
from .activations import (
    _DEFAULT_OPTIONS,
    _dense_layer_bytes,
    _ffn_block,
    _gqa_attention_block,
    _mla_block_bytes,
    _model_modules,
    op_sac_bytes_per_token,
)
from .experts import _moe_block_bytes


def layer_activation_bytes(model: ModelSpec, seq_len: ArrayLike | None = None, micro_batch: ArrayLike = 1,
                           tp: ArrayLike = 1, cp: ArrayLike = 1, etp: ArrayLike = 1,
                           options: LayerOptions = _DEFAULT_OPTIONS) -> float | np.ndarray:
    r"""Activation bytes one layer of a model keeps per micro-batch, the mean over its layers.

    .. math:: \bar M = \frac{(l - l_m)\,(M_{attn} + M_{FFN}) + l_m\,(M_{attn} + M_{norm}
              + M_{MoE})}{l}

    with M_attn the attention block (:func:`activation_bytes_per_layer`'s GQA part, or
    :func:`mla_attention_activation_bytes` for multi-head latent attention), M_FFN the dense
    FFN block and M_norm its norm part alone, M_MoE :func:`moe_ffn_activation_bytes`, l_m the
    MoE layers; full recomputation keeps 2h / t^[SP] per layer. A dense GQA model gives
    :func:`activation_bytes_per_layer` exactly.

    Parameters
    ----------
    model : ModelSpec
        Architecture.
    seq_len : int or array, optional
        s [tokens]; default the model's.
    micro_batch, tp, cp, etp : int or array
        b [sequences]; t, c, t_e [-].
    options : LayerOptions
        ``sequence_parallel``, ``flash_attention``, ``recompute``, ``recompute_modules``
        (:data:`llmcost.training.recompute.RECOMPUTE_MODULES`, checked against the model),
        ``linear_input_bytes`` q (bytes per cached linear-input element [bytes]),
        ``moe_capacity_factor`` c_f [-] and ``moe_probs_at``
        (:func:`moe_ffn_activation_bytes`).

    Returns
    -------
    bytes : float or array
        Mean activation bytes per layer per micro-batch per GPU [bytes].

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, §4.1, Table 2.
    .. [2] DeepSeek-AI, arXiv:2412.19437, §2.1, §3.2.3, §3.3.3.
    """
    mods = _model_modules(model, options)
    shard = _check_shard(model, seq_len, micro_batch, tp, cp)
    s, b, t, c = shard
    te = v.integer("etp", etp)
    rec, _, flash, sp, lin = _unpack(options)
    h = model.hidden
    # set in ModelSpec.__post_init__
    assert model.ffn_hidden is not None and model.head_dim is not None and model.v_head_dim is not None
    kv_act, hd_act = model.attention_shape
    dense = _dense_layer_bytes(model, shard, options)
    tokens = s / c * b
    sp_div = np.where(sp, t, 1)
    drop = float(model.dropout)
    if model.attention == "mla":
        attn = _mla_block_bytes(model, shard, options)
        dense = attn + tokens * _ffn_block(h, model.ffn_hidden, t, sp_div, drop,
                                           model.gated_ffn, mods, lin)
    else:
        d = hd_act
        attn = tokens * _gqa_attention_block(s, h, model.heads, t, model.heads * d,
                                             kv_act * d / np.minimum(t, kv_act), sp_div, drop,
                                             flash, rec, mods, lin)
    per_layer = dense
    if model.is_moe:
        block = _moe_block_bytes(model, shard, te, options)
        moe_layer = attn + tokens * _ffn_block(h, model.ffn_hidden, t, sp_div, drop,
                                               model.gated_ffn, mods, lin, inner=False) + block
        share = model.moe_layers / model.layers
        per_layer = (1.0 - share) * dense + share * moe_layer
    if "op_sac" in mods:
        kv_a, hd_a = model.attention_shape
        per_layer = tokens * op_sac_bytes_per_token(
            h, model.heads, model.heads * hd_a, kv_a * hd_a / np.minimum(t, kv_a),
            model.ffn_hidden, model.gated_ffn, t, sp)
    per_layer = np.where(rec == "full", tokens * 2.0 * h / sp_div, per_layer)
    return v.result(per_layer)


def recompute_working_bytes(none_bytes: ArrayLike, kept_bytes: ArrayLike, recompute: ArrayLike = "none",
                            recompute_modules: str | Sequence[str] | None = ()) -> float | np.ndarray:
    r"""What a recomputed layer rebuilds for its own backward, per GPU.

    .. math:: M_{rc} = [\text{full} \lor \text{op\_sac}]\,(\bar M_{none} - \bar M_{kept})

    Full recomputation keeps each layer's input only; at the layer's backward its forward
    runs again and its activations exist once more, for that one layer and micro-batch,
    while every other layer still holds its input. torchtitan's per-op policy ("op_sac")
    checkpoints the whole layer the same way and rebuilds what it did not keep. Megatron's
    named-module recomputation rebuilds a module at a time, just before its backward (a
    norm output, an activation: small beside the layer), and is not counted.

    Parameters
    ----------
    none_bytes, kept_bytes : float or array
        M̄_none, M̄_full: one layer's activations per micro-batch without recomputation and
        as kept under the recompute variant (:func:`layer_activation_bytes`) [bytes].
    recompute : {"none", "selective", "full"} or array of these names
    recompute_modules : str or sequence of str
        Named modules (:data:`llmcost.training.recompute.RECOMPUTE_MODULES`).

    Returns
    -------
    bytes : float or array
        [bytes].

    References
    ----------
    .. [1] Chen et al. 2016, arXiv:1604.06174, §3.
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, §5 (full recomputation stores the
       layer input and recomputes the rest in the backward pass).
    """
    whole = rebuilds_whole_layers(recompute, recompute_modules)
    none = v.nonnegative("none_bytes", none_bytes)
    kept = v.nonnegative("kept_bytes", kept_bytes)
    return v.result(np.where(whole, np.maximum(none - kept, 0.0), 0.0))


def rebuilds_whole_layers(recompute: ArrayLike = "none",
                          recompute_modules: str | Sequence[str] | None = ()) -> np.ndarray:
    r"""True where a recompute variant rebuilds a whole layer for its backward.

    .. math:: R = [\text{recompute} = \text{full}] \lor [\text{op\_sac} \in \text{modules}]

    Full recomputation keeps each layer's input only; torchtitan's per-op policy
    (``op_sac``) checkpoints the whole layer the same way. Megatron's named modules are
    rebuilt one at a time and do not count (:func:`recompute_working_bytes`).

    Parameters
    ----------
    recompute : {"none", "selective", "full"} or array of these names
    recompute_modules : str or sequence of str
        Named modules (:data:`llmcost.training.recompute.RECOMPUTE_MODULES`).

    Returns
    -------
    rebuilds : bool or array
        [-], the shape of ``recompute``.

    References
    ----------
    .. [1] Chen et al. 2016, arXiv:1604.06174, §3.
    .. [2] pytorch/torchtitan, torchtitan/models/llama3/parallelize.py (per-op selective
       activation checkpointing, ``selective_ac_option = "op"``).
    """
    rec = v.choices("recompute", recompute, RECOMPUTE_MODES)
    # checked against its model by the caller (memory_per_gpu); here only the name matters
    names = (recompute_modules.split(",") if isinstance(recompute_modules, str)
             else tuple(recompute_modules or ()))
    return (rec == "full") | ("op_sac" in [n.strip() for n in names])
