"""Spot vs on-demand: net savings after preemptions, closed form and Monte Carlo.

Preemptions arrive as a Poisson process at r per day of wall time. Each one costs wall time:
the work since the last checkpoint (rework), the restart, and a wait for capacity. During
rework and restart every node is billed; during the capacity wait only a share beta (the
surviving nodes that stay allocated). On-demand runs fail too (hardware), costing rework and
restart: the comparison counts both the same way.

References
----------
.. [1] Seed article 001: AWS P5 spot, "60% cost savings", 2.4 preemptions per day, 1-2 h of
   work lost each, "net savings: 22%".
.. [2] A. Wald, "On cumulative sums of random variables", Ann. Math. Stat. 15(3), 1944
   (E[sum] = E[count] E[term]; gives the expected stretched duration).
.. [3] J. Young, "A first order approximation to the optimum checkpoint interval", CACM
   17(9), 1974 (work lost per failure: half a checkpoint interval on average).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as v


def _common(discount, preemptions_per_day, lost_hours, restart_h, capacity_wait_h,
            billed_share_during_wait):
    d = v.in_range("discount", discount, 0, 1, high_inclusive=False)
    r = v.nonnegative("preemptions_per_day", preemptions_per_day)
    w = v.nonnegative("lost_hours_per_preemption", lost_hours)
    R = v.nonnegative("restart_h", restart_h)
    W = v.nonnegative("capacity_wait_h", capacity_wait_h)
    beta = v.fraction("billed_share_during_wait", billed_share_during_wait, allow_zero=True)
    return d, r, w, R, W, beta


def useful_share(events_per_day, hours_per_event):
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
    on_demand_cost_share: np.ndarray


def spot_net_savings(discount, preemptions_per_day, lost_hours_per_preemption, restart_h=0.0,
                     capacity_wait_h=0.0, billed_share_during_wait=1.0,
                     on_demand_failures_per_day=0.0, on_demand_lost_hours=None) -> SpotResult:
    r"""Net savings of spot over on-demand after preemptions (closed form).

    .. math::
        f_s &= 1 - \frac{r (w + R + W)}{24},\quad
        b_s = 1 - \frac{r W (1 - \beta)}{24},\quad
        f_o = 1 - \frac{r_o (w_o + R)}{24} \\
        S &= 1 - \frac{(1 - d)\, b_s / f_s}{1 / f_o}

    With restart, wait and on-demand failures at zero: S = 1 - (1 - d)/(1 - r w / 24);
    the seed's 60% off, 2.4/day, 1.5 h gives 52.9%, not its 22%.

    Parameters
    ----------
    discount : float or array
        d, spot's price cut [-], in [0, 1).
    preemptions_per_day : float or array
        r [per day of wall time].
    lost_hours_per_preemption : float or array
        w, billed job-hours lost per preemption (rework; half the checkpoint interval on
        average) [h].
    restart_h, capacity_wait_h : float or array
        R, W [h].
    billed_share_during_wait : float or array
        beta [-]: 1 if the surviving nodes stay billed while waiting, 0 if all are released.
    on_demand_failures_per_day : float or array
        r_o [per day], hardware failures of the on-demand run.
    on_demand_lost_hours : float or array, optional
        w_o [h]; default w.

    Returns
    -------
    SpotResult
        net_savings [-] (negative: spot costs more), duration_stretch [-], and both costs
        as shares of the ideal on-demand cost [-].

    References
    ----------
    .. [1] Seed article 001; Wald 1944; Young 1974.
    """
    d, r, w, R, W, beta = _common(discount, preemptions_per_day, lost_hours_per_preemption,
                                  restart_h, capacity_wait_h, billed_share_during_wait)
    ro = v.nonnegative("on_demand_failures_per_day", on_demand_failures_per_day)
    wo = w if on_demand_lost_hours is None else v.nonnegative("on_demand_lost_hours", on_demand_lost_hours)
    fs = 1 - r * (w + R + W) / 24
    fo = 1 - ro * (wo + R) / 24
    if np.any(fs <= 0):
        raise v.InputError("preemptions_per_day", "preemptions x hours lost per preemption "
                                                  "exceed a day: the spot run never finishes")
    if np.any(fo <= 0):
        raise v.InputError("on_demand_failures_per_day", "failures x hours lost exceed a day: "
                                                         "the on-demand run never finishes")
    bs = 1 - r * W * (1 - beta) / 24
    spot = (1 - d) * bs / fs
    ond = 1 / fo
    return SpotResult(v.result(1 - spot / ond), v.result(fo / fs), v.result(spot), v.result(ond))


def implied_lost_hours(discount, preemptions_per_day, observed_net_savings,
                       on_demand_failures_per_day=0.0, on_demand_lost_hours=0.0):
    r"""Goal-seek: billed job-hours lost per preemption that an observed net saving implies.

    Inverts :func:`spot_net_savings` with restart and wait folded into the lost hours:

    .. math:: L = \frac{24}{r}\left(1 - \frac{(1 - d) f_o}{1 - S}\right)

    The seed's 60% off, 2.4/day and 22% net imply L = 4.87 h, not the "1-2 h" it reports:
    capacity waits, restarts and idle nodes must account for the rest.

    Parameters
    ----------
    discount : float or array
        d [-], in [0, 1).
    preemptions_per_day : float or array
        r [per day], > 0.
    observed_net_savings : float or array
        S [-], below d.
    on_demand_failures_per_day, on_demand_lost_hours : float or array
        r_o [per day], w_o [h].

    Returns
    -------
    hours : float or array
        L [h].

    References
    ----------
    .. [1] Seed article 001.
    """
    d = v.in_range("discount", discount, 0, 1, high_inclusive=False)
    r = v.positive("preemptions_per_day", preemptions_per_day)
    s = v.in_range("observed_net_savings", observed_net_savings, None, 1, high_inclusive=False)
    if np.any(s > d):
        raise v.InputError("observed_net_savings", "observed_net_savings cannot exceed the "
                                                   "discount: preemptions only add cost")
    fo = 1 - v.nonnegative("on_demand_failures_per_day", on_demand_failures_per_day) * \
        v.nonnegative("on_demand_lost_hours", on_demand_lost_hours) / 24
    return v.result(24 / r * (1 - (1 - d) * fo / (1 - s)))


def breakeven_lost_hours(discount, preemptions_per_day, **kw):
    r"""Hours lost per preemption at which spot stops paying (net savings = 0).

    .. math:: L_0 = \frac{24}{r}\left(1 - (1 - d) f_o\right)

    Parameters
    ----------
    discount, preemptions_per_day
        As :func:`implied_lost_hours`.
    **kw
        On-demand failure terms of :func:`implied_lost_hours`.

    Returns
    -------
    hours : float or array
        [h].

    References
    ----------
    .. [1] Seed article 001 ("not worth the engineering hassle").
    """
    return implied_lost_hours(discount, preemptions_per_day, 0.0, **kw)


@dataclass(frozen=True)
class MonteCarlo:
    cost_share: np.ndarray      # per run: spot cost / ideal on-demand cost [-]
    duration_share: np.ndarray  # per run: spot wall time / ideal time [-]
    preemptions: np.ndarray     # per run [-]

    def percentiles(self, q=(10, 50, 90)) -> dict:
        return {"cost_share": np.percentile(self.cost_share, q),
                "duration_share": np.percentile(self.duration_share, q)}


def spot_monte_carlo(discount, preemptions_per_day, run_hours, lost_hours_per_preemption=None,
                     checkpoint_interval_h=None, restart_h=0.0, capacity_wait_h=0.0,
                     billed_share_during_wait=1.0, runs=100_000, seed=0) -> MonteCarlo:
    r"""Simulate many spot runs at once; the mean agrees with :func:`spot_net_savings`.

    Preemptions arrive at r/24 per wall hour, also during the time lost to earlier ones.
    The run needs T useful hours; its preemptions in T are Poisson(r T / 24), each costing
    o = w + R + W of wall time, during which more may arrive: generation by generation,
    Poisson(r O_g / 24) more, until none. Rework w is fixed, or uniform on
    [0, checkpoint interval] (mean: half, as Young assumed). All runs advance together
    (numpy); the only Python loop is over generations (a handful).

    Parameters
    ----------
    discount, preemptions_per_day, restart_h, capacity_wait_h, billed_share_during_wait
        As :func:`spot_net_savings`.
    run_hours : float
        T, useful hours the run needs [h].
    lost_hours_per_preemption : float, optional
        Fixed w [h].
    checkpoint_interval_h : float, optional
        Random w ~ U(0, interval) [h]; give this or ``lost_hours_per_preemption``.
    runs : int
        Simulated runs [-].
    seed : int

    Returns
    -------
    MonteCarlo
        Per-run cost and duration as shares of the ideal on-demand run [-].

    References
    ----------
    .. [1] Wald 1944; Young 1974.
    """
    d, r, _, R, W, beta = _common(discount, preemptions_per_day, 0.0, restart_h,
                                  capacity_wait_h, billed_share_during_wait)
    T = float(v.positive("run_hours", run_hours))
    n = int(v.integer("runs", runs))
    if (lost_hours_per_preemption is None) == (checkpoint_interval_h is None):
        raise v.InputError("lost_hours_per_preemption",
                           "give lost_hours_per_preemption or checkpoint_interval_h")
    rng = np.random.default_rng(seed)
    lam = float(r) / 24.0
    if lost_hours_per_preemption is not None:
        w = float(v.nonnegative("lost_hours_per_preemption", lost_hours_per_preemption))
        o_mean = w + float(R) + float(W)
        if lam * o_mean >= 1:
            raise v.InputError("preemptions_per_day", "the spot run never finishes")

        def overhead(k):
            return k * (w + float(R) + float(W))
    else:
        tau = float(v.positive("checkpoint_interval_h", checkpoint_interval_h))
        if lam * (tau / 2 + float(R) + float(W)) >= 1:
            raise v.InputError("preemptions_per_day", "the spot run never finishes")

        def overhead(k):
            # sum of k uniforms on [0, tau], all runs at once
            total = int(k.sum())
            draws = rng.uniform(0.0, tau, total)
            idx = np.repeat(np.arange(k.size), k)
            return np.bincount(idx, weights=draws, minlength=k.size) + k * (float(R) + float(W))

    k = rng.poisson(lam * T, n)
    count = k.copy()
    o = overhead(k)
    lost = o.copy()
    for _ in range(200):
        if not k.any():
            break
        k = rng.poisson(lam * o)
        o = overhead(k)
        count += k
        lost += o
    wall = T + lost
    billed = wall - count * float(W) * (1 - float(beta))
    return MonteCarlo(cost_share=(1 - float(d)) * billed / T, duration_share=wall / T,
                      preemptions=count)
