"""Job failure rates: the presets of ``data/failure_rates.csv`` by id or by GPU generation,
a job's failures per day from its GPU count, and the mean time between them.

Failure rates are per 1000 **GPU**-days: the GPU is the failure unit, so a 4-GPU GB200 tray
and an 8-GPU DGX compare directly. The shipped rates (``data/failure_rates.csv``, read by
:mod:`llmcost.catalog`, passed in here as a table) each say what they count: job
interruptions of all causes (the job-level measurements a default must reproduce) or node
hardware failures only (a lower bound on job failures).

The cluster guide's "mean time between failures is 4.7 days" [3] names no GPU count, so it gives no
per-GPU rate and is not a preset.

References
----------
1. A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine Learning Research
   Clusters", HPCA 2025, arXiv:2410.21680: 6.50 node failures per 1000 node-days (RSC-1,
   A100), 2.34 (RSC-2); job MTTF ~ 1 / (nodes r_f); measured 47.7 days for 8-GPU jobs,
   7.9 h for 1,024-GPU jobs.
2. Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.3.4, Table 5:
   419 unexpected interruptions in 54 days on 16,384 H100 (one per ~3.1 h).
3. N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): MTBF 4.7 days.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ... import _validate as v

#: Kokolis et al. 2025, RSC-1 (A100): node *hardware* failures per 1000 node-days. Kept for
#: callers converting node rates; not a job-level default (see ``default_failure_rate``).
NODE_FAILURES_PER_1000_NODE_DAYS = 6.5

#: GPUs per node in the clusters the node rates were measured on (Meta RSC: 8x A100).
KOKOLIS_GPUS_PER_NODE = 8

#: generation whose job-level rate stands in for generations with no published one.
FALLBACK_GENERATION = "hopper"


def job_failures_per_day(gpus: ArrayLike, failures_per_1000_gpu_days: ArrayLike) -> float | np.ndarray:
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


def gpu_rate_from_node_rate(failures_per_1000_node_days: ArrayLike,
                            gpus_per_node: ArrayLike = KOKOLIS_GPUS_PER_NODE) -> float | np.ndarray:
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


def _failure_row(row: pd.Series, note: str = "") -> FailureRate:
    deriv = row.get("notes", "")
    return FailureRate(id=str(row["id"]),
                       failures_per_1000_gpu_days=float(row["failures_per_1000_gpu_days"]),
                       counts=str(row["counts"]), source=str(row["source"]), note=note,
                       derivation="" if not isinstance(deriv, str) else deriv)


def _check_failure_table(table: object) -> pd.DataFrame:
    if not isinstance(table, pd.DataFrame):
        raise v.InputError("table", "table must be the failure_rates DataFrame "
                                    "(llmcost.catalog.failure_rates())")
    missing = [c for c in _FAILURE_COLUMNS if c not in table.columns]
    if missing:
        raise v.InputError("table", f"failure_rates table lacks column(s) {', '.join(missing)}")
    return table


def failure_rate(preset_id: str, table: pd.DataFrame) -> FailureRate:
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


def default_failure_rate(generation: str | None, table: pd.DataFrame) -> FailureRate:
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


def mtbf_h(failures_per_day: ArrayLike) -> float | np.ndarray:

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
