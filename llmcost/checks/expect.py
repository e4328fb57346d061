"""What nccl-tests should print on this hardware: bus bandwidth by collective, message size
and ranks, from the alpha-beta collectives of :mod:`llmcost.training.comm`.

Assumptions stated once: the expectation is the ring (all-reduce, all-gather,
reduce-scatter), pairwise (all-to-all) and point-to-point model, with NCCL's k rings side by
side, one per NIC, across nodes, and for an all-reduce across nodes NCCL's tree where it is
faster. It has no in-network reduction: NVLink SHARP (NVLS, H100 and later inside an NVLink
domain) and InfiniBand SHARP move fewer bytes per rank than a ring, so an all-reduce
measured with them reads above this expectation (8 x H100 with NVLS: busbw ~480 GB/s against ~370
for a ring, S. Jeaugey, NVIDIA/nccl-tests#212). Above is not a problem; below is.

References
----------
1. NVIDIA, nccl-tests doc/PERFORMANCE.md (bus bandwidth factors).
2. S. Jeaugey, NVIDIA/nccl-tests#212 (2024-05-06): NVLink line rate 450 GB/s,
   ~370 GB/s effective after protocol overhead (ring), ~480 GB/s busbw with NVLS on 8 GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..training import comm

#: collectives with a model; broadcast, reduce, gather, scatter and hypercube get NaN
MODELLED = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv")


def bus_bandwidth_factor(op: str, ranks):
    r"""nccl-tests' bus bandwidth over algorithm bandwidth for a collective ([1]).

    .. math:: f = \frac{2(n-1)}{n}\ \text{all-reduce},\quad \frac{n-1}{n}\
              \text{all-gather, reduce-scatter, all-to-all},\quad 1\ \text{otherwise}

    Parameters
    ----------
    op : str
        Collective name as the ``*_perf`` binary (``"all_reduce"``, ...).
    ranks : int or array
        n [-].

    Returns
    -------
    factor : float or array
        [-].

    References
    ----------
    .. [1] nccl-tests doc/PERFORMANCE.md, "Bus bandwidth".
    """
    n = v.integer("ranks", ranks)
    if op == "all_reduce":
        return v.result(2.0 * (n - 1) / n)
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return v.result((n - 1) / n)
    return v.result(np.ones_like(n, dtype=float))


@dataclass(frozen=True, eq=False)
class TwoLevelLinks:
    """The links a collective runs over: inside a node (NVLink or PCIe) and across nodes
    (one NIC per GPU), each value checked once here (scalars or arrays that broadcast).

    Attributes
    ----------
    intra_gb_per_s, inter_gb_per_s : float or array
        B_i (NVLink per GPU), B_o (NIC per GPU) [GB/s per direction].
    intra_latency_us, inter_latency_us : float or array
        [us].
    intra_efficiency, inter_efficiency : float or array
        eta_i, eta_o [-].
    congestion : float or array
        c(n) from :func:`llmcost.training.comm.congestion_factor` [-].
    """

    intra_gb_per_s: float | np.ndarray
    inter_gb_per_s: float | np.ndarray
    intra_latency_us: float | np.ndarray = 0.0
    inter_latency_us: float | np.ndarray = 0.0
    intra_efficiency: float | np.ndarray = 1.0
    inter_efficiency: float | np.ndarray = 1.0
    congestion: float | np.ndarray = 1.0

    def __post_init__(self) -> None:
        v.check_fields(self, v.positive, ("intra_gb_per_s", "inter_gb_per_s", "congestion"))
        v.check_fields(self, v.nonnegative, ("intra_latency_us", "inter_latency_us"))
        v.check_fields(self, v.fraction, ("intra_efficiency", "inter_efficiency"))

    def fabric_links(self) -> "comm.Links":
        """These links as :mod:`llmcost.training.comm`'s two-level collectives take them (the
        congestion c(n) apart, their own argument)."""
        return comm.Links.of(self.intra_gb_per_s, self.inter_gb_per_s, self.intra_latency_us,
                             self.inter_latency_us, self.intra_efficiency, self.inter_efficiency)


def tree_allreduce_busbw_gb_per_s(size_bytes, ranks, ranks_per_node, links: TwoLevelLinks):
    r"""Bus bandwidth of NCCL's tree all-reduce across nodes (double binary tree between
    nodes, a chain inside each): every node sends and receives S once per direction through
    its k NICs, so nccl-tests' busbw reads 2(N-1)/N times the node's bandwidth.

    .. math::
        t = 2(N-1)\alpha_{max} + S \max\left(\frac{1}{\eta_i B_i},\;
            \frac{c(n)}{k\,\eta_o B_o}\right),\qquad
        \mathrm{busbw} = \frac{2(N-1)}{N}\frac{S}{t},\quad n = N/k

    Parameters
    ----------
    size_bytes, ranks, ranks_per_node, links
        S [bytes], N [-], k [-] and the links (B [GB/s], latencies [us], eta and c [-]), as
        :func:`expected_busbw_gb_per_s`.

    Returns
    -------
    busbw_gb_per_s : float or array
        [GB/s]; NaN inside one node (N <= k), where NCCL uses rings or NVLS.

    References
    ----------
    .. [1] S. Jeaugey, "Massively scale your deep learning training with NCCL 2.4" (NVIDIA
       blog, 2019): double binary trees, full bandwidth, logarithmic latency.
    .. [2] S. Jeaugey, NVIDIA/nccl#1017 (2023-10-09): all-reduce busbw ~480 GB/s on two
       8-GPU nodes needs ~240 GB/s per node between them (480 = 2(N-1)/N x 240 x ~1.07).
    """
    s = v.nonnegative("size_bytes", size_bytes)
    n = v.integer("ranks", ranks, minimum=2)
    k = np.minimum(v.integer("ranks_per_node", ranks_per_node), n)
    bi = links.intra_gb_per_s * 1e9 * links.intra_efficiency
    bo = links.inter_gb_per_s * 1e9 * links.inter_efficiency
    alpha = np.maximum(links.intra_latency_us, links.inter_latency_us) * 1e-6
    c = links.congestion
    t = 2 * (n - 1) * alpha + s * np.maximum(1.0 / bi, c / (k * bo))
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where((n > k) & (t > 0), 2.0 * (n - 1) / n * s / np.where(t > 0, t, 1.0) / 1e9,
                      np.nan)
    return v.result(bw)


def expected_busbw_gb_per_s(op: str, size_bytes, ranks, ranks_per_node, links: TwoLevelLinks):
    r"""Expected nccl-tests bus bandwidth of one collective.

    .. math:: \mathrm{busbw} = f(op, N)\,\frac{S}{t(op, S, N, k)}

    with t from :func:`llmcost.training.comm.hierarchical_allreduce_time_s`,
    :func:`~llmcost.training.comm.hierarchical_allgather_time_s` (also reduce-scatter),
    :func:`~llmcost.training.comm.hierarchical_alltoall_time_s` and
    :func:`~llmcost.training.comm.p2p_time_s` (send/receive: over the NIC once the ranks
    span nodes), f from :func:`bus_bandwidth_factor`; an all-reduce across nodes takes the
    higher of the ring and :func:`tree_allreduce_busbw_gb_per_s` (NCCL picks the faster).
    For large S this tends to the link's achievable bandwidth, eta_i B_i inside a node and
    k eta_o B_o / c(n) across nodes (times 2(N-1)/N for the tree).

    Parameters
    ----------
    op : str
        Collective; one of :data:`MODELLED` (others give NaN).
    size_bytes : float or array
        S, the size nccl-tests prints [bytes].
    ranks : int or array
        N [-].
    ranks_per_node : int or array
        k, ranks inside one NVLink domain [-].
    links : TwoLevelLinks
        B_i, B_o [GB/s per direction], latencies [us], eta_i, eta_o and c(n) [-].

    Returns
    -------
    busbw_gb_per_s : float or array
        [GB/s]; NaN for a collective without a model, or S = 0.

    References
    ----------
    .. [1] nccl-tests doc/PERFORMANCE.md; Thakur et al. 2005 (see :mod:`llmcost.training.comm`).
    """
    s = v.nonnegative("size_bytes", size_bytes)
    n = v.integer("ranks", ranks, minimum=2)
    k = np.minimum(v.integer("ranks_per_node", ranks_per_node), n)
    two_level = links.fabric_links()
    if op == "all_reduce":
        t = comm.hierarchical_allreduce_time_s(s, n, k, two_level, links.congestion)
        # NCCL picks the faster of ring and tree: across nodes the tree's busbw can be higher
        ring = bus_bandwidth_factor(op, n) * s / np.where(np.asarray(t) > 0, t, np.inf) / 1e9
        tree = tree_allreduce_busbw_gb_per_s(s, n, k, links)
        best = np.fmax(ring, tree)
        return v.result(np.where(s > 0, best, np.nan))
    elif op in ("all_gather", "reduce_scatter"):
        t = comm.hierarchical_allgather_time_s(s, n, k, two_level, links.congestion)
    elif op == "alltoall":
        t = comm.hierarchical_alltoall_time_s(s, n, k, two_level, links.congestion)
    elif op == "sendrecv":
        across = n > k
        t = np.where(across,
                     comm.p2p_time_s(s, links.inter_gb_per_s, links.inter_latency_us, links.inter_efficiency)
                     * np.asarray(links.congestion, float),
                     comm.p2p_time_s(s, links.intra_gb_per_s, links.intra_latency_us, links.intra_efficiency))
    else:
        return v.result(np.full(np.broadcast(s, n).shape, np.nan))
    t = np.asarray(t, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        bw = np.where(t > 0, bus_bandwidth_factor(op, n) * s / np.where(t > 0, t, 1.0) / 1e9,
                      np.nan)
    return v.result(bw)


#: size regimes, by the expectation's share of its own large-message bandwidth: below 0.1
#: latency is over 90% of the expected time (alpha-beta: busbw / busbw_max = 1 / (1 + t_alpha
#: / t_beta)); from 0.8 on the link's bandwidth sets it; between, both
REGIMES = (("latency-bound", 0.0), ("transitional", 0.1), ("bandwidth-bound", 0.8))

#: the size at which the large-message bandwidth of the expectation is read [bytes]
ASYMPTOTE_BYTES = 2.0 ** 40


def size_regime(expected_busbw, asymptote_busbw):
    """The regime of each message size (:data:`REGIMES`).

    .. math:: \\rho = \\frac{\\mathrm{busbw}_{exp}(S)}{\\mathrm{busbw}_{exp}(S \\to \\infty)}

    Parameters
    ----------
    expected_busbw : float or array
        The expected bus bandwidth at each size [GB/s].
    asymptote_busbw : float
        The expected bus bandwidth at :data:`ASYMPTOTE_BYTES` [GB/s], > 0.

    Returns
    -------
    array of str
        "latency-bound", "transitional" or "bandwidth-bound"; "" where the expectation is
        not finite.
    """
    e = np.asarray(expected_busbw, float)
    rho = e / float(v.positive("asymptote_busbw", asymptote_busbw))
    out = np.full(e.shape, "", dtype=object)
    for name, low in REGIMES:
        out[np.isfinite(rho) & (rho >= low)] = name
    return out


def share_of_expected(op: str, size_bytes, time_us, busbw, expected_busbw, ranks):
    """Measured over expected bus bandwidth, from the time nccl-tests prints where it does
    (its busbw column rounds small sizes to 0.00), else from the busbw column.

    .. math:: q = \\frac{t_{exp}}{t} = \\frac{f(op, N) S / \\mathrm{busbw}_{exp}}{t}

    Parameters
    ----------
    op : str
    size_bytes, time_us, busbw, expected_busbw : array
        [bytes], [us] (NaN: not printed), [GB/s], [GB/s].
    ranks : int

    Returns
    -------
    array
        q [-]; NaN where there is no expectation.
    """
    s, t = np.asarray(size_bytes, float), np.asarray(time_us, float)
    b, e = np.asarray(busbw, float), np.asarray(expected_busbw, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_exp = bus_bandwidth_factor(op, ranks) * s / (e * 1e9) * 1e6
        q = np.where(np.isfinite(t) & (t > 0), t_exp / t, b / e)
    return np.where(np.isfinite(e) & (e > 0), q, np.nan)
