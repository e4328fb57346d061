"""Failures and checkpoints: job failure rate, checkpoint size and stall, optimal interval,
goodput, the work one interruption (failure or spot preemption) costs, and the restart after
it as named terms (detection, rescheduling, checkpoint load, warm-up: :func:`restart_terms`).

Failure rates are per 1000 **GPU**-days: the GPU is the failure unit, so a 4-GPU GB200 tray
and an 8-GPU DGX compare directly. The shipped rates (``data/failure_rates.csv``, read by
:mod:`llmcost.catalog`, passed in here as a table) each say what they count: job
interruptions of all causes (the job-level measurements a default must reproduce) or node
hardware failures only (a lower bound on job failures).

The cluster guide's "mean time between failures is 4.7 days" [5] names no GPU count, so it gives no
per-GPU rate and is not a preset.

References
----------
1. J. Young, "A first order approximation to the optimum checkpoint interval", CACM
   17(9):530-531, 1974: tau = sqrt(2 delta M).
2. J. Daly, "A higher order estimate of the optimum checkpoint interval for restart
   dumps", FGCS 22(3):303-312, 2006: Eq. 37 (interval), Eq. 13-14 (expected wall time).
3. A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
   Clusters", HPCA 2025, arXiv:2410.21680: 6.50 node failures per 1000 node-days (RSC-1,
   A100), 2.34 (RSC-2); job MTTF ~ 1 / (nodes r_f); measured 47.7 days for 8-GPU jobs,
   7.9 h for 1,024-GPU jobs.
4. Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.3.4, Table 5:
   419 unexpected interruptions in 54 days on 16,384 H100 (one per ~3.1 h).
5. N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): MTBF 4.7 days;
   synchronous checkpoints 30-60 s each, asynchronous 3-5 s local write for 70B; 500
   checkpoints over 18 days = 5-8 h idle.
6. B. Wan et al., "Robust LLM Training Infrastructure at ByteDance" (ByteRobust), SOSP
   2025, arXiv:2509.16293: Table 1 (incidents of 778,135 jobs in three months), Sec. 2.2
   (detection ~60 s, localization 2-15 min), Table 3 (detection with inspection), Table 7
   (requeue vs in-place restart, 2,048-16,384 GPUs), Sec. 8.1.3 (ETTR up to 97% on 9,600
   GPUs).
7. Z. Jiang et al., "MegaScale: Scaling Large Language Model Training to More Than
   10,000 GPUs", NSDI 2024, arXiv:2402.15627: Sec. 3.5 (communicator initialisation 1,047 s
   on 2,048 GPUs before, under 5 s after, under 30 s above 10,000), Sec. 4.4 (two-stage
   asynchronous checkpoints), Sec. 6.3 (detection and diagnosis under 10 min on average).
8. Llama Team 2024, arXiv:2407.21783, Sec. 3.3.1: Tectonic serves the 16,384-GPU cluster
   at 2 TB/s sustained, 7 TB/s peak.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import _validate as v

#: Kokolis et al. 2025, RSC-1 (A100): node *hardware* failures per 1000 node-days. Kept for
#: callers converting node rates; not a job-level default (see ``default_failure_rate``).
NODE_FAILURES_PER_1000_NODE_DAYS = 6.5

#: GPUs per node in the clusters the node rates were measured on (Meta RSC: 8x A100).
KOKOLIS_GPUS_PER_NODE = 8

#: generation whose job-level rate stands in for generations with no published one.
FALLBACK_GENERATION = "hopper"

#: bytes per parameter in a training checkpoint: bf16 weights 2 + fp32 master 4 + Adam
#: momentum 4 + variance 4 (gradients are not saved).
CHECKPOINT_BYTES_PER_PARAM = {"adam": 14.0, "adam-8bit": 8.0, "sgd": 10.0, "weights-only": 2.0}

#: shared-storage bandwidth per node [GB/s]: Meta's Tectonic sustains 2 TB/s for the 16,384
#: H100 of Llama 3 (2,048 nodes of 8; 7 TB/s peak), so 2000 / 2048 GB/s each; the sustained
#: figure, since checkpoint bursts "saturate the storage fabric" (Llama 3 Sec. 3.3.1)
STORAGE_GB_PER_S_PER_NODE = 2000.0 / 2048

#: per-node bandwidth towards shared storage [GB/s] (one 400 Gb/s storage NIC per node)
NODE_NETWORK_GB_PER_S = 50.0


def job_failures_per_day(gpus, failures_per_1000_gpu_days):
    r"""Failure rate of a job spanning g GPUs: any GPU failing stops the job.

    .. math:: \lambda_{job} = \frac{g\, r_f}{1000}

    Parameters
    ----------
    gpus : float or array
        g, GPUs in the job [-].
    failures_per_1000_gpu_days : float or array
        r_f [per 1000 GPU-days]; see ``data/failure_rates.csv`` (Llama 3 on H100: 0.4736;
        Kokolis A100 jobs: 2.967).

    Returns
    -------
    rate : float or array
        [failures per day].

    References
    ----------
    .. [1] Kokolis et al. 2025, arXiv:2410.21680, Sec. IV (job MTTF ~ 1/(N r_f)).
    .. [2] Llama Team 2024, arXiv:2407.21783, Sec. 3.3.4.
    """
    g = v.positive("gpus", gpus)
    rf = v.positive("failures_per_1000_gpu_days", failures_per_1000_gpu_days)
    return v.result(g * rf / 1000)


def gpu_rate_from_node_rate(failures_per_1000_node_days, gpus_per_node=KOKOLIS_GPUS_PER_NODE):
    r"""Per-GPU failure rate from a per-node one (the node fails when any of its GPUs does).

    .. math:: r_{gpu} = r_{node} / g_{node}

    Parameters
    ----------
    failures_per_1000_node_days : float or array
        r_node [per 1000 node-days].
    gpus_per_node : float or array
        g_node [-] of the nodes the rate was measured on (8 for Kokolis's RSC clusters).

    Returns
    -------
    rate : float or array
        [per 1000 GPU-days].

    References
    ----------
    .. [1] Kokolis et al. 2025, arXiv:2410.21680 (RSC-1 6.50, RSC-2 2.34 per 1000
       node-days; 8 A100 per node).
    """
    rn = v.positive("failures_per_1000_node_days", failures_per_1000_node_days)
    g = v.positive("gpus_per_node", gpus_per_node)
    return v.result(rn / g)


@dataclass(frozen=True)
class FailureRate:
    """One failure-rate preset: the rate, what it counts, where it comes from."""

    id: str
    failures_per_1000_gpu_days: float
    counts: str          # e.g. "job interruptions, unexpected, all causes"
    source: str
    note: str = ""       # a warning for the reader ("" when the rate is the generation's own)
    derivation: str = ""  # the row's notes: how the rate was derived


_FAILURE_COLUMNS = ("id", "failures_per_1000_gpu_days", "counts", "source")


def _failure_row(row, note="") -> FailureRate:
    deriv = row.get("notes", "")
    return FailureRate(id=str(row["id"]),
                       failures_per_1000_gpu_days=float(row["failures_per_1000_gpu_days"]),
                       counts=str(row["counts"]), source=str(row["source"]), note=note,
                       derivation="" if not isinstance(deriv, str) else deriv)


def _check_failure_table(table) -> pd.DataFrame:
    if not isinstance(table, pd.DataFrame):
        raise v.InputError("table", "table must be the failure_rates DataFrame "
                                    "(llmcost.catalog.failure_rates())")
    missing = [c for c in _FAILURE_COLUMNS if c not in table.columns]
    if missing:
        raise v.InputError("table", f"failure_rates table lacks column(s) {', '.join(missing)}")
    return table


def failure_rate(preset_id, table) -> FailureRate:
    r"""A failure-rate preset by id.

    Parameters
    ----------
    preset_id : str
        id in the table, e.g. "llama3-h100-jobs", "kokolis-rsc1-node-hw" (case-insensitive).
    table : pandas.DataFrame
        The failure_rates table (:func:`llmcost.catalog.failure_rates`).

    Returns
    -------
    FailureRate
        failures_per_1000_gpu_days [per 1000 GPU-days], what it counts, its source.

    References
    ----------
    .. [1] ``data/failure_rates.csv`` (Llama Team 2024, arXiv:2407.21783; Kokolis et al. 2025,
       arXiv:2410.21680).
    """
    t = _check_failure_table(table)
    key = str(preset_id).strip().lower()
    hit = t[t["id"].astype(str).str.lower() == key]
    if hit.empty:
        raise v.InputError("failure_rate", f"failure_rate {preset_id!r} is not a preset "
                                           f"(known: {', '.join(map(str, t['id']))})")
    return _failure_row(hit.iloc[-1])


def default_failure_rate(generation, table) -> FailureRate:
    r"""The job-level failure rate a GPU generation defaults to.

    Each generation with a published job-level measurement has a row whose ``default_for``
    names it (hopper: Llama 3's 3.1 h at 16,384 H100; ampere: Kokolis's 7.9 h at 1,024
    A100). Any other generation (blackwell, cdna3, ada, unknown) gets hopper's rate and a
    ``note`` saying so, for the caller to show as a warning. When several rows claim the same
    generation, the last one wins (a user's row added with ``Catalog.with_rows``).

    Parameters
    ----------
    generation : str
        GPU generation as in ``data/gpus.csv`` (case-insensitive).
    table : pandas.DataFrame
        The failure_rates table (:func:`llmcost.catalog.failure_rates`).

    Returns
    -------
    FailureRate
        failures_per_1000_gpu_days [per 1000 GPU-days]; ``note`` non-empty for a fallback.

    References
    ----------
    .. [1] Llama Team 2024, arXiv:2407.21783, Sec. 3.3.4, Table 5.
    .. [2] Kokolis et al. 2025, arXiv:2410.21680.
    """
    t = _check_failure_table(table)
    gen = "" if generation is None else str(generation).strip().lower()
    claims = t["default_for"].fillna("").astype(str).str.strip().str.lower() \
        if "default_for" in t else pd.Series([""] * len(t), index=t.index)
    hit = t[claims == gen] if gen else t.iloc[0:0]
    if not hit.empty:
        return _failure_row(hit.iloc[-1])
    fb = t[claims == FALLBACK_GENERATION]
    if fb.empty:
        raise v.InputError("generation", f"no failure rate for generation {generation!r} and "
                                         f"no {FALLBACK_GENERATION} default to fall back on")
    row = fb.iloc[-1]
    return _failure_row(row, note=(
        f"no published job-level failure rate for GPU generation {generation or 'unknown'!s}; "
        f"using {FALLBACK_GENERATION}'s ({row['id']}, {float(row['failures_per_1000_gpu_days']):g} "
        f"per 1000 GPU-days)"))


def lost_hours_per_interruption(interval_s, checkpoint_s=0.0):
    r"""Billed job-hours of work one interruption (failure or preemption) throws away.

    Checkpoints every tau seconds of compute, each blocking delta: the run goes through
    segments of tau + delta wall seconds, and an interruption at a uniformly random moment
    loses the wall time since its segment began, on average

    .. math:: w = \frac{(\tau + \delta)/2}{3600}

    This is the per-failure rework of :func:`goodput_breakdown` (Daly's stretch
    F ~ 1 + ((tau + delta)/2 + R)/M). Counted per second of compute instead of wall time,
    as in Daly's first-order goodput 1 - delta/tau - (tau/2 + delta + R)/M, the same loss
    reads tau/2 + delta; the two differ by delta/2 per failure, a second-order term
    (delta/tau x tau/M). The restart (detect, reschedule, reload) is separate: pass it to
    the spot model as ``restart_h`` and to the goodput model as ``restart_s``, so a
    preemption and a failure cost the same under one model.

    Parameters
    ----------
    interval_s : float or array
        tau, compute between checkpoints [s].
    checkpoint_s : float or array
        delta, blocking time per checkpoint [s].

    Returns
    -------
    hours : float or array
        w [h].

    References
    ----------
    .. [1] Young 1974, CACM 17(9) (half an interval lost per failure).
    .. [2] Daly 2006, FGCS 22(3):303, Eq. 13-14 (expected wall time with failures and
       restarts; its expansion in 1/M).
    """
    tau = v.positive("interval_s", interval_s)
    d = v.nonnegative("checkpoint_s", checkpoint_s)
    return v.result((tau + d) / 2 / 3600)


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


def shared_tier_gb_per_s(nodes, per_node_gb_per_s=STORAGE_GB_PER_S_PER_NODE,
                         total_gb_per_s=None):
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


def checkpoint_stall_s(size_bytes, mode="sync", nodes=1, shared_storage_gb_per_s=None,
                       node_network_gb_per_s=NODE_NETWORK_GB_PER_S, local_write_gb_per_s=5.0,
                       host_copy_gb_per_s=25.0, gpus_per_node=8,
                       storage_gb_per_s_per_node=STORAGE_GB_PER_S_PER_NODE):
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
    shared_storage_gb_per_s : float or array, optional
        B_shared, aggregate write bandwidth of the parallel file system [GB/s]; None:
        n x ``storage_gb_per_s_per_node`` (:func:`shared_tier_gb_per_s`).
    node_network_gb_per_s : float or array
        B_node, per-node bandwidth towards storage [GB/s].
    local_write_gb_per_s : float or array
        B_local, per-node local NVMe write bandwidth [GB/s].
    host_copy_gb_per_s : float or array
        B_host, per-GPU device-to-host copy bandwidth (PCIe) [GB/s].
    gpus_per_node : int
    storage_gb_per_s_per_node : float or array
        The shared tier's bandwidth per node [GB/s], used when ``shared_storage_gb_per_s``
        is None (Llama 3's Tectonic: 2000 / 2048).

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
    S = v.positive("size_bytes", size_bytes)
    n = v.positive("nodes", nodes)
    if mode == "sync":
        shared = shared_tier_gb_per_s(n, storage_gb_per_s_per_node) \
            if shared_storage_gb_per_s is None else \
            v.positive("shared_storage_gb_per_s", shared_storage_gb_per_s)
        bw = np.minimum(shared, n * v.positive("node_network_gb_per_s", node_network_gb_per_s))
        return v.result(S / (bw * 1e9))
    per_node = np.minimum(v.positive("gpus_per_node", gpus_per_node) *
                          v.positive("host_copy_gb_per_s", host_copy_gb_per_s),
                          v.positive("local_write_gb_per_s", local_write_gb_per_s))
    return v.result(S / (n * per_node * 1e9))


def storage_bandwidth_for_stall_gb_per_s(size_bytes, target_stall_s):
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
        R, time to detect, restart and reload [s] (:func:`restart_time_s` sums its terms).

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
    r"""Goodput and its losses split by cause; the shares add up to 1 exactly.

    Daly's expected wall time factors into the checkpoint overhead of a failure-free run and
    a stretch F from failures:

    .. math::
        \frac{T_w}{T_s} = \frac{\tau + \delta}{\tau}\, F,\qquad
        F = \frac{M\, e^{R/M}\left(e^{(\tau + \delta)/M} - 1\right)}{\tau + \delta}
          \approx 1 + \frac{(\tau + \delta)/2 + R}{M}

    so of the wall time, 1 - 1/F is lost to failures (split between rework and restarts in
    the ratio (tau + delta)/2 : R of their first-order terms), delta / ((tau + delta) F) goes
    to checkpoints and G = tau / ((tau + delta) F) to training. Per failure the rework is
    (tau + delta)/2 of wall time, :func:`lost_hours_per_interruption`: the spot model, given
    that w and the same restart, loses r (w + R) / 24 = ((tau + delta)/2 + R) / M of its wall
    time to preemptions at M = 24 / r h, which is this model's failure share to first order.

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
    .. [1] Young 1974; Daly 2006, FGCS 22(3):303, Eq. 13-14.
    """
    g = goodput(interval_s, checkpoint_s, mtbf_s, restart_s)
    tau, d = np.asarray(interval_s, float), np.asarray(checkpoint_s, float)
    M, R = np.asarray(mtbf_s, float), np.asarray(restart_s, float)
    a = tau + d
    # log F in the same overflow-safe form as goodput()
    log_f = np.log(M) + R / M + a / M + np.log(-np.expm1(-a / M)) - np.log(a)
    inv_f = np.exp(-log_f)
    failure = -np.expm1(-log_f)
    first = a / 2 + R
    rework = failure * (a / 2) / first
    restart = failure * R / first
    ckpt = d / a * inv_f
    return GoodputBreakdown(goodput=g, checkpoint_share=v.result(ckpt),
                            rework_share=v.result(rework), restart_share=v.result(restart))


# --------------------------------------------------------------------------- restart terms

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


def detection_s(detector=DEFAULT_DETECTOR, hang_share=HANG_SHARE, localize_s=LOCALIZE_S):
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


def reschedule_s(gpus, policy=DEFAULT_RESCHEDULE):
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


def checkpoint_load_s(size_bytes, nodes, read_gb_per_s_per_node=STORAGE_GB_PER_S_PER_NODE,
                      tier_read_gb_per_s=None, node_network_gb_per_s=NODE_NETWORK_GB_PER_S):
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


def warmup_s(gpus, init_s_per_rank=INIT_S_PER_RANK, dataloader_s=DATALOADER_S, compile_s=0.0):
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


def restart_terms(gpus, checkpoint_bytes, gpus_per_node=8,
                  read_gb_per_s_per_node=STORAGE_GB_PER_S_PER_NODE, tier_read_gb_per_s=None,
                  detector=DEFAULT_DETECTOR, reschedule=DEFAULT_RESCHEDULE,
                  hang_share=HANG_SHARE, localize_s=LOCALIZE_S, init_s_per_rank=INIT_S_PER_RANK,
                  dataloader_s=DATALOADER_S, compile_s=0.0,
                  node_network_gb_per_s=NODE_NETWORK_GB_PER_S) -> RestartTerms:
    r"""The restart after one interruption as its four terms, at each GPU count.

    .. math:: R = t_{detect} + t_{resched}(g) + t_{load}(S, n) + t_{warm}(g),\qquad
              n = \lceil g / g_{node} \rceil

    with :func:`detection_s`, :func:`reschedule_s`, :func:`checkpoint_load_s` and
    :func:`warmup_s`. R is Daly's restart (the ``restart_s`` of :func:`goodput`) and
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
    gpus_per_node : float or array
        g_node [-].
    read_gb_per_s_per_node, tier_read_gb_per_s, node_network_gb_per_s
        As :func:`checkpoint_load_s` [GB/s].
    detector, hang_share, localize_s
        As :func:`detection_s`.
    reschedule : {"in-job-spare", "requeue"}
        As :func:`reschedule_s`.
    init_s_per_rank, dataloader_s, compile_s
        As :func:`warmup_s`.

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
    g = v.positive("gpus", gpus)
    gn = v.positive("gpus_per_node", gpus_per_node)
    nodes = np.maximum(1.0, np.ceil(g / gn))
    d = np.asarray(detection_s(detector, hang_share, localize_s), float)
    r = np.asarray(reschedule_s(g, reschedule), float)
    load = np.asarray(checkpoint_load_s(checkpoint_bytes, nodes, read_gb_per_s_per_node,
                                        tier_read_gb_per_s, node_network_gb_per_s), float)
    w = np.asarray(warmup_s(g, init_s_per_rank, dataloader_s, compile_s), float)
    shape = np.broadcast(d, r, load, w).shape
    d, r, load, w = (np.broadcast_to(x, shape) for x in (d, r, load, w))
    return RestartTerms(detect_s=v.result(d), reschedule_s=v.result(r), load_s=v.result(load),
                        warmup_s=v.result(w), total_s=v.result(d + r + load + w))


def restart_time_s(gpus, checkpoint_bytes, **terms):
    r"""Restart per interruption, the sum of :func:`restart_terms` [s].

    .. math:: R = t_{detect} + t_{resched} + t_{load} + t_{warm}

    Parameters
    ----------
    gpus : float or array
        g [-].
    checkpoint_bytes : float or array
        S [bytes].
    **terms
        Any keyword of :func:`restart_terms`.

    Returns
    -------
    restart : float or array
        R [s].

    References
    ----------
    .. [1] Kokolis et al. 2025, arXiv:2410.21680, Sec. V; see :func:`restart_terms`.
    """
    return restart_terms(gpus, checkpoint_bytes, **terms).total_s
