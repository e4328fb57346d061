"""The run waterfall: from the GPU's peak to the effective FLOP/s a run delivers, and the
price of a million tokens at the end.

References
----------
1. N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026):
   "utilization isn't just runtime. It's effective utilization".
2. Chowdhery et al. 2022, arXiv:2204.02311, App. B (MFU counts model FLOPs only).
3. Daly 2006 (goodput with checkpoints and failures).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from .. import _validate as v

if TYPE_CHECKING:
    from ..training.step import StepPrediction

STEPS = ("peak", "compute efficiency", "communication and pipeline bubble", "data loading stalls",
         "checkpoints", "failures: rework and restarts", "preemptions")


@dataclass(frozen=True)
class RunLosses:
    """Shares of a run's wall time lost after the step, each checked once here [-].

    Attributes
    ----------
    data_stall_share : float
        s_d, waiting for data, in [0, 1).
    checkpoint_share : float
        s_c, checkpoint stalls, in [0, 1).
    failure_share : float
        s_f, rework and restarts after failures, in [0, 1), with s_c + s_f < 1 (from
        :func:`llmcost.economics.reliability.wall_time.goodput_breakdown`).
    preemption_share : float
        s_p, time lost to preemptions, in [0, 1).
    """

    data_stall_share: float = 0.0
    checkpoint_share: float = 0.0
    failure_share: float = 0.0
    preemption_share: float = 0.0

    def __post_init__(self) -> None:
        for name in ("data_stall_share", "checkpoint_share", "failure_share", "preemption_share"):
            object.__setattr__(self, name, float(v.fraction(name, getattr(self, name), allow_zero=True,
                                                            allow_one=False)))
        if self.checkpoint_share + self.failure_share >= 1:
            raise v.InputError("failure_share", "checkpoint_share + failure_share must stay below 1")


def run_waterfall(peak_tflops: float, compute_efficiency: float, step_busy_share: float,
                  losses: RunLosses | None = None, flops_per_token: float | None = None,
                  usd_per_gpu_hour: float | None = None) -> pd.DataFrame:
    r"""Each loss applied in turn to the per-GPU FLOP/s.

    .. math:: X_{eff} = F_{peak}\; e_c\; b\; (1 - s_d)(1 - s_c - s_f)(1 - s_p)

    with e_c the model FLOPs per compute second over peak, b the share of the step spent
    computing (the rest is exposed communication, bubble, optimizer), s_d data stalls, s_c
    and s_f the checkpoint and failure shares of wall time (from
    :func:`llmcost.economics.reliability.wall_time.goodput_breakdown`), s_p time lost to preemptions.

    Parameters
    ----------
    peak_tflops : float
        Dense peak [TFLOP/s].
    compute_efficiency : float
        e_c [-], in (0, 1].
    step_busy_share : float
        b [-], in (0, 1].
    losses : RunLosses, optional
        s_d, s_c, s_f, s_p [-], shares of wall time; default none.
    flops_per_token : float, optional
        Model FLOPs per token [FLOP], for tokens and dollars per million tokens.
    usd_per_gpu_hour : float, optional
        [USD per GPU-hour].

    Returns
    -------
    table : pandas.DataFrame
        step, tflops_per_gpu [TFLOP/s], share_of_peak [-], lost_tflops [TFLOP/s], and when
        given tokens_per_gpu_hour and usd_per_million_tokens [USD].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026);
       Chowdhery et al. 2022, App. B.
    """
    lost = RunLosses() if losses is None else losses
    peak = float(v.positive("peak_tflops", peak_tflops))
    c, f = lost.checkpoint_share, lost.failure_share
    factors = [1.0, float(v.fraction("compute_efficiency", compute_efficiency)),
               float(v.fraction("step_busy_share", step_busy_share)), 1 - lost.data_stall_share,
               1 - c, (1 - c - f) / (1 - c), 1 - lost.preemption_share]
    rows, x = [], peak
    for name, k in zip(STEPS, factors):
        before = x
        x = x * k
        rows.append({"step": name, "tflops_per_gpu": x, "share_of_peak": x / peak,
                     "lost_tflops": before - x})
    df = pd.DataFrame(rows)
    if flops_per_token is not None:
        fpt = float(v.positive("flops_per_token", flops_per_token))
        df["tokens_per_gpu_hour"] = df["tflops_per_gpu"] * 1e12 * 3600 / fpt
        if usd_per_gpu_hour is not None:
            price = float(v.positive("usd_per_gpu_hour", usd_per_gpu_hour))
            df["usd_per_million_tokens"] = price / df["tokens_per_gpu_hour"] * 1e6
    return df


def waterfall_from_step(pred: StepPrediction, peak_tflops: float, losses: RunLosses | None = None,
                        flops_per_token: float | None = None,
                        usd_per_gpu_hour: float | None = None) -> pd.DataFrame:
    """:func:`run_waterfall` fed by a scalar :class:`~llmcost.training.step.StepPrediction`.

    Parameters
    ----------
    pred : StepPrediction
        One layout's prediction.
    peak_tflops : float
        [TFLOP/s].
    losses : RunLosses, optional
        Shares of wall time lost [-], as :func:`run_waterfall`.
    flops_per_token : float, optional
        [FLOP], as :func:`run_waterfall`.
    usd_per_gpu_hour : float, optional
        [USD per GPU-hour], as :func:`run_waterfall`.

    Returns
    -------
    table : pandas.DataFrame

    References
    ----------
    .. [1] Narayanan et al. 2021 (compute vs communication and bubble).
    """
    step = float(pred.step_time_s)
    compute = float(pred.compute_s)
    model_tf = float(pred.model_tflops_per_gpu)
    busy = compute / step
    eff = model_tf / busy / float(peak_tflops)
    return run_waterfall(peak_tflops, min(eff, 1.0), busy, losses, flops_per_token, usd_per_gpu_hour)
