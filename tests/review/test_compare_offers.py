"""One run across GPUs, offers and options (llmcost.review.compare, `llmcost compare`): each
row the review of its GPU and offer, missing options never borrowed, reference prices never
offers, uncalibrated GPUs never ranked on their point estimate."""

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from llmcost import catalog
from llmcost.cli import main
from llmcost.review.compare import CLOUD_OPTIONS, compare, offers
from llmcost.review.format import usd_text
from llmcost.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
PRICES = pd.read_csv(ROOT / "data" / "prices.csv")
Q = "model=llama3-8b&gpus=64&tokens=1e11"
#: prices.csv column of each cloud option
COLUMN = {"on_demand": "on_demand_usd_per_hour", "reserved_1y": "reserved_1y_usd_per_hour",
          "reserved_3y": "reserved_3y_usd_per_hour", "spot": "spot_usd_per_hour"}


def cli_json(capsys, *argv):
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def table():
    s, _ = Scenario.from_query(Q)
    return compare(s, gpus=["h100-sxm", "mi300x"])


def test_a_row_per_offer_and_option_and_one_purchase_per_gpu(table):
    mine = PRICES[PRICES["gpu"].isin(["h100-sxm", "mi300x"]) & (PRICES["kind"] == "offer")]
    rows = {(r.gpu, r.offer, r.option) for r in table.rows}
    expect = {(o.gpu, o.id, opt) for o in mine.itertuples() for opt in CLOUD_OPTIONS}
    expect |= {("h100-sxm", None, "on_prem"), ("mi300x", None, "on_prem")}
    assert rows == expect and len(table.rows) == len(expect)
    # a market composite and an article's figure are reference prices, not offers
    assert not {r.offer for r in table.rows} & {"market-h100", "seed-cloud-h100-node"}


def test_each_row_is_the_review_of_its_gpu_and_offer(table, capsys):
    picked = [r for r in table.rows if r.option in ("on_demand", "on_prem")
              or (r.option == "spot" and r.cost_usd is not None)]
    assert len(picked) >= 8
    for r in picked:
        q = f"{Q}&gpu={r.gpu}" + (f"&price_offer={r.offer}" if r.offer else "")
        rv = cli_json(capsys, "review", "--query", q)
        assert (r.days, list(r.days_band), r.gpu_hours, r.fabric, r.fits) == (
            rv["days"], rv["days_band"], rv["gpu_hours"], rv["fabric"], rv["fits"]), q
        assert r.cost_usd == rv["costs_usd"].get(r.option), (q, r.option)
        if r.cost_usd is not None:
            assert r.usd_per_million_tokens == pytest.approx(r.cost_usd / 1e5)  # 1e11 tokens
        else:
            assert r.usd_per_million_tokens is None and r.missing
        assert r.calibrated == rv["prediction_band"]["calibrated"]


def test_an_option_the_offer_does_not_list_is_missing_never_borrowed(table):
    by_id = PRICES.set_index("id")
    for r in table.rows:
        if r.offer is None:
            continue
        listed = by_id.loc[r.offer, COLUMN[r.option]]
        has = pd.notna(listed) and float(listed) > 0
        assert (r.cost_usd is not None) == has, (r.offer, r.option)
        if not has:
            assert r.missing == f"{r.offer} lists no {r.to_json()['option_label']} price"


def test_each_offer_is_timed_on_its_own_fabric(table, capsys):
    fabric = {r.offer: r.fabric for r in table.rows if r.offer}
    assert fabric["aws-p5"] == "aws-efa-p5" and fabric["gcp-a3-highgpu-8g"] == "gcp-a3-tcpx"
    assert fabric["tensorwave-mi300x"] == "roce-400"
    # the review says so; a fabric named by the user is kept
    rv = cli_json(capsys, "review", "--query", f"{Q}&price_offer=aws-p5")
    assert rv["fabric"] == "aws-efa-p5"
    assert any("fabric offer aws-p5 is sold with: aws-efa-p5" in w for w in rv["warnings"])
    rv = cli_json(capsys, "review", "--query", f"{Q}&price_offer=aws-p5&fabric=ib-ndr")
    assert rv["fabric"] == "ib-ndr"


