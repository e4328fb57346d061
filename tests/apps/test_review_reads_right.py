"""The review reads right in chromium: every figure named, labelled and the same wherever
it appears (issue "The review reads right", one test per item).

One review page (the README's 405B run) is opened once for the module and read by the
tests that only look at it; the tests that change a page open their own.
"""

import json
from pathlib import Path

import pytest

from llmcost.cli import main as cli_main
from llmcost.review.format import band_text, format_headline, human_count, memory_text
from llmcost.training.layout import description_legend, layout_key_line

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
Q = "model=llama3-405b&gpus=16384&gpu=h100-sxm&tokens=15.6e12&fabric=roce-400-tuned"


def review_json(query: str) -> dict:
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli_main(["review", "--query", query, "--json"]) == 0
    return json.loads(buf.getvalue())


@pytest.fixture(scope="module")
def r():
    return review_json(Q)


@pytest.fixture(scope="module")
def review_page(browser, voila):
    import browser_support as bs
    pg = bs.new_page(browser)
    pg.set_viewport_size({"width": 1400, "height": 900})
    bs.open_app(pg, voila, "review", f"?{Q}")
    yield pg
    bs.leave_page(pg)


def test_memory_reads_used_of_capacity_and_the_fit_names_that_capacity(review_page, r):
    from browser_support import text_of
    cap = r["capacity_gb"]
    assert text_of(review_page, ".llmc-headline-memory_gb_per_gpu") == \
        memory_text(r["memory_gb_per_gpu"], cap)
    # the H100's 80 GiB of HBM is 85.9 GB: both units shown, the fit decided against it
    assert cap == pytest.approx(80 * 2 ** 30 / 1e9)
    shown = text_of(review_page, ".llmc-headline-memory_gb_per_gpu")
    used_gib = r["memory_gb_per_gpu"] * 1e9 / 2 ** 30
    assert shown.endswith(f"of 85.9 GB ({used_gib:,.1f} of 80.0 GiB)")
    assert text_of(review_page, ".llmc-headline-fits") == f"yes (within {cap:,.1f} GB)"


def test_the_layout_string_has_a_legend_on_hover_and_a_key_under_it(review_page, r):
    desc = r["layout"]["description"]
    box = review_page.locator(".llmc-headline-best_layout .llmc-headline-value").first
    assert box.inner_text().strip() == desc
    hover = box.get_attribute("title").splitlines()
    assert hover == [f"{tok}: {meaning}" for tok, meaning in description_legend(desc)]
    # every part of the string is explained, in its order
    parts = [t for t in desc.split(" ") if not t.startswith("(")]
    assert [h.split(": ")[0].split(" (")[0] for h in hover] == parts
    assert hover[0] == "TP8: tensor parallel over 8 GPUs"
    key = review_page.locator(".llmc-headline-best_layout .llmc-layout-key").first.inner_text()
    assert key.strip() == layout_key_line(desc)
    assert key.startswith("TP tensor parallel · PP pipeline stages")


def test_every_band_says_what_it_is_and_the_landing_page_states_the_tokens(review_page, r,
                                                                           browser, voila):
    from browser_support import leave_page, new_page, text_of
    runs = r["realized_ratio"]["runs"]
    lo, hi = r["days_band"]
    days = text_of(review_page, ".llmc-headline-days")
    assert days == (f"{r['days']:,.1f} ({band_text(f'{lo:,.1f}', f'{hi:,.1f}', runs)}; floor "
                    f"{r['days_floor']:,.1f})")
    assert "80% band" in days and f"from {runs} published runs" in days
    hours = text_of(review_page, ".llmc-headline-gpu_hours")
    h_lo, h_hi = r["gpu_hours_band"]
    assert band_text(human_count(h_lo), human_count(h_hi), runs) in hours
    # the landing page says which run its figures are for
    pg = new_page(browser)
    try:
        pg.goto(f"{voila}/index.ipynb?{Q}", wait_until="commit", timeout=60_000)
        pg.wait_for_selector(".llmc-scenario", timeout=90_000)
        line = pg.locator(".llmc-scenario").first.inner_text()
        assert "15.6 T tokens" in line and "16,384 x h100-sxm" in line and "BF16" in line
    finally:
        leave_page(pg)


