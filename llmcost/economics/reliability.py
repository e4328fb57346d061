"""Failures and checkpoints: job failure rate, checkpoint size and stall, optimal interval,
goodput.

References
----------
.. [1] J. Young, "A first order approximation to the optimum checkpoint interval", CACM
   17(9):530-531, 1974: tau = sqrt(2 delta M).
.. [2] J. Daly, "A higher order estimate of the optimum checkpoint interval for restart
   dumps", FGCS 22(3):303-312, 2006: Eq. 37 (interval), Eq. 13-14 (expected wall time).
.. [3] A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
   Clusters", HPCA 2025, arXiv:2410.21680: 6.50 node failures per 1000 node-days (RSC-1,
   A100), 2.34 (RSC-2); job MTTF ~ 1 / (nodes r_f); measured 47.7 days for 8-GPU jobs,
   7.9 h for 1,024-GPU jobs.
.. [4] Seed article 001: MTBF 4.7 days; synchronous checkpoints 30-60 s each, asynchronous
   3-5 s local write for 70B; 500 checkpoints over 18 days = 5-8 h idle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as v

#: Kokolis et al. 2025, RSC-1 (A100): node failures per 1000 node-days.
NODE_FAILURES_PER_1000_NODE_DAYS = 6.5

#: bytes per parameter in a training checkpoint: bf16 weights 2 + fp32 master 4 + Adam
#: momentum 4 + variance 4 (gradients are not saved).
CHECKPOINT_BYTES_PER_PARAM = {"adam": 14.0, "adam-8bit": 8.0, "sgd": 10.0, "weights-only": 2.0}


def job_failures_per_day(nodes, node_failures_per_1000_node_days=NODE_FAILURES_PER_1000_NODE_DAYS):
    r"""Failure rate of a job spanning n nodes: any node failing stops the job.

    .. math:: \lambda_{job} = \frac{n\, r_f}{1000}

    Parameters
    ----------
    nodes : float or array
        n [-].
    node_failures_per_1000_node_days : float or array
        r_f [per 1000 node-days]; Kokolis et al.: 6.50 (RSC-1), 2.34 (RSC-2).

    Returns
    -------
    rate : float or array
        [failures per day].

    References
    ----------
    .. [1] Kokolis et al. 2025, arXiv:2410.21680, §IV (job MTTF ~ 1/(N r_f)).
    """
    n = v.positive("nodes", nodes)
    rf = v.positive("node_failures_per_1000_node_days", node_failures_per_1000_node_days)
    return v.result(n * rf / 1000)


def mtbf_h(failures_per_day):
    r"""Mean time between failures.

    .. math:: M = 24 / \lambda

    Parameters
    ----------
    failures_per_day : float or array
        lambda [per day], > 0.

    Returns
    -------
    mtbf : float or array
        [h].

    References
    ----------
    .. [1] Kokolis et al. 2025 (MTTF = 1 / failure rate).
    """
    return v.result(24.0 / v.positive("failures_per_day", failures_per_day))


def checkpoint_size_bytes(params, optimizer="adam"):
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


def checkpoint_stall_s(size_bytes, mode="sync", nodes=1, shared_storage_gbps=20.0,
                       node_network_gbps=50.0, local_write_gbps=5.0, host_copy_gbps=25.0,
                       gpus_per_node=8):
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
    shared_storage_gbps : float or array
        B_shared, aggregate write bandwidth of the parallel file system [GB/s].
    node_network_gbps : float or array
        B_node, per-node bandwidth towards storage [GB/s].
    local_write_gbps : float or array
        B_local, per-node local NVMe write bandwidth [GB/s].
    host_copy_gbps : float or array
        B_host, per-GPU device-to-host copy bandwidth (PCIe) [GB/s].
    gpus_per_node : int

    Returns
    -------
    stall : float or array
        [s].

    References
    ----------
    .. [1] Seed article 001 (sync to shared storage vs local NVMe write, background upload).
    .. [2] A. Maurya et al., "DataStates-LLM: Lazy Asynchronous Checkpointing for Large
       Language Models", HPDC 2024 (host-memory staging).
    """
    v.choice("mode", mode, ("sync", "async"))
    S = v.positive("size_bytes", size_bytes)
    n = v.positive("nodes", nodes)
    if mode == "sync":
        bw = np.minimum(v.positive("shared_storage_gbps", shared_storage_gbps),
                        n * v.positive("node_network_gbps", node_network_gbps))
        return v.result(S / (bw * 1e9))
    per_node = np.minimum(v.positive("gpus_per_node", gpus_per_node) *
                          v.positive("host_copy_gbps", host_copy_gbps),
                          v.positive("local_write_gbps", local_write_gbps))
    return v.result(S / (n * per_node * 1e9))