def test_an_uncalibrated_gpu_ranks_at_its_bands_slow_end(table):
    costed = [r for r in table.rows if r.cost_usd is not None]
    # spot beyond its documented capacity (every spot row today) after the rows that can be
    # taken, each part sorted
    flagged = [r for r in costed if r.flag]
    assert flagged and {r.option for r in flagged} == {"spot"}
    assert costed[-len(flagged):] == flagged
    for part in (costed[:-len(flagged)], flagged):
        keys = [r.rank_cost_usd for r in part]
        assert keys == sorted(keys)
    # rows without a cost come last
    assert all(r.cost_usd is None for r in table.rows[len(costed):])
    mi = [r for r in costed if r.gpu == "mi300x"]
    assert mi and not any(r.calibrated for r in mi)
    for r in mi:
        # the forecast band's high end over (1 - the step model's uncalibrated band)
        assert r.rank_cost_usd == pytest.approx(r.cost_band_usd[1] / (1 - r.prediction_band_low))
        assert r.prediction_band_low >= 0.25 and r.rank_cost_usd > r.cost_band_usd[1]
    for r in costed:
        if r.calibrated:
            assert r.rank_cost_usd == r.cost_usd


def test_grouped_by_provider_and_sorted_by_days():
    s, _ = Scenario.from_query(Q)
    t = compare(s, sort="days", by="provider", gpus=["h100-sxm"])
    providers = [r.provider or "" for r in t.rows]
    # each provider's rows together, in the catalog's order of first appearance
    assert providers == sorted(providers, key=list(dict.fromkeys(providers)).index)
    for p in set(providers):
        days = [r.rank_days for r in t.rows if (r.provider or "") == p and r.cost_usd is not None
                and not r.flag]
        assert days == sorted(days)


