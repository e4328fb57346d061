"""The Serving app (issue 27) in chromium: it renders, a control changes the figures, and
its share link opens the same headline."""

import time

from browser_support import assert_no_error_text, open_app, shot, text_of, titles, wait_change

import pytest  # noqa: E402  (after browser_support, which skips without chromium)

from llmcost.apps.serving_app import ServingApp  # noqa: E402

pytestmark = pytest.mark.browser


def test_serving_app_weights_change_the_figures_and_the_link_reproduces_them(voila, page):
    open_app(page, voila, "serving")
    # the kernel's figures for the default scenario are the page's
    want = ServingApp(query="").headline(ServingApp(query="").results)
    assert text_of(page, ".llmc-headline-tpot") == want["tpot"][1]
    assert text_of(page, ".llmc-headline-usd") == want["usd"][1]
    tpot, t0 = text_of(page, ".llmc-headline-tpot"), titles(page)
    page.locator(".llmc-ctl-weights select").select_option("fp8")
    new_tpot = wait_change(page, lambda: text_of(page, ".llmc-headline-tpot"), tpot)
    # FP8 weights halve the memory plot's weights bar: its title's total changes
    assert wait_change(page, lambda: titles(page), t0) != t0
    fp8 = ServingApp(query="weights=fp8")
    assert new_tpot == fp8.headline(fp8.results)["tpot"][1]
    link = page.locator(".llmc-share-link").first
    end = time.time() + 10
    while "weights=fp8" not in (link.get_attribute("href") or "") and time.time() < end:
        page.wait_for_timeout(200)
    href = link.get_attribute("href")
    assert href.endswith("serving.ipynb?weights=fp8")
    usd = text_of(page, ".llmc-headline-usd")
    page.goto(href if href.startswith("http") else f"{voila}/{href}", wait_until="commit")
    page.wait_for_selector(".llmc-headline-tpot .llmc-headline-value", timeout=90_000)
    page.wait_for_selector(".js-plotly-plot .gtitle", timeout=90_000)
    assert page.locator(".llmc-ctl-weights select").first.input_value() == "fp8"
    assert text_of(page, ".llmc-headline-tpot") == new_tpot
    assert text_of(page, ".llmc-headline-usd") == usd
    assert_no_error_text(page)
    shot(page, "serving")
