"""Spot vs on-demand: net savings after interruptions, closed form, exact inverse and Monte
Carlo.

One interruption model for spot and failures. Interruptions arrive as Poisson processes per
day of wall time: preemptions at r (spot only) and hardware/software failures at r_f (both
runs: a spot run fails as often as an on-demand one on the same GPUs). Each interruption
throws away the work since the last checkpoint (w, billed job-hours; by default the same for
a failure as for a preemption, see :func:`llmcost.economics.reliability.wall_time.lost_hours_per_interruption`)
and costs a restart R. A preemption also waits W for capacity, during which a share beta of
the nodes stays billed. Spot and on-demand are compared for the same useful work.

References
----------
1. N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): AWS P5 spot,
   "60% cost savings", 2.4 preemptions per day, 1-2 h of work lost each, "net savings: 22%".
2. A. Wald, "On cumulative sums of random variables", Ann. Math. Stat. 15(3), 1944
   (E[sum] = E[count] E[term]; gives the expected stretched duration).
3. J. Young, "A first order approximation to the optimum checkpoint interval", CACM
   17(9), 1974 (work lost per failure: half a checkpoint interval on average).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v

#: most simulated runs one call may ask for (10M runs take ~1 GB of temporaries).
MAX_MONTE_CARLO_RUNS = 10_000_000
#: most interruptions one simulation may expect: with a checkpoint interval each takes a
#: random rework draw and its run's index (16 bytes; 5e7 draws ~0.8 GB), over all runs;
#: with a fixed rework, per run (numpy's Poisson refuses means near 1e19).
MAX_MONTE_CARLO_DRAWS = 50_000_000


@dataclass(frozen=True, eq=False)
class SpotMarket:
    """A spot market's price and interruptions, each value checked once here (scalars or
    arrays that broadcast).

    Attributes
    ----------
    discount : float or array
        d, spot's price cut [-], in [0, 1).
    preemptions_per_day : float or array
        r [per day of wall time], >= 0.
    capacity_wait_h : float or array
        W, wait for spot capacity after a preemption [h].
    billed_share_during_wait : float or array
        beta [-]: 1 if the surviving nodes stay billed while waiting, 0 if all are released.
    """

    discount: float | np.ndarray
    preemptions_per_day: float | np.ndarray
    capacity_wait_h: float | np.ndarray = 0.0
    billed_share_during_wait: float | np.ndarray = 1.0

    def __post_init__(self) -> None:
        v.check_fields(self, v.in_range, ("discount",), low=0, high=1, high_inclusive=False)
        v.check_fields(self, v.nonnegative, ("preemptions_per_day", "capacity_wait_h"))
        v.check_fields(self, v.fraction, ("billed_share_during_wait",), allow_zero=True)


@dataclass(frozen=True, eq=False)
class RunFailures:
    """The run's own failures (spot and on-demand alike) and the restart any interruption
    costs, each value checked once here (scalars or arrays that broadcast).

    Attributes
    ----------
    restart_h : float or array
        R, detect, reschedule and reload after any interruption [h].
    failures_per_day : float or array
        r_f [per day], job failures (hardware and software) of either run; e.g.
        :func:`llmcost.economics.reliability.failures.job_failures_per_day`.
    failure_lost_hours : float or array, optional
        w_f [h], work lost per failure; None: as per preemption (same checkpoints, same loss).
    """

    restart_h: float | np.ndarray = 0.0
    failures_per_day: float | np.ndarray = 0.0
    failure_lost_hours: float | np.ndarray | None = None

    def __post_init__(self) -> None:
        v.check_fields(self, v.nonnegative, ("restart_h", "failures_per_day")
                       + (("failure_lost_hours",) if self.failure_lost_hours is not None else ()))


def _deprecated_failures(failures: RunFailures, on_demand_failures_per_day: ArrayLike | None,
                         on_demand_lost_hours: ArrayLike | None) -> RunFailures:
    """The failure terms with the older keyword names (on_demand_*) taken, with a warning."""
    if on_demand_failures_per_day is not None:
        warnings.warn("on_demand_failures_per_day is now failures_per_day (and counts for the "
                      "spot run too)", DeprecationWarning, stacklevel=3)
        failures = replace(failures, failures_per_day=v.as_float("failures_per_day",
                                                                    on_demand_failures_per_day))
    if on_demand_lost_hours is not None:
        warnings.warn("on_demand_lost_hours is now failure_lost_hours", DeprecationWarning,
                      stacklevel=3)
        failures = replace(failures, failure_lost_hours=v.as_float("failure_lost_hours",
                                                                      on_demand_lost_hours))
    return failures


def useful_share(events_per_day: ArrayLike, hours_per_event: ArrayLike) -> float | np.ndarray:
    r"""Share of wall time that advances the run when events cost time.

    .. math:: f = 1 - \frac{r\, o}{24}

    Parameters
    ----------
    events_per_day : float or array
        r [per day].
    hours_per_event : float or array
        o [h].

    Returns
    -------
    share : float or array
        [-]; <= 0 means the run never finishes.

    References
    ----------
    .. [1] Wald 1944: E[D] = T + r E[D] o / 24, so T / E[D] = 1 - r o / 24.
    """
    r = v.nonnegative("events_per_day", events_per_day)
    o = v.nonnegative("hours_per_event", hours_per_event)
    return v.result(1 - r * o / 24)


@dataclass(frozen=True)
class SpotResult:
    net_savings: np.ndarray          # share of on-demand cost saved [-]
    duration_stretch: np.ndarray     # spot wall time / on-demand wall time [-]
    spot_cost_share: np.ndarray      # spot cost / on-demand list cost for the ideal run [-]
    on_demand_cost_share: np.ndarray  # on-demand cost (with its failures) / ideal run [-]


def spot_net_savings(market: SpotMarket, lost_hours_per_preemption: ArrayLike, failures: RunFailures | None = None,
                     *, on_demand_failures_per_day: ArrayLike | None = None,
                     on_demand_lost_hours: ArrayLike | None = None) -> SpotResult:
    r"""Net savings of spot over on-demand after preemptions and failures (closed form).

    Useful share of wall time on spot f_s (preemptions and failures) and on demand f_o
    (failures only), and the billed share of spot wall time b_s:

    .. math::
        f_s &= 1 - \frac{r (w + R + W) + r_f (w_f + R)}{24},\quad
        f_o = 1 - \frac{r_f (w_f + R)}{24},\quad
        b_s = 1 - \frac{r W (1 - \beta)}{24} \\
        S &= 1 - \frac{(1 - d)\, b_s / f_s}{1 / f_o}

    With failures, restart and wait at zero: S = 1 - (1 - d)/(1 - r w / 24); the cluster
    guide's 60% off, 2.4/day, 1.5 h gives 52.9%, not its 22%.

    Parameters
    ----------
    market : SpotMarket
        d [-], r [per day], W [h] and beta [-].
    lost_hours_per_preemption : float or array
        w, billed job-hours of work lost per preemption [h]; from a checkpoint interval:
        :func:`llmcost.economics.reliability.wall_time.lost_hours_per_interruption`.
    failures : RunFailures, optional
        R [h], r_f [per day] and w_f [h] (default w); default: none and no restart.
    on_demand_failures_per_day, on_demand_lost_hours : float or array, optional
        Deprecated names of ``failures.failures_per_day`` and ``failures.failure_lost_hours``.

    Returns
    -------
    SpotResult
        net_savings [-] (negative: spot costs more), duration_stretch [-], and both costs
        as shares of the ideal on-demand cost [-].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026); Wald
       1944; Young 1974.
    """
    fl = _deprecated_failures(RunFailures() if failures is None else failures,
                              on_demand_failures_per_day, on_demand_lost_hours)
    d, r = market.discount, market.preemptions_per_day
    W, beta = market.capacity_wait_h, market.billed_share_during_wait
    w = v.nonnegative("lost_hours_per_preemption", lost_hours_per_preemption)
    R, rf = fl.restart_h, fl.failures_per_day
    wf = w if fl.failure_lost_hours is None else fl.failure_lost_hours
    fail = rf * (wf + R) / 24
    fo = 1 - fail
    fs = 1 - r * (w + R + W) / 24 - fail
    if np.any(fo <= 0):
        raise v.InputError("failures_per_day", "failures x hours lost per failure exceed a day: "
                                               "the run never finishes")
    if np.any(fs <= 0):
        raise v.InputError("preemptions_per_day", "preemptions x hours lost per preemption "
                                                  "(with failures) exceed a day: the spot run "
                                                  "never finishes")
    bs = 1 - r * W * (1 - beta) / 24
    spot = (1 - d) * bs / fs
    ond = 1 / fo
    return SpotResult(net_savings=v.result(1 - spot / ond), duration_stretch=v.result(fo / fs),
                      spot_cost_share=v.result(spot), on_demand_cost_share=v.result(ond))


def implied_lost_hours(market: SpotMarket, observed_net_savings: ArrayLike,
                       failures: RunFailures | None = None) -> float | np.ndarray:
    r"""Goal-seek: work lost per preemption that an observed net saving implies (exact inverse).

    Returns the w for which :func:`spot_net_savings` with the same arguments gives S. With
    c = (1 - d) b_s, k = 1 when failures lose w too (``failure_lost_hours`` None) else 0,
    and A, B the useful shares f_s, f_o at w = 0, both f_s and f_o are linear in w, so

    .. math:: w = \frac{24\,[(1 - S) A - c B]}{(1 - S)(r + k r_f) - c\, k r_f}

    With restart, wait and failures at zero: w = (24 / r)(1 - (1 - d)/(1 - S)); the cluster
    guide's 60% off, 2.4/day and 22% net imply 4.87 h, not the "1-2 h" it reports: capacity waits,
    restarts and idle nodes must account for the rest.

    Parameters
    ----------
    market : SpotMarket
        d [-], r [per day] (> 0 here), W [h] and beta [-].
    observed_net_savings : float or array
        S [-], < 1 and at most the saving with no work lost (d when R = W = r_f = 0).
    failures : RunFailures, optional
        R [h], r_f [per day], w_f [h]; as :func:`spot_net_savings`.

    Returns
    -------
    hours : float or array
        w, billed job-hours lost per preemption [h] (restart and wait not included).

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026).
    """
    fl = RunFailures() if failures is None else failures
    d, W, beta = market.discount, market.capacity_wait_h, market.billed_share_during_wait
    r = v.positive("preemptions_per_day", market.preemptions_per_day)
    s = v.in_range("observed_net_savings", observed_net_savings, None, 1, high_inclusive=False)
    R, rf, wf = fl.restart_h, fl.failures_per_day, fl.failure_lost_hours
    k = 1.0 if wf is None else 0.0
    fixed = 0.0 if wf is None else rf * wf / 24
    A = 1 - (r * (R + W) + rf * R) / 24 - fixed     # f_s at w = 0
    B = 1 - rf * R / 24 - fixed                     # f_o at w = 0
    if np.any(B <= 0):
        raise v.InputError("failures_per_day", "failures x hours lost per failure exceed a day: "
                                               "the run never finishes")
    if np.any(A <= 0):
        raise v.InputError("preemptions_per_day", "restart and capacity wait alone exceed a day: "
                                                  "the spot run never finishes")
    c = (1 - d) * (1 - r * W * (1 - beta) / 24)
    num = (1 - s) * A - c * B
    # S equal to the no-loss saving leaves rounding noise, not a missing solution
    tol = 1e-12 * ((1 - s) * A + c * B)
    if np.any(num < -tol):
        best = np.broadcast_to(1 - c * B / A, np.broadcast(num, s).shape)
        bad = np.broadcast_to(num < -tol, best.shape)
        sb = np.broadcast_to(s, best.shape)
        raise v.InputError("observed_net_savings", (
            f"observed_net_savings {float(sb[bad].flat[0]):.4g} is above what spot saves with "
            f"no work lost ({float(best[bad].flat[0]):.4g} with these restart, wait and "
            "failure terms): no lost hours give it"))
    den = (1 - s) * (r + k * rf) - c * k * rf
    return v.result(24 * np.maximum(num, 0.0) / den)


def breakeven_lost_hours(market: SpotMarket, failures: RunFailures | None = None) -> float | np.ndarray:
    r"""Work lost per preemption at which spot stops paying (net savings = 0).

    :func:`implied_lost_hours` at S = 0; with restart, wait and failures at zero

    .. math:: w_0 = \frac{24}{r}\, d

    Parameters
    ----------
    market : SpotMarket
        d [-], r [per day] (> 0), W [h] and beta [-].
    failures : RunFailures, optional
        R [h], r_f [per day], w_f [h]; as :func:`implied_lost_hours`.

    Returns
    -------
    hours : float or array
        [h].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): "not
       worth the engineering hassle".
    """
    return implied_lost_hours(market, 0.0, failures)


@dataclass(frozen=True)
class MonteCarlo:
    cost_share: np.ndarray      # per run: spot cost / ideal on-demand cost [-]
    duration_share: np.ndarray  # per run: spot wall time / ideal time [-]
    preemptions: np.ndarray     # per run [-]
    failures: np.ndarray | None = None  # per run [-]

    def percentiles(self, q: Sequence[float] = (10, 50, 90)) -> dict:
        return {"cost_share": np.percentile(self.cost_share, q),
                "duration_share": np.percentile(self.duration_share, q)}


def spot_monte_carlo(market: SpotMarket, run_hours: float, lost_hours_per_preemption: float | None = None,
                     checkpoint_interval_h: float | None = None, failures: RunFailures | None = None,
                     runs: int = 100_000, seed: int = 0) -> MonteCarlo:
    r"""Simulate many spot runs at once; the mean agrees with :func:`spot_net_savings`.

    Preemptions arrive at r/24 and failures at r_f/24 per wall hour, also during the time
    lost to earlier interruptions. The run needs T useful hours; its interruptions in T are
    Poisson(r T / 24) and Poisson(r_f T / 24), a preemption costing w + R + W of wall time and
    a failure w_f + R, during which more may arrive: generation by generation, Poisson of the
    rate times the time just lost, until none. Rework w is fixed, or uniform on
    [0, checkpoint interval] (mean: half, as Young assumed); a failure loses the same unless
    ``failure_lost_hours`` fixes it. All runs advance together (numpy); the only Python loop
    is over generations (a handful).

    .. math:: E[D] = \frac{T}{1 - [r (w + R + W) + r_f (w_f + R)] / 24}

    Parameters
    ----------
    market : SpotMarket
        d [-], r [per day], W [h] and beta [-], scalars; as :func:`spot_net_savings`.
    run_hours : float
        T, useful hours the run needs [h].
    lost_hours_per_preemption : float, optional
        Fixed w [h].
    checkpoint_interval_h : float, optional
        Random w ~ U(0, interval) [h]; give this or ``lost_hours_per_preemption``.
    failures : RunFailures, optional
        R [h], r_f [per day] and a fixed w_f [h] (default: as a preemption), scalars; as
        :func:`spot_net_savings`.
    runs : int
        Simulated runs [-], 1 to 10,000,000; with ``checkpoint_interval_h``, runs x the
        expected interruptions per run at most 5e7 (one random draw each).
    seed : int

    Returns
    -------
    MonteCarlo
        Per-run cost and duration as shares of the ideal on-demand run [-], and counts.

    References
    ----------
    .. [1] Wald 1944; Young 1974.
    """
    fl = RunFailures() if failures is None else failures
    d, r = market.discount, market.preemptions_per_day
    R, W, beta = fl.restart_h, market.capacity_wait_h, market.billed_share_during_wait
    rf_a, wf_a = fl.failures_per_day, fl.failure_lost_hours
    T = float(v.positive("run_hours", run_hours))
    n = int(v.integer("runs", runs, 1, MAX_MONTE_CARLO_RUNS))
    if (lost_hours_per_preemption is None) == (checkpoint_interval_h is None):
        raise v.InputError("lost_hours_per_preemption",
                           "give lost_hours_per_preemption or checkpoint_interval_h")
    rng = np.random.default_rng(seed)
    lam_p, lam_f = float(r) / 24.0, float(rf_a) / 24.0
    R, W, beta = float(R), float(W), float(beta)  # scalars from here on
    if lost_hours_per_preemption is not None:
        w = float(v.nonnegative("lost_hours_per_preemption", lost_hours_per_preemption))
        w_mean = w

        def rework(k: np.ndarray) -> np.ndarray:
            return k * w
    else:
        tau = float(v.positive("checkpoint_interval_h", checkpoint_interval_h))
        w_mean = tau / 2

        def rework(k: np.ndarray) -> np.ndarray:
            # sum of k uniforms on [0, tau], all runs at once
            draws = rng.uniform(0.0, tau, int(k.sum()))
            idx = np.repeat(np.arange(k.size), k)
            return np.bincount(idx, weights=draws, minlength=k.size)
    wf = None if wf_a is None else float(wf_a)
    wf_mean = w_mean if wf is None else wf
    if lam_f * (wf_mean + R) >= 1:
        raise v.InputError("failures_per_day", "the run never finishes")
    lost_share = lam_p * (w_mean + R + W) + lam_f * (wf_mean + R)
    if lost_share >= 1:
        raise v.InputError("preemptions_per_day", "the spot run never finishes")
    per_run = (lam_p + lam_f) * T / (1 - lost_share)   # expected interruptions (Wald)
    draws = per_run * (n if checkpoint_interval_h is not None else 1)
    if draws > MAX_MONTE_CARLO_DRAWS:
        what = (f"runs x expected interruptions per run ({n:,} x {per_run:.3g})"
                if checkpoint_interval_h is not None else
                f"expected interruptions per run ({per_run:.3g})")
        raise v.InputError("run_hours", f"{what} must be at most {MAX_MONTE_CARLO_DRAWS:.0e}, "
                                        f"got run_hours={T:g}: a shorter run or fewer runs")

    def overhead(kp: np.ndarray, kf: np.ndarray) -> np.ndarray:
        lost_f = rework(kf) if wf is None else kf * wf
        return rework(kp) + kp * (R + W) + lost_f + kf * R

    kp, kf = rng.poisson(lam_p * T, n), rng.poisson(lam_f * T, n)
    npre, nfail = kp.copy(), kf.copy()
    o = overhead(kp, kf)
    lost = o.copy()
    for _ in range(200):
        if not (kp.any() or kf.any()):
            break
        kp, kf = rng.poisson(lam_p * o), rng.poisson(lam_f * o)
        o = overhead(kp, kf)
        npre += kp
        nfail += kf
        lost += o
    wall = T + lost
    billed = wall - npre * W * (1 - beta)
    return MonteCarlo(cost_share=(1 - float(d)) * billed / T, duration_share=wall / T,
                      preemptions=npre, failures=nfail)
