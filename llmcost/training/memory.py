"""Per-GPU memory of a training run, by component.

Model states (weights, gradients, optimizer states) follow ZeRO; activations follow
Korthikanti et al., generalised to grouped-query attention, gated FFNs and models without
dropout (each generalisation reduces to the paper's Table 2 for a GPT layer). Everything is
in bytes; GB in names means 1e9 bytes.

References
----------
.. [1] S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
   Models", SC'20, arXiv:1910.02054, §3.1 and §5 (Figure 1).
.. [2] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
   Models", MLSys 2023, arXiv:2205.05198, §4, Table 2, Eq. 5.
.. [3] D. Narayanan et al., SC'21, arXiv:2104.04473, §2.2 (schedules).
.. [4] E. Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", arXiv:2106.09685.
.. [5] T. Dettmers et al., "QLoRA: Efficient Finetuning of Quantized LLMs",
   arXiv:2305.14314, §3 (NF4, double quantization: 0.127 bits per parameter of constants).
.. [6] T. Dettmers et al., "8-bit Optimizers via Block-wise Quantization", arXiv:2110.02861.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import _validate as v
from .arch import ModelSpec
from .flops import RECOMPUTE_MODES, matmul_params_per_layer
from .precision import (PRECISIONS, fp8_activation_saving_bytes_per_layer, _layer_dims,
                        fp8_weight_copy_bytes)

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
ZERO_STAGES = (0, 1, 2, 3)
FINETUNE_MODES = ("full", "lora", "qlora")
LORA_TARGETS = ("qv", "attention", "all")
SCHEDULES = ("1f1b", "gpipe")

#: frozen base weights: 16-bit, or NF4 (4 bits) + double-quantised constants 0.127 bits [5].
FROZEN_BYTES_PER_PARAM = {"lora": 2.0, "qlora": (4 + 0.127) / 8}


def model_state_bytes(params, dp=1, zero_stage=0, optimizer="adam"):
    r"""Weights, gradients and optimizer states per GPU under ZeRO.

    .. math::
        M_0 = (2 + 2 + K)\Psi,\quad M_1 = 2\Psi + 2\Psi + \frac{K\Psi}{N_d},\quad
        M_2 = 2\Psi + \frac{(2 + K)\Psi}{N_d},\quad M_3 = \frac{(2 + 2 + K)\Psi}{N_d}

    with K = 12 for mixed-precision Adam (other optimizers by name change the three byte
    counts, not the sharding).

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

    Returns
    -------
    weights, grads, optimizer : float or array
        Bytes per GPU [bytes].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §5 and Figure 1 (Psi = 7.5B,
       N_d = 64: 120, 31.4, 16.6 and 1.88 GB).
    """
    v.choice("optimizer", optimizer, OPTIMIZERS)
    psi = v.nonnegative("params", params)
    nd = v.integer("dp", dp)
    stage = v.integer("zero_stage", zero_stage, minimum=0, maximum=3)
    bw, bg, bo = OPTIMIZER_BYTES_PER_PARAM[optimizer]
    weights = bw * psi / np.where(stage >= 3, nd, 1)
    grads = bg * psi / np.where(stage >= 2, nd, 1)
    opt = bo * psi / np.where(stage >= 1, nd, 1)
    return v.result(weights), v.result(grads), v.result(opt)


def activation_bytes_per_layer(seq_len, micro_batch, hidden, heads, tp=1, cp=1, kv_heads=None,
                               ffn_hidden=None, gated_ffn=False, head_dim=None, dropout=True,
                               sequence_parallel=False, recompute="none",
                               flash_attention=False):
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

    Returns
    -------
    bytes : float or array
        Activation bytes per layer per GPU [bytes].

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, §4.1-4.2, Table 2.
    """
    rec = v.choices("recompute", recompute, RECOMPUTE_MODES)
    s, b, h, a, t, c, kv, f, d, gated, sp = _layer_dims(
        seq_len, micro_batch, hidden, heads, tp, cp, kv_heads, ffn_hidden, gated_ffn,
        head_dim, sequence_parallel)
    drop = v.boolean("dropout", dropout)
    flash = v.boolean("flash_attention", flash_attention)

    d_q = a * d
    # Beyond t = kv_heads, Megatron replicates KV heads: each GPU keeps one head's K and V.
    d_kv_gpu = kv * d / np.minimum(t, kv)
    tokens = s / c * b
    replicated = 8.0 * h + 2.0 * h * drop
    ffn_inner = np.where(gated, 6.0, 4.0) * f
    sharded = (2.0 * d_q + 2.0 * d_q + ffn_inner) / t + 4.0 * d_kv_gpu
    scores = np.where(drop, 5.0, 2.0) * a * s / t
    scores = np.where((rec == "none") & ~flash, scores, 0.0)
    per_token = replicated / np.where(sp, t, 1) + sharded + scores
    per_token = np.where(rec == "full", 2.0 * h / np.where(sp, t, 1), per_token)
    return v.result(tokens * per_token)


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
    v.choice("stage", stage, ("first", "middle", "last"))
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


