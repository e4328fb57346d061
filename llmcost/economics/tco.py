"""Rent or buy, per GPU: cloud bills against on-premises capex and opex, breakeven, decision map.

Units: prices per **GPU-hour**, capex and opex per **GPU** (a system's price or power divided
by the GPUs in it). Months are 730 hours (8,760 / 12).

One convention everywhere (cash view):

- on-demand and spot bill the hours used (spot: times its preemption overhead);
- a reservation bills every hour of every term it forces: ``ceil(need / term)`` whole terms;
- on-premises pays capex at month 0 and opex every month (power scales with use); hardware is
  resold only when the caller asks (``resale="market"``: book value less a market haircut);
- discounting (a yearly rate r, applied monthly with q = (1 + r)^(-1/12)) applies to every
  cash flow or, at r = 0, to none: month-t bills are weighted q^t, capex (month 0) is not,
  resale (end of the horizon) is weighted q^m.

The curves (:func:`option_costs_usd`), the per-used-hour figures
(:func:`cost_per_useful_gpu_hour`), the decision map and :func:`breakeven_months` all use it,
so the breakeven month is exactly where the on-prem and on-demand curves cross.

References
----------
1. N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): 8x H100 node
   $40-50/h in the cloud vs $250,000 per node on premises; breakeven "around 7-8 months of 90%
   utilization"; "80%+ for 12+ months: buy".
2. Uptime Institute, Global Data Center Survey 2023: average PUE 1.58.
3. U.S. EIA, Electric Power Monthly (2023): industrial electricity 8.06 cents/kWh.
4. R. Brealey, S. Myers, F. Allen, Principles of Corporate Finance, ch. 2 (net present
   value: cash flow C_t discounted by (1 + r)^t) and ch. 6 (straight-line depreciation).
5. "H100 Freakonomics: the economical tiers of H100's" (tech-talk-cto substack, Aug 2024)
   and its spreadsheet: $310k per 8x H100 node incl. InfiniBand cards, 64-port 400G switch
   $36k (FS.com), 48 switches and $2,621,440 of connectors and cables for 1,024 H100 (two
   switch tiers), facility and operations $50k per node over its life; all-in $47k-52k per
   H100.
6. NVIDIA DGX H100 datasheet: 10.2 kW maximum system power, 8 GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v

if TYPE_CHECKING:
    from ..training.hardware import GPUSpec

HOURS_PER_MONTH = 8760.0 / 12.0
HOURS_PER_YEAR = 8760.0
OPTIONS = ("on_demand", "reserved_1y", "reserved_3y", "spot", "on_prem")
RESALE = ("none", "market")

# --- Defaults for one GPU of an 8x H100 SXM cluster, derived from the sources above -------
GPUS_PER_H100_NODE = 8
#: server [USD per node]: the cluster guide's $250k [1], the low end of CloudZero's $250k-320k
#: for an 8x H100 HGX server (Thinkmate quoted $317k, Aug 2024 [5]). The guide calls $250k
#: "fully loaded"; since a server alone is quoted at $250k-320k we count it as the server only.
H100_SERVER_USD_PER_NODE = 250_000.0
#: 64-port 400G InfiniBand switch [USD] (FS.com, via [5]).
IB_SWITCH_USD, IB_SWITCH_PORTS = 36_000.0, 64
#: switch ports per GPU in a two-tier non-blocking fat tree (one 400G port per GPU): a leaf
#: port down to the GPU, a leaf port up, a spine port down = 3. [5] counts 48 switches x 64
#: ports = 3,072 ports for 1,024 GPUs, the same 3. (Three tiers, > 2,048 nodes: 5.)
SWITCH_PORTS_PER_GPU_TWO_TIER = 3
#: connectors and cables [USD per GPU]: [5], $2,621,440 / 1,024 GPUs = $2,560 (two tiers).
IB_CABLES_USD_PER_GPU = 2_621_440 / 1_024
#: facility and operations over the node's life [USD per node] [5]; [5] gives one figure and
#: does not split it into space, staff and upkeep.
FACILITY_OPS_USD_PER_NODE_LIFE = 50_000.0
#: life over which [5]'s facility figure is spread [years]: the depreciation life used here
#: (assumption: [5] does not state its life).
DEFAULT_LIFE_YEARS = 4.0


@dataclass(frozen=True)
class OnPrem:
    """On-premises cost of one GPU (its share of server, network, storage, power, facility).

    Defaults: one GPU of an 8x H100 SXM cluster with a two-tier InfiniBand fabric. Capex
    per GPU: server $250,000 / 8 = $31,250; network 3 switch ports x $36,000 / 64 + $2,560
    of cables = $1,687.50 + $2,560 = $4,247.50; storage $1,000 (assumption); installation
    not sourced (0). All-in $36,497.50 per GPU plus facility and operations $6,250 per GPU
    over life ($50k / 8): $42,747.50, below [5]'s $47k-52k because [5] prices the server at
    $310k. ``capex_usd_per_gpu=None`` (a GPU without a cited price) means buying is not an
    option: it is left out of every comparison.
    """

    #: server share [USD per GPU]: $250,000 / 8 GPUs (the cluster guide [1]; CloudZero $250k-320k).
    capex_usd_per_gpu: float | None = H100_SERVER_USD_PER_NODE / GPUS_PER_H100_NODE
    #: network share [USD per GPU]: two-tier fat tree, 3 x $36k / 64 + $2,560 cables [5].
    network_usd_per_gpu: float = (SWITCH_PORTS_PER_GPU_TWO_TIER * IB_SWITCH_USD / IB_SWITCH_PORTS
                                  + IB_CABLES_USD_PER_GPU)
    #: shared storage [USD per GPU]. Assumption, no cited price (economics/storage.py sizes it): the hot
    #: tier (DGX H100: 8 x 3.84 TB NVMe) is in the server price; this adds a shared warm tier
    #: at about 3% of the server share.
    storage_usd_per_gpu: float = 1_000.0
    #: installation, cabling labour, burn-in [USD per GPU]: no cited figure, left at 0.
    installation_usd_per_gpu: float = 0.0
    #: system power at full load per GPU [W]: DGX H100 10.2 kW / 8 = 1,275 W [6].
    power_w_per_gpu: float = 10_200.0 / GPUS_PER_H100_NODE
    #: share of full power drawn when idle [-] (assumption, not measured).
    idle_power_share: float = 0.3
    #: power usage effectiveness [-] (Uptime 2023 average 1.58 [2]; hyperscale 1.1-1.2).
    pue: float = 1.58
    #: electricity [USD per kWh] (EIA 2023 US industrial 8.06 cents [3]).
    usd_per_kwh: float = 0.0806
    #: facility and operations [USD per GPU-month]: [5]'s $50,000 per node over life / 8 GPUs
    #: / 48 months = $130.21. It holds space, staff and upkeep together because [5] does not
    #: split them; set staff or maintenance only when splitting this figure.
    space_usd_per_gpu_month: float = (FACILITY_OPS_USD_PER_NODE_LIFE / GPUS_PER_H100_NODE
                                      / (12 * DEFAULT_LIFE_YEARS))
    #: operations staff [USD per GPU-month]: in ``space_usd_per_gpu_month`` by default.
    staff_usd_per_gpu_month: float = 0.0
    #: maintenance and support [share of capex per year]: in ``space_usd_per_gpu_month``.
    maintenance_per_year: float = 0.0
    #: depreciation life [years].
    life_years: float = DEFAULT_LIFE_YEARS
    #: book value left at the end of life [share of capex] (assumption).
    residual_share: float = 0.1
    #: share of book value lost when sold on the market (dealer margin, refurbishment,
    #: disposition) [-]. Assumption: no cited figure found; used only with resale="market".
    resale_haircut: float = 0.3

    def __post_init__(self) -> None:
        if self.capex_usd_per_gpu is not None:
            v.nonnegative("capex_usd_per_gpu", self.capex_usd_per_gpu)
        for name in ("network_usd_per_gpu", "storage_usd_per_gpu", "installation_usd_per_gpu",
                     "power_w_per_gpu", "space_usd_per_gpu_month", "staff_usd_per_gpu_month",
                     "maintenance_per_year"):
            v.nonnegative(name, getattr(self, name))
        v.fraction("idle_power_share", self.idle_power_share, allow_zero=True)
        v.in_range("pue", self.pue, 1.0, 5.0)
        v.nonnegative("usd_per_kwh", self.usd_per_kwh)
        v.positive("life_years", self.life_years)
        v.fraction("residual_share", self.residual_share, allow_zero=True, allow_one=False)
        v.fraction("resale_haircut", self.resale_haircut, allow_zero=True)

    @property
    def offered(self) -> bool:
        """Buying is an option: the GPU has a (non-zero) price."""
        return self.capex_usd_per_gpu is not None and self.capex_usd_per_gpu > 0

    @property
    def capex_usd(self) -> float | None:
        """Capex per GPU [USD]: server + network + storage + installation (None: no price)."""
        if self.capex_usd_per_gpu is None:
            return None
        return (self.capex_usd_per_gpu + self.network_usd_per_gpu + self.storage_usd_per_gpu
                + self.installation_usd_per_gpu)

    @classmethod
    def for_gpu(cls, gpu: GPUSpec, **overrides: Any) -> "OnPrem":
        """Defaults with the GPU's catalog capex and system power per GPU.

        ``gpu`` is a :class:`llmcost.training.hardware.GPUSpec`; a GPU with no cited price
        gets ``capex_usd_per_gpu=None`` (buying not offered), one with no power keeps the
        H100 default. ``overrides`` win over both.
        """
        kw: dict[str, Any] = {"capex_usd_per_gpu": gpu.capex_usd_per_gpu}
        if gpu.power_w_per_gpu is not None:
            kw["power_w_per_gpu"] = gpu.power_w_per_gpu
        kw.update(overrides)
        return cls(**kw)


@dataclass(frozen=True)
class CloudPrices:
    """Cloud prices [USD per GPU-hour]; None where an option is not offered (or not cited)."""

    on_demand: float | None = None
    reserved_1y: float | None = None
    reserved_3y: float | None = None
    spot: float | None = None
    #: billed spot hours per useful hour (preemptions: rework, restart, billed waits) [-],
    #: >= 1; e.g. spot.spot_net_savings' spot_cost_share / (1 - discount).
    spot_overhead: float = 1.0

    def __post_init__(self) -> None:
        for name in ("on_demand", "reserved_1y", "reserved_3y", "spot"):
            x = getattr(self, name)
            if x is not None:
                v.positive(name, x)
        v.in_range("spot_overhead", self.spot_overhead, 1.0, None)

    def reserved(self, term_years: int) -> float | None:
        return {1: self.reserved_1y, 3: self.reserved_3y}[term_years]


_TERMS = (("reserved_1y", 1), ("reserved_3y", 3))


def _annuity_months(m: ArrayLike, r: float) -> float | np.ndarray:
    """A(m) = sum over months 1..m of q^t, q = (1+r)^(-1/12); continuous in m; = m at r = 0."""
    m = np.asarray(m, dtype=float)
    q = (1 + r) ** (-1 / 12)
    if r <= 0 or q == 1:        # a rate too small to move q off 1 in float: undiscounted
        return m
    return q * (1 - q**m) / (1 - q)


def _discount_factor(m: ArrayLike, r: float) -> float | np.ndarray:
    """q^m: weight of a cash flow at month m."""
    return np.ones_like(np.asarray(m, dtype=float)) if r <= 0 else (1 + r) ** (-np.asarray(m) / 12)


def _rate(discount_rate: float) -> float:
    return float(v.in_range("discount_rate", discount_rate, 0, 1))


def onprem_opex_usd_per_gpu_month(onprem: OnPrem, utilization: ArrayLike) -> float | np.ndarray:
    r"""Monthly operating cost of one GPU on premises.

    .. math:: O(u) = 730\,\frac{W (s + (1-s) u)}{1000}\,\text{PUE}\; p_{kWh}
              + C_{space} + C_{staff} + \frac{k_{maint}}{12} K

    Parameters
    ----------
    onprem : OnPrem
        W = ``power_w_per_gpu`` [W], s = ``idle_power_share`` [-], K = ``capex_usd`` [USD].
    utilization : float or array
        u, share of hours the GPU works [-], in [0, 1].

    Returns
    -------
    opex_usd : float or array
        O [USD per GPU-month].

    References
    ----------
    .. [1] Uptime Institute 2023 (PUE 1.58); EIA 2023 (8.06 cents/kWh); "H100 Freakonomics"
       (facility and operations $50k per node over life).
    """
    u = v.fraction("utilization", utilization, allow_zero=True)
    draw_kw = onprem.power_w_per_gpu / 1000 * (onprem.idle_power_share
                                               + (1 - onprem.idle_power_share) * u)
    power = draw_kw * onprem.pue * onprem.usd_per_kwh * HOURS_PER_MONTH
    capex = onprem.capex_usd or 0.0
    return v.result(power + onprem.space_usd_per_gpu_month + onprem.staff_usd_per_gpu_month
                    + onprem.maintenance_per_year / 12 * capex)


def book_value_usd(months: ArrayLike, onprem: OnPrem) -> float | np.ndarray:
    r"""Book value of one GPU's capex after m months of straight-line depreciation.

    .. math:: B(m) = K\left[1 - (1 - \rho)\min\left(1, \frac{m}{12 L}\right)\right]

    Parameters
    ----------
    months : float or array
        m [months].
    onprem : OnPrem
        K = ``capex_usd``, rho = ``residual_share``, L = ``life_years``.

    Returns
    -------
    value_usd : float or array
        B [USD per GPU] (0 when buying is not offered).

    References
    ----------
    .. [1] Brealey, Myers, Allen, ch. 6 (straight-line depreciation).
    """
    m = v.nonnegative("months", months)
    used = np.minimum(1.0, m / (12 * onprem.life_years))
    return v.result((onprem.capex_usd or 0.0) * (1 - (1 - onprem.residual_share) * used))


def market_value_usd(months: ArrayLike, onprem: OnPrem) -> float | np.ndarray:
    r"""What one GPU's hardware fetches when sold after m months: book value less a haircut.

    .. math:: V(m) = B(m)\,(1 - h)

    Parameters
    ----------
    months : float or array
        m [months].
    onprem : OnPrem
        h = ``resale_haircut`` [-].

    Returns
    -------
    value_usd : float or array
        V [USD per GPU].

    References
    ----------
    .. [1] Brealey, Myers, Allen, ch. 6 (book value); the haircut is an assumption (see
       :class:`OnPrem`).
    """
    return v.result(book_value_usd(months, onprem) * (1 - onprem.resale_haircut))


def onprem_cost_usd(months: ArrayLike, onprem: OnPrem, utilization: ArrayLike, gpus: ArrayLike = 1,
                    discount_rate: float = 0.0, resale: str = "none") -> float | np.ndarray:
    r"""Cumulative on-premises cash cost: capex at month 0, opex monthly, resale if asked.

    .. math:: C(m) = g\left[K + O(u)\,A(m) - \mathbb{1}_{market}\, V(m)\, q^m\right],\quad
              A(m) = \sum_{t=1}^{m} q^t,\quad q = (1 + r)^{-1/12}

    (A is continued to fractional m by its closed form q (1 - q^m) / (1 - q); A = m at r = 0.)

    Parameters
    ----------
    months : float or array
        m [months].
    onprem : OnPrem
    utilization : float or array
        u [-], in [0, 1].
    gpus : float or array
        g [-].
    discount_rate : float
        r, yearly [-]; 0 for undiscounted cash.
    resale : {"none", "market"}
        Net out the market value of the hardware at m.

    Returns
    -------
    cost_usd : float or array
        [USD] (NaN when buying is not offered).

    References
    ----------
    .. [1] Brealey, Myers, Allen, ch. 2 (net present value).
    """
    m = v.nonnegative("months", months)
    g = v.positive("gpus", gpus)
    r = _rate(discount_rate)
    v.choice("resale", resale, RESALE)
    if not onprem.offered:
        return v.result(np.full(np.broadcast(m, g, np.asarray(utilization)).shape, np.nan))
    opex = onprem_opex_usd_per_gpu_month(onprem, utilization)
    assert onprem.capex_usd is not None     # offered: it has a price
    cost = onprem.capex_usd + opex * _annuity_months(m, r)
    if resale == "market":
        cost = cost - market_value_usd(m, onprem) * _discount_factor(m, r)
    return v.result(g * cost)


def reservation_commitment_usd(run_hours: ArrayLike, usd_per_gpu_hour: ArrayLike, gpus: ArrayLike,
                               term_years: ArrayLike, discount_rate: float = 0.0) -> float | np.ndarray:
    r"""Cash committed by reserving GPUs for a need of H hours: every hour of whole terms.

    .. math:: C = P\, g\, 730\, A(12\,T\,n),\quad n = \left\lceil \frac{H}{8760\,T} \right\rceil

    (paid monthly over the n terms; at r = 0, C = n x 8760 T x P g). A 24-day run on a 3-year
    reservation commits 3 years.

    Parameters
    ----------
    run_hours : float or array
        H, hours the GPUs are needed [h].
    usd_per_gpu_hour : float or array
        P, reserved price [USD per GPU-hour].
    gpus : float or array
        g, GPUs reserved [-].
    term_years : float or array
        T, reservation term [years] (1 or 3 for the catalog's prices).
    discount_rate : float
        r, yearly [-].

    Returns
    -------
    cost_usd : float or array
        [USD].

    References
    ----------
    .. [1] AWS EC2 Reserved Instances / Savings Plans: a 1- or 3-year commitment billed for
       every hour of the term whether used or not.
    """
    h = v.nonnegative("run_hours", run_hours)
    p = v.positive("usd_per_gpu_hour", usd_per_gpu_hour)
    g = v.positive("gpus", gpus)
    t = v.positive("term_years", term_years)
    r = _rate(discount_rate)
    terms = np.ceil(h / (HOURS_PER_YEAR * t))
    return v.result(p * g * HOURS_PER_MONTH * _annuity_months(terms * 12 * t, r))


def run_costs_usd(run_hours: ArrayLike, gpus_billed: ArrayLike, prices: CloudPrices, onprem: OnPrem,
                  discount_rate: float = 0.0, resale: str = "none",
                  spot_run_hours: ArrayLike | None = None) -> dict:
    r"""Cash cost of one run under each option, including the commitment it forces.

    .. math::
        C_{od} &= P_{od}\, g\, 730\, A(H/730) \\
        C_{spot} &= P_{s}\, g\, 730\, A(H_s/730),\quad H_s = H \cdot k_s \text{ (or given)} \\
        C_{res,T} &= \text{reservation\_commitment\_usd}(H, P_T, g, T) \\
        C_{prem} &= g\left[K + O(1)\,A(H/730) - \mathbb{1}_{market} V(H/730)\, q^{H/730}\right]

    The cluster is bought for this run and works full time during it (power at u = 1); at
    r = 0, A(m) = m and C_od = P g H.

    Parameters
    ----------
    run_hours : float or array
        H, wall-clock hours of the run on reliable capacity [h].
    gpus_billed : float or array
        g, GPUs billed or bought (whole instances or systems) [-].
    prices : CloudPrices
        [USD per GPU-hour]; k_s = ``spot_overhead``.
    onprem : OnPrem
    discount_rate : float
        r, yearly [-]; bills spread monthly over the run (reservations over their terms).
    resale : {"none", "market"}
        Net out the hardware's market value at the end of the run (cash view: "none").
    spot_run_hours : float or array, optional
        H_s, billed hours per GPU of the spot run, already stretched by preemptions [h].
        When given, ``prices.spot_overhead`` is **not** applied (it would count the
        preemptions twice); when omitted, H_s = H x spot_overhead.

    Returns
    -------
    costs_usd : dict of str -> float or array
        [USD] by option (:data:`OPTIONS`); options not offered are absent.

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): the
       options compared; Brealey, Myers, Allen, ch. 2 (NPV).
    """
    h = v.nonnegative("run_hours", run_hours)
    g = v.positive("gpus_billed", gpus_billed)
    r = _rate(discount_rate)
    v.choice("resale", resale, RESALE)
    m = h / HOURS_PER_MONTH
    out = {}
    if prices.on_demand is not None:
        out["on_demand"] = v.result(prices.on_demand * g * HOURS_PER_MONTH * _annuity_months(m, r))
    for name, term in _TERMS:
        p = prices.reserved(term)
        if p is not None:
            out[name] = reservation_commitment_usd(h, p, g, term, r)
    if prices.spot is not None:
        hs = h * prices.spot_overhead if spot_run_hours is None else v.nonnegative(
            "spot_run_hours", spot_run_hours)
        out["spot"] = v.result(prices.spot * g * HOURS_PER_MONTH
                               * _annuity_months(hs / HOURS_PER_MONTH, r))
    if onprem.offered:
        out["on_prem"] = onprem_cost_usd(m, onprem, 1.0, g, r, resale)
    return out


def run_costs_amortized_usd(run_hours: ArrayLike, gpus_billed: ArrayLike, prices: CloudPrices, onprem: OnPrem,
                            utilization: ArrayLike, discount_rate: float = 0.0, resale: str = "none") -> dict:
    r"""The run's share of owned or reserved capacity kept busy at utilization u.

    .. math::
        C_{res,T} &= H g \cdot \frac{P_T\, 730\, A(12T)}{8760\, T\, u} \\
        C_{prem} &= H g \cdot \frac{K + O(u)\, A(12L) - \mathbb{1}_{market} V(12L)\, q^{12L}}
                   {8760\, L\, u}

    i.e. the run's GPU-hours times the cost per used GPU-hour over one term (reserved) or the
    hardware's life L (on premises): :func:`cost_per_useful_gpu_hour` at that horizon. At
    r = 0: reserved = H g P / u, on-prem = H g [K / (8760 L u) + O(u) / (730 u)]. On-demand and
    spot are billed per use, so they equal :func:`run_costs_usd`.

    Parameters
    ----------
    run_hours : float or array
        H [h].
    gpus_billed : float or array
        g [-].
    prices : CloudPrices
        [USD per GPU-hour].
    onprem : OnPrem
    utilization : float or array
        u, share of the capacity's hours that are used over its term or life [-], in (0, 1].
    discount_rate : float
        r, yearly [-].
    resale : {"none", "market"}
        Net out the market value at the end of life.

    Returns
    -------
    costs_usd : dict of str -> float or array
        [USD] by option; options not offered are absent.

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026):
       "utilization isn't just runtime"; Brealey, Myers, Allen, ch. 2.
    """
    h = v.nonnegative("run_hours", run_hours)
    g = v.positive("gpus_billed", gpus_billed)
    u = v.fraction("utilization", utilization)
    r = _rate(discount_rate)
    out = run_costs_usd(h, g, prices, onprem, r)
    out.pop("on_prem", None)
    gpu_hours = h * g
    for name, term in _TERMS:
        if name in out:
            p = prices.reserved(term)
            assert p is not None    # run_costs_usd prices only the offered terms
            per_used = p * HOURS_PER_MONTH * _annuity_months(12 * term, r) / (
                HOURS_PER_YEAR * term * u)
            out[name] = v.result(gpu_hours * per_used)
    if onprem.offered:
        life_m = 12 * onprem.life_years
        per_used = onprem_cost_usd(life_m, onprem, u, 1, r, resale) / (HOURS_PER_MONTH * life_m * u)
        out["on_prem"] = v.result(gpu_hours * per_used)
    return out


def option_costs_usd(months: ArrayLike, utilization: ArrayLike, prices: CloudPrices, onprem: OnPrem,
                     gpus: ArrayLike = 1, discount_rate: float = 0.0, resale: str = "none") -> dict:
    r"""Cumulative cash cost of meeting a need of u x 730 GPU-hours a month for m months.

    .. math::
        C_{od} &= P_{od}\, g\, 730\, u\, A(m),\qquad C_{spot} = P_s\, k_s\, g\, 730\, u\, A(m) \\
        C_{res,T} &= P_T\, g\, 730\, A\!\left(12T \left\lceil \tfrac{m}{12T} \right\rceil\right)
        \quad\text{(whole terms: a step function)} \\
        C_{prem} &= g\left[K + O(u)\,A(m) - \mathbb{1}_{market} V(m)\, q^m\right]

    Parameters
    ----------
    months : float or array
        m, horizon [months].
    utilization : float or array
        u [-], in (0, 1].
    prices : CloudPrices
        [USD per GPU-hour].
    onprem : OnPrem
    gpus : float or array
        g [-].
    discount_rate : float
        r, yearly [-]; every option's monthly bills are discounted, capex is not.
    resale : {"none", "market"}

    Returns
    -------
    costs_usd : dict of str -> float or array
        [USD] by option name (:data:`OPTIONS`); options not offered are absent.

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): the
       options compared in a review; Brealey, Myers, Allen, ch. 2.
    """
    m = v.nonnegative("months", months)
    u = v.fraction("utilization", utilization)
    g = v.positive("gpus", gpus)
    r = _rate(discount_rate)
    v.choice("resale", resale, RESALE)
    used = g * HOURS_PER_MONTH * u * _annuity_months(m, r)
    out = {}
    if prices.on_demand is not None:
        out["on_demand"] = v.result(prices.on_demand * used)
    for name, term in _TERMS:
        p = prices.reserved(term)
        if p is not None:
            terms = np.ceil(m / (12 * term))
            out[name] = v.result(np.broadcast_to(
                p * g * HOURS_PER_MONTH * _annuity_months(terms * 12 * term, r), used.shape))
    if prices.spot is not None:
        out["spot"] = v.result(prices.spot * prices.spot_overhead * used)
    if onprem.offered:
        out["on_prem"] = v.result(np.broadcast_to(
            onprem_cost_usd(m, onprem, u, g, r, resale), used.shape))
    return out


def cost_per_useful_gpu_hour(months: ArrayLike, utilization: ArrayLike, prices: CloudPrices, onprem: OnPrem,
                             discount_rate: float = 0.0, resale: str = "none") -> dict:
    r"""Each option's cumulative cost per GPU-hour used over the horizon (same curves).

    .. math:: c = \frac{C(m, u)}{730\, m\, u\, g}

    with C from :func:`option_costs_usd` (per GPU, so g cancels).

    Parameters
    ----------
    months : float or array
        m [months], > 0.
    utilization : float or array
        u [-], in (0, 1].
    prices : CloudPrices
    onprem : OnPrem
    discount_rate : float
        r, yearly [-].
    resale : {"none", "market"}

    Returns
    -------
    usd_per_gpu_hour : dict of str -> float or array
        [USD per used GPU-hour].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026):
       "utilization isn't just runtime".
    """
    m = v.positive("months", months)
    u = v.fraction("utilization", utilization)
    costs = option_costs_usd(m, u, prices, onprem, 1, discount_rate, resale)
    used = HOURS_PER_MONTH * m * u
    return {k: v.result(c / used) for k, c in costs.items()}


def breakeven_months(usd_per_gpu_hour: ArrayLike, capex_usd: ArrayLike, utilization: ArrayLike,
                     opex_usd_per_month: ArrayLike = 0.0, discount_rate: ArrayLike = 0.0) -> float | np.ndarray:
    r"""Months after which buying costs less than renting on demand (the curves' crossing).

    On-prem K + O A(m) meets on-demand 730 P u A(m) where

    .. math:: A(m^*) = \frac{K}{730\, P\, u - O},\qquad
              m^* = \frac{\ln\left(1 - A (1 - q)/q\right)}{\ln q},\quad q = (1+r)^{-1/12}

    (m* = K / (730 P u - O) at r = 0). Infinity when 730 P u <= O or, discounted, when A
    exceeds the perpetuity q / (1 - q): never (callers show "never"). No resale, as in the
    cash-view curves. Per GPU or per node gives the same months (units cancel).

    Parameters
    ----------
    usd_per_gpu_hour : float or array
        P, on-demand price [USD per GPU-hour] (or per node-hour with K, O per node).
    capex_usd : float or array
        K [USD per GPU] (or per node).
    utilization : float or array
        u [-], in (0, 1].
    opex_usd_per_month : float or array
        O [USD per GPU-month] (or per node-month).
    discount_rate : float or array
        r, yearly [-], in [0, 1].

    Returns
    -------
    months : float or array
        m* [months].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026):
       "$250,000 per node fully loaded", $40-50/h, breakeven "around 7-8 months of 90%
       utilization" ($50, 90%: 7.61 months).
    .. [2] Brealey, Myers, Allen, ch. 2 (annuity present value).
    """
    p = v.positive("usd_per_gpu_hour", usd_per_gpu_hour)
    k = v.positive("capex_usd", capex_usd)
    u = v.fraction("utilization", utilization)
    o = v.nonnegative("opex_usd_per_month", opex_usd_per_month)
    r = v.in_range("discount_rate", discount_rate, 0, 1)
    margin = HOURS_PER_MONTH * p * u - o
    ok = margin > 0
    a = k / np.where(ok, margin, 1.0)
    q = (1 + r) ** (-1 / 12)
    disc = (r > 0) & (q < 1)    # a rate too small to move q off 1 in float: undiscounted
    inner = 1 - a * (1 - q) / np.where(disc, q, 1.0)
    ok_disc = ok & (~disc | (inner > 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        m_disc = np.log(np.where(inner > 0, inner, 1.0)) / np.log(np.where(disc, q, 0.5))
    m = np.where(disc, m_disc, a)
    return v.result(np.where(ok_disc, m, np.inf))


def decision_map(utilization: ArrayLike, months: ArrayLike, prices: CloudPrices, onprem: OnPrem,
                 **kw: Any) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    r"""Cheapest option over a grid of utilization x horizon (the curves' convention).

    Parameters
    ----------
    utilization : array
        [-], one axis.
    months : array
        [months], the other axis.
    prices : CloudPrices
    onprem : OnPrem
    **kw
        ``gpus``, ``discount_rate``, ``resale``: passed to :func:`option_costs_usd`.

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
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): "80%+
       for 12+ months: buy".
    """
    u = np.asarray(utilization, dtype=float)[:, None]
    m = np.asarray(months, dtype=float)[None, :]
    costs = option_costs_usd(m, u, prices, onprem, **kw)
    names = tuple(costs)
    if not names:
        raise v.InputError("prices", "no option is offered: no cloud price and no on-prem capex")
    stack = np.stack([np.broadcast_to(costs[k], np.broadcast(u, m).shape) for k in names])
    return names, np.argmin(stack, axis=0), stack
