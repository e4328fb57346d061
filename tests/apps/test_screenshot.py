"""``make screenshot`` (benchmarks/screenshot.py): its capture against the browser tests'
server writes a picture of the set size showing the review of the README's link."""

import pytest  # noqa: E402  (after browser_support, which skips without chromium)
from bench_support import benchmark_module
from browser_support import CHROMIUM  # noqa: F401  (skips without chromium)

from llmcost.review import evaluate  # noqa: E402
from llmcost.review.format import headline_items  # noqa: E402
from llmcost.scenario import Scenario  # noqa: E402

pytestmark = pytest.mark.browser


def test_screenshot_captures_the_readme_link(voila, tmp_path):
    shot = benchmark_module("screenshot")
    out = tmp_path / "review.png"
    got = shot.capture(voila, out)          # never over the committed notebooks/img/review.png
    assert got["path"] == out and out.stat().st_size > 20_000
    assert shot.png_size(out) == (shot.WIDTH, shot.HEIGHT) == (1400, 900)
    query = shot.readme_query()
    assert got["url"] == f"{voila}/review.ipynb?{query}"
    assert shot.read_note(out) == {"query": query, "headline": got["headline"]}
    # the page showed the review of the README's scenario, as evaluate gives it
    res = evaluate(Scenario.from_query(query)[0])
    days = " ".join(got["headline"]["days"].split())
    assert days == headline_items(res, ("days",))["days"][1]
    assert days.startswith(f"{res.economics.days:.1f} ")
