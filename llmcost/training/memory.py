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
from .flops import RECOMPUTE_MODES

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
    s = v.integer("seq_len", seq_len)
    b = v.integer("micro_batch", micro_batch)
    h = v.integer("hidden", hidden)
    a = v.integer("heads", heads)
    t = v.integer("tp", tp)
    c = v.integer("cp", cp)
    kv = a if kv_heads is None else v.integer("kv_heads", kv_heads)
    f = 4 * h if ffn_hidden is None else v.integer("ffn_hidden", ffn_hidden)
    d = h // a if head_dim is None else v.integer("head_dim", head_dim)
    gated = v.boolean("gated_ffn", gated_ffn)
    drop = v.boolean("dropout", dropout)
    sp = v.boolean("sequence_parallel", sequence_parallel)
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
                    schedule="1f1b"):
    r"""Layers' worth of activations a pipeline stage holds at its peak.

    1F1B: stage r holds min(p - r, m) micro-batches of l/p layers (the first stage p, so
    l in all: Eq. 5 of [1]). Interleaved 1F1B with v chunks: stage r runs
    2(p - r - 1) + (v - 1) p warm-up chunk-forwards before its first backward, so it holds
    min(2(p - r - 1) + (v - 1)p + 1, m v) chunks of l/(p v) layers; for the first stage
    that is l (1 + (p - 1)/(p v)) ([1] §4.2.3). GPipe: all m micro-batches, m l/p.

    Parameters
    ----------
    layers, pp : int or array
        l, p [-].
    num_microbatches : int or array, optional
        m per iteration per pipeline [-]; None means m >= what the schedule keeps in
        flight (required for GPipe).
    interleave : int or array
        Virtual chunks per stage v [-]; 1 = plain 1F1B.
    stage : {"first", "last"}
    schedule : {"1f1b", "gpipe"}

    Returns
    -------
    layers_held : float or array
        [layers' worth of one micro-batch's activations].

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, §4.2.3, Eq. 5.
    .. [2] Narayanan et al. 2021, arXiv:2104.04473, §2.2.
    """
    v.choice("stage", stage, ("first", "last"))
    v.choice("schedule", schedule, SCHEDULES)
    l = v.integer("layers", layers)
    p = v.integer("pp", pp)
    if num_microbatches is None:
        if schedule == "gpipe":
            raise v.InputError("num_microbatches", "num_microbatches is required for GPipe")
        m = np.inf
    else:
        m = v.positive("num_microbatches", num_microbatches)
    vv = v.integer("interleave", interleave)
    r = 0 if stage == "first" else p - 1
    if schedule == "gpipe":
        return v.result(m * l / p)
    plain = np.minimum(p - r, m) * l / p
    chunks = np.minimum(2.0 * (p - r - 1) + (vv - 1) * p + 1, m * vv)
    inter = chunks * l / (p * vv)
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


def framework_overhead_bytes(allocated_bytes, context_bytes=1.0e9, fragmentation=0.08):
    r"""Memory the framework needs beyond tensors: CUDA context, library workspaces, and
    allocator fragmentation.

    .. math:: M_{overhead} = M_{context} + \phi\, M_{allocated}

    The defaults are assumptions, not measurements: about 1 GB for the CUDA context with
    cuBLAS/NCCL workspaces, and 8% fragmentation of the caching allocator. Set them to what
    your framework shows (``torch.cuda.memory_reserved`` minus ``memory_allocated``).

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
    #: 0 where the first pipeline stage is the peak, 1 where the last is.
    peak_stage: np.ndarray

    def to_gb(self) -> dict:
        """Components in GB (1e9 bytes), keys as in the CLI contract."""
        return {
            "weights_gb": self.weights_bytes / GB,
            "grads_gb": self.grads_bytes / GB,
            "optimizer_gb": self.optimizer_bytes / GB,
            "activations_gb": self.activations_bytes / GB,
            "overhead_gb": self.overhead_bytes / GB,
            "total_gb": self.total_bytes / GB,
        }


def check_layout(model: ModelSpec, gpus, tp, pp, cp, interleave, seq_len):
    """Validate a parallel layout; raise InputError naming the first parameter at fault.

    Parameters
    ----------
    model : ModelSpec
    gpus, tp, pp, cp, interleave : int or array
        Layout [-]: t must divide the heads (and shard or replicate the KV heads), p and
        p v the layers, c the sequence, and t p c the GPUs.
    seq_len : int
        [tokens].

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
    v.divides("pp", pp, "layers", model.layers)
    chunks_ok = np.asarray(model.layers % (pp * vv) == 0)
    if not chunks_ok.all():
        bad = np.broadcast_to(vv, chunks_ok.shape)[~chunks_ok].flat[0]
        raise v.InputError("interleave", f"interleave x pp must divide layers ({model.layers}), "
                                         f"got interleave={int(bad)}")
    v.divides("cp", cp, "seq_len", seq_len)
    v.multiple_of("gpus", gpus, "tp x pp x cp", tp * pp * cp)
    return gpus, tp, pp, cp, vv


