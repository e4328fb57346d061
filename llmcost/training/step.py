"""Step time of a training layout: compute, exposed communication, pipeline bubble, optimizer.

Every layout parameter may be a numpy array; one call predicts many layouts at once. The
model is physical: matmuls run at the dense peak times an efficiency that falls for thin
GEMMs (a roofline on their M, N, K: tokens per micro-batch, h/t, f/t), fused attention at
FlashAttention's own efficiency on its causal work plus a fixed work per query tile,
memory-bound operations (norms, softmax, dropout, activations) move bytes at HBM bandwidth,
collectives follow alpha-beta costs over NVLink and the scale-out fabric. Its few constants
(:class:`Calibration`) were fitted once, to the ten rows of Megatron-LM's Table 1 (A100), and
carry to other GPUs through each GPU's own peak, HBM bandwidth and links.

References
----------
1. D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
   Using Megatron-LM", SC'21, arXiv:2104.04473: §2.2 (bubble (p-1)/m, interleaved
   (p-1)/(v m)), §3 (TP, PP, DP communication; scatter/gather p2p), §4 (Table 1).
2. V. Korthikanti et al., arXiv:2205.05198: §4 (sequence parallelism: all-gather +
   reduce-scatter in place of all-reduce), §5 (recomputation), Eq. 7-8.
3. S. Rajbhandari et al., ZeRO, arXiv:1910.02054, §7 (communication: stages 0-2 move
   2 Psi per step, stage 3 moves 3 Psi).
4. H. Liu et al., "Ring Attention with Blockwise Transformers", arXiv:2310.01889
   (context parallelism: K/V blocks passed around a ring, overlapped with attention).
5. S. Williams et al., "Roofline", CACM 52(4), 2009 (memory-bound time = bytes / bandwidth).
6. T. Dao, "FlashAttention-2", arXiv:2307.08691, §3.1, §4.1; J. Shah et al.,
   "FlashAttention-3", arXiv:2407.08608, Fig. 5-6 (H100 attention throughput).
7. Y. Zhao et al., "PyTorch FSDP", VLDB 2023, arXiv:2304.11277, §3.3-3.4.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from .. import _validate as v
from . import comm
from . import stacks as stacks_mod
from .arch import ModelSpec
from .attention import flash_attention_time_s, flash_fixed_elements_per_token, flash_score_elements_per_token
from .flops import RECOMPUTE_MODES, matmul_params_per_layer
from .hardware import FabricSpec, GPUSpec
from .memory import (
    OPTIMIZER_BYTES_PER_PARAM,
    MemoryBreakdown,
    _stage_layers,
    activation_bytes_per_layer,
    check_expert_layout,
    check_layout,
    layer_activation_bytes,
    memory_per_gpu,
    moe_ffn_activation_bytes,
)
from .precision import (
    FP8_SCALINGS,
    check_precision,
    fp8_cast_bytes_per_layer,
    fp8_weight_cast_bytes,
    peak_tflops_by_part,
)
from .recompute import check_recompute_modules, recompute_flops_per_token


@dataclass(frozen=True)
class Calibration:
    """Efficiency constants of the step model.

    ``matmul_efficiency``, ``gemm_traffic`` and ``elementwise_traffic`` are fitted once, to
    Narayanan et al. (2021) Table 1 (A100 80GB, full recomputation, interleaved schedule,
    10 rows), never per row; ``nvlink_efficiency``, ``attention_efficiency`` and
    ``attention_tile_overhead`` come from measurements (NCCL bus bandwidth, FlashAttention's
    published throughput), not from the calibration rows. Other
    GPUs reuse them through their own peak, HBM bandwidth and links: the GEMM roofline
    term scales with each GPU's ridge point (peak FLOP/s over HBM bandwidth).
    """

    #: e_max: share of dense peak a GEMM reaches once its operand traffic is negligible
    #: [-]. Fitted with ``elementwise_traffic`` to Table 1 (minimax of log(predicted /
    #: published TFLOP/s), k = 1): log-std 0.04, every row within 6.6%.
    matmul_efficiency: float = 0.7171
    #: k: HBM bytes a GEMM moves per byte of its compulsory traffic (operands read once,
    #: result written once) [-], in t = F/(e_max P) + k V/B (:func:`gemm_efficiency`). Not
    #: fitted: Table 1's single micro-batch size cannot identify it; 1 is the roofline's own
    #: assumption (compulsory traffic, not overlapped with math).
    gemm_traffic: float = 1.0
    #: gamma: bytes moved by memory-bound kernels per byte of stored activations [-]
    #: (fitted with e_max to Table 1: log-std 0.18).
    elementwise_traffic: float = 5.005
    #: achievable share of NVLink bandwidth in collectives [-]. Measured, not fitted: NCCL
    #: all-reduce bus bandwidth on DGX A100 is about 230 of 300 GB/s per direction.
    nvlink_efficiency: float = 0.77
    #: e_attn: share of the dense BF16 peak that fused (flash) attention reaches on a long
    #: sequence, counted as FlashAttention counts it (causal work halved, backward 2.5x the
    #: forward) [-]; shorter sequences reach s / (s + (2c + 1) T) of it. Measured, not fitted:
    #: FlashAttention-2 on H100 SXM5 (head dim 128, causal) levels off at 318-333 of 989
    #: TFLOP/s by 8-16k tokens (Shah et al. 2024, arXiv:2407.08608, Fig. 5-6); newer kernels
    #: (cuDNN, FlashAttention-3) reach more, so the figure is conservative. Freed beside e_max
    #: on the megatron rows it is not identified (H100: 0.29, log-std 0.17, held out by group
    #: 12.5% against 9.3% with it fixed; Blackwell 0.32, log-std 0.11, 5.0% against 3.7%).
    attention_efficiency: float = 0.33
    #: c: fixed work of a fused-attention query tile (load Q, fill the pipeline, write O and
    #: the log-sum-exp) in tiles of keys [-] (:func:`~llmcost.training.attention.
    #: flash_fixed_elements_per_token`): causal attention reaches s / (s + (2c + 1) T) of
    #: ``attention_efficiency``. Fitted with the plateau to FlashAttention-2's causal forward
    #: on H100 against sequence length (Shah et al. 2024 Fig. 5, 0.5k-16k tokens, six points;
    #: ``make validate FIT=1``): log-std 0.025, every point within 0.7%. The calibration rows
    #: cannot identify it (llm-foundry's 216 fsdp rows: log-std above 100, their attention a
    #: few % of the time at short sequences); FlashAttention-3's larger tiles give about 2.7.
    attention_tile_overhead: float = 0.904
    #: MXFP8 GEMM throughput relative to a per-tensor-scaled FP8 GEMM on the same GPU [-]
    #: (block-scaled MMA, E8M0 scales every 32 elements). Fitted to the five Megatron-Bridge
    #: pairs that ran FP8 and MXFP8 with the same model, GPU and layout: log-std 0.008,
    #: residuals within 1.7% (the casts are modelled apart, from their bytes).
    mxfp8_gemm_efficiency: float = 0.8923
    #: MoE: time per MoE layer per micro-batch (forward and backward) that does not scale
    #: with tokens [s]: the dropless dispatcher's device-to-host sync of per-expert token
    #: counts, then the host launching the expert kernels while the GPU waits; not paid under
    #: a full-iteration CUDA graph (``Options.cuda_graphs="full"``). Fitted, with the recipes'
    #: all-to-all overlap share (0.71), to the 106 expressible MoE rows of the Megatron-Bridge
    #: summary (``benchmarks/validate.py fit_moe``): log-std 0.078, held out by model x GPU
    #: mean 17.4% (gpt-oss-120b on GB200/GB300 stays ~40% too fast).
    moe_layer_overhead_s: float = 0.0055
    #: Time per transformer layer per micro-batch that does not scale with its tokens [s]
    #: (forward and backward; x 4/3 with full recomputation, which runs the forward again):
    #: an eager stack's host work, FSDP's hooks around every wrapped block and its rate
    #: limiter's CPU-GPU sync (Zhao et al. 2023 §3.4), the launches of unfused kernels.
    #: 0 in the megatron sets; fitted for the fsdp stack (CALIBRATION_BY_STACK).
    layer_host_overhead_s: float = 0.0


DEFAULT_CALIBRATION = Calibration()

#: e_max of B200/GB200 and of GB300, each fitted on its own dense Megatron-Bridge rows
#: (``make validate FIT=1``): B200/GB200 on 26 rows, log-std 0.013, held out mean 3.7%, max
#: 12.0%; GB300 on 22 rows, log-std 0.028, held out mean 4.5%, max 27.3%.
BLACKWELL_E = 0.5933
GB300_E = 0.7964
#: e_max of MI300X and MI325X, fitted apart (``make validate FIT=1``, fit_paired) to AMD's
#: own MLPerf Training Llama 2 70B LoRA submissions (v5.0 Jun 2025, v5.1 Nov 2025; 8 GPUs,
#: FP8) relative to NVIDIA's DGX H100 run of the same benchmark (v4.1, Nov 2024), predicted
#: with Hopper's set (data/paired_runs.csv; fitted beside Hopper's e_max 0.6921, refit to
#: 0.7000 since: a 1% shift of the reference): the step model has no LoRA step, so each run
#: is its layout's forward and backward time relative to the H100's. MI300X runs it at 0.93-0.97
#: of H100's tokens/s per GPU with 1.32x its dense peak. MI300X: log-std 0.029 from the two
#: rounds, each round predicted from the other within 4.4%; MI325X (1,000 W against 750 W,
#: HBM3e): log-std 0.027, within 3.8%; both on top of Hopper's own (log-std 0.044). The same
#: pairing puts NVIDIA's H200 run within 0.5% of the measured H200 / H100 ratio. Fitted on
#: FP8 fine-tuning only: no published pretraining run validates them, so CDNA3 predictions
#: keep the uncalibrated band (:mod:`llmcost.training.uncertainty`).
MI300X_E = 0.4024
MI325X_E = 0.5322

#: One constant set per GPU generation; only e_max is refit per generation (with every
#: constant free the fits trade e_max against the NVLink efficiency and run to their
#: bounds). Hopper: 0.7000 on the 13 expressible H100 rows (Llama 3 Table 4,
#: Megatron-Bridge FP8), log-std 0.046, held out mean 9.3%, max 24.7%. Blackwell:
#: BLACKWELL_E (B300, with no dense row, takes it). Generations with no calibration row
#: (Ada, a catalog user's own GPU, ...) take :data:`UNCALIBRATED_CALIBRATION` and carry the
#: uncalibrated band (:mod:`llmcost.training.uncertainty`).
CALIBRATION_BY_GENERATION = {
    "ampere": DEFAULT_CALIBRATION,
    "hopper": replace(DEFAULT_CALIBRATION, matmul_efficiency=0.7000),
    "blackwell": replace(DEFAULT_CALIBRATION, matmul_efficiency=BLACKWELL_E),
}

#: GPUs whose measured runs their generation's set cannot match, with their own e_max.
#: GB300 runs the same layouts 20-27% faster than GB200 with the same dense peak on paper;
#: one Blackwell e_max put GB200 +11% and GB300 -10% on average. Its larger power budget
#: (1,400 vs 1,200 W) is the likely cause, an assumption; every dense Blackwell row is FP8
#: or MXFP8, so the lead for BF16 GEMMs is an assumption too.
CALIBRATION_BY_GPU = {
    "gb300": replace(DEFAULT_CALIBRATION, matmul_efficiency=GB300_E),
    "mi300x": replace(DEFAULT_CALIBRATION, matmul_efficiency=MI300X_E),
    "mi325x": replace(DEFAULT_CALIBRATION, matmul_efficiency=MI325X_E),
}

#: The set of a GPU no published training run calibrates: the lowest e_max of any calibrated
#: set. A datasheet peak says what the tensor cores could do, not what a training step gets
#: from them (MI300X, 1.32x H100's peak, trains at 0.58x its e_max); the least efficient
#: calibrated GPU is the prior that never ranks an unmeasured GPU ahead of a measured one on
#: its peak alone.
UNCALIBRATED_CALIBRATION = min(
    [*CALIBRATION_BY_GENERATION.values(), *CALIBRATION_BY_GPU.values()],
    key=lambda c: c.matmul_efficiency)


#: GPUs whose e_max is fitted relative to a calibrated GPU on runs the step model cannot
#: express (data/paired_runs.csv), with what the fit rests on.
PAIRED_CALIBRATION = {
    "mi300x": "MLPerf Training Llama 2 70B LoRA (FP8) relative to H100",
    "mi325x": "MLPerf Training Llama 2 70B LoRA (FP8) relative to H100",
}


def is_calibrated(gpu) -> bool:
    """Whether published training runs set the GPU's constants.

    Parameters
    ----------
    gpu : GPUSpec
        Any object with an ``id`` and a ``generation`` name [-].

    Returns
    -------
    calibrated : bool
        True when its own set (:data:`CALIBRATION_BY_GPU`) or its generation's
        (:data:`CALIBRATION_BY_GENERATION`) applies, False when it takes
        :data:`UNCALIBRATED_CALIBRATION` [-].

    References
    ----------
    .. [1] data/calibration_runs.csv and data/paired_runs.csv (the runs behind the sets).
    """
    return (getattr(gpu, "id", None) in CALIBRATION_BY_GPU
            or getattr(gpu, "generation", None) in CALIBRATION_BY_GENERATION)


def calibration_note(gpu) -> str:
    """Where a GPU's e_max comes from, when not from runs the step model was validated on.

    Parameters
    ----------
    gpu : GPUSpec
        Any object with an ``id`` and a ``generation`` name [-].

    Returns
    -------
    note : str
        The paired fit (:data:`PAIRED_CALIBRATION`) or the uncalibrated prior
        (:data:`UNCALIBRATED_CALIBRATION`) with its e_max [-]; "" for a GPU whose constants
        are fitted on runs the step model expresses.

    References
    ----------
    .. [1] data/paired_runs.csv: MLCommons MLPerf Training v4.1, v5.0 and v5.1,
       llama2_70b_lora.
    """
    e = calibration_for(gpu).matmul_efficiency
    how = PAIRED_CALIBRATION.get(getattr(gpu, "id", None))
    if how:
        return f"GEMM efficiency {e:.2f} fitted to {how} (data/paired_runs.csv)"
    if not is_calibrated(gpu):
        return (f"no published training run: GEMM efficiency {e:.2f}, the lowest of any "
                "calibrated GPU, not its peak")
    return ""


#: Training stacks (:attr:`Options.stack`): the one list, :data:`llmcost.training.stacks.STACKS`.
STACKS = stacks_mod.NAMES
DEFAULT_STACK = stacks_mod.DEFAULT

#: The fsdp stack's gamma and host time per layer: properties of the software (eager
#: kernels, FSDP's per-block hooks), shared by every GPU. Fitted jointly with the per-
#: generation sets below to the 216 rows of MosaicML llm-foundry's benchmark tables
#: (mosaicml/llm-foundry@8c8dd48, MPT 125M-70B on A100 and H100; ``make validate FIT=1``)
#: and only to them: in-sample mean 4.4%, max 40.1%; gamma log-std 0.16, host time 0.13.
#: gamma is below Table 1's, whose rows also move unfused s x s softmax scores; it took over
#: some of the per-token time the attention's fixed tile work now carries (4.36 without it).
FSDP_ELEMENTWISE_TRAFFIC = 3.578
FSDP_LAYER_HOST_OVERHEAD_S = 0.00338

#: Constant sets of the training stacks other than "megatron", by GPU generation. For fsdp,
#: e_max and e_attn are refit per generation (cuBLAS and flash-attn 2 as the stack called
#: them; log-std at most 0.022), with gamma and the host time above; the NVLink efficiency,
#: k and the attention tile's fixed work keep their values (freed, k and gamma trade
#: against each other: k 3.4 with gamma at its bound, log-std 17; c runs to its bound, log-
#: std above 100; neither lowers the mean error by 0.2 point). Each of the five tables
#: predicted with the constants refit on the other four: mean 4.8%, max 42.4%. Generations
#: without fsdp rows take their megatron set with the fsdp gamma and host time.
CALIBRATION_BY_STACK = {
    "fsdp": {
        "ampere": replace(DEFAULT_CALIBRATION, matmul_efficiency=0.7734,
                          attention_efficiency=0.3207, elementwise_traffic=FSDP_ELEMENTWISE_TRAFFIC,
                          layer_host_overhead_s=FSDP_LAYER_HOST_OVERHEAD_S),
        "hopper": replace(DEFAULT_CALIBRATION, matmul_efficiency=0.6618,
                          attention_efficiency=0.1822, elementwise_traffic=FSDP_ELEMENTWISE_TRAFFIC,
                          layer_host_overhead_s=FSDP_LAYER_HOST_OVERHEAD_S),
    },
}


#: GEMM efficiency of the stacks that run Megatron's model code without Transformer Engine,
#: relative to the megatron set of the same GPU [-]: fitted on each stack's own authors'
#: published throughput only (``make validate FIT=1``). A stack not listed here nor in
#: :data:`CALIBRATION_BY_STACK` runs the megatron set (without TP overlap) and is flagged
#: uncalibrated (:func:`llmcost.training.stacks.calibration_note`): the widest band.
STACK_GEMM_SCALE: dict[str, float] = {
    # BigScience's Megatron-DeepSpeed runs (BLOOM-176B and its 177-200B tuning runs, 8-384
    # A100) and MT-NLG 530B (2,240-3,360 A100), 12 rows of data/stack_runs.csv, on the mean
    # |log error| (benchmarks/stack_fit.py): in-sample 13.7%; each source held out, refit on
    # the other: BigScience 17.8% (max 30.4%), MT-NLG 7.3% (scale 0.79-0.85 either way)
    "deepspeed": 0.7977,
    # the Ultra-Scale Playbook's best nanotron layout per model (1.3-80B) and cluster size
    # (8-512 H100), 25 expressible rows: in-sample mean 35.3%, set by the four rows a fixed
    # 1M-token batch starves (1-9B on 512 GPUs, 80B on 32: +66% to +261%), the others mostly
    # within 13%; held out, the Smol Training Playbook's two rows: 17.1% (SmolLM3 +21.6%)
    "nanotron": 0.7699,
}


def _stack_calibration(gpu, stack):
    by_gen = CALIBRATION_BY_STACK.get(stack)
    if by_gen is None:
        base = calibration_for(gpu)
        scale = STACK_GEMM_SCALE.get(stack)
        return base if scale is None else \
            replace(base, matmul_efficiency=base.matmul_efficiency * scale)
    own = by_gen.get(getattr(gpu, "generation", None))
    if own is not None:
        return own
    return replace(calibration_for(gpu), elementwise_traffic=FSDP_ELEMENTWISE_TRAFFIC,
                   layer_host_overhead_s=FSDP_LAYER_HOST_OVERHEAD_S)


def calibration_for(gpu, stack="megatron") -> Calibration:
    """The constant set of a GPU on a training stack: for "megatron" the GPU's own
    (:data:`CALIBRATION_BY_GPU`) or its generation's (:data:`CALIBRATION_BY_GENERATION`); for
    "fsdp" its generation's in :data:`CALIBRATION_BY_STACK`; for another stack the megatron
    set, its e_max scaled by the stack's own fit (:data:`STACK_GEMM_SCALE`).

    Parameters
    ----------
    gpu : GPUSpec
        Any object with an ``id`` and a ``generation`` name [-].
    stack : str
        The training stack (:data:`STACKS`).

    Returns
    -------
    calibration : Calibration
        The GPU's or its generation's set; :data:`UNCALIBRATED_CALIBRATION` (the lowest
        calibrated e_max) for a GPU no published training run calibrates. A stack that runs
        Megatron's model code without Transformer Engine takes the megatron set with its
        e_max scaled by :data:`STACK_GEMM_SCALE`.

    References
    ----------
    .. [1] data/calibration_runs.csv: Narayanan et al. 2021 Table 1; Llama 3 (arXiv:2407.21783)
       Table 4; NVIDIA Megatron-Bridge performance summary 25.11-26.08 (commit 067f987);
       MosaicML llm-foundry benchmark tables (commit 8c8dd48) for the fsdp stack.
    .. [2] data/paired_runs.csv: MLCommons MLPerf Training v4.1, v5.0 and v5.1,
       llama2_70b_lora (MI300X and MI325X relative to H100).
    """
    stack = v.choice("stack", stack, STACKS)
    if stack != "megatron":
        return _stack_calibration(gpu, stack)
    own = CALIBRATION_BY_GPU.get(getattr(gpu, "id", None))
    if own is not None:
        return own
    return CALIBRATION_BY_GENERATION.get(getattr(gpu, "generation", None),
                                         UNCALIBRATED_CALIBRATION)


@dataclass(frozen=True)
class Options:
    """Framework behaviour that is a choice, not hardware; defaults stated as assumptions."""

    #: share of the data-parallel gradient reduction overlapped with backward compute
    #: (PyTorch DDP buckets, Megatron --overlap-grad-reduce); assumption. Megatron 2021
    #: overlapped none: its Table 1 is calibrated with 0.
    dp_overlap: float = 0.9
    #: share of tensor-parallel collectives hidden behind GEMMs when TP communication
    #: overlap is on (TransformerEngine userbuffers, Megatron --tp-comm-overlap); assumption
    #: after Wang et al., ASPLOS 2023 (decomposed collective-GEMM overlap hides most of it).
    tp_overlap: float = 0.8
    #: GEMM slow-down while comm kernels share the SMs with overlap on; assumption.
    tp_overlap_gemm_penalty: float = 0.05
    #: TP communication overlap on by default? (Megatron 2021: off.)
    tp_comm_overlap: bool = False
    #: gradient bytes per parameter in the data-parallel reduction (bf16 = 2; fp32 = 4).
    grad_bytes: float = 2.0
    flash_attention: bool = False
    #: GEMM precision, "bf16", "fp8" or "mxfp8" (:mod:`llmcost.training.precision`);
    #: ``predict_step(precision=...)`` overrides it per layout.
    precision: str = "bf16"
    #: per-tensor FP8 scaling recipe: "current" (Megatron-Bridge's FP8-CS, the default of
    #: its recent recipes) or "delayed" (amax history); ignored for BF16 and MXFP8.
    fp8_scaling: str = "current"
    #: MoE: tokens the busiest expert rank receives over the mean (it sets the pace of the
    #: expert GEMMs and the all-to-all, and sizes the dispatch buffers) [-]. Default 1.25,
    #: the capacity factor Switch Transformers train with (Fedus et al. 2021,
    #: arXiv:2101.03961, §2.2, Table 1); dropless routers with auxiliary or bias balancing
    #: land near it after the first steps. Benchmarks that force balanced routing
    #: (Megatron-Bridge's performance recipes) run at 1.0.
    moe_load_imbalance: float = 1.25
    #: MoE: share of the expert all-to-all hidden behind computation [-]. Default 0 (Megatron
    #: 1F1B with the alltoall dispatcher runs them in the critical path); DualPipe
    #: (DeepSeek-V3 §3.2.1) or DeepEP / Megatron's a2a overlap hide most of it: an
    #: assumption the user states.
    moe_a2a_overlap: float = 0.0
    #: MoE: which part of the step runs as CUDA graphs (:data:`CUDA_GRAPH_MODES`); it decides
    #: whether each MoE layer pays the host overhead ``Calibration.moe_layer_overhead_s``.
    #: "none" (eager) and "partial" (per-module graphs of attention, router and dispatch
    #: preprocessing, Megatron ``cuda_graph_impl="transformer_engine"``): the dropless
    #: dispatcher still copies the per-expert token counts to the host and the host still
    #: launches the expert kernels, so the overhead stays. "full" (one graph per iteration,
    #: ``cuda_graph_impl="full_iteration"`` with the sync-free paged-stash dispatcher,
    #: ``moe_paged_stash``): no device-to-host sync and no host launches inside the step, so
    #: no overhead. Default "none" (an assumption the user states; dense models ignore it).
    cuda_graphs: str = "none"
    #: training stack (:data:`STACKS`, :mod:`llmcost.training.stacks`): "megatron" (Megatron-LM
    #: / NeMo / Megatron-Bridge with Transformer Engine; the default), "fsdp" (PyTorch FSDP /
    #: FSDP2 in eager mode, e.g. MosaicML llm-foundry, torchtitan without torch.compile),
    #: "deepspeed" (Megatron-DeepSpeed, GPT-NeoX) or "nanotron". It picks the constant set
    #: (:func:`calibration_for`) and whether TP communication can overlap (megatron only);
    #: :func:`predict_step` says what each term of the fsdp stack models.
    stack: str = "megatron"


#: CUDA-graph coverage of a training step (:attr:`Options.cuda_graphs`).
CUDA_GRAPH_MODES = ("none", "partial", "full")


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
    scaling_efficiency: np.ndarray
    dp: np.ndarray
    num_microbatches: np.ndarray
    #: per-GPU memory by component (the ``memory_bytes`` total broken down)
    memory: MemoryBreakdown
    #: transformer layers on the first, each middle, and the last pipeline stage [-]
    #: (:func:`llmcost.training.memory.pipeline_stage_layers`)
    first_stage_layers: np.ndarray = None
    middle_stage_layers: np.ndarray = None
    last_stage_layers: np.ndarray = None
    #: pipeline rank of the slowest stage, which sets the pace: 0, 1 (a middle stage) or p - 1
    slowest_stage: np.ndarray = None
    #: MoE expert-parallel all-to-all (dispatch and combine) not hidden [s]; 0 for dense
    ep_comm_s: np.ndarray = None

    #: the fields of the step-time terms (:data:`STEP_TERMS`)
    BREAKDOWN = tuple(STEP_TERMS)


def gemm_efficiency(m, n, k, peak_tflops, hbm_tb_per_s, calibration=DEFAULT_CALIBRATION,
                    operand_bytes=2.0, output_bytes=2.0):
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


def matmul_efficiency(width, peak_tflops, hbm_tb_per_s, calibration=DEFAULT_CALIBRATION,
                      rows=None):
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


def attention_core_flops_per_token(seq_len, q_dim, causal=True, recompute="none"):
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


def pipeline_bubble_fraction(pp, num_microbatches, interleave=1):
    r"""Idle share of the pipeline relative to the ideal time.

    .. math:: \beta = \frac{p - 1}{v\, m}

    Parameters
    ----------
    pp : int or array
        p [-].
    num_microbatches : int or array
        m [-].
    interleave : int or array
        v, virtual stages per GPU [-].

    Returns
    -------
    fraction : float or array
        Bubble time / ideal time [-].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §2.2.1-2.2.2.
    """
    p = v.integer("pp", pp)
    m = v.positive("num_microbatches", num_microbatches)
    vv = v.integer("interleave", interleave)
    return v.result((p - 1) / (vv * m))


def data_parallel_volume_bytes(params, zero_stage=0, grad_bytes=2.0):
    r"""Bytes each GPU sends and receives per step for gradient synchronisation.

    .. math:: V = \begin{cases} 2\,\Psi\,g & \text{stages 0-2 (all-reduce, or reduce-scatter
              + all-gather)} \\ 3\,\Psi\,g & \text{stage 3 (+ one parameter all-gather)}
              \end{cases}

    (times (n-1)/n on a ring; Psi = parameters per model-parallel shard.)

    Parameters
    ----------
    params : float or array
        Psi [-].
    zero_stage : int or array
        0-3.
    grad_bytes : float
        g, bytes per element [bytes].

    Returns
    -------
    volume : float or array
        [bytes].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §7.2.1-7.2.2.
    """
    psi = v.nonnegative("params", params)
    z = v.integer("zero_stage", zero_stage, minimum=0, maximum=3)
    g = v.positive("grad_bytes", grad_bytes)
    return v.result(np.where(z >= 3, 3.0, 2.0) * psi * g)


def zero3_exposed_comm_s(gather_s, reduce_scatter_s, forward_s, backward_s, layers,
                         num_microbatches):
    r"""Exposed time of ZeRO-3 / FSDP parameter all-gathers and gradient reduce-scatters.

    Every micro-batch, each layer's parameters are all-gathered before its forward and
    again before its backward (freed after the forward: FSDP ``reshard_after_forward``,
    ZeRO-3), and its gradients are reduce-scattered after its backward: sharded gradients
    do not accumulate across micro-batches (the default of DeepSpeed ZeRO-3 and FSDP; a
    stack that keeps unsharded gradients through accumulation, e.g. FSDP ``no_sync``,
    trades this traffic for a full gradient copy in memory and is not modelled).
    Prefetching hides the next layer's collectives behind this layer's compute, up to
    that compute; the first gather and the last reduce-scatter have nothing to hide behind:

    .. math::
        T = m \left[T_{AG} + T_{RS} + n\left(\max(0, T_{AG} - t_f)
            + \max(0, T_{AG} + T_{RS} - t_b)\right)\right]

    with T_AG, T_RS the alpha-beta ring collectives of one layer over the sharding group
    (:func:`llmcost.training.comm.hierarchical_allgather_time_s`: (N-1) latency steps plus
    bytes over the bus bandwidth times the fabric efficiency), t_f and t_b one layer's
    forward and backward compute for one micro-batch. The exposed share grows as
    micro-batches shrink (t_f, t_b fall, T_AG does not) and as the group grows (latency
    (N-1) alpha, congestion).

    Parameters
    ----------
    gather_s, reduce_scatter_s : float or array
        T_AG, T_RS: one layer's parameter all-gather and gradient reduce-scatter [s].
    forward_s, backward_s : float or array
        t_f, t_b: one layer's forward and backward compute per micro-batch [s].
    layers : int or array
        n, layers on the pipeline stage [-].
    num_microbatches : int or array
        m, micro-batches per step [-].

    Returns
    -------
    time_s : float or array
        Exposed communication per step [s].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §7.2.2 (stage 3: parameters gathered
       in forward and backward, gradients reduce-scattered: 3 Psi per step).
    .. [2] Y. Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully Sharded Data
       Parallel", VLDB 2023, arXiv:2304.11277, §3.3-3.4 (backward/forward prefetch,
       reshard after forward, gradient accumulation with and without communication).
    """
    ag = v.nonnegative("gather_s", gather_s)
    rs = v.nonnegative("reduce_scatter_s", reduce_scatter_s)
    tf = v.nonnegative("forward_s", forward_s)
    tb = v.nonnegative("backward_s", backward_s)
    n = v.nonnegative("layers", layers)
    m = v.positive("num_microbatches", num_microbatches)
    per_mb = ag + rs + n * (np.maximum(0.0, ag - tf) + np.maximum(0.0, ag + rs - tb))
    return v.result(m * per_mb)


def _layer_gemm_elements(tokens, h, d_q, d_kv, ffn, gated, tp):
    # elements (M K + K N + M N) of one layer's forward GEMMs on one GPU: QKV, projection,
    # FC1 (gate and up when gated), FC2; the two backward GEMMs touch the same matrices
    n_qkv = d_q / tp + 2.0 * d_kv
    n_fc1 = np.where(gated, 2.0, 1.0) * ffn / tp
    k_fc2 = ffn / tp
    M = tokens
    return ((M * h + h * n_qkv + M * n_qkv) + (M * d_q / tp + d_q / tp * h + M * h)
            + (M * h + h * n_fc1 + M * n_fc1) + (M * k_fc2 + k_fc2 * h + M * h))


def _moe_layer_gemm_elements(model, tokens, tp, ep, etp, imbalance):
    # one layer's forward GEMM elements on one GPU, the mean over dense and MoE layers:
    # attention projections (MLA: its five), then the dense FFN or the router, shared
    # experts and this rank's E/e experts, each a GEMM of M = e x (tokens/t) k x imbalance
    # / E rows (tokens are sequence-parallel shards inside the MoE block)
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

    def ffn(rows, width):
        return (rows * h + h * kg1 * width + rows * kg1 * width) + \
            (rows * width + width * h + rows * h)

    dense = ffn(M, model.ffn_hidden / tp)
    if not model.is_moe:
        return attn + dense
    E, k = model.moe_experts, model.moe_top_k
    Mt = M / tp
    rows = ep * Mt * k * imbalance / E
    routed = E / ep * ffn(rows, model.moe_ffn_hidden / etp)
    router = Mt * h + h * E + Mt * E
    shared = np.where(model.moe_shared_ffn_hidden > 0,
                      ffn(M, max(model.moe_shared_ffn_hidden, 1) / tp), 0.0)
    share = model.moe_layers / model.layers
    return attn + (1.0 - share) * dense + share * (router + routed + shared)


def _check(model, gpus, tp, pp, cp, micro_batch, global_batch, interleave, seq_len,
           first_stage_layers=None, last_stage_layers=None):
    gpus, tp, pp, cp, vv = check_layout(model, gpus, tp, pp, cp, interleave, seq_len,
                                        first_stage_layers, last_stage_layers)
    b = v.integer("micro_batch", micro_batch)
    B = v.integer("global_batch", global_batch)
    # tokens per step (B s, and b s below it) are int64 products: bound them where they are
    # exact, instead of letting them wrap around to negative
    step_tokens = B.astype(float) * seq_len
    if np.any(step_tokens > v.MAX_INTEGER):
        raise v.InputError("global_batch", "global_batch x seq_len must be at most 2**53 "
                                           f"tokens, got {float(np.max(step_tokens)):.3g}")
    dp = gpus // (tp * pp * cp)
    v.multiple_of("global_batch", B, "micro_batch x dp", b * dp)
    m = B // (b * dp)
    inter_bad = np.broadcast_to((vv > 1) & (m % pp != 0), np.broadcast(vv, m, pp).shape)
    if inter_bad.any():
        raise v.InputError("interleave", "the interleaved schedule needs micro-batches per "
                                         "pipeline (global_batch / (micro_batch x dp)) to be a "
                                         "multiple of pp")
    return gpus, tp, pp, cp, b, B, vv, dp, m


def _p2p_s(size_bytes, in_domain, scale_up, scale_out, nvlink_efficiency):
    # one point-to-point send over NVLink inside the scale-up domain, else over the fabric
    return np.where(in_domain,
                    comm.p2p_time_s(size_bytes, scale_up.bandwidth_gb_per_s_per_gpu,
                                    scale_up.latency_us, nvlink_efficiency),
                    comm.p2p_time_s(size_bytes, scale_out.bandwidth_gb_per_s_per_gpu,
                                    scale_out.latency_us, scale_out.efficiency))


def _congestion(nodes, scale_out):
    return comm.congestion_factor(nodes, scale_out.congestion_per_doubling,
                                  scale_out.oversubscription)


def tensor_parallel_comm_s(tokens, hidden, tp, recompute, domain_gpus, scale_up, scale_out,
                           nvlink_efficiency, overlap=0.0):
    r"""Exposed tensor-parallel collectives of one layer and one micro-batch.

    .. math:: T_{tp} = n_{tp}\, T_{AR}(2\, M h,\ t)\, (1 - \phi_{tp}),\qquad
              n_{tp} = 4 \text{ (6 with full recomputation)}

    Two all-reduces in the forward and two in the backward (with sequence parallelism an
    all-gather and a reduce-scatter each, the same bytes), two more for the recomputed
    forward; a ring over NVLink when t fits in the scale-up domain, else the hierarchical
    all-reduce over NVLink and the fabric
    (:func:`llmcost.training.comm.hierarchical_allreduce_time_s`).

    Parameters
    ----------
    tokens : float or array
        M, tokens per micro-batch on the GPU, b s / c [-].
    hidden : int
        h [-].
    tp : int or array
        t [-].
    recompute : {"none", "selective", "full"} or array of these names
    domain_gpus : int
        GPUs one NVLink domain joins [-].
    scale_up, scale_out : FabricSpec
    nvlink_efficiency : float
        Achievable share of NVLink bandwidth [-].
    overlap : float or array
        phi_tp, share hidden behind GEMMs (0 with TP communication overlap off) [-].

    Returns
    -------
    time_s : float or array
        [s] per layer per micro-batch.

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §3.3 (two all-reduces per layer in each
       direction).
    .. [2] Korthikanti et al. 2022, arXiv:2205.05198, §4.2.2 (sequence parallelism: the same
       bytes as all-gather + reduce-scatter).
    """
    n_tp = 4.0 + 2.0 * (recompute == "full")
    tp_bytes = tokens * hidden * 2.0
    t_ar_nvl = comm.ring_allreduce_time_s(tp_bytes, tp, scale_up.bandwidth_gb_per_s_per_gpu,
                                          scale_up.latency_us, nvlink_efficiency)
    t_ar_net = comm.hierarchical_allreduce_time_s(
        tp_bytes, tp, np.minimum(tp, domain_gpus), scale_up.bandwidth_gb_per_s_per_gpu,
        scale_out.bandwidth_gb_per_s_per_gpu, scale_up.latency_us, scale_out.latency_us,
        nvlink_efficiency, scale_out.efficiency,
        _congestion(np.maximum(tp // domain_gpus, 1), scale_out))
    return n_tp * np.where(tp <= domain_gpus, t_ar_nvl, t_ar_net) * (1.0 - overlap)


def context_parallel_comm_s(tokens, kv_heads, head_dim, tp, cp, attention_s, domain_gpus,
                            scale_up, scale_out, nvlink_efficiency):
    r"""Context-parallel K/V ring not hidden behind the attention math, one layer and one
    micro-batch.

    .. math:: T_{cp} = \max\left(0,\ 3 (c - 1)\, T_{p2p}\!\left(2 \cdot 2 M
              \frac{n_{kv} d_h}{\min(t, n_{kv})}\right) - t_{attn}\right)

    Each of the c - 1 ring steps passes a block of K and V (BF16) to the next rank, once in
    the forward and twice in the backward (K/V and their gradients); NVLink while t c fits
    in the scale-up domain.

    Parameters
    ----------
    tokens : float or array
        M, tokens per micro-batch on the GPU, b s / c [-].
    kv_heads, head_dim : int
        n_kv, d_h [-].
    tp, cp : int or array
        t, c [-].
    attention_s : float or array
        t_attn, the attention core's time that hides the ring [s].
    domain_gpus : int
    scale_up, scale_out : FabricSpec
    nvlink_efficiency : float

    Returns
    -------
    time_s : float or array
        [s] per layer per micro-batch.

    References
    ----------
    .. [1] H. Liu et al., "Ring Attention with Blockwise Transformers", arXiv:2310.01889,
       §3 (blocks passed around a ring, overlapped with blockwise attention).
    """
    kv_bytes = tokens * 2.0 * kv_heads * head_dim / np.minimum(tp, kv_heads) * 2.0
    t_link = _p2p_s(kv_bytes, tp * cp <= domain_gpus, scale_up, scale_out, nvlink_efficiency)
    return np.maximum(0.0, 3.0 * (cp - 1) * t_link - attention_s)


def expert_parallel_comm_s(tokens, hidden, top_k, tp, ep, etp, moe_layer_share, recomputed,
                           domain_gpus, scale_up, scale_out, nvlink_efficiency,
                           imbalance=1.0, overlap=0.0):
    r"""Exposed MoE token dispatch and combine of one layer (mean over dense and MoE layers)
    and one micro-batch, on the busiest expert rank.

    .. math:: T_{ep} = \sigma\, n_{a2a}\, T_{A2A}\!\left(\frac{M}{t} k h \cdot 2\,\iota,\
              e\right)(1 - \phi_{a2a}),\qquad n_{a2a} = 4 \text{ (6 recomputed)}

    with sigma the share of MoE layers, iota the load imbalance and the all-to-all over the
    EP group on NVLink inside the scale-up domain (domain / t_e ranks of it), the fabric
    beyond (:func:`llmcost.training.comm.hierarchical_alltoall_time_s`).

    Parameters
    ----------
    tokens : float or array
        M, tokens per micro-batch on the GPU, b s / c [-].
    hidden, top_k : int
        h, k [-].
    tp, ep, etp : int or array
        t, e, t_e [-].
    moe_layer_share : float
        sigma, MoE layers over all layers [-].
    recomputed : bool or array
        The forward's all-to-alls run again (full recomputation or the "moe" module).
    domain_gpus : int
    scale_up, scale_out : FabricSpec
    nvlink_efficiency : float
    imbalance : float
        iota, tokens of the busiest rank over the mean [-].
    overlap : float
        phi_a2a, share hidden behind computation [-].

    Returns
    -------
    time_s : float or array
        [s] per layer per micro-batch.

    References
    ----------
    .. [1] D. Lepikhin et al., "GShard", arXiv:2006.16668, §2.2 (dispatch and combine
       all-to-alls); DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, §3.2
       (overlapping them: DualPipe).
    """
    a2a_bytes = tokens / tp * top_k * hidden * 2.0 * imbalance
    ep_in_domain = np.maximum(domain_gpus // etp, 1)
    t_a2a_one = comm.hierarchical_alltoall_time_s(
        a2a_bytes, ep, ep_in_domain, scale_up.bandwidth_gb_per_s_per_gpu,
        scale_out.bandwidth_gb_per_s_per_gpu, scale_up.latency_us, scale_out.latency_us,
        nvlink_efficiency, scale_out.efficiency,
        _congestion(np.maximum(-(-ep // ep_in_domain), 1), scale_out))
    n_a2a = 4.0 + 2.0 * recomputed
    return moe_layer_share * n_a2a * t_a2a_one * (1.0 - overlap)


def pipeline_p2p_s(tokens, hidden, tp, cp, dp, pp, interleave, domain_gpus, scale_up,
                   scale_out, nvlink_efficiency):
    r"""Pipeline activation sends of one micro-batch on the critical path.

    .. math:: T_{pp} = 2 v\, T_{p2p}(2 M h / t)\quad (p > 1;\ 0 \text{ otherwise})

    One send forward and one backward per virtual stage; Megatron's scatter/gather sends
    1/t of the activations per NIC and all-gathers them after. Neighbouring stages sit
    d t c ranks apart: NVLink while that stays inside the scale-up domain.

    Parameters
    ----------
    tokens : float or array
        M, tokens per micro-batch on the GPU, b s / c [-].
    hidden : int
    tp, cp, dp, pp, interleave : int or array
        t, c, d, p, v [-].
    domain_gpus : int
    scale_up, scale_out : FabricSpec
    nvlink_efficiency : float

    Returns
    -------
    time_s : float or array
        [s] per micro-batch.

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §4.1 (scatter/gather optimization).
    """
    p2p_bytes = tokens * hidden * 2.0 / tp
    t_one = _p2p_s(p2p_bytes, tp * cp * dp < domain_gpus, scale_up, scale_out,
                   nvlink_efficiency)
    return np.where(pp > 1, 2.0 * interleave * t_one, 0.0)


def pipeline_bubble_s(pp, interleave, microbatch_s):
    r"""Pipeline fill and drain per step.

    .. math:: T_{bubble} = \frac{p - 1}{v}\, t_{mb}
              \;=\; \beta\, m\, t_{mb},\qquad \beta = \frac{p - 1}{v m}

    (:func:`pipeline_bubble_fraction`), with t_mb the slowest stage's time per micro-batch.

    Parameters
    ----------
    pp, interleave : int or array
        p, v [-].
    microbatch_s : float or array
        t_mb [s].

    Returns
    -------
    time_s : float or array
        [s] per step.

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §2.2.1-2.2.2.
    """
    return (pp - 1) / interleave * microbatch_s


def optimizer_step_s(states_bytes, hbm_bytes_per_s, weight_cast_s=0.0, casts_per_step=1):
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


class _Resolved(NamedTuple):
    # predict_step's inputs checked and resolved (layout, options, constants, memory)
    s: int
    gpus: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    cp: np.ndarray
    b: np.ndarray
    B: np.ndarray
    vv: np.ndarray
    dp: np.ndarray
    m: np.ndarray
    n_first: np.ndarray
    n_mid: np.ndarray
    n_last: np.ndarray
    rec: np.ndarray
    rec_attn: np.ndarray
    mods: tuple
    sp: np.ndarray
    zero: np.ndarray
    opt: Options
    cal: Calibration
    flash: np.ndarray
    tpo: np.ndarray
    prec: np.ndarray
    fp8: bool
    imb: float
    graphs: str
    mem: MemoryBreakdown
    ep: np.ndarray
    etp: np.ndarray
    edp: np.ndarray
    peak: float
    hbm: float
    node: int


def _resolve(model, gpu, gpus, tp, pp, global_batch, cp, micro_batch, interleave, recompute,
             sequence_parallel, zero_stage, options, calibration, seq_len, memory_kwargs,
             flash_attention, tp_comm_overlap, first_stage_layers, last_stage_layers,
             precision, ep, etp, recompute_modules) -> _Resolved:
    # the checks run in this order so that the first bad input is the one named
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    gpus, tp, pp, cp, b, B, vv, dp, m = _check(model, gpus, tp, pp, cp, micro_batch,
                                               global_batch, interleave, s,
                                               first_stage_layers, last_stage_layers)
    n_first, n_mid, n_last, _, _ = _stage_layers(
        model.layers, pp,
        None if first_stage_layers is None else np.asarray(first_stage_layers),
        None if last_stage_layers is None else np.asarray(last_stage_layers))
    rec = v.choices("recompute", recompute, RECOMPUTE_MODES)
    mods = check_recompute_modules(recompute_modules, model.attention, model.is_moe,
                                   model.moe_shared_ffn_hidden > 0)
    # the attention core recomputed by name is selective recomputation
    rec_attn = np.where((rec == "none") & ("core_attn" in mods), "selective", rec)
    sp = v.boolean("sequence_parallel", sequence_parallel)
    zero = v.integer("zero_stage", zero_stage, minimum=0, maximum=3)
    opt = options
    stack = v.choice("stack", opt.stack, STACKS)
    cal = calibration_for(gpu, stack) if calibration is None else calibration
    # shares outside [0, 1] give negative exposed times and an MFU above 1
    for share in ("dp_overlap", "tp_overlap", "tp_overlap_gemm_penalty"):
        v.in_range(share, getattr(opt, share), 0, 1)
    v.positive("grad_bytes", opt.grad_bytes)
    flash = v.boolean("flash_attention",
                      opt.flash_attention if flash_attention is None else flash_attention)
    tpo = v.boolean("tp_comm_overlap",
                    opt.tp_comm_overlap if tp_comm_overlap is None else tp_comm_overlap)
    # without Transformer Engine's userbuffers (PyTorch's, DeepSpeed's and nanotron's tensor
    # parallelism) the collectives run in the critical path: never hidden
    tpo = tpo & (tp > 1) & stacks_mod.stack(stack).tp_comm_overlap
    prec = check_precision(opt.precision if precision is None else precision, gpu)
    v.choice("fp8_scaling", opt.fp8_scaling, FP8_SCALINGS)
    imb = v.in_range("moe_load_imbalance", opt.moe_load_imbalance, 1.0, 16.0)
    v.in_range("moe_a2a_overlap", opt.moe_a2a_overlap, 0, 1)
    graphs = v.choice("cuda_graphs", opt.cuda_graphs, CUDA_GRAPH_MODES)
    mkw = dict(memory_kwargs or {})
    if model.is_moe:
        mkw.setdefault("moe_capacity_factor", imb)
    mem = memory_per_gpu(model, gpus=gpus, tp=tp, pp=pp, cp=cp, zero_stage=zero,
                         micro_batch=b, global_batch=B, recompute=rec, sequence_parallel=sp,
                         flash_attention=flash, interleave=vv, seq_len=s, first_stage_layers=first_stage_layers,
                         last_stage_layers=last_stage_layers, precision=prec,
                         generation=gpu.generation, ep=ep, etp=etp, recompute_modules=mods,
                         stack=stack, **mkw)
    ep, etp, edp = check_expert_layout(model, gpus, tp, pp, cp, ep, etp)
    # attention, logits and memory-bound work run at the BF16 peak for every precision,
    # and MFU/HFU are stated against it (one convention for all precisions). NVLink
    # reaches the scale-up domain (72 GPUs in an NVL72 rack), not the billing or failure
    # unit (a 4-GPU GB200 tray).
    return _Resolved(s, gpus, tp, pp, cp, b, B, vv, dp, m, n_first, n_mid, n_last, rec,
                     rec_attn, mods, sp, zero, opt, cal, flash, tpo, prec,
                     bool(np.any(prec != "bf16")), imb, graphs, mem, ep, etp, edp,
                     gpu.bf16_dense_tflops * 1e12, gpu.hbm_bandwidth_tb_per_s * 1e12,
                     gpu.scale_up_domain)


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


def _layer_flops(model, s, rec, rec_attn, mods, imb) -> _LayerFlops:
    # the model-FLOPs convention: 6 P_mm + 12 s d_q per token; HFU adds what recomputation
    # runs again
    h, L = model.hidden, model.layers
    p_mm = matmul_params_per_layer(h, model.heads, model.kv_heads, model.ffn_hidden,
                                   model.gated_ffn, model.head_dim)
    d_q = model.heads * model.head_dim
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
        p_model = model.active_matmul_params_per_layer
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
    return _LayerFlops(attn, p_mm, d_q, d_bar, scores, share, layer_model, layer_hw,
                       rc_mods, on_rc)


def _layer_matmul_s(model, gpu, R: _Resolved, F: _LayerFlops, tokens, rec_f, penalty):
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


def _layer_memory_bound_s(model, gpu, R: _Resolved, F: _LayerFlops, tokens, rec_f):
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
    h, moe_on = model.hidden, model.is_moe
    kv_a, hd_a = model.attention_shape
    act = activation_bytes_per_layer(s, b, h, model.heads, tp, cp, kv_a,
                                     model.ffn_hidden, model.gated_ffn, hd_a,
                                     model.dropout, R.sp, "none", R.flash)
    if moe_on:
        dense_inner = tokens * (6.0 if model.gated_ffn else 4.0) * model.ffn_hidden / tp
        moe_block = moe_ffn_activation_bytes(
            s, b, h, model.moe_experts, model.moe_top_k, model.moe_ffn_hidden,
            model.moe_shared_ffn_hidden, tp, cp, R.etp, model.gated_ffn, R.imb)
        act = act + F.share * (moe_block - dense_inner)
    t_elem = cal.elementwise_traffic * act * rec_f / hbm
    host = 0.0 if R.graphs == "full" else 1.0
    if moe_on:
        t_elem = t_elem + F.share * cal.moe_layer_overhead_s * host * rec_f
    t_elem = t_elem + cal.layer_host_overhead_s * rec_f
    if R.fp8:
        t_elem = t_elem + fp8_cast_bytes_per_layer(
            s, b, h, model.heads, tp, cp, model.kv_heads, model.ffn_hidden, model.gated_ffn,
            model.head_dim, R.sp, R.rec, R.prec, gpu.generation, opt.fp8_scaling) / hbm
    if F.rc_mods:
        imb = R.imb if moe_on else 1.0
        kept = [layer_activation_bytes(model, s, b, tp, cp, R.etp, R.sp, "none", R.flash, x,
                                       2.0, imb) for x in ((), F.rc_mods)]
        t_elem = t_elem + np.where(F.on_rc, cal.elementwise_traffic / 3.0 * (kept[0] - kept[1])
                                   / hbm, 0.0)
        if moe_on and "moe" in F.rc_mods:
            t_elem = t_elem + np.where(F.on_rc, F.share * cal.moe_layer_overhead_s * host / 3.0,
                                       0.0)
    return t_elem


def logits_s(tokens, hidden, vocab, tp, peak_flops, hbm_bytes_per_s,
             calibration=DEFAULT_CALIBRATION):
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


def _slowest_stage(layer_s, logits_s_, pp, n_first, n_mid, n_last):
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


def _heaviest_stage(model, pp, n_mid, n_last):
    # the stage with the most parameters, whose gradient reduction the step waits for: a
    # middle stage of n_mid layers, or the last with its LM head
    mid_heavier = (pp > 2) & (n_mid * model.layer_params
                              > n_last * model.layer_params + model.vocab * model.hidden)
    return np.where(mid_heavier, n_mid, n_last), mid_heavier


def _dp_collectives_s(model, R: _Resolved, scale_up, scale_out, n_heavy, mid_heavier):
    r"""The heaviest stage's data-parallel collectives: the gradient all-reduce of a step
    and one layer's ZeRO-3 parameter all-gather and gradient reduce-scatter.

    Hierarchical rings over the DP x CP group (NVLink inside the scale-up domain, the
    fabric with its congestion between nodes,
    :func:`llmcost.training.comm.hierarchical_allreduce_time_s`) for the dense parameters
    Psi / t (the embedding and LM head on their stages), and over the expert
    data-parallel group gpus / (p e t_e) for the routed experts, Psi_e / (e t_e), on the
    same links after the dense ones. Gradients move ``grad_bytes`` per parameter,
    gathered parameters 2 (BF16).

    Parameters
    ----------
    model : ModelSpec
    R : _Resolved
    scale_up, scale_out : FabricSpec
    n_heavy : int or array
        Layers on the stage with the most parameters [-].
    mid_heavier : bool or array
        That stage is a middle one (no LM head).

    Returns
    -------
    allreduce_s, gather_s, reduce_scatter_s : float or array
        T_AR per step; T_AG and T_RS of one layer [s].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §7.2 (2 Psi per step; stage 3
       3 Psi).
    .. [2] Narayanan et al. 2021, arXiv:2104.04473, §3.2 (data-parallel all-reduce per
       pipeline stage).
    """
    up, out, cal, opt, node, tp = scale_up, scale_out, R.cal, R.opt, R.node, R.tp
    L, h = model.layers, model.hidden
    expert_layer = model.expert_layer_params
    stage_params = (n_heavy * (model.layer_params - expert_layer) + np.where(
        R.pp == 1, model.params - L * model.layer_params,
        np.where(mid_heavier, 0, model.vocab * h))) / tp
    group = R.dp * R.cp
    per_node = np.minimum(group, np.maximum(node // np.minimum(tp, node), 1))
    links = (up.bandwidth_gb_per_s_per_gpu, out.bandwidth_gb_per_s_per_gpu, up.latency_us,
             out.latency_us, cal.nvlink_efficiency, out.efficiency)
    comm_args = (group, per_node, *links, _congestion(np.maximum(group // per_node, 1), out))
    t_ar = comm.hierarchical_allreduce_time_s(stage_params * opt.grad_bytes, *comm_args)
    # one layer's share (embedding and LM head spread over the layers)
    unit_params = stage_params / n_heavy
    t_gather = comm.hierarchical_allgather_time_s(2.0 * unit_params, *comm_args)
    t_scatter = comm.hierarchical_allgather_time_s(opt.grad_bytes * unit_params, *comm_args)
    if model.is_moe:
        ep, etp, edp = R.ep, R.etp, R.edp
        e_node = np.minimum(edp, np.maximum(node // np.minimum(ep * etp, node), 1))
        e_args = (edp, e_node, *links, _congestion(np.maximum(edp // e_node, 1), out))
        t_ar = t_ar + comm.hierarchical_allreduce_time_s(
            n_heavy * expert_layer / (ep * etp) * opt.grad_bytes, *e_args)
        e_unit = expert_layer / (ep * etp)
        t_gather = t_gather + comm.hierarchical_allgather_time_s(2.0 * e_unit, *e_args)
        t_scatter = t_scatter + comm.hierarchical_allgather_time_s(opt.grad_bytes * e_unit,
                                                                   *e_args)
    return t_ar, t_gather, t_scatter


def data_parallel_comm_s(allreduce_s, gather_s, reduce_scatter_s, zero_stage,
                         num_microbatches, stage_compute_s, layer_compute_s, layers,
                         overlap=0.0, recompute_factor=1.0):
    r"""Exposed data-parallel communication per step, by ZeRO stage.

    With phi the share that can overlap and W the compute it can hide behind,
    exposed(T, W) = (1 - phi) T + max(0, phi T - W):

    .. math::
        T_{dp} = \begin{cases}
        \mathrm{exposed}(T_{AR},\ t_b) & \text{ZeRO 0-1} \\
        \mathrm{exposed}(m T_{AR}/2,\ (m - 1) t_{mb} + t_b) + \mathrm{exposed}(T_{AR}/2,\ t_f)
            & \text{ZeRO-2} \\
        T_{z3} & \text{ZeRO-3 (:func:`zero3_exposed_comm_s`)}
        \end{cases}

    ZeRO 0-1 accumulate gradients locally and reduce once, behind the last backward
    t_b = 2/3 of the stage's micro-batch compute t_mb. ZeRO-2's sharded gradients cannot
    accumulate: each micro-batch reduce-scatters its own (half an all-reduce) on one
    communication stream, each hidden behind everything computed after its backward; the
    updated parameters are all-gathered behind the next forward t_f = t_mb / 3. ZeRO-3
    gathers and reduce-scatters per layer and micro-batch, each hidden behind one layer's
    forward or backward.

    Parameters
    ----------
    allreduce_s : float or array
        T_AR, the stage's gradient all-reduce [s].
    gather_s, reduce_scatter_s : float or array
        One layer's ZeRO-3 parameter all-gather and gradient reduce-scatter [s].
    zero_stage : int or array
        0-3.
    num_microbatches : int or array
        m [-].
    stage_compute_s : float or array
        t_mb, the stage's compute per micro-batch [s].
    layer_compute_s : float or array
        One layer's compute per micro-batch, forward and backward [s].
    layers : int or array
        Layers on the stage [-].
    overlap : float
        phi [-].
    recompute_factor : float or array
        4/3 with full recomputation (the forward runs twice), else 1 [-].

    Returns
    -------
    time_s : float or array
        [s] per step.

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §7.2.
    .. [2] Zhao et al. 2023, arXiv:2304.11277, §3.3-3.4.
    """
    m, phi = num_microbatches, overlap
    backward = stage_compute_s * 2.0 / 3.0   # one micro-batch's backward on this stage
    forward = stage_compute_s / 3.0

    def exposed(t, window):
        return (1 - phi) * t + np.maximum(0.0, phi * t - window)

    half = allreduce_s / 2.0   # a reduce-scatter or an all-gather is half an all-reduce
    t_z01 = exposed(allreduce_s, backward)
    t_z2 = exposed(m * half, (m - 1) * stage_compute_s + backward) + exposed(half, forward)
    fwd_compute = layer_compute_s / (3.0 * recompute_factor)
    t_z3 = zero3_exposed_comm_s(gather_s, reduce_scatter_s, fwd_compute,
                                layer_compute_s - fwd_compute, layers, m)
    return np.where(zero_stage <= 1, t_z01, np.where(zero_stage == 2, t_z2, t_z3))


def _fp8_weight_cast_s(model, gpu, R: _Resolved, F: _LayerFlops, n_slow, memory_kwargs):
    # the pacing stage's weights quantized once (FP8 master copies are cast per step)
    w_bytes = OPTIMIZER_BYTES_PER_PARAM[(memory_kwargs or {}).get("optimizer", "adam")][0]
    w_local = n_slow * F.p_mm / R.tp if not model.is_moe else n_slow * (
        (model.layer_params - model.expert_layer_params) / R.tp
        + model.expert_layer_params / (R.ep * R.etp))
    return fp8_weight_cast_bytes(w_local, R.prec, gpu.generation, R.opt.fp8_scaling,
                                 w_bytes) / R.hbm


def _ideal_step_s(model, gpu, scale_up, scale_out, R: _Resolved, step, memory_kwargs,
                  first_stage_layers, last_stage_layers):
    # the same layout if every scale-out link were as fast as NVLink (scaling efficiency)
    fast = replace(scale_out, bandwidth_gb_per_s_per_gpu=scale_up.bandwidth_gb_per_s_per_gpu,
                   latency_us=scale_up.latency_us, efficiency=R.cal.nvlink_efficiency,
                   congestion_per_doubling=0.0, oversubscription=1.0)
    if not (scale_out.bandwidth_gb_per_s_per_gpu < scale_up.bandwidth_gb_per_s_per_gpu
            or scale_out.congestion_per_doubling > 0 or scale_out.oversubscription > 1):
        return step
    return predict_step(model, gpu, scale_up, fast, gpus=R.gpus, tp=R.tp, pp=R.pp,
                        global_batch=R.B, cp=R.cp, micro_batch=R.b, interleave=R.vv,
                        recompute=R.rec, sequence_parallel=R.sp, zero_stage=R.zero,
                        options=R.opt, calibration=R.cal, seq_len=R.s,
                        memory_kwargs=memory_kwargs, with_scaling=False, flash_attention=R.flash, tp_comm_overlap=R.tpo,
                        first_stage_layers=first_stage_layers,
                        last_stage_layers=last_stage_layers, precision=R.prec, ep=R.ep,
                        etp=R.etp, recompute_modules=R.mods).step_time_s


def predict_step(model: ModelSpec, gpu: GPUSpec, scale_up: FabricSpec, scale_out: FabricSpec,
                 gpus, tp, pp, global_batch, cp=1, micro_batch=1, interleave=1,
                 recompute="none", sequence_parallel=False, zero_stage=0,
                 options: Options = Options(), calibration: Calibration | None = None,
                 seq_len=None, memory_kwargs=None, with_scaling=True,
                 flash_attention=None, tp_comm_overlap=None, first_stage_layers=None,
                 last_stage_layers=None, precision=None, ep=1, etp=1,
                 recompute_modules=()) -> StepPrediction:
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
    gpu : GPUSpec
    scale_up, scale_out : FabricSpec
        Inside a node (NVLink, PCIe) and between nodes (InfiniBand, RoCE).
    gpus, tp, pp, global_batch, cp, micro_batch, interleave : int or array
        Layout: GPUs, tensor, pipeline, context parallel, global batch [sequences],
        micro-batch [sequences], virtual pipeline chunks.
    recompute : {"none", "selective", "full"} or array of names
    sequence_parallel : bool or array
    zero_stage : int or array
    options : Options
        Overlap shares in [0, 1], precision, MoE and CUDA-graph choices, the stack.
    calibration : Calibration, optional
        Default: the GPU's set on ``options.stack`` (:func:`calibration_for`).
    seq_len : int, optional
        Default: the model's.
    memory_kwargs : dict, optional
        Passed to :func:`llmcost.training.memory.memory_per_gpu` (optimizer, overhead,
        ``activation_precision``, ``optimizer_moments``, ``moe_probs_at`` ...).
    with_scaling : bool
        Also predict the layout with ideal scale-out links, for ``scaling_efficiency``
        (doubles the work; None when False).
    flash_attention, tp_comm_overlap : bool or array, optional
        Per-layout overrides of ``options.flash_attention`` and ``options.tp_comm_overlap``.
    first_stage_layers, last_stage_layers : int or array, optional
        Layers on the first and last pipeline stage; None: split evenly, or balanced
        automatically where p does not divide them
        (:func:`llmcost.training.memory.pipeline_stage_layers`).
    precision : {"bf16", "fp8", "mxfp8"} or array of these names, optional
        GEMM precision per layout; None: ``options.precision``
        (:func:`llmcost.training.precision.check_precision`).
    ep, etp : int or array
        Expert-parallel and expert tensor-parallel sizes (MoE models; 1 for dense).
    recompute_modules : str or sequence of str
        Modules recomputed by name (Megatron-Core's ``--recompute-modules``,
        :data:`llmcost.training.recompute.RECOMPUTE_MODULES`) where ``recompute`` is not
        "full"; "core_attn" is ``recompute="selective"``. HFU counts their FLOPs, MFU not.

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
    R = _resolve(model, gpu, gpus, tp, pp, global_batch, cp, micro_batch, interleave,
                 recompute, sequence_parallel, zero_stage, options, calibration, seq_len,
                 memory_kwargs, flash_attention, tp_comm_overlap, first_stage_layers,
                 last_stage_layers, precision, ep, etp, recompute_modules)
    F = _layer_flops(model, R.s, R.rec, R.rec_attn, R.mods, R.imb)
    h, node, nvl, links = model.hidden, R.node, R.cal.nvlink_efficiency, (scale_up, scale_out)
    tokens = R.b * R.s / R.cp
    rec_f = np.where(R.rec == "full", 4.0 / 3.0, 1.0)
    penalty = np.where(R.tpo, 1.0 - R.opt.tp_overlap_gemm_penalty, 1.0)
    # per layer and micro-batch on one GPU
    t_mm, t_attn = _layer_matmul_s(model, gpu, R, F, tokens, rec_f, penalty)
    t_layer = t_mm + _layer_memory_bound_s(model, gpu, R, F, tokens, rec_f)
    t_logits = logits_s(tokens, h, model.vocab, R.tp, R.peak, R.hbm, R.cal)
    t_tp = tensor_parallel_comm_s(tokens, h, R.tp, R.rec, node, *links, nvl,
                                  np.where(R.tpo, R.opt.tp_overlap, 0.0))
    t_cp = context_parallel_comm_s(tokens, model.kv_heads, model.head_dim, R.tp, R.cp,
                                   t_attn, node, *links, nvl)
    t_ep = 0.0 if not model.is_moe else expert_parallel_comm_s(
        tokens, h, model.moe_top_k, R.tp, R.ep, R.etp, F.share,
        (R.rec == "full") | (F.on_rc & ("moe" in F.rc_mods)), node, *links, nvl, R.imb,
        R.opt.moe_a2a_overlap)
    # per micro-batch on the slowest stage, then per step
    slow, t_stage, n_slow, logits_slow = _slowest_stage(
        t_layer + t_tp + t_cp + t_ep, t_logits, R.pp, R.n_first, R.n_mid, R.n_last)
    t_p2p_mb = pipeline_p2p_s(tokens, h, R.tp, R.cp, R.dp, R.pp, R.vv, node, *links, nvl)
    t_mb = t_stage + t_p2p_mb
    bubble = pipeline_bubble_s(R.pp, R.vv, t_mb)
    n_heavy, mid_heavier = _heaviest_stage(model, R.pp, R.n_mid, R.n_last)
    stage_compute = n_heavy * t_layer + np.where(R.pp == 1, t_logits, 0.0)
    t_dp = data_parallel_comm_s(
        *_dp_collectives_s(model, R, scale_up, scale_out, n_heavy, mid_heavier), R.zero, R.m,
        stage_compute, t_layer, n_heavy, R.opt.dp_overlap, rec_f)
    states = R.mem.weights_bytes + R.mem.grads_bytes + R.mem.optimizer_bytes
    t_opt = optimizer_step_s(states, R.hbm) if not R.fp8 else optimizer_step_s(
        states, R.hbm, _fp8_weight_cast_s(model, gpu, R, F, n_slow, memory_kwargs),
        np.where(R.zero >= 3, R.m, 1))
    step = R.m * t_mb + bubble + t_dp + t_opt
    ideal = None if not with_scaling else _ideal_step_s(
        model, gpu, scale_up, scale_out, R, step, memory_kwargs, first_stage_layers,
        last_stage_layers)
    terms = dict(compute_s=R.m * (n_slow * t_layer + logits_slow), tp_comm_s=R.m * n_slow * t_tp,
                 cp_comm_s=R.m * n_slow * t_cp, ep_comm_s=R.m * n_slow * t_ep + 0.0 * step,
                 pp_p2p_s=R.m * t_p2p_mb, pp_bubble_s=bubble, dp_comm_s=t_dp, optimizer_s=t_opt)
    return _prediction(model, gpu, R, F, step, ideal, terms, slow)


def _prediction(model, gpu, R: _Resolved, F: _LayerFlops, step, ideal, terms, slow):
    # throughput, utilization and memory of the step, with the terms, as StepPrediction
    tokens_step = R.B * R.s
    head = 6.0 * model.vocab * model.hidden
    model_tf = (model.layers * F.layer_model + head) * tokens_step / (R.gpus * step) / 1e12
    hw_tf = (model.layers * F.layer_hw + head) * tokens_step / (R.gpus * step) / 1e12
    r = v.result
    return StepPrediction(
        step_time_s=r(step), **{k: r(x) for k, x in terms.items()},
        model_tflops_per_gpu=r(model_tf), hardware_tflops_per_gpu=r(hw_tf),
        mfu=r(model_tf * 1e12 / R.peak), hfu=r(hw_tf * 1e12 / R.peak),
        tokens_per_s=r(tokens_step / step), memory_bytes=r(R.mem.total_bytes),
        fits=r(R.mem.total_bytes <= gpu.memory_bytes),
        scaling_efficiency=None if ideal is None else r(np.minimum(ideal / step, 1.0)),
        dp=r(R.dp), num_microbatches=r(R.m), memory=R.mem, first_stage_layers=r(R.n_first),
        middle_stage_layers=r(R.n_mid), last_stage_layers=r(R.n_last),
        slowest_stage=r(np.choose(slow, np.broadcast_arrays(R.pp - 1, 0, 1))))
