"""The choices of a memory recipe (optimizers, ZeRO stages, fine-tuning modes, pipeline
stages) and the bytes per parameter they imply.
"""

from __future__ import annotations

from dataclasses import dataclass

from numpy.typing import ArrayLike

from ... import _validate as v
from ..layer_options import MOE_PROBS_AT as MOE_PROBS_AT

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
ZERO_STAGES = (0, 1, 2, 3)
FINETUNE_MODES = ("full", "lora", "qlora")
LORA_TARGETS = ("qv", "attention", "all")
SCHEDULES = ("1f1b", "gpipe")
#: pipeline stages whose memory is evaluated: rank 0, 1 and p - 1
STAGES = ("first", "middle", "last")

#: frozen base weights: 16-bit, or NF4 (4 bits) + double-quantised constants 0.127 bits [5].
FROZEN_BYTES_PER_PARAM = {"lora": 2.0, "qlora": (4 + 0.127) / 8}

#: Share of allocated bytes the caching allocator loses to fragmentation [-]: an upper bound
#: only, as the calibration runs that ran must fit (``make validate`` prints their memory
#: against capacity): Megatron-Bridge's Llama 3.1 405B on GB200 leaves room for 2.9%, its
#: Llama 3 70B on GB300 2.1% (both with expandable segments). Untuned, 5-10% is possible.
FRAGMENTATION = 0.02
#: CUDA context with cuBLAS/NCCL workspaces [bytes]: an assumption of about 1 GB, fitted to
#: no run (the calibration runs bound fragmentation with it fixed).
CONTEXT_BYTES = 1.0e9


#: the loss's bytes per logit at its peak, by implementation (:func:`loss_bytes_per_logit`)
LOSS_BYTES = {"fused": 4.0, "fp32": 12.0}


@dataclass(frozen=True)
class MemoryOptions:
    """The memory model's choices beside the layout (:func:`memory_per_gpu`), checked once.

    optimizer : str
        :data:`OPTIMIZERS`.
    schedule : str
        Pipeline schedule, :data:`SCHEDULES`.
    finetune : str
        :data:`FINETUNE_MODES`; LoRA/QLoRA with ``lora_rank`` [-] on ``lora_targets``
        (:data:`LORA_TARGETS`), QLoRA's embeddings in 16 bits or not.
    context_bytes, fragmentation
        CUDA context [bytes] and allocator fragmentation [-]
        (:func:`framework_overhead_bytes`).
    moe_capacity_factor : float, optional
        Tokens the busiest expert receives over the mean [-]; None: 1 (``predict_step``:
        its ``Options.moe_load_imbalance``).
    activation_precision : str, optional
        Cached inputs of the linear layers, :data:`ACTIVATION_PRECISIONS`; None: by the
        GEMM precision (:func:`cached_linear_input_bytes`).
    moe_probs_at : str
        :data:`MOE_PROBS_AT`.
    loss : str, optional
        The loss's implementation, :data:`LOSS_BYTES`; None: the stack's.
    """

    optimizer: str = "adam"
    schedule: str = "1f1b"
    finetune: str = "full"
    lora_rank: ArrayLike = 16
    lora_targets: str = "all"
    qlora_16bit_embeddings: bool = True
    context_bytes: ArrayLike = CONTEXT_BYTES
    fragmentation: ArrayLike = FRAGMENTATION
    moe_capacity_factor: ArrayLike | None = None
    activation_precision: str | None = None
    moe_probs_at: str = "combine"
    loss: str | None = None

    def __post_init__(self) -> None:
        v.choice("optimizer", self.optimizer, OPTIMIZERS)
        v.choice("schedule", self.schedule, SCHEDULES)
        v.choice("finetune", self.finetune, FINETUNE_MODES)
        v.integer("lora_rank", self.lora_rank)
        v.choice("lora_targets", self.lora_targets, LORA_TARGETS)
        v.boolean("qlora_16bit_embeddings", self.qlora_16bit_embeddings)
        v.nonnegative("context_bytes", self.context_bytes)
        v.in_range("fragmentation", self.fragmentation, 0, 1, high_inclusive=False)
        if self.moe_capacity_factor is not None:
            v.in_range("moe_capacity_factor", self.moe_capacity_factor, 1.0, 16.0)
        if self.activation_precision is not None:
            v.choices("activation_precision", self.activation_precision, ACTIVATION_PRECISIONS)
        v.choice("moe_probs_at", self.moe_probs_at, MOE_PROBS_AT)
        if self.loss is not None:
            v.choice("loss", self.loss, tuple(LOSS_BYTES))
