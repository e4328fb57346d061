"""One run across GPUs, offers and pricing options: the buyer's table.

Every GPU with an offer in ``data/prices.csv`` x each of its offers x each pricing option
(on-demand, 1-year and 3-year reserved, spot), and buying the GPUs once per GPU, one row
each. A row *is* the review of the scenario on that GPU and offer: the figures come from
:func:`llmcost.review.evaluate` of ``replace(s, gpu=G, price_offer=ID)`` (with ``fabric=auto``
the review times the run on the fabric the offer is sold with), so a row equals
``llmcost review --query "Q&gpu=G&price_offer=ID"`` and nothing here computes a figure of its
own. An option the offer does not list is a row marked missing, never priced from another
offer. Market composites and articles' figures (``kind`` in prices.csv) are reference
prices, not offers: never rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import _validate as v
from .. import catalog as catalog_mod
from ..scenario import Scenario
from .chain import evaluate
from .results import OPTION_LABELS

#: the options a cloud offer may list, in the order the table shows them
CLOUD_OPTIONS = ("on_demand", "reserved_1y", "reserved_3y", "spot")
#: how rows can be sorted
SORT_KEYS = ("cost", "days")
#: how rows can be grouped: "none", one list sorted
GROUP_KEYS = ("none", "gpu", "provider")


@dataclass(frozen=True)
class CompareRow:
    """One GPU x offer x option of a run: the review's own figures for it."""

    gpu: str
    offer: str | None            #: prices.csv id; None for buying the GPUs
    provider: str | None
    option: str                  #: on_demand, reserved_1y, reserved_3y, spot or on_prem
    fabric: str                  #: the scale-out fabric the review timed the run on
    days: float | None           #: forecast days [d]
    days_band: tuple | None      #: the forecast's band [d]
    gpu_hours: float | None      #: forecast GPU-hours [GPU-h]
    cost_usd: float | None       #: cash cost of the option [USD]; None: not offered
    cost_band_usd: tuple | None  #: the cost at the band's ends [USD]
    amortized_usd: float | None  #: cost with commitments and purchases amortized [USD]
    usd_per_million_tokens: float | None  #: cost_usd per million training tokens [USD]
    calibrated: bool             #: the step model has published runs for this GPU generation
    calibration: str             #: what the prediction band rests on
    prediction_band_low: float   #: the step model's band below its throughput [-]
    fits: bool
    missing: str = ""            #: why the option has no cost ('' when it has one)
    #: what keeps a costed row from being named the cheapest ('' when nothing does): spot
    #: beyond the spot capacity its offer documents
    flag: str = ""

    def _slow_end(self, figure, band):
        """A figure without calibration at the slow end of both its bands: the forecast's
        high end, slowed by the step model's own band (its envelope when uncalibrated), as
        the ladder ranks such a GPU."""
        if figure is None or self.calibrated or not band:
            return figure
        return band[1] / max(1.0 - self.prediction_band_low, 1e-9)

    @property
    def rank_cost_usd(self) -> float | None:
        """The cost the row is ranked by: its own, or for a GPU the step model has no
        published run for, at the slow end of its bands (a figure without calibration never
        wins on its point estimate)."""
        return self._slow_end(self.cost_usd, self.cost_band_usd)

    @property
    def rank_days(self) -> float | None:
        """The days the row is ranked by (the slow end of its bands when uncalibrated)."""
        return self._slow_end(self.days, self.days_band)

    def calibration_text(self, sort: str = "cost") -> str:
        """Whether the row is calibrated, and for one that is not the figure it is ranked by
        (:attr:`rank_cost_usd` or :attr:`rank_days`, as the comparison sorts), which its
        point estimate alone does not show."""
        if self.calibrated:
            return "yes"
        from .format import usd_text
        figure = self.rank_cost_usd if sort == "cost" else self.rank_days
        if figure is None:
            return "no"
        shown = usd_text(figure) if sort == "cost" else f"{figure:,.1f} days"
        return f"no: ranked at {shown}, its bands' slow end"

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["option_label"] = OPTION_LABELS.get(self.option, self.option)
        d["rank_cost_usd"], d["rank_days"] = self.rank_cost_usd, self.rank_days
        for k in ("days_band", "cost_band_usd"):
            d[k] = list(d[k]) if d[k] is not None else None
        return d


@dataclass(frozen=True)
class Comparison:
    """The rows of :func:`compare`, sorted; ``scenario`` as given."""

    scenario: Scenario
    rows: tuple
    sort: str
    by: str

    def to_json(self) -> dict:
        return {"scenario": self.scenario.to_query(), "sort": self.sort, "by": self.by,
                "rows": [{**r.to_json(), "calibration_text": r.calibration_text(self.sort)}
                         for r in self.rows]}