def storage_bandwidth_for_stall_gbps(size_bytes, target_stall_s):
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
    .. [1] Seed article 000 ("a storage tier that meets average throughput but cannot handle
       checkpoint bursts").
    """
    return v.result(v.positive("size_bytes", size_bytes) /
                    v.positive("target_stall_s", target_stall_s) / 1e9)


def young_interval_s(checkpoint_s, mtbf_s):
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


def daly_interval_s(checkpoint_s, mtbf_s):
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


def goodput(interval_s, checkpoint_s, mtbf_s, restart_s=0.0):
    r"""Share of wall time that advances training, with checkpoints, failures and restarts.

    Daly's exponential-failure model: the expected wall time per unit of work is

    .. math:: \frac{T_w}{T_s} = \frac{M\, e^{R/M}\left(e^{(\tau + \delta)/M} - 1\right)}{\tau},
              \qquad G = T_s / T_w \in (0, 1]

    which to first order is 1 - delta/tau - (tau/2 + delta + R)/M.

    Parameters
    ----------
    interval_s : float or array
        tau, compute between checkpoints [s].
    checkpoint_s : float or array
        delta, blocking time per checkpoint [s] (0 allowed).
    mtbf_s : float or array
        M [s].
    restart_s : float or array
        R, time to detect, restart and reload [s].

    Returns
    -------
    goodput : float or array
        [-] in (0, 1].

    References
    ----------
    .. [1] Daly 2006, FGCS 22(3):303, Eq. 13-14 (expected completion time with restarts).
    """
    tau = v.positive("interval_s", interval_s)
    d = v.nonnegative("checkpoint_s", checkpoint_s)
    M = v.positive("mtbf_s", mtbf_s)
    R = v.nonnegative("restart_s", restart_s)
    # log-space keeps huge (tau + delta)/M finite: goodput underflows to a tiny positive
    # number instead of inf/inf.
    a = (tau + d) / M
    log_tw = np.log(M) + R / M + a + np.log(-np.expm1(-a)) - np.log(tau)
    g = np.exp(-log_tw)
    return v.result(np.clip(g, np.finfo(float).tiny, 1.0))


@dataclass(frozen=True)
class GoodputBreakdown:
    goodput: np.ndarray
    checkpoint_share: np.ndarray   # of wall time [-]
    rework_share: np.ndarray
    restart_share: np.ndarray


def goodput_breakdown(interval_s, checkpoint_s, mtbf_s, restart_s=0.0) -> GoodputBreakdown:
    r"""Goodput and its losses split by cause, scaled so that they add up exactly.

    First-order losses delta/tau (checkpoints), (tau/2 + delta)/M (rework), R/M (restarts)
    are scaled to the exact loss 1 - G of :func:`goodput`.

    Parameters
    ----------
    interval_s, checkpoint_s, mtbf_s, restart_s
        As :func:`goodput`.

    Returns
    -------
    GoodputBreakdown
        Shares of wall time [-].

    References
    ----------
    .. [1] Young 1974; Daly 2006.
    """
    g = goodput(interval_s, checkpoint_s, mtbf_s, restart_s)
    tau, d = np.asarray(interval_s, float), np.asarray(checkpoint_s, float)
    M, R = np.asarray(mtbf_s, float), np.asarray(restart_s, float)
    parts = np.stack(np.broadcast_arrays(d / tau, (tau / 2 + d) / M, R / M))
    total = parts.sum(axis=0)
    scale = np.where(total > 0, (1 - g) / np.where(total > 0, total, 1), 0.0)
    c, w, r = (v.result(p * scale) for p in parts)
    return GoodputBreakdown(g, c, w, r)
