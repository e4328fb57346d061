"""Hostile input in the apps and scenario files: escaped, answered, bounded."""

import json

import pytest
from test_apps import box_classes

from llmcost.apps.review_app import ReviewApp
from llmcost.apps.sizing_app import SizingApp
from llmcost.scenario import Scenario


def test_scaling_csv_error_is_escaped():
    # a CSV whose cell is markup must not reach the page as markup
    p = SizingApp(query="")
    csv = "nodes,tokens_per_s\n<img src=x onerror=alert(1)>,1000\n"
    p._on_scaling({"new": [{"content": memoryview(csv.encode())}]})
    assert "Could not read the CSV" in p.scaling_note.value
    assert "<img" not in p.scaling_note.value and "&lt;img" in p.scaling_note.value


def test_scenario_files_that_are_hostile_are_answered():
    deep = "[" * 100_000 + "]" * 100_000
    s, warnings = Scenario.from_json(deep)
    assert s == Scenario() and warnings and "not a scenario file" in warnings[0]
    s, warnings = Scenario.from_json(json.dumps({"gpus": int("9" * 400)}))
    assert s.gpus == Scenario().gpus and "gpus" in warnings[0]
    s, warnings = Scenario.from_json('{"tokens": 1e999}')      # json reads it as infinity
    assert s.tokens == Scenario().tokens and "tokens" in warnings[0]
    huge = "x" * 10_000_000
    s, warnings = Scenario.from_json(json.dumps({huge: 1}))
    assert len(warnings[0]) < 200                                # never echoed whole


def test_a_hostile_link_keeps_defaults_and_says_so():
    p = ReviewApp(query="gpus=" + "9" * 5000 + "&model=<script>alert(1)</script>")
    assert p.scenario == Scenario()
    assert "<script>" not in p.warning_box.value and "&lt;script&gt;" in p.warning_box.value


def test_results_that_cannot_be_true_are_flagged_in_app_cli_and_report(tmp_path, capsys):
    # a run of centuries, goodput near zero and a cost beyond any budget
    from llmcost import cli
    from llmcost.review import evaluate
    from llmcost.review.stages import COST_BOUND_USD, GOODPUT_FLOOR
    from llmcost.scenario import Scenario
    # a 10-minute restart and sync checkpoints to a 20 GB/s tier, given (the defaults restart,
    # checkpoint and store faster)
    q = ("model=llama3-405b&gpus=1024&tokens=1e15&failure_rate=custom"
         "&failures_per_1000_gpu_days=50&restart_s=600&checkpoint_mode=sync"
         "&shared_storage_gb_per_s=20")
    r = evaluate(Scenario.from_query(q)[0])
    assert r.headline["days"] > 3650 and r.headline["goodput"] < GOODPUT_FLOOR
    assert max(r.economics.costs_usd.values()) > COST_BOUND_USD
    assert {"days", "goodput", "cost_on_demand_usd"} <= set(r.flags)
    assert all(r.flags[k].level == "implausible" for k in ("goodput", "cost_on_demand_usd"))
    # the app marks the boxes, the CLI prints the flags, the report carries them
    p = ReviewApp(query=q)
    for k in ("days", "goodput", "cost_on_demand_usd"):
        assert "llmc-flag-implausible" in box_classes(p, k)
    assert cli.main(["review", "--query", q]) == 0
    out = capsys.readouterr().out
    assert "FLAG goodput: implausible" in out and "FLAG cost_on_demand_usd: implausible" in out
    text = p.report(tmp_path).read_text()
    assert "implausible" in text
    # an ordinary run carries none of these flags
    ok = evaluate(Scenario())
    assert not {"goodput", "cost_on_demand_usd"} & set(ok.flags)


def test_duplicate_keys_in_a_file_warn_as_in_a_link():
    from llmcost.scenario import Scenario
    s, warnings = Scenario.from_json('{"gpus": 64, "gpus": 128}')
    assert s.gpus == 128 and warnings == ["gpus: given more than once; the last is used"]
    s, warnings = Scenario.from_query("gpus=64&gpus=128")
    assert s.gpus == 128 and warnings == ["gpus: given 2 times; the last is used"]
    with pytest.raises(ValueError, match="gpus: given more than once"):
        Scenario.from_json('{"gpus": 64, "gpus": 128}', strict=True)
