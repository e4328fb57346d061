"""A layout as each pipeline stage's memory terms read it: the sizes that split the stage's
states and activations over GPUs, and the micro-batches it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import _validate as v
from .options import OPTIMIZER_MOMENTS

#: a field's value: one scalar, or a numpy array of them for many layouts (broadcasting)
IntOrArray = Any
FloatOrArray = Any


@dataclass(frozen=True)
class StageLayout:
    """The parallel layout of one pipeline stage's memory terms, checked once (each field a
    scalar, or an array for many layouts: numpy broadcasting).

    :func:`~llmcost.training.memory.memory_per_gpu` builds it from a
    :class:`~llmcost.training.layout.Layout`, deriving the groups a Layout does not hold.

    tp, cp, pp, interleave : int or array
        t, c, p, v [-].
    zero_group : int or array
        N_d = d c, the GPUs ZeRO shards the non-expert states over (Megatron's distributed
        optimizer spans DP x CP) [-].
    ep, etp : int or array
        e, t_e [-].
    expert_zero_group : int or array
        N_ed = gpus / (p e t_e), the expert data-parallel group the routed experts' states
        shard over [-] (:func:`~llmcost.training.memory.check_expert_layout`).
    zero_stage : int or array
        0-3.
    micro_batch : int or array
        b [sequences].
    num_microbatches : float or array, optional
        m per iteration per pipeline [-]; None: as many as the schedule keeps in flight.
    seq_len : int or array, optional
        s [tokens]; needed for the activations only.
    optimizer_moments : {"fp32", "bf16"}
        Storage of the optimizer's moments (:func:`~llmcost.training.memory.model_state_bytes`).
    """

    tp: IntOrArray = 1
    cp: IntOrArray = 1
    pp: IntOrArray = 1
    interleave: IntOrArray = 1
    zero_group: IntOrArray = 1
    ep: IntOrArray = 1
    etp: IntOrArray = 1
    expert_zero_group: IntOrArray = 1
    zero_stage: IntOrArray = 0
    micro_batch: IntOrArray = 1
    num_microbatches: FloatOrArray | None = None
    seq_len: IntOrArray | None = None
    optimizer_moments: str = "fp32"

    def __post_init__(self) -> None:
        for name in ("tp", "cp", "pp", "interleave", "zero_group", "ep", "etp",
                     "expert_zero_group", "micro_batch"):
            v.integer(name, getattr(self, name))
        v.integer("zero_stage", self.zero_stage, minimum=0, maximum=3)
        if self.num_microbatches is not None:
            v.positive("num_microbatches", self.num_microbatches)
        if self.seq_len is not None:
            v.integer("seq_len", self.seq_len)
        v.choice("optimizer_moments", self.optimizer_moments, OPTIMIZER_MOMENTS)
