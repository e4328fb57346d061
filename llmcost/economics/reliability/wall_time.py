"""Goodput: the share of wall time that advances training once checkpoints, failures and
restarts have taken theirs, split by cause, and the work one interruption (failure or spot
preemption) throws away.

References
----------
1. J. Young, "A first order approximation to the optimum checkpoint interval", CACM
   17(9):530-531, 1974.
2. J. Daly, "A higher order estimate of the optimum checkpoint interval for restart
   dumps", FGCS 22(3):303-312, 2006: Eq. 13-14 (expected wall time).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v

#: seconds in a day [s]
SECONDS_PER_DAY = 86400.0


def days_to_train(tokens: ArrayLike, tokens_per_s: ArrayLike,
                  useful_share: ArrayLike = 1.0) -> float | np.ndarray:
    r"""Wall days to train D tokens at a throughput, when a share of the wall time trains.

    .. math:: t = \frac{D}{\dot D\, u} \cdot \frac{1}{86400}

    with u the useful share of wall time: goodput (:func:`goodput`) times the share the
    data loader does not stall. The one days formula: the review's floor and every size of
    ``llmcost.planning.sizing`` use it.

    Parameters
    ----------
    tokens : float or array
        D, training tokens [tokens].
    tokens_per_s : float or array
        :math:`\dot D`, the cluster's throughput while it trains [tokens/s].
    useful_share : float or array
        u, in (0, 1] [-].

    Returns
    -------
    days : float or array
        t [days].

    References
    ----------
    .. [1] J. Daly, FGCS 22(3):303-312, 2006, Eq. 13-14 (wall time = compute time / goodput).
    """
    D = v.nonnegative("tokens", tokens)
    rate = v.positive("tokens_per_s", tokens_per_s)
    u = v.fraction("useful_share", useful_share)
    return v.result(D / rate / u / SECONDS_PER_DAY)


def lost_hours_per_interruption(interval_s: ArrayLike, checkpoint_s: ArrayLike = 0.0) -> float | np.ndarray:
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


def goodput(interval_s: ArrayLike, checkpoint_s: ArrayLike, mtbf_s: ArrayLike,
            restart_s: ArrayLike = 0.0) -> float | np.ndarray:
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
        R, time to detect, restart and reload [s] (:func:`.restart_time_s` sums its terms).

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


def goodput_breakdown(interval_s: ArrayLike, checkpoint_s: ArrayLike, mtbf_s: ArrayLike,
                      restart_s: ArrayLike = 0.0) -> GoodputBreakdown:

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
    # g is a float for scalar inputs, as v.result makes the other shares
    return GoodputBreakdown(goodput=g, checkpoint_share=v.result(ckpt),  # type: ignore[arg-type]

                            rework_share=v.result(rework), restart_share=v.result(restart))
