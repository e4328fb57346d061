"""Collective communication as alpha-beta costs over fabrics.

A collective over n ranks moving S bytes costs a latency term (alpha per step) plus a
bandwidth term (bytes on the busiest link over achievable bandwidth). Bandwidths are per GPU
per direction in GB/s (1e9 bytes/s); latencies in microseconds; times in seconds.

References
----------
1. R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective Communication
   Operations in MPICH", IJHPCA 19(1), 2005, §4 (ring, recursive-doubling, tree costs).
2. P. Patarasuk, X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
   workstations", JPDC 69(2), 2009 (ring all-reduce 2(n-1)/n S/B is bandwidth-optimal).
3. NVIDIA, "NCCL tests: performance" (doc/PERFORMANCE.md): bus bandwidth = algorithm
   bandwidth x 2(n-1)/n for all-reduce, (n-1)/n for all-gather and reduce-scatter.
4. S. Jeaugey, "Massively scale your deep learning training with NCCL 2.4" (NVIDIA
   blog, 2019): double binary trees, latency log2(n).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v
from .hardware import FabricSpec

US = 1e-6
GBPS = 1e9


def _args(size_bytes: ArrayLike, n: ArrayLike, bandwidth_gb_per_s: ArrayLike, latency_us: ArrayLike,
          efficiency: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    s = v.nonnegative("size_bytes", size_bytes)
    n = v.integer("n", n)
    bw = v.positive("bandwidth_gb_per_s", bandwidth_gb_per_s) * GBPS * v.fraction("efficiency", efficiency)
    a = v.nonnegative("latency_us", latency_us) * US
    return s, n, bw, a


def ring_allreduce_time_s(size_bytes: ArrayLike, n: ArrayLike, bandwidth_gb_per_s: ArrayLike,
                          latency_us: ArrayLike = 0.0, efficiency: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Ring all-reduce: reduce-scatter then all-gather around a ring.

    .. math:: t = 2(n-1)\,\alpha + \frac{2(n-1)}{n}\,\frac{S}{\eta B}

    Parameters
    ----------
    size_bytes : float or array
        S, bytes each rank contributes [bytes].
    n : int or array
        Ranks [-]; n = 1 costs nothing.
    bandwidth_gb_per_s : float or array
        B, per-rank link bandwidth per direction [GB/s].
    latency_us : float or array
        alpha, per-step latency [us].
    efficiency : float or array
        eta, achievable share of B [-], in (0, 1].

    Returns
    -------
    time_s : float or array
        [s].

    References
    ----------
    .. [1] Thakur et al. 2005, §4.5; Patarasuk and Yuan 2009.
    """
    s, n, bw, a = _args(size_bytes, n, bandwidth_gb_per_s, latency_us, efficiency)
    return v.result(2 * (n - 1) * a + 2 * (n - 1) / n * s / bw)


