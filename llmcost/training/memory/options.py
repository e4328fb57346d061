"""The choices of a memory recipe (optimizers, ZeRO stages, fine-tuning modes, pipeline
stages) and the bytes per parameter they imply.
"""

from __future__ import annotations

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
