"""Uploads say what is wrong with this file: each error replaces the last upload's message,
a number beyond the ranges a scenario takes is refused by row and column, and a JSON file's
error names its problem (kernel side; the browser hands the same bytes over)."""

from __future__ import annotations

import pytest

from llmcost.apps.plotview import shown_figure
from llmcost.apps.review_app import ReviewApp
from llmcost.apps.sizing_app import SizingApp

GOOD = "nodes,tokens_per_s\n1,1000\n2,1950\n4,3800\n8,4800\n"


def upload(p, text):
    p._on_scaling({"new": [{"content": memoryview(text.encode())}]})
    return p.scaling_note.value


@pytest.fixture(scope="module")
def sizing():
    return SizingApp(query="")


@pytest.mark.parametrize("text, where", [
    # float("1e400") is inf: int(inf) raised an uncaught OverflowError
    ("nodes,tokens_per_s\n1,1000\n1e400,1950\n", "row 3, column nodes"),
    # 9e29 nodes gave a fitted share of 5e29% per doubling, no warning
    ("nodes,tokens_per_s\n9e29,1000\n2,1950\n4,3800\n", "row 2, column nodes"),
    ("nodes,tokens_per_s\n1,1000\n2,-5\n", "row 3, column tokens_per_s"),
    ("nodes,tokens_per_s\n1,1000\n2,abc\n", "row 3, column tokens_per_s"),
    ("gpus,tokens_per_s\n8,1000\n16,nan\n", "row 3, column tokens_per_s"),
])
def test_a_bad_row_is_refused_by_row_and_column_replacing_the_last_message(sizing, text, where):
    assert "Fitted communication share" in upload(sizing, GOOD)
    assert shown_figure(sizing.scaling_out) is not None
    note = upload(sizing, text)
    assert "Could not read the CSV" in note and where in note, note
    assert "Fitted communication share" not in note
    assert shown_figure(sizing.scaling_out) is None and sizing.measured is None


def test_a_good_file_after_a_bad_one_is_read(sizing):
    upload(sizing, "nodes,tokens_per_s\n1e400,1\n")
    assert "cliff between 4 and 8" in upload(sizing, GOOD)


@pytest.mark.parametrize("text, says", [
    ('{"gpus": ' + "9" * 5000 + "}", "a number with 5,000 digits"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ('{"gpus": 64,}', "line 1, column 13"),
])
def test_a_scenario_files_json_error_says_what_is_wrong(text, says):
    p = ReviewApp(query="")
    p._load_failed("an earlier message")
    before = p.scenario
    p._load_text("s.json", text)
    box = p.warning_box.value
    assert says in box and "an earlier message" not in box
    assert "malformed" not in box
    assert p.scenario == before