def test_the_batch_note_states_the_headlines_batch(review_page, r):
    from browser_support import text_of
    head = text_of(review_page, ".llmc-headline-global_batch_tokens")
    figure = format_headline("global_batch_tokens", r["global_batch_tokens"])
    assert head.startswith(figure)
    notes = review_page.locator(".llmc-notes li").all_inner_texts()
    batch = [n for n in notes if n.startswith("global batch ")]
    assert len(batch) == 1 and batch[0].startswith(f"global batch {figure} (")


def test_the_report_lists_every_assumption_the_figures_use(review_page, r, tmp_path):
    with review_page.expect_download(timeout=60_000) as dl:
        review_page.locator(".llmc-report button, button.llmc-report").first.click()
    saved = tmp_path / dl.value.suggested_filename
    dl.value.save_as(saved)
    text = saved.read_text()
    for label in ("Failure rate [per 1000 GPU-days]", "Job MTBF [h]",
                  "Restart per interruption [min]", "Spot preemptions [per day]", "PUE",
                  "Electricity [$/kWh]", "Facility and operations [$/GPU-month]",
                  "Offer per way to pay", "Price rule"):
        assert label in text, label
    assert f"{r['job_mtbf_h']:,.1f}" in text
    for offer in r["price_offers"].values():
        assert offer in text
    assert "Catalog offer: auto" not in text


def test_the_share_link_is_absolute_from_the_first_paint(review_page, voila):
    # nothing edited on this page: the link is absolute already
    href = review_page.locator(".llmc-share-link").first.get_attribute("href")
    assert href.startswith(voila + "/review.ipynb?"), href


def test_moe_controls_are_greyed_on_a_dense_model_and_live_on_an_moe(review_page, page, voila):
    from browser_support import open_app
    assert review_page.locator(".llmc-ctl-moe_load_imbalance input").first.is_disabled()
    assert review_page.locator(".llmc-ctl-moe_overlap select").first.is_disabled()
    open_app(page, voila, "review", "?model=qwen3-30b-a3b&gpus=64&tokens=1e11")
    assert not page.locator(".llmc-ctl-moe_load_imbalance input").first.is_disabled()
    assert not page.locator(".llmc-ctl-moe_overlap select").first.is_disabled()


def test_an_uploaded_config_is_named_from_its_name_or_path(page, voila, tmp_path):
    from browser_support import open_app
    cfg = json.loads((ROOT / "tests" / "data" / "hf_configs" / "qwen3-8b.json").read_text())
    cfg["_name_or_path"] = "Qwen/Qwen3-8B"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    open_app(page, voila, "review", "?gpus=64&tokens=1e11")
    page.locator(".llmc-file-input").first.set_input_files(str(path))
    page.wait_for_selector("text=Loaded a config.json", timeout=30_000)
    # the widget's select names its options by their labels (spaces as no-break spaces)
    page.wait_for_function("() => { const s = document.querySelector('.llmc-ctl-model select');"
                           " return s && s.selectedOptions[0].text.startsWith('config:'); }",
                           timeout=30_000)
    select = page.locator(".llmc-ctl-model select").first
    shown = select.evaluate("s => s.selectedOptions[0].text").replace("\xa0", " ")
    assert shown == "config: Qwen/Qwen3-8B"
    assert "Model from config.json (Qwen/Qwen3-8B)" in page.locator("body").inner_text()


TABLE_ROWS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
  .filter(el => (el.data || []).some(d => d.type === 'table'))
  .map(el => { const v = el.querySelector('.table-control-view').getBoundingClientRect();
    const bottoms = Array.from(el.querySelectorAll('.cell-text'))
      .map(t => t.getBoundingClientRect().bottom);
    return {title: (el.querySelector('.gtitle') || {}).textContent,
            over: Math.max(...bottoms) - v.bottom}; })"""


@pytest.mark.parametrize("width", [1400, 1100])
def test_no_table_clips_a_row(page, voila, width):
    from apps.test_browser import CLIPPED_TEXT
    from browser_support import open_app
    page.set_viewport_size({"width": width, "height": 900})
    # the pages with plotly tables; the review's HTML tables at the narrow width
    for app in ("sizing", "checkpoints") + (("review",) if width < 1400 else ()):
        open_app(page, voila, app)
        page.wait_for_timeout(500)
        tables = page.evaluate(TABLE_ROWS)
        assert app == "review" or tables, app
        for t in tables:
            assert t["over"] <= 1, (app, width, t)
        assert page.evaluate(CLIPPED_TEXT) == [], (app, width)
