"""The Serving app in chromium: it renders, a control changes the figures, and
its share link opens the same headline."""

import time

import pytest  # noqa: E402  (after browser_support, which skips without chromium)
from browser_support import assert_no_error_text, open_app, shot, text_of, titles, wait_change

from llmcost.apps.serving_app import ServingApp  # noqa: E402

pytestmark = pytest.mark.browser


def test_serving_app_weights_change_the_figures_and_the_link_reproduces_them(voila, page):
    open_app(page, voila, "serving")
    # the kernel's figures for the default scenario are the page's
    want = ServingApp(query="").headline(ServingApp(query="").results)
    assert text_of(page, ".llmc-headline-tpot") == want["tpot"][1]
    assert text_of(page, ".llmc-headline-usd") == want["usd"][1]
    def bar_texts():
        return page.locator(".llmc-plot-cost .bartext").all_text_contents()

    tpot, t0 = text_of(page, ".llmc-headline-tpot"), bar_texts()
    assert t0 and titles(page)
    page.locator(".llmc-ctl-weights select").select_option("fp8")
    new_tpot = wait_change(page, lambda: text_of(page, ".llmc-headline-tpot"), tpot)
    # FP8 weights serve more tokens per GPU: the cost plot's bars carry the new $ per M
    # tokens (the memory plot's total stays: both fill the KV cache to vLLM's 0.9 of HBM)
    fp8 = ServingApp(query="weights=fp8")
    want = [f"${x:,.3f}" for x in fp8.results.answer["usd_per_million_output_tokens"].values()]
    assert wait_change(page, bar_texts, t0) == want
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


def test_the_readmes_serve_query_shows_the_clis_figures_and_says_why(voila, page):
    # the README's `llmcost serve` query opened in the page shows serve's layout
    # and figures (TP 4, not re-planned), what TTFT and TPOT are calibrated against and why it
    # runs its concurrency
    import re
    from pathlib import Path
    from urllib.parse import quote

    from llmcost.serving.query import answer

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    q = re.search(r'llmcost serve +--query "([^"]+)"', text).group(1)
    want = answer(q)
    open_app(page, voila, "serving", "?" + quote(q, safe="=&"))
    assert text_of(page, ".llmc-headline-layout").startswith(
        f"TP {want['tp']}, EP {want['ep']}, {want['concurrency']:,} in flight")
    assert text_of(page, ".llmc-headline-ttft") == f"{want['ttft_ms']:,.1f} ms"
    assert text_of(page, ".llmc-headline-tpot") == f"{want['tpot_ms']:,.1f} ms"
    assert text_of(page, ".llmc-headline-usd") == \
        f"${want['usd_per_million_output_tokens']['on_demand']:,.3f}"
    assert page.locator(".llmc-ctl-serve_tp input").first.input_value() == str(want["tp"])
    page.wait_for_selector(".llmc-serving-basis", timeout=90_000)
    basis = page.locator(".llmc-serving-basis").first.inner_text()
    assert "calibrated against" in basis and want["calibration"] in basis
    assert want["concurrency_reason"] in basis
    assert page.locator(".llmc-warning-area .llmc-warning").count() == 0
    assert_no_error_text(page)


def test_the_planners_concurrency_is_explained_on_the_page(voila, page):
    open_app(page, voila, "serving")
    want = ServingApp(query="").results.answer
    page.wait_for_selector(".llmc-serving-basis", timeout=90_000)
    basis = page.locator(".llmc-serving-basis").first.inner_text()
    # 'Concurrency 0: best' says it is the planner's best and that memory sets it
    assert want["concurrency_reason"].startswith("the planner's best")
    assert want["concurrency_reason"] in basis
    assert f"{want['max_concurrency']:,} sequences" in basis
    assert text_of(page, ".llmc-headline-layout").endswith(
        f"{want['concurrency']:,} in flight")
