"""Rent or buy: cloud pricing against on-premises capex and opex, breakeven and decision map.

Months are 730 hours (8,760 / 12). Cloud on-demand and spot bill the hours used; reserved
capacity bills every hour of its term; on-premises pays capital up front and operating cost
every month, power scaling with use.

References
----------
.. [1] Seed article 001: 8x H100 node $40-50/h in the cloud vs $250,000 per node on
   premises fully loaded; breakeven "around 7-8 months of 90% utilization"; "80%+ for 12+
   months: buy".
.. [2] Uptime Institute, Global Data Center Survey 2023: average PUE 1.58.
.. [3] U.S. EIA, Electric Power Monthly (2023): industrial electricity 8.06 cents/kWh.
.. [4] R. Brealey, S. Myers, F. Allen, Principles of Corporate Finance, ch. 2 (net present
   value: cash flow C_t discounted by (1 + r)^t).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import _validate as v

HOURS_PER_MONTH = 8760.0 / 12.0
OPTIONS = ("on_demand", "reserved_1y", "reserved_3y", "spot", "on_prem")


def cloud_cost_usd(months, usd_per_node_hour, utilization, nodes=1, billing="used"):
    r"""Cumulative cloud cost.

    .. math:: C = P\, n\, 730\, m \times \begin{cases} u & \text{billing "used"
              (on-demand, spot)} \\ 1 & \text{billing "committed" (reserved)} \end{cases}

    Parameters
    ----------
    months : float or array
        m [months].
    usd_per_node_hour : float or array
        P [USD per node-hour].
    utilization : float or array
        u, share of hours the nodes are needed [-], in (0, 1].
    nodes : float or array
        n [-].
    billing : {"used", "committed"}

    Returns
    -------
    cost_usd : float or array
        [USD].

    References
    ----------
    .. [1] Seed article 001 (cost of renting: price x hours used).
    """
    v.choice("billing", billing, ("used", "committed"))
    m = v.nonnegative("months", months)
    p = v.nonnegative("usd_per_node_hour", usd_per_node_hour)
    u = v.fraction("utilization", utilization)
    n = v.positive("nodes", nodes)
    share = u if billing == "used" else 1.0
    return v.result(p * n * HOURS_PER_MONTH * m * share)


@dataclass(frozen=True)
class OnPrem:
    """On-premises cost of one node (all USD). Defaults: an 8x H100 HGX node."""

    #: server price [USD per node] (8x H100 HGX: $250k-320k; Thinkmate quote $317k Aug 2024).
    server_usd: float = 250_000.0
    #: share of network per node [USD] (64-port 400G IB switch ~$36k; 1-3 tiers).
    network_usd: float = 0.0
    #: share of storage per node [USD].
    storage_usd: float = 0.0
    #: installation, cabling, burn-in [USD per node].
    installation_usd: float = 0.0
    #: node power at full load [W] (NVIDIA DGX H100 datasheet: 10.2 kW maximum).
    power_w: float = 10_200.0
    #: share of full power drawn when idle [-] (assumption, not measured).
    idle_power_share: float = 0.3
    #: power usage effectiveness [-] (Uptime 2023 average 1.58; hyperscale 1.1-1.2).
    pue: float = 1.58
    #: electricity [USD per kWh] (EIA 2023 US industrial 8.06 cents).
    usd_per_kwh: float = 0.0806
    #: space or colocation [USD per node-month].
    space_usd_per_month: float = 0.0
    #: operations staff [USD per node-month].
    staff_usd_per_month: float = 0.0
    #: maintenance and support [share of capex per year].
    maintenance_per_year: float = 0.0
    #: depreciation life [years].
    life_years: float = 4.0
    #: value left at the end of life [share of capex].
    residual_share: float = 0.1

    def __post_init__(self):
        for name in ("server_usd", "network_usd", "storage_usd", "installation_usd", "power_w",
                     "space_usd_per_month", "staff_usd_per_month", "maintenance_per_year"):
            v.nonnegative(name, getattr(self, name))
        v.fraction("idle_power_share", self.idle_power_share, allow_zero=True)
        v.in_range("pue", self.pue, 1.0, 5.0)
        v.nonnegative("usd_per_kwh", self.usd_per_kwh)
        v.positive("life_years", self.life_years)
        v.fraction("residual_share", self.residual_share, allow_zero=True, allow_one=False)

    @property
    def capex_usd(self) -> float:
        return self.server_usd + self.network_usd + self.storage_usd + self.installation_usd


def onprem_opex_usd_per_month(onprem: OnPrem, utilization):
    r"""Monthly operating cost of one node.

    .. math:: O(u) = 730\,\frac{W (s + (1-s) u)}{1000}\,\text{PUE}\; p_{kWh}
              + C_{space} + C_{staff} + \frac{k_{maint}}{12} C_{capex}

    Parameters
    ----------
    onprem : OnPrem
    utilization : float or array
        u [-], in (0, 1].

    Returns
    -------
    opex_usd : float or array
        [USD per node-month].

    References
    ----------
    .. [1] Uptime Institute 2023 (PUE); EIA 2023 (electricity price).
    """
    u = v.fraction("utilization", utilization)
    draw_kw = onprem.power_w / 1000 * (onprem.idle_power_share + (1 - onprem.idle_power_share) * u)
    power = draw_kw * onprem.pue * onprem.usd_per_kwh * HOURS_PER_MONTH
    return v.result(power + onprem.space_usd_per_month + onprem.staff_usd_per_month
                    + onprem.maintenance_per_year / 12 * onprem.capex_usd)


def onprem_cost_usd(months, onprem: OnPrem, utilization, nodes=1, discount_rate=0.0):
    r"""Cumulative on-premises cost: capex at month 0, opex each month, optionally discounted.

    .. math:: C(m) = n\left[K + \sum_{t=1}^{m} \frac{O(u)}{(1 + r)^{t/12}}\right]

    Parameters
    ----------
    months : float or array
        m [months] (fractional months accrue opex pro rata).
    onprem : OnPrem
    utilization : float or array
        u [-].
    nodes : float or array
        n [-].
    discount_rate : float
        r, yearly [-]; 0 for undiscounted cash.

    Returns
    -------
    cost_usd : float or array
        [USD].

    References
    ----------
    .. [1] Brealey, Myers, Allen, ch. 2 (net present value).
    """
    m = v.nonnegative("months", months)
    n = v.positive("nodes", nodes)
    r = v.in_range("discount_rate", discount_rate, 0, 1)
    opex = onprem_opex_usd_per_month(onprem, utilization)
    return v.result(n * (onprem.capex_usd + opex * _annuity_months(m, r)))


def _annuity_months(m, r):
    """Sum over months 1..m of (1+r)^(-t/12), continuous in m; = m when r = 0."""
    q = (1 + r) ** (-1 / 12)
    return np.where(r > 0, q * (1 - q**m) / np.where(r > 0, 1 - q, 1), m)


def residual_value_usd(months, onprem: OnPrem):
    r"""Book value left after m months of straight-line depreciation to the residual.

    .. math:: R(m) = K\left[1 - (1 - \rho)\min\left(1, \frac{m}{12 L}\right)\right]

    Parameters
    ----------
    months : float or array
        [months].
    onprem : OnPrem

    Returns
    -------
    value_usd : float or array
        [USD per node].

    References
    ----------
    .. [1] Brealey, Myers, Allen, ch. 6 (straight-line depreciation).
    """
    m = v.nonnegative("months", months)
    used = np.minimum(1.0, m / (12 * onprem.life_years))
    return v.result(onprem.capex_usd * (1 - (1 - onprem.residual_share) * used))


def breakeven_months(usd_per_node_hour, capex_usd_per_node, utilization,
                     opex_usd_per_node_month=0.0):
    r"""Months after which buying a node costs less than renting it on demand.

    .. math:: m^* = \frac{K}{730\, P\, u - O}

    (no breakeven when 730 P u <= O: returned as infinity; callers show "never").

    Parameters
    ----------
    usd_per_node_hour : float or array
        P [USD per node-hour].
    capex_usd_per_node : float or array
        K [USD].
    utilization : float or array
        u [-], in (0, 1].
    opex_usd_per_node_month : float or array
        O [USD per node-month].

    Returns
    -------
    months : float or array
        m* [months].

    References
    ----------
    .. [1] Seed article 001: "$250,000 per node fully loaded", $40-50/h, breakeven "around
       7-8 months of 90% utilization".
    """
    p = v.positive("usd_per_node_hour", usd_per_node_hour)
    k = v.positive("capex_usd_per_node", capex_usd_per_node)
    u = v.fraction("utilization", utilization)
    o = v.nonnegative("opex_usd_per_node_month", opex_usd_per_node_month)
    margin = HOURS_PER_MONTH * p * u - o
    with np.errstate(divide="ignore"):
        return v.result(np.where(margin > 0, k / np.where(margin > 0, margin, 1), np.inf))


@dataclass(frozen=True)
class CloudPrices:
    """Per node-hour prices [USD]; None where an option is not offered."""

    on_demand: float
    reserved_1y: float | None = None
    reserved_3y: float | None = None
    spot: float | None = None
    #: spot's extra cost factor from preemptions (1 / (1 - net loss)); 1 = none.
    spot_overhead: float = 1.0

    def __post_init__(self):
        v.positive("on_demand", self.on_demand)
        for name in ("reserved_1y", "reserved_3y", "spot"):
            x = getattr(self, name)
            if x is not None:
                v.positive(name, x)
        v.in_range("spot_overhead", self.spot_overhead, 1.0, None)


def option_costs_usd(months, utilization, prices: CloudPrices, onprem: OnPrem, nodes=1,
                     discount_rate=0.0, include_residual=True) -> dict:
    r"""Cumulative cost of each option over a horizon (broadcast over months, utilization).

    Reserved terms bill every hour (a 1-year term for a 5-month need still bills 5 months
    here: the horizon, pro rata); spot bills hours used times its preemption overhead;
    on-premises nets out the book value left at the horizon when ``include_residual``.

    Parameters
    ----------
    months, utilization : float or array
        Horizon [months], utilization u [-].
    prices : CloudPrices
    onprem : OnPrem
    nodes : float
    discount_rate : float
        Yearly [-], applied to on-premises opex.
    include_residual : bool

    Returns
    -------
    costs : dict of str -> float or array
        [USD] by option name (:data:`OPTIONS`); options not offered are absent.

    References
    ----------
    .. [1] Seed article 001 (the options compared in a review).
    """
    out = {"on_demand": cloud_cost_usd(months, prices.on_demand, utilization, nodes)}
    if prices.reserved_1y is not None:
        out["reserved_1y"] = cloud_cost_usd(months, prices.reserved_1y, utilization, nodes, "committed")
    if prices.reserved_3y is not None:
        out["reserved_3y"] = cloud_cost_usd(months, prices.reserved_3y, utilization, nodes, "committed")
    if prices.spot is not None:
        out["spot"] = cloud_cost_usd(months, prices.spot * prices.spot_overhead, utilization, nodes)
    prem = onprem_cost_usd(months, onprem, utilization, nodes, discount_rate)
    if include_residual:
        prem = prem - nodes * residual_value_usd(months, onprem)
    out["on_prem"] = v.result(prem)
    return out


def cost_per_useful_gpu_hour(months, utilization, prices: CloudPrices, onprem: OnPrem,
                             gpus_per_node=8, **kw) -> dict:
    r"""Each option's cost per GPU-hour actually used over the horizon.

    .. math:: c = \frac{C(m, u)}{730\, m\, u\, g}

    Parameters
    ----------
    months, utilization : float or array
        [months], [-].
    prices : CloudPrices
    onprem : OnPrem
    gpus_per_node : int
    **kw
        Passed to :func:`option_costs_usd`.

    Returns
    -------
    usd_per_gpu_hour : dict of str -> float or array
        [USD per used GPU-hour].

    References
    ----------
    .. [1] Seed article 001 ("utilization isn't just runtime").
    """
    m = v.positive("months", months)
    u = v.fraction("utilization", utilization)
    g = v.positive("gpus_per_node", gpus_per_node)
    costs = option_costs_usd(m, u, prices, onprem, **kw)
    used = HOURS_PER_MONTH * m * u * g
    return {k: v.result(c / used) for k, c in costs.items()}


def decision_map(utilization, months, prices: CloudPrices, onprem: OnPrem, **kw):
    r"""Cheapest option over a grid of utilization x horizon.

    Parameters
    ----------
    utilization : array
        [-], one axis.
    months : array
        [months], the other axis.
    prices, onprem, **kw
        As :func:`option_costs_usd`.

    Returns
    -------
    names : tuple of str
        Options compared, in index order.
    best : int array, shape (len(utilization), len(months))
        Index into ``names`` of the cheapest option.
    costs : float array, shape (len(names), len(utilization), len(months))
        [USD].

    References
    ----------
    .. [1] Seed article 001: "80%+ for 12+ months: buy".
    """
    u = np.asarray(utilization, dtype=float)[:, None]
    m = np.asarray(months, dtype=float)[None, :]
    costs = option_costs_usd(m, u, prices, onprem, **kw)
    names = tuple(costs)
    stack = np.stack([np.broadcast_to(costs[k], np.broadcast(u, m).shape) for k in names])
    return names, np.argmin(stack, axis=0), stack
