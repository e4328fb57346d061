"""The review chain: named stages run in order, each replaceable, results cached by the
frozen Scenario so apps and plots never recompute."""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, fields, replace
from typing import Callable

import numpy as np

from .. import _validate as v
from .. import catalog as catalog_mod
from ..scenario import FIELDS, Scenario
from . import stages
from .forecast import forecast as forecast_stage
from .results import Results


@dataclass(frozen=True)
class ReviewChain:
    """size -> plan -> predict -> reliability -> forecast -> economics, after resolving the
    inputs.

    Replace a stage by passing another function with the same signature, e.g.
    ``ReviewChain(reliability=my_reliability).run(scenario)``.
    """

    resolve: Callable = stages.resolve
    size: Callable = stages.size
    plan: Callable = stages.plan
    predict: Callable = stages.predict
    reliability: Callable = stages.reliability
    forecast: Callable = forecast_stage
    economics: Callable = stages.economics
    checks: Callable = stages.flags_and_warnings

    def run(self, s: Scenario, cat: catalog_mod.Catalog | None = None) -> Results:
        """The chain's results; an arithmetic edge (a zero, an infinity, an overflow) or a check
        on a setting the scenario left at its default is refused as an InputError naming the
        setting the scenario changed that causes it (:func:`attribute`)."""
        cat = catalog_mod.default() if cat is None else cat
        # an overflow or a division by zero is an edge to name, not a warning and an inf
        with np.errstate(over="raise", divide="raise", invalid="raise"):
            try:
                return self._run(s, cat)
            except Exception as e:
                if not is_edge(s, e):
                    raise
                raise attribute(self, s, cat, e) from None

    def _run(self, s: Scenario, cat: catalog_mod.Catalog) -> Results:
        inp = self.resolve(s, cat)
        sized = self.size(inp)                 # None unless sizing by days
        pl = self.plan(inp, sized)
        pr = self.predict(inp, pl)             # None when no layout splits the batch
        r = self.reliability(inp, pl)
        fc = self.forecast(inp, pl, pr, r)
        e = self.economics(inp, pl, pr, r, fc)
        warnings, flags = self.checks(inp, sized, pl, pr, r, e)
        res = Results(scenario=s, inputs=inp, size=sized, plan=pl, predict=pr, reliability=r,
                      economics=e, forecast=fc, warnings=_dedupe(warnings), flags=flags)
        _check_finite(res.headline)
        return res


class NonFiniteResult(ArithmeticError):
    """A headline figure came out infinite or NaN: an arithmetic edge, attributed like one."""


def _check_finite(figures: dict) -> None:
    for k, x in figures.items():
        if isinstance(x, (float, int)) and not isinstance(x, bool) and not math.isfinite(x):
            raise NonFiniteResult(f"the {k} figure is {x}")


#: internal quantities whose checks fire at arithmetic edges, in the words a user reads
_EDGE_WORDS = {
    "failure_share": "failures, restarts and checkpoints would take all of the run's time",
    "checkpoint_share": "checkpoints would take all of the run's time",
    "goodput": "failures, restarts and checkpoints would take all of the run's time",
    "run_hours": "the run would never finish",
    "checkpoint_s": "a checkpoint would never finish",
    "spot": "the spot price comes out as zero",
}


def is_edge(s: Scenario, e: Exception) -> bool:
    """Whether an error of the chain is not about a value the scenario gave: an arithmetic
    error, or an InputError naming an internal quantity or a setting left at its default."""
    if isinstance(e, ArithmeticError):
        return True
    if isinstance(e, v.InputError):
        f = FIELDS.get(e.param)
        return f is None or getattr(s, e.param) == f.default
    return False


def _distance(s: Scenario, name: str) -> float:
    """How far a changed setting is from its default, in decades (choices: 0)."""
    x, d = getattr(s, name), FIELDS[name].default
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return abs(math.log10(abs(x) + 1e-300) - math.log10(abs(d) + 1e-300))
    return 0.0


