"""Memory per GPU composed from the terms: framework overhead, the loss, the breakdown by
component for the most loaded pipeline stage, and a quick seed heuristic.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v
from .. import stacks as stacks_mod
from ..arch import ModelSpec
from ..layer_options import LayerOptions
from ..recompute import check_recompute_modules
from . import states
from .activations import cached_linear_input_bytes
from .experts import check_expert_layout
from .layer import layer_activation_bytes, rebuilds_whole_layers, recompute_working_bytes
from .options import CONTEXT_BYTES, FRAGMENTATION, GB, LOSS_BYTES, MemoryOptions
from .pipeline import _stage_layers, check_layout, stage_activation_bytes
from .stage_layout import StageLayout
from .states import MEMORY_STACKS

if TYPE_CHECKING:
    from ..layout import Layout

def framework_overhead_bytes(allocated_bytes: ArrayLike, context_bytes: ArrayLike = CONTEXT_BYTES,
                             fragmentation: ArrayLike = FRAGMENTATION) -> float | np.ndarray:
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
    peak_stage_layers: np.ndarray | None = None
    #: FP8/MXFP8 copies of the GEMM weights, resident beside the BF16 weights (0 for BF16;
    #: :func:`llmcost.training.precision.fp8_weight_copy_bytes`), in ``total_bytes``.
    fp8_weights_bytes: np.ndarray | float = 0.0
    #: ZeRO-3/FSDP working set: gathered 16-bit weights of the layer being computed and the
    #: prefetched next one, and one layer's unsharded gradients during its reduce-scatter
    #: (:func:`zero3_working_set_bytes`; 0 below stage 3), in ``total_bytes``.
    zero3_working_bytes: np.ndarray | float = 0.0
    #: MoE: the routed experts' share of ``weights_bytes`` (sharded by EP x ETP); 0 dense
    expert_weights_bytes: np.ndarray | float = 0.0

    def to_gb(self) -> dict:
        """Each of :data:`MEMORY_TERMS` and ``total_gb`` in GB (1e9 bytes), keys as in the CLI
        contract: ``<term>_gb`` is the field ``<term>_bytes``."""
        return {k: getattr(self, k[:-3] + "_bytes") / GB for k in (*MEMORY_TERMS, "total_gb")}


#: each stack's usual loss: Megatron-Core's fused vocab-parallel cross-entropy; the FSDP2
#: stacks' PyTorch cross-entropy on logits upcast to FP32 (torchtitan, Hugging Face)
STACK_LOSS = {name: st.loss for name, st in stacks_mod.STACKS.items()}


def loss_bytes_per_logit(loss: str = "fused") -> float:
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


class _StageRecipe(NamedTuple):
    """What every stage's terms share beside its layout and the options: one layer's
    activations M̄ and what a recomputed layer rebuilds M_rc [bytes], the loss's bytes per
    logit, the GEMM precision, the GPU generation and whether the stack holds memory as
    FSDP2 does."""

    layer_bytes: float | np.ndarray
    recompute_bytes: float | np.ndarray
    loss_bytes: float
    precision: np.ndarray
    generation: ArrayLike
    fsdp_memory: bool


def _stage_memory(model: ModelSpec, stage: str, n: np.ndarray, rank: int | np.ndarray,
                  layout: StageLayout, options: MemoryOptions, recipe: _StageRecipe) -> MemoryBreakdown:
    """One pipeline stage's :class:`MemoryBreakdown` (n its layers, rank its pipeline rank)."""
    L, o, r = layout, options, recipe
    params = states.stage_parameters(model, n, L.pp, stage)
    if o.finetune == "full":
        w, g, opt, ew = states.stage_model_state_bytes(model, params, n, L, o)
    else:
        w, g, opt = states.stage_adapter_state_bytes(model, params, n, L, o)
        ew = 0.0
    act = stage_activation_bytes(model, r.layer_bytes, n, L, stage, o.schedule,
                                 r.recompute_bytes, r.loss_bytes)
    z3 = states.stage_zero3_working_bytes(model, n, L, o)
    if r.fsdp_memory and o.finetune == "full" and np.any(np.asarray(L.pp) > 1):
        # FSDP2 under PP keeps the stage gathered and its gradients unsharded (pipelined_
        # fsdp_bytes): the whole stage replaces the per-layer working set, and the
        # accumulated gradients join it as unsharded buffers (the optimizer never reads
        # them: the step's optimizer time counts W + G + O only)
        unsharded = replace(L, zero_group=1, expert_zero_group=1, zero_stage=0)
        w0, *_ = states.stage_model_state_bytes(model, params, n, unsharded, o)
        mw, mg = states.pipelined_fsdp_bytes(w0, L.pp, L.zero_group, L.zero_stage, "fsdp")
        z3 = np.where(mw > 0, mw, z3) + mg
    w8 = states.stage_fp8_weight_bytes(model, n, L, r.precision, r.generation)
    allocated = w + g + opt + act + w8 + z3
    over = framework_overhead_bytes(allocated, o.context_bytes, o.fragmentation)
    # the fields say np.ndarray; a scalar layout gives numpy scalars (the formulas' float | np.ndarray)
    return MemoryBreakdown(w, g, opt, act, over, allocated + over, peak_stage=rank,  # type: ignore[arg-type]
                           peak_stage_layers=n, fp8_weights_bytes=w8, zero3_working_bytes=z3,
                           expert_weights_bytes=ew)