#: Share of allocated bytes the caching allocator loses to fragmentation [-]. One-sided
#: identification: every calibration run that ran without recomputation or offloading must
#: fit (benchmarks/validate.py prints each run's largest consistent value). Megatron-Bridge's
#: Llama 3.1 405B on GB200 (TP4 PP16 VP4, FP8) allows at most 2.9% and its Llama 3 70B on
#: GB300 (TP1 PP4 VP5, MXFP8) 2.1%; those recipes set PYTORCH_CUDA_ALLOC_CONF=
#: expandable_segments:True, which is what keeps fragmentation this low. The data give an
#: upper bound only: an untuned allocator can lose 5-10% (set ``fragmentation`` to what
#: ``torch.cuda.memory_reserved`` minus ``memory_allocated`` shows).
FRAGMENTATION = 0.02
#: CUDA context with cuBLAS/NCCL workspaces [bytes] (assumption, about 1 GB).
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
        """Components in GB (1e9 bytes), keys as in the CLI contract. ``weights_gb`` is all
        16-bit weights; ``expert_weights_gb`` the routed experts' part of it."""
        return {
            "weights_gb": self.weights_bytes / GB,
            "expert_weights_gb": self.expert_weights_bytes / GB,
            "fp8_weights_gb": self.fp8_weights_bytes / GB,
            "zero3_working_gb": self.zero3_working_bytes / GB,
            "grads_gb": self.grads_bytes / GB,
            "optimizer_gb": self.optimizer_bytes / GB,
            "activations_gb": self.activations_bytes / GB,
            "overhead_gb": self.overhead_bytes / GB,
            "total_gb": self.total_bytes / GB,
        }


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
        f, mid, l = Lp - (d + 1) // 2, Lp, Lp - d // 2
        # beyond one layer short at each end the automatic split is no longer Megatron-Core's
        # (and no longer obviously balanced): the user says what he runs
        ok = (f >= 1) & (d <= 2) & (p <= L)
        slots = np.ones(np.shape(ok), dtype=bool)
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
        fa, _, la, auto_ok, _ = _stage_layers(L, p)
        slots = auto_ok & (f == fa) & (l == la)
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


