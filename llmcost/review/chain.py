"""The review chain: named stages run in order, each replaceable, results cached by the
frozen Scenario so apps and plots never recompute."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from .. import catalog as catalog_mod
from ..scenario import Scenario
from . import stages
from .results import Results


@dataclass(frozen=True)
class ReviewChain:
    """size -> plan -> predict -> reliability -> economics, after resolving the inputs.

    Replace a stage by passing another function with the same signature, e.g.
    ``ReviewChain(reliability=my_reliability).run(scenario)``.
    """

    resolve: Callable = stages.resolve
    size: Callable = stages.size
    plan: Callable = stages.plan
    predict: Callable = stages.predict
    reliability: Callable = stages.reliability
    economics: Callable = stages.economics
    checks: Callable = stages.flags_and_warnings

    def run(self, s: Scenario, cat: catalog_mod.Catalog | None = None) -> Results:
        cat = catalog_mod.default() if cat is None else cat
        inp = self.resolve(s, cat)
        sized = self.size(inp)                 # None unless sizing by days
        pl = self.plan(inp, sized)
        pr = self.predict(inp, pl)             # None when no layout splits the batch
        r = self.reliability(inp, pl)
        e = self.economics(inp, pl, pr, r)
        warnings, flags = self.checks(inp, sized, pl, pr, r, e)
        return Results(s, inp, sized, pl, pr, r, e, _dedupe(warnings), flags)


def _dedupe(items):
    return list(OrderedDict.fromkeys(items))


DEFAULT_CHAIN = ReviewChain()
_CACHE: "OrderedDict[tuple, Results]" = OrderedDict()
_CACHE_SIZE = 64


def evaluate(s: Scenario, cat: catalog_mod.Catalog | None = None) -> Results:
    """All figures of a review for one Scenario (cached: the same Scenario and catalog give
    the same Results object, so every view of a figure reads one computation)."""
    cat = catalog_mod.default() if cat is None else cat
    key = (s, id(cat))
    hit = _CACHE.get(key)
    if hit is not None and hit.inputs.catalog is cat:
        _CACHE.move_to_end(key)
        return hit
    res = DEFAULT_CHAIN.run(s, cat)
    _CACHE[key] = res
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return res
