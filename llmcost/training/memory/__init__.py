"""Per-GPU memory of a training run, by component.

Model states (weights, gradients, optimizer states) follow ZeRO; activations follow
Korthikanti et al., generalised to grouped-query attention, gated FFNs and models without
dropout (each generalisation reduces to the paper's Table 2 for a GPT layer). Everything is
in bytes; GB in names means 1e9 bytes.

The terms live in modules by topic: :mod:`~llmcost.training.memory.options` (the choices
and their bytes per parameter), :mod:`~llmcost.training.memory.states` (weights, gradients,
optimizer states, FSDP working sets), :mod:`~llmcost.training.memory.activations` (a dense
layer's stored activations), :mod:`~llmcost.training.memory.experts` (MoE layers),
:mod:`~llmcost.training.memory.layer` (a model's layer by recomputation),
:mod:`~llmcost.training.memory.pipeline` (stages and what they hold in flight),
:mod:`~llmcost.training.memory.stage_layout` (a layout as the stage terms read it) and
:mod:`~llmcost.training.memory.per_gpu` (the composed :func:`memory_per_gpu`).

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

from ..layer_options import LayerOptions
from ..recompute import RECOMPUTE_MODULES, check_recompute_modules
from .activations import (
    activation_bytes_per_layer,
    cached_linear_input_bytes,
    mla_attention_activation_bytes,
    op_sac_bytes_per_token,
)
from .experts import (
    check_expert_layout,
    moe_ffn_activation_bytes,
)
from .layer import (
    layer_activation_bytes,
    rebuilds_whole_layers,
    recompute_working_bytes,
)
from .options import (
    ACTIVATION_PRECISIONS,
    CONTEXT_BYTES,
    FINETUNE_MODES,
    FP32_MOMENTS,
    FRAGMENTATION,
    FROZEN_BYTES_PER_PARAM,
    GB,
    LORA_TARGETS,
    LOSS_BYTES,
    MOE_PROBS_AT,
    OPTIMIZER_BYTES_PER_PARAM,
    OPTIMIZER_MOMENTS,
    OPTIMIZERS,
    SCHEDULES,
    STAGES,
    ZERO_STAGES,
    MemoryOptions,
)
from .per_gpu import (
    MEMORY_TERMS,
    STACK_LOSS,
    MemoryBreakdown,
    framework_overhead_bytes,
    loss_bytes_per_logit,
    memory_per_gpu,
    seed_heuristic_memory_gb,
)
from .pipeline import (
    _interleave_ok,
    _stage_layers,
    check_layout,
    inflight_layers,
    pipeline_stage_layers,
    stage_activation_bytes,
)
from .stage_layout import StageLayout
from .states import (
    FSDP_ACCUMULATED_GRAD_BYTES,
    MEMORY_STACKS,
    lora_parameter_count,
    model_state_bytes,
    pipelined_fsdp_bytes,
    stage_adapter_state_bytes,
    stage_fp8_weight_bytes,
    stage_model_state_bytes,
    stage_parameters,
    stage_zero3_working_bytes,
    zero3_working_set_bytes,
)

__all__ = [
    "LayerOptions",
    "RECOMPUTE_MODULES",
    "check_recompute_modules",
    "GB",
    "OPTIMIZER_BYTES_PER_PARAM",
    "OPTIMIZERS",
    "FP32_MOMENTS",
    "OPTIMIZER_MOMENTS",
    "ACTIVATION_PRECISIONS",
    "MOE_PROBS_AT",
    "ZERO_STAGES",
    "FINETUNE_MODES",
    "LORA_TARGETS",
    "SCHEDULES",
    "STAGES",
    "FROZEN_BYTES_PER_PARAM",
    "model_state_bytes",
    "lora_parameter_count",
    "MEMORY_STACKS",
    "FSDP_ACCUMULATED_GRAD_BYTES",
    "pipelined_fsdp_bytes",
    "zero3_working_set_bytes",
    "StageLayout",
    "stage_parameters",
    "stage_model_state_bytes",
    "stage_adapter_state_bytes",
    "stage_zero3_working_bytes",
    "stage_fp8_weight_bytes",
    "activation_bytes_per_layer",
    "mla_attention_activation_bytes",
    "op_sac_bytes_per_token",
    "cached_linear_input_bytes",
    "moe_ffn_activation_bytes",
    "check_expert_layout",
    "layer_activation_bytes",
    "recompute_working_bytes",
    "rebuilds_whole_layers",
    "inflight_layers",
    "_stage_layers",
    "_interleave_ok",
    "pipeline_stage_layers",
    "check_layout",
    "stage_activation_bytes",
    "FRAGMENTATION",
    "CONTEXT_BYTES",
    "framework_overhead_bytes",
    "MEMORY_TERMS",
    "MemoryBreakdown",
    "LOSS_BYTES",
    "STACK_LOSS",
    "loss_bytes_per_logit",
    "MemoryOptions",
    "memory_per_gpu",
    "seed_heuristic_memory_gb",
]