def offers(cat: catalog_mod.Catalog, gpus=None):
    """The prices.csv rows that are offers (``kind`` offer or blank) of catalog GPUs, in the
    catalog's order; only those of ``gpus`` when given."""
    p = cat.prices()
    kind = p["kind"].fillna("offer") if "kind" in p else None
    keep = p["gpu"].isin(set(cat.gpus()["id"]))
    if kind is not None:
        keep &= kind.isin(["offer", ""])
    if gpus is not None:
        keep &= p["gpu"].isin(list(gpus))
    return p[keep]


def _rows(s: Scenario, cat, gpu: str, offer, provider) -> list:
    """The rows of one review: each cloud option of an offer, or buying (offer None)."""
    # the row's offer is named, so the provider (which only narrows "auto") is not needed
    sc = replace(s, gpu=gpu, price_offer=offer or "auto", provider="any")
    res = evaluate(sc, cat)
    j = res.to_json()
    band = j.get("prediction_band") or {}
    common = dict(gpu=gpu, offer=offer, provider=provider, fabric=j["fabric"],
                  days=j.get("days"), days_band=tuple(j["days_band"]) if j.get("days_band")
                  else None, gpu_hours=j.get("gpu_hours"),
                  calibrated=bool(band.get("calibrated")), calibration=band.get("reason") or "",
                  prediction_band_low=float(band.get("low") or 0.0),
                  fits=bool(j.get("fits")))
    costs, ranges = j.get("costs_usd") or {}, j.get("costs_usd_range") or {}
    amort = j.get("costs_amortized_usd") or {}
    out = []
    spot_ok = res.inputs.spot_covers(res.plan.gpus)
    for option in (CLOUD_OPTIONS if offer else ("on_prem",)):
        cost = costs.get(option)
        flag = ("spot capacity not documented at this size"
                if option == "spot" and cost is not None and not spot_ok else "")
        why = "" if cost is not None else (
            f"{offer} lists no {OPTION_LABELS[option]} price" if offer
            else f"no cited purchase price for {gpu}")
        if cost is None and j.get("days") is None:
            why = "no layout runs this scenario on this GPU"
        out.append(CompareRow(
            option=option, cost_usd=cost,
            cost_band_usd=tuple(ranges[option]) if option in ranges else None,
            amortized_usd=amort.get(option),
            usd_per_million_tokens=cost / (s.tokens / 1e6) if cost is not None else None,
            missing=why, flag=flag, **common))
    return out


def compare(s: Scenario, cat: catalog_mod.Catalog | None = None, *, sort: str = "cost",
            by: str = "none", gpus=None) -> Comparison:
    """The run on every GPU with an offer, each offer and each option.

    Parameters
    ----------
    s : Scenario
        The run (its ``gpu`` and ``price_offer`` are set per row; a ``provider`` other than
        "any" keeps that provider's offers only).
    cat : Catalog, optional
    sort : str
        "cost" (cash cost) or "days" (forecast days); a row of a GPU without calibration
        ranks at its band's slow end (``rank_cost_usd``, ``rank_days``); a spot row beyond
        the spot capacity its offer documents (``flag``) after every row that can be taken,
        and options an offer does not list last.
    by : str
        "none" (one list), "gpu" or "provider" (rows grouped by it in the catalog's order,
        sorted within each group; buying the GPUs is the provider-less group).
    gpus : iterable of str, optional
        Only these GPUs (default: every GPU with an offer).

    Returns
    -------
    Comparison
    """
    cat = catalog_mod.default() if cat is None else cat
    v.choice("sort", sort, SORT_KEYS)
    v.choice("by", by, GROUP_KEYS)
    table = offers(cat, gpus)
    if s.provider != "any":
        table = table[table["provider"].str.lower() == s.provider.lower()]
        if table.empty:
            raise v.InputError("provider", f"provider {s.provider} has no offer"
                               + (f" of {', '.join(gpus)}" if gpus is not None else "")
                               + " in the catalog")
    if table.empty:
        raise v.InputError("gpus", "no GPU with an offer in the catalog"
                           + (f" among {', '.join(gpus)}" if gpus is not None else ""))
    rows = []
    for gpu in dict.fromkeys(table["gpu"]):
        for _, o in table[table["gpu"] == gpu].iterrows():
            rows += _rows(s, cat, gpu, str(o["id"]), str(o["provider"]))
        rows += _rows(s, cat, gpu, None, None)
    inf = float("inf")

    def key(r: CompareRow):
        # missing options last; flagged rows (spot beyond its documented capacity) after the
        # rows that can be taken at this size
        figure = r.rank_cost_usd if sort == "cost" else r.rank_days
        return (r.cost_usd is None, bool(r.flag), figure if figure is not None else inf)

    if by == "none":
        ordered = sorted(rows, key=key)
    else:
        groups = list(dict.fromkeys(getattr(r, by) or "" for r in rows))
        ordered = [r for g in groups for r in sorted((x for x in rows
                                                      if (getattr(x, by) or "") == g), key=key)]
    return Comparison(scenario=s, rows=tuple(ordered), sort=sort, by=by)
