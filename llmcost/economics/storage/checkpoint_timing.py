"""Checkpoint timing: sync and async stalls, the upload that makes a copy durable, the
interval, rework and goodput by checkpoint mode, and the slowest writer of a save."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v
from .. import reliability as rel

#: checkpoint modes for the rework and goodput models
MODES = ("sync", "async", "peer-memory")

#: z such that Phi(z) = 0.99 (standard normal 99th percentile).
Z_99 = 2.3263478740408408


def _ndtri_upper(t: ArrayLike, lower: ArrayLike | None = None) -> np.ndarray:
    """z with P(Z > z) = t, for t in (0, 1) (scipy.special.ndtri on the smaller tail, so
    t = 1e-9 keeps full precision; ``lower`` = 1 - t computed without cancellation)."""
    from scipy import special  # see slowest_writer_quantile_s
    t = np.asarray(t, dtype=float)
    lower = 1.0 - t if lower is None else np.asarray(lower, dtype=float)
    return np.where(t < 0.5, -special.ndtri(np.clip(t, 1e-300, 0.5)),
                    special.ndtri(np.clip(lower, 1e-300, 0.5)))


def _sigma_from_ratio(p99_over_p50: ArrayLike) -> np.ndarray:
    r = v.in_range("p99_over_p50", p99_over_p50, 1.0, None)
    return np.log(r) / Z_99


# --------------------------------------------------------------------------- 5 checkpoint timing

def sync_stall_s(size_bytes: ArrayLike, writer_nodes: ArrayLike, tier_write_gb_per_s: ArrayLike,
                 node_write_gb_per_s: ArrayLike) -> float | np.ndarray:
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
    return rel.checkpoint_stall_s(size_bytes, "sync", writer_nodes, rel.CheckpointStorage(
        shared_storage_gb_per_s=v.positive("tier_write_gb_per_s", tier_write_gb_per_s),
        node_network_gb_per_s=v.as_float("node_network_gb_per_s", node_write_gb_per_s)))


def local_stall_s(size_bytes: ArrayLike, writer_nodes: ArrayLike, host_copy_gb_per_s: ArrayLike,
                  gpus_per_node: ArrayLike = 8, local_write_gb_per_s: ArrayLike | None = None) -> float | np.ndarray:
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
        return rel.checkpoint_stall_s(size_bytes, "async", writer_nodes, rel.CheckpointStorage(
            local_write_gb_per_s=v.as_float("local_write_gb_per_s", local_write_gb_per_s),
            host_copy_gb_per_s=v.as_float("host_copy_gb_per_s", host_copy_gb_per_s),
            gpus_per_node=v.as_float("gpus_per_node", gpus_per_node)))
    S, n, g, B = v.checked(
        v.positive, size_bytes=size_bytes, writer_nodes=writer_nodes, gpus_per_node=gpus_per_node,
        host_copy_gb_per_s=host_copy_gb_per_s)
    return v.result(S / (n * g * B * 1e9))


def upload_s(size_bytes: ArrayLike, writer_nodes: ArrayLike, tier_write_gb_per_s: ArrayLike,
             node_network_gb_per_s: ArrayLike) -> float | np.ndarray:
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


def durable_interval_s(interval_s: ArrayLike, upload_s: ArrayLike) -> float | np.ndarray:
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


def recommended_interval_s(stall_s: ArrayLike, mtbf_s: ArrayLike, upload_s: ArrayLike = 0.0) -> float | np.ndarray:
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


@dataclass(frozen=True, eq=False)
class PeerCopies:
    """In-memory snapshots copied to a peer host (GEMINI), each value checked once here
    (scalars or arrays that broadcast).

    Attributes
    ----------
    peer_copy_s : float or array
        C, copy of a node's snapshot to its peer's memory [s].
    peer_share : float or array
        f, share of failures the peer copies survive (single-node failures) [-].
    remote_interval_s : float or array, optional
        tau_r, compute between durable uploads [s]; None: the snapshot interval tau.
    """

    peer_copy_s: float | np.ndarray = 0.0
    peer_share: float | np.ndarray = 1.0
    remote_interval_s: float | np.ndarray | None = None

    def __post_init__(self) -> None:
        v.check_fields(self, v.nonnegative, ("peer_copy_s",))
        v.check_fields(self, v.fraction, ("peer_share",), allow_zero=True)
        if self.remote_interval_s is not None:
            v.check_fields(self, v.positive, ("remote_interval_s",))


def rework_s(mode: str, interval_s: ArrayLike, stall_s: ArrayLike, upload_s: ArrayLike = 0.0,
             peer: PeerCopies | None = None) -> float | np.ndarray:
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
    peer : PeerCopies, optional
        C [s], f [-] and tau_r [s] (default tau) of peer-memory mode; default: an instant
        copy every failure survives.

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
    pc = PeerCopies() if peer is None else peer
    C, f = pc.peer_copy_s, pc.peer_share
    tr = tau if pc.remote_interval_s is None else pc.remote_interval_s
    local = (np.maximum(tau, C) + d) / 2 + C
    remote = (np.maximum(tr, U) + d) / 2 + U
    return v.result(f * local + (1 - f) * remote)


def checkpoint_goodput(mode: str, interval_s: ArrayLike, stall_s: ArrayLike, mtbf_s: ArrayLike,
                       restart_s: ArrayLike = 0.0, upload_s: ArrayLike = 0.0,
                       peer: PeerCopies | None = None) -> float | np.ndarray:
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
    interval_s, stall_s, upload_s : float or array
        tau, delta, U, as :func:`rework_s` [s].
    mtbf_s : float or array
        M, job mean time between failures [s].
    restart_s : float or array
        R, detect, restart and reload [s].
    peer : PeerCopies, optional
        C [s], f [-], tau_r [s], as :func:`rework_s`.

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
    pc = PeerCopies() if peer is None else peer
    lag = v.nonnegative("upload_s", upload_s) if mode == "async" else pc.peer_copy_s
    tau_e = np.maximum(tau, lag)
    w = rework_s(mode, interval_s, stall_s, upload_s, pc)
    stretch_inv = rel.goodput(2 * np.asarray(w, float), 0.0, mtbf_s, restart_s)
    return v.result(tau_e / (tau_e + d) * stretch_inv)


# --------------------------------------------------------------------------- 6 slowest writer

def slowest_writer_quantile_s(p50_s: ArrayLike, p99_over_p50: ArrayLike, writers: ArrayLike,
                              quantile: ArrayLike = 0.5) -> float | np.ndarray:
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


def expected_slowest_writer_s(p50_s: ArrayLike, p99_over_p50: ArrayLike, writers: ArrayLike) -> float | np.ndarray:

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