def pipeline_stage_layers(layers, pp, first_stage_layers=None, last_stage_layers=None,
                          interleave=1):
    r"""Transformer layers on the first, each middle, and the last pipeline stage.

    The first stage also holds the input embedding and the last the LM head (output
    projection, final norm, loss), so an uneven split gives them fewer layers
    (Megatron-Core's ``num_layers_in_first_pipeline_stage`` /
    ``num_layers_in_last_pipeline_stage``, the ``--decoder-first/last-pipeline-num-layers``
    flags).

    Automatic (neither given): every stage gets L' = ceil(l / p) layers and the deficit
    p L' - l is taken from the first and the last stage alternately, first first:

    .. math:: n_{mid} = L',\quad n_{first} = L' - \lceil d/2 \rceil,\quad
              n_{last} = L' - \lfloor d/2 \rfloor,\quad d = p L' - l \le 2

    (126 layers on 16 stages: 7, 14 x 8, 7; 70 on 12: 5, 10 x 6, 5; on an even split d = 0
    and every stage holds l/p). This is Megatron-Core's
    ``account_for_embedding_in_pipeline_split`` (d = 1) and
    ``account_for_loss_in_pipeline_split`` (d = 2): the embedding and the LM head each fill
    one layer's slot. A larger deficit (60 layers on 7 stages: d = 3) is refused: give the
    ends explicitly.

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
        shape = np.broadcast(p, f, l, ok).shape
        i = np.flatnonzero(~np.broadcast_to(ok, shape))[0]
        pi = int(np.broadcast_to(p, shape).flat[i])
        if fst is None and lst is None:
            if pi > L:
                raise v.InputError("pp", f"pp must be at most the layers ({L}), got pp={pi}")
            Lp = -(-L // pi)
            raise v.InputError("pp", f"pp must divide the layers ({L}) or leave the first "
                                     "and last stages at most one layer short (layers + 1 "
                                     f"or + 2 divisible by pp), got pp={pi} ({pi * Lp - L} "
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
        raise v.InputError(name, f"{name}={got} does not split {L} layers over pp={pi} "
                                 f"({middle}); allowed: "
                                 f"{_allowed_ends(L, pi, other, oname)}")
    inter_ok = _interleave_ok(p, f, mid, l, slots, vv)
    if not np.all(inter_ok):
        shape = np.broadcast(vv, f, mid, l, slots).shape
        i = np.flatnonzero(~np.broadcast_to(inter_ok, shape))[0]
        fi, mi, li, vi = (int(np.broadcast_to(x, shape).flat[i]) for x in (f, mid, l, vv))
        if bool(np.broadcast_to(slots, shape).flat[i]):
            raise v.InputError("interleave", f"interleave must divide the {mi} layer slots "
                                             f"per pipeline stage (the first and last stages "
                                             f"count the embedding and the LM head as one "
                                             f"each), got interleave={vi}")
        raise v.InputError("interleave", f"interleave must divide the layers of every "
                                         f"pipeline stage (first {fi}, middle {mi}, last "
                                         f"{li}), got interleave={vi}")
    return f, mid, l


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
                             capacity_factor=1.0):
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
    """
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
    inner = np.where(v.boolean("gated", gated), 6.0, 4.0)
    tokens = s * b / c
    routed = tokens / t * (4.0 * E + k * cf * (4.0 * h + inner * fe / te))
    shared = tokens * inner * fs / t
    return v.result(routed + shared)


