"""Typed results of each stage of the review chain.

Every figure an app, a plot, a report or ``llmcost review --json`` shows is a field of one of
these objects, computed once by its stage: the same number everywhere by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from ..catalog import Catalog
from ..economics.realized import RealizedRatio
from ..economics.spot import SpotResult
from ..economics.tco import CloudPrices, OnPrem
from ..planning.sizing import Sizing
from ..scenario import Scenario
from ..training.arch import ModelSpec
from ..training.hardware import FabricSpec, GPUSpec, Hardware
from ..training.layout import Layout
from ..training.step import StepPrediction
from ..training.uncertainty import Band
from .fill import FILL_GAIN, BatchFill

#: the ways to pay, in the order tables and plots list them
OPTION_LABELS = {"on_demand": "on-demand", "reserved_1y": "reserved 1 y",
                 "reserved_3y": "reserved 3 y", "spot": "spot", "on_prem": "on-premises"}


@dataclass(frozen=True)
class Inputs:
    """Stage ``resolve``: catalog rows and the figures the scenario leaves to the catalog."""

    scenario: Scenario
    catalog: Catalog
    model: ModelSpec
    gpu: GPUSpec
    scale_up: FabricSpec
    scale_out: FabricSpec
    #: per GPU-hour [USD]; options not offered are None; None when no price is known at all
    prices: CloudPrices | None
    price_offer: str | None          # prices.csv id the prices came from (catalog source)
    billing_gpus: int                # GPUs per billed instance (the billing unit)
    spot_discount: float | None      # the one stored spot figure; None: spot not offered
    onprem: OnPrem | None            # per GPU; None when no capex is known
    failures_per_1000_gpu_days: float
    failure_source: str
    #: scenario field -> the value the review uses for it (shown by the apps' controls)
    resolved: dict = field(default_factory=dict)
    warnings: tuple = ()
    #: the global batch the run uses [tokens]: the scenario's, or the batch rule's choice
    global_batch_tokens: float = 0.0
    #: the batch rule's choice and its reason (None when the scenario gives the batch)
    batch: Any = None
    #: the training stack the floor runs ("auto": the stack a 2025-26 team would run)
    stack: str = "megatron"
    #: what comparable published runs realized over their floor (economics/realized.py)
    realized: RealizedRatio | None = None
    #: the spot capacity the offer's provider documents [GPUs]; None: not documented
    spot_capacity_gpus: int | None = None
    #: option -> the prices.csv id it is priced from (empty for entered prices)
    price_offers: dict = field(default_factory=dict)
    #: how the offers were chosen, in words
    price_rule: str = ""

    def option_prices(self) -> dict:
        """Price of each way to pay the offers give [USD per GPU-hour] (on-premises has
        none: its cost is capex and running costs); empty when no price is known."""
        p = self.prices
        if p is None:
            return {}
        return {k: getattr(p, k) for k in ("on_demand", "reserved_1y", "reserved_3y", "spot")
                if getattr(p, k) is not None}

    @property
    def power_kw_per_gpu(self) -> float | None:
        """System power per GPU at full load [kW]: the on-premises figure, else the GPU's
        system's; None when neither is known."""
        if self.onprem is not None and self.onprem.power_w_per_gpu is not None:
            return self.onprem.power_w_per_gpu / 1000
        w = self.gpu.power_w_per_gpu
        return None if w is None else w / 1000

    @property
    def hardware(self) -> Hardware:
        """The GPU and its two fabrics, as the step model takes them."""
        return Hardware(self.gpu, self.scale_up, self.scale_out)

    def spot_covers(self, gpus: int) -> bool:
        """Whether the documented spot capacity holds ``gpus`` GPUs (False when none is
        documented)."""
        return self.spot_capacity_gpus is not None and self.spot_capacity_gpus >= gpus


@dataclass(frozen=True)
class SizeResult:
    """Stage ``size`` (only when sizing by target days)."""

    sizing: Sizing
    gpus: int
    meets_target: bool
    notes: tuple = ()
    #: the GPUs the floor (the cluster's best case) would need for the target [-]
    floor_gpus: int | None = None
    #: the batch law's batch on the size found (:mod:`llmcost.review.fill`); None when the
    #: scenario gives the batch
    batch_fill: BatchFill | None = None