def test_the_command_line(capsys):
    out = cli_json(capsys, "compare", "--query", Q, "--gpus", "h100-sxm")
    assert {r["gpu"] for r in out["rows"]} == {"h100-sxm"}
    assert out["sort"] == "cost" and out["by"] == "none"
    code = main(["compare", "--query", Q, "--gpus", "h100-sxm,no-such-gpu"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no-such-gpu" in err
    rows = cli_json(capsys, "compare", "--query", Q, "--gpus", "mi300x")["rows"]
    main(["compare", "--query", Q, "--gpus", "mi300x"])
    text = capsys.readouterr().out
    assert "missing" in text
    # an uncalibrated row shows the figure it is ranked by: its cost at the slow end of the
    # forecast's band, slowed again by the step model's own band (cost / (1 - band))
    r = next(r for r in rows if r["cost_usd"] is not None)
    rank = r["cost_band_usd"][1] / (1 - r["prediction_band_low"])
    assert r["rank_cost_usd"] == pytest.approx(rank, rel=1e-12) and rank > r["cost_usd"]
    assert f"no: ranked at {usd_text(rank)}, its bands' slow end" in text


@pytest.mark.grid
def test_every_row_of_every_gpu_is_its_review(capsys):
    s, _ = Scenario.from_query("model=llama3-70b&tokens=15e12&gpus=2048")
    t = compare(s)
    assert {r.gpu for r in t.rows} == set(offers(catalog.default())["gpu"])
    for r in t.rows:
        q = f"model=llama3-70b&tokens=15e12&gpus=2048&gpu={r.gpu}" + (
            f"&price_offer={r.offer}" if r.offer else "")
        rv = cli_json(capsys, "review", "--query", q)
        assert (r.days, r.gpu_hours, r.fabric) == (rv["days"], rv["gpu_hours"], rv["fabric"])
        assert r.cost_usd == rv["costs_usd"].get(r.option), (q, r.option)


def test_spot_is_never_named_cheapest_beyond_its_documented_capacity():
    from llmcost.review import evaluate
    # no offer in prices.csv documents its spot capacity: spot is costed, never the cheapest
    assert PRICES["spot_capacity_gpus"].isna().all()
    s, _ = Scenario.from_query("model=llama3-405b&gpus=16384&tokens=15.6e12")
    r = evaluate(s)
    costs = r.economics.costs_usd
    assert costs["spot"] == min(costs.values())          # the cheapest figure ...
    assert r.cheapest_option == "on_demand"              # ... not named: on-demand is
    assert any("spot: capacity not documented at this size (16,384 GPUs" in w
               for w in r.warnings)
    # an offer documenting spot capacity for the run's GPUs: spot may be named
    row = catalog.default().prices().query("id == 'aws-p5'").copy()
    row["spot_capacity_gpus"] = 16384
    cat = catalog.default().with_rows("prices", row, replace=True)
    r2 = evaluate(replace(s, price_offer="aws-p5"), cat)
    assert r2.cheapest_option == "spot"
    assert not any("spot: capacity" in w for w in r2.warnings)


def test_the_ladder_never_prices_a_reference_figure():
    from llmcost.economics.sizing import cheapest_on_demand
    got = cheapest_on_demand(PRICES)
    assert {i for _, _, i in got.values()}.isdisjoint({"market-h100", "seed-cloud-h100-node"})
    # H100: RunPod's $21.52 per 8 GPUs, the cheapest listed offer
    assert got["h100-sxm"] == (pytest.approx(21.52 / 8), 8, "runpod-h100-sxm")


# ------------------------------------------------------------------ provider and first party

def test_every_offer_says_whether_its_price_is_the_providers_own():
    offers_ = PRICES[PRICES["kind"] == "offer"]
    assert offers_["first_party"].isin([True, False]).all()
    # the one price read from the provider's own page: Spheron's blog of its prices
    assert set(offers_.loc[offers_["first_party"], "id"]) == {"spheron-gb200"}
    assert not offers_.loc[offers_["source"].str.startswith("third-party"), "first_party"].any()


def test_at_an_equal_price_the_providers_own_figure_is_chosen():
    from llmcost.economics.offers import choose_offers
    base = dict(gpu="x", gpus=8, fabric="ib-ndr", kind="offer", on_demand_usd_per_hour=16.0,
                spot_usd_per_hour=8.0)
    rows = pd.DataFrame([dict(base, id="third", provider="p", first_party=False),
                         dict(base, id="own", provider="q", first_party=True),
                         dict(base, id="later", provider="r", first_party=False)])
    assert {k: r["id"] for k, r in choose_offers(rows, "x").items()} == {
        "on_demand": "own", "spot": "own"}
    # a lower third-party price still wins: the preference only breaks ties
    rows.loc[2, "on_demand_usd_per_hour"] = 15.9
    assert choose_offers(rows, "x")["on_demand"]["id"] == "later"
    # provider= keeps one provider's offers (case-insensitive)
    assert choose_offers(rows, "x", provider="P")["on_demand"]["id"] == "third"


def test_provider_restricts_the_offers_and_times_the_run_on_their_fabric(capsys):
    r = cli_json(capsys, "review", "--query", f"{Q}&provider=aws")
    aws = set(PRICES.loc[PRICES["provider"] == "aws", "id"])
    assert r["price_offers"] and set(r["price_offers"].values()) <= aws
    assert "provider=aws" in r["price_rule"]
    assert r["fabric"] == "aws-efa-p5"
    assert any("timed on the fabric aws's offer (provider=aws)" in w for w in r["warnings"])
    # the price is the aws offer's, not the cheapest H100 of any provider
    p5 = PRICES.set_index("id").loc["aws-p5"]
    assert r["prices_usd_per_gpu_hour"]["on_demand"] == pytest.approx(
        p5["on_demand_usd_per_hour"] / p5["gpus"])
    rows = compare(Scenario.from_query(f"{Q}&provider=aws")[0], gpus=["h100-sxm", "h200"]).rows
    assert {r.offer for r in rows} - {None} <= aws and {r.provider for r in rows} <= {"aws", None}


@pytest.mark.parametrize("query, words", [
    (f"{Q}&provider=akash", "provider akash has no offer of h100-sxm in the catalog "
                            "(providers of h100-sxm: aws, gcp, azure, coreweave, lambda, runpod)"),
    (f"{Q}&provider=nosuch", "provider 'nosuch' has no offer in the catalog (providers: aws,"),
])
def test_a_provider_without_an_offer_is_refused_naming_it(capsys, query, words):
    assert main(["review", "--query", query]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