def _peak_stage(first: MemoryBreakdown, last: MemoryBreakdown, middle: MemoryBreakdown,
                pp: np.ndarray) -> MemoryBreakdown:
    """The breakdown of the stage with the largest total, element by element. Ties go to
    the first listed: an even pipeline's middle stage never exceeds its first."""
    totals = np.stack(np.broadcast_arrays(first.total_bytes, last.total_bytes,
                                          np.where(pp > 2, middle.total_bytes, -np.inf)))
    k = np.argmax(totals, axis=0)
    # _stage_memory sets every field (peak_stage_layers is never None here)
    return MemoryBreakdown(*[v.result(np.choose(k, np.broadcast_arrays(f, l, m)))  # type: ignore[arg-type]
                             for f, l, m in zip(first, last, middle)])


def _check_recipe(model: ModelSpec, layout: Layout,
                  options: MemoryOptions) -> tuple[np.ndarray, np.ndarray, float | np.ndarray, tuple[str, ...]]:
    """(precision, flash attention, q, recompute modules) of :func:`memory_per_gpu`: what
    the layout's and the options' own checks cannot see (the model, the two together)."""
    for name in ("flash_attention", "precision"):
        if getattr(layout, name) is None:
            raise v.InputError(name, f"{name}=None takes the step Options' value "
                                     "(predict_step); memory_per_gpu needs a value")
    prec = np.asarray(layout.precision)
    lin = cached_linear_input_bytes(prec, options.activation_precision)
    mods = check_recompute_modules(layout.recompute_modules, model.attention, model.is_moe,
                                   model.moe_shared_ffn_hidden > 0)
    finetune = options.finetune
    if np.any(prec != "bf16") and finetune != "full":
        raise v.InputError("precision", f"precision {str(prec[prec != 'bf16'].flat[0])!r} is "
                                        f"modelled for full training only, not "
                                        f"finetune={finetune!r} (frozen {finetune} weights are "
                                        "not quantized to FP8 here); use 'bf16'")
    return prec, np.asarray(layout.flash_attention), lin, mods


def _checked_layout(model: ModelSpec, s: int,
                    layout: Layout) -> tuple[StageLayout, tuple[np.ndarray, ...]]:
    """The layout as the stage terms read it (``zero_group`` the ZeRO shard group d c,
    ``num_microbatches`` the micro-batches per iteration or None), and the first, middle and
    last stages' layers."""
    gpus, tp, pp, cp, vv = check_layout(model, layout, s)
    first, last = layout.first_stage_layers, layout.last_stage_layers
    layers = _stage_layers(model.layers, pp, None if first is None else np.asarray(first),
                           None if last is None else np.asarray(last))
    ep, etp, edp = check_expert_layout(model, gpus, tp, pp, cp, layout.ep, layout.etp)
    b = np.asarray(layout.micro_batch)
    dp = gpus // (tp * pp * cp)
    m = None
    if layout.global_batch is not None:
        gb_arr = np.asarray(layout.global_batch)
        v.multiple_of("global_batch", gb_arr, "micro_batch x dp", b * dp)
        m = gb_arr / (b * dp)
    return StageLayout(tp=tp, cp=cp, pp=pp, interleave=vv, zero_group=dp * cp, ep=ep, etp=etp,
                       expert_zero_group=edp, zero_stage=layout.zero_stage, micro_batch=b,
                       num_microbatches=m, seq_len=s,
                       optimizer_moments=layout.optimizer_moments), layers[:3]


