"""Scenario: every assumption of a review in one validated object.

A Scenario is what a reviewer saves, shares and loads: JSON round-trip, and URL query string
round-trip (strict: unknown keys or bad values keep the default and produce a warning;
nothing is evaluated). Field metadata (type, bounds, unit, label) drives the apps' controls.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any
from urllib.parse import parse_qs, urlencode

from . import _validate as v
from . import catalog


def _f(default, lo=None, hi=None, *, label, unit="", lo_open=False, hi_open=False, step=None,
       group="run", kind="float"):
    return field(default=default, metadata=dict(kind=kind, lo=lo, hi=hi, lo_open=lo_open,
                                                hi_open=hi_open, label=label, unit=unit,
                                                step=step, group=group))


def _choice(default, table, *, label, group="run"):
    return field(default=default, metadata=dict(kind="choice", table=table, label=label,
                                                unit="", group=group))


def _options(default, options, *, label, group="run"):
    return field(default=default, metadata=dict(kind="options", options=tuple(options),
                                                label=label, unit="", group=group))


@dataclass(frozen=True)
class Scenario:
    # ---- the run
    model: str = _choice("llama3-70b", "models", label="Model")
    tokens: float = _f(2e12, 1e6, 1e15, label="Training tokens", unit="tokens")
    gpu: str = _choice("h100-sxm", "gpus", label="GPU")
    fabric: str = _choice("ib-ndr", "fabrics", label="Scale-out fabric")
    sizing: str = _options("gpus", ("gpus", "days"), label="Size by")
    gpus: int = _f(1024, 1, 131072, label="GPUs", kind="int", step=8)
    target_days: float = _f(30.0, 0.1, 3650, label="Target days", unit="days")
    global_batch_tokens: float = _f(4_194_304, 1024, 1e9, label="Global batch", unit="tokens")
    headroom: float = _f(0.10, 0, 1, label="Schedule headroom", hi_open=True, step=0.01)
    # ---- prices
    # defaults: AWS p5.48xlarge (data/prices.csv: $55.04 on demand, $23.78 3-year reserved;
    # no 1-year price in the catalog); spot at the seed's 60% off on-demand.
    on_demand_usd_per_node_hour: float = _f(55.04, 0, 1e4, lo_open=True, label="On-demand",
                                            unit="$/node-h", group="prices")
    reserved_1y_usd_per_node_hour: float = _f(0.0, 0, 1e4, label="Reserved 1 y (0: none)",
                                              unit="$/node-h", group="prices")
    reserved_3y_usd_per_node_hour: float = _f(23.78, 0, 1e4, label="Reserved 3 y (0: none)",
                                              unit="$/node-h", group="prices")
    spot_usd_per_node_hour: float = _f(22.02, 0, 1e4, label="Spot (0: none)",
                                       unit="$/node-h", group="prices")
    # ---- on premises
    onprem_capex_usd_per_node: float = _f(250_000, 0, 1e8, lo_open=True, label="Capex per node",
                                          unit="$", group="onprem", step=1000)
    onprem_power_kw_per_node: float = _f(10.2, 0, 200, label="Power per node", unit="kW",
                                         group="onprem")
    pue: float = _f(1.58, 1.0, 5.0, label="PUE", group="onprem", step=0.01)
    usd_per_kwh: float = _f(0.0806, 0, 5, label="Electricity", unit="$/kWh", group="onprem",
                            step=0.001)
    onprem_other_usd_per_node_month: float = _f(0.0, 0, 1e6, label="Space, staff, support",
                                                unit="$/node-month", group="onprem")
    life_years: float = _f(4.0, 0.5, 15, label="Depreciation life", unit="years", group="onprem")
    residual_share: float = _f(0.1, 0, 1, hi_open=True, label="Residual value", group="onprem",
                               step=0.01)
    utilization: float = _f(0.9, 0, 1, lo_open=True, label="Utilization", group="onprem",
                            step=0.01)
    horizon_months: float = _f(36.0, 1, 180, label="Horizon", unit="months", group="onprem")
    # ---- spot
    spot_discount: float = _f(0.6, 0, 1, hi_open=True, label="Spot discount", group="spot",
                              step=0.01)
    preemptions_per_day: float = _f(2.4, 0, 48, label="Preemptions per day", group="spot",
                                    step=0.1)
    lost_hours_per_preemption: float = _f(1.5, 0, 24, label="Hours lost per preemption",
                                          unit="h", group="spot", step=0.1)
    restart_h: float = _f(0.0, 0, 24, label="Restart", unit="h", group="spot", step=0.1)
    capacity_wait_h: float = _f(0.0, 0, 48, label="Capacity wait", unit="h", group="spot",
                                step=0.1)
    observed_net_savings: float = _f(0.22, -1, 1, hi_open=True, label="Observed net savings",
                                     group="spot", step=0.01)
    # ---- reliability
    checkpoint_mode: str = _options("sync", ("sync", "async"), label="Checkpoint writes",
                                    group="reliability")
    shared_storage_gbps: float = _f(20.0, 0, 1e5, lo_open=True, label="Shared storage write",
                                    unit="GB/s", group="reliability")
    local_write_gbps: float = _f(5.0, 0, 1e3, lo_open=True, label="Local NVMe write per node",
                                 unit="GB/s", group="reliability")
    node_failures_per_1000_node_days: float = _f(6.5, 0, 1000, lo_open=True,
                                                 label="Node failures per 1000 node-days",
                                                 group="reliability", step=0.1)
    mtbf_h: float = _f(0.0, 0, 1e6, label="Job MTBF (0: from nodes)", unit="h",
                       group="reliability")
    restart_s: float = _f(600.0, 0, 86400, label="Restart after failure", unit="s",
                          group="reliability")
    checkpoint_interval_s: float = _f(0.0, 0, 1e6, label="Checkpoint interval (0: Daly)",
                                      unit="s", group="reliability")
    data_stall_share: float = _f(0.02, 0, 1, hi_open=True, label="Data-loading stalls",
                                 group="reliability", step=0.01)
    # ---- a measured run (effective utilization app)
    measured_flops_per_token: float = _f(0.0, 0, 1e16, label="Model FLOPs per token (0: from model)",
                                         unit="FLOP", group="measured")
    measured_global_batch: float = _f(512, 1, 1e7, label="Global batch", unit="sequences",
                                      group="measured")
    measured_seq_len: float = _f(8192, 1, 1e7, label="Sequence length", unit="tokens",
                                 group="measured")
    measured_steps: float = _f(1000, 1, 1e9, label="Steps", group="measured")
    measured_gpus: float = _f(512, 1, 1e6, label="GPUs", group="measured")
    measured_wall_clock_s: float = _f(10000, 1, 1e9, label="Wall clock", unit="s",
                                      group="measured")
    measured_peak_tflops: float = _f(0.0, 0, 1e5, label="Peak used (0: GPU's dense BF16)",
                                     unit="TFLOP/s", group="measured")

    def __post_init__(self):
        for f in fields(self):
            check_value(f.name, getattr(self, f.name))

    # ---------------------------------------------------------------- round trips
    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str) -> tuple["Scenario", list[str]]:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            return cls(), [f"not a scenario file: {e.msg}"]
        if not isinstance(data, dict):
            return cls(), ["not a scenario file: expected a JSON object"]
        return cls.from_mapping(data)

    @classmethod
    def from_mapping(cls, data: dict) -> tuple["Scenario", list[str]]:
        """Strict: each key is checked alone; a bad one keeps its default and warns."""
        base = cls()
        known = {f.name: f for f in fields(cls)}
        good, warnings = {}, []
        for key, raw in data.items():
            if key not in known:
                warnings.append(f"unknown setting {key!r} ignored")
                continue
            try:
                good[key] = parse_value(known[key], raw)
            except ValueError as e:
                warnings.append(f"{key}: {e}; kept {getattr(base, key)!r}")
        return replace(base, **good), warnings

    def to_query(self, only_changed=True) -> str:
        base = Scenario()
        items = {k: val for k, val in self.to_dict().items()
                 if not only_changed or val != getattr(base, k)}
        return urlencode({k: _fmt(val) for k, val in items.items()})

    @classmethod
    def from_query(cls, query: str) -> tuple["Scenario", list[str]]:
        """Parse a page's query string. Voila's own parameters are not ours: ignored."""
        parsed = parse_qs(query or "", keep_blank_values=True)
        ours = {}
        warnings = []
        names = {f.name for f in fields(cls)}
        for key, vals in parsed.items():
            if key in VOILA_PARAMS:
                continue
            if key not in names:
                warnings.append(f"unknown setting {key!r} ignored")
                continue
            if len(vals) > 1:
                warnings.append(f"{key}: given {len(vals)} times; the last is used")
            ours[key] = vals[-1]
        scenario, more = cls.from_mapping(ours)
        return scenario, warnings + more


#: Voila and Jupyter put these in the page's query string; they are not scenario settings.
VOILA_PARAMS = {"theme", "template", "token", "voila-template", "kernel_name", "reload"}


def _fmt(x) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return str(x)


def parse_value(f, raw: Any):
    """Convert and check one value for field ``f`` (raises ValueError with the allowed range)."""
    kind = f.metadata["kind"]
    if kind in ("float", "int"):
        if isinstance(raw, bool):
            raise ValueError(f"expected a number, got {raw!r}")
        try:
            x = float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"expected a number, got {raw!r}") from None
        if kind == "int":
            if not math.isfinite(x) or x != round(x):
                raise ValueError(f"expected a whole number, got {raw!r}")
            x = int(x)
        check_value(f.name, x)
        return x
    if kind == "options":
        s = str(raw)
        if s not in f.metadata["options"]:
            raise ValueError(f"expected one of {', '.join(f.metadata['options'])}, got {s!r}")
        return s
    s = str(raw).strip()
    check_value(f.name, s)
    return catalog.default().lookup(f.metadata["table"], s)["id"]


def check_value(name: str, value) -> None:
    """Validate one field's value, raising InputError naming it with the allowed range."""
    f = FIELDS[name]
    md = f.metadata
    kind = md["kind"]
    if kind in ("float", "int"):
        x = v.in_range(name, value, md["lo"], md["hi"], low_inclusive=not md["lo_open"],
                       high_inclusive=not md["hi_open"])
        if kind == "int":
            v.integer(name, x, minimum=int(md["lo"]))
    elif kind == "options":
        v.choice(name, value, md["options"])
    else:
        row = catalog.default().lookup(md["table"], value)
        if name == "fabric" and row["kind"] != "scale_out":
            raise v.InputError(name, f"fabric {value!r} links GPUs inside a node; pick a scale-out "
                                     "fabric (InfiniBand or RoCE)")


def describe(name: str) -> dict:
    """Label, unit, bounds and kind of a field, for controls and tables."""
    md = dict(FIELDS[name].metadata)
    md["name"] = name
    md["default"] = FIELDS[name].default
    return md


FIELDS = {f.name: f for f in fields(Scenario)}