def memory_per_gpu(model: ModelSpec, gpus, tp=1, pp=1, cp=1, zero_stage=0, micro_batch=1,
                   global_batch=None, recompute="none", sequence_parallel=False,
                   flash_attention=True, optimizer="adam", interleave=1, schedule="1f1b",
                   finetune="full", lora_rank=16, lora_targets="all", seq_len=None,
                   context_bytes=CONTEXT_BYTES, fragmentation=FRAGMENTATION,
                   qlora_16bit_embeddings=True, first_stage_layers=None,
                   last_stage_layers=None, precision="bf16",
                   generation="hopper", ep=1, etp=1,
                   moe_capacity_factor=1.0) -> MemoryBreakdown:
    r"""Peak memory per GPU of a training layout, by component.

    Pipeline stage r holds n_r layers (l/p on an even split; uneven splits from
    :func:`pipeline_stage_layers`); the first also the input embedding, the last the
    output projection and final norm (Megatron). For the first stage, the first middle
    stage (r = 1: the most micro-batches in flight of any middle stage, and as many
    layers as any) and the last:

    .. math::
        M = \underbrace{W + G + O}_{\text{ZeRO over } N_d = d\,c}
            + M_{act}(b)\, L_{inflight} + M_{overhead}

    with model states from :func:`model_state_bytes` applied to the stage's parameters / t,
    activations from :func:`activation_bytes_per_layer` times :func:`inflight_layers`, plus
    the embedding-dropout mask on the first stage and the fp32 logits/loss (4 s b V / t) on
    the last ([2] §4.3). The largest of the three is reported (``peak_stage`` gives its
    rank): on 126 layers over 16 stages (7/8/7) the second stage, with 8 layers and 15
    micro-batches in flight, outweighs the first. For LoRA/QLoRA the base model is
    frozen (16-bit or NF4 weights, no gradients or optimizer states); only adapter
    parameters carry weights, gradients and optimizer states.

    With FP8 or MXFP8 GEMMs ([4]) the stage also keeps quantized copies of its GEMM
    weights, W_8 = n_r P_mm / t x q bytes (:func:`llmcost.training.precision.
    fp8_weight_copy_bytes`; under ZeRO-3 only the layer being computed is gathered, so
    one layer's copies), and every layer saves its linear inputs quantized:

    .. math:: M_{act} = M_{act}^{BF16} - \Delta M_{FP8}

    (:func:`llmcost.training.precision.fp8_activation_saving_bytes_per_layer`).

    Parameters
    ----------
    model : ModelSpec
        Architecture.
    gpus, tp, pp, cp : int or array
        GPUs, tensor-, pipeline- and context-parallel sizes [-]; data parallel
        d = gpus / (t p c).
    zero_stage : int or array
        0-3; shards over d c GPUs (Megatron's distributed optimizer spans DP x CP).
    micro_batch : int or array
        b [sequences].
    global_batch : int or array, optional
        [sequences]; gives m = B / (b d) micro-batches per iteration. None: m is large.
    recompute : {"none", "selective", "full"}
    sequence_parallel, flash_attention : bool or array
    optimizer : {"adam", "adam-8bit", "sgd", "adam-fp32"}
    interleave : int or array
        Virtual pipeline chunks v (> 1: interleaved 1F1B).
    schedule : {"1f1b", "gpipe"}
    finetune : {"full", "lora", "qlora"}
    lora_rank : int
    lora_targets : {"qv", "attention", "all"}
    seq_len : int, optional
        Default: the model's.
    context_bytes, fragmentation
        See :func:`framework_overhead_bytes`.
    qlora_16bit_embeddings : bool
        QLoRA: keep the embeddings, LM head and final norm in 16 bits and quantise only
        the transformer blocks, as QLoRA's reference code does (bitsandbytes replaces the
        blocks' linear layers). False: everything NF4 (understates memory).
    first_stage_layers, last_stage_layers : int or array, optional
        Layers on the first and last pipeline stage; None: balanced automatically
        (:func:`pipeline_stage_layers`).
    precision : {"bf16", "fp8", "mxfp8"} or array of these names
        GEMM precision (:mod:`llmcost.training.precision`); FP8 and MXFP8 only with
        ``finetune="full"``. Which GPU may run it is checked by the caller
        (:func:`llmcost.training.precision.check_precision`).
    generation : str
        GPU generation ("hopper", "blackwell", ...): Hopper keeps a transposed FP8 copy,
        Blackwell does not.
    ep, etp : int or array
        Expert-parallel and expert tensor-parallel sizes (MoE models): the routed experts'
        weights, gradients and optimizer states are sharded over e t_e GPUs and their
        optimizer over the expert data-parallel group gpus / (p e t_e); the rest by t as
        for a dense model (:func:`check_expert_layout`).
    moe_capacity_factor : float or array
        Tokens the busiest expert rank holds over the mean [-]
        (:func:`moe_ffn_activation_bytes`).

    Returns
    -------
    MemoryBreakdown
        Bytes per GPU [bytes]; ``.to_gb()`` in GB.

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §5.
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, §4, Table 2, Eq. 5.
    .. [3] Dettmers et al. 2023, arXiv:2305.14314, §3.
    .. [4] NVIDIA Transformer Engine documentation, "Low precision training: Performance
       Considerations" (Memory usage: FP8 weight copies, quantized saved inputs).
    """
    v.choice("finetune", finetune, FINETUNE_MODES)
    prec = v.choices("precision", precision, PRECISIONS)
    fp8 = bool(np.any(prec != "bf16"))
    if fp8 and finetune != "full":
        raise v.InputError("precision", f"precision {str(prec[prec != 'bf16'].flat[0])!r} is "
                                        f"modelled for full training only, not "
                                        f"finetune={finetune!r} (frozen {finetune} weights are "
                                        "not quantized to FP8 here); use 'bf16'")
    v.choice("lora_targets", lora_targets, LORA_TARGETS)
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    gpus, tp, pp, cp, vv = check_layout(model, gpus, tp, pp, cp, interleave, s,
                                        first_stage_layers, last_stage_layers)
    n_first, n_mid, n_last, _, _ = _stage_layers(
        model.layers, pp,
        None if first_stage_layers is None else np.asarray(first_stage_layers),
        None if last_stage_layers is None else np.asarray(last_stage_layers))
    ep, etp, edp = check_expert_layout(model, gpus, tp, pp, cp, ep, etp)
    b = v.integer("micro_batch", micro_batch)
    dp = gpus // (tp * pp * cp)
    if global_batch is None:
        m = None
    else:
        gb_arr = v.integer("global_batch", global_batch)
        v.multiple_of("global_batch", gb_arr, "micro_batch x dp", b * dp)
        m = gb_arr / (b * dp)

    final_norm = 2 * model.hidden if model.norm == "layernorm" else model.hidden
    n_layers = {"first": n_first, "middle": n_mid, "last": n_last}
    stage_params = {
        "first": n_first * model.layer_params + model.embedding_params
        + np.where(pp == 1, model.output_params * (0 if model.tied_embeddings else 1)
                   + final_norm, 0),
        "middle": n_mid * model.layer_params,
        "last": n_last * model.layer_params + np.where(
            pp == 1, model.embedding_params + model.output_params * (
                0 if model.tied_embeddings else 1), model.output_params) + final_norm,
    }
    kv_act, hd_act = model.attention_shape
    per_layer = activation_bytes_per_layer(
        s, b, model.hidden, model.heads, tp, cp, kv_act, model.ffn_hidden,
        model.gated_ffn, hd_act, model.dropout, sequence_parallel, recompute,
        flash_attention)
    if model.is_moe:
        # MoE layers keep the expert block's activations instead of a dense FFN's inner ones
        rec_arr = v.choices("recompute", recompute, RECOMPUTE_MODES)
        dense_inner = (s / cp * b) * (6.0 if model.gated_ffn else 4.0) * model.ffn_hidden / tp
        moe_block = moe_ffn_activation_bytes(
            s, b, model.hidden, model.moe_experts, model.moe_top_k, model.moe_ffn_hidden,
            model.moe_shared_ffn_hidden, tp, cp, etp, model.gated_ffn, moe_capacity_factor)
        moe_layer = np.where(rec_arr == "full", per_layer, per_layer - dense_inner + moe_block)
        share = model.moe_layers / model.layers
        per_layer = (1.0 - share) * per_layer + share * moe_layer
    if fp8:
        # the linear layers save their inputs quantized (BF16 runs skip this: bit-identical)
        per_layer = per_layer - fp8_activation_saving_bytes_per_layer(
            s, b, model.hidden, model.heads, tp, cp, model.kv_heads, model.ffn_hidden,
            model.gated_ffn, model.head_dim, sequence_parallel, recompute, flash_attention,
            prec)
        p_mm = matmul_params_per_layer(model.hidden, model.heads, model.kv_heads,
                                       model.ffn_hidden, model.gated_ffn, model.head_dim)
        # ZeRO-3 gathers (and quantizes) one layer at a time
        gathered = np.asarray(zero_stage) >= 3
    tokens = s / cp * b
    embed_mask = np.where(model.dropout, 1.0, 0.0) * tokens * model.hidden / tp
    logits = 4.0 * tokens * model.vocab / tp

    if finetune != "full":
        adapters = lora_parameter_count(model.layers, model.hidden, model.heads, lora_rank,
                                        model.kv_heads, model.ffn_hidden, model.gated_ffn,
                                        model.head_dim, lora_targets)
    out = {}
    for stage in ("first", "last", "middle"):
        n = n_layers[stage]
        # routed experts are sharded by EP x ETP (their optimizer over the expert-DP
        # group), everything else by TP (its optimizer over DP x CP)
        experts = n * model.expert_layer_params
        psi = (stage_params[stage] - experts) / tp + experts / (ep * etp)
        ew = 0.0
        if finetune == "full":
            w, g, o = model_state_bytes((stage_params[stage] - experts) / tp, dp * cp,
                                        zero_stage, optimizer)
            if model.is_moe:
                we, ge, oe = model_state_bytes(experts / (ep * etp), edp, zero_stage,
                                               optimizer)
                w, g, o, ew = w + we, g + ge, o + oe, we
        else:
            trainable = adapters * n / model.layers / tp
            w_a, g, o = model_state_bytes(trainable, dp * cp, zero_stage, optimizer)
            frozen = FROZEN_BYTES_PER_PARAM[finetune] * psi
            if finetune == "qlora" and qlora_16bit_embeddings:
                blocks = n * model.layer_params / tp
                frozen = (FROZEN_BYTES_PER_PARAM["qlora"] * blocks
                          + FROZEN_BYTES_PER_PARAM["lora"] * (psi - blocks))
            w = w_a + frozen / np.where(np.asarray(zero_stage) >= 3, dp * cp, 1)
        held = inflight_layers(model.layers, pp, m, vv, stage, schedule, n)
        act = per_layer * held
        if stage == "first":
            act = act + embed_mask * held / n
        elif stage == "last":
            act = act + logits
        bw_, bg_, _ = OPTIMIZER_BYTES_PER_PARAM[optimizer]
        layer_gpu = (model.layer_params - model.expert_layer_params) / tp \
            + model.expert_layer_params / (ep * etp)
        if finetune == "full":
            z3 = zero3_working_set_bytes(np.where(n > 0, layer_gpu, 0.0),
                                         dp * cp, zero_stage, bw_, bg_)
        else:   # frozen base weights gathered; only the small adapters have gradients
            z3 = zero3_working_set_bytes(np.where(n > 0, layer_gpu, 0.0),
                                         dp * cp, zero_stage,
                                         FROZEN_BYTES_PER_PARAM[finetune], 0.0)
        w8 = 0.0
        if fp8:
            mm_gpu = p_mm / tp if not model.is_moe else layer_gpu
            w8 = fp8_weight_copy_bytes(np.where(gathered, np.minimum(n, 1), n) * mm_gpu,
                                       prec, generation)
        allocated = w + g + o + act + w8 + z3
        over = framework_overhead_bytes(allocated, context_bytes, fragmentation)
        out[stage] = (w, g, o, act, over, allocated + over, w8, z3, ew)

    # first, last, middle: ties go to the first listed (an even pipeline's middle stage
    # never exceeds its first, so even layouts report first or last as before)
    totals = np.stack(np.broadcast_arrays(
        out["first"][5], out["last"][5],
        np.where(np.asarray(pp) > 2, out["middle"][5], -np.inf)))
    k = np.argmax(totals, axis=0)
    comps = [np.choose(k, np.broadcast_arrays(f_, l_, m_))
             for f_, l_, m_ in zip(out["first"], out["last"], out["middle"])]
    rank = np.choose(k, np.broadcast_arrays(0, np.asarray(pp) - 1, 1))
    layers_at = np.choose(k, np.broadcast_arrays(n_first, n_last, n_mid))
    *comps, w8, z3, ew = comps
    return MemoryBreakdown(*[v.result(c) for c in comps], peak_stage=v.result(rank),
                           peak_stage_layers=v.result(layers_at), fp8_weights_bytes=v.result(w8),
                           zero3_working_bytes=v.result(z3), expert_weights_bytes=v.result(ew))


def seed_heuristic_memory_gb(model_size_b, num_gpus, tp_size, pp_size):
    r"""The seed article's ``estimate_memory``, kept verbatim for comparison. Not a model.

    .. math:: M = \frac{2P + 4P + 2P}{t} + \frac{12 P}{t\,p}\quad [\text{GB}, P \text{ in billions}]

    It divides weights, gradients and optimizer states by TP only (pipeline stages hold
    1/p of the layers, so they should divide by t p as well), counts 4 bytes of Adam state
    where mixed-precision Adam keeps 12 (fp32 master, momentum, variance), ignores data
    parallelism (``num_gpus`` is unused), and scales activations with parameters instead of
    sequence, batch and width. See tests/test_memory.py for where it lands against
    :func:`memory_per_gpu`.

    Parameters
    ----------
    model_size_b : float or array
        Parameters [billions].
    num_gpus, tp_size, pp_size : int or array
        As in the seed (``num_gpus`` unused, as there).

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
