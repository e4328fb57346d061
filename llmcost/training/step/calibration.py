"""The step model's settings: its efficiency constants (:class:`Calibration`) by GPU, GPU
generation and training stack, and the run's :class:`Options`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ... import _validate as v
from .. import stacks as stacks_mod

if TYPE_CHECKING:
    from ..hardware import GPUSpec


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


def is_calibrated(gpu: GPUSpec) -> bool:
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


def calibration_note(gpu: GPUSpec) -> str:
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
    how = PAIRED_CALIBRATION.get(getattr(gpu, "id", None))  # type: ignore[arg-type]  # None finds nothing
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


def _stack_calibration(gpu: GPUSpec, stack: str) -> Calibration:
    by_gen = CALIBRATION_BY_STACK.get(stack)
    if by_gen is None:
        base = calibration_for(gpu)
        scale = STACK_GEMM_SCALE.get(stack)
        return base if scale is None else \
            replace(base, matmul_efficiency=base.matmul_efficiency * scale)
    own = by_gen.get(getattr(gpu, "generation", None))  # type: ignore[arg-type]  # None finds nothing
    if own is not None:
        return own
    return replace(calibration_for(gpu), elementwise_traffic=FSDP_ELEMENTWISE_TRAFFIC,
                   layer_host_overhead_s=FSDP_LAYER_HOST_OVERHEAD_S)


def calibration_for(gpu: GPUSpec, stack: str = "megatron") -> Calibration:
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
    own = CALIBRATION_BY_GPU.get(getattr(gpu, "id", None))  # type: ignore[arg-type]  # None finds nothing
    if own is not None:
        return own
    # a None key finds nothing
    return CALIBRATION_BY_GENERATION.get(getattr(gpu, "generation", None),  # type: ignore[arg-type]
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
