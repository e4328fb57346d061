"""Each pricing option of a review is this GPU's: the catalog's, entered, or absent with a warning."""

import json
import math

import pytest

from llmcost import catalog
from llmcost.cli import main
from llmcost.review import evaluate
from llmcost.scenario import Scenario

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]

CAT = catalog.default()
OPTIONS = ("on_demand", "reserved_1y", "reserved_3y", "spot")


def review_json(capsys, query):
    assert main(["review", "--query", query, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("gpu", ["b200", "gb200", "h200"])
@pytest.mark.slow
def test_blackwell_and_h200_reviews_have_an_on_demand_dollar_answer(capsys, gpu):
    d = review_json(capsys, f"model=llama3-70b&gpu={gpu}&tokens=15e12&sizing=days&target_days=90")
    row = CAT.lookup("prices", d["price_offer"])
    assert row["gpu"] == gpu
    # the per GPU-hour price is the offer's instance price over the GPUs it bills
    assert d["prices_usd_per_gpu_hour"]["on_demand"] == pytest.approx(
        row["on_demand_usd_per_hour"] / row["gpus"], rel=1e-12)
    assert math.isfinite(d["costs_usd"]["on_demand"]) and d["costs_usd"]["on_demand"] > 0
    for option in ("reserved_1y", "reserved_3y", "spot", "on_prem"):
        if option in d["costs_usd"]:
            assert math.isfinite(d["costs_usd"][option])
        else:
            word = {"reserved_1y": "1-year", "reserved_3y": "3-year", "spot": "spot",
                    "on_prem": "on-premises"}[option]
            assert any(word in w and "not costed" in w for w in d["warnings"]), option


def test_cited_offers_for_the_gpus_people_plan_on():
    p = CAT.prices()
    providers = p.groupby("gpu")["provider"].nunique()
    # at least two providers where prices were found (MI325X: one rental price found)
    for gpu in ("h200", "b200", "gb200", "b300", "mi300x"):
        assert providers[gpu] >= 2, gpu
    assert providers["mi325x"] >= 1
    assert p["source"].str.len().gt(0).all() and p["as_of"].astype(str).str.len().ge(4).all()
    # AWS p6-b200.48xlarge: $113.9328 per instance-hour = $14.24 per B200-hour
    per = catalog.usd_per_gpu_hour(CAT.lookup("prices", "aws-p6-b200"))
    assert per["on_demand"] == pytest.approx(14.24, abs=0.005)
    # CoreWeave GB200 bills 4-GPU nodes: $42.00 / 4 = $10.50 per GPU-hour
    per = catalog.usd_per_gpu_hour(CAT.lookup("prices", "coreweave-gb200-nvl72"))
    assert per["on_demand"] == pytest.approx(10.50)


H800_QUERY = ("model=deepseek-v3&gpu=h800&gpus=2048&tokens=14.8e12&precision=fp8"
              "&price_source=custom&on_demand_usd_per_gpu_hour=2")


def test_custom_on_demand_price_borrows_no_h100_default(capsys):
    d = review_json(capsys, H800_QUERY)
    prices = d["prices_usd_per_gpu_hour"]
    assert prices["on_demand"] == 2.0
    # the H100 defaults of the custom fields: AWS p5 3-year $23.78 / 8, server $250,000 / 8
    defaults = {f: Scenario.__dataclass_fields__[f].default
                for f in ("reserved_3y_usd_per_gpu_hour", "onprem_capex_usd_per_gpu")}
    assert defaults["reserved_3y_usd_per_gpu_hour"] == pytest.approx(23.78 / 8)
    assert "reserved_3y" not in prices and "reserved_1y" not in prices
    assert defaults["reserved_3y_usd_per_gpu_hour"] not in prices.values()
    assert "on_prem" not in d["costs_usd"] and "reserved_3y" not in d["costs_usd"]
    for word in ("1-year reserved", "3-year reserved", "server price"):
        assert any(word in w and "h800" in w for w in d["warnings"]), word
    # spot = the entered on-demand price less the spot discount (the seed's 60%): H800's own
    assert prices["spot"] == pytest.approx(2.0 * (1 - 0.6))


def test_custom_fields_not_entered_are_this_gpus_catalog_figures():
    # H200 priced by the user on demand only: the reservations come from no other GPU; the
    # rule's 1-year is Hyperstack's ($22.32 / 8, the only H200 1-year offer); no H200 offer
    # lists a 3-year price: absent with a warning; AWS p5en named lists no 1-year
    r = evaluate(Scenario(gpu="h200", price_source="custom", on_demand_usd_per_gpu_hour=5.0))
    p = r.inputs.prices
    assert p.on_demand == 5.0 and p.reserved_1y == pytest.approx(22.32 / 8)
    assert p.reserved_3y is None and any("3-year reserved" in w for w in r.warnings)
    r = evaluate(Scenario(gpu="h200", price_source="custom", on_demand_usd_per_gpu_hour=5.0,
                          price_offer="aws-p5en"))
    assert r.inputs.prices.reserved_1y is None
    assert any("1-year reserved" in w for w in r.warnings)
    r = evaluate(Scenario(gpu="h200", price_source="custom", on_demand_usd_per_gpu_hour=5.0,
                          price_offer="hyperstack-h200"))
    assert r.inputs.prices.reserved_1y == pytest.approx(22.32 / 8)
    # H100 left at the defaults: the catalog's figures (the rule's offer per option), the
    # server price of data/gpus.csv
    cat = evaluate(Scenario(gpu="h100-sxm")).inputs
    cus = evaluate(Scenario(gpu="h100-sxm", price_source="custom")).inputs
    assert cus.prices.on_demand == pytest.approx(cat.prices.on_demand)
    assert cus.prices.reserved_3y == pytest.approx(cat.prices.reserved_3y)
    assert cus.onprem.capex_usd_per_gpu == pytest.approx(250_000 / 8)
    # a reservation entered above the on-demand price is kept, with a warning
    r = evaluate(Scenario(gpu="h100-sxm", price_source="custom", on_demand_usd_per_gpu_hour=2.0))
    assert r.inputs.prices.reserved_3y == pytest.approx(23.78 / 8)
    assert any("above the on-demand" in w for w in r.warnings)


def test_catalog_mode_warns_for_each_option_the_offer_lacks():
    r = evaluate(Scenario(gpu="h100-sxm", price_offer="aws-p5"))   # on-demand, spot, 3-year
    assert "reserved_1y" not in r.economics.costs_usd
    assert any("aws-p5" in w and "1-year" in w for w in r.warnings)
    assert not any("aws-p5" in w and "3-year" in w for w in r.warnings)
    # by the rule: no B200 offer lists spot or a 3-year price: both absent, said once each
    r = evaluate(Scenario(gpu="b200"))
    assert not {"spot", "reserved_3y"} & set(r.economics.costs_usd)
    assert any("no offer of b200 lists a spot price" in w for w in r.warnings)


def test_auto_prices_each_option_from_its_cheapest_offer_never_borrowing():
    # per option, the lowest price per GPU-hour among the GPU's offers (kind offer, a
    # scale-out fabric), recomputed here from prices.csv; an option no offer lists is absent
    import pandas as pd

    from llmcost.catalog import PRICE_COLUMNS, PRICE_RULE
    prices = pd.read_csv(ROOT / "data" / "prices.csv")
    offers = prices[(prices["kind"] == "offer") & prices["fabric"].notna()]
    for gpu in sorted(set(offers["gpu"])):
        r = evaluate(Scenario(gpu=gpu, model="llama3-8b", gpus=64, tokens=1e11))
        j = r.to_json()
        assert j["price_rule"] == PRICE_RULE
        mine = offers[offers["gpu"] == gpu]
        for option, col in PRICE_COLUMNS.items():
            per = (mine[col] / mine["gpus"]).where(mine[col] > 0)
            if per.notna().any():
                want = mine.loc[per.idxmin(), "id"]
                assert j["price_offers"][option] == want, (gpu, option)
                if option != "spot":
                    assert j["prices_usd_per_gpu_hour"][option] == pytest.approx(per.min())
            else:
                assert option not in j["price_offers"], (gpu, option)
                assert option not in j["costs_usd"], (gpu, option)
    # a reference price is never picked
    used = {i for g in set(offers["gpu"]) for i in
            evaluate(Scenario(gpu=g, model="llama3-8b", gpus=64, tokens=1e11)).inputs
            .price_offers.values()}
    assert not used & {"market-h100", "seed-cloud-h100-node"}


def test_review_app_offers_both_reservation_terms():
    from llmcost.apps.review_app import ReviewApp
    p = ReviewApp(query="gpu=h200&price_offer=hyperstack-h200")
    for name in ("reserved_1y_usd_per_gpu_hour", "reserved_3y_usd_per_gpu_hour"):
        assert name in p.controls and p.controls[name].disabled     # from the catalog
    # the greyed 1-year box shows the offer's figure: $22.32 / 8 per GPU-hour
    assert p.controls["reserved_1y_usd_per_gpu_hour"].value == pytest.approx(22.32 / 8, rel=1e-5)
    assert "reserved_1y" in p.results.economics.costs_usd