def memory_per_gpu(model: ModelSpec, gpus, tp=1, pp=1, cp=1, zero_stage=0, micro_batch=1,
                   global_batch=None, recompute="none", sequence_parallel=False,
                   flash_attention=True, optimizer="adam", interleave=1, schedule="1f1b",
                   finetune="full", lora_rank=16, lora_targets="all", seq_len=None,
                   context_bytes=1.0e9, fragmentation=0.08,
                   qlora_16bit_embeddings=True) -> MemoryBreakdown:
    r"""Peak memory per GPU of a training layout, by component.

    Each pipeline stage holds l/p layers; the first also the input embedding, the last the
    output projection and final norm (Megatron). For both stages:

    .. math::
        M = \underbrace{W + G + O}_{\text{ZeRO over } N_d = d\,c}
            + M_{act}(b)\, L_{inflight} + M_{overhead}

    with model states from :func:`model_state_bytes` applied to the stage's parameters / t,
    activations from :func:`activation_bytes_per_layer` times :func:`inflight_layers`, plus
    the embedding-dropout mask on the first stage and the fp32 logits/loss (4 s b V / t) on
    the last ([2] §4.3). The larger stage is reported. For LoRA/QLoRA the base model is
    frozen (16-bit or NF4 weights, no gradients or optimizer states); only adapter
    parameters carry weights, gradients and optimizer states.

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

    Returns
    -------
    MemoryBreakdown
        Bytes per GPU [bytes]; ``.to_gb()`` in GB.

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §5.
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, §4, Table 2, Eq. 5.
    .. [3] Dettmers et al. 2023, arXiv:2305.14314, §3.
    """
    v.choice("finetune", finetune, FINETUNE_MODES)
    v.choice("lora_targets", lora_targets, LORA_TARGETS)
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    gpus, tp, pp, cp, vv = check_layout(model, gpus, tp, pp, cp, interleave, s)
    b = v.integer("micro_batch", micro_batch)
    dp = gpus // (tp * pp * cp)
    if global_batch is None:
        m = None
    else:
        gb_arr = v.integer("global_batch", global_batch)
        v.multiple_of("global_batch", gb_arr, "micro_batch x dp", b * dp)
        m = gb_arr / (b * dp)

    layers_per_stage = model.layers / pp
    final_norm = 2 * model.hidden if model.norm == "layernorm" else model.hidden
    stage_params = {
        "first": layers_per_stage * model.layer_params + model.embedding_params
        + np.where(pp == 1, model.output_params * (0 if model.tied_embeddings else 1)
                   + final_norm, 0),
        "last": layers_per_stage * model.layer_params + np.where(
            pp == 1, model.embedding_params + model.output_params * (
                0 if model.tied_embeddings else 1), model.output_params) + final_norm,
    }
    per_layer = activation_bytes_per_layer(
        s, b, model.hidden, model.heads, tp, cp, model.kv_heads, model.ffn_hidden,
        model.gated_ffn, model.head_dim, model.dropout, sequence_parallel, recompute,
        flash_attention)
    tokens = s / cp * b
    embed_mask = np.where(model.dropout, 1.0, 0.0) * tokens * model.hidden / tp
    logits = 4.0 * tokens * model.vocab / tp

    if finetune != "full":
        adapters = lora_parameter_count(model.layers, model.hidden, model.heads, lora_rank,
                                        model.kv_heads, model.ffn_hidden, model.gated_ffn,
                                        model.head_dim, lora_targets)
    out = {}
    for stage in ("first", "last"):
        psi = stage_params[stage] / tp
        if finetune == "full":
            w, g, o = model_state_bytes(psi, dp * cp, zero_stage, optimizer)
        else:
            trainable = adapters * layers_per_stage / model.layers / tp
            w_a, g, o = model_state_bytes(trainable, dp * cp, zero_stage, optimizer)
            frozen = FROZEN_BYTES_PER_PARAM[finetune] * psi
            if finetune == "qlora" and qlora_16bit_embeddings:
                blocks = layers_per_stage * model.layer_params / tp
                frozen = (FROZEN_BYTES_PER_PARAM["qlora"] * blocks
                          + FROZEN_BYTES_PER_PARAM["lora"] * (psi - blocks))
            w = w_a + frozen / np.where(np.asarray(zero_stage) >= 3, dp * cp, 1)
        held = inflight_layers(model.layers, pp, m, vv, stage, schedule)
        act = per_layer * held
        if stage == "first":
            act = act + embed_mask * held / layers_per_stage
        else:
            act = act + logits
        allocated = w + g + o + act
        over = framework_overhead_bytes(allocated, context_bytes, fragmentation)
        out[stage] = (w, g, o, act, over, allocated + over)

    last_peak = out["last"][5] > out["first"][5]
    comps = [np.where(last_peak, l_, f_) for f_, l_ in zip(out["first"], out["last"])]
    return MemoryBreakdown(*[v.result(c) for c in comps], peak_stage=v.result(last_peak.astype(int)))


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
