"""The whole review over scenarios: invariants a reviewer relies on, through the public entry
points. ``make test`` runs them on the covering points (tests/points.py: every family, GPU
generation, stack and sizing mode, every pair of generation, stack and sizing mode);
``make test-grid`` on the whole grid: every catalog model x GPU x sizing mode, with the
checkpoint mode and the price source alternating so that every pair of levels meets."""

import functools
import itertools
import json
import math

import numpy as np
import pytest
from points import GPUS, MODELS, POINTS, grid

from llmcost import catalog
from llmcost.cli import main
from llmcost.review import evaluate, tco_series
from llmcost.scenario import Scenario

# whole reviews and app builds: make test, not the fast loop
pytestmark = pytest.mark.slow

CAT = catalog.default()
HOURS_PER_YEAR = 8760


@functools.cache
def grid_scenarios() -> tuple:
    """The whole grid, built when a grid test runs (about a second: not at every collection)."""
    return tuple(grid())


#: the scenario sets: the covering points in make test, the whole grid in make test-grid
SETS = {"points": lambda: POINTS, "grid": lambda: list(grid_scenarios())}


def numbers(obj):
    if isinstance(obj, dict):
        for x in obj.values():
            yield from numbers(x)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from numbers(x)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield obj


def thinned(seq, step):
    """Every ``step``-th scenario of the whole grid; each of the covering points."""
    return seq[::step] if len(seq) > len(POINTS) else seq


@pytest.fixture(scope="module", params=["points", pytest.param("grid", marks=pytest.mark.grid)])
def scenarios(request):
    return SETS[request.param]()


@pytest.fixture(scope="module")
def results(scenarios):
    return [evaluate(s) for s in scenarios]


@pytest.mark.grid
def test_grid_size():
    # every model x GPU x sizing mode; checkpoint mode, price source and precision alternate
    grid_ = grid_scenarios()
    assert len(grid_) == len(MODELS) * len(GPUS) * 2 >= 400
    levels = {(s.checkpoint_mode, s.price_source, s.sizing) for s in grid_}
    assert len(levels) == 8
    assert {s.precision for s in grid_} == {"bf16", "fp8", "mxfp8"}


def test_every_figure_is_finite_and_non_negative(results):
    for r in results:
        j = r.to_json()
        json.dumps(j, allow_nan=False)                       # no NaN, no infinity
        for x in numbers({k: v for k, v in j.items() if k != "scenario"}):
            assert math.isfinite(x) and x >= 0, (r.scenario, x)


def test_fits_and_flags_agree(results):
    for r in results:
        if not r.headline["fits"]:
            assert "days" in r.flags or "fits" in r.flags
        if r.predict is not None:
            assert 0 < r.reliability.goodput <= 1
            assert r.economics.effective_utilization <= r.predict.mfu + 1e-12
            assert 0 < r.predict.mfu


def test_the_band_brackets_the_point(results):
    for r in results:
        e, f = r.economics, r.forecast
        if e.days is None:
            continue
        # the forecast is the floor x the group's median ratio, inside its prediction band
        assert e.days == pytest.approx(f.floor_days * f.realized.value, rel=1e-12)
        # the floor: the tokens at the predicted throughput over the useful share, in days
        d = r.scenario.tokens / r.predict.tokens_per_s / f.useful_share / 86400
        assert f.floor_days == pytest.approx(d, rel=1e-12)
        lo, hi = f.days_band
        assert lo <= e.days <= hi
        for k, (c_lo, c_hi) in e.costs_usd_range.items():
            assert c_lo <= e.costs_usd[k] * (1 + 1e-12) and e.costs_usd[k] <= c_hi * (1 + 1e-12)


def test_reserved_never_below_its_commitment(results):
    for r in results:
        e, p = r.economics, r.economics.prices
        for k, years in (("reserved_1y", 1), ("reserved_3y", 3)):
            if k in e.costs_usd:
                price = getattr(p, k)
                floor = years * HOURS_PER_YEAR * e.billed_gpus * price
                assert e.costs_usd[k] >= floor * (1 - 1e-12), r.scenario
                assert e.costs_usd[k] >= e.costs_amortized_usd[k] * r.scenario.utilization * (1 - 1e-9)


