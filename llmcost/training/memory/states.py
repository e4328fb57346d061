"""Model states per GPU: weights, gradients and optimizer states under ZeRO, LoRA adapters,
the FSDP and ZeRO-3 working sets and FP8 weight copies, for one pipeline stage.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v
from .. import stacks as stacks_mod
from ..arch import ModelSpec
from ..flops import matmul_params_per_layer
from ..precision import PRECISIONS, fp8_weight_copy_bytes
from .options import (
    FP32_MOMENTS,
    FROZEN_BYTES_PER_PARAM,
    LORA_TARGETS,
    OPTIMIZER_BYTES_PER_PARAM,
    OPTIMIZER_MOMENTS,
    OPTIMIZERS,
    STAGES,
    MemoryOptions,
)
from .stage_layout import StageLayout


def model_state_bytes(params: ArrayLike, zero_group: ArrayLike = 1, zero_stage: ArrayLike = 0, optimizer: str = "adam",
                      optimizer_moments: str = "fp32") -> tuple[float | np.ndarray, ...]:
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
    zero_group : int or array
        The GPUs ZeRO shards over (the data-parallel group) N_d [-].
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
    nd = v.integer("zero_group", zero_group)
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


def lora_parameter_count(model: ModelSpec, rank: ArrayLike, targets: str = "all") -> float | np.ndarray:
    r"""Trainable LoRA adapter parameters.

    Each adapted matrix W (d_in x d_out) gains B A with A (r x d_in), B (d_out x r):

    .. math:: P_{LoRA} = l\, r \sum_{W} (d_{in} + d_{out})

    "qv" adapts W_q and W_v (Hu et al.'s default), "attention" Q, K, V and the output
    projection, "all" adds every FFN matrix (QLoRA's setting).

    Parameters
    ----------
    model : ModelSpec
        l (``layers``), h, a, a_kv, d, f and the FFN's gating.
    rank : int or array
        r [-].
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
    r = v.integer("rank", rank)
    # the model's fields are checked by ModelSpec.__post_init__
    l, h, a, kv, f, d = (model.layers, model.hidden, model.heads, model.kv_heads, model.ffn_hidden,
                         model.head_dim)
    assert kv is not None and f is not None and d is not None
    gated = model.gated_ffn
    d_q, d_kv = a * d, kv * d
    per_layer: int | np.ndarray
    if targets == "qv":
        per_layer = (h + d_q) + (h + d_kv)
    else:
        per_layer = (h + d_q) + 2 * (h + d_kv) + (d_q + h)
    if targets == "all":
        per_layer = per_layer + np.where(gated, 3, 2) * (h + f)
    return v.result(1.0 * l * r * per_layer)


#: training stacks (:func:`memory_per_gpu` ``stack``): the one list,
#: :data:`llmcost.training.stacks.STACKS`; each holds memory as Megatron-Core does or as the
#: PyTorch FSDP2 stacks do (torchtitan, OLMo-core): :attr:`~llmcost.training.stacks.Stack.memory`
MEMORY_STACKS = stacks_mod.NAMES
#: bytes per parameter of the unsharded gradients FSDP2 accumulates across a pipeline's
#: micro-batches: the reduce dtype, FP32 in torchtitan's default mixed precision
#: (``mixed_precision_reduce = "float32"``), to which FSDP2 upcasts accumulated gradients
FSDP_ACCUMULATED_GRAD_BYTES = 4.0


def pipelined_fsdp_bytes(stage_weight_bytes: ArrayLike, pp: ArrayLike = 1, zero_group: ArrayLike = 1,
                         zero_stage: ArrayLike = 3, stack: str = "megatron", weight_bytes: float = 2.0,
                         grad_bytes: float = FSDP_ACCUMULATED_GRAD_BYTES
                         ) -> tuple[float | np.ndarray, float | np.ndarray]:
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
    pp, zero_group : int or array
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
    d = np.asarray(v.integer("zero_group", zero_group, minimum=1))
    z = np.asarray(v.integer("zero_stage", zero_stage, minimum=0, maximum=3))
    on = (st == "fsdp") & (p > 1) & (d > 1)
    mw = np.where(on & (z >= 3), w0, 0.0)
    mg = np.where(on & (z >= 2), grad_bytes / weight_bytes * w0, 0.0)
    return v.result(mw), v.result(mg)


def zero3_working_set_bytes(layer_params: ArrayLike, zero_group: ArrayLike = 1, zero_stage: ArrayLike = 3,
                            weight_bytes: ArrayLike = 2.0, grad_bytes: ArrayLike = 2.0,
                            prefetch_layers: ArrayLike = 1) -> float | np.ndarray:
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
    zero_group : int or array
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
    nd = v.integer("zero_group", zero_group)
    stage = v.integer("zero_stage", zero_stage, minimum=0, maximum=3)
    qw = v.nonnegative("weight_bytes", weight_bytes)
    qg = v.nonnegative("grad_bytes", grad_bytes)
    pf = v.nonnegative("prefetch_layers", prefetch_layers)
    on = (stage >= 3) & (nd > 1)
    return v.result(np.where(on, ((1.0 + pf) * qw + qg) * psi, 0.0))



def stage_parameters(model: ModelSpec, stage_layers: ArrayLike, pp: ArrayLike = 1,
                     stage: str = "first") -> float | np.ndarray:
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


def _params_per_gpu(params: float | np.ndarray, expert_params: float | np.ndarray,
                    layout: StageLayout) -> float | np.ndarray:
    """Parameters on a GPU: routed experts over e t_e, the rest over t."""
    return (params - expert_params) / layout.tp + expert_params / (layout.ep * layout.etp)


def _layer_params_per_gpu(model: ModelSpec, layout: StageLayout) -> float | np.ndarray:
    """One layer's parameters on a GPU (:func:`_params_per_gpu`)."""
    return _params_per_gpu(model.layer_params, model.expert_layer_params, layout)


def stage_model_state_bytes(model: ModelSpec, stage_params: ArrayLike, stage_layers: ArrayLike,
                            layout: StageLayout = StageLayout(),
                            options: MemoryOptions = MemoryOptions()) -> tuple[float | np.ndarray, ...]:
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
    layout : StageLayout
        t (``tp``), e, t_e (``ep``, ``etp``), N_d (``zero_group``), N_ed
        (``expert_zero_group``), the ZeRO stage and ``optimizer_moments``.
    options : MemoryOptions
        Its ``optimizer`` (:func:`model_state_bytes`).

    Returns
    -------
    weights, grads, optimizer, expert_weights : float or array
        Bytes per GPU [bytes]; ``expert_weights`` is the routed experts' part of ``weights``.

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §5.
    .. [2] Megatron-Core documentation, "Mixture of Experts" (expert data parallelism).
    """
    L = layout
    experts = np.asarray(stage_layers) * model.expert_layer_params
    w, g, o = model_state_bytes((np.asarray(stage_params) - experts) / L.tp, L.zero_group,
                                L.zero_stage, options.optimizer, L.optimizer_moments)
    if not model.is_moe:
        return w, g, o, 0.0
    we, ge, oe = model_state_bytes(experts / (L.ep * L.etp), L.expert_zero_group, L.zero_stage,
                                   options.optimizer, L.optimizer_moments)
    return w + we, g + ge, o + oe, we


def stage_adapter_state_bytes(model: ModelSpec, stage_params: ArrayLike, stage_layers: ArrayLike,
                              layout: StageLayout,
                              options: MemoryOptions) -> tuple[float | np.ndarray, ...]:
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
    layout : StageLayout
        t (``tp``), N_d = d c (``zero_group``), e, t_e (``ep``, ``etp``), the ZeRO stage
        and ``optimizer_moments`` (:func:`model_state_bytes`).
    options : MemoryOptions
        ``finetune`` "lora" or "qlora", ``lora_rank`` and ``lora_targets``
        (:func:`lora_parameter_count`), ``optimizer`` (:func:`model_state_bytes`) and
        ``qlora_16bit_embeddings``: QLoRA's embeddings, LM head and final norm kept in 16
        bits, as QLoRA's reference code does (bitsandbytes replaces the blocks' linear
        layers).

    Returns
    -------
    weights, grads, optimizer : float or array
        Bytes per GPU [bytes].

    References
    ----------
    .. [1] Hu et al. 2021, arXiv:2106.09685, §4.
    .. [2] Dettmers et al. 2023, arXiv:2305.14314, §3.
    """
    L, finetune = layout, options.finetune
    v.choice("finetune", finetune, tuple(FROZEN_BYTES_PER_PARAM))
    adapters = lora_parameter_count(model, options.lora_rank, options.lora_targets)
    n = np.asarray(stage_layers)
    psi = _params_per_gpu(np.asarray(stage_params), n * model.expert_layer_params, L)
    w_a, g, o = model_state_bytes(adapters * n / model.layers / L.tp, L.zero_group, L.zero_stage,
                                  options.optimizer, L.optimizer_moments)
    frozen = FROZEN_BYTES_PER_PARAM[finetune] * psi
    if finetune == "qlora" and options.qlora_16bit_embeddings:
        blocks = n * model.layer_params / L.tp
        frozen = (FROZEN_BYTES_PER_PARAM["qlora"] * blocks
                  + FROZEN_BYTES_PER_PARAM["lora"] * (psi - blocks))
    return w_a + frozen / np.where(np.asarray(L.zero_stage) >= 3, L.zero_group, 1), g, o


def stage_zero3_working_bytes(model: ModelSpec, stage_layers: ArrayLike, layout: StageLayout = StageLayout(),
                              options: MemoryOptions = MemoryOptions()) -> float | np.ndarray:
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
    layout : StageLayout
        t, e, t_e (``tp``, ``ep``, ``etp``), the sharding group N_d = d c
        (``zero_group``) and the ZeRO stage.
    options : MemoryOptions
        ``optimizer`` and ``finetune``.

    Returns
    -------
    bytes : float or array
        [bytes].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §5.3.
    .. [2] Zhao et al. 2023, arXiv:2304.11277, §3.3-3.4.
    """
    L, finetune = layout, options.finetune
    layer = np.where(np.asarray(stage_layers) > 0, _layer_params_per_gpu(model, L), 0.0)
    if finetune == "full":
        qw, qg, _ = OPTIMIZER_BYTES_PER_PARAM[options.optimizer]
    else:
        qw, qg = FROZEN_BYTES_PER_PARAM[finetune], 0.0
    return zero3_working_set_bytes(layer, L.zero_group, L.zero_stage, qw, qg)


def stage_fp8_weight_bytes(model: ModelSpec, stage_layers: ArrayLike, layout: StageLayout = StageLayout(),
                           precision: ArrayLike = "bf16", generation: ArrayLike = "hopper") -> float | np.ndarray:
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
    layout : StageLayout
        t, e, t_e (``tp``, ``ep``, ``etp``) and the ZeRO stage.
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
        mm_gpu = _layer_params_per_gpu(model, layout)
    else:
        mm_gpu = matmul_params_per_layer(model.hidden, model.heads, model.kv_heads,
                                         model.ffn_hidden, model.gated_ffn, model.head_dim) / layout.tp
    n = np.asarray(stage_layers)
    held = np.where(np.asarray(layout.zero_stage) >= 3, np.minimum(n, 1), n)
    return fp8_weight_copy_bytes(held * mm_gpu, prec, generation)
