"""Storage and checkpoints as a sized layer: checkpoint bytes per stack, who writes them, the
data read rate, data stalls, sync/async/peer-memory checkpoint timing and goodput, the
slowest-writer tail, a hot/warm/cold tier bill of materials and checkpoint-on-notice.

Pure formulas: every function takes scalars or numpy arrays and broadcasts. Tier numbers
(``data/storage_tiers.csv``) are passed in as plain arguments, so the module needs no
catalog. Bandwidths are GB/s with GB = 1e9 bytes; capacities TB = 1e12 bytes unless a name
says TiB (2**40 bytes).

References
----------
1. S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
   Models", SC 2020, arXiv:1910.02054, Sec. 3.1 (mixed-precision Adam: 2 + 2 + 12 bytes per
   parameter; the 12 are fp32 master weights, momentum and variance).
2. Megatron-Core ``dist_checkpointing`` (torch_dist format; ``FullyParallelSaveStrategy``
   spreads the save over data-parallel ranks) and PyTorch Distributed Checkpoint (DCP).
3. Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.3.1 (Tectonic:
   240 PB on 7,500 SSD servers, 2 TB/s sustained, 7 TB/s peak; bursty checkpoint writes;
   1 MB to 4 GB of state per GPU), Table 4 (405B layouts on 16,384 H100).
4. Z. Wang et al., "GEMINI: Fast Failure Recovery in Distributed Training with In-Memory
   Checkpoints", SOSP 2023, pp. 364-381, doi:10.1145/3600006.3613145 (checkpoints in local
   and peer CPU memory; remote persistent storage as the last resort).
5. J. Daly, FGCS 22(3):303-312, 2006, Eq. 13-14 and 37; J. Young, CACM 17(9), 1974.
6. J. Mohan et al., "Analyzing and Mitigating Data Stalls in DNN Training", PVLDB 14(5),
   2021 (with prefetching, fetch and compute overlap: a step takes the longer of the two).
7. AWS, "Best practices design patterns: optimizing Amazon S3 performance": at least
   3,500 PUT/COPY/POST/DELETE or 5,500 GET/HEAD requests per second per partitioned prefix.
8. AWS EC2 User Guide, "Spot Instance interruption notices" (two minutes; check every
   5 s); Google Compute Engine ``Scheduling.skipGuestOsShutdown`` (30 s between ACPI G2 soft
   off and G3 mechanical off for Spot VMs).
9. "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud) and
   N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): tiers; "500
   checkpoints x 30-60 s = 5-8 h"; "3-5 s local write for 70B"; "watch the p99".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from . import reliability as rel

# --------------------------------------------------------------------------- constants

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

#: checkpoint modes for the rework and goodput models
MODES = ("sync", "async", "peer-memory")

#: S3 request limits per partitioned prefix [requests/s] (AWS S3 performance guide).
S3_GET_PER_PREFIX_PER_S = 5500.0
S3_PUT_PER_PREFIX_PER_S = 3500.0

#: spot notice periods [s]: AWS EC2 two-minute interruption notice; GCP Spot VM 30 s from
#: ACPI G2 soft off to G3 mechanical off.
AWS_SPOT_NOTICE_S = 120.0
GCP_SPOT_NOTICE_S = 30.0
#: AWS recommends polling for the notice every 5 s: the worst-case detection delay [s].
AWS_NOTICE_POLL_S = 5.0

#: z such that Phi(z) = 0.99 (standard normal 99th percentile).
Z_99 = 2.3263478740408408

_TIB_PER_TB = 1e12 / 2 ** 40


# --------------------------------------------------------------------------- helpers

def _lookup(name, value, table):
    """Vectorized dict lookup for a name or an array of names (no per-element Python loop)."""
    arr = v.choices(name, value, tuple(table))
    keys = np.array(list(table))
    vals = np.array(list(table.values()), dtype=float)
    idx = (np.asarray(arr)[..., None] == keys).argmax(-1)
    return vals[idx]


def _ndtri_upper(t, lower=None):
    """z with P(Z > z) = t, for t in (0, 1) (scipy.special.ndtri on the smaller tail, so
    t = 1e-9 keeps full precision; ``lower`` = 1 - t computed without cancellation)."""
    from scipy import special  # see slowest_writer_quantile_s
    t = np.asarray(t, dtype=float)
    lower = 1.0 - t if lower is None else np.asarray(lower, dtype=float)
    return np.where(t < 0.5, -special.ndtri(np.clip(t, 1e-300, 0.5)),
                    special.ndtri(np.clip(lower, 1e-300, 0.5)))


def _sigma_from_ratio(p99_over_p50):
    r = v.in_range("p99_over_p50", p99_over_p50, 1.0, None)
    return np.log(r) / Z_99


# --------------------------------------------------------------------------- 1-2 checkpoint size

def checkpoint_bytes_per_param(stack="megatron-dist-opt", optimizer="adam"):
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


def checkpoint_size_bytes(params, stack="megatron-dist-opt", optimizer="adam"):
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


def checkpoint_writers(gpus, model_parallel_size=1, gpus_per_node=8, save="fully-parallel"):
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


def bytes_per_writer(size_bytes, writers):
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


# --------------------------------------------------------------------------- 3-4 data reads

def token_bytes(vocab_size):
    r"""Bytes per pre-tokenized token: the smallest unsigned integer that holds every id.

    .. math:: b = 2 \text{ if } V \le 2^{16} \text{ else } 4

    Megatron's indexed dataset switches to int32 a little earlier, at V >= 65,500.

    Parameters
    ----------
    vocab_size : int or array
        V, vocabulary size [-] (ids 0 .. V-1).

    Returns
    -------
    bytes : float or array
        b [bytes/token].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026):
       ``np.memmap(..., dtype=np.uint16)`` pre-tokenized data.
    .. [2] Megatron-Core ``datasets/indexed_dataset.py``, ``DType.optimal_dtype`` (uint16
       below 65,500, else int32).
    """
    V = v.integer("vocab_size", vocab_size)
    return v.result(np.where(V <= 2 ** 16, 2.0, 4.0))


@dataclass(frozen=True)
class DataReadRate:
    aggregate_gb_per_s: np.ndarray   # from the data tier while training runs
    per_node_gb_per_s: np.ndarray
    average_gb_per_s: np.ndarray     # over the run (lower when later epochs hit a local cache)


def data_read_rate_gb_per_s(tokens_per_s, nodes=1, bytes_per_token=2.0, read_amplification=1.0,
                            epochs=1.0, local_cache=False):
    r"""Read rate the training data puts on its storage tier.

    .. math::
        D = \frac{T\, b\, a}{10^9},\qquad D_{node} = D / n,\qquad
        \bar D = D / e \text{ (local cache) else } D

    T tokens/s consumed, b bytes per token (2 for uint16 ids, 4 above 65,536 ids: see
    :func:`token_bytes`), a read amplification (whole blocks read for partial samples,
    shuffled small reads, raw text rather than ids). With a node-local cache (e.g. the DGX
    NFS cache) only the first of e epochs reads the shared tier.

    Parameters
    ----------
    tokens_per_s : float or array
        T, training throughput [tokens/s] (>= 0).
    nodes : float or array
        n [-].
    bytes_per_token : float or array
        b [bytes/token].
    read_amplification : float or array
        a, bytes read per byte used [-] (>= 1).
    epochs : float or array
        e, passes over the data [-].
    local_cache : bool
        Later epochs read a node-local copy.

    Returns
    -------
    DataReadRate
        aggregate_gb_per_s D [GB/s], per_node_gb_per_s [GB/s], average_gb_per_s [GB/s].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026):
       pre-tokenize and memory-map; data loading under 10% of a step.
    .. [2] NVIDIA DGX best practices, "Internal Storage (NFS Cache)": later epochs read the
       local SSD cache.
    """
    T = v.nonnegative("tokens_per_s", tokens_per_s)
    n = v.positive("nodes", nodes)
    b = v.positive("bytes_per_token", bytes_per_token)
    a = v.in_range("read_amplification", read_amplification, 1.0, None)
    e = v.in_range("epochs", epochs, 0.0, None, low_inclusive=False)
    cache = v.boolean("local_cache", local_cache)
    D = T * b * a / 1e9
    avg = np.where(cache, D / np.maximum(e, 1.0), D)
    return DataReadRate(v.result(D), v.result(D / n), v.result(avg))


def read_requests_per_s(read_rate_gb_per_s, request_bytes):
    r"""Requests per second a read rate needs at a given read (block, object, range) size.

    .. math:: Q = D \cdot 10^9 / r

    Compare with the tier's request limit, e.g. S3's 5,500 GET/s per partitioned prefix
    (:data:`S3_GET_PER_PREFIX_PER_S`) times the prefixes the data is spread over.

    Parameters
    ----------
    read_rate_gb_per_s : float or array
        D [GB/s].
    request_bytes : float or array
        r, bytes per request [bytes].

    Returns
    -------
    requests : float or array
        Q [requests/s].

    References
    ----------
    .. [1] AWS, "Best practices design patterns: optimizing Amazon S3 performance" (5,500
       GET/HEAD per second per partitioned prefix).
    """
    D = v.nonnegative("read_rate_gb_per_s", read_rate_gb_per_s)
    return v.result(D * 1e9 / v.positive("request_bytes", request_bytes))


def prefixes_needed(requests_per_s, requests_per_prefix_per_s=S3_GET_PER_PREFIX_PER_S):
    r"""Prefixes (partitions) a request rate must be spread over to stay under the limit.

    .. math:: k = \max(1, \lceil Q / Q_{prefix} \rceil)

    Parameters
    ----------
    requests_per_s : float or array
        Q [requests/s].
    requests_per_prefix_per_s : float or array
        Q_prefix [requests/s per prefix] (S3: 5,500 GET, 3,500 PUT).

    Returns
    -------
    prefixes : float or array
        k [-].

    References
    ----------
    .. [1] AWS, "Best practices design patterns: optimizing Amazon S3 performance" (request
       rates scale with the number of partitioned prefixes).
    """
    Q = v.nonnegative("requests_per_s", requests_per_s)
    lim = v.positive("requests_per_prefix_per_s", requests_per_prefix_per_s)
    return v.result(np.maximum(1.0, np.ceil(Q / lim)))


def data_stall_share(read_rate_gb_per_s, tier_read_gb_per_s, tier_requests_per_s=None,
                     request_bytes=None, prefetch=True):
    r"""Share of step time spent waiting for data when the tier cannot keep up.

    The tier delivers B_eff = min(B, Q r / 1e9) GB/s (bandwidth or request limit). With
    prefetching, reads overlap compute and a step lasts the longer of the two, so

    .. math:: s = \max\left(0,\; 1 - \frac{B_{eff}}{D}\right)

    is 0 whenever the tier keeps up. Without prefetching reads and compute alternate and
    s = D / (D + B_eff).

    Parameters
    ----------
    read_rate_gb_per_s : float or array
        D, rate training consumes data [GB/s] (:func:`data_read_rate_gb_per_s`).
    tier_read_gb_per_s : float or array
        B, the tier's read bandwidth available to the job [GB/s].
    tier_requests_per_s : float or array, optional
        Q, the tier's request limit [requests/s] (S3: 5,500 x prefixes); None: unlimited.
    request_bytes : float or array, optional
        r, bytes per read request [bytes]; required with ``tier_requests_per_s``.
    prefetch : bool
        Reads overlap compute.

    Returns
    -------
    share : float or array
        s, stalled share of step time [-] in [0, 1).

    References
    ----------
    .. [1] Mohan et al., PVLDB 14(5), 2021 ("fetch stalls": with prefetching the epoch time
       is the maximum of fetch, pre-processing and compute times).
    .. [2] AWS S3 performance guide (request limits per prefix).
    """
    D = v.nonnegative("read_rate_gb_per_s", read_rate_gb_per_s)
    B = v.positive("tier_read_gb_per_s", tier_read_gb_per_s)
    if tier_requests_per_s is not None:
        if request_bytes is None:
            raise v.InputError("request_bytes", "request_bytes is required with "
                                                "tier_requests_per_s (bytes per read request)")
        Q = v.positive("tier_requests_per_s", tier_requests_per_s)
        B = np.minimum(B, Q * v.positive("request_bytes", request_bytes) / 1e9)
    pf = v.boolean("prefetch", prefetch)
    overlapped = np.where(D > 0, np.maximum(0.0, 1.0 - B / np.where(D > 0, D, 1.0)), 0.0)
    serial = D / (D + B)
    return v.result(np.where(pf, overlapped, serial))


# --------------------------------------------------------------------------- 5 checkpoint timing

def sync_stall_s(size_bytes, writer_nodes, tier_write_gb_per_s, node_write_gb_per_s):
    r"""Stall of a synchronous checkpoint: every shard reaches the shared tier first.

    .. math:: t_{sync} = \frac{S}{\min(B_{tier},\; n_w B_{node})}

    Same model as :func:`llmcost.economics.reliability.checkpoints.checkpoint_stall_s` (mode "sync"),
    which it calls.

    Parameters
    ----------
    size_bytes : float or array
        S [bytes].
    writer_nodes : float or array
        n_w, nodes writing shards [-] (:func:`checkpoint_writers`).
    tier_write_gb_per_s : float or array
        B_tier, aggregate write bandwidth of the shared tier [GB/s].
    node_write_gb_per_s : float or array
        B_node, per-node bandwidth towards the tier [GB/s].

    Returns
    -------
    stall : float or array
        t_sync [s].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026):
       synchronous saves to shared storage, 30-60 s each.
    .. [2] Llama Team 2024, arXiv:2407.21783, Sec. 3.3.1 (checkpoint bursts saturate the
       storage fabric).
    """
    return rel.checkpoint_stall_s(size_bytes, "sync", nodes=writer_nodes,
                                  shared_storage_gb_per_s=tier_write_gb_per_s,
                                  node_network_gb_per_s=node_write_gb_per_s)


def local_stall_s(size_bytes, writer_nodes, host_copy_gb_per_s, gpus_per_node=8,
                  local_write_gb_per_s=None):
    r"""Stall of an asynchronous checkpoint: the copy to host memory (and local NVMe).

    .. math::
        t_{local} &= \frac{S}{n_w\, g\, B_{host}} \quad\text{(staging in host memory)} \\
        t_{local} &= \frac{S}{n_w \min(g\, B_{host},\; B_{nvme})} \quad\text{(to local NVMe)}

    The NVMe form is :func:`llmcost.economics.reliability.checkpoints.checkpoint_stall_s` (mode
    "async"), which it calls.

    Parameters
    ----------
    size_bytes : float or array
        S [bytes].
    writer_nodes : float or array
        n_w [-].
    host_copy_gb_per_s : float or array
        B_host, device-to-host copy bandwidth per GPU [GB/s].
    gpus_per_node : float or array
        g [-].
    local_write_gb_per_s : float or array, optional
        B_nvme, per-node local NVMe write bandwidth [GB/s]; None: the loop waits only for the
        host-memory copy (the file write runs in the background).

    Returns
    -------
    stall : float or array
        t_local [s].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): local
       write 3-5 s for 70B, upload in the background.
    .. [2] A. Maurya et al., "DataStates-LLM: Lazy Asynchronous Checkpointing for Large
       Language Models", HPDC 2024 (host-memory staging).
    """
    if local_write_gb_per_s is not None:
        return rel.checkpoint_stall_s(size_bytes, "async", nodes=writer_nodes,
                                      local_write_gb_per_s=local_write_gb_per_s,
                                      host_copy_gb_per_s=host_copy_gb_per_s,
                                      gpus_per_node=gpus_per_node)
    S = v.positive("size_bytes", size_bytes)
    n = v.positive("writer_nodes", writer_nodes)
    g = v.positive("gpus_per_node", gpus_per_node)
    B = v.positive("host_copy_gb_per_s", host_copy_gb_per_s)
    return v.result(S / (n * g * B * 1e9))


def upload_s(size_bytes, writer_nodes, tier_write_gb_per_s, node_network_gb_per_s):
    r"""Background upload of an asynchronous checkpoint to the shared or object tier.

    .. math:: U = \frac{S}{\min(B_{tier},\; n_w B_{net})}

    The same transfer as a synchronous save (:func:`sync_stall_s`), but off the critical
    path; until it ends the copy is not durable.

    Parameters
    ----------
    size_bytes : float or array
        S [bytes].
    writer_nodes : float or array
        n_w [-].
    tier_write_gb_per_s : float or array
        B_tier [GB/s].
    node_network_gb_per_s : float or array
        B_net, per-node bandwidth towards the tier [GB/s].

    Returns
    -------
    upload : float or array
        U [s].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): local
       save, then asynchronous copy to S3.
    """
    return sync_stall_s(size_bytes, writer_nodes, tier_write_gb_per_s, node_network_gb_per_s)


def durable_interval_s(interval_s, upload_s):
    r"""Compute time between durable checkpoints: never shorter than one upload.

    .. math:: \tau_d = \max(\tau,\; U)

    With one host staging buffer the next snapshot would overwrite the one still being
    uploaded, so snapshots cannot come faster than uploads finish.

    Parameters
    ----------
    interval_s : float or array
        tau, the chosen (e.g. Daly's) interval [s].
    upload_s : float or array
        U [s] (:func:`upload_s`).

    Returns
    -------
    interval : float or array
        tau_d [s].

    References
    ----------
    .. [1] Daly 2006, FGCS 22(3):303, Eq. 37 (tau); N. Dixit, "GPU Clusters for LLM Training: A
       Builder's Guide" (SIVARO, 2026): async upload.
    """
    tau = v.positive("interval_s", interval_s)
    U = v.nonnegative("upload_s", upload_s)
    return v.result(np.maximum(tau, U))


def recommended_interval_s(stall_s, mtbf_s, upload_s=0.0):
    r"""Daly's interval for the blocking part of a checkpoint, raised to the upload time.

    .. math:: \tau^* = \max\left(\tau_{Daly}(\delta, M),\; U\right)

    Parameters
    ----------
    stall_s : float or array
        delta, blocking time per checkpoint [s] (sync stall, or the local stall when async).
    mtbf_s : float or array
        M [s].
    upload_s : float or array
        U, background upload per checkpoint [s] (0 for sync).

    Returns
    -------
    interval : float or array
        tau* [s] of compute between checkpoints.

    References
    ----------
    .. [1] Daly 2006, FGCS 22(3):303, Eq. 37 (via
       :func:`llmcost.economics.reliability.checkpoints.daly_interval_s`).
    """
    return durable_interval_s(rel.daly_interval_s(stall_s, mtbf_s), upload_s)


def rework_s(mode, interval_s, stall_s, upload_s=0.0, peer_copy_s=0.0, peer_share=1.0,
             remote_interval_s=None):
    r"""Expected wall time lost per failure, counted back to the last copy that survives it.

    A failure at a uniformly random phase of the period P = tau + delta loses the time since
    the last snapshot that had become durable. A snapshot taken U earlier is still uploading,
    so with probability U / P the previous one is the last durable copy:

    .. math::
        w_{sync} &= \frac{\tau + \delta}{2} \\
        w_{async} &= \frac{\tau_d + \delta}{2} + U,\quad \tau_d = \max(\tau, U) \\
        w_{peer} &= f \left(\frac{\max(\tau, C) + \delta}{2} + C\right)
                   + (1 - f)\left(\frac{\max(\tau_r, U) + \delta}{2} + U\right)

    With peer-memory copies (GEMINI) a failure that leaves each snapshot's peer alive (share
    f) rolls back only to the in-memory copy, which is safe once its peer copy (C) ends; the
    rest fall back to the durable copy uploaded every tau_r. ``w_sync`` is
    :func:`llmcost.economics.reliability.wall_time.lost_hours_per_interruption` in seconds.

    Parameters
    ----------
    mode : {"sync", "async", "peer-memory"}
    interval_s : float or array
        tau, compute between snapshots [s].
    stall_s : float or array
        delta, blocking time per snapshot [s].
    upload_s : float or array
        U, upload to durable storage [s] (async, peer-memory).
    peer_copy_s : float or array
        C, copy of a node's snapshot to its peer's memory [s] (peer-memory).
    peer_share : float or array
        f, share of failures the peer copies survive (single-node failures) [-].
    remote_interval_s : float or array, optional
        tau_r, compute between durable uploads in peer-memory mode [s]; default tau.

    Returns
    -------
    rework : float or array
        w [s] per failure.

    References
    ----------
    .. [1] Young 1974; Daly 2006, FGCS 22(3):303, Eq. 13-14 (half a period lost per failure).
    .. [2] Wang et al., SOSP 2023, doi:10.1145/3600006.3613145 (GEMINI in-memory checkpoints
       on peer hosts survive single-machine failures).
    """
    v.choice("mode", mode, MODES)
    tau = v.positive("interval_s", interval_s)
    d = v.nonnegative("stall_s", stall_s)
    U = v.nonnegative("upload_s", upload_s)
    if mode == "sync":
        return v.result(rel.lost_hours_per_interruption(tau, d) * 3600.0)
    durable = (np.maximum(tau, U) + d) / 2 + U
    if mode == "async":
        return v.result(durable)
    C = v.nonnegative("peer_copy_s", peer_copy_s)
    f = v.fraction("peer_share", peer_share, allow_zero=True)
    tr = tau if remote_interval_s is None else v.positive("remote_interval_s", remote_interval_s)
    local = (np.maximum(tau, C) + d) / 2 + C
    remote = (np.maximum(tr, U) + d) / 2 + U
    return v.result(f * local + (1 - f) * remote)


def checkpoint_goodput(mode, interval_s, stall_s, mtbf_s, restart_s=0.0, upload_s=0.0,
                       peer_copy_s=0.0, peer_share=1.0, remote_interval_s=None):
    r"""Goodput with sync, async or peer-memory checkpoints.

    Daly's expected wall time (Eq. 13-14) factors into the checkpoint overhead of a
    failure-free run and a stretch F from failures; F depends on the failures only through
    the rework per failure, w = (tau + delta)/2 in Daly's sync model. Here F is evaluated at
    the w of each mode (:func:`rework_s`):

    .. math::
        G = \frac{\tau_e}{\tau_e + \delta}\cdot\frac{1}{F(2w)},\qquad
        F(a) = \frac{M\, e^{R/M}\left(e^{a/M} - 1\right)}{a}
             \approx 1 + \frac{w + R}{M}

    with tau_e = tau (sync), max(tau, U) (async: snapshots no faster than uploads),
    max(tau, C) (peer-memory). For sync this is exactly
    :func:`llmcost.economics.reliability.wall_time.goodput`; for the others it is exact to first order
    in 1/M. 1/F(2w) is computed as ``reliability.goodput(2w, 0, M, R)``. Background uploads
    are assumed not to slow training.

    Parameters
    ----------
    mode : {"sync", "async", "peer-memory"}
    interval_s, stall_s, upload_s, peer_copy_s, peer_share, remote_interval_s
        As :func:`rework_s` [s] / [-].
    mtbf_s : float or array
        M, job mean time between failures [s].
    restart_s : float or array
        R, detect, restart and reload [s].

    Returns
    -------
    goodput : float or array
        G [-] in (0, 1].

    References
    ----------
    .. [1] Daly 2006, FGCS 22(3):303, Eq. 13-14 (via
       :func:`llmcost.economics.reliability.wall_time.goodput`).
    .. [2] Wang et al., SOSP 2023 (GEMINI).
    """
    v.choice("mode", mode, MODES)
    if mode == "sync":
        return rel.goodput(interval_s, stall_s, mtbf_s, restart_s)
    tau = v.positive("interval_s", interval_s)
    d = v.nonnegative("stall_s", stall_s)
    lag = v.nonnegative("upload_s", upload_s) if mode == "async" else \
        v.nonnegative("peer_copy_s", peer_copy_s)
    tau_e = np.maximum(tau, lag)
    w = rework_s(mode, interval_s, stall_s, upload_s, peer_copy_s, peer_share,
                 remote_interval_s)
    stretch_inv = rel.goodput(2 * np.asarray(w, float), 0.0, mtbf_s, restart_s)
    return v.result(tau_e / (tau_e + d) * stretch_inv)


# --------------------------------------------------------------------------- 6 slowest writer

def slowest_writer_quantile_s(p50_s, p99_over_p50, writers, quantile=0.5):
    r"""Quantile of the slowest of N writers' times, each lognormal with a given p99/p50.

    A synchronous save ends when its last shard lands. With per-writer times
    T = t50 exp(sigma Z), sigma = ln(p99/p50) / z_0.99, the slowest of N independent writers
    satisfies P(max <= x) = F(x)^N, so its q-quantile is exactly

    .. math:: t_q = t_{50}\exp\left(\sigma\, \Phi^{-1}\left(q^{1/N}\right)\right)

    With ~100 writers the median checkpoint already waits for one disk's p99
    (0.5^{1/100} = 0.9931).

    Parameters
    ----------
    p50_s : float or array
        t50, median write time of one writer [s].
    p99_over_p50 : float or array
        p99/p50 of one writer's time [-] (>= 1; 1 = no spread).
    writers : float or array
        N [-].
    quantile : float or array
        q of the slowest writer's time, in (0, 1) [-].

    Returns
    -------
    time : float or array
        t_q [s].

    References
    ----------
    .. [1] H. A. David and H. N. Nagaraja, "Order Statistics", 3rd ed., Wiley 2003, Sec. 2.1
       (the maximum of N i.i.d. variables has CDF F^N).
    .. [2] Phi^{-1}: ``scipy.special.ndtri``, evaluated on the smaller tail.
    .. [3] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): "watch
       the p99, not the p50".
    """
    t50 = v.positive("p50_s", p50_s)
    s = _sigma_from_ratio(p99_over_p50)
    N = v.positive("writers", writers)
    q = v.in_range("quantile", quantile, 0.0, 1.0, low_inclusive=False, high_inclusive=False)
    logp = np.log(q) / N
    z = _ndtri_upper(-np.expm1(logp), np.exp(logp))   # Phi^-1(q^(1/N)), both tails precise
    return v.result(t50 * np.exp(s * z))


def expected_slowest_writer_s(p50_s, p99_over_p50, writers):
    r"""Expected time of the slowest of N lognormal writers (extreme-value approximation).

    The maximum of N standard normals is close to u_N + b_N G, G standard Gumbel, with
    u_N = Phi^{-1}(1 - 1/N) and the von Mises norming b_N = (1 - Phi(u_N))/phi(u_N) =
    1/(N phi(u_N)). Since E[e^{tG}] = Gamma(1 - t),

    .. math:: E[\max T] \approx t_{50}\, e^{\sigma u_N}\,\Gamma(1 - \sigma b_N),
              \qquad \sigma b_N < 1

    Within 4% of the exact expectation for N >= 64 and p99/p50 <= 4 (12% at N = 8).

    Parameters
    ----------
    p50_s : float or array
        t50 [s].
    p99_over_p50 : float or array
        p99/p50 of one writer [-] (>= 1).
    writers : float or array
        N [-] (>= 2).

    Returns
    -------
    time : float or array
        E[max T] [s].

    References
    ----------
    .. [1] P. Embrechts, C. Klueppelberg and T. Mikosch, "Modelling Extremal Events",
       Springer 1997, Sec. 3.3.3 (Gumbel domain of attraction; von Mises norming
       constants d_n = F^{-1}(1 - 1/n), c_n = a(d_n) = (1 - F(d_n))/f(d_n)).
    .. [2] E. J. Gumbel, "Statistics of Extremes", Columbia University Press 1958 (Gumbel
       moment generating function Gamma(1 - t)).
    """
    t50 = v.positive("p50_s", p50_s)
    s = _sigma_from_ratio(p99_over_p50)
    N = v.in_range("writers", writers, 2.0, None)
    u = _ndtri_upper(1.0 / N)
    b = 1.0 / (N * np.exp(-u * u / 2) / np.sqrt(2 * np.pi))
    t = s * b
    if (t >= 1).any():
        bad = np.broadcast_to(np.asarray(p99_over_p50, float), t.shape)[t >= 1].flat[0]
        raise v.InputError("p99_over_p50", f"p99_over_p50 {bad:g} is too heavy a tail for "
                                           "the extreme-value form at this writer count "
                                           "(needs sigma b_N < 1); use "
                                           "slowest_writer_quantile_s")
    # imported here, not at the top: scipy.special would slow every app kernel's start
    from scipy import special
    return v.result(t50 * np.exp(s * u) * special.gamma(1.0 - t))


# --------------------------------------------------------------------------- 7 tiers

def tier_utilization(read_gb_per_s, write_gb_per_s, tier_read_gb_per_s, tier_write_gb_per_s):
    r"""Share of a tier's time a read and a write load take together.

    .. math:: u = \frac{R}{B_r} + \frac{W}{B_w}

    A linear time-sharing model: a tier that reads at B_r and writes at B_w serves both
    loads only if u <= 1. So a checkpoint burst that fits alone can still stall the data
    reads sharing its tier.

    Parameters
    ----------
    read_gb_per_s, write_gb_per_s : float or array
        R, W, loads [GB/s] (>= 0).
    tier_read_gb_per_s, tier_write_gb_per_s : float or array
        B_r, B_w, the tier's bandwidths [GB/s].

    Returns
    -------
    utilization : float or array
        u [-] (> 1: the tier cannot keep up).

    References
    ----------
    .. [1] "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud): "a
       storage tier that meets average throughput but cannot handle checkpoint bursts".
    .. [2] Llama Team 2024, arXiv:2407.21783, Sec. 3.3.1 (checkpoint writes saturate the
       storage fabric for short durations).
    """
    R = v.nonnegative("read_gb_per_s", read_gb_per_s)
    W = v.nonnegative("write_gb_per_s", write_gb_per_s)
    return v.result(R / v.positive("tier_read_gb_per_s", tier_read_gb_per_s) +
                    W / v.positive("tier_write_gb_per_s", tier_write_gb_per_s))


def per_tib_provisioned_tb(capacity_tb, throughput_gb_per_s, gb_per_s_per_tib):
    r"""Capacity to provision on a tier whose throughput scales with capacity (FSx Lustre).

    .. math:: C = \max\left(C_{need},\; \frac{B_{need}}{\beta}\cdot\frac{2^{40}}{10^{12}}
              \right)

    Parameters
    ----------
    capacity_tb : float or array
        C_need [TB].
    throughput_gb_per_s : float or array
        B_need [GB/s].
    gb_per_s_per_tib : float or array
        beta, throughput per TiB provisioned [GB/s per TiB] (FSx for Lustre Persistent-2:
        0.125, 0.25, 0.5, 1.0).

    Returns
    -------
    capacity : float or array
        C [TB].

    References
    ----------
    .. [1] AWS FSx for Lustre API, ``PerUnitStorageThroughput``: throughput capacity = storage
       capacity (TiB) x per-unit throughput (MB/s/TiB); Persistent-2 SSD: 125, 250, 500, 1000.
    """
    C = v.nonnegative("capacity_tb", capacity_tb)
    Bn = v.nonnegative("throughput_gb_per_s", throughput_gb_per_s)
    beta = v.positive("gb_per_s_per_tib", gb_per_s_per_tib)
    return v.result(np.maximum(C, Bn / beta / _TIB_PER_TB))


@dataclass(frozen=True)
class TierNeed:
    capacity_needed_tb: np.ndarray        # per node for the hot tier
    read_gb_per_s: np.ndarray             # per node for the hot tier
    write_average_gb_per_s: np.ndarray
    write_burst_gb_per_s: np.ndarray
    utilization_average: np.ndarray
    utilization_burst: np.ndarray
    meets_capacity: np.ndarray
    meets_average: np.ndarray
    meets_burst: np.ndarray
    average_but_not_burst: np.ndarray     # the scaling article's failure
    burst_collides_with_reads: np.ndarray  # the burst alone fits, not beside the data reads
    usd_per_month: np.ndarray


@dataclass(frozen=True)
class TierBill:
    hot: TierNeed
    warm: TierNeed
    cold: TierNeed
    cold_put_per_s: np.ndarray            # requests the archive writes need
    cold_get_per_s: np.ndarray            # requests the data reads need (data on cold)
    usd_per_month: np.ndarray


def _need(cap_need, cap, R, Wavg, Wburst, Br, Bw, usd):
    ua = R / Br + Wavg / Bw
    ub = R / Br + Wburst / Bw
    ma, mb = ua <= 1, ub <= 1
    return TierNeed(capacity_needed_tb=v.result(cap_need), read_gb_per_s=v.result(R),
                    write_average_gb_per_s=v.result(Wavg), write_burst_gb_per_s=v.result(Wburst),
                    utilization_average=v.result(ua), utilization_burst=v.result(ub),
                    meets_capacity=v.result(cap_need <= cap), meets_average=v.result(ma),
                    meets_burst=v.result(mb), average_but_not_burst=v.result(ma & ~mb),
                    burst_collides_with_reads=v.result((R > 0) & (Wburst / Bw <= 1) & ~mb),
                    usd_per_month=v.result(usd))


def tier_bill_of_materials(checkpoint_bytes, nodes, interval_s, burst_s, dataset_tb,
                           data_read_gb_per_s, *, hot_tb_per_node, hot_read_gb_per_s,
                           hot_write_gb_per_s, warm_tb, warm_read_gb_per_s, warm_write_gb_per_s,
                           warm_usd_per_gb_month, cold_usd_per_gb_month, cold_put_per_s,
                           cold_get_per_s, cold_part_bytes, read_request_bytes, mode="async",
                           data_tier="warm", keep_local=1, keep_warm=2, archived=0,
                           archive_every=1, hot_dataset_share=1.0, hot_usd_per_gb_month=0.0):
    r"""Capacity, bandwidth and monthly cost each storage tier needs, and whether it copes.

    Hot = node-local NVMe (per node), warm = parallel file system (aggregate), cold = object
    store (bandwidth set by its request limits). With S the checkpoint size, n nodes, tau
    the checkpoint interval, t_b the burst window (the sync stall target, or the local
    write target when async) and D the data read rate:

    .. math::
        \text{hot: } C &= K_l S/n + [\text{data on hot}]\, h\, V,\quad
            W_{burst} = [\text{async}]\, \frac{S/n}{t_b},\quad W_{avg} = [\text{async}]\,
            \frac{S/n}{\tau} \\
        \text{warm: } C &= K_w S + [\text{data not on cold}]\, V,\quad W_{avg} = S/\tau,\quad
            W_{burst} = S/t_b \text{ (sync) or } S/\tau \text{ (async: upload within } \tau) \\
        \text{cold: } C &= A\, S + V,\quad W = \frac{S}{k\tau},\quad
            B_w = Q_{put} r_{part},\quad B_r = Q_{get} r_{read}

    and the data reads D land on ``data_tier`` (per node on hot). Each tier is checked with
    :func:`tier_utilization` for the average and the burst; ``average_but_not_burst`` is the
    scaling article's failure [1] and ``burst_collides_with_reads`` flags a burst that fits alone but not
    beside the data reads on the same tier. Monthly cost: capacity needed x $/GB-month (hot
    defaults to 0, owned NVMe; cold request charges are not included).

    Parameters
    ----------
    checkpoint_bytes : float or array
        S [bytes].
    nodes : float or array
        n [-].
    interval_s : float or array
        tau, time between checkpoints [s].
    burst_s : float or array
        t_b, window a checkpoint burst must fit in [s].
    dataset_tb : float or array
        V, tokenized training data [TB].
    data_read_gb_per_s : float or array
        D, aggregate data read rate [GB/s] (:func:`data_read_rate_gb_per_s`).
    hot_tb_per_node, hot_read_gb_per_s, hot_write_gb_per_s : float or array
        Local NVMe capacity [TB] and bandwidths [GB/s] per node.
    warm_tb, warm_read_gb_per_s, warm_write_gb_per_s : float or array
        Parallel file system capacity [TB] and aggregate bandwidths [GB/s] (size a per-TiB
        tier with :func:`per_tib_provisioned_tb`).
    warm_usd_per_gb_month, cold_usd_per_gb_month, hot_usd_per_gb_month : float or array
        [USD per GB-month].
    cold_put_per_s, cold_get_per_s : float or array
        Object store request limits [requests/s] (S3: 3,500 PUT and 5,500 GET per prefix,
        times the prefixes used).
    cold_part_bytes, read_request_bytes : float or array
        Bytes per upload part and per read request [bytes].
    mode : {"sync", "async"}
    data_tier : {"hot", "warm", "cold"}
    keep_local, keep_warm : float or array
        K_l, K_w, checkpoints kept per tier [-] (local copies only when async).
    archived : float or array
        A, checkpoints archived on the cold tier [-].
    archive_every : float or array
        k, archive one checkpoint in k [-].
    hot_dataset_share : float or array
        h, share of the dataset each node keeps when ``data_tier`` is "hot" [-] (1: full
        replica, 1/n: sharded).

    Returns
    -------
    TierBill
        hot, warm, cold :class:`TierNeed` (capacities [TB], loads [GB/s], utilizations [-],
        flags, [USD/month]), the cold tier's needed request rates [requests/s] and the total
        [USD/month].

    References
    ----------
    .. [1] "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud):
       storage must absorb checkpoint bursts as well as the average.
    .. [2] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): hot
       NVMe, warm parallel FS, cold object store.
    .. [3] Llama Team 2024, arXiv:2407.21783, Sec. 3.3.1.
    .. [4] AWS S3 performance guide (request limits per prefix).
    """
    v.choice("mode", mode, ("sync", "async"))
    v.choice("data_tier", data_tier, ("hot", "warm", "cold"))
    S = v.positive("checkpoint_bytes", checkpoint_bytes)
    n = v.positive("nodes", nodes)
    tau = v.positive("interval_s", interval_s)
    tb = v.positive("burst_s", burst_s)
    V = v.nonnegative("dataset_tb", dataset_tb)
    D = v.nonnegative("data_read_gb_per_s", data_read_gb_per_s)
    Kl = v.nonnegative("keep_local", keep_local)
    Kw = v.nonnegative("keep_warm", keep_warm)
    A = v.nonnegative("archived", archived)
    k = v.in_range("archive_every", archive_every, 1.0, None)
    h = v.fraction("hot_dataset_share", hot_dataset_share, allow_zero=True)
    hot_cap = v.positive("hot_tb_per_node", hot_tb_per_node)
    hot_r = v.positive("hot_read_gb_per_s", hot_read_gb_per_s)
    hot_w = v.positive("hot_write_gb_per_s", hot_write_gb_per_s)
    warm_cap = v.positive("warm_tb", warm_tb)
    warm_r = v.positive("warm_read_gb_per_s", warm_read_gb_per_s)
    warm_w = v.positive("warm_write_gb_per_s", warm_write_gb_per_s)
    warm_usd = v.nonnegative("warm_usd_per_gb_month", warm_usd_per_gb_month)
    cold_usd = v.nonnegative("cold_usd_per_gb_month", cold_usd_per_gb_month)
    hot_usd = v.nonnegative("hot_usd_per_gb_month", hot_usd_per_gb_month)
    put = v.positive("cold_put_per_s", cold_put_per_s)
    get = v.positive("cold_get_per_s", cold_get_per_s)
    part = v.positive("cold_part_bytes", cold_part_bytes)
    rreq = v.positive("read_request_bytes", read_request_bytes)

    is_async = 1.0 if mode == "async" else 0.0
    on_hot, on_warm, on_cold = (float(data_tier == t) for t in ("hot", "warm", "cold"))
    zero = np.zeros(np.broadcast(S, n, tau, tb, V, D).shape)

    # hot, per node
    hot_need = is_async * Kl * S / n / 1e12 + on_hot * h * V + zero
    hot = _need(hot_need, hot_cap, on_hot * D / n + zero, is_async * S / n / tau / 1e9 + zero,
                is_async * S / n / tb / 1e9 + zero, hot_r, hot_w,
                hot_usd * hot_need * 1e3 * n)
    # warm, aggregate
    warm_need = Kw * S / 1e12 + (1.0 - on_cold) * V + zero
    warm_burst = (S / tau if mode == "async" else S / tb) / 1e9 + zero
    warm = _need(warm_need, warm_cap, on_warm * D + zero, S / tau / 1e9 + zero, warm_burst,
                 warm_r, warm_w, warm_usd * warm_need * 1e3)
    # cold: bandwidth is request-limited
    cold_need = A * S / 1e12 + V + zero
    cold_write = S / (k * tau) / 1e9 + zero
    cold_read = on_cold * D + zero
    cold = _need(cold_need, np.inf, cold_read, cold_write, cold_write,
                 get * rreq / 1e9, put * part / 1e9, cold_usd * cold_need * 1e3)
    total = hot.usd_per_month + warm.usd_per_month + cold.usd_per_month
    return TierBill(hot=hot, warm=warm, cold=cold,
                    cold_put_per_s=v.result(cold_write * 1e9 / part),
                    cold_get_per_s=v.result(cold_read * 1e9 / rreq), usd_per_month=v.result(total))


# --------------------------------------------------------------------------- 8 spot notice

@dataclass(frozen=True)
class NoticeCheck:
    write_s: np.ndarray   # detection + write [s]
    slack_s: np.ndarray   # notice left over (negative: does not fit) [s]
    fits: np.ndarray


def checkpoint_on_notice(node_bytes, write_gb_per_s, notice_s=AWS_SPOT_NOTICE_S,
                         detect_s=AWS_NOTICE_POLL_S):
    r"""Does a checkpoint written after a preemption notice finish before the node goes away?

    .. math:: t = t_{detect} + \frac{s_{node}}{B},\qquad \text{fits} \iff t \le t_{notice}

    ``write_gb_per_s`` must be the bandwidth to where the copy survives: on a cloud spot
    instance local instance-store disks are deleted at termination, so a copy that must
    outlive the node has to leave it (peer memory, PFS, object store); a local NVMe write
    only helps if the disk outlives the preemption.

    Parameters
    ----------
    node_bytes : float or array
        s_node, checkpoint bytes the preempted node holds [bytes].
    write_gb_per_s : float or array
        B, bandwidth to the surviving copy [GB/s].
    notice_s : float or array
        t_notice [s]: :data:`AWS_SPOT_NOTICE_S` (120) or :data:`GCP_SPOT_NOTICE_S` (30).
    detect_s : float or array
        t_detect, delay before the notice is seen [s] (AWS recommends polling every 5 s).

    Returns
    -------
    NoticeCheck
        write_s t [s], slack_s = t_notice - t [s], fits [bool].

    References
    ----------
    .. [1] AWS EC2 User Guide, "Spot Instance interruption notices" (two minutes; check every
       5 seconds; best effort).
    .. [2] Google Compute Engine API, ``Scheduling.skipGuestOsShutdown`` (30 s from ACPI G2
       soft off to G3 mechanical off for Spot VMs).
    .. [3] AWS EC2 API, ``StopInstances`` (volumes attached at launch are deleted when an
       instance terminates).
    """
    sb = v.positive("node_bytes", node_bytes)
    B = v.positive("write_gb_per_s", write_gb_per_s)
    T = v.positive("notice_s", notice_s)
    det = v.nonnegative("detect_s", detect_s)
    t = det + sb / (B * 1e9)
    return NoticeCheck(v.result(t), v.result(T - t), v.result(t <= T))