def test_spot_cost_is_on_demand_less_the_net_savings(results):
    for r in results:
        e = r.economics
        if "spot" in e.costs_usd:
            assert e.costs_usd["spot"] == pytest.approx(
                e.costs_usd["on_demand"] * (1 - e.spot.net_savings), rel=1e-9)


def test_renting_beats_buying_below_the_breakeven_horizon(results):
    for r in thinned(results, 7):
        be = r.economics.breakeven_months
        if be is None:
            continue
        df = tco_series(r)
        before = df[df["months"] < be * 0.98]
        after = df[df["months"] > be * 1.02]
        assert (before["on_demand"] <= before["on_prem"]).all(), r.scenario
        assert (after["on_demand"] >= after["on_prem"]).all(), r.scenario


def test_days_mode_meets_its_target_when_it_says_so(results):
    for r in results:
        if r.size is not None and r.size.meets_target:
            assert r.economics.days * (1 + r.scenario.headroom) <= r.scenario.target_days * 1.02


def test_costs_rise_with_tokens(scenarios):
    for s in thinned(scenarios, 37):
        if s.sizing == "days":
            continue
        # at the same global batch (the batch rule would choose a larger one for the larger run):
        # the one the review ran, the rule's or the one that fills the GPUs
        ra = evaluate(s)
        a = ra.economics
        ran = ra.plan.global_batch * ra.inputs.model.seq_len
        b = evaluate(Scenario(**{**s.to_dict(), "tokens": s.tokens * 2, "batch": "custom",
                                 "global_batch_tokens": ran})).economics
        if a.days is None:
            continue
        assert b.days == pytest.approx(2 * a.days, rel=1e-9)
        # with the batch rule's own (larger or equal) batch the longer run still takes longer
        assert evaluate(Scenario(**{**s.to_dict(), "tokens": s.tokens * 2})).economics.days > a.days
        for k in a.costs_usd:
            assert b.costs_usd[k] >= a.costs_usd[k] * (1 - 1e-12), (s, k)
        if "on_demand" in a.costs_usd:
            assert b.costs_usd["on_demand"] == pytest.approx(2 * a.costs_usd["on_demand"])


def test_cli_review_gives_the_same_numbers(capsys, scenarios):
    for s in thinned(scenarios, 53):
        code = main(["review", "--query", s.to_query(), "--json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        j = json.loads(out)
        ref = evaluate(s).to_json()
        for k in ("days", "gpus", "mfu", "costs_usd", "goodput", "job_mtbf_h",
                  "checkpoint_interval_s", "spot_net_savings", "breakeven_months"):
            assert j[k] == ref[k], (s, k)


def _one_per_generation():
    """Every GPU; make test runs the first of each generation, make test-grid the rest."""
    seen = set()
    for i, gpu in enumerate(GPUS):
        gen = CAT.gpu(gpu).generation
        yield pytest.param(i, gpu, marks=() if gen not in seen else pytest.mark.grid, id=gpu)
        seen.add(gen)


@pytest.mark.parametrize("i,gpu", list(_one_per_generation()))
def test_sizing_curve_by_gpus_passes_through_the_review_on_every_gpu(i, gpu):
    # sized by GPUs, the sizing app's days-vs-GPUs curve comes from the same scenario sized
    # by days (another chain run): on every GPU (models rotating) it exists and, at the
    # review's own size, is the review's days to train
    from llmcost import plots
    from llmcost.review.series import sizing_series
    s = Scenario(model=MODELS[(3 * i) % len(MODELS)], gpu=gpu, gpus=512)
    r = evaluate(s)
    t = sizing_series(r)
    assert r.size is None and t["on_scale"].sum() > 0
    assert t.loc[t["gpus"] == 512, "days"].tolist() == [pytest.approx(r.headline["days"], rel=1e-9)]
    lo, hi = plots.sizing_curve(r).layout.yaxis.range
    assert math.isfinite(lo) and math.isfinite(hi)
