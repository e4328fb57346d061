"""Checkpoints: their size, the stall one costs the training loop (synchronous to shared
storage or asynchronous to host memory and local NVMe), the storage bandwidth a stall target
needs, and the interval between checkpoints that balances their cost against failures.

References
----------
1. J. Young, "A first order approximation to the optimum checkpoint interval", CACM
   17(9):530-531, 1974: tau = sqrt(2 delta M).
2. J. Daly, "A higher order estimate of the optimum checkpoint interval for restart
   dumps", FGCS 22(3):303-312, 2006: Eq. 37 (interval).
3. N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): synchronous
   checkpoints 30-60 s each, asynchronous 3-5 s local write for 70B; 500 checkpoints over 18
   days = 5-8 h idle.
4. Llama Team 2024, arXiv:2407.21783, Sec. 3.3.1: Tectonic serves the 16,384-GPU cluster
   at 2 TB/s sustained, 7 TB/s peak.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v

#: bytes per parameter in a training checkpoint: bf16 weights 2 + fp32 master 4 + Adam
#: momentum 4 + variance 4 (gradients are not saved).
CHECKPOINT_BYTES_PER_PARAM = {"adam": 14.0, "adam-8bit": 8.0, "sgd": 10.0, "weights-only": 2.0}

#: shared-storage bandwidth per node [GB/s]: Meta's Tectonic sustains 2 TB/s for the 16,384
#: H100 of Llama 3 (2,048 nodes of 8; 7 TB/s peak), so 2000 / 2048 GB/s each; the sustained
#: figure, since checkpoint bursts "saturate the storage fabric" (Llama 3 Sec. 3.3.1)
STORAGE_GB_PER_S_PER_NODE = 2000.0 / 2048

#: per-node bandwidth towards shared storage [GB/s] (one 400 Gb/s storage NIC per node)
NODE_NETWORK_GB_PER_S = 50.0


def checkpoint_size_bytes(params: ArrayLike, optimizer: str = "adam") -> float | np.ndarray:
    r"""Bytes of one full training checkpoint (model and optimizer states).

    .. math:: S = k\, P,\quad k = 2 + 4 + 4 + 4 = 14 \text{ for mixed-precision Adam}

    Parameters
    ----------
    params : float or array
        P [-].
    optimizer : {"adam", "adam-8bit", "sgd", "weights-only"}

    Returns
    -------
    size : float or array
        [bytes].

    References
    ----------
    .. [1] Rajbhandari et al. 2019, arXiv:1910.02054, §3.1 (fp32 master weights, momentum and
       variance: 12 bytes; plus the 2-byte working weights).
    """
    v.choice("optimizer", optimizer, tuple(CHECKPOINT_BYTES_PER_PARAM))
    return v.result(CHECKPOINT_BYTES_PER_PARAM[optimizer] * v.positive("params", params))


def shared_tier_gb_per_s(nodes: ArrayLike, per_node_gb_per_s: ArrayLike = STORAGE_GB_PER_S_PER_NODE,
                         total_gb_per_s: ArrayLike | None = None) -> float | np.ndarray:
    r"""Aggregate bandwidth of the shared storage tier a job of n nodes gets.

    .. math:: B_{shared} = n\, b_{node} \quad\text{or the given total } B

    A cluster's storage is sized with the cluster: Tectonic gave Llama 3's 2,048 nodes 2 TB/s
    sustained, about 1 GB/s per node; a job of n nodes gets n times that. A total, when
    given, is the tier's own aggregate figure whatever the job's size.

    Parameters
    ----------
    nodes : float or array
        n [-].
    per_node_gb_per_s : float or array
        b_node, the tier's bandwidth per node [GB/s] (default 2000 / 2048).
    total_gb_per_s : float or array, optional
        B, the tier's aggregate bandwidth [GB/s]; None or 0: n b_node.

    Returns
    -------
    bandwidth : float or array
        B_shared [GB/s].

    References
    ----------
    .. [1] Llama Team 2024, arXiv:2407.21783, Sec. 3.3.1 (Tectonic: 2 TB/s sustained, 7 TB/s
       peak, for 16,384 GPUs).
    """
    n = v.positive("nodes", nodes)
    b = v.positive("per_node_gb_per_s", per_node_gb_per_s)
    if total_gb_per_s is None:
        return v.result(n * b)
    total = v.nonnegative("total_gb_per_s", total_gb_per_s)
    return v.result(np.where(total > 0, total, n * b))


@dataclass(frozen=True, eq=False)
class CheckpointStorage:
    """The paths a checkpoint's bytes take to storage and back, each checked once here.

    Every value is a scalar or an array that broadcasts with the node counts it is used at
    (all bandwidths [GB/s]).

    Attributes
    ----------
    shared_storage_gb_per_s : float or array, optional
        B_shared, the shared tier's aggregate bandwidth (the parallel file system's writes,
        the reads of a restart); None or 0: n x ``storage_gb_per_s_per_node``
        (:func:`shared_tier_gb_per_s`).
    storage_gb_per_s_per_node : float or array
        b_node, the shared tier's bandwidth per node (Llama 3's Tectonic: 2000 / 2048).
    node_network_gb_per_s : float or array
        B_node, each node's link towards the shared tier.
    local_write_gb_per_s : float or array
        B_local, each node's local NVMe write bandwidth.
    host_copy_gb_per_s : float or array
        B_host, device-to-host copy bandwidth per GPU (PCIe).
    gpus_per_node : float or array
        g [-].
    """

    shared_storage_gb_per_s: float | np.ndarray | None = None
    storage_gb_per_s_per_node: float | np.ndarray = STORAGE_GB_PER_S_PER_NODE
    node_network_gb_per_s: float | np.ndarray = NODE_NETWORK_GB_PER_S
    local_write_gb_per_s: float | np.ndarray = 5.0
    host_copy_gb_per_s: float | np.ndarray = 25.0
    gpus_per_node: float | np.ndarray = 8

    def __post_init__(self) -> None:
        if self.shared_storage_gb_per_s is not None:
            v.check_fields(self, v.nonnegative, ("shared_storage_gb_per_s",))
        v.check_fields(self, v.positive, ("storage_gb_per_s_per_node", "node_network_gb_per_s",
                                          "local_write_gb_per_s", "host_copy_gb_per_s", "gpus_per_node"))

    def shared_gb_per_s(self, nodes: ArrayLike) -> float | np.ndarray:
        """B_shared for a job of ``nodes`` nodes (:func:`shared_tier_gb_per_s`) [GB/s]."""
        return shared_tier_gb_per_s(nodes, self.storage_gb_per_s_per_node, self.shared_storage_gb_per_s)


def checkpoint_stall_s(size_bytes: ArrayLike, mode: str = "sync", nodes: ArrayLike = 1,
                       storage: CheckpointStorage | None = None) -> float | np.ndarray:
    r"""Time the training loop stops for one checkpoint, sharded over all nodes.

    .. math::
        t_{sync} &= \frac{S}{\min(B_{shared},\; n\, B_{node})} \\
        t_{async} &= \frac{S}{n \min(g\, B_{host},\; B_{local})}

    Synchronous: every shard goes to shared storage before training resumes. Asynchronous:
    the loop waits for the copy to host memory or local NVMe on each node; the upload to
    shared or object storage runs in the background.

    Parameters
    ----------
    size_bytes : float or array
        S [bytes].
    mode : {"sync", "async"}
    nodes : float or array
        n, nodes writing shards [-].
    storage : CheckpointStorage, optional
        B_shared (None or 0: n x its per-node figure), B_node, B_local, B_host and g
        [GB/s], [-]; default :class:`CheckpointStorage` (Llama 3's Tectonic per node, one
        400 Gb/s storage NIC, 5 GB/s NVMe, 25 GB/s PCIe, 8 GPUs per node).

    Returns
    -------
    stall : float or array
        [s].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): sync to
       shared storage vs local NVMe write, background upload.
    .. [2] A. Maurya et al., "DataStates-LLM: Lazy Asynchronous Checkpointing for Large
       Language Models", HPDC 2024 (host-memory staging).
    .. [3] Llama Team 2024, arXiv:2407.21783, Sec. 3.3.1 (2 TB/s for 2,048 nodes).
    """
    v.choice("mode", mode, ("sync", "async"))
    st = CheckpointStorage() if storage is None else storage
    S = v.positive("size_bytes", size_bytes)
    n = v.positive("nodes", nodes)
    if mode == "sync":
        bw = np.minimum(st.shared_gb_per_s(n), n * st.node_network_gb_per_s)
        return v.result(S / (bw * 1e9))
    per_node = np.minimum(st.gpus_per_node * st.host_copy_gb_per_s, st.local_write_gb_per_s)
    return v.result(S / (n * per_node * 1e9))


def storage_bandwidth_for_stall_gb_per_s(size_bytes: ArrayLike, target_stall_s: ArrayLike) -> float | np.ndarray:
    r"""Aggregate write bandwidth a synchronous checkpoint burst needs to stay under a stall.

    .. math:: B = S / t_{target}

    Parameters
    ----------
    size_bytes : float or array
        [bytes].
    target_stall_s : float or array
        [s].

    Returns
    -------
    bandwidth : float or array
        [GB/s].

    References
    ----------
    .. [1] "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud): "a
       storage tier that meets average throughput but cannot handle checkpoint bursts".
    """
    return v.result(v.positive("size_bytes", size_bytes) /
                    v.positive("target_stall_s", target_stall_s) / 1e9)


def young_interval_s(checkpoint_s: ArrayLike, mtbf_s: ArrayLike) -> float | np.ndarray:
    r"""Young's optimal checkpoint interval.

    .. math:: \tau = \sqrt{2\,\delta\, M}

    Parameters
    ----------
    checkpoint_s : float or array
        delta, blocking time per checkpoint [s].
    mtbf_s : float or array
        M [s].

    Returns
    -------
    interval : float or array
        [s] of compute between checkpoints.

    References
    ----------
    .. [1] Young 1974, CACM 17(9).
    """
    d = v.positive("checkpoint_s", checkpoint_s)
    M = v.positive("mtbf_s", mtbf_s)
    return v.result(np.sqrt(2 * d * M))


def daly_interval_s(checkpoint_s: ArrayLike, mtbf_s: ArrayLike) -> float | np.ndarray:

    r"""Daly's higher-order optimal checkpoint interval.

    .. math:: \tau = \sqrt{2\delta M}\left[1 + \frac{1}{3}\sqrt{\frac{\delta}{2M}}
              + \frac{1}{9}\frac{\delta}{2M}\right] - \delta \quad (\delta < 2M),
              \qquad \tau = M \quad (\delta \ge 2M)

    Parameters
    ----------
    checkpoint_s, mtbf_s : float or array
        delta, M [s].

    Returns
    -------
    interval : float or array
        [s].

    References
    ----------
    .. [1] Daly 2006, FGCS 22(3):303, Eq. 37.
    """
    d = v.positive("checkpoint_s", checkpoint_s)
    M = v.positive("mtbf_s", mtbf_s)
    x = d / (2 * M)
    tau = np.sqrt(2 * d * M) * (1 + np.sqrt(x) / 3 + x / 9) - d
    return v.result(np.where(d < 2 * M, tau, M))