@dataclass(frozen=True)
class PlanResult:
    """Stage ``plan``: the best layout on the cluster (None: no layout splits the batch)."""

    gpus: int
    global_batch: int | None
    layouts: pd.DataFrame
    layout: Layout | None
    fits: bool
    evaluated: int
    feasible: int
    notes: tuple = ()
    #: whether the batch run fills the GPUs, the largest count it fills, the batch that
    #: fills them (:mod:`llmcost.review.fill`)
    batch_fill: BatchFill | None = None
    #: why the review runs this batch: the scenario's, the batch law's, or raised to fill
    batch_reason: str = ""
    #: where the batch comes from: "scenario", "law" (the batch law's, or near it so that it
    #: splits), "fill" (raised to the batch that fills the GPUs)
    batch_source: str = "law"


@dataclass(frozen=True)
class MfuLimit:
    """What limits MFU: the largest share of the step lost against the dense peak, or the
    batch when it does not fill the GPUs (:func:`llmcost.review.stages.prediction.mfu_limit`)."""

    limit: str              # "batch", "bubble", "bandwidth", "memory" or "compute"
    reason: str             # one line, with its figures
    #: share of the step each cause takes [-]: compute (matmul efficiency and memory-bound
    #: kernels), memory (recomputation), bubble, bandwidth (exposed communication and the
    #: optimizer's memory-bound step); with the MFU they sum to 1
    shares: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"limit": self.limit, "reason": self.reason, "shares": dict(self.shares)}


@dataclass(frozen=True, kw_only=True)
class PredictResult:
    """Stage ``predict``: step time, throughput and memory of the chosen layout."""

    step: StepPrediction
    step_time_s: float
    #: the step time with the scale-out fabric's assumed terms at their favourable and
    #: unfavourable ends (Catalog.fabric_bounds) [s]; None when none of its terms is assumed
    fabric_step_time_s_band: tuple | None = None
    tokens_per_s: float
    bubble_share: float
    model_tflops_per_gpu: float
    mfu: float
    #: MFU and HFU against the dense peak of the precision the GEMMs run at (FP8/MXFP8: the FP8
    #: peak; BF16: equal to ``mfu``/``hfu``): the physical bound, at most 1
    mfu_precision: float | None = None
    hfu: float
    hfu_precision: float | None = None
    #: what limits MFU, with its reason (:class:`MfuLimit`)
    mfu_limit: MfuLimit | None = None
    memory_gb: dict                 # per GPU by component [GB = 1e9 bytes]
    memory_gb_per_gpu: float
    capacity_gb: float
    fits: bool

    def fabric_days_band(self, days: float) -> tuple[float, float]:
        """``days`` at either end of :attr:`fabric_step_time_s_band`: the step time scales
        them, goodput held [days]."""
        lo, hi = self.fabric_step_time_s_band
        return days * lo / self.step_time_s, days * hi / self.step_time_s


@dataclass(frozen=True)
class ReliabilityResult:
    """Stage ``reliability``: one interruption model for failures (and spot preemptions)."""

    failures_per_1000_gpu_days: float
    failure_source: str
    failures_per_day: float
    job_mtbf_h: float
    checkpoint_bytes: float
    checkpoint_stall_s: float
    interval_s: float
    young_interval_s: float
    daly_interval_s: float
    goodput: float
    checkpoint_share: float
    rework_share: float
    restart_share: float
    nodes: int
    #: work lost per interruption (rework of half an interval and the checkpoint) [h]
    lost_hours_per_interruption: float
    restart_h: float
    bandwidth_for_10s_gb_per_s: float
    #: async checkpoints: the upload to shared storage that must end before a snapshot is
    #: durable [s] (0 for sync); the interval is never shorter than it
    upload_s: float = 0.0
    #: the restart per interruption term by term [s] (detect_s, reschedule_s, load_s,
    #: warmup_s, total_s; empty when the scenario gives its own restart)
    restart_terms_s: dict = field(default_factory=dict)
    #: the shared storage tier's aggregate bandwidth the job gets [GB/s]
    storage_gb_per_s: float = 0.0


@dataclass(frozen=True)
class ForecastResult:
    """Stage ``forecast``: the floor (the step model with goodput and data stalls: the
    cluster's best case) and the forecast (the floor x what comparable published runs
    realized over theirs), with the band of those runs' spread. None figures: no layout."""

    #: goodput x (1 - data-stall share) [-]
    useful_share: float
    data_stall_share: float
    floor_days: float | None
    floor_gpu_hours: float | None
    realized: RealizedRatio
    days: float | None
    gpu_hours: float | None
    #: (low, high) [days] and [GPU-h]: the floor x the group's ratio band
    days_band: tuple | None = None
    gpu_hours_band: tuple | None = None


