"""The panel's parts without widgets: its scenarios and their link (state), the compare
table, the report and the scenario files. No test here builds a widget."""

import base64
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from ipywidgets.widgets import widget as widget_module

from llmcost.apps.compare import change, change_text, changes_vs_a, compare_html, comparison
from llmcost.apps.fields import field_label, readable, shown, with_value
from llmcost.apps.report import (
    MAX_SCENARIO_BYTES,
    read_scenario_file,
    report_html,
    report_scenario,
    scenario_data_url,
    upload_text,
)
from llmcost.apps.review_app import ReviewApp
from llmcost.apps.state import PanelState, carry_custom
from llmcost.review import evaluate, headline_items
from llmcost.scenario import Scenario
from llmcost.training import hf_config

A = Scenario(model="llama3-8b", gpus=64)
B = replace(A, gpus=128)
C = replace(A, gpus=256, gpu="b200")
KEYS = ("days", "gpus", "mfu", "fits")


@pytest.fixture(autouse=True)
def no_widget_is_made():
    before = set(widget_module._instances)
    yield
    assert set(widget_module._instances) == before


def test_the_parts_import_no_widget_library():
    code = ("import sys, llmcost.apps.state, llmcost.apps.compare, llmcost.apps.report, "
            "llmcost.apps.fields; print('ipywidgets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_a_link_round_trips_through_the_state(cat):
    # keys in the Scenario's field order: the link the panel writes
    q = "model=llama3-8b&gpus=64&b.gpus=128&c.gpu=b200&c.gpus=256"
    state = PanelState.from_query(q, cat)
    assert state.pins == [A, B] and state.scenario == C
    assert state.label == "C" and state.link_warnings == [] and state.results is None
    assert state.query() == q
    again = PanelState.from_query(state.query(), cat)
    assert (again.pins, again.scenario) == (state.pins, state.scenario)
    # relative to the page's own address once it is known (urljoin of the notebook's name)
    assert state.share_link("review") == f"review.ipynb?{q}"
    assert (state.share_link("spot", "http://h/voila/render/notebooks/review.ipynb?x=1")
            == f"http://h/voila/render/notebooks/spot.ipynb?{q}")
    bad = PanelState.from_query("gpus=-5&foo=1", cat)
    assert bad.scenario == Scenario() and bad.pins == []
    assert len(bad.link_warnings) == 2 and "'foo'" in bad.link_warnings[1]


def test_a_state_shows_a_link_only_once_it_has_its_results(cat):
    state = PanelState.from_query("gpus=64&b.gpus=128", cat)
    same = PanelState.from_query("gpus=64&b.gpus=128", cat)
    assert not state.shows(same)                 # nothing computed yet
    state.keep("results", {"plot": 1}, [("A", "pinned")])
    assert state.shows(same)
    assert not state.shows(PanelState.from_query("gpus=64", cat))
    assert not state.shows(PanelState.from_query("gpus=128&b.gpus=64", cat))


def test_pinning_takes_the_next_letter_up_to_two_pins():
    state = PanelState(A)
    assert state.pin_text() == "Pin as A"
    assert state.pin() is False and state.pins == []       # no results to compare yet
    state.keep("results", {}, [])
    assert state.pin() is True and state.pins == [A]
    assert state.label == "B" and state.pin_text() == "Pin as B"
    state.scenario = B
    assert state.pin() is True and state.pins == [A, B] and state.label == "C"
    assert not state.can_pin and state.pin_text() == "Pinned: A, B"
    assert state.pin() is False and len(state.pins) == 2
    state.clear_pins()
    assert state.pins == [] and state.label == ""


def test_a_pin_that_no_longer_computes_is_dropped_and_the_rest_relabelled():
    state = PanelState(C, pins=[A, B])

    def compute(s):
        if s.gpus == 64:
            raise ValueError("refused")
        return s.gpus * 2

    pinned, dropped = state.compute_pinned(compute)
    assert pinned == [("A", 256)] and dropped == ["scenario A dropped: refused"]
    assert state.pins == [B] and state.label == "B"


def test_switching_to_custom_starts_from_the_figures_used():
    used = {"on_demand_usd_per_gpu_hour": 6.876543219, "spot_discount": 0.612345678,
            "data_stall_share": 0.05}
    s, carried = carry_custom(Scenario(price_source="custom"), "price_source", used)
    assert carried
    # six significant digits of each price the figures used; other groups untouched
    assert s.on_demand_usd_per_gpu_hour == 6.87654 and s.spot_discount == 0.612346
    assert s.data_stall_share == Scenario().data_stall_share
    same, carried = carry_custom(Scenario(), "price_source", used)   # not custom: no carry
    assert same == Scenario() and not carried


def test_fields_read_as_the_controls_and_the_report_show_them():
    assert shown("tokens", 2e12) == "2T" and shown("gpus", 16_000) == "16,000"
    assert shown("utilization", 0.9) == 0.9
    assert readable("utilization", 0.9) == "90.0%" and readable("gpus", 1024) == "1,024"
    assert field_label("on_demand_usd_per_gpu_hour").endswith("]")
    assert with_value(A, "gpus", "16k").gpus == 16_000
    with pytest.raises(ValueError, match="GPUs must be between 1 and 131,072, got -8"):
        with_value(A, "gpus", "-8")


def test_compare_deltas_are_the_relative_changes_of_two_evaluations(cat):
    ra, rb = evaluate(A, cat), evaluate(B, cat)
    da, db = ra.headline["days"], rb.headline["days"]
    assert change("days", ra, rb) == pytest.approx((db - da) / da, rel=1e-12)
    assert change("gpus", ra, rb) == pytest.approx((128 - 64) / 64)
    assert change_text("gpus", ra, rb) == "+100.0%"
    assert change("days", ra, ra) is None and change("fits", ra, rb) is None
    assert change("days", ra, object()) is None          # results without raw figures

    ha, hb = headline_items(ra, KEYS), headline_items(rb, KEYS)
    c = comparison([("A", ra, ha), ("B", rb, hb)], [A], B)
    assert c.labels == ["A", "B"]
    rows = dict(c.rows)
    days_label = ha["days"][0]
    assert rows[days_label] == [(ha["days"][1], ""), (hb["days"][1], f"{(db - da) / da:+.1%}")]
    assert rows["GPUs"] == [("64", ""), ("128", "+100.0%")]
    assert c.differences == [("B", ["GPUs = 128"])]
    page = compare_html(c)
    assert f"({(db - da) / da:+.1%} vs A)" in page and "B (current)" in page
    assert "B differs from A in: GPUs = 128" in page
    assert changes_vs_a(hb, ra, [rb])[:2] == [(days_label, [f"{(db - da) / da:+.1%}"]),
                                              ("GPUs", ["+100.0%"])]


@pytest.mark.slow
def test_the_report_of_a_panel_built_without_widgets(cat):
    s = Scenario(model="llama3-70b", tokens=15e12, sizing="days", target_days=30, gpus=1024)
    p = ReviewApp(scenario=s, catalog=cat, build=False)
    res = p.compute(s)
    rows = dict(report_scenario(p, "", s, res, {}).assumptions)
    assert rows["GPUs"] == f"{int(res.plan.gpus):,} (sized for the days)"
    assert rows["Layout used"] == res.plan.layout.description
    price = res.inputs.resolved["on_demand_usd_per_gpu_hour"]
    assert rows[field_label("on_demand_usd_per_gpu_hour")] == f"{price:,.6g} (derived)"
    assert rows[field_label("utilization")] == f"{s.utilization:.1%}"

    ra, rb = evaluate(A, cat), evaluate(B, cat)
    state = PanelState(B, pins=[A])
    state.keep(rb, {}, [("A", ra)])
    page = report_html(p, state, "http://x/review.ipynb?gpus=64")
    da, db = ra.headline["days"], rb.headline["days"]
    assert f"{(db - da) / da:+.1%}" in page and "http://x/review.ipynb?gpus=64" in page


def test_a_saved_scenario_file_loads_back(cat):
    url = scenario_data_url(B)
    assert base64.b64decode(url.split(",", 1)[1]).decode() == B.to_json()
    loaded = read_scenario_file("s.json", B.to_json(), Scenario(), cat)
    assert loaded.scenario == B and loaded.messages == [] and loaded.error == ""
    bad = read_scenario_file("s.json", "[1, 2]", B, cat)
    assert bad.scenario is None and bad.error.startswith("not a scenario file")
    name, text = upload_text([{"content": memoryview(B.to_json().encode())}])
    assert (name, text) == ("scenario.json", B.to_json())
    assert upload_text([]) is None
    with pytest.raises(ValueError, match=f"{MAX_SCENARIO_BYTES + 1:,} bytes"):
        upload_text({"f": {"content": b" " * (MAX_SCENARIO_BYTES + 1)}})


def test_a_config_json_becomes_the_scenarios_model(cat):
    text = (Path(__file__).resolve().parents[1] / "data" / "hf_configs" / "qwen3-8b.json").read_text()
    m, _ = hf_config.model_from_config(hf_config.read_config(text))
    loaded = read_scenario_file("config.json", text, B, cat)
    assert loaded.scenario.model == "config" and loaded.scenario.gpus == B.gpus
    assert loaded.messages[0].startswith(f"Model from config.json: {m.layers} layers, hidden "
                                         f"{m.hidden:,}, {m.params / 1e9:,.1f} B parameters")
    # an app without a model reads it as a scenario file: nothing in it is a setting
    as_file = read_scenario_file("config.json", text, B, cat, takes_model=False)
    assert as_file.scenario == Scenario() and as_file.messages
    broken = read_scenario_file("config.json", '{"model_type": "llama", "hidden_size": 64}', B, cat)
    assert broken.scenario is None and "num_hidden_layers is missing" in broken.error
