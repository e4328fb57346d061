"""Failures and checkpoints: job failure rate, checkpoint size and stall, optimal interval,
goodput, and the work one interruption (failure or spot preemption) costs.

Failure rates are per 1000 **GPU**-days: the GPU is the failure unit, so a 4-GPU GB200 tray
and an 8-GPU DGX compare directly. The shipped rates (``data/failure_rates.csv``, read by
:mod:`llmcost.catalog`, passed in here as a table) each say what they count: job
interruptions of all causes (the job-level measurements a default must reproduce) or node
hardware failures only (a lower bound on job failures).

The seed's "mean time between failures is 4.7 days" names no GPU count, so it gives no
per-GPU rate and is not a preset.

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
.. [4] Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.3.4, Table 5:
   419 unexpected interruptions in 54 days on 16,384 H100 (one per ~3.1 h).
.. [5] Seed article 001: MTBF 4.7 days; synchronous checkpoints 30-60 s each, asynchronous
   3-5 s local write for 70B; 500 checkpoints over 18 days = 5-8 h idle.
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


def checkpoint_stall_s(size_bytes, mode="sync", nodes=1, shared_storage_gb_per_s=20.0,
                       node_network_gb_per_s=50.0, local_write_gb_per_s=5.0, host_copy_gb_per_s=25.0,
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
    shared_storage_gb_per_s : float or array
        B_shared, aggregate write bandwidth of the parallel file system [GB/s].
    node_network_gb_per_s : float or array
        B_node, per-node bandwidth towards storage [GB/s].
    local_write_gb_per_s : float or array
        B_local, per-node local NVMe write bandwidth [GB/s].
    host_copy_gb_per_s : float or array
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
        bw = np.minimum(v.positive("shared_storage_gb_per_s", shared_storage_gb_per_s),
                        n * v.positive("node_network_gb_per_s", node_network_gb_per_s))
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
    return GoodputBreakdown(g, v.result(ckpt), v.result(rework), v.result(restart))