def attribute(chain: "ReviewChain", s: Scenario, cat, e: Exception) -> v.InputError:
    """The InputError for an arithmetic edge ``e``: the first setting the scenario changed
    (farthest from its default first) whose default makes the chain run, named with its value
    and what went out of range. Settings are tried one at a time, so only an error path pays."""
    changed = [f.name for f in fields(Scenario) if getattr(s, f.name) != f.default]
    changed.sort(key=lambda n: -_distance(s, n))
    cause = _EDGE_WORDS.get(getattr(e, "param", None)) or (
        "the figures that follow from it divide by zero or overflow"
        if isinstance(e, ArithmeticError) else str(e))
    for name in changed:
        default = FIELDS[name].default
        try:
            chain._run(replace(s, **{name: default}), cat)
        except Exception:       # noqa: BLE001 - still failing: not this setting alone
            continue
        x = getattr(s, name)
        label = FIELDS[name].metadata.get("label", name)
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            md = FIELDS[name].metadata
            # a default of 0 means "from the model": compare with the range's middle instead
            mid = default or math.sqrt(max(md["lo"] or 0.0, md["hi"] * 1e-9) * md["hi"])
            size = "small" if x < mid else "large"
            return v.InputError(name, f"{label} ({name}={x:.6g}) is too {size} for this run: "
                                      f"{cause}")
        return v.InputError(name, f"{label} ({name}={x}) cannot be reviewed with the other "
                                  f"settings: {cause}")
    if not changed:
        return e if isinstance(e, v.InputError) else v.InputError("scenario", cause)
    names = ", ".join(f"{n}={getattr(s, n)}" for n in changed[:6])
    return v.InputError(changed[0], f"these settings together take the review out of range "
                                    f"({names}): {cause}")


def _dedupe(items):
    return list(OrderedDict.fromkeys(items))


DEFAULT_CHAIN = ReviewChain()
_CACHE: "OrderedDict[tuple, Results]" = OrderedDict()
_CACHE_SIZE = 64


def resolved_key(s: Scenario, cat: catalog_mod.Catalog) -> Scenario:
    """The scenario as the chain resolves it: a GPU, model or fabric alias as its catalog id,
    ``fabric="auto"`` as the fabric it stands for when no price offer names one, a sequence
    length equal to the catalog model's as the model's own. Two scenarios with one key give
    the same figures, so they share one run of the chain (``llmcost size --gpu h100`` and the
    review of ``gpu=h100-sxm``). A scenario whose ids do not resolve is its own key: the
    chain refuses it in its own words."""
    try:
        g = cat.gpu(s.gpu)
        kw: dict = {"gpu": g.id}
        if s.model != "config":
            m = cat.model(s.model)
            kw["model"] = m.id
            if s.seq_len == m.seq_len:
                kw["seq_len"] = 0
        if s.fabric == "auto":
            if stages.offer_fabric_of(s, cat, g) is None:
                kw["fabric"] = cat.fabric(g.scale_out_id("auto")).id
        elif s.fabric != "custom":
            kw["fabric"] = cat.fabric(s.fabric).id
    except v.InputError:
        return s
    return replace(s, **kw)


def evaluate(s: Scenario, cat: catalog_mod.Catalog | None = None) -> Results:
    """All figures of a review for one Scenario, cached on the resolved inputs
    (:func:`resolved_key`): the same Scenario and catalog give the same Results object, and a
    scenario that resolves alike shares its stages' results, so every view of a figure reads
    one computation."""
    if not isinstance(s, Scenario):
        # Scenario.from_query returns (scenario, warnings): passing the pair is the usual slip
        hint = (" (Scenario.from_query returns (scenario, warnings): pass its first item)"
                if isinstance(s, tuple) and s and isinstance(s[0], Scenario) else "")
        raise v.InputError("s", f"s must be a Scenario, got {type(s).__name__}{hint}")
    if cat is not None and not isinstance(cat, catalog_mod.Catalog):
        raise v.InputError("cat", f"cat must be a Catalog or None, got {type(cat).__name__}")
    cat = catalog_mod.default() if cat is None else cat
    own = _cached(("scenario", s, id(cat)), cat)
    if own is not None:
        return own
    # its own namespace: a scenario already canonical equals another's key, not its Results
    key = ("resolved", resolved_key(s, cat), id(cat))
    hit = _cached(key, cat)
    if hit is None:
        hit = DEFAULT_CHAIN.run(s, cat)
        _store(key, hit)
    res = hit if hit.scenario == s else hit.for_scenario(s)
    _store(("scenario", s, id(cat)), res)
    return res


def _cached(key: tuple, cat: catalog_mod.Catalog) -> Results | None:
    hit = _CACHE.get(key)
    if hit is None or hit.inputs.catalog is not cat:
        return None
    _CACHE.move_to_end(key)
    return hit


def _store(key: tuple, res: Results) -> None:
    _CACHE[key] = res
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
