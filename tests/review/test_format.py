"""Readable numbers: the presentation helpers of llmcost.review.format and the headline texts
built on them. Expected texts are derived in each case (scale, significant digits)."""

import pytest

from llmcost import review
from llmcost.review.format import (
    HEADLINE_LABELS,
    days_text,
    format_headline,
    human_count,
    minutes_text,
    pct_text,
    usd_text,
)
from llmcost.scenario import Scenario


@pytest.mark.parametrize("x,text", [
    (2e12, "2 T"),              # 2e12 / 1e12 = 2, trailing zeros dropped
    (4.05e11, "405 B"),         # 4.05e11 / 1e9 = 405
    (14.8e12, "14.8 T"),        # Llama 3 405B's 15.6 T style: three significant digits
    (1.5e6, "1.5 M"),
    (8192, "8,192"),            # below a million: exact, with separators
    (999_999, "999,999"),
    (999_950_000, "1 B"),       # 999.95 M rounds to 1,000 M: written in the next unit
    (0.25, "0.25"),
])
def test_human_count(x, text):
    assert human_count(x) == text


@pytest.mark.parametrize("x,text", [
    (4.1e6, "$4.1 M"),
    (4_233_250.93, "$4.23 M"),  # three significant digits
    (950e3, "$950 k"),
    (1234, "$1.23 k"),
    (12.4, "$12.40"),           # below $1,000: cents
    (2.4e9, "$2.4 B"),
    (-4.1e6, "-$4.1 M"),
])
def test_usd_text(x, text):
    assert usd_text(x) == text


def test_pct_days_minutes():
    assert pct_text(0.43) == "43.0%"
    assert pct_text(0.9734, 2) == "97.34%"
    assert days_text(26.24) == "26.2 days"
    assert days_text(0.2) == f"{0.2 * 24:.1f} h" == "4.8 h"
    # 5 years of 365.25 days
    assert days_text(5 * 365.25) == "1,826 days (5.0 years)"
    assert minutes_text(4164) == f"{4164 / 60:.1f} min" == "69.4 min"
    assert minutes_text(30) == "30.0 s"


@pytest.mark.parametrize("fn", [human_count, usd_text, pct_text, days_text, minutes_text])
def test_missing_values_read_n_a(fn):
    for x in (None, float("nan"), float("inf"), -float("inf")):
        assert fn(x) == "n/a"


def test_headline_reads_well_and_keeps_its_labels():
    r = review.evaluate(Scenario())
    h = r.headline
    cost = format_headline("cost_on_demand_usd", h["cost_on_demand_usd"])
    assert cost == usd_text(h["cost_on_demand_usd"]) and cost.endswith(" M")
    # the text gives the figure back to three significant digits
    shown = float(cost.strip("$ M")) * 1e6
    assert shown == pytest.approx(h["cost_on_demand_usd"], rel=5e-3)
    assert format_headline("mfu", h["mfu"]) == f"{100 * h['mfu']:.1f}%"
    assert format_headline("gpus", h["gpus"]) == "1,024"
    # the days figure stays a bare number: the sizing note and the band are written after it
    assert format_headline("days", h["days"]) == f"{h['days']:,.1f}"
    # figures without a declared format take it from the unit in their name
    assert format_headline("tokens", 2e12) == "2 T tokens"
    assert format_headline("spot_net_savings", 0.43) == "43.0%"
    assert format_headline("fits", True) == "yes" and format_headline("mfu", None) == "n/a"
    items = review.headline_items(r, list(h))
    assert {k: v[0] for k, v in items.items()} == {k: HEADLINE_LABELS[k][0] for k in items}
    for label, text, _ in items.values():
        assert "nan" not in text.lower() and "inf" not in text.lower()
        assert label and text
