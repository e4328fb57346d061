"""The forecast through the public entry points: the floor (the cluster's best case) and the
forecast (the floor x the realized ratio of comparable published runs), their bands, the
napkin beside, in `llmcost review --json`, its text, the headline and sizing by days."""

import contextlib
import io
import json

import pytest

from llmcost import catalog
from llmcost.cli import main
from llmcost.economics import realized as rz
from llmcost.review import evaluate, headline_items
from llmcost.scenario import Scenario

#: a 13B dense model on 256 H100: a group of its own size class ("<20B")
SMALL = "model=llama2-13b&gpu=h100-sxm&gpus=256&tokens=2e12"


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def review_json(query):
    code, out, err = cli("review", "--query", query, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def small():
    return review_json(SMALL)


def test_the_json_carries_floor_forecast_bands_and_napkin(small):
    r = small
    rr = r["realized_ratio"]
    assert set(rr) >= {"value", "band", "group", "runs", "sources"}
    assert rr["runs"] == len(rr["sources"]) >= rz.MIN_GROUP_RUNS
    # forecast = floor x the group's median ratio; the bands = floor x its spread
    assert r["gpu_hours"] == pytest.approx(r["gpu_hours_floor"] * rr["value"], rel=1e-12)
    assert r["days"] == pytest.approx(r["days_floor"] * rr["value"], rel=1e-12)
    lo, hi = rr["band"]
    assert r["gpu_hours_band"] == [pytest.approx(r["gpu_hours_floor"] * lo, rel=1e-12),
                                   pytest.approx(r["gpu_hours_floor"] * hi, rel=1e-12)]
    assert r["days_band"] == [pytest.approx(r["days_floor"] * lo, rel=1e-12),
                              pytest.approx(r["days_floor"] * hi, rel=1e-12)]
    assert r["days_band"][0] <= r["days"] <= r["days_band"][1]
    # GPU-hours are the days on the cluster, floor and forecast alike
    assert r["gpu_hours_floor"] == pytest.approx(r["days_floor"] * 24 * r["gpus"], rel=1e-12)
    # the napkin: 6 N D at 40% of the dense BF16 peak (H100: 989.4 TFLOP/s)
    n = catalog.default().model("llama2-13b").active_params
    assert r["napkin_gpu_hours"] == pytest.approx(6 * n * 2e12 / (0.4 * 989.4e12) / 3600,
                                                  rel=1e-3)
    # the step model's own band keeps its name; the days range is gone
    assert "prediction_band" in r and "days_range" not in r


def test_the_costs_are_the_forecasts_and_their_range_the_bands(small):
    r = small
    rr = r["realized_ratio"]
    # on-demand bills GPU-hours: its cost is the forecast's hours x the price, and its
    # range the band's
    price = r["prices_usd_per_gpu_hour"]["on_demand"]
    assert r["costs_usd"]["on_demand"] == pytest.approx(
        r["gpu_hours"] / r["gpus"] * r["billed_gpus"] * price, rel=1e-9)
    lo, hi = r["costs_usd_range"]["on_demand"]
    assert lo == pytest.approx(r["costs_usd"]["on_demand"] * rr["band"][0] / rr["value"])
    assert hi == pytest.approx(r["costs_usd"]["on_demand"] * rr["band"][1] / rr["value"])


def test_the_group_is_the_models_and_a_named_stack_narrows_it(small):
    shipped = rz.fitted_runs(catalog.default().realized_runs())
    rr = small["realized_ratio"]
    # no stack named: every stack pooled, dense, under 20B (when it has 3 runs or more)
    assert rr["group"] == "any stack, dense, <20B"
    ids = [s.split(":")[0] for s in rr["sources"]]
    own = shipped[(~shipped["moe"].map(rz._truthy)) & (shipped["params"] < 20e9)]
    assert sorted(ids) == sorted(own["id"])
    assert small["stack"] == "megatron"      # the floor runs the default stack
    named = review_json(SMALL + "&stack=megatron")["realized_ratio"]
    assert named["group"].startswith("megatron")
    assert named["runs"] <= rr["runs"]
    # the floor is the same physics either way
    assert review_json(SMALL + "&stack=megatron")["gpu_hours_floor"] == \
        pytest.approx(small["gpu_hours_floor"], rel=1e-12)


def test_the_text_answer_shows_forecast_band_floor_and_napkin(small):
    code, out, _ = cli("review", "--query", SMALL)
    assert code == 0
    assert "band" in out and "floor" in out and "napkin" in out
    rr = small["realized_ratio"]
    assert f"{rr['runs']} published runs" in out and rr["group"] in out


def test_the_headline_labels_the_band_with_its_group(small):
    s, _ = Scenario.from_query(SMALL, strict=True)
    items = headline_items(evaluate(s), ("days", "realized_ratio"))
    assert items["days"][0] == "Days to train (forecast)"
    assert "floor" in items["days"][1] and "band" in items["days"][1]
    rr = small["realized_ratio"]
    assert items["realized_ratio"][1].startswith(f"x{rr['value']:.2f} over the floor")
    assert f"{rr['runs']} published runs, {rr['group']}" in items["realized_ratio"][1]


@pytest.mark.slow
def test_sizing_by_days_sizes_the_forecast_and_names_the_floors_size():
    q = "model=llama2-13b&gpu=h100-sxm&tokens=2e12&sizing=days&target_days=20"
    r = review_json(q)
    assert r["meets_target"] is True
    # the forecast (with the schedule headroom) meets the target; the floor needs no more
    assert r["days"] * (1 + Scenario().headroom) <= 20 * (1 + 1e-9)
    assert r["gpus_floor"] is not None and r["gpus_floor"] <= r["gpus"]
    code, out, _ = cli("size", "--model", "llama2-13b", "--tokens", "2e12", "--days", "20",
                       "--gpu", "h100-sxm", "--json")
    size = json.loads(out)
    assert (size["gpus"], size["gpus_floor"]) == (r["gpus"], r["gpus_floor"])
    # one sizing pass: at each size the forecast's days are the floor's x the ratio; the
    # floor's size is the first whose floor meets the target, the forecast's the first whose
    # forecast does
    s, _ = Scenario.from_query(q, strict=True)
    t = evaluate(s).size.sizing.table.set_index("gpus")
    ratio = r["realized_ratio"]["value"]
    assert (t["days"] / t["days_floor"]).dropna().to_numpy() == pytest.approx(ratio, rel=1e-12)
    ok = t["fits"] & t["within_power"]
    assert t.index[ok & (t["days_floor"] <= 20)][0] == r["gpus_floor"]
    assert t.index[ok & (t["days"] <= 20)][0] == r["gpus"]
