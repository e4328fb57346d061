"""The step model's uncertainty band, from its measured errors, through days and dollars."""

import pytest

from llmcost import catalog
from llmcost.review import evaluate
from llmcost.scenario import Scenario
from llmcost.training.uncertainty import ENVELOPE_BAND, throughput_band

ERRORS = catalog.default().step_model_errors()


def test_band_is_the_validated_error_of_the_group():
    # A100 BF16: Table 1 with the default constants, largest error 6.6%
    b = throughput_band("ampere", "bf16", 0.45, ERRORS)
    assert b.calibrated and b.low == b.high == pytest.approx(0.066)
    # H100 BF16: Llama 3 Table 4, worst row -43%
    assert throughput_band("hopper", "bf16", 0.40, ERRORS).high == pytest.approx(0.428)
    # no validated row: the envelope, flagged
    b = throughput_band("blackwell", "bf16", 0.40, ERRORS)
    assert not b.calibrated and b.high == ENVELOPE_BAND
    # above every published large run: outside the envelope, never narrower than the group
    b = throughput_band("hopper", "bf16", 0.65, ERRORS)
    assert not b.calibrated and b.high == pytest.approx(0.428)


def test_band_carries_to_days_and_dollars():
    r = evaluate(Scenario(gpu="a100-40gb", fabric="ib-hdr", model="llama2-70b", gpus=1024))
    assert r.predict.mfu < 0.578          # inside the published envelope
    e = r.economics
    lo, hi = e.days_range
    # tokens/s within +-6.6%: days / 1.066 to days / 0.934
    assert lo == pytest.approx(e.days / 1.066) and hi == pytest.approx(e.days / 0.934)
    # on-demand bills hours: its cost scales with the days exactly
    c_lo, c_hi = e.costs_usd_range["on_demand"]
    assert c_lo == pytest.approx(e.costs_usd["on_demand"] / 1.066)
    assert c_hi == pytest.approx(e.costs_usd["on_demand"] / 0.934)
    assert "days" not in r.flags          # calibrated: no flag


def test_an_unseen_generation_is_flagged_with_its_band():
    r = evaluate(Scenario(gpu="b200", fabric="ib-xdr", price_source="custom"))
    assert r.flags["days"].level in ("uncalibrated", "implausible")
    lo, hi = r.economics.days_range
    assert hi / lo == pytest.approx(1.25 / 0.75)
    assert any("step model" in w for w in r.warnings)