@dataclass(frozen=True, kw_only=True)
class SpotSummary:
    """Spot in the economics stage: whether the GPU's offers sell it and at what discount,
    the preemptions and the work each loses, and the net saving over on-demand
    (:func:`llmcost.economics.spot.spot_net_savings`); None figures: not offered."""

    offered: bool
    discount: float | None
    preemptions_per_day: float
    lost_hours_per_preemption: float
    lost_hours_source: str          # "from-checkpoints" or "custom"
    #: the spot run's checkpoint interval (Daly at failures + preemptions) [s]
    checkpoint_interval_s: float | None = None
    net_savings: float | None
    duration_stretch: float | None
    breakeven_lost_hours: float | None
    implied_lost_hours: float | None
    result: SpotResult | None = None


@dataclass(frozen=True)
class EconomicsResult:
    """Stage ``economics``: days and dollars of this run, and rent vs buy for this cluster."""

    useful_share: float             # goodput x (1 - data stalls)
    days: float | None
    run_hours: float | None
    billed_gpus: int
    costs_usd: dict                 # cash cost of this run per option, commitments included
    costs_amortized_usd: dict       # the run's share of owned or reserved capacity
    commitments: dict               # option -> text: what the cash figure commits to
    run_days: dict                  # option -> days (spot stretches)
    breakeven_months: float | None  # buying beats on-demand after (None: never / not offered)
    usd_per_used_gpu_hour: dict     # over the horizon at the stated utilization
    spot: SpotSummary
    waterfall: pd.DataFrame | None
    effective_utilization: float | None
    #: per GPU-hour prices as costed (spot with its preemption overhead); None: no price
    prices: CloudPrices | None = None
    #: per GPU as costed (not offered when the GPU has no purchase price)
    onprem: OnPrem | None = None
    #: how far the step model is trusted here (training/uncertainty.py), and what it
    #: does to days and to the cash cost of each option: (fast end, slow end)
    band: Band | None = None
    #: cash cost per option at the forecast band's (fast, slow) ends [USD]
    costs_usd_range: dict = field(default_factory=dict)
    #: share of time waiting for data [-] (computed from the dataset tier, or the scenario's)
    data_stall_share: float = 0.0
    #: GPUs x wall-clock hours of the run as forecast (the floor x the realized ratio),
    #: schedule headroom out
    gpu_hours: float | None = None
    #: 6 x active params x tokens at 40% of the dense BF16 peak (economics.napkin)
    napkin_gpu_hours: float | None = None
    #: the factors from the napkin to gpu_hours (economics.napkin.napkin_factors)
    napkin_factors: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Flag:
    """A headline figure a reviewer must not take at face value."""

    key: str
    level: str          # "infeasible" or "implausible"
    message: str


