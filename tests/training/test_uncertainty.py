"""The step model's uncertainty band, from its measured errors, through days and dollars."""

import pytest

from llmcost import catalog
from llmcost.review import evaluate
from llmcost.scenario import Scenario
from llmcost.training.uncertainty import ENVELOPE_BAND, throughput_band

ERRORS = catalog.default().step_model_errors()


def _max_error(generation, precision):
    """The group's largest held-out error as make validate FIT=1 WRITE=1 wrote it."""
    r = ERRORS[(ERRORS["generation"] == generation) & (ERRORS["precision"] == precision)]
    assert len(r) == 1 and r["method"].iloc[0] == "leave-one-group-out"
    return float(r["max_abs_error"].iloc[0])


def test_band_is_the_validated_error_of_the_group():
    # A100 BF16: Table 1, each row predicted with the constants refit without it
    e = _max_error("ampere", "bf16")
    assert 0.03 < e < 0.15
    b = throughput_band("ampere", "bf16", 0.45, ERRORS)
    assert b.calibrated and b.low == b.high == pytest.approx(e)
    # H100 BF16: Llama 3 Table 4 held out
    e_h = _max_error("hopper", "bf16")
    assert throughput_band("hopper", "bf16", 0.40, ERRORS).high == pytest.approx(e_h)
    # no validated row: the least-calibrated group's band (the largest held-out error of
    # any dense group, never below the envelope), flagged
    worst = max(_max_error(g, p) for g, p in zip(ERRORS["generation"], ERRORS["precision"])
                if g != "moe")
    b = throughput_band("blackwell", "bf16", 0.40, ERRORS)
    assert not b.calibrated and b.high == b.low == pytest.approx(max(worst, ENVELOPE_BAND))
    assert "least-calibrated" in b.reason
    # above every published large run: outside the envelope, never narrower than the group
    b = throughput_band("hopper", "bf16", 0.65, ERRORS)
    assert not b.calibrated and b.high == pytest.approx(max(e_h, ENVELOPE_BAND))


def test_band_is_the_step_models_and_the_dollars_carry_the_forecasts():
    r = evaluate(Scenario(gpu="a100-40gb", fabric="ib-hdr", model="llama2-70b", gpus=1024))
    assert r.predict.mfu < 0.578          # inside the published envelope
    e, f = r.economics, r.forecast
    # the step model's band: tokens/s within +-e, the error on published step times
    err = _max_error("ampere", "bf16")
    assert (e.band.low, e.band.high) == (pytest.approx(err), pytest.approx(err))
    lo, hi = e.band.days_range(f.floor_days)
    assert lo == pytest.approx(f.floor_days / (1 + err))
    assert hi == pytest.approx(f.floor_days / (1 - err))
    # the dollars' range is the forecast's (the realized ratios' band): on-demand bills
    # hours, so its cost scales with the days exactly
    r_lo, r_hi = f.realized.band
    c_lo, c_hi = e.costs_usd_range["on_demand"]
    assert c_lo == pytest.approx(e.costs_usd["on_demand"] * r_lo / f.realized.value)
    assert c_hi == pytest.approx(e.costs_usd["on_demand"] * r_hi / f.realized.value)
    assert "days" not in r.flags          # calibrated: no flag


def test_an_unseen_generation_is_flagged_with_its_band():
    r = evaluate(Scenario(gpu="b200", fabric="ib-xdr", price_source="custom"))
    assert r.flags["days"].level in ("uncalibrated", "implausible")
    b = r.economics.band
    lo, hi = b.days_range(r.forecast.floor_days)
    e = b.low
    assert e == pytest.approx(max(max(ERRORS[ERRORS["generation"] != "moe"]["max_abs_error"]),
                                  ENVELOPE_BAND))
    assert hi / lo == pytest.approx((1 + e) / (1 - e))
    assert any("step model" in w for w in r.warnings)
