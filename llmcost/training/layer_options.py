"""How a transformer layer runs in training: the options the activation-memory and FP8
formulas share, checked once.

Megatron-Core sets these together on its ``TransformerConfig`` (``recompute_granularity``,
``recompute_modules``, ``sequence_parallel``, ``fp8``, ...); a layout carries them beside
its parallel sizes.

References
----------
1. Megatron-LM (commit d98e8a6), megatron/core/transformer/transformer_config.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v
from .flops import RECOMPUTE_MODES
from .recompute import RECOMPUTE_MODULES, check_recompute_modules

#: GEMM precisions: BF16, per-tensor FP8 (E4M3/E5M2) and MXFP8 (one E8M0 scale per 32)
PRECISIONS = ("bf16", "fp8", "mxfp8")
#: where an MoE layer applies the router's probabilities: on the expert outputs in the
#: combine (which then keeps them for the probabilities' gradient) or inside the expert
#: activation function (Megatron-Core from commit 2659630 on: the combine keeps nothing)
MOE_PROBS_AT = ("combine", "activation")


def _module_names(recompute_modules: str | Sequence[str] | None) -> tuple[str, ...]:
    # the names alone: whether the model has each module is checked where the model is
    # known (check_recompute_modules with its attention and MoE layers); "op_sac" is a
    # policy for a dense GQA layer, named alone
    op_sac = isinstance(recompute_modules, (str, tuple, list)) and "op_sac" in recompute_modules
    return check_recompute_modules(recompute_modules, "gqa" if op_sac else "mla",
                                   moe=not op_sac, shared_experts=True)


@dataclass(frozen=True, eq=False)
class LayerOptions:
    """Options of a transformer layer in training, each a scalar or an array that
    broadcasts with the layout's sizes. Checked once here; the formulas that take the
    group do not check them again.

    Parameters
    ----------
    recompute : {"none", "selective", "full"} or array of these names
        Activation recomputation (Korthikanti et al. 2022, §5).
    recompute_modules : str or sequence of str
        Named modules recomputed in the backward
        (:data:`llmcost.training.recompute.RECOMPUTE_MODULES`, a tuple or one
        comma-separated string); ignored where ``recompute="full"``.
    flash_attention : bool or array
        Fused attention that never stores the s x s scores.
    sequence_parallel : bool or array
        Megatron sequence parallelism: the norm/dropout region sharded over t.
    precision : {"bf16", "fp8", "mxfp8"} or array of these names
        GEMM precision (the FP8 cast and saving formulas of
        :mod:`llmcost.training.precision` read it).
    linear_input_bytes : float or array
        q, bytes per cached element of a linear layer's input [bytes], 0.5 to 4: 2 (BF16),
        1 (FP8), 1 + 1/32 (MXFP8) (:func:`llmcost.training.memory.cached_linear_input_bytes`).
    moe_capacity_factor : float or array
        c_f, tokens the busiest expert rank holds over the mean [-], 1 to 16.
    moe_probs_at : {"combine", "activation"}
        Where the router's probabilities scale the experts' work (:data:`MOE_PROBS_AT`).

    Raises
    ------
    InputError
        Naming the field, its value and the allowed range.
    """

    recompute: ArrayLike = "none"
    recompute_modules: str | Sequence[str] | None = ()
    flash_attention: ArrayLike = True
    sequence_parallel: ArrayLike = False
    precision: ArrayLike = "bf16"
    linear_input_bytes: ArrayLike = 2.0
    moe_capacity_factor: ArrayLike = 1.0
    moe_probs_at: str = "combine"

    def __post_init__(self) -> None:
        checked = dict(
            recompute=v.choices("recompute", self.recompute, RECOMPUTE_MODES),
            recompute_modules=_module_names(self.recompute_modules),
            flash_attention=v.boolean("flash_attention", self.flash_attention),
            sequence_parallel=v.boolean("sequence_parallel", self.sequence_parallel),
            precision=v.choices("precision", self.precision, PRECISIONS),
            linear_input_bytes=v.in_range("linear_input_bytes", self.linear_input_bytes, 0.5, 4.0),
            moe_capacity_factor=v.in_range("moe_capacity_factor", self.moe_capacity_factor, 1.0, 16.0),
            moe_probs_at=v.choice("moe_probs_at", self.moe_probs_at, MOE_PROBS_AT))
        for name, value in checked.items():
            object.__setattr__(self, name, value)


def _unpack(options: LayerOptions) -> tuple[np.ndarray, tuple[str, ...], np.ndarray, np.ndarray, np.ndarray]:
    """(recompute, recompute_modules, flash_attention, sequence_parallel, linear_input_bytes)
    as the checked arrays and tuple the formulas read."""
    return (np.asarray(options.recompute), tuple(options.recompute_modules or ()),
            np.asarray(options.flash_attention), np.asarray(options.sequence_parallel),
            np.asarray(options.linear_input_bytes))


__all__ = ["LayerOptions", "MOE_PROBS_AT", "PRECISIONS", "RECOMPUTE_MODULES"]
