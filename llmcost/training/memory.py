"""Per-GPU memory of a training run, by component.

Model states (weights, gradients, optimizer states) follow ZeRO; activations follow
Korthikanti et al., generalised to grouped-query attention, gated FFNs and models without
dropout (each generalisation reduces to the paper's Table 2 for a GPT layer). Everything is
in bytes; GB in names means 1e9 bytes.

References
----------
1. S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
   Models", SC'20, arXiv:1910.02054, §3.1 and §5 (Figure 1).
2. V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
   Models", MLSys 2023, arXiv:2205.05198, §4, Table 2, Eq. 5.
3. D. Narayanan et al., SC'21, arXiv:2104.04473, §2.2 (schedules).
4. E. Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", arXiv:2106.09685.
5. T. Dettmers et al., "QLoRA: Efficient Finetuning of Quantized LLMs",
   arXiv:2305.14314, §3 (NF4, double quantization: 0.127 bits per parameter of constants).
6. T. Dettmers et al., "8-bit Optimizers via Block-wise Quantization", arXiv:2110.02861.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import _validate as v
from . import stacks as stacks_mod
from .arch import ModelSpec
from .flops import RECOMPUTE_MODES, matmul_params_per_layer
from .precision import PRECISIONS, _layer_dims, _saved_input_bytes, fp8_weight_copy_bytes
from .recompute import RECOMPUTE_MODULES, check_recompute_modules  # noqa: F401 (re-exported)

GB = 1e9

#: bytes per parameter (weights, gradients, optimizer states) by optimizer, mixed precision.
OPTIMIZER_BYTES_PER_PARAM = {
    # ZeRO §3.1: fp16/bf16 params 2 + grads 2 + fp32 master, momentum, variance K = 12.
    "adam": (2.0, 2.0, 12.0),
    # fp32 master 4 + 8-bit momentum 1 + 8-bit variance 1 (Dettmers 2021; block constants
    # are < 0.1% and left out).
    "adam-8bit": (2.0, 2.0, 6.0),
    # SGD with momentum in mixed precision: fp32 master 4 + fp32 momentum 4.
    "sgd": (2.0, 2.0, 8.0),
    # Plain fp32 Adam: params 4, grads 4, momentum 4, variance 4.
    "adam-fp32": (4.0, 4.0, 8.0),
}
OPTIMIZERS = tuple(OPTIMIZER_BYTES_PER_PARAM)
#: moments each optimizer keeps in FP32 (Adam: momentum and variance; SGD: momentum), which
#: ``optimizer_moments="bf16"`` stores in 2 bytes instead of 4; 8-bit Adam's are 1 byte already.
FP32_MOMENTS = {"adam": 2, "adam-8bit": 0, "sgd": 1, "adam-fp32": 2}
#: storage of the optimizer's moments: "fp32" (as the optimizer keeps them) or "bf16"
#: (Megatron's ``--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype
#: bf16``; DeepSeek-V3 §3.3.3)
OPTIMIZER_MOMENTS = ("fp32", "bf16")
#: cached inputs of the linear layers: "bf16", or "fp8" (quantized, as FP8 GEMMs save them)
ACTIVATION_PRECISIONS = ("bf16", "fp8")
#: where an MoE layer applies the router's probabilities: on the expert outputs in the
#: combine (which then keeps them for the probabilities' gradient) or inside the expert
#: activation function (Megatron-Core from commit 2659630 on: the combine keeps nothing)
MOE_PROBS_AT = ("combine", "activation")
ZERO_STAGES = (0, 1, 2, 3)
FINETUNE_MODES = ("full", "lora", "qlora")
LORA_TARGETS = ("qv", "attention", "all")
SCHEDULES = ("1f1b", "gpipe")
#: pipeline stages whose memory is evaluated: rank 0, 1 and p - 1
STAGES = ("first", "middle", "last")

#: frozen base weights: 16-bit, or NF4 (4 bits) + double-quantised constants 0.127 bits [5].
FROZEN_BYTES_PER_PARAM = {"lora": 2.0, "qlora": (4 + 0.127) / 8}


def model_state_bytes(params, dp=1, zero_stage=0, optimizer="adam", optimizer_moments="fp32"):
    r"""Weights, gradients and optimizer states per GPU under ZeRO.

    .. math::
        M_0 = (2 + 2 + K)\Psi,\quad M_1 = 2\Psi + 2\Psi + \frac{K\Psi}{N_d},\quad
        M_2 = 2\Psi + \frac{(2 + K)\Psi}{N_d},\quad M_3 = \frac{(2 + 2 + K)\Psi}{N_d}

    with K = 12 for mixed-precision Adam (other optimizers by name change the three byte
    counts, not the sharding). BF16 moments store each of the optimizer's n_m FP32 moments
    (:data:`FP32_MOMENTS`) in 2 bytes: K' = K - 2 n_m, so mixed-precision Adam keeps
    2 + 2 + (4 + 2 + 2) = 12 bytes per parameter instead of 16 (FP32 master weights, as
    Megatron's precision-aware optimizer with ``--exp-avg-dtype bf16 --exp-avg-sq-dtype
    bf16`` and DeepSeek-V3 keep them). DeepSeek-V3 also accumulates its gradients in FP32
    ([2]: 4 bytes where this count, after ZeRO, has 2); give that as its own optimizer if
    it matters.

    Parameters
    ----------
    params : float or array
        Parameters held by this GPU before ZeRO sharding, Psi [-] (already divided by the
        tensor- and pipeline-parallel split).
    dp : int or array
        Data-parallel (ZeRO sharding) degree N_d [-].
    zero_stage : int or array
        0 (none), 1 (optimizer states), 2 (+ gradients), 3 (+ parameters).
    optimizer : {"adam", "adam-8bit", "sgd", "adam-fp32"}
    optimizer_moments : {"fp32", "bf16"}
        Storage of the optimizer's moments; "bf16" is refused for "adam-8bit" (its moments
        are 8-bit already).

    Returns
    -------
    weights, grads, optimizer : float or array
        Bytes per GPU [bytes].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §5 and Figure 1 (Psi = 7.5B,
       N_d = 64: 120, 31.4, 16.6 and 1.88 GB).
    .. [2] DeepSeek-AI, arXiv:2412.19437, §3.3.3 ("BF16 ... to track the first and second
       moments in the AdamW optimizer ... the master weights ... and gradients ... are
       still retained in FP32").
    .. [3] Megatron-LM (commit d98e8a6), megatron/training/arguments.py
       (``--use-precision-aware-optimizer``, ``--exp-avg-dtype``, ``--exp-avg-sq-dtype``)
       and megatron/core/optimizer/optimizer_config.py.
    """
    v.choice("optimizer", optimizer, OPTIMIZERS)
    v.choice("optimizer_moments", optimizer_moments, OPTIMIZER_MOMENTS)
    psi = v.nonnegative("params", params)
    nd = v.integer("dp", dp)
    stage = v.integer("zero_stage", zero_stage, minimum=0, maximum=3)
    bw, bg, bo = OPTIMIZER_BYTES_PER_PARAM[optimizer]
    if optimizer_moments == "bf16":
        if not FP32_MOMENTS[optimizer]:
            raise v.InputError("optimizer_moments", f"optimizer_moments 'bf16' would widen the "
                                                    f"8-bit moments of {optimizer!r}: use 'fp32'")
        bo = bo - 2.0 * FP32_MOMENTS[optimizer]
    weights = bw * psi / np.where(stage >= 3, nd, 1)
    grads = bg * psi / np.where(stage >= 2, nd, 1)
    opt = bo * psi / np.where(stage >= 1, nd, 1)
    return v.result(weights), v.result(grads), v.result(opt)


def _linear_input_bytes(linear_input_bytes):
    return v.in_range("linear_input_bytes", linear_input_bytes, 0.5, 4.0)


def _gqa_attention_block(s, h, a, t, d_q, d_kv_gpu, sp_div, drop, flash, rec, mods, lin):
    """Per-token bytes of a GQA attention block (see :func:`activation_bytes_per_layer`)."""
    norm = (2.0 * h + h * drop + lin * h * ("layernorm" not in mods)) / sp_div
    qkv = 2.0 * d_q / t + 4.0 * d_kv_gpu
    out = np.where(flash, 2.0 * d_q / t + np.where(lin < 2.0, lin, 0.0) * d_q / t,
                   lin * d_q / t)
    scores = np.where(drop, 5.0, 2.0) * a * s / t
    scores = np.where((rec == "none") & ~flash & ("core_attn" not in mods), scores, 0.0)
    return norm + qkv + out + scores


def _ffn_block(h, f, t, sp_div, drop, gated, mods, lin, inner=True):
    """Per-token bytes of a dense FFN block; ``inner=False``: its norm part only."""
    norm = (2.0 * h + h * drop + lin * h * ("layernorm" not in mods)) / sp_div
    if not inner or "mlp" in mods:
        return norm
    return norm + (np.where(gated, 4.0, 2.0) * f + lin * f) / t


def activation_bytes_per_layer(seq_len, micro_batch, hidden, heads, tp=1, cp=1, kv_heads=None,
                               ffn_hidden=None, gated_ffn=False, head_dim=None, dropout=True,
                               sequence_parallel=False, recompute="none",
                               flash_attention=False, recompute_modules=(),
                               linear_input_bytes=2.0):
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
    seq_len, micro_batch : int or array
        s [tokens], b [sequences].
    hidden, heads : int or array
        h, a [-].
    tp, cp : int or array
        Tensor- and context-parallel sizes t, c [-]; context parallelism splits the sequence.
    kv_heads, ffn_hidden, gated_ffn, head_dim
        See :func:`llmcost.training.flops.matmul_params_per_layer`.
    dropout : bool
        Dropout after attention and FFN and on the attention scores (GPT-3/Megatron: yes;
        Llama-class pretraining: no).
    sequence_parallel : bool or array
        Megatron sequence parallelism shards the norm/dropout region over t.
    recompute : {"none", "selective", "full"} or array of these names
    flash_attention : bool or array
        Fused attention that never stores the s x s scores (drops A).
    recompute_modules : str or sequence of str
        Named modules recomputed in the backward ("core_attn", "layernorm", "mlp" here; the
        MLA/MoE names are refused for this dense layer). Ignored where ``recompute="full"``.
    linear_input_bytes : float or array
        q, bytes per cached element of a linear layer's input [bytes]: 2 (BF16), 1 (FP8),
        1 + 1/32 (MXFP8).

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
    rec = v.choices("recompute", recompute, RECOMPUTE_MODES)
    mods = check_recompute_modules(recompute_modules)
    s, b, h, a, t, c, kv, f, d, gated, sp = _layer_dims(
        seq_len, micro_batch, hidden, heads, tp, cp, kv_heads, ffn_hidden, gated_ffn,
        head_dim, sequence_parallel)
    drop = v.boolean("dropout", dropout)
    flash = v.boolean("flash_attention", flash_attention)
    lin = _linear_input_bytes(linear_input_bytes)

    d_q = a * d
    # Beyond t = kv_heads, Megatron replicates KV heads: each GPU keeps one head's K and V.
    d_kv_gpu = kv * d / np.minimum(t, kv)
    tokens = s / c * b
    sp_div = np.where(sp, t, 1)
    per_token = (_gqa_attention_block(s, h, a, t, d_q, d_kv_gpu, sp_div, drop, flash, rec,
                                      mods, lin)
                 + _ffn_block(h, f, t, sp_div, drop, gated, mods, lin))
    per_token = np.where(rec == "full", 2.0 * h / sp_div, per_token)
    return v.result(tokens * per_token)


def mla_attention_activation_bytes(seq_len, micro_batch, hidden, heads, q_lora_rank,
                                   kv_lora_rank, qk_head_dim, qk_rope_head_dim, v_head_dim,
                                   tp=1, cp=1, dropout=False, sequence_parallel=False,
                                   recompute="none", flash_attention=True, recompute_modules=(),
                                   linear_input_bytes=2.0):
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
    seq_len, micro_batch : int or array
        s [tokens], b [sequences].
    hidden, heads : int or array
        h, a [-].
    q_lora_rank, kv_lora_rank : int or array
        r_q (0: no query compression), r_kv [-].
    qk_head_dim, qk_rope_head_dim, v_head_dim : int or array
        d_n, d_r, d_v [-].
    tp, cp : int or array
        t, c [-].
    dropout : bool
    sequence_parallel : bool or array
    recompute : {"none", "selective", "full"} or array of these names
    flash_attention : bool or array
    recompute_modules : str or sequence of str
        "core_attn", "layernorm", "mla_up_proj" act here.
    linear_input_bytes : float or array
        q [bytes] (:func:`activation_bytes_per_layer`).

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
    rec = v.choices("recompute", recompute, RECOMPUTE_MODES)
    mods = check_recompute_modules(recompute_modules, attention="mla")
    s = v.integer("seq_len", seq_len)
    b = v.integer("micro_batch", micro_batch)
    h = v.integer("hidden", hidden)
    a = v.integer("heads", heads)
    rq = v.integer("q_lora_rank", q_lora_rank, minimum=0)
    rkv = v.integer("kv_lora_rank", kv_lora_rank)
    dn = v.integer("qk_head_dim", qk_head_dim)
    dr = v.integer("qk_rope_head_dim", qk_rope_head_dim, minimum=0)
    dv = v.integer("v_head_dim", v_head_dim)
    t = v.integer("tp", tp)
    c = v.integer("cp", cp)
    drop = v.boolean("dropout", dropout)
    sp_div = np.where(v.boolean("sequence_parallel", sequence_parallel), t, 1)
    flash = v.boolean("flash_attention", flash_attention)
    lin = _linear_input_bytes(linear_input_bytes)

    norm = (2.0 * h + h * drop + lin * h * ("layernorm" not in mods)) / sp_div
    latents = 2.0 * (rq + rkv + dr) / sp_div
    up = 0.0 if "mla_up_proj" in mods else (lin * (rq + rkv) / sp_div
                                            + 2.0 * a * (2.0 * (dn + dr) + dv) / t)
    out = np.where(flash, 2.0 * a * dv / t + np.where(lin < 2.0, lin, 0.0) * a * dv / t,
                   lin * a * dv / t)
    scores = np.where(drop, 5.0, 2.0) * a * s / t
    scores = np.where((rec == "none") & ~flash & ("core_attn" not in mods), scores, 0.0)
    per_token = np.where(rec == "full", 2.0 * h / sp_div, norm + latents + up + out + scores)
    return v.result(s / c * b * per_token)


def inflight_layers(layers, pp, num_microbatches=None, interleave=1, stage="first",
                    schedule="1f1b", stage_layers=None):
    r"""Layers' worth of activations a pipeline stage holds at its peak.

    1F1B: stage r holds min(p - r, m) micro-batches of its n_r layers (n_r = l/p on an
    even pipeline: the first stage holds p of them, so l in all: Eq. 5 of [1]). Interleaved
    1F1B with v chunks: stage r runs 2(p - r - 1) + (v - 1) p warm-up chunk-forwards before
    its first backward, so it holds min(2(p - r - 1) + (v - 1)p + 1, m v) chunks of n_r/v
    layers; for the first stage of an even pipeline that is l (1 + (p - 1)/(p v))
    ([1] §4.2.3). GPipe: all m micro-batches, m n_r.

    On an uneven pipeline (:func:`pipeline_stage_layers`) the first middle stage (r = 1)
    holds one micro-batch less than the first stage but may carry more layers, so it can
    hold more: 126 layers on 16 stages (7/8/.../8/7), 1F1B: 16 x 7 = 112 layers on the
    first stage, 15 x 8 = 120 on the second.

    Parameters
    ----------
    layers, pp : int or array
        l, p [-].
    num_microbatches : int or array, optional
        m per iteration per pipeline [-]; None means m >= what the schedule keeps in
        flight (required for GPipe).
    interleave : int or array
        Virtual chunks per stage v [-]; 1 = plain 1F1B.
    stage : {"first", "middle", "last"}
        Rank r = 0, 1 (the middle stage that holds the most; the last when p = 2,
        the only one when p = 1) or p - 1.
    schedule : {"1f1b", "gpipe"}
    stage_layers : int or array, optional
        Layers on this stage n_r [-]; default l/p.

    Returns
    -------
    layers_held : float or array
        [layers' worth of one micro-batch's activations].

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, §4.2.3, Eq. 5.
    .. [2] Narayanan et al. 2021, arXiv:2104.04473, §2.2.
    """
    v.choice("stage", stage, STAGES)
    v.choice("schedule", schedule, SCHEDULES)
    l = v.integer("layers", layers)
    p = v.integer("pp", pp)
    n = l / p if stage_layers is None else v.integer("stage_layers", stage_layers)
    if num_microbatches is None:
        if schedule == "gpipe":
            raise v.InputError("num_microbatches", "num_microbatches is required for GPipe")
        m = np.inf
    else:
        m = v.positive("num_microbatches", num_microbatches)
    vv = v.integer("interleave", interleave)
    r = {"first": 0, "middle": np.minimum(1, p - 1), "last": p - 1}[stage]
    if schedule == "gpipe":
        return v.result(m * n)
    plain = np.minimum(p - r, m) * n
    chunks = np.minimum(2.0 * (p - r - 1) + (vv - 1) * p + 1, m * vv)
    inter = chunks * n / vv
    return v.result(np.where(vv > 1, inter, plain))


def lora_parameter_count(layers, hidden, heads, rank, kv_heads=None, ffn_hidden=None,
                         gated_ffn=False, head_dim=None, targets="all"):
    r"""Trainable LoRA adapter parameters.

    Each adapted matrix W (d_in x d_out) gains B A with A (r x d_in), B (d_out x r):

    .. math:: P_{LoRA} = l\, r \sum_{W} (d_{in} + d_{out})

    "qv" adapts W_q and W_v (Hu et al.'s default), "attention" Q, K, V and the output
    projection, "all" adds every FFN matrix (QLoRA's setting).

    Parameters
    ----------
    layers, hidden, heads : int or array
        l, h, a [-].
    rank : int or array
        r [-].
    kv_heads, ffn_hidden, gated_ffn, head_dim
        See :func:`llmcost.training.flops.matmul_params_per_layer`.
    targets : {"qv", "attention", "all"}

    Returns
    -------
    params : float or array
        Adapter parameters [-].

    References
    ----------
    .. [1] Hu et al. 2021, arXiv:2106.09685, §4.
    .. [2] Dettmers et al. 2023, arXiv:2305.14314, §4 (LoRA on all linear layers).
    """
    v.choice("targets", targets, LORA_TARGETS)
    l = v.integer("layers", layers)
    h = v.integer("hidden", hidden)
    a = v.integer("heads", heads)
    r = v.integer("rank", rank)
    kv = a if kv_heads is None else v.integer("kv_heads", kv_heads)
    f = 4 * h if ffn_hidden is None else v.integer("ffn_hidden", ffn_hidden)
    d = h // a if head_dim is None else v.integer("head_dim", head_dim)
    gated = v.boolean("gated_ffn", gated_ffn)
    d_q, d_kv = a * d, kv * d
    if targets == "qv":
        per_layer = (h + d_q) + (h + d_kv)
    else:
        per_layer = (h + d_q) + 2 * (h + d_kv) + (d_q + h)
    if targets == "all":
        per_layer = per_layer + np.where(gated, 3, 2) * (h + f)
    return v.result(1.0 * l * r * per_layer)


#: Share of allocated bytes the caching allocator loses to fragmentation [-]: an upper bound
#: only, as the calibration runs that ran must fit (``make validate`` prints their memory
#: against capacity): Megatron-Bridge's Llama 3.1 405B on GB200 leaves room for 2.9%, its
#: Llama 3 70B on GB300 2.1% (both with expandable segments). Untuned, 5-10% is possible.
FRAGMENTATION = 0.02
#: CUDA context with cuBLAS/NCCL workspaces [bytes]: an assumption of about 1 GB, fitted to
#: no run (the calibration runs bound fragmentation with it fixed).
CONTEXT_BYTES = 1.0e9


def framework_overhead_bytes(allocated_bytes, context_bytes=CONTEXT_BYTES,
                             fragmentation=FRAGMENTATION):
    r"""Memory the framework needs beyond tensors: CUDA context, library workspaces, and
    allocator fragmentation.

    .. math:: M_{overhead} = M_{context} + \phi\, M_{allocated}

    The defaults are about 1 GB for the CUDA context with cuBLAS/NCCL workspaces (an
    assumption) and 2% fragmentation of the caching allocator with expandable segments, the
    most the published runs that ran allow (:data:`FRAGMENTATION`). Set them to what your
    framework shows (``torch.cuda.memory_reserved`` minus ``memory_allocated``).

    Parameters
    ----------
    allocated_bytes : float or array
        Tensors' bytes [bytes].
    context_bytes : float or array
        Fixed overhead [bytes].
    fragmentation : float or array
        phi, share of allocated bytes lost to fragmentation [-], in [0, 1).

    Returns
    -------
    bytes : float or array
        Overhead [bytes].

    References
    ----------
    .. [1] PyTorch documentation, "CUDA semantics: memory management" (caching allocator,
       reserved vs allocated memory).
    """
    alloc = v.nonnegative("allocated_bytes", allocated_bytes)
    ctx = v.nonnegative("context_bytes", context_bytes)
    phi = v.in_range("fragmentation", fragmentation, 0, 1, high_inclusive=False)
    return v.result(ctx + phi * alloc)


#: The terms of a :class:`MemoryBreakdown` as :meth:`MemoryBreakdown.to_gb` names them, the
#: bottom of a stack first, and their labels: the one list the CLI and the plots read.
#: ``weights_gb`` is every 16-bit weight and ``expert_weights_gb`` the routed experts' part
#: of it, so the total counts ``weights_gb`` and not ``expert_weights_gb``.
MEMORY_TERMS = {
    "weights_gb": "weights",
    "expert_weights_gb": "expert weights",
    "fp8_weights_gb": "FP8 weight copies",
    "zero3_working_gb": "ZeRO-3 working set",
    "grads_gb": "grads",
    "optimizer_gb": "optimizer",
    "activations_gb": "activations",
    "overhead_gb": "overhead",
}


class MemoryBreakdown(NamedTuple):
    """Per-GPU bytes by component, for the most loaded pipeline stage."""

    weights_bytes: np.ndarray
    grads_bytes: np.ndarray
    optimizer_bytes: np.ndarray
    activations_bytes: np.ndarray
    overhead_bytes: np.ndarray
    total_bytes: np.ndarray
    #: pipeline rank of the peak stage: 0 (first), 1 (a middle stage: on an uneven
    #: pipeline the second can outweigh the first) or p - 1 (last).
    peak_stage: np.ndarray
    #: transformer layers on the peak stage [-].
    peak_stage_layers: np.ndarray = None
    #: FP8/MXFP8 copies of the GEMM weights, resident beside the BF16 weights (0 for BF16;
    #: :func:`llmcost.training.precision.fp8_weight_copy_bytes`), in ``total_bytes``.
    fp8_weights_bytes: np.ndarray = 0.0
    #: ZeRO-3/FSDP working set: gathered 16-bit weights of the layer being computed and the
    #: prefetched next one, and one layer's unsharded gradients during its reduce-scatter
    #: (:func:`zero3_working_set_bytes`; 0 below stage 3), in ``total_bytes``.
    zero3_working_bytes: np.ndarray = 0.0
    #: MoE: the routed experts' share of ``weights_bytes`` (sharded by EP x ETP); 0 dense
    expert_weights_bytes: np.ndarray = 0.0

    def to_gb(self) -> dict:
        """Each of :data:`MEMORY_TERMS` and ``total_gb`` in GB (1e9 bytes), keys as in the CLI
        contract: ``<term>_gb`` is the field ``<term>_bytes``."""
        return {k: getattr(self, k[:-3] + "_bytes") / GB for k in (*MEMORY_TERMS, "total_gb")}


def _stage_layers(layers, pp, first=None, last=None):
    """(first, middle, last, ok, slots) without raising: see :func:`pipeline_stage_layers`.

    ``slots`` is True where the split is the automatic one (given or not): Megatron-Core's
    embedding/loss-in-the-split one, whose interleaving rule is on L' alone. A layout row
    passed back with its first/last columns is therefore the same layout.
    """
    L = np.asarray(layers)
    p = np.asarray(pp)
    if first is None and last is None:
        Lp = -(-L // np.maximum(p, 1))
        d = p * Lp - L
        # d <= 2: Megatron-Core's embedding and loss slots (the first end first); a larger
        # deficit alternates on, the odd layer to the last stage, which computes the LM head
        f_short = np.where(d <= 2, (d + 1) // 2, d // 2)
        f, mid, l = Lp - f_short, Lp, Lp - (d - f_short)
        ok = (f >= 1) & (l >= 1) & (p <= L)
        # only Megatron-Core's slots split interleaved chunks by L' alone
        slots = ok & (d <= 2)
    else:
        fg, lg = first is not None, last is not None
        f0 = np.asarray(first if fg else 0)
        l0 = np.asarray(last if lg else 0)
        k = p - fg - lg
        rest = L - f0 - l0
        # no middle stage (p = 2, both ends given): the automatic L' as a placeholder
        mid = np.where(k > 0, rest // np.maximum(k, 1), -(-L // np.maximum(p, 1)))
        ok = np.where(k > 0, (rest % np.maximum(k, 1) == 0) & (mid >= 1), rest == 0)
        f = f0 if fg else mid
        l = l0 if lg else mid
        ok = ok & (f >= 1) & (l >= 1)
        fa, _, la, _, auto_slots = _stage_layers(L, p)
        slots = auto_slots & (f == fa) & (l == la)
    one = p == 1
    f, mid, l = (np.where(one, L, x) for x in (f, mid, l))
    return f, mid, l, ok | one, slots | one


def _interleave_ok(pp, first, middle, last, slots, interleave):
    """Where v virtual chunks per stage are allowed (Megatron-Core's rules).

    Explicit first/last (``num_layers_in_first/last_pipeline_stage``): every stage's layers
    divide by v (``TransformerConfig.__post_init__``, "Uneven PP"). The automatic split with
    a deficit of 1 or 2 is Megatron-Core's ``account_for_embedding_in_pipeline_split`` /
    ``account_for_loss_in_pipeline_split``: the embedding and the loss count as one layer
    each, every stage holds L' slots split into v chunks of L'/v, and only the first chunk
    of the first stage (the last of the last) builds one layer less (``get_num_layers_to_build``
    in megatron/core/transformer/transformer_block.py), so L' must divide by v. This is
    how Llama 3 405B balanced its interleaved pipeline (arXiv:2407.21783, §3.3.2).
    """
    p, vv = np.asarray(pp), np.asarray(interleave)
    each = (first % vv == 0) & (last % vv == 0) & ((p <= 2) | (middle % vv == 0))
    return (vv == 1) | np.where(slots, middle % vv == 0, each)


def _allowed_ends(L, p, other, fixed_name):
    """The values one end stage may take with the other fixed, as text for an error."""
    k = p - 2 if other is not None else p - 1
    o = 0 if other is None else other
    if k == 0:
        ok = [L - o] if L - o >= 1 else []
    else:
        # the end holds n = L - o - k j with j >= 1 layers on each middle stage
        j_max = (L - o - 1) // k
        js = list(range(j_max, 0, -1))
        if len(js) > 12:
            js = js[:6] + [None] + js[-6:]
        ok = [L - o - k * j if j is not None else "..." for j in js]
    shown = ", ".join(map(str, ok)) or "none"
    return f"{shown} (with {fixed_name}={o})" if other is not None else shown


def _split_error(L, p, fst, lst, f, l, ok):
    """The InputError for the first layout whose stages cannot hold the layers as asked."""
    shape = np.broadcast(p, f, l, ok).shape
    i = np.flatnonzero(~np.broadcast_to(ok, shape))[0]
    pi = int(np.broadcast_to(p, shape).flat[i])
    if fst is None and lst is None:
        if pi > L:
            return v.InputError("pp", f"pp must be at most the layers ({L}), got pp={pi}")
        Lp = -(-L // pi)
        return v.InputError("pp", f"pp must leave at least one layer on the first and last "
                                  f"stages when the other stages hold ceil(layers / pp) = "
                                  f"{Lp} each ({L} layers), got pp={pi} ({pi * Lp - L} "
                                  f"layers short of {Lp} per stage): give "
                                  "first_stage_layers and last_stage_layers to split it "
                                  "otherwise")
    fi = None if fst is None else int(np.broadcast_to(fst, shape).flat[i])
    li = None if lst is None else int(np.broadcast_to(lst, shape).flat[i])
    name, other, oname = (("first_stage_layers", li, "last_stage_layers")
                          if fst is not None else
                          ("last_stage_layers", fi, "first_stage_layers"))
    got = fi if name == "first_stage_layers" else li
    middle = ("first + last must equal the layers" if pi == 2 and fst is not None
              and lst is not None else
              f"the other {pi - (fst is not None) - (lst is not None)} stage(s) must "
              "split the rest evenly, at least one layer each")
    return v.InputError(name, f"{name}={got} does not split {L} layers over pp={pi} "
                              f"({middle}); allowed: "
                              f"{_allowed_ends(L, pi, other, oname)}")


def _interleave_error(f, mid, l, slots, vv, inter_ok):
    """The InputError for the first layout whose stages cannot split into v chunks."""
    shape = np.broadcast(vv, f, mid, l, slots).shape
    i = np.flatnonzero(~np.broadcast_to(inter_ok, shape))[0]
    fi, mi, li, vi = (int(np.broadcast_to(x, shape).flat[i]) for x in (f, mid, l, vv))
    if bool(np.broadcast_to(slots, shape).flat[i]):
        return v.InputError("interleave", f"interleave must divide the {mi} layer slots "
                                          f"per pipeline stage (the first and last stages "
                                          f"count the embedding and the LM head as one "
                                          f"each), got interleave={vi}")
    return v.InputError("interleave", f"interleave must divide the layers of every "
                                      f"pipeline stage (first {fi}, middle {mi}, last "
                                      f"{li}), got interleave={vi}")


def pipeline_stage_layers(layers, pp, first_stage_layers=None, last_stage_layers=None,
                          interleave=1):
    r"""Transformer layers on the first, each middle, and the last pipeline stage.

    The first stage also holds the input embedding and the last the LM head (output
    projection, final norm, loss), so an uneven split gives them fewer layers
    (Megatron-Core's ``num_layers_in_first_pipeline_stage`` /
    ``num_layers_in_last_pipeline_stage``, the ``--decoder-first/last-pipeline-num-layers``
    flags).

    Automatic (neither given): every stage gets L' = ceil(l / p) layers and the deficit
    d = p L' - l is taken from the first and the last stage alternately, first first for
    the first two layers, then the last:

    .. math:: n_{mid} = L',\quad n_{first} = L' - \lceil d/2 \rceil,\quad
              n_{last} = L' - \lfloor d/2 \rfloor\quad (d \le 2);\qquad
              n_{first} = L' - \lfloor d/2 \rfloor,\quad
              n_{last} = L' - \lceil d/2 \rceil\quad (d \ge 3)

    (126 layers on 16 stages: 7, 14 x 8, 7; 70 on 12: 5, 10 x 6, 5; on an even split d = 0
    and every stage holds l/p). For d <= 2 this is Megatron-Core's
    ``account_for_embedding_in_pipeline_split`` (d = 1) and
    ``account_for_loss_in_pipeline_split`` (d = 2): the embedding and the LM head each fill
    one layer's slot. Beyond, the ends stay within one layer of each other and the odd
    layer goes to the last stage, which computes the LM head and the loss (and holds
    DeepSeek-V3's multi-token-prediction module): DeepSeek-V3's 61 layers on 16 stages split
    3, 14 x 4, 2 (Megatron-Bridge's DeepSeek-V3 recipe puts all three on the last stage
    with the MTP layer, 4, 14 x 4, 1 + MTP [3]; the first stage, which holds the most
    micro-batches in flight, is then the heaviest). No middle stage holds more than L', so
    the slowest stage is that of any split. An end left with no layer (13 layers on 8
    stages: 1, 6 x 2, 0) is refused: give the ends explicitly.

    Explicit: the given end stage(s) hold what is given and the other stages split the
    rest evenly, n_mid = (l - n_first - n_last) / (p - 2), which must be whole and >= 1
    (with p = 2, n_first + n_last = l; an end not given counts as a middle stage, as in
    Megatron-Core). p = 1 ignores both: the one stage holds l.

    With interleaving (v virtual chunks per stage), Megatron-Core's rules apply: given
    first/last, every stage's layer count must divide by v (``TransformerConfig.__post_init__``,
    "Uneven PP" checks); the automatic split with a deficit of 1 or 2 is its
    ``account_for_embedding_in_pipeline_split`` / ``account_for_loss_in_pipeline_split``
    (the embedding and the loss each take one layer's slot; ``get_num_layers_to_build`` in
    ``megatron/core/transformer/transformer_block.py``), which needs L' divisible by v; a
    larger automatic deficit follows the explicit rule. Activations and times treat each
    stage's chunks as n/v layers each (the one short chunk is not modelled apart).

    Parameters
    ----------
    layers : int
        l [-].
    pp : int or array
        p [-].
    first_stage_layers, last_stage_layers : int or array, optional
        n_first, n_last [-]; None: automatic.
    interleave : int or array
        v [-].

    Returns
    -------
    first, middle, last : int arrays
        Layers per stage [-] (all l when p = 1; with p = 2 there is no middle stage and
        ``middle`` is only a placeholder).

    References
    ----------
    .. [1] NVIDIA Megatron-LM (commit d98e8a6, 2026), megatron/core/transformer/
       transformer_config.py (``TransformerConfig.__post_init__``, uneven PP) and
       transformer_block.py (``get_num_layers_to_build``).
    .. [2] A. Grattafiori et al., "The Llama 3 Herd of Models", arXiv:2407.21783, §3.3.2
       (first and last stages one layer short: 126 layers on 16 stages).
    .. [3] NVIDIA-NeMo Megatron-Bridge (commit 067f987, 2026-08-22),
       src/megatron/bridge/recipes/deepseek/h100/deepseek_v3.py,
       ``_get_deepseek_v3_pipeline_layout`` ((16, 1): embedding + 4 decoder layers, 14 x 4,
       1 decoder layer + MTP + loss).
    """
    L = int(v.integer("layers", layers))
    p = v.integer("pp", pp)
    vv = v.integer("interleave", interleave)
    fst = None if first_stage_layers is None else v.integer("first_stage_layers",
                                                            first_stage_layers)
    lst = None if last_stage_layers is None else v.integer("last_stage_layers",
                                                           last_stage_layers)
    f, mid, l, ok, slots = _stage_layers(L, p, fst, lst)
    if not np.all(ok):
        raise _split_error(L, p, fst, lst, f, l, ok)
    inter_ok = _interleave_ok(p, f, mid, l, slots, vv)
    if not np.all(inter_ok):
        raise _interleave_error(f, mid, l, slots, vv, inter_ok)
    return f, mid, l


#: training stacks (:func:`memory_per_gpu` ``stack``): the one list,
#: :data:`llmcost.training.stacks.STACKS`; each holds memory as Megatron-Core does or as the
#: PyTorch FSDP2 stacks do (torchtitan, OLMo-core): :attr:`~llmcost.training.stacks.Stack.memory`
MEMORY_STACKS = stacks_mod.NAMES
#: bytes per parameter of the unsharded gradients FSDP2 accumulates across a pipeline's
#: micro-batches: the reduce dtype, FP32 in torchtitan's default mixed precision
#: (``mixed_precision_reduce = "float32"``), to which FSDP2 upcasts accumulated gradients
FSDP_ACCUMULATED_GRAD_BYTES = 4.0


#: the loss's bytes per logit at its peak, by implementation (:func:`loss_bytes_per_logit`)
LOSS_BYTES = {"fused": 4.0, "fp32": 12.0}
#: each stack's usual loss: Megatron-Core's fused vocab-parallel cross-entropy; the FSDP2
#: stacks' PyTorch cross-entropy on logits upcast to FP32 (torchtitan, Hugging Face)
STACK_LOSS = {name: st.loss for name, st in stacks_mod.STACKS.items()}


def loss_bytes_per_logit(loss="fused"):
    r"""Bytes per logit the cross-entropy loss holds at its peak, by implementation.

    .. math:: q_{loss} = 4 \ (\text{fused}), \qquad 12 \ (\text{fp32})

    "fused": a kernel that computes the softmax and its gradient in place over FP32
    logits (Megatron-Core's vocab-parallel cross-entropy, [1] §4.3's 4 s b V; flash-attn's
    fused cross-entropy in llm-foundry). "fp32": PyTorch's ``cross_entropy`` on logits
    upcast to FP32 (torchtitan's ``cross_entropy_loss``: ``pred.flatten(0, 1).float()``;
    Hugging Face's causal-LM loss): at the start of the backward the FP32 log-softmax saved
    for it (4 bytes), the FP32 gradient of its output (4) and the gradient it returns (4)
    are alive together, the BF16 logits having been freed.

    Parameters
    ----------
    loss : {"fused", "fp32"}

    Returns
    -------
    bytes : float
        q_loss [bytes per logit].

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, §4.3.
    .. [2] pytorch/torchtitan, torchtitan/components/loss.py (``cross_entropy_loss``);
       mosaicml/llm-foundry, ``loss_fn`` default "fused_crossentropy".
    """
    return LOSS_BYTES[v.choice("loss", loss, tuple(LOSS_BYTES))]


def pipelined_fsdp_bytes(stage_weight_bytes, pp=1, dp=1, zero_stage=3, stack="megatron",
                         weight_bytes=2.0, grad_bytes=FSDP_ACCUMULATED_GRAD_BYTES):
    r"""What PyTorch FSDP2 keeps unsharded through a pipelined step, per GPU.

    .. math::
        M_W = [\text{fsdp},\ p > 1,\ N_d > 1,\ z = 3]\ W_0, \qquad
        M_G = [\text{fsdp},\ p > 1,\ N_d > 1,\ z \ge 2]\ \frac{q_a}{q_w}\, W_0

    with W_0 the stage's 16-bit weights on the GPU unsharded (q_w bytes per parameter).
    Under pipeline parallelism the FSDP2 stacks do not reshard a stage's parameters after
    its forward ("to avoid per-microbatch all-gathers", torchtitan, OLMo-core), and
    PyTorch's pipeline stage runs every backward but the last with
    ``set_reshard_after_backward(False)`` and ``set_requires_gradient_sync(False)``: the
    whole stage stays gathered (M_W, in place of the per-layer ZeRO-3 working set) and its
    gradients accumulate unsharded in the reduce dtype (q_a, FP32 by default) until the last
    micro-batch reduce-scatters them (M_G). Megatron-Core's distributed optimizer and
    Megatron-FSDP keep neither: 0 for ``stack="megatron"``.

    Parameters
    ----------
    stage_weight_bytes : float or array
        W_0, the stage's weights on one GPU at q_w bytes per parameter, unsharded [bytes].
    pp, dp : int or array
        Pipeline stages p and the sharding group N_d [-].
    zero_stage : int or array
        z: 3 is FULL_SHARD, 2 SHARD_GRAD_OP (weights already whole) [-].
    stack : str
        Training stack (:data:`MEMORY_STACKS`); only a stack holding memory as FSDP2 does
        keeps the stage gathered.
    weight_bytes, grad_bytes : float
        q_w, q_a [bytes per parameter].

    Returns
    -------
    weights_bytes, grads_bytes : float or array
        M_W, M_G [bytes].

    References
    ----------
    .. [1] PyTorch, torch/distributed/pipelining/stage.py,
       ``_PipelineStageBase.backward_maybe_with_nosync`` (FSDP modules: no reshard after
       backward, no gradient sync before the last backward).
    .. [2] pytorch/torchtitan, torchtitan/models/llama3/parallelize.py ``apply_fsdp``
       (``reshard_after_forward = False`` when PP is enabled); allenai/OLMo-core the same.
    .. [3] PyTorch FSDP2 ``FSDPParam.to_accumulated_grad_if_needed`` (unsharded gradients
       accumulated in the reduce dtype).
    """
    st = stacks_mod.stack(v.choice("stack", stack, MEMORY_STACKS)).memory
    w0 = v.nonnegative("stage_weight_bytes", stage_weight_bytes)
    p = np.asarray(v.integer("pp", pp, minimum=1))
    d = np.asarray(v.integer("dp", dp, minimum=1))
    z = np.asarray(v.integer("zero_stage", zero_stage, minimum=0, maximum=3))
    on = (st == "fsdp") & (p > 1) & (d > 1)
    mw = np.where(on & (z >= 3), w0, 0.0)
    mg = np.where(on & (z >= 2), grad_bytes / weight_bytes * w0, 0.0)
    return v.result(mw), v.result(mg)


def zero3_working_set_bytes(layer_params, dp=1, zero_stage=3, weight_bytes=2.0,
                            grad_bytes=2.0, prefetch_layers=1):
    r"""Unsharded buffers ZeRO-3 / FSDP holds beside its shards, per GPU.

    .. math:: M_{Z3} = \left[(1 + n_{pf})\, q_w + q_g\right] \Psi_{layer}
              \quad (\text{stage 3 and } N_d > 1;\ 0 \text{ otherwise})

    The layer being computed is gathered whole (q_w bytes per parameter), the next one is
    prefetched (n_pf = 1: FSDP's default forward/backward prefetch, DeepSpeed's prefetch
    bucket), and during the backward a layer's gradients exist unsharded until its
    reduce-scatter completes (q_g). For a 146B GPT (12,288 wide, 1.81B per layer, no
    TP): (2 x 2 + 2) x 1.81e9 = 10.9 GB. Units are transformer layers: the embedding and
    LM head are gathered alone, outside the layer loop.

    Parameters
    ----------
    layer_params : float or array
        Psi_layer, parameters of one layer on this GPU (after tensor parallelism) [-].
    dp : int or array
        Sharding degree N_d [-]; with 1 nothing is sharded, nothing gathered.
    zero_stage : int or array
        0-3; only stage 3 gathers parameters.
    weight_bytes, grad_bytes : float
        q_w, q_g [bytes per parameter].
    prefetch_layers : int or array
        n_pf, layers gathered ahead [-].

    Returns
    -------
    bytes : float or array
        [bytes].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §5.3 (stage 3 materialises each
       layer's parameters only while it is computed).
    .. [2] Zhao et al. 2023, arXiv:2304.11277, §3.3-3.4 (FSDP units, prefetching, unsharded
       gradients before reduce-scatter).
    """
    psi = v.nonnegative("layer_params", layer_params)
    nd = v.integer("dp", dp)
    stage = v.integer("zero_stage", zero_stage, minimum=0, maximum=3)
    qw = v.nonnegative("weight_bytes", weight_bytes)
    qg = v.nonnegative("grad_bytes", grad_bytes)
    pf = v.nonnegative("prefetch_layers", prefetch_layers)
    on = (stage >= 3) & (nd > 1)
    return v.result(np.where(on, ((1.0 + pf) * qw + qg) * psi, 0.0))


def check_layout(model: ModelSpec, gpus, tp, pp, cp, interleave, seq_len,
                 first_stage_layers=None, last_stage_layers=None):
    """Validate a parallel layout; raise InputError naming the first parameter at fault.

    Parameters
    ----------
    model : ModelSpec
    gpus, tp, pp, cp, interleave : int or array
        Layout [-]: t must divide the heads (and shard or replicate the KV heads), p must
        split the layers (:func:`pipeline_stage_layers`: evenly, automatically balanced, or
        as given), v every stage's layers, c the sequence, and t p c the GPUs.
    seq_len : int
        [tokens].
    first_stage_layers, last_stage_layers : int or array, optional
        See :func:`pipeline_stage_layers`.

    Returns
    -------
    gpus, tp, pp, cp, interleave : int arrays
        Validated [-].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §2 (the layout's divisibility rules).
    """
    gpus = v.integer("gpus", gpus)
    tp = v.integer("tp", tp)
    pp = v.integer("pp", pp)
    cp = v.integer("cp", cp)
    vv = v.integer("interleave", interleave)
    v.divides("tp", tp, "heads", model.heads)
    # TP shards KV heads, or replicates them when TP exceeds their number (Megatron GQA).
    kv_ok = (model.kv_heads % tp == 0) | (tp % model.kv_heads == 0)
    if not np.all(kv_ok):
        bad = np.broadcast_to(tp, np.shape(kv_ok))[~kv_ok].flat[0]
        raise v.InputError("tp", f"tp must divide kv_heads ({model.kv_heads}) or be a multiple "
                                 f"of it, got tp={int(bad)}")
    pipeline_stage_layers(model.layers, pp, first_stage_layers, last_stage_layers, vv)
    v.divides("cp", cp, "seq_len", seq_len)
    v.multiple_of("gpus", gpus, "tp x pp x cp", tp * pp * cp)
    return gpus, tp, pp, cp, vv


def check_expert_layout(model: ModelSpec, gpus, tp, pp, cp, ep=1, etp=1):
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


def moe_ffn_activation_bytes(seq_len, micro_batch, hidden, experts, top_k, expert_ffn_hidden,
                             shared_ffn_hidden=0, tp=1, cp=1, etp=1, gated=True,
                             capacity_factor=1.0, recompute_modules=(), linear_input_bytes=2.0,
                             probs_at="combine", sequence_parallel=True):
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
    seq_len, micro_batch : int or array
        s [tokens], b [sequences].
    hidden, experts, top_k, expert_ffn_hidden : int or array
        h, E, k, f_e [-].
    shared_ffn_hidden : int or array
        f_s [-].
    tp, cp, etp : int or array
        t, c, t_e [-].
    gated : bool
    capacity_factor : float or array
        c_f >= 1: tokens the busiest expert rank holds over the mean [-].
    recompute_modules : str or sequence of str
        Named modules recomputed ("layernorm", "moe_act", "shared_experts", "moe" act here).
    linear_input_bytes : float or array
        q [bytes] (:func:`activation_bytes_per_layer`).
    probs_at : {"combine", "activation"}
        Where the router's probabilities scale the experts' work (:data:`MOE_PROBS_AT`).
    sequence_parallel : bool or array
        Whether the norm output the router keeps is sharded over t (as the routed tokens are).

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
    mods = check_recompute_modules(recompute_modules, moe=True, shared_experts=True)
    v.choice("probs_at", probs_at, MOE_PROBS_AT)
    s = v.integer("seq_len", seq_len)
    b = v.integer("micro_batch", micro_batch)
    h = v.integer("hidden", hidden)
    E = v.integer("moe_experts", experts)
    k = v.integer("moe_top_k", top_k)
    fe = v.integer("moe_ffn_hidden", expert_ffn_hidden)
    fs = v.integer("moe_shared_ffn_hidden", shared_ffn_hidden, minimum=0)
    t = v.integer("tp", tp)
    c = v.integer("cp", cp)
    te = v.integer("etp", etp)
    cf = v.in_range("capacity_factor", capacity_factor, 1.0, 16.0)
    lin = _linear_input_bytes(linear_input_bytes)
    sp_div = np.where(v.boolean("sequence_parallel", sequence_parallel), t, 1)
    act_in = np.where(v.boolean("gated", gated), 4.0, 2.0)
    tokens = s * b / c
    whole = "moe" in mods
    combine = 2.0 * h if probs_at == "combine" else 4.0
    copy = lin * h + (act_in * fe + lin * fe * ("moe_act" not in mods)) / te + combine
    routed = 0.0 if whole else tokens / t * (4.0 * E + k * cf * copy)
    shared_kept = not whole and "shared_experts" not in mods
    shared = tokens * (act_in + lin) * fs / t * shared_kept
    # the FFN input beyond the dense FFN's q h: the router's BF16 copy (with q < 2)
    fc1_copy = np.where(fs > 0, lin * h, 0.0) * shared_kept
    router = np.where(lin < 2.0, 2.0 * h + fc1_copy - lin * h, 0.0) * ("layernorm" not in mods)
    return v.result(routed + shared + tokens * router / sp_div)


def layer_activation_bytes(model: ModelSpec, seq_len=None, micro_batch=1, tp=1, cp=1, etp=1,
                           sequence_parallel=False, recompute="none", flash_attention=True,
                           recompute_modules=(), linear_input_bytes=2.0, moe_capacity_factor=1.0,
                           moe_probs_at="combine"):
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
    sequence_parallel, flash_attention : bool or array
    recompute : {"none", "selective", "full"} or array of these names
    recompute_modules : str or sequence of str
        Named modules recomputed (:data:`llmcost.training.recompute.RECOMPUTE_MODULES`),
        checked against the model.
    linear_input_bytes : float or array
        q, bytes per cached linear-input element [bytes].
    moe_capacity_factor : float or array
        c_f [-] (:func:`moe_ffn_activation_bytes`).
    moe_probs_at : {"combine", "activation"}

    Returns
    -------
    bytes : float or array
        Mean activation bytes per layer per micro-batch per GPU [bytes].

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, §4.1, Table 2.
    .. [2] DeepSeek-AI, arXiv:2412.19437, §2.1, §3.2.3, §3.3.3.
    """
    mods = check_recompute_modules(recompute_modules, model.attention, model.is_moe,
                                   model.moe_shared_ffn_hidden > 0)
    s = model.seq_len if seq_len is None else v.integer("seq_len", seq_len)
    b = v.integer("micro_batch", micro_batch)
    t = v.integer("tp", tp)
    c = v.integer("cp", cp)
    rec = v.choices("recompute", recompute, RECOMPUTE_MODES)
    sp = v.boolean("sequence_parallel", sequence_parallel)
    flash = v.boolean("flash_attention", flash_attention)
    lin = _linear_input_bytes(linear_input_bytes)
    h = model.hidden
    dense_mods = tuple(m for m in mods if m in ("core_attn", "layernorm", "mlp"))
    kv_act, hd_act = model.attention_shape
    dense = activation_bytes_per_layer(s, b, h, model.heads, t, c, kv_act, model.ffn_hidden,
                                       model.gated_ffn, hd_act, model.dropout, sp, rec, flash,
                                       dense_mods, lin)
    tokens = s / c * b
    sp_div = np.where(sp, t, 1)
    drop = float(model.dropout)
    if model.attention == "mla":
        attn_mods = tuple(m for m in mods if m in ("core_attn", "layernorm", "mla_up_proj"))
        attn = mla_attention_activation_bytes(
            s, b, h, model.heads, model.q_lora_rank, model.kv_lora_rank, model.head_dim,
            model.qk_rope_head_dim, model.v_head_dim, t, c, model.dropout, sp, rec, flash,
            attn_mods, lin)
        dense = attn + tokens * _ffn_block(h, model.ffn_hidden, t, sp_div, drop,
                                           model.gated_ffn, mods, lin)
    else:
        d = hd_act
        attn = tokens * _gqa_attention_block(s, h, model.heads, t, model.heads * d,
                                             kv_act * d / np.minimum(t, kv_act), sp_div, drop,
                                             flash, rec, mods, lin)
    per_layer = dense
    if model.is_moe:
        moe_mods = tuple(m for m in mods if m in ("layernorm", "moe_act", "shared_experts",
                                                  "moe"))
        block = moe_ffn_activation_bytes(
            s, b, h, model.moe_experts, model.moe_top_k, model.moe_ffn_hidden,
            model.moe_shared_ffn_hidden, t, c, etp, model.gated_ffn, moe_capacity_factor,
            moe_mods, lin, moe_probs_at, sp)
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


def op_sac_bytes_per_token(hidden, heads, d_q, d_kv_gpu, ffn_hidden, gated_ffn=True, tp=1,
                           sequence_parallel=False):
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


def cached_linear_input_bytes(precision="bf16", activation_precision=None):
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



def stage_parameters(model: ModelSpec, stage_layers, pp=1, stage="first"):
    r"""Parameters a pipeline stage holds, before tensor or expert parallelism.

    .. math::
        P_{first} = n P_l + P_{emb} + [p = 1]\,(P_{out} + P_{norm}),\qquad
        P_{mid} = n P_l,\qquad
        P_{last} = n P_l + P_{out} + P_{norm} + [p = 1]\,P_{emb}

    P_l per layer, P_norm the final norm (2h LayerNorm, h RMSNorm). Tied embeddings
    (P_out = P_emb) count once on a single stage; a pipeline's last stage keeps its own
    copy of the tied matrix for the LM head, as Megatron does.

    Parameters
    ----------
    model : ModelSpec
        Architecture.
    stage_layers : int or array
        n, transformer layers on the stage [-].
    pp : int or array
        Pipeline-parallel size p [-].
    stage : {"first", "middle", "last"}

    Returns
    -------
    params : int or array
        [-].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §2.2 (stages of layers; the embedding on
       the first stage, the output layer on the last).
    """
    v.choice("stage", stage, STAGES)
    n = v.integer("stage_layers", stage_layers, minimum=0)
    pp = v.integer("pp", pp)
    final_norm = 2 * model.hidden if model.norm == "layernorm" else model.hidden
    untied_out = model.output_params * (0 if model.tied_embeddings else 1)
    body = n * model.layer_params
    if stage == "first":
        return v.result(body + model.embedding_params
                        + np.where(pp == 1, untied_out + final_norm, 0))
    if stage == "middle":
        return v.result(body)
    return v.result(body + np.where(pp == 1, model.embedding_params + untied_out,
                                    model.output_params) + final_norm)


def _layer_params_per_gpu(model: ModelSpec, tp, ep, etp):
    """One layer's parameters on a GPU: routed experts over e t_e, the rest over t."""
    return (model.layer_params - model.expert_layer_params) / tp \
        + model.expert_layer_params / (ep * etp)


def stage_model_state_bytes(model: ModelSpec, stage_params, stage_layers, tp=1, dp=1, ep=1,
                            etp=1, expert_dp=1, zero_stage=0, optimizer="adam",
                            optimizer_moments="fp32"):
    r"""Weights, gradients and optimizer states of a pipeline stage per GPU, full training.

    .. math::
        (W, G, O) = Z\!\left(\frac{P - n P_e}{t},\ N_d\right)
                  + Z\!\left(\frac{n P_e}{e\, t_e},\ N_{ed}\right)

    Z is :func:`model_state_bytes` (ZeRO stages 0-3), P the stage's parameters
    (:func:`stage_parameters`), P_e a layer's routed-expert parameters (0 for a dense
    model), N_d = d c the data-parallel group (Megatron's distributed optimizer spans
    DP x CP) and N_ed = gpus / (p e t_e) the expert data-parallel group.

    Parameters
    ----------
    model : ModelSpec
        Architecture.
    stage_params : int or array
        P [-].
    stage_layers : int or array
        n [-].
    tp, ep, etp : int or array
        t, e, t_e [-].
    dp : int or array
        N_d, sharding group of the non-expert states [-].
    expert_dp : int or array
        N_ed [-] (:func:`check_expert_layout`).
    zero_stage : int or array
        0-3.
    optimizer, optimizer_moments
        See :func:`model_state_bytes`.

    Returns
    -------
    weights, grads, optimizer, expert_weights : float or array
        Bytes per GPU [bytes]; ``expert_weights`` is the routed experts' part of ``weights``.

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §5.
    .. [2] Megatron-Core documentation, "Mixture of Experts" (expert data parallelism).
    """
    experts = np.asarray(stage_layers) * model.expert_layer_params
    w, g, o = model_state_bytes((np.asarray(stage_params) - experts) / tp, dp, zero_stage,
                                optimizer, optimizer_moments)
    if not model.is_moe:
        return w, g, o, 0.0
    we, ge, oe = model_state_bytes(experts / (ep * etp), expert_dp, zero_stage, optimizer,
                                   optimizer_moments)
    return w + we, g + ge, o + oe, we


def stage_adapter_state_bytes(model: ModelSpec, stage_params, stage_layers, tp=1, dp=1, ep=1,
                              etp=1, zero_stage=0, optimizer="adam", optimizer_moments="fp32",
                              finetune="lora", lora_rank=16, lora_targets="all",
                              qlora_16bit_embeddings=True):
    r"""Weights, gradients and optimizer states of a pipeline stage per GPU, LoRA/QLoRA.

    The base model is frozen (no gradients or optimizer states); the adapters are trained:

    .. math::
        (W, G, O) = Z\!\left(\frac{n}{l} \frac{P_{LoRA}}{t},\ N_d\right)
                    + \left(\frac{q_f\, \Psi}{N_d^{[Z3]}},\ 0,\ 0\right),\qquad
        \Psi = \frac{P - n P_e}{t} + \frac{n P_e}{e\, t_e}

    Z is :func:`model_state_bytes`, P_LoRA :func:`lora_parameter_count`, q_f the frozen
    bytes per parameter (:data:`FROZEN_BYTES_PER_PARAM`: 2 for LoRA, NF4 for QLoRA), and
    N_d^[Z3] = N_d under ZeRO-3, else 1. QLoRA with 16-bit embeddings quantizes the
    transformer blocks only (n P_l / t parameters) and keeps the rest at 2 bytes.

    Parameters
    ----------
    model : ModelSpec
        Architecture.
    stage_params, stage_layers : int or array
        P, n [-] (:func:`stage_parameters`).
    tp, dp, ep, etp : int or array
        t, N_d = d c, e, t_e [-].
    zero_stage : int or array
        0-3.
    optimizer, optimizer_moments
        See :func:`model_state_bytes`.
    finetune : {"lora", "qlora"}
    lora_rank, lora_targets
        See :func:`lora_parameter_count`.
    qlora_16bit_embeddings : bool
        QLoRA: embeddings, LM head and final norm kept in 16 bits, as QLoRA's reference
        code does (bitsandbytes replaces the blocks' linear layers).

    Returns
    -------
    weights, grads, optimizer : float or array
        Bytes per GPU [bytes].

    References
    ----------
    .. [1] Hu et al. 2021, arXiv:2106.09685, §4.
    .. [2] Dettmers et al. 2023, arXiv:2305.14314, §3.
    """
    v.choice("finetune", finetune, tuple(FROZEN_BYTES_PER_PARAM))
    adapters = lora_parameter_count(model.layers, model.hidden, model.heads, lora_rank,
                                    model.kv_heads, model.ffn_hidden, model.gated_ffn,
                                    model.head_dim, lora_targets)
    n = np.asarray(stage_layers)
    experts = n * model.expert_layer_params
    psi = (np.asarray(stage_params) - experts) / tp + experts / (ep * etp)
    w_a, g, o = model_state_bytes(adapters * n / model.layers / tp, dp, zero_stage, optimizer,
                                  optimizer_moments)
    frozen = FROZEN_BYTES_PER_PARAM[finetune] * psi
    if finetune == "qlora" and qlora_16bit_embeddings:
        blocks = n * model.layer_params / tp
        frozen = (FROZEN_BYTES_PER_PARAM["qlora"] * blocks
                  + FROZEN_BYTES_PER_PARAM["lora"] * (psi - blocks))
    return w_a + frozen / np.where(np.asarray(zero_stage) >= 3, dp, 1), g, o


def stage_zero3_working_bytes(model: ModelSpec, stage_layers, tp=1, dp=1, ep=1, etp=1,
                              zero_stage=0, optimizer="adam", finetune="full"):
    r"""ZeRO-3 / FSDP working set of a pipeline stage per GPU.

    .. math:: M_{Z3} = \left[(1 + n_{pf})\, q_w + q_g\right] \Psi_{layer},\qquad
              \Psi_{layer} = \frac{P_l - P_e}{t} + \frac{P_e}{e\, t_e}

    (:func:`zero3_working_set_bytes`; 0 on a stage without layers). Full training gathers
    the optimizer's 16-bit weights and gradients (q_w, q_g from
    :data:`OPTIMIZER_BYTES_PER_PARAM`); LoRA/QLoRA gathers the frozen base weights
    (:data:`FROZEN_BYTES_PER_PARAM`) and has no base gradients (q_g = 0).

    Parameters
    ----------
    model : ModelSpec
        Architecture.
    stage_layers : int or array
        n [-].
    tp, dp, ep, etp : int or array
        t, sharding group N_d = d c, e, t_e [-].
    zero_stage : int or array
        0-3.
    optimizer : {"adam", "adam-8bit", "sgd", "adam-fp32"}
    finetune : {"full", "lora", "qlora"}

    Returns
    -------
    bytes : float or array
        [bytes].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §5.3.
    .. [2] Zhao et al. 2023, arXiv:2304.11277, §3.3-3.4.
    """
    v.choice("finetune", finetune, FINETUNE_MODES)
    layer = np.where(np.asarray(stage_layers) > 0, _layer_params_per_gpu(model, tp, ep, etp), 0.0)
    if finetune == "full":
        qw, qg, _ = OPTIMIZER_BYTES_PER_PARAM[optimizer]
    else:
        qw, qg = FROZEN_BYTES_PER_PARAM[finetune], 0.0
    return zero3_working_set_bytes(layer, dp, zero_stage, qw, qg)


def stage_fp8_weight_bytes(model: ModelSpec, stage_layers, tp=1, ep=1, etp=1, zero_stage=0,
                           precision="bf16", generation="hopper"):
    r"""FP8/MXFP8 copies of a pipeline stage's GEMM weights per GPU, beside its BF16 weights.

    .. math:: W_8 = n'\, P_{mm}\, q_8,\qquad n' = \min(n, 1)\ \text{under ZeRO-3, else } n

    P_mm the GEMM parameters of a layer per GPU (:func:`llmcost.training.flops.
    matmul_params_per_layer` / t for a dense model; the layer's parameters with routed
    experts over e t_e for MoE) and q_8 the bytes of the copies
    (:func:`llmcost.training.precision.fp8_weight_copy_bytes`: Hopper also keeps a
    transposed copy, Blackwell does not). ZeRO-3 gathers and quantizes one layer at a time.
    0 where every GEMM runs BF16.

    Parameters
    ----------
    model : ModelSpec
        Architecture.
    stage_layers : int or array
        n [-].
    tp, ep, etp : int or array
        t, e, t_e [-].
    zero_stage : int or array
        0-3.
    precision : {"bf16", "fp8", "mxfp8"} or array of these names
    generation : str
        GPU generation ("hopper", "blackwell", ...).

    Returns
    -------
    bytes : float or array
        [bytes].

    References
    ----------
    .. [1] NVIDIA Transformer Engine documentation, "Low precision training: Performance
       Considerations" (Memory usage: FP8 weight copies).
    """
    prec = v.choices("precision", precision, PRECISIONS)
    if not np.any(prec != "bf16"):
        return 0.0
    if model.is_moe:
        mm_gpu = _layer_params_per_gpu(model, tp, ep, etp)
    else:
        mm_gpu = matmul_params_per_layer(model.hidden, model.heads, model.kv_heads,
                                         model.ffn_hidden, model.gated_ffn, model.head_dim) / tp
    n = np.asarray(stage_layers)
    held = np.where(np.asarray(zero_stage) >= 3, np.minimum(n, 1), n)
    return fp8_weight_copy_bytes(held * mm_gpu, prec, generation)


def stage_activation_bytes(model: ModelSpec, layer_bytes, stage_layers, seq_len, micro_batch=1,
                           tp=1, cp=1, pp=1, num_microbatches=None, interleave=1,
                           stage="first", schedule="1f1b", recompute_bytes=0.0,
                           loss_bytes=4.0):
    r"""Activations a pipeline stage holds at its peak, per GPU.

    .. math::
        M_{act} = \bar M\, L_{inflight} + [\text{first} \lor p = 1]\,\frac{L_{inflight}}{n}
                  \frac{s b h}{c\, t}[\text{dropout}]
                  + \max\left([\text{last} \lor p = 1]\,\frac{q_{loss} s b V}{c\, t},\;
                  M_{rc}\right)

    M̄ one layer's activations per micro-batch (:func:`layer_activation_bytes`: recompute
    variant, named modules, FP8-cached inputs), L_inflight the layers' worth of micro-batches
    the schedule keeps (:func:`inflight_layers`); the first stage adds the embedding's
    dropout mask (1 byte) for each micro-batch in flight, the last the loss's logits, q_loss
    bytes each (:func:`loss_bytes_per_logit`: 4, FP32, for a fused loss, [1] §4.3);
    without pipelining (p = 1) the one stage, asked for as "first" or
    "last", holds both. M_rc is what a recomputed layer rebuilds for its own backward, one
    layer and one micro-batch at a time (full recomputation: the layer's activations
    without recomputation less the input it kept, [2]); the loss's logits are freed before
    the first layer's backward, so the two peaks do not add.

    Parameters
    ----------
    model : ModelSpec
        Architecture.
    layer_bytes : float or array
        M̄ [bytes].
    stage_layers : int or array
        n [-].
    seq_len, micro_batch : int or array
        s [tokens], b [sequences].
    tp, cp, pp, interleave : int or array
        t, c, p, v [-].
    num_microbatches : int or array, optional
        m [-] (:func:`inflight_layers`).
    stage : {"first", "middle", "last"}
    schedule : {"1f1b", "gpipe"}
    recompute_bytes : float or array
        M_rc [bytes] (:func:`recompute_working_bytes`); 0 without recomputation.
    loss_bytes : float
        q_loss [bytes per logit] (:func:`loss_bytes_per_logit`).

    Returns
    -------
    bytes : float or array
        [bytes].

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, §4.2.3 (Eq. 5), §4.3.
    .. [2] Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost",
       arXiv:1604.06174, §3 (a recomputed segment's activations are rebuilt for its
       backward, one segment at a time).
    """
    held = inflight_layers(model.layers, pp, num_microbatches, interleave, stage, schedule,
                           stage_layers)
    act = layer_bytes * held
    rc = v.nonnegative("recompute_bytes", recompute_bytes)
    if stage == "middle":
        return v.result(act + rc)
    tokens = seq_len / cp * micro_batch
    # with p = 1 the one stage is both ends: embedding mask and logits
    single = np.asarray(pp) == 1
    embed_mask = np.where(model.dropout, 1.0, 0.0) * tokens * model.hidden / tp
    logits = v.positive("loss_bytes", loss_bytes) * tokens * model.vocab / tp
    mask = np.where(single | (stage == "first"), embed_mask * held / stage_layers, 0.0)
    return v.result(act + mask + np.maximum(np.where(single | (stage == "last"), logits, 0.0),
                                            rc))


def recompute_working_bytes(none_bytes, kept_bytes, recompute="none", recompute_modules=()):
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


def rebuilds_whole_layers(recompute="none", recompute_modules=()):
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


def _stage_memory(model, stage, n, rank, c):
    """One pipeline stage's :class:`MemoryBreakdown` (``c``: :func:`memory_per_gpu`'s
    validated layout and options)."""
    params = stage_parameters(model, n, c["pp"], stage)
    par = dict(tp=c["tp"], dp=c["dp"], ep=c["ep"], etp=c["etp"], zero_stage=c["zero_stage"],
               optimizer=c["optimizer"], optimizer_moments=c["optimizer_moments"])
    if c["finetune"] == "full":
        w, g, o, ew = stage_model_state_bytes(model, params, n, expert_dp=c["edp"], **par)
    else:
        w, g, o = stage_adapter_state_bytes(model, params, n, finetune=c["finetune"],
                                            lora_rank=c["lora_rank"],
                                            lora_targets=c["lora_targets"],
                                            qlora_16bit_embeddings=c["qlora_16bit_embeddings"],
                                            **par)
        ew = 0.0
    act = stage_activation_bytes(model, c["layer_bytes"], n, c["seq_len"], c["micro_batch"],
                                 c["tp"], c["cp"], c["pp"], c["m"], c["interleave"], stage,
                                 c["schedule"], c["recompute_bytes"], c["loss_bytes"])
    z3 = stage_zero3_working_bytes(model, n, c["tp"], c["dp"], c["ep"], c["etp"],
                                   c["zero_stage"], c["optimizer"], c["finetune"])
    fsdp_memory = stacks_mod.stack(c["stack"]).memory == "fsdp"
    if fsdp_memory and c["finetune"] == "full" and np.any(np.asarray(c["pp"]) > 1):
        # FSDP2 under PP keeps the stage gathered and its gradients unsharded (pipelined_
        # fsdp_bytes): the whole stage replaces the per-layer working set, and the
        # accumulated gradients join it as unsharded buffers (the optimizer never reads
        # them: the step's optimizer time counts W + G + O only)
        w0, *_ = stage_model_state_bytes(model, params, n, tp=c["tp"], dp=1, ep=c["ep"],
                                         etp=c["etp"], expert_dp=1, zero_stage=0,
                                         optimizer=c["optimizer"],
                                         optimizer_moments=c["optimizer_moments"])
        mw, mg = pipelined_fsdp_bytes(w0, c["pp"], c["dp"], c["zero_stage"], "fsdp")
        z3 = np.where(mw > 0, mw, z3) + mg
    w8 = stage_fp8_weight_bytes(model, n, c["tp"], c["ep"], c["etp"], c["zero_stage"],
                                c["precision"], c["generation"])
    allocated = w + g + o + act + w8 + z3
    over = framework_overhead_bytes(allocated, c["context_bytes"], c["fragmentation"])
    return MemoryBreakdown(w, g, o, act, over, allocated + over, peak_stage=rank,
                           peak_stage_layers=n, fp8_weights_bytes=w8, zero3_working_bytes=z3,
                           expert_weights_bytes=ew)


def _peak_stage(first, last, middle, pp):
    """The breakdown of the stage with the largest total, element by element. Ties go to
    the first listed: an even pipeline's middle stage never exceeds its first."""
    totals = np.stack(np.broadcast_arrays(first.total_bytes, last.total_bytes,
                                          np.where(pp > 2, middle.total_bytes, -np.inf)))
    k = np.argmax(totals, axis=0)
    return MemoryBreakdown(*[v.result(np.choose(k, np.broadcast_arrays(f, l, m)))
                             for f, l, m in zip(first, last, middle)])


def _check_recipe(model, finetune, precision, activation_precision, moe_probs_at,
                  optimizer_moments, recompute_modules, lora_targets):
    """(precision, q, recompute modules) of :func:`memory_per_gpu`, validated in its order."""
    v.choice("finetune", finetune, FINETUNE_MODES)
    prec = v.choices("precision", precision, PRECISIONS)
    lin = cached_linear_input_bytes(prec, activation_precision)
    v.choice("moe_probs_at", moe_probs_at, MOE_PROBS_AT)
    v.choice("optimizer_moments", optimizer_moments, OPTIMIZER_MOMENTS)
    mods = check_recompute_modules(recompute_modules, model.attention, model.is_moe,
                                   model.moe_shared_ffn_hidden > 0)
    if np.any(prec != "bf16") and finetune != "full":
        raise v.InputError("precision", f"precision {str(prec[prec != 'bf16'].flat[0])!r} is "
                                        f"modelled for full training only, not "
                                        f"finetune={finetune!r} (frozen {finetune} weights are "
                                        "not quantized to FP8 here); use 'bf16'")
    v.choice("lora_targets", lora_targets, LORA_TARGETS)
    return prec, lin, mods


def _checked_layout(model, s, gpus, tp, pp, cp, interleave, first_stage_layers,
                    last_stage_layers, ep, etp, micro_batch, global_batch):
    """The validated layout as :func:`_stage_memory` reads it (``dp`` the ZeRO group d c,
    ``m`` the micro-batches per iteration or None), and the first, middle and last stages'
    layers."""
    gpus, tp, pp, cp, vv = check_layout(model, gpus, tp, pp, cp, interleave, s,
                                        first_stage_layers, last_stage_layers)
    layers = _stage_layers(model.layers, pp,
                           None if first_stage_layers is None else np.asarray(first_stage_layers),
                           None if last_stage_layers is None else np.asarray(last_stage_layers))
    ep, etp, edp = check_expert_layout(model, gpus, tp, pp, cp, ep, etp)
    b = v.integer("micro_batch", micro_batch)
    dp = gpus // (tp * pp * cp)
    m = None
    if global_batch is not None:
        gb_arr = v.integer("global_batch", global_batch)
        v.multiple_of("global_batch", gb_arr, "micro_batch x dp", b * dp)
        m = gb_arr / (b * dp)
    return dict(pp=pp, tp=tp, cp=cp, dp=dp * cp, ep=ep, etp=etp, edp=edp, micro_batch=b, m=m,
                interleave=vv, seq_len=s), layers[:3]


def memory_per_gpu(model: ModelSpec, gpus, tp=1, pp=1, cp=1, zero_stage=0, micro_batch=1,
                   global_batch=None, recompute="none", sequence_parallel=False,
                   flash_attention=True, optimizer="adam", interleave=1, schedule="1f1b",
                   finetune="full", lora_rank=16, lora_targets="all", seq_len=None,
                   context_bytes=CONTEXT_BYTES, fragmentation=FRAGMENTATION,
                   qlora_16bit_embeddings=True, first_stage_layers=None,
                   last_stage_layers=None, precision="bf16",
                   generation="hopper", ep=1, etp=1,
                   moe_capacity_factor=1.0, recompute_modules=(), activation_precision=None,
                   optimizer_moments="fp32", moe_probs_at="combine",
                   stack="megatron", loss=None) -> MemoryBreakdown:
    r"""Peak memory per GPU of a training layout, by component: one function per term.

    For the first pipeline stage, the first middle one (r = 1: the most micro-batches in
    flight of any middle stage, and as many layers as any) and the last:

    .. math::
        M = \underbrace{W + G + O}_{\text{ZeRO over } N_d = d\,c} + W_8 + M_{Z3}
            + M_{act} + M_{overhead}

    W, G, O :func:`stage_model_state_bytes` (LoRA/QLoRA: :func:`stage_adapter_state_bytes`)
    of :func:`stage_parameters`; W_8 :func:`stage_fp8_weight_bytes`; M_Z3
    :func:`stage_zero3_working_bytes`; M_act :func:`stage_activation_bytes` of
    :func:`layer_activation_bytes` (inputs cached at :func:`cached_linear_input_bytes`);
    M_overhead :func:`framework_overhead_bytes`. On the fsdp stack with pipelining, the
    stage held gathered and its accumulated gradients replace M_Z3
    (:func:`pipelined_fsdp_bytes`). The largest stage is reported
    (``peak_stage``): 126 layers on 16 stages (7/8/7) peak on the second, 8 layers with 15
    micro-batches in flight. Not modelled: DualPipe's two parameter copies, FP8 parameter
    all-gather (no BF16 weight copy).

    Parameters
    ----------
    model : ModelSpec
        Architecture.
    gpus, tp, pp, cp, interleave : int or array
        GPUs; tensor-, pipeline-, context-parallel sizes; virtual chunks v per stage [-].
    zero_stage : int or array
        0-3; shards over d c GPUs, d = gpus / (t p c) (Megatron's distributed optimizer).
    micro_batch, global_batch : int or array
        b, B [sequences]; m = B / (b d) micro-batches (B None: m large).
    recompute : {"none", "selective", "full"} or array of these names
    sequence_parallel, flash_attention : bool or array
    optimizer, optimizer_moments
        See :func:`model_state_bytes`.
    schedule : {"1f1b", "gpipe"}
    finetune : {"full", "lora", "qlora"}
    lora_rank, lora_targets, qlora_16bit_embeddings
        See :func:`stage_adapter_state_bytes`.
    seq_len : int, optional
        [tokens]; default the model's.
    context_bytes, fragmentation
        See :func:`framework_overhead_bytes`.
    first_stage_layers, last_stage_layers : int or array, optional
        See :func:`pipeline_stage_layers`; None: balanced automatically.
    precision : {"bf16", "fp8", "mxfp8"} or array of these names
        GEMM precision, FP8/MXFP8 with ``finetune="full"`` only (the GPU is the caller's
        check: :func:`llmcost.training.precision.check_precision`).
    generation, ep, etp, moe_capacity_factor, moe_probs_at, activation_precision
        See :func:`stage_fp8_weight_bytes`, :func:`check_expert_layout`,
        :func:`moe_ffn_activation_bytes`, :func:`cached_linear_input_bytes`.
    recompute_modules : str or sequence of str
        :data:`llmcost.training.recompute.RECOMPUTE_MODULES`; "selective" implies
        "core_attn"; ignored where ``recompute="full"``.
    stack : str
        Training stack, :data:`MEMORY_STACKS` (:func:`pipelined_fsdp_bytes`; its usual loss, :data:`STACK_LOSS`).
    loss : {"fused", "fp32"}, optional
        The loss's implementation (:func:`loss_bytes_per_logit`); None: the stack's.

    Returns
    -------
    MemoryBreakdown
        Bytes per GPU [bytes]; ``.to_gb()`` in GB.

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §5.
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, §4, Table 2, Eq. 5.
    .. [3] DeepSeek-AI, arXiv:2412.19437, §3.2.3, §3.3.3 (recipes that fit DeepSeek-V3 in
       80 GB: recomputed modules, FP8-cached inputs, BF16 moments).
    """
    prec, lin, mods = _check_recipe(model, finetune, precision, activation_precision,
                                    moe_probs_at, optimizer_moments, recompute_modules,
                                    lora_targets)
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    c, (n_first, n_mid, n_last) = _checked_layout(model, s, gpus, tp, pp, cp, interleave,
                                                   first_stage_layers, last_stage_layers, ep,
                                                   etp, micro_batch, global_batch)
    c["layer_bytes"] = layer_activation_bytes(model, s, c["micro_batch"], c["tp"], c["cp"],
                                              c["etp"], sequence_parallel, recompute,
                                              flash_attention, mods, lin, moe_capacity_factor,
                                              moe_probs_at)
    c["recompute_bytes"] = 0.0
    if np.any(rebuilds_whole_layers(recompute, mods)):
        # the layer with nothing recomputed: what a layer-wide recompute rebuilds against
        # (a second activation count, paid only when some layout rebuilds whole layers)
        none = layer_activation_bytes(model, s, c["micro_batch"], c["tp"], c["cp"], c["etp"],
                                      sequence_parallel, "none", flash_attention, (), lin,
                                      moe_capacity_factor, moe_probs_at)
        c["recompute_bytes"] = recompute_working_bytes(none, c["layer_bytes"], recompute, mods)
    c.update(stack=v.choice("stack", stack, MEMORY_STACKS))
    c.update(loss_bytes=loss_bytes_per_logit(STACK_LOSS[c["stack"]] if loss is None else loss))
    c.update(zero_stage=zero_stage, optimizer=optimizer, optimizer_moments=optimizer_moments,
             finetune=finetune, lora_rank=lora_rank, lora_targets=lora_targets,
             qlora_16bit_embeddings=qlora_16bit_embeddings, schedule=schedule, precision=prec,
             generation=generation, context_bytes=context_bytes, fragmentation=fragmentation)
    first = _stage_memory(model, "first", n_first, 0, c)
    last = _stage_memory(model, "last", n_last, c["pp"] - 1, c)
    return _peak_stage(first, last, _stage_memory(model, "middle", n_mid, 1, c), c["pp"])


def seed_heuristic_memory_gb(model_size_b, num_gpus, tp_size, pp_size):
    r"""The ``estimate_memory`` heuristic of a cluster builder's guide [1], verbatim, for
    comparison. Not a model.

    .. math:: M = \frac{2P + 4P + 2P}{t} + \frac{12 P}{t\,p}\quad [\text{GB}, P \text{ in billions}]

    It divides weights, gradients and optimizer states by TP only (pipeline stages hold
    1/p of the layers, so they should divide by t p as well), counts 4 bytes of Adam state
    where mixed-precision Adam keeps 12 (fp32 master, momentum, variance), ignores data
    parallelism (``num_gpus`` is unused), and scales activations with parameters instead of
    sequence, batch and width. tests/training/test_memory.py shows where it lands against
    :func:`memory_per_gpu`.

    Parameters
    ----------
    model_size_b : float or array
        Parameters [billions].
    num_gpus, tp_size, pp_size : int or array
        As in [1] (``num_gpus`` unused, as there).

    Returns
    -------
    memory_gb : float or array
        [GB].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026),
       ``estimate_memory`` listing.
    """
    p = v.positive("model_size_b", model_size_b)
    v.integer("num_gpus", num_gpus)
    t = v.integer("tp_size", tp_size)
    pp = v.integer("pp_size", pp_size)
    return v.result(p * 2 / t + p * 4 / t + p * 2 / t + p * 12 / (t * pp))
