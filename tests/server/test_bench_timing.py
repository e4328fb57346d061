"""benchmarks/load.py's visit timing in a real browser: a visit's time is when the page
drew all the review app's plots, noted by the page itself, not when the harness polled."""

import asyncio
import importlib.util
import sys

import pytest  # noqa: E402  (after browser_support, which skips without chromium)
from browser_support import ROOT

pytestmark = pytest.mark.browser

spec = importlib.util.spec_from_file_location("load_bench_timing", ROOT / "benchmarks" / "load.py")
load = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = load
spec.loader.exec_module(load)


def _page(title_at_ms: list[int]) -> str:
    """A page whose plot titles appear at these times after navigation began."""
    adds = "".join(
        f"setTimeout(() => document.body.insertAdjacentHTML('beforeend', "
        f"\"<div class='js-plotly-plot'><span class='gtitle'>t</span></div>\"), "
        f"{ms} - performance.now());" for ms in title_at_ms)
    return f"data:text/html,<body><script>{adds}</script></body>"


def _time(url: str) -> load.Round:
    from playwright.async_api import async_playwright

    async def go():
        async with async_playwright() as pw:
            # the harness's own browser and flags
            browser = await pw.chromium.launch(executable_path=load.CHROMIUM, args=load.ARGS)
            r = load.Round()
            ctx = await browser.new_context()
            await load._timed_load(ctx, url, r, load.PLOT, set())
            await browser.close()
            return r
    return asyncio.run(go())


def test_a_visit_is_timed_when_its_last_plot_is_drawn():
    assert load.PLOTS_DRAWN == 2
    # the second title at 800 ms: the page's note falls a frame or so after it. Playwright's
    # own wait (wait_for_selector) polls at 0, 20, 70, 170, 270, 770, 1270 ms..., so it
    # would return at ~1.27 s (and at 0.77 s for the first title alone)
    r = _time(_page([300, 800]))
    assert r.failures == 0 and len(r.times_s) == 1
    assert 0.8 <= r.times_s[0] < 1.2


def test_a_page_with_one_of_its_two_plots_is_a_failure(monkeypatch):
    monkeypatch.setattr(load, "VISIT_TIMEOUT_S", 2)
    r = _time(_page([100]))
    assert r.times_s == [] and r.failures == 1


def test_the_floors_page_is_drawn_with_its_one_widget_the_reviews_with_every_plot():
    assert "want = 1;" in load.drawn_script(load.FLOOR_SELECTOR)
    assert f"want = {load.PLOTS_DRAWN};" in load.drawn_script(load.PLOT)
