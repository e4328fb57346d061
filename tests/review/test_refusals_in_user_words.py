"""Utilization a reviewer can read, and refusals only for what the user set.

Peaks from data/gpus.csv (NVIDIA datasheets, dense): H100 SXM 989.4 BF16 / 1,978.9 FP8
TFLOP/s; GB300 2,500 BF16 / 5,000 FP8 (MXFP8 runs at the FP8 rate).
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from llmcost import _validate as v
from llmcost import catalog
from llmcost.cli import main
from llmcost.review import evaluate, headline_items
from llmcost.review.stages import PhysicalBoundError, precision_utilization
from llmcost.scenario import Scenario

CAT = catalog.default()
GB300_MXFP8 = "model=gpt3-175b&gpu=gb300&precision=mxfp8&global_batch_tokens=1e9&gpus=1024"


def review(query):
    s, warnings = Scenario.from_query(query, CAT, strict=True)
    return evaluate(s, CAT), warnings


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_precision_utilization_is_stated_against_the_precision_peak():
    h100 = CAT.gpu("h100-sxm")
    # 40% of the BF16 peak in an FP8 run is 989.4 x 0.4 / 1978.9 = 20.0% of the FP8 peak
    mfu_p, hfu_p = precision_utilization(0.40, 0.50, h100, "fp8")
    assert mfu_p == pytest.approx(0.40 * 989.4 / 1978.9, rel=1e-9)
    assert hfu_p == pytest.approx(0.50 * 989.4 / 1978.9, rel=1e-9)
    assert precision_utilization(0.40, 0.50, h100, "bf16") == (0.40, 0.50)
    # 2.1 x the BF16 peak is 105% of the FP8 peak: no GPU does that, the model is wrong
    with pytest.raises(PhysicalBoundError, match="HFU 105.0% of h100-sxm's dense FP8 peak"):
        precision_utilization(0.9, 2.1, h100, "fp8")
    # a ValueError: the command line prints it as its one error line
    assert issubclass(PhysicalBoundError, ValueError)


def test_an_mxfp8_run_above_100_percent_of_bf16_is_half_that_of_its_peak():
    r, _ = review(GB300_MXFP8)
    p = r.predict
    assert p.mfu > 1.0                          # the 104.7%: possible with MXFP8
    assert p.mfu_precision == pytest.approx(p.mfu * 2500 / 5000, rel=1e-12) and p.mfu_precision <= 1
    assert p.hfu_precision == pytest.approx(p.hfu * 2500 / 5000, rel=1e-12) and p.hfu_precision <= 1
    j = r.to_json()
    assert j["mfu_precision"] == p.mfu_precision and j["hfu_precision"] == p.hfu_precision
    assert j["precision"] == "mxfp8"
    _, text, _ = headline_items(r, ["mfu"])["mfu"]
    assert "of the dense BF16 peak" in text and "of the dense MXFP8 peak" in text
    assert f"{p.mfu_precision:.1%}" in text
    code, out, _ = cli("review", "--query", GB300_MXFP8)
    assert code == 0 and f"{p.mfu_precision:.1%} of the dense MXFP8 peak" in out


def test_a_bf16_run_states_one_utilization():
    r, _ = review("model=llama3-8b&gpus=64")
    assert r.predict.mfu_precision == r.predict.mfu and r.predict.hfu_precision == r.predict.hfu
    _, text, _ = headline_items(r, ["mfu"])["mfu"]
    assert "peak" not in text


def test_the_default_observed_spot_saving_never_refuses_a_scenario():
    # 25% off and 48 preemptions a day, each with a restart: spot saves 9.5%, and no lost
    # hours give the default 22%; the user never entered that figure, so the goal-seek is
    # left out instead of refusing the review
    q = "model=llama3-8b&gpus=64&preemptions_per_day=48&spot_discount=0.25"
    r, _ = review(q)
    assert r.economics.spot.net_savings < 0.22 and r.economics.spot.implied_lost_hours is None
    # entered, the same figure is refused, naming it
    with pytest.raises(v.InputError) as e:
        review(q + "&observed_net_savings=0.23")
    assert e.value.param == "observed_net_savings"


@pytest.mark.parametrize("query, key", [
    ("mtbf_h=0.000001", "mtbf_h"),
    ("checkpoint_mode=async&local_write_gb_per_s=1e-300", "local_write_gb_per_s"),
    ("gpus=64&data_tier_read_gb_per_s=5e-324", "data_tier_read_gb_per_s"),
    ("storage_gb_per_s_per_node=5e-324", "storage_gb_per_s_per_node"),
    ("on_demand_usd_per_gpu_hour=5e-324", "on_demand_usd_per_gpu_hour"),
])
def test_an_arithmetic_edge_is_refused_naming_the_setting_that_caused_it(query, key):
    with pytest.raises(v.InputError) as e:
        review(query)
    assert e.value.param == key and f"{key}=" in str(e.value)
    for internal in ("run_hours", "failure_share", "checkpoint_s ", "arithmetic out of range"):
        assert internal not in str(e.value)
    code, out, err = cli("review", "--json", "--query", query)
    assert code == 2 and out == "" and key in err and err.count("\n") == 1


def test_an_unknown_link_key_is_a_warning_and_exit_0():
    code, out, err = cli("review", "--json", "--query", "model=llama3-8b&gpus=64&bogus=1")
    assert code == 0 and err == ""
    assert "unknown setting 'bogus' ignored" in json.loads(out)["warnings"]


def test_a_tiny_value_survives_the_link_round_trip():
    s = Scenario(utilization=5e-324, discount_rate=2.3e-225)
    assert Scenario.from_query(s.to_query(), CAT, strict=True)[0] == s
    # and a discount rate too small to discount anything is the undiscounted case
    r0, _ = review("model=llama3-8b&gpus=64")
    r1, _ = review("model=llama3-8b&gpus=64&discount_rate=2.3e-225")
    assert r1.economics.costs_usd == pytest.approx(r0.economics.costs_usd, rel=1e-12)


def test_evaluate_names_its_argument_when_given_the_pair_from_query():
    # Scenario.from_query returns (scenario, warnings); passing the pair to evaluate used to
    # end in "TypeError: unhashable type: 'list'" from the review's cache
    pair = Scenario.from_query("model=llama3-8b&gpus=64", CAT)
    with pytest.raises(v.InputError, match=r"s must be a Scenario, got tuple .*first item") as e:
        evaluate(pair, CAT)
    assert e.value.param == "s"
    with pytest.raises(v.InputError, match="cat must be a Catalog or None, got str"):
        evaluate(pair[0], "default")