def memory_per_gpu(model: ModelSpec, layout: Layout, options: MemoryOptions = MemoryOptions(),
                   seq_len: int | None = None, generation: ArrayLike = "hopper",
                   stack: str = "megatron") -> MemoryBreakdown:
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
    layout : Layout
        The parallel layout (scalars, or arrays for many layouts): gpus, tp, pp, cp,
        interleave [-]; ``zero_stage`` shards over d c GPUs, d = gpus / (t p c) (Megatron's
        distributed optimizer); ``micro_batch``, ``global_batch`` b, B [sequences], m =
        B / (b d) micro-batches (B None: m large); ``recompute`` and ``recompute_modules``
        (:data:`llmcost.training.recompute.RECOMPUTE_MODULES`; "selective" implies
        "core_attn"; ignored where ``recompute="full"``); ``sequence_parallel``,
        ``flash_attention``; ``first_stage_layers``, ``last_stage_layers``
        (:func:`pipeline_stage_layers`; None: balanced automatically); ``precision``,
        the GEMM precision, FP8/MXFP8 with ``finetune="full"`` only (the GPU is the
        caller's check: :func:`llmcost.training.precision.check_precision`); ``ep``,
        ``etp`` (:func:`check_expert_layout`); ``optimizer_moments``
        (:func:`model_state_bytes`).
    options : MemoryOptions
        The optimizer, pipeline schedule, fine-tuning (:func:`stage_adapter_state_bytes`),
        framework overhead (:func:`framework_overhead_bytes`), MoE capacity factor and
        where the router's probabilities are applied (:func:`moe_ffn_activation_bytes`),
        cached inputs' precision (:func:`cached_linear_input_bytes`) and the loss
        (:func:`loss_bytes_per_logit`; None: the stack's, :data:`STACK_LOSS`).
    seq_len : int, optional
        [tokens]; default the model's.
    generation : str
        GPU generation (:func:`stage_fp8_weight_bytes`).
    stack : str
        Training stack, :data:`MEMORY_STACKS` (:func:`pipelined_fsdp_bytes`; its usual loss).

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
    L, o = layout, options
    prec, flash_attention, lin, mods = _check_recipe(model, L, o)
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    sl, (n_first, n_mid, n_last) = _checked_layout(model, s, L)
    recompute = L.recompute
    moe_capacity_factor = 1.0 if o.moe_capacity_factor is None else o.moe_capacity_factor
    layer_options = LayerOptions(recompute, mods, flash_attention, L.sequence_parallel,
                                 linear_input_bytes=lin, moe_capacity_factor=moe_capacity_factor,
                                 moe_probs_at=o.moe_probs_at)
    layer_bytes = layer_activation_bytes(model, s, sl.micro_batch, sl.tp, sl.cp, sl.etp,
                                         layer_options)
    recompute_bytes: float | np.ndarray = 0.0
    if np.any(rebuilds_whole_layers(recompute, mods)):
        # the layer with nothing recomputed: what a layer-wide recompute rebuilds against
        # (a second activation count, paid only when some layout rebuilds whole layers)
        none = layer_activation_bytes(model, s, sl.micro_batch, sl.tp, sl.cp, sl.etp,
                                      replace(layer_options, recompute="none", recompute_modules=()))
        recompute_bytes = recompute_working_bytes(none, layer_bytes, recompute, mods)
    stack = v.choice("stack", stack, MEMORY_STACKS)
    recipe = _StageRecipe(layer_bytes, recompute_bytes,
                          loss_bytes_per_logit(STACK_LOSS[stack] if o.loss is None else o.loss),
                          prec, generation, stacks_mod.stack(stack).memory == "fsdp")
    first = _stage_memory(model, "first", n_first, 0, sl, o, recipe)
    last = _stage_memory(model, "last", n_last, sl.pp - 1, sl, o, recipe)
    return _peak_stage(first, last, _stage_memory(model, "middle", n_mid, 1, sl, o, recipe), sl.pp)


def seed_heuristic_memory_gb(model_size_b: ArrayLike, num_gpus: ArrayLike, tp_size: ArrayLike,
                             pp_size: ArrayLike) -> float | np.ndarray:
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
