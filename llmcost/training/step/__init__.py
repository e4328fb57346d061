"""Step time of a training layout: compute, exposed communication, pipeline bubble, optimizer.

Every layout parameter may be a numpy array; one call predicts many layouts at once. The
model is physical: matmuls run at the dense peak times an efficiency that falls for thin
GEMMs (a roofline on their M, N, K: tokens per micro-batch, h/t, f/t), fused attention at
FlashAttention's own efficiency on its causal work plus a fixed work per query tile,
memory-bound operations (norms, softmax, dropout, activations) move bytes at HBM bandwidth,
collectives follow alpha-beta costs over NVLink and the scale-out fabric. Its few constants
(:class:`Calibration`) were fitted once, to the ten rows of Megatron-LM's Table 1 (A100), and
carry to other GPUs through each GPU's own peak, HBM bandwidth and links.

The terms live in modules by topic: :mod:`~llmcost.training.step.calibration` (the
constants by GPU, generation and stack, and the :class:`Options`),
:mod:`~llmcost.training.step.compute` (GEMM and attention efficiency, a layer's FLOPs and
time, the logits, the optimizer step), :mod:`~llmcost.training.step.communication` (TP,
CP, EP, pipeline and data-parallel costs), :mod:`~llmcost.training.step.resolve` (the
inputs checked once) and :mod:`~llmcost.training.step.predict` (the composed
:func:`predict_step` and its :class:`StepPrediction`).

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

from .calibration import (
    BLACKWELL_E,
    CALIBRATION_BY_GENERATION,
    CALIBRATION_BY_GPU,
    CALIBRATION_BY_STACK,
    CUDA_GRAPH_MODES,
    DEFAULT_CALIBRATION,
    DEFAULT_STACK,
    FSDP_ELEMENTWISE_TRAFFIC,
    FSDP_LAYER_HOST_OVERHEAD_S,
    GB300_E,
    MI300X_E,
    MI325X_E,
    PAIRED_CALIBRATION,
    STACK_GEMM_SCALE,
    STACKS,
    UNCALIBRATED_CALIBRATION,
    Calibration,
    Options,
    calibration_for,
    calibration_note,
    is_calibrated,
)
from .communication import (
    DataParallelCollectives,
    context_parallel_comm_s,
    data_parallel_comm_s,
    data_parallel_volume_bytes,
    expert_parallel_comm_s,
    pipeline_bubble_fraction,
    pipeline_bubble_s,
    pipeline_p2p_s,
    tensor_parallel_comm_s,
    zero3_exposed_comm_s,
)
from .compute import (
    attention_core_flops_per_token,
    gemm_efficiency,
    logits_s,
    matmul_efficiency,
    optimizer_step_s,
)
from .predict import (
    STEP_TERMS,
    StepPrediction,
    StepTerm,
    predict_step,
)

__all__ = [
    "Calibration",
    "DEFAULT_CALIBRATION",
    "BLACKWELL_E",
    "GB300_E",
    "MI300X_E",
    "MI325X_E",
    "CALIBRATION_BY_GENERATION",
    "CALIBRATION_BY_GPU",
    "UNCALIBRATED_CALIBRATION",
    "PAIRED_CALIBRATION",
    "is_calibrated",
    "calibration_note",
    "STACKS",
    "DEFAULT_STACK",
    "FSDP_ELEMENTWISE_TRAFFIC",
    "FSDP_LAYER_HOST_OVERHEAD_S",
    "CALIBRATION_BY_STACK",
    "STACK_GEMM_SCALE",
    "calibration_for",
    "Options",
    "CUDA_GRAPH_MODES",
    "gemm_efficiency",
    "matmul_efficiency",
    "attention_core_flops_per_token",
    "logits_s",
    "optimizer_step_s",
    "pipeline_bubble_fraction",
    "data_parallel_volume_bytes",
    "zero3_exposed_comm_s",
    "tensor_parallel_comm_s",
    "DataParallelCollectives",
    "context_parallel_comm_s",
    "expert_parallel_comm_s",
    "pipeline_p2p_s",
    "pipeline_bubble_s",
    "data_parallel_comm_s",
    "StepTerm",
    "STEP_TERMS",
    "StepPrediction",
    "predict_step",
]