@dataclass
class Results:
    scenario: Scenario
    inputs: Inputs
    size: SizeResult | None
    plan: PlanResult
    predict: PredictResult | None
    reliability: ReliabilityResult | None
    economics: EconomicsResult | None
    forecast: ForecastResult | None = None
    warnings: list = field(default_factory=list)
    flags: dict = field(default_factory=dict)      # headline key -> Flag
    _series: dict = field(default_factory=dict, repr=False)

    def for_scenario(self, s: Scenario) -> "Results":
        """These results for a scenario that resolves alike
        (:func:`llmcost.review.chain.resolved_key`): every stage's result shared, the
        scenario (and so the link and the scenario's own fields in the JSON) ``s``."""
        return replace(self, scenario=s, inputs=replace(self.inputs, scenario=s), _series={})

    # ------------------------------------------------------------ views
    @property
    def headline(self) -> dict:
        """The headline figures (None: not available for this scenario)."""
        p, e, r = self.predict, self.economics, self.reliability
        h = {
            "days": e.days if e else None,
            "cost_on_demand_usd": e.costs_usd.get("on_demand") if e else None,
            "gpus": self.plan.gpus,
            "mfu": p.mfu if p else None,
            "mfu_precision": p.mfu_precision if p else None,
            "effective_utilization": e.effective_utilization if e else None,
            "memory_gb_per_gpu": p.memory_gb_per_gpu if p else None,
            "capacity_gb": p.capacity_gb if p else self.inputs.gpu.memory_bytes / 1e9,
            "fits": bool(self.plan.fits and p is not None and p.fits),
            "best_layout": self.plan.layout.description if self.plan.layout else "none",
            "goodput": r.goodput if r else None,
            "cheapest_option": self.cheapest_option,
            "breakeven_months": e.breakeven_months if e else None,
            "spot_net_savings": e.spot.net_savings if e else None,
            "job_mtbf_h": r.job_mtbf_h if r else None,
            "gpu_hours": e.gpu_hours if e else None,
            "realized_ratio": (self.forecast.realized.value
                               if self.forecast is not None and e and e.days is not None
                               else None),
            "global_batch_tokens": (self.plan.layout.global_batch * self.inputs.model.seq_len
                                    if self.plan.layout else None),
        }
        if self.size is not None:
            h["meets_target"] = self.size.meets_target
        return h

    @property
    def cheapest_option(self) -> str | None:
        """The cheapest way to pay for the run; spot only where the offer documents spot
        capacity for the run's GPUs (a spot price for 8 GPUs says nothing of 16,384)."""
        c = dict(self.economics.costs_usd) if self.economics else {}
        if "spot" in c and not self.inputs.spot_covers(self.plan.gpus):
            c.pop("spot")
        return min(c, key=c.get) if c else None

    @property
    def notes(self) -> list:
        return list(self.warnings)

    def cost_table(self) -> list[dict]:
        """One row per way to pay, in OPTION_LABELS order: the run's days under it, its cash
        cost (commitments billed for their whole term), the run's amortized share of owned or
        reserved capacity, the $ per used GPU-hour and what the cash figure commits to. The
        same figures as ``to_json``'s ``run_days``, ``costs_usd``, ``costs_amortized_usd``,
        ``usd_per_used_gpu_hour`` and ``commitments``."""
        e = self.economics
        if e is None:
            return []
        return [{"option": k, "label": OPTION_LABELS[k], "run_days": e.run_days.get(k),
                 "cash_usd": e.costs_usd[k], "amortized_usd": e.costs_amortized_usd.get(k),
                 "usd_per_used_gpu_hour": e.usd_per_used_gpu_hour.get(k),
                 "commitment": e.commitments.get(k, "")}
                for k in OPTION_LABELS if k in e.costs_usd]

    @property
    def model_name(self) -> str:
        """The model as the pages name it: a config's ``_name_or_path`` (else its
        architecture), a catalog row's name."""
        return (self.scenario.config_name or self.inputs.model.name
                or self.inputs.model.id)

    def fabric_assumptions(self) -> dict | None:
        """The scale-out fabric's terms that are assumptions (data/fabrics.csv ``assumed``) and
        the floor's days with them at either end of what measured fabrics show: the step time
        scales the floor's days, goodput held. None when the fabric's timing terms are all
        measured or no layout runs."""
        p, f, fab = self.predict, self.forecast, self.inputs.scale_out
        if p is None or p.fabric_step_time_s_band is None:
            return None
        lo, hi = p.fabric_step_time_s_band
        out = {"fabric": fab.id, "assumed": {t: getattr(fab, t) for t in fab.assumed
                                             if hasattr(fab, t)},
               "step_time_s": p.step_time_s, "step_time_s_band": [float(lo), float(hi)],
               "days_floor_band": None, "days_band": None}
        if f is not None and f.floor_days is not None:
            out["days_floor_band"] = list(p.fabric_days_band(f.floor_days))
        e = self.economics
        if e is not None and e.days is not None:
            out["days_band"] = list(p.fabric_days_band(e.days))
        return out

    def to_json(self) -> dict:
        """The object ``llmcost review --json`` prints (a contract: keys only get added)."""
        e, r, p, f = self.economics, self.reliability, self.predict, self.forecast
        out: dict[str, Any] = {
            "scenario": self.scenario.to_dict(),
            "model": self.inputs.model.id,
            "model_name": self.model_name,
            # the model as read (a config.json's parameters are what a reviewer checks first)
            "params": int(self.inputs.model.params),
            "active_params": int(self.inputs.model.active_params),
            "gpu": self.inputs.gpu.id,
            "fabric": self.inputs.scale_out.id,
            "days": e.days if e else None,
            "days_band": _pair(f.days_band) if f else None,
            "days_floor": f.floor_days if f else None,
            "fabric_assumptions": self.fabric_assumptions(),
            "prediction_band": ({"low": e.band.low, "high": e.band.high,
                                 "calibrated": e.band.calibrated, "reason": e.band.reason}
                                if e and e.band else None),
            "gpus": self.plan.gpus,
            "mfu": p.mfu if p else None,
            "hfu": p.hfu if p else None,
            "mfu_precision": p.mfu_precision if p else None,
            "hfu_precision": p.hfu_precision if p else None,
            "precision": self.scenario.precision,
            "tokens_per_s": p.tokens_per_s if p else None,
            "effective_utilization": e.effective_utilization if e else None,
            "fits": self.headline["fits"],
            "memory_gb_per_gpu": p.memory_gb_per_gpu if p else None,
            "capacity_gb": self.headline["capacity_gb"],
            "layout": self.plan.layout.to_dict() if self.plan.layout else None,
            "seq_len": self.inputs.model.seq_len,
            "global_batch_tokens": self.headline["global_batch_tokens"] or self.inputs.global_batch_tokens,
            "global_batch_reason": self.plan.batch_reason or (
                self.inputs.batch.reason if self.inputs.batch else "given by the scenario"),
            "batch_fill": _fill_json(self.plan.batch_fill),
            "mfu_limit": p.mfu_limit.to_json() if p and p.mfu_limit else None,
            "stack": self.inputs.stack,
            "gpu_hours": e.gpu_hours if e else None,
            "gpu_hours_band": _pair(f.gpu_hours_band) if f else None,
            "gpu_hours_floor": f.floor_gpu_hours if f else None,
            "realized_ratio": f.realized.to_json() if f else None,
            "effective_utilization_forecast": (e.effective_utilization / f.realized.value
                             if f and e and e.effective_utilization is not None else None),
            "napkin_gpu_hours": e.napkin_gpu_hours if e else None,
            "napkin_factors": dict(e.napkin_factors) if e else {},
            "costs_usd": dict(e.costs_usd) if e else {},
            "costs_usd_range": {k: list(x) for k, x in e.costs_usd_range.items()} if e else {},
            "costs_amortized_usd": dict(e.costs_amortized_usd) if e else {},
            "commitments": dict(e.commitments) if e else {},
            "run_days": dict(e.run_days) if e else {},
            "billed_gpus": e.billed_gpus if e else None,
            "prices_usd_per_gpu_hour": self.inputs.option_prices(),
            "price_offer": self.inputs.price_offer,
            "price_offers": dict(self.inputs.price_offers),
            "price_rule": self.inputs.price_rule,
            "breakeven_months": e.breakeven_months if e else None,
            "usd_per_used_gpu_hour": dict(e.usd_per_used_gpu_hour) if e else {},
            "spot_net_savings": e.spot.net_savings if e else None,
            "spot_lost_hours_per_preemption": e.spot.lost_hours_per_preemption if e else None,
            "spot_checkpoint_interval_s": e.spot.checkpoint_interval_s if e else None,
            "job_mtbf_h": r.job_mtbf_h if r else None,
            "failures_per_1000_gpu_days": self.inputs.failures_per_1000_gpu_days,
            "failure_source": self.inputs.failure_source,
            "checkpoint_interval_s": r.interval_s if r else None,
            "checkpoint_stall_s": r.checkpoint_stall_s if r else None,
            "goodput": r.goodput if r else None,
            "warnings": list(self.warnings),
            "flags": {k: {"level": f.level, "message": f.message} for k, f in self.flags.items()},
        }
        if self.size is not None:
            out["meets_target"] = self.size.meets_target
            out["gpus_floor"] = self.size.floor_gpus
            out["sizing_notes"] = list(self.size.notes)
        return out


def _pair(x) -> list | None:
    return [float(x[0]), float(x[1])] if x is not None else None


def _fill_json(f: BatchFill | None) -> dict | None:
    """Whether the batch fills the GPUs, as ``llmcost review --json`` gives it."""
    if f is None:
        return None
    t = f.test
    return {"batch": t.batch, "gpus": t.gpus, "fills": t.fills,
            # T(2B) / T(B): throughput per GPU at twice the batch over the batch's (a
            # ratio, never negative; the batch fills the GPUs below 1 + fill_gain_limit)
            "doubled_throughput_ratio": 1 + t.gain if t.gain is not None else None,
            "fill_gain_limit": FILL_GAIN,
            "largest_gpus_filled": f.largest_gpus, "fill_batch": f.fill_batch,
            "fill_batch_tokens": f.fill_batch * f.seq_len if f.fill_batch else None,
            "mfu_at_fill_batch": f.filling.at.mfu if f.filling and f.filling.at else None,
            "advice": f.advice()}



