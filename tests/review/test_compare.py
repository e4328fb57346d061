"""Comparing scenarios: one link carries A, B and C (b./c. keys only where they
differ from A); the apps pin and compare; `llmcost review` reads the same link; the
figures compared are those of evaluate() on each scenario."""

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcost import cli
from llmcost.apps.review_app import ReviewApp
from llmcost.apps.spot_app import SpotApp
from llmcost.review import evaluate
from llmcost.scenario import Scenario, scenarios_from_query, scenarios_to_query

VARIANTS = st.fixed_dictionaries({}, optional={
    "gpu": st.sampled_from(["h100-sxm", "b200", "a100-80gb", "h200"]),
    "fabric": st.sampled_from(["ib-ndr", "roce-400"]),
    "gpus": st.sampled_from([64, 512, 1024, 2048]),
    "tokens": st.sampled_from([1e12, 2e12, 15e12]),
    "preemptions_per_day": st.sampled_from([0.0, 0.5, 2.4, 7.25]),
    "price_source": st.just("custom"),
    "checkpoint_mode": st.sampled_from(["sync", "async"]),
})


@settings(max_examples=60, deadline=None)
@given(st.lists(VARIANTS, min_size=1, max_size=3))
def test_link_round_trips_up_to_three_scenarios(variants):
    scenarios = [replace(Scenario(), **kw) for kw in variants]
    q = scenarios_to_query(scenarios)
    back, warnings = scenarios_from_query(q)
    assert back == scenarios and warnings == []
    # only the keys that differ from A are in B's and C's part
    for prefix, s in zip(("b.", "c."), scenarios[1:]):
        keys = {k.split("=")[0][2:] for k in q.split("&") if k.startswith(prefix)}
        differ = {k for k, x in s.to_dict().items() if x != getattr(scenarios[0], k)}
        assert keys == (differ or {"model"})


def test_more_than_three_scenarios_refused():
    with pytest.raises(ValueError, match="1 to 3 scenarios"):
        scenarios_to_query([Scenario()] * 4)


def test_compare_keys_warn_with_their_label_and_strict_names_the_key():
    _, warnings = scenarios_from_query("gpus=64&b.gpu=nope&c.foo=1")
    assert warnings[0].startswith("scenario B: gpu: GPU 'nope' is not in the catalog")
    assert warnings[1] == "scenario C: unknown setting 'foo' ignored"
    with pytest.raises(ValueError) as e:
        scenarios_from_query("gpus=64&b.gpus=-1", strict=True)
    assert e.value.param == "b.gpus"


def test_pinning_in_the_app_compares_with_deltas_from_the_same_results():
    p = ReviewApp(query="model=llama3-8b&gpus=64")
    a_days = evaluate(p.scenario).headline["days"]
    p.pin()
    assert p.label == "B" and p.pin_button.description == "Pin as B"
    p.set(gpus=128)
    b = evaluate(p.scenario)
    assert p.results is b                       # one computation: the cached Results
    html = p.compare_box.value
    # B's days and its change against A, as the app computes them from the two results
    change = (b.headline["days"] - a_days) / a_days
    assert f"{b.headline['days']:,.1f}" in html and f"({change:+.1%} vs A)" in html
    assert "B differs from A in: GPUs = 128" in html
    # the share link carries both: A plain, B as b. keys that differ
    assert p.query() == "model=llama3-8b&gpus=64&b.gpus=128"
    # the overlaid figures hold a trace per scenario where the plot can overlay
    names = {t.name for t in p.figures["waterfall"].data if t.name}
    assert any("A" in n for n in names) and any("B" in n for n in names)
    p.pin()
    assert p.label == "C" and p.pin_button.disabled
    p.clear_pins()
    assert p.label == "" and p.compare_box.value == ""


def test_compare_link_opens_the_app_with_pins():
    p = SpotApp(query="gpus=64&b.spot_discount=0.3&c.spot_discount=0.5")
    assert [s.spot_discount for s in p.pins] == [0.6, 0.3] and p.scenario.spot_discount == 0.5
    assert p.label == "C" and "C (current)" in p.compare_box.value


def test_cli_review_reads_the_apps_compare_link(capsys):
    q = "model=llama3-8b&gpus=64&b.gpu=b200&b.gpus=32"
    assert cli.main(["review", "--json", "--query", q]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["compared"] == ["A", "B"]
    for label, s in zip("AB", scenarios_from_query(q)[0]):
        r = evaluate(s)
        assert out["scenarios"][label]["days"] == pytest.approx(r.headline["days"], rel=1e-12)
        assert out["scenarios"][label]["gpus"] == s.gpus
    a, b = out["scenarios"]["A"]["days"], out["scenarios"]["B"]["days"]
    assert out["changes_vs_a"]["B"]["days"] == pytest.approx((b - a) / a)
    assert cli.main(["review", "--query", "gpus=64&b.gpus=0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "b.gpus" in err[0] and "GPUs must be between 1 and 131,072" in err[0]
