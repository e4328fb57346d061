"""Property: every in-bounds scenario is answered or refused in the user's words.

Random scenarios inside the Scenario's own field bounds (``llmcost.scenario.FIELDS``
metadata: the ranges the apps' controls and links accept), over every model x GPU x precision
the GPU runs x sizing mode x checkpoint mode, go through ``evaluate`` and through
``llmcost.cli.main(["review", ...])``. Either the review answers, with MFU and HFU against the
dense peak of the precision used at most 1 (no FLOP runs faster than that peak), or it refuses
with an InputError that names a setting the scenario set: never a default the user did not
touch, an internal quantity, or a traceback.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import math

import numpy as np
import pytest
from budget import FULL

from llmcost import _validate as v
from llmcost import catalog
from llmcost.cli import main
from llmcost.review import evaluate
from llmcost.scenario import CUSTOM_MODE, FIELDS, Scenario
from llmcost.training.precision import check_precision

CAT = catalog.default()
#: scenarios drawn at full budget (make test-grid; make test draws MAKE_TEST_SCENARIOS of them,
#: ~0.13 s each); sizing by days runs the sizing search (~2.6 s each), so one draw in
#: DAYS_EVERY sizes by days
N_SCENARIOS = 2000
#: the draws make test takes (about 0.3 s each with the sizing ones): a fixed budget that keeps
#: make test within 15 minutes; make test-grid draws all N_SCENARIOS
MAKE_TEST_SCENARIOS = 150
DAYS_EVERY = 50
#: ids and modes set by the draw itself; the rest are drawn from their bounds
CHOSEN = {"model", "gpu", "precision", "sizing", "checkpoint_mode", "model_config", "fabric",
          "price_offer", "failure_rate"}
DRAWN = [n for n, f in FIELDS.items()
         if n not in CHOSEN and f.metadata["kind"] in ("float", "int", "options")]


def _number(rng, md):
    """A value inside a field's bounds: its ends (open ends approached), values within a
    hair of zero, or log-uniform over the range."""
    lo, hi = md["lo"], md["hi"]
    r = rng.random()
    if r < 0.1:
        x = lo if not md["lo_open"] else (5e-324 if lo == 0 else lo * (1 + 1e-9))
    elif r < 0.2:
        x = hi if not md["hi_open"] else hi * (1 - 1e-9)
    elif r < 0.3 and lo == 0:
        x = hi * 10 ** rng.uniform(-300, -3)
    else:
        a = lo if lo > 0 else hi * 1e-9
        x = float(np.exp(rng.uniform(math.log(a), math.log(hi))))
    if md["kind"] == "int":
        x = min(max(int(round(x)), int(math.ceil(lo))), int(hi))
    return x


def _combos():
    """Every model x GPU x precision the GPU runs, in a seeded shuffled order."""
    out = []
    for m, g in itertools.product(CAT.ids("models"), CAT.ids("gpus")):
        for p in ("bf16", "fp8", "mxfp8"):
            try:
                check_precision(p, CAT.gpu(g))
            except v.InputError:
                continue
            out.append((m, g, p))
    return out


def draws(n, seed=30):
    """``n`` link mappings: the combos in turn, a random checkpoint mode, sizing by days every
    :data:`DAYS_EVERY`-th, and 0-5 other settings drawn inside their bounds."""
    rng = np.random.default_rng(seed)
    combos = _combos()
    order = rng.permutation(len(combos))
    for i in range(n):
        m, g, p = combos[order[i % len(combos)]]
        d = {"model": m, "gpu": g, "precision": p,
             "sizing": "days" if i % DAYS_EVERY == DAYS_EVERY - 1 else "gpus",
             "checkpoint_mode": ("sync", "async")[int(rng.integers(2))]}
        for name in rng.choice(DRAWN, size=int(rng.integers(0, 6)), replace=False):
            md = FIELDS[str(name)].metadata
            d[str(name)] = (_number(rng, md) if md["kind"] in ("float", "int")
                            else md["options"][int(rng.integers(len(md["options"])))])
        yield d


def set_keys(d: dict) -> set:
    """The settings a link with these keys sets: its keys and the modes they imply."""
    return set(d) | {CUSTOM_MODE[k][0] for k in d if k in CUSTOM_MODE}


def _cli(query):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["review", "--json", "--query", query])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.slow
def test_the_draws_cover_every_combination():
    combos = _combos()
    seen = {(d["model"], d["gpu"], d["precision"]) for d in draws(N_SCENARIOS)}
    assert N_SCENARIOS >= len(combos) and seen == set(combos)
    modes = {(d["sizing"], d["checkpoint_mode"]) for d in draws(N_SCENARIOS)}
    assert modes == {(a, b) for a in ("gpus", "days") for b in ("sync", "async")}


@pytest.mark.slow
@pytest.mark.sampled
def test_every_in_bounds_scenario_is_answered_or_refused_by_a_setting_it_set():
    answered = refused = 0
    n = N_SCENARIOS if FULL else MAKE_TEST_SCENARIOS
    for d in draws(n):
        s, _ = Scenario.from_mapping(d, CAT, strict=True)
        try:
            r = evaluate(s, CAT)
        except v.InputError as e:
            refused += 1
            assert e.param in set_keys(d), (e.param, str(e), d)
            code, _, err = _cli(s.to_query())
            assert code == 2 and e.param in err, (err, d)
            continue
        answered += 1
        p = r.predict
        if p is not None:
            assert p.mfu_precision <= 1 and p.hfu_precision <= 1, d
            # the BF16-peak figure is the precision one times the peaks' ratio (2 for FP8)
            ratio = CAT.gpu(d["gpu"]).peak_tflops(d["precision"]) / CAT.gpu(d["gpu"]).peak_tflops()
            assert p.mfu == pytest.approx(p.mfu_precision * ratio, rel=1e-12)
        code, out, err = _cli(s.to_query())
        assert code == 0, (err, d)
        j = json.loads(out)
        for k in ("mfu_precision", "hfu_precision"):
            assert j[k] is None or j[k] <= 1, (k, j[k], d)
    # both paths were exercised, and most in-bounds scenarios are answered
    assert answered > 0.8 * n and refused > 0, (answered, refused)