def tree_allreduce_time_s(size_bytes: ArrayLike, n: ArrayLike, bandwidth_gb_per_s: ArrayLike,
                          latency_us: ArrayLike = 0.0, efficiency: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Pipelined (double binary) tree all-reduce: log-depth latency, ~ring bandwidth.

    .. math:: t = 2 \lceil \log_2 n \rceil \alpha + \frac{2 S}{\eta B}\,[n > 1]

    Parameters
    ----------
    size_bytes, n, bandwidth_gb_per_s, latency_us, efficiency
        As :func:`ring_allreduce_time_s`.

    Returns
    -------
    time_s : float or array
        [s].

    References
    ----------
    .. [1] Thakur et al. 2005, §4.5 (binomial tree); Jeaugey 2019 (NCCL double binary
       trees: full bandwidth, logarithmic latency).
    """
    s, n, bw, a = _args(size_bytes, n, bandwidth_gb_per_s, latency_us, efficiency)
    steps = np.ceil(np.log2(np.maximum(n, 1)))
    return v.result(2 * steps * a + np.where(n > 1, 2 * s / bw, 0.0))


def allgather_time_s(size_bytes: ArrayLike, n: ArrayLike, bandwidth_gb_per_s: ArrayLike, latency_us: ArrayLike = 0.0,
                     efficiency: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Ring all-gather of a buffer of S bytes in total (S/n from each rank).

    .. math:: t = (n-1)\,\alpha + \frac{n-1}{n}\,\frac{S}{\eta B}

    Parameters
    ----------
    size_bytes : float or array
        S, gathered size [bytes].
    n, bandwidth_gb_per_s, latency_us, efficiency
        As :func:`ring_allreduce_time_s`.

    Returns
    -------
    time_s : float or array
        [s].

    References
    ----------
    .. [1] Thakur et al. 2005, §4.1 (ring all-gather).
    """
    s, n, bw, a = _args(size_bytes, n, bandwidth_gb_per_s, latency_us, efficiency)
    return v.result((n - 1) * a + (n - 1) / n * s / bw)


def reduce_scatter_time_s(size_bytes: ArrayLike, n: ArrayLike, bandwidth_gb_per_s: ArrayLike,
                          latency_us: ArrayLike = 0.0, efficiency: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Ring reduce-scatter of S bytes (each rank keeps S/n reduced).

    .. math:: t = (n-1)\,\alpha + \frac{n-1}{n}\,\frac{S}{\eta B}

    Parameters
    ----------
    size_bytes, n, bandwidth_gb_per_s, latency_us, efficiency
        As :func:`allgather_time_s`.

    Returns
    -------
    time_s : float or array
        [s].

    References
    ----------
    .. [1] Thakur et al. 2005, §4.3 (reduce-scatter).
    """
    return allgather_time_s(size_bytes, n, bandwidth_gb_per_s, latency_us, efficiency)


def p2p_time_s(size_bytes: ArrayLike, bandwidth_gb_per_s: ArrayLike, latency_us: ArrayLike = 0.0,
               efficiency: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Point-to-point send of S bytes.

    .. math:: t = \alpha + \frac{S}{\eta B}

    Parameters
    ----------
    size_bytes, bandwidth_gb_per_s, latency_us, efficiency
        As :func:`ring_allreduce_time_s`.

    Returns
    -------
    time_s : float or array
        [s].

    References
    ----------
    .. [1] R. Hockney, "The communication challenge for MPP", Parallel Computing 20(3),
       1994 (the alpha-beta model).
    """
    s, _, bw, a = _args(size_bytes, 2, bandwidth_gb_per_s, latency_us, efficiency)
    return v.result(a + s / bw)


def congestion_factor(nodes: ArrayLike, per_doubling: ArrayLike = 0.0,
                      oversubscription: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Slow-down of scale-out bandwidth with the number of nodes in a collective.

    .. math:: c(n) = \max(1, o)\,\left(1 + k \log_2 \max(n, 1)\right)

    k is a fabric's congestion growth per doubling of nodes (0 for a non-blocking fat tree
    with adaptive routing; RoCE's ECMP hash collisions and PFC/ECN back-pressure grow with
    flows), o a static oversubscription ratio of the tree (2 for 2:1).

    Parameters
    ----------
    nodes : int or array
        Nodes taking part [-].
    per_doubling : float or array
        k [-], >= 0.
    oversubscription : float or array
        o [-], >= 1 is a tapered tree.

    Returns
    -------
    factor : float or array
        Divides the achievable bandwidth [-], >= 1.

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026):
       RoCE v2 82% scaling at 64 GPUs, 71% at 128; InfiniBand 98% at 128. k of each catalog
       fabric is fitted to that anecdote (see data/fabrics.csv).
    """
    n = v.positive("nodes", nodes)
    k = v.nonnegative("per_doubling", per_doubling)
    o = v.positive("oversubscription", oversubscription)
    return v.result(np.maximum(o, 1.0) * (1 + k * np.log2(np.maximum(n, 1))))


@dataclass(frozen=True, eq=False)
class Links:
    """The two levels a collective crosses: NVLink inside a scale-up domain of
    ``domain_gpus`` GPUs, the scale-out fabric beyond. Checked once here; the collectives
    that take the group do not check it again.

    Parameters
    ----------
    scale_up : FabricSpec
        The scale-up link (NVLink): B_i [GB/s per GPU per direction] and its latency [us];
        its own efficiency is not read (``nvlink_efficiency`` is).
    scale_out : FabricSpec
        The fabric: B_o (per-GPU NIC) [GB/s per direction], latency [us], eta_o
        (``efficiency``) [-] and its congestion constants (:meth:`congestion`).
    domain_gpus : int or array
        GPUs one NVLink domain joins [-].
    nvlink_efficiency : float or array
        eta_i, achievable share of the NVLink bandwidth [-].

    Raises
    ------
    InputError
        Naming the bandwidth, latency or efficiency out of range.
    """

    scale_up: FabricSpec
    scale_out: FabricSpec
    domain_gpus: int | np.ndarray = 8
    nvlink_efficiency: float | np.ndarray = 1.0

    def __post_init__(self) -> None:
        up, out = self.scale_up, self.scale_out
        v.positive("intra_gb_per_s", up.bandwidth_gb_per_s_per_gpu)
        v.positive("inter_gb_per_s", out.bandwidth_gb_per_s_per_gpu)
        v.nonnegative("intra_latency_us", up.latency_us)
        v.nonnegative("inter_latency_us", out.latency_us)
        v.fraction("intra_efficiency", self.nvlink_efficiency)
        v.fraction("inter_efficiency", out.efficiency)
        v.integer("domain_gpus", self.domain_gpus)

    @classmethod
    def of(cls, intra_gb_per_s: ArrayLike, inter_gb_per_s: ArrayLike, intra_latency_us: ArrayLike = 0.0,
           inter_latency_us: ArrayLike = 0.0, intra_efficiency: ArrayLike = 1.0,
           inter_efficiency: ArrayLike = 1.0) -> "Links":
        """Links from the numbers alone (NVLink B_i, alpha_i, eta_i; fabric B_o, alpha_o,
        eta_o; no congestion constants), for collectives whose ranks per node are given."""
        up = FabricSpec(id="intra", name="scale-up", kind="scale_up",
                        bandwidth_gb_per_s_per_gpu=intra_gb_per_s,  # type: ignore[arg-type]
                        latency_us=intra_latency_us)  # type: ignore[arg-type]
        out = FabricSpec(id="inter", name="scale-out", kind="scale_out",
                         bandwidth_gb_per_s_per_gpu=inter_gb_per_s,  # type: ignore[arg-type]
                         latency_us=inter_latency_us,  # type: ignore[arg-type]
                         efficiency=inter_efficiency)  # type: ignore[arg-type]
        return cls(up, out, nvlink_efficiency=np.asarray(intra_efficiency, float))

    def congestion(self, nodes: ArrayLike) -> float | np.ndarray:
        """c(n) of the fabric over ``nodes`` nodes [-] (:func:`congestion_factor`)."""
        return congestion_factor(nodes, self.scale_out.congestion_per_doubling,
                                 self.scale_out.oversubscription)

    def _si(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        # eta_i B_i, eta_o B_o [bytes/s] and alpha_i, alpha_o [s]
        up, out = self.scale_up, self.scale_out
        bi = np.asarray(up.bandwidth_gb_per_s_per_gpu, float) * GBPS * np.asarray(self.nvlink_efficiency, float)
        bo = np.asarray(out.bandwidth_gb_per_s_per_gpu, float) * GBPS * np.asarray(out.efficiency, float)
        return bi, bo, np.asarray(up.latency_us, float) * US, np.asarray(out.latency_us, float) * US


def _two_level_args(size_bytes: ArrayLike, ranks: ArrayLike, local: tuple[str, ArrayLike], links: Links,
                    congestion: ArrayLike) -> tuple[np.ndarray, ...]:
    """Checked arguments of a collective over a scale-up domain and a fabric (SI units)."""
    s = v.nonnegative("size_bytes", size_bytes)
    N = v.integer("ranks", ranks)
    k = np.minimum(v.integer(local[0], local[1]), N)
    bi, bo, ai, ao = links._si()
    return s, N, k, bi, bo, ai, ao, v.positive("congestion", congestion)


def hierarchical_allreduce_time_s(size_bytes: ArrayLike, ranks: ArrayLike, ranks_per_node: ArrayLike, links: Links,
                                  congestion: ArrayLike = 1.0) -> float | np.ndarray:
    r"""All-reduce over ranks spread k per node across n nodes (NVLink in, fabric out).

    NCCL runs k rings side by side, one per NIC, each carrying S/k: each GPU moves
    2(N-1)/N S over NVLink, each NIC 2(N-1)/N S/k over the fabric; the pipelined rings run
    at the slower of the two.

    .. math::
        t = 2(N-1)\alpha_{max} + \frac{2(N-1)}{N} S \max\left(\frac{1}{\eta_i B_i},\;
            \frac{c(n)}{k\,\eta_o B_o}\,[n > 1]\right),\quad N = k n

    Parameters
    ----------
    size_bytes : float or array
        S [bytes].
    ranks : int or array
        N [-].
    ranks_per_node : int or array
        k [-], the ranks of this group inside one node.
    links : Links
        B_i (NVLink), B_o (per-GPU NIC) [GB/s per direction], their latencies [us] and
        eta_i, eta_o [-].
    congestion : float or array
        c(n) from :func:`congestion_factor` [-].

    Returns
    -------
    time_s : float or array
        [s].

    References
    ----------
    .. [1] Jeaugey 2019 (NCCL rings across nodes, one per NIC); Patarasuk and Yuan 2009.
    """
    s, N, k, bi, bo, ai, ao, c = _two_level_args(size_bytes, ranks, ("ranks_per_node", ranks_per_node),
                                                 links, congestion)
    multi = N > k
    per_byte = np.maximum(1.0 / bi, np.where(multi, c / (k * bo), 0.0))
    alpha = np.where(multi, np.maximum(ai, ao), ai)
    return v.result(2 * (N - 1) * alpha + 2 * (N - 1) / N * s * per_byte)


def hierarchical_allgather_time_s(size_bytes: ArrayLike, ranks: ArrayLike, ranks_per_node: ArrayLike, links: Links,
                                  congestion: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Ring all-gather (or reduce-scatter) of S bytes in total over ranks spread k per node.

    Half of :func:`hierarchical_allreduce_time_s`: one pass around the k parallel rings
    (one per NIC) instead of two, each GPU receiving the (N-1)/N S it does not hold.

    .. math::
        t = (N-1)\alpha_{max} + \frac{N-1}{N} S \max\left(\frac{1}{\eta_i B_i},\;
            \frac{c(n)}{k\,\eta_o B_o}\,[n > 1]\right),\quad N = k n

    The bandwidth term is the NCCL-tests "bus bandwidth" view: algorithm bandwidth x
    (N-1)/N for all-gather and reduce-scatter ([2]).

    Parameters
    ----------
    size_bytes : float or array
        S, the gathered (or reduced) buffer [bytes]; each rank holds S/N of it.
    ranks, ranks_per_node, links, congestion
        As :func:`hierarchical_allreduce_time_s`.

    Returns
    -------
    time_s : float or array
        [s].

    References
    ----------
    .. [1] Thakur et al. 2005, §4.1 (ring all-gather), §4.3 (reduce-scatter).
    .. [2] NVIDIA, NCCL tests doc/PERFORMANCE.md (bus bandwidth of all-gather and
       reduce-scatter = algorithm bandwidth x (n-1)/n).
    """
    return v.result(0.5 * hierarchical_allreduce_time_s(size_bytes, ranks, ranks_per_node, links,
                                                         congestion))



def hierarchical_alltoall_time_s(size_bytes: ArrayLike, ranks: ArrayLike, ranks_per_domain: ArrayLike, links: Links,
                                 congestion: ArrayLike = 1.0) -> float | np.ndarray:
    r"""All-to-all of S bytes per rank over N ranks, k of them inside one scale-up domain.

    Each rank keeps S/N and sends S/N to every other rank: (k-1)/N S over NVLink to the
    peers inside its domain, (N-k)/N S over its own NIC to the rest; the two run
    concurrently (pairwise exchanges), so the slower sets the time:

    .. math::
        t = \max\left(\alpha_i + \frac{k-1}{N}\frac{S}{\eta_i B_i},\;
            [N > k]\left(\alpha_o + \frac{N-k}{N}\frac{c\,S}{\eta_o B_o}\right)\right)

    This is the expert-parallel token dispatch (and combine) of an MoE layer; inside a
    GB200 NVL72 domain (k = N <= 72) no byte leaves NVLink.

    Parameters
    ----------
    size_bytes : float or array
        S, the bytes each rank sends in total (its tokens x top-k x h x bytes) [bytes].
    ranks : int or array
        N, the expert-parallel group [-].
    ranks_per_domain : int or array
        k, the group's ranks inside one NVLink domain [-] (capped at N).
    links, congestion
        As :func:`hierarchical_allreduce_time_s`.

    Returns
    -------
    time_s : float or array
        [s]; 0 for N = 1.

    References
    ----------
    .. [1] Thakur et al. 2005, §4.5 (pairwise-exchange all-to-all: (N-1)/N S per rank).
    .. [2] DeepSeek-V3 report, arXiv:2412.19437, §3.2.2 (dispatch over IB between nodes
       and NVLink inside them; node-limited routing keeps most traffic on NVLink).
    """
    s, N, k, bi, bo, ai, ao, c = _two_level_args(size_bytes, ranks, ("ranks_per_domain", ranks_per_domain),
                                                 links, congestion)
    t_in = np.where(k > 1, ai + (k - 1) / N * s / bi, 0.0)
    t_out = np.where(N > k, ao + (N - k) / N * s * c / bo, 0.0)
    return v.result(np.maximum(t_in, t_out))
