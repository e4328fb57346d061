"""Hostile input in the apps and scenario files (part of issue 13): escaped, answered, bounded."""

import json

from llmcost.apps import panels
from llmcost.scenario import Scenario


def test_scaling_csv_error_is_escaped():
    # a CSV whose cell is markup must not reach the page as markup
    p = panels.SizingApp(query="")
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
    p = panels.ReviewApp(query="gpus=" + "9" * 5000 + "&model=<script>alert(1)</script>")
    assert p.scenario == Scenario()
    assert "<script>" not in p.warning_box.value and "&lt;script&gt;" in p.warning_box.value
