"""Checkpoint size and who writes it: bytes per parameter by training stack and optimizer,
the checkpoint's bytes, the writers a save strategy uses and each writer's share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v

#: bytes per parameter of the weights a checkpoint holds, by training stack: low-precision
#: working copy + fp32 master. FSDP with a bf16 ``param_dtype`` keeps only the fp32 sharded
#: parameters (the bf16 copy is made for compute and freed), so no 2-byte copy is saved.
STACK_WEIGHT_BYTES = {
    "megatron-dist-opt": 2.0 + 4.0,   # bf16 model weights + fp32 main params (dist. optimizer)
    "fsdp": 4.0,                      # fp32 sharded params
    "deepspeed-zero": 2.0 + 4.0,      # bf16 module weights + fp32 master (ZeRO optimizer)
}

#: bytes per parameter of optimizer state (fp32 unless noted); gradients are never saved.
OPTIMIZER_STATE_BYTES = {
    "adam": 4.0 + 4.0,        # momentum + variance
    "adam-8bit": 1.0 + 1.0,   # block-wise 8-bit momentum + variance (Dettmers et al. 2022)
    "sgd-momentum": 4.0,
}

#: save strategies: every rank writes its 1/N ("fully-parallel") or one data-parallel replica
#: writes (its model-parallel group, rank-0 style).
SAVE_STRATEGIES = ("fully-parallel", "one-replica")


# --------------------------------------------------------------------------- helpers

def _lookup(name: str, value: ArrayLike, table: dict[str, float]) -> np.ndarray:
    """Vectorized dict lookup for a name or an array of names (no per-element Python loop)."""
    arr = v.choices(name, value, tuple(table))
    keys = np.array(list(table))
    vals = np.array(list(table.values()), dtype=float)
    idx = (np.asarray(arr)[..., None] == keys).argmax(-1)
    return vals[idx]


# --------------------------------------------------------------------------- 1-2 checkpoint size

def checkpoint_bytes_per_param(stack: ArrayLike = "megatron-dist-opt",
                               optimizer: ArrayLike = "adam") -> float | np.ndarray:

    r"""Bytes per parameter of a full training checkpoint (weights and optimizer state).

    .. math:: k = k_w(\text{stack}) + k_o(\text{optimizer})

    with k_w = 2 + 4 (bf16 weights + fp32 master) for Megatron's distributed optimizer and
    DeepSpeed ZeRO, k_w = 4 (fp32 sharded parameters, no bf16 copy) for FSDP, and k_o = 4 + 4
    for Adam (momentum, variance), 1 + 1 for 8-bit Adam, 4 for SGD with momentum. Gradients
    are not saved. Mixed-precision Adam gives 14 (Megatron, DeepSpeed) or 12 (FSDP).

    Parameters
    ----------
    stack : {"megatron-dist-opt", "fsdp", "deepspeed-zero"} or array of them
    optimizer : {"adam", "adam-8bit", "sgd-momentum"} or array of them

    Returns
    -------
    bytes_per_param : float or array
        k [bytes/parameter].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, Sec. 3.1 (2 + 2 + K bytes, K = 12).
    .. [2] Megatron-Core distributed optimizer and ``dist_checkpointing``; PyTorch FSDP
       (Zhao et al., PVLDB 16(12), 2023: full-precision sharded parameters, low-precision
       copies for compute) and Distributed Checkpoint (DCP).
    .. [3] Dettmers et al., "8-bit Optimizers via Block-wise Quantization", ICLR 2022.
    """
    return v.result(_lookup("stack", stack, STACK_WEIGHT_BYTES) +
                    _lookup("optimizer", optimizer, OPTIMIZER_STATE_BYTES))


def checkpoint_size_bytes(params: ArrayLike, stack: ArrayLike = "megatron-dist-opt",
                          optimizer: ArrayLike = "adam") -> float | np.ndarray:
    r"""Bytes of one full training checkpoint.

    .. math:: S = k\, P

    Parameters
    ----------
    params : float or array
        P, parameters [-].
    stack, optimizer
        As :func:`checkpoint_bytes_per_param`.

    Returns
    -------
    size : float or array
        S [bytes].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, Sec. 3.1.
    """
    P = v.positive("params", params)
    return v.result(P * checkpoint_bytes_per_param(stack, optimizer))


@dataclass(frozen=True)
class CheckpointWriters:
    writers: np.ndarray        # ranks writing a shard [-]
    writer_nodes: np.ndarray   # nodes holding those ranks [-]


def checkpoint_writers(gpus: ArrayLike, model_parallel_size: ArrayLike = 1, gpus_per_node: ArrayLike = 8,
                       save: str = "fully-parallel") -> CheckpointWriters:
    r"""Ranks and nodes that write a checkpoint.

    .. math::
        N_w &= g \;(\text{fully-parallel}),\qquad N_w = m \;(\text{one-replica}) \\
        n_w &= \lceil N_w / g_{node} \rceil

    "fully-parallel": every rank writes 1/N of the state (Megatron's distributed optimizer
    with the fully-parallel save strategy, FSDP/DCP sharded state dicts). "one-replica":
    only one data-parallel replica writes, i.e. its model-parallel group (TP x PP x CP ranks,
    rank-0 style). The writer nodes assume the group is packed on whole nodes, as when TP
    equals the GPUs per node; with smaller TP the writers spread over more nodes.

    Parameters
    ----------
    gpus : int or array
        g, GPUs in the job [-].
    model_parallel_size : int or array
        m, GPUs holding one model replica (TP x PP x CP) [-]; must divide ``gpus``.
    gpus_per_node : int or array
        g_node [-].
    save : {"fully-parallel", "one-replica"}

    Returns
    -------
    CheckpointWriters
        writers N_w [-] and writer_nodes n_w [-].

    References
    ----------
    .. [1] Megatron-Core ``dist_checkpointing.strategies.fully_parallel``
       (``FullyParallelSaveStrategyWrapper``: the save is spread over data-parallel ranks).
    .. [2] Rajbhandari et al. 2019, arXiv:1910.02054, Sec. 5 (ZeRO partitions optimizer states
       over data-parallel ranks, so each rank holds 1/N_d of them).
    """
    v.choice("save", save, SAVE_STRATEGIES)
    g = v.integer("gpus", gpus)
    m = v.integer("model_parallel_size", model_parallel_size)
    gn = v.integer("gpus_per_node", gpus_per_node)
    v.divides("model_parallel_size", m, "gpus", g)
    w = np.broadcast_to(g if save == "fully-parallel" else m, np.broadcast(g, m).shape)
    nodes = -(-w // gn)
    return CheckpointWriters(v.result(w.astype(float)), v.result(nodes.astype(float)))


def bytes_per_writer(size_bytes: ArrayLike, writers: ArrayLike) -> float | np.ndarray:

    r"""Checkpoint bytes each writer holds.

    .. math:: s_w = S / N_w

    Parameters
    ----------
    size_bytes : float or array
        S [bytes].
    writers : float or array
        N_w [-] (:func:`checkpoint_writers`).

    Returns
    -------
    bytes : float or array
        s_w [bytes per writer].

    References
    ----------
    .. [1] Llama Team 2024, arXiv:2407.21783, Sec. 3.3.1 (1 MB to 4 GB per GPU).
    """
    return v.result(v.positive("size_bytes", size_bytes) / v.positive("writers", writers))
