"""The restart after an interruption as named terms: detection (seeing the failure and
localizing it), rescheduling, loading the latest checkpoint and warm-up (communicators, data
loader, compilation), each from measurements of 2024-26 training stacks.

References
----------
1. B. Wan et al., "Robust LLM Training Infrastructure at ByteDance" (ByteRobust), SOSP
   2025, arXiv:2509.16293: Table 1 (incidents of 778,135 jobs in three months), Sec. 2.2
   (detection ~60 s, localization 2-15 min), Table 3 (detection with inspection), Table 7
   (requeue vs in-place restart, 2,048-16,384 GPUs), Sec. 8.1.3 (ETTR up to 97% on 9,600
   GPUs).
2. Z. Jiang et al., "MegaScale: Scaling Large Language Model Training to More Than
   10,000 GPUs", NSDI 2024, arXiv:2402.15627: Sec. 3.5 (communicator initialisation 1,047 s
   on 2,048 GPUs before, under 5 s after, under 30 s above 10,000), Sec. 4.4 (two-stage
   asynchronous checkpoints), Sec. 6.3 (detection and diagnosis under 10 min on average).
3. A. Kokolis et al., HPCA 2025, arXiv:2410.21680, Sec. V (restart overhead u_0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v
from .checkpoints import NODE_NETWORK_GB_PER_S, STORAGE_GB_PER_S_PER_NODE, CheckpointStorage, shared_tier_gb_per_s

#: share of job failures that hang (no error message, no exit code) and so are seen only when
#: a timeout fires: ByteRobust Table 1, 5,506 job hangs among 45,783 failures (39,687
#: explicit + 6,096 implicit) of 778,135 jobs in three months; the 9,582 manual restarts are
#: not failures and are left out
HANG_SHARE = 5506 / 45783

#: detector -> (a crash is seen after [s], a hang is seen after [s]). A crash leaves an error
#: message or exit code, seen in about a minute (ByteRobust Sec. 2.2: "around 60s"). A hang
#: is seen when a timeout fires:
#:
#: - "timeout": the collective timeout alone, PyTorch's ProcessGroupNCCL default of 10 min
#:   (``kProcessGroupNCCLDefaultTimeout``; Megatron-LM ``--distributed-timeout-minutes`` 10);
#: - "heartbeat": NVIDIA Resiliency Extension rank heartbeats at Megatron-Bridge's
#:   ``FaultTolerancePlugin`` default ``rank_heartbeat_timeout`` = 300 s;
#: - "inspection": second-level health inspection (ByteRobust Table 3: NIC 30 s, GPU 10 s,
#:   host 2 s; the slowest taken) and an RDMA-traffic monitor that sees a hang within a minute
#:   (Kling-Omni, arXiv:2512.16776, Sec. 2.5.3).
DETECTORS = {"timeout": (60.0, 600.0), "heartbeat": (60.0, 300.0), "inspection": (30.0, 60.0)}

#: default detector: the heartbeat monitor Megatron-Bridge recommends with its fault-tolerance
#: launcher (the same package restarts the job in place on a spare, RESCHEDULE_FITS)
DEFAULT_DETECTOR = "heartbeat"

#: from detection to knowing which node to replace [s]: ByteRobust Sec. 2.2 observes 2 to 15
#: minutes of localization for explicit failures; automated localization (node health checks,
#: the flight recorder's trace of a hung collective) is taken at the low end
LOCALIZE_S = 120.0

#: policy -> (t at 2,048 GPUs [s], exponent p) of t = t_2048 (g / 2048)^p, least-squares fits
#: in log space to ByteRobust Table 7 (4 points each, 2,048-16,384 GPUs). "requeue": kill the
#: job and requeue it on a fresh allocation (454, 545, 635, 768 s; the fit is within 1.2%);
#: "in-job-spare": restart the processes on the same allocation, a warm spare in the failed
#: node's place (the in-place hot-update row, 46, 51, 54, 65 s; within 4.8%; ByteRobust's
#: warm standby, Fig. 12, is within 5.19% of an ideal spare pool). Outside 2,048-16,384 GPUs
#: the power law is an extrapolation.
RESCHEDULE_FITS = {"requeue": (455.0, 0.250), "in-job-spare": (45.5, 0.158)}

#: default policy: NVIDIA Resiliency Extension's in-job restart with warm spares (v0.3),
#: Megatron-Bridge's FaultTolerancePlugin default of 3 in-job restarts before a requeue
DEFAULT_RESCHEDULE = "in-job-spare"

#: communicator set-up per rank [s]: MegaScale Sec. 3.5 brought Megatron-LM's start-up to
#: "under 5 seconds on 2048 GPUs, and to under 30 seconds on more than 10,000 GPUs"; 5 s /
#: 2,048 ranks, the tighter of the two bounds (it keeps 10,000 ranks under 25 s). Both points
#: are upper bounds, so linear growth (the O(n) barrier they reached) is assumed, not fitted.
INIT_S_PER_RANK = 5.0 / 2048

#: restoring the data loader's state [s]: ByteCheckpoint (arXiv:2407.20143, NSDI 2025)
#: collects about 1 GB of loader state in about 8 s; a restore is taken to take as long
DATALOADER_S = 8.0


def detection_s(detector: str = DEFAULT_DETECTOR, hang_share: ArrayLike = HANG_SHARE,
                localize_s: ArrayLike = LOCALIZE_S) -> float | np.ndarray:
    r"""Time from a failure to knowing which node to replace: seeing it, then localizing it.

    .. math:: t_{detect} = (1 - h)\, t_{crash} + h\, t_{hang} + t_{localize}

    A crash leaves an error and is seen within t_crash; a hang (share h of failures) shows
    nothing until a timeout or monitor fires after t_hang. The NCCL flight recorder and stack
    traces then point at the hung rank's node, node health checks at a failed one.

    Parameters
    ----------
    detector : {"timeout", "heartbeat", "inspection"}
        Which mechanism sees a hang (:data:`DETECTORS`).
    hang_share : float or array
        h [-] (ByteRobust Table 1: 0.120).
    localize_s : float or array
        t_localize [s] (low end of ByteRobust's observed 2-15 min).

    Returns
    -------
    time : float or array
        t_detect [s].

    References
    ----------
    .. [1] Wan et al. 2025 (ByteRobust), arXiv:2509.16293, Table 1, Sec. 2.2, Table 3.
    .. [2] PyTorch ``torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp``
       (``kProcessGroupNCCLDefaultTimeout`` = 10 min), commit 4c2f280.
    .. [3] NVIDIA-NeMo/Megatron-Bridge ``src/megatron/bridge/recipes/run_plugins.py``
       (``FaultTolerancePlugin.rank_heartbeat_timeout`` = 300), commit 17a3836.
    .. [4] Kling Team, "Kling-Omni Technical Report", arXiv:2512.16776, Sec. 2.5.3.
    """
    v.choice("detector", detector, tuple(DETECTORS))
    crash, hang = DETECTORS[detector]
    h = v.fraction("hang_share", hang_share, allow_zero=True)
    loc = v.nonnegative("localize_s", localize_s)
    return v.result((1 - h) * crash + h * hang + loc)


def reschedule_s(gpus: ArrayLike, policy: str = DEFAULT_RESCHEDULE) -> float | np.ndarray:
    r"""Time to put the job back on healthy nodes and start its processes.

    .. math:: t_{resched} = t_{2048} \left(\frac{g}{2048}\right)^{p}

    "requeue" kills the job and requeues it on a fresh allocation: quotas, pods and the
    environment are rebuilt, which grows with the job. "in-job-spare" restarts the processes
    on the allocation they hold, a pre-initialised warm spare taking the failed node's place.

    Parameters
    ----------
    gpus : float or array
        g, GPUs in the job [-].
    policy : {"in-job-spare", "requeue"}
        :data:`RESCHEDULE_FITS`.

    Returns
    -------
    time : float or array
        t_resched [s].

    References
    ----------
    .. [1] Wan et al. 2025 (ByteRobust), arXiv:2509.16293, Table 7 (requeue 454-768 s,
       in-place 46-65 s at 2,048-16,384 GPUs), Fig. 12 (warm standby 10.87x faster than
       requeue).
    .. [2] NVIDIA Resiliency Extension v0.3 release notes (in-job restart, warm spares).
    """
    v.choice("policy", policy, tuple(RESCHEDULE_FITS))
    t0, p = RESCHEDULE_FITS[policy]
    g = v.positive("gpus", gpus)
    return v.result(t0 * (g / 2048.0) ** p)


def checkpoint_load_s(size_bytes: ArrayLike, nodes: ArrayLike,
                      read_gb_per_s_per_node: ArrayLike = STORAGE_GB_PER_S_PER_NODE,
                      tier_read_gb_per_s: ArrayLike | None = None,
                      node_network_gb_per_s: ArrayLike = NODE_NETWORK_GB_PER_S) -> float | np.ndarray:
    r"""Time to read the latest checkpoint back, every node reading its own shards.

    .. math:: t_{load} = \frac{S}{\min\left(B_{tier},\; n \min(b_{node}, B_{net})\right)}

    A fully parallel load (Megatron ``ckpt_parallel_load``, PyTorch DCP) reads each byte
    once: a shard shared by a data-parallel group is read by one rank and broadcast to the
    others (MegaScale Sec. 4.4), so the bytes read are the checkpoint's S.

    Parameters
    ----------
    size_bytes : float or array
        S [bytes].
    nodes : float or array
        n, nodes reading [-].
    read_gb_per_s_per_node : float or array
        b_node, the tier's read bandwidth per node [GB/s] (Tectonic: 2000 / 2048).
    tier_read_gb_per_s : float or array, optional
        B_tier, the tier's aggregate read bandwidth [GB/s]; None or 0: no cap beyond n b_node.
    node_network_gb_per_s : float or array
        B_net, a node's link to the storage [GB/s].

    Returns
    -------
    time : float or array
        t_load [s].

    References
    ----------
    .. [1] Jiang et al. 2024 (MegaScale), arXiv:2402.15627, Sec. 4.4 (one reader per
       data-parallel group, broadcast to the rest).
    .. [2] Llama Team 2024, arXiv:2407.21783, Sec. 3.3.1 (2 TB/s for 2,048 nodes).
    .. [3] B. Wan et al., "ByteCheckpoint", NSDI 2025, arXiv:2407.20143, Table 8 (a 405B
       checkpoint on 8,960 GPUs loads in 129.49 s from HDFS: the tier sets the time).
    """
    S = v.positive("size_bytes", size_bytes)
    n = v.positive("nodes", nodes)
    per_node = np.minimum(v.positive("read_gb_per_s_per_node", read_gb_per_s_per_node),
                          v.positive("node_network_gb_per_s", node_network_gb_per_s))
    bw = shared_tier_gb_per_s(n, per_node, tier_read_gb_per_s)
    return v.result(S / (bw * 1e9))


def warmup_s(gpus: ArrayLike, init_s_per_rank: ArrayLike = INIT_S_PER_RANK, dataloader_s: ArrayLike = DATALOADER_S,
             compile_s: ArrayLike = 0.0) -> float | np.ndarray:
    r"""Time from restarted processes to the first training step: communicators, data loader,
    compilation.

    .. math:: t_{warm} = c\, g + t_{data} + t_{compile}

    Process-group and NCCL communicator set-up grows with the rank count g (linear once the
    global barriers are ordered, MegaScale Sec. 3.5). Megatron-Core's default training path
    runs eager kernels, so nothing is compiled by default; a stack that compiles
    (torch.compile, CUDA-graph capture) adds t_compile.

    Parameters
    ----------
    gpus : float or array
        g, ranks [-].
    init_s_per_rank : float or array
        c [s per rank] (MegaScale: under 5 s at 2,048 ranks).
    dataloader_s : float or array
        t_data [s] (ByteCheckpoint: ~1 GB of loader state in ~8 s).
    compile_s : float or array
        t_compile [s].

    Returns
    -------
    time : float or array
        t_warm [s].

    References
    ----------
    .. [1] Jiang et al. 2024 (MegaScale), arXiv:2402.15627, Sec. 3.5 (1,047 s on 2,048 GPUs
       with Megatron-LM's defaults; under 5 s on 2,048 and under 30 s on more than 10,000
       after replacing TCPStore and ordering the barriers).
    .. [2] Wan et al. 2025 (ByteCheckpoint), arXiv:2407.20143, Sec. 4 (data-loader state).
    """
    g = v.positive("gpus", gpus)
    c = v.nonnegative("init_s_per_rank", init_s_per_rank)
    d = v.nonnegative("dataloader_s", dataloader_s)
    k = v.nonnegative("compile_s", compile_s)
    return v.result(c * g + d + k)


@dataclass(frozen=True)
class RestartTerms:
    """One interruption's restart, term by term [s]."""

    detect_s: np.ndarray       # seen and localized
    reschedule_s: np.ndarray   # back on healthy nodes, processes started
    load_s: np.ndarray         # latest checkpoint read back
    warmup_s: np.ndarray       # communicators, data loader, compilation
    total_s: np.ndarray

    def as_dict(self) -> dict:
        return {k: float(getattr(self, k)) for k in
                ("detect_s", "reschedule_s", "load_s", "warmup_s", "total_s")}


@dataclass(frozen=True, eq=False)
class RestartPolicy:
    """How a stack sees a failure and comes back from it, each value checked once here.

    Attributes
    ----------
    detector : {"timeout", "heartbeat", "inspection"}
        Which mechanism sees a hang (:func:`detection_s`).
    reschedule : {"in-job-spare", "requeue"}
        How the job returns to healthy nodes (:func:`reschedule_s`).
    hang_share : float or array
        h, share of failures that hang [-].
    localize_s : float or array
        t_localize [s].
    init_s_per_rank : float or array
        c, communicator set-up [s per rank] (:func:`warmup_s`).
    dataloader_s : float or array
        t_data [s].
    compile_s : float or array
        t_compile [s].
    """

    detector: str = DEFAULT_DETECTOR
    reschedule: str = DEFAULT_RESCHEDULE
    hang_share: float | np.ndarray = HANG_SHARE
    localize_s: float | np.ndarray = LOCALIZE_S
    init_s_per_rank: float | np.ndarray = INIT_S_PER_RANK
    dataloader_s: float | np.ndarray = DATALOADER_S
    compile_s: float | np.ndarray = 0.0

    def __post_init__(self) -> None:
        v.choice("detector", self.detector, tuple(DETECTORS))
        v.choice("reschedule", self.reschedule, tuple(RESCHEDULE_FITS))
        v.check_fields(self, v.fraction, ("hang_share",), allow_zero=True)
        v.check_fields(self, v.nonnegative, ("localize_s", "init_s_per_rank", "dataloader_s", "compile_s"))


def restart_terms(gpus: ArrayLike, checkpoint_bytes: ArrayLike, storage: CheckpointStorage | None = None,
                  policy: RestartPolicy | None = None) -> RestartTerms:
    r"""The restart after one interruption as its four terms, at each GPU count.

    .. math:: R = t_{detect} + t_{resched}(g) + t_{load}(S, n) + t_{warm}(g),\qquad
              n = \lceil g / g_{node} \rceil

    with :func:`detection_s`, :func:`reschedule_s`, :func:`checkpoint_load_s` and
    :func:`warmup_s`. R is Daly's restart (the ``restart_s`` of :func:`.goodput`) and
    Kokolis et al.'s restart overhead u_0, "all initialization tasks that need to be
    performed after a restart" (measured there at 5-20 min on Slurm-requeued research jobs).
    The defaults are a 2025-26 Megatron stack: heartbeat hang detection and an in-job restart
    on a warm spare (NVIDIA Resiliency Extension), a fully parallel checkpoint load from
    storage sized like Llama 3's, and MegaScale's communicator start-up.

    Parameters
    ----------
    gpus : float or array
        g [-].
    checkpoint_bytes : float or array
        S [bytes].
    storage : CheckpointStorage, optional
        The tier the checkpoint is read back from: its per-node and aggregate bandwidth,
        each node's link (as :func:`checkpoint_load_s`) [GB/s], and g_node [-].
    policy : RestartPolicy, optional
        Detector, rescheduling and warm-up terms (as :func:`detection_s`,
        :func:`reschedule_s`, :func:`warmup_s`) [s], [-].

    Returns
    -------
    RestartTerms
        detect_s, reschedule_s, load_s, warmup_s and total_s = R [s].

    References
    ----------
    .. [1] Kokolis et al. 2025, arXiv:2410.21680, Sec. V (ETTR: catch-up, restart overhead
       u_0 ~ 5-20 min, checkpoint overhead).
    .. [2] Wan et al. 2025 (ByteRobust), arXiv:2509.16293; Jiang et al. 2024 (MegaScale),
       arXiv:2402.15627; Llama Team 2024, arXiv:2407.21783, Sec. 3.3.
    """
    st = CheckpointStorage() if storage is None else storage
    pol = RestartPolicy() if policy is None else policy
    g = v.positive("gpus", gpus)
    nodes = np.maximum(1.0, np.ceil(g / st.gpus_per_node))
    d = np.asarray(detection_s(pol.detector, pol.hang_share, pol.localize_s), float)
    r = np.asarray(reschedule_s(g, pol.reschedule), float)
    load = np.asarray(checkpoint_load_s(checkpoint_bytes, nodes, st.storage_gb_per_s_per_node,
                                        st.shared_storage_gb_per_s, st.node_network_gb_per_s), float)
    w = np.asarray(warmup_s(g, pol.init_s_per_rank, pol.dataloader_s, pol.compile_s), float)
    shape = np.broadcast(d, r, load, w).shape
    d, r, load, w = (np.broadcast_to(x, shape) for x in (d, r, load, w))
    return RestartTerms(detect_s=v.result(d), reschedule_s=v.result(r), load_s=v.result(load),
                        warmup_s=v.result(w), total_s=v.result(d + r + load + w))


def restart_time_s(gpus: ArrayLike, checkpoint_bytes: ArrayLike, storage: CheckpointStorage | None = None,
                   policy: RestartPolicy | None = None) -> float | np.ndarray:
    r"""Restart per interruption, the sum of :func:`restart_terms` [s].

    .. math:: R = t_{detect} + t_{resched} + t_{load} + t_{warm}

    Parameters
    ----------
    gpus : float or array
        g [-].
    checkpoint_bytes : float or array
        S [bytes].
    storage : CheckpointStorage, optional
        As :func:`restart_terms`.
    policy : RestartPolicy, optional
        As :func:`restart_terms`.

    Returns
    -------
    restart : float or array
        R [s].

    References
    ----------
    .. [1] Kokolis et al. 2025, arXiv:2410.21680, Sec. V; see :func:`restart_terms`.
    """
    return restart_terms(gpus, checkpoint_bytes, storage, policy).total_s
