"""The step time composed from the terms (:func:`predict_step`) and its result types: the
terms it reports (:data:`STEP_TERMS`) and :class:`StepPrediction`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ... import _validate as v
from ..arch import ModelSpec
from ..comm import Links
from ..hardware import GPUSpec, Hardware
from ..memory import MemoryBreakdown, MemoryOptions
from .calibration import Calibration, Options
from .communication import (
    _dp_collectives_s,
    context_parallel_comm_s,
    data_parallel_comm_s,
    expert_parallel_comm_s,
    pipeline_bubble_s,
    pipeline_p2p_s,
    tensor_parallel_comm_s,
)
from .compute import (
    _fp8_weight_cast_s,
    _layer_flops,
    _layer_matmul_s,
    _layer_memory_bound_s,
    _LayerFlops,
    logits_s,
    optimizer_step_s,
)
from .resolve import _resolve, _Resolved

if TYPE_CHECKING:
    from ..layout import Layout


class StepTerm(NamedTuple):
    """One term of the step time: a short label for sentences and what it models."""

    label: str
    explanation: str


#: The terms of the step time, in :class:`StepPrediction`'s order: field -> (short label,
#: what it models). The CLI, the planner and the review read their names here.
STEP_TERMS = {
    "compute_s": StepTerm(
        "compute", "matmuls at peak x GEMM efficiency, plus memory-bound kernels at HBM speed"),
    "tp_comm_s": StepTerm(
        "tensor-parallel communication",
        "tensor-parallel all-reduces (4 per layer, 6 with full recompute), exposed"),
    "cp_comm_s": StepTerm(
        "context-parallel communication", "context-parallel K/V ring not hidden behind attention"),
    "ep_comm_s": StepTerm(
        "expert all-to-all",
        "MoE token dispatch and combine (all-to-all over the EP group), exposed"),
    "pp_p2p_s": StepTerm("pipeline sends", "pipeline activation sends between stages"),
    "pp_bubble_s": StepTerm(
        "pipeline bubble", "pipeline fill and drain: (p-1)/(v m) of the ideal time"),
    "dp_comm_s": StepTerm(
        "data-parallel gradient sync",
        "data-parallel gradient sync (ZeRO-3: + parameter gathers), exposed"),
    "optimizer_s": StepTerm(
        "optimizer step", "optimizer step, memory-bound (FP8/MXFP8: + weight casts)"),
}


class StepPrediction(NamedTuple):
    """Per-layout predictions (arrays broadcast over the layout inputs)."""

    step_time_s: np.ndarray
    compute_s: np.ndarray
    tp_comm_s: np.ndarray
    cp_comm_s: np.ndarray
    pp_p2p_s: np.ndarray
    pp_bubble_s: np.ndarray
    dp_comm_s: np.ndarray
    optimizer_s: np.ndarray
    model_tflops_per_gpu: np.ndarray
    hardware_tflops_per_gpu: np.ndarray
    mfu: np.ndarray
    hfu: np.ndarray
    tokens_per_s: np.ndarray
    memory_bytes: np.ndarray
    fits: np.ndarray
    scaling_efficiency: np.ndarray | None
    dp: np.ndarray
    num_microbatches: np.ndarray
    #: per-GPU memory by component (the ``memory_bytes`` total broken down)
    memory: MemoryBreakdown
    #: transformer layers on the first, each middle, and the last pipeline stage [-]
    #: (:func:`llmcost.training.memory.pipeline_stage_layers`)
    first_stage_layers: np.ndarray | None = None
    middle_stage_layers: np.ndarray | None = None
    last_stage_layers: np.ndarray | None = None
    #: pipeline rank of the slowest stage, which sets the pace: 0, 1 (a middle stage) or p - 1
    slowest_stage: np.ndarray | None = None
    #: MoE expert-parallel all-to-all (dispatch and combine) not hidden [s]; 0 for dense
    ep_comm_s: np.ndarray | None = None

    #: the fields of the step-time terms (:data:`STEP_TERMS`)
    # a class constant, not a field: NamedTuple allows it, mypy does not
    BREAKDOWN = tuple(STEP_TERMS)  # type: ignore[misc]


def _slowest_stage(layer_s: float | np.ndarray, logits_s_: float | np.ndarray, pp: np.ndarray, n_first: np.ndarray,
                   n_mid: np.ndarray, n_last: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # the stage that paces every other: (its rank code 0 last / 1 first / 2 middle, its time
    # per micro-batch, its layers, its logits time); ties go to the last stage
    t_last = n_last * layer_s + logits_s_
    t_first = n_first * layer_s + np.where(pp == 1, logits_s_, 0.0)
    t_middle = np.where(pp > 2, n_mid * layer_s, 0.0)
    times = np.stack(np.broadcast_arrays(t_last, t_first, t_middle))
    slow = np.argmax(times, axis=0)
    n_slow = np.choose(slow, np.broadcast_arrays(n_last, n_first, n_mid))
    logits_slow = np.where((slow == 0) | (pp == 1), logits_s_, 0.0)
    return slow, np.max(times, axis=0), n_slow, logits_slow


def _heaviest_stage(model: ModelSpec, pp: np.ndarray, n_mid: np.ndarray,
                    n_last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # the stage with the most parameters, whose gradient reduction the step waits for: a
    # middle stage of n_mid layers, or the last with its LM head
    mid_heavier = (pp > 2) & (n_mid * model.layer_params
                              > n_last * model.layer_params + model.vocab * model.hidden)
    return np.where(mid_heavier, n_mid, n_last), mid_heavier


def _ideal_step_s(model: ModelSpec, hardware: Hardware, R: _Resolved, step: np.ndarray) -> np.ndarray:
    # the same layout if every scale-out link were as fast as NVLink (scaling efficiency)
    scale_up, scale_out = hardware.scale_up, hardware.scale_out
    fast = replace(scale_out, bandwidth_gb_per_s_per_gpu=scale_up.bandwidth_gb_per_s_per_gpu,
                   latency_us=scale_up.latency_us, efficiency=R.cal.nvlink_efficiency,
                   congestion_per_doubling=0.0, oversubscription=1.0)
    if not (scale_out.bandwidth_gb_per_s_per_gpu < scale_up.bandwidth_gb_per_s_per_gpu
            or scale_out.congestion_per_doubling > 0 or scale_out.oversubscription > 1):
        return step
    return predict_step(model, replace(hardware, scale_out=fast), R.layout, options=R.opt,
                        calibration=R.cal, memory=R.memory_options, seq_len=R.s,
                        with_scaling=False).step_time_s


def predict_step(model: ModelSpec, hardware: Hardware, layout: Layout, options: Options = Options(),
                 calibration: Calibration | None = None, memory: MemoryOptions | None = None,
                 seq_len: int | None = None, with_scaling: bool = True) -> StepPrediction:
    r"""Predict the step time of one or many layouts, with its breakdown and MFU/HFU.

    Per micro-batch, on the slowest pipeline stage (stage r holds n_r layers: l/p on an
    even split, fewer on the first and last of an uneven one; the last also computes the
    logits), which sets the pace of every stage:

    .. math::
        t_{mb} &= \max_r \left(n_r\left[t_{mm} + t_{elem} + T_{tp} + T_{cp} + T_{ep}\right]
                 + [r = p - 1]\, t_{logits}\right) + T_{pp} \\
        t_{step} &= \left(m + \frac{p - 1}{v}\right) t_{mb} + T_{dp} + t_{opt}

    one function per term (:data:`STEP_TERMS`): matmuls :func:`_layer_matmul_s` and
    memory-bound work :func:`_layer_memory_bound_s` (compute, with :func:`logits_s`),
    :func:`tensor_parallel_comm_s`, :func:`context_parallel_comm_s`,
    :func:`expert_parallel_comm_s`, :func:`pipeline_p2p_s`, :func:`pipeline_bubble_s`,
    :func:`data_parallel_comm_s` (the heaviest stage's gradients, behind its backward) and
    :func:`optimizer_step_s`. MFU and HFU are stated against the dense BF16 peak for every
    precision, so FP8 and BF16 runs compare on one scale; MFU credits 12 s d_q of full
    attention per token and layer (the tool's one convention), HFU what the kernels run.
    Not modelled: the embedding lookup (a gather), the amax all-reduce under sequence
    parallelism, FP8 all-gathers, NVFP4.

    The "fsdp" stack (``options.stack``) is PyTorch FSDP / FSDP2 in eager mode [5]: its own
    constants (:data:`CALIBRATION_BY_STACK`: no Transformer Engine fusion, a fixed host time
    per layer for its hooks and rate limiter), TP collectives never overlapped, ``zero_stage``
    3 as FULL_SHARD and 2 as SHARD_GRAD_OP, a checkpointed block as ``recompute="full"``.

    Parameters
    ----------
    model : ModelSpec
    hardware : Hardware
        The GPU, and the fabrics inside a node (NVLink, PCIe) and between nodes
        (InfiniBand, RoCE).
    layout : Layout
        The parallel layout (scalars, or arrays for many layouts): GPUs, tensor, pipeline,
        context and expert parallel sizes, global batch and micro-batch [sequences],
        virtual pipeline chunks, ZeRO stage, recomputation (``recompute_modules``: modules
        recomputed by name, Megatron-Core's ``--recompute-modules``,
        :data:`llmcost.training.recompute.RECOMPUTE_MODULES`, where ``recompute`` is not
        "full"; "core_attn" is ``recompute="selective"``; HFU counts their FLOPs, MFU
        not), sequence parallelism, the stage split (None: even, or balanced automatically,
        :func:`llmcost.training.memory.pipeline_stage_layers`). Its ``flash_attention``,
        ``tp_comm_overlap`` and ``precision`` (:func:`llmcost.training.precision.check_precision`)
        None take ``options``' value.
    options : Options
        Overlap shares in [0, 1], precision, MoE and CUDA-graph choices, the stack.
    calibration : Calibration, optional
        Default: the GPU's set on ``options.stack`` (:func:`calibration_for`).
    memory : MemoryOptions, optional
        The memory model's options (:func:`llmcost.training.memory.memory_per_gpu`:
        optimizer, overhead, ``activation_precision``, ``moe_probs_at`` ...); its
        ``moe_capacity_factor`` None: ``options.moe_load_imbalance``.
    seq_len : int, optional
        Default: the model's.
    with_scaling : bool
        Also predict the layout with ideal scale-out links, for ``scaling_efficiency``
        (doubles the work; None when False).

    Returns
    -------
    StepPrediction
        Times [s], TFLOP/s per GPU, MFU/HFU [-], tokens/s, memory [bytes], fits [bool],
        scaling efficiency [-].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §2-§4.
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, §4-§5.
    .. [3] Rajbhandari et al. 2019, arXiv:1910.02054, §7.
    .. [4] NVIDIA Transformer Engine documentation, "Low precision training: Performance
       Considerations"; Micikevicius et al. 2022, arXiv:2209.05433, §4.
    .. [5] Y. Zhao et al., "PyTorch FSDP", VLDB 2023, arXiv:2304.11277, §3.3-3.4; constants
       fitted to MosaicML llm-foundry's benchmark tables (mosaicml/llm-foundry@8c8dd48).
    """
    gpu, scale_up, scale_out = hardware.gpu, hardware.scale_up, hardware.scale_out
    R = _resolve(model, hardware, layout, options, calibration, memory, seq_len)
    F = _layer_flops(model, R.s, R.rec, R.rec_attn, R.recompute_modules, R.imb)
    h, links = model.hidden, Links(scale_up, scale_out, R.node, R.cal.nvlink_efficiency)
    tokens = R.b * R.s / R.cp
    rec_f = np.where(R.rec == "full", 4.0 / 3.0, 1.0)
    penalty = np.where(R.tp_comm_overlap, 1.0 - R.opt.tp_overlap_gemm_penalty, 1.0)
    # per layer and micro-batch on one GPU
    t_mm, t_attn = _layer_matmul_s(model, gpu, R, F, tokens, rec_f, penalty)
    t_layer = t_mm + _layer_memory_bound_s(model, gpu, R, F, tokens, rec_f)
    t_logits = logits_s(tokens, h, model.vocab, R.tp, R.peak, R.hbm, R.cal)
    t_tp = tensor_parallel_comm_s(tokens, h, R.tp, R.rec, links,
                                  np.where(R.tp_comm_overlap, R.opt.tp_overlap, 0.0))
    assert model.kv_heads is not None and model.head_dim is not None  # set in ModelSpec.__post_init__
    t_cp = context_parallel_comm_s(tokens, model.kv_heads, model.head_dim, R.tp, R.cp, t_attn, links)
    t_ep = 0.0 if not model.is_moe else expert_parallel_comm_s(
        tokens / R.tp, model, R.ep, R.etp, (R.rec == "full") | (F.on_rc & ("moe" in F.rc_mods)),
        links, R.imb, R.opt.moe_a2a_overlap)
    # per micro-batch on the slowest stage, then per step
    slow, t_stage, n_slow, logits_slow = _slowest_stage(
        t_layer + t_tp + t_cp + t_ep, t_logits, R.pp, R.n_first, R.n_mid, R.n_last)
    t_p2p_mb = pipeline_p2p_s(tokens, h, R.tp, R.cp, R.dp, R.pp, R.interleave, links)
    t_mb = t_stage + t_p2p_mb
    bubble = pipeline_bubble_s(R.pp, R.interleave, t_mb)
    n_heavy, mid_heavier = _heaviest_stage(model, R.pp, R.n_mid, R.n_last)
    stage_compute = n_heavy * t_layer + np.where(R.pp == 1, t_logits, 0.0)
    t_dp = data_parallel_comm_s(
        _dp_collectives_s(model, R, links, n_heavy, mid_heavier), R.zero_stage, R.num_microbatches,
        stage_compute, t_layer, n_heavy, R.opt.dp_overlap, rec_f)
    states = R.memory.weights_bytes + R.memory.grads_bytes + R.memory.optimizer_bytes
    t_opt = optimizer_step_s(states, R.hbm) if not R.fp8 else optimizer_step_s(
        states, R.hbm, _fp8_weight_cast_s(model, gpu, R, F, n_slow, R.memory_options.optimizer),
        np.where(R.zero_stage >= 3, R.num_microbatches, 1))
    step = R.num_microbatches * t_mb + bubble + t_dp + t_opt
    ideal = None if not with_scaling else _ideal_step_s(model, hardware, R, step)
    m = R.num_microbatches
    terms = dict(compute_s=m * (n_slow * t_layer + logits_slow), tp_comm_s=m * n_slow * t_tp,
                 cp_comm_s=m * n_slow * t_cp, ep_comm_s=m * n_slow * t_ep + 0.0 * step,
                 pp_p2p_s=m * t_p2p_mb, pp_bubble_s=bubble, dp_comm_s=t_dp, optimizer_s=t_opt)
    return _prediction(model, gpu, R, F, step, ideal, terms, slow)


def _prediction(model: ModelSpec, gpu: GPUSpec, R: _Resolved, F: _LayerFlops, step: np.ndarray,
                ideal: np.ndarray | None, terms: dict[str, Any], slow: np.ndarray) -> StepPrediction:
    # throughput, utilization and memory of the step, with the terms, as StepPrediction
    tokens_step = R.global_batch * R.s
    head = 6.0 * model.vocab * model.hidden
    model_tf = (model.layers * F.layer_model + head) * tokens_step / (R.gpus * step) / 1e12
    hw_tf = (model.layers * F.layer_hw + head) * tokens_step / (R.gpus * step) / 1e12
    r = v.result
    return StepPrediction(
        step_time_s=r(step), **{k: r(x) for k, x in terms.items()},
        model_tflops_per_gpu=r(model_tf), hardware_tflops_per_gpu=r(hw_tf),
        mfu=r(model_tf * 1e12 / R.peak), hfu=r(hw_tf * 1e12 / R.peak),
        tokens_per_s=r(tokens_step / step), memory_bytes=r(R.memory.total_bytes),
        fits=r(R.memory.total_bytes <= gpu.memory_bytes),
        scaling_efficiency=None if ideal is None else r(np.minimum(ideal / step, 1.0)),
        dp=r(R.dp), num_microbatches=r(R.num_microbatches), memory=R.memory, first_stage_layers=r(R.n_first),
        middle_stage_layers=r(R.n_mid), last_stage_layers=r(R.n_last),
        slowest_stage=r(np.choose(slow, np.broadcast_arrays(R.pp - 1, 0, 1))))
