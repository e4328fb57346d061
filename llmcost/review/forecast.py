"""Stage ``forecast``: the run's floor, and what published teams realized over theirs.

The *floor* is the step model's throughput with goodput and data stalls: the days the cluster
takes when the run goes as well as the physics allows. The *forecast* is the floor times the
realized ratio of comparable published runs (:mod:`llmcost.economics.realized`), with the band
of those runs' spread: the figure a reviewer signs and is later held to.
"""

from __future__ import annotations

from ..economics import realized
from ..economics.reliability import days_to_train
from .results import ForecastResult, Inputs, PlanResult, PredictResult, ReliabilityResult
from .stages import data_stall_at


def forecast(inp: Inputs, pl: PlanResult, pr: PredictResult | None,
             r: ReliabilityResult) -> ForecastResult:
    r"""Floor and forecast days and GPU-hours of the run.

    .. math::
        t_{floor} = \frac{D}{\dot D\, g\, (1 - s)}, \qquad t = \hat r\, t_{floor}, \qquad
        [t_{lo}, t_{hi}] = [r_{lo}\, t_{floor},\, r_{hi}\, t_{floor}]

    with D the tokens, :math:`\dot D` the predicted tokens/s, g the goodput, s the data-stall
    share and :math:`\hat r`, [r_lo, r_hi] the comparison group's median and band
    (``inp.realized``). GPU-hours are days x 24 x GPUs. Goodput is inside the floor only: the
    published runs' ratios are taken over their own floors, goodput included, so it is not
    counted twice.
    """
    stall = float(data_stall_at(inp, pr.tokens_per_s if pr is not None else 0.0, pl.gpus))
    useful = r.goodput * (1 - stall)
    ratio = inp.realized if inp.realized is not None else realized.NO_RUNS
    if pr is None or pr.tokens_per_s <= 0:
        return ForecastResult(useful_share=useful, data_stall_share=stall, floor_days=None,
                              floor_gpu_hours=None, realized=ratio, days=None, gpu_hours=None)
    floor_days = float(days_to_train(inp.scenario.tokens, pr.tokens_per_s, useful))
    days = floor_days * ratio.value
    band = (floor_days * ratio.band[0], floor_days * ratio.band[1])
    per_day = 24.0 * pl.gpus
    return ForecastResult(useful_share=useful, data_stall_share=stall, floor_days=floor_days,
                          floor_gpu_hours=floor_days * per_day, realized=ratio, days=days,
                          gpu_hours=days * per_day, days_band=band,
                          gpu_hours_band=(band[0] * per_day, band[1] * per_day))
