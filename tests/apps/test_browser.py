"""The Voila apps in a real browser: Debian's chromium driven by Playwright.

Voila runs on a free loopback port in its own process group. Each app is opened, a control
is changed the way a person would (slider by keyboard, number box, dropdown), and the shown
figures and a plot must change; shared links preload values, bad links warn, bad typed
values show a message; no traceback anywhere. A screenshot per app goes to
artifacts/screenshots/. Without /usr/bin/chromium the tests skip, saying why, unless
LLMCOST_REQUIRE_BROWSER is set (CI sets it: there they must run).
"""

import re
import time
from pathlib import Path

import pytest  # noqa: E402  (after browser_support, which skips without chromium)
from browser_support import ROOT, SHOTS, assert_no_error_text, fill_number, open_app, shot, text_of, titles, wait_change

pytestmark = pytest.mark.browser

def test_review_number_box(voila, page):
    urls = []
    page.on("request", lambda r: urls.append(r.url))
    open_app(page, voila, "review")
    # under llmcost.server the plots are PlotViews drawn with the apps' own plotly.js
    # bundle, loaded once from the page's head; plotly's 4.8 MB JupyterLab extension is
    # never fetched (llmcost.apps.plotview). Checked on this page: the module's pages share
    # one server and its kernel cap.
    page.wait_for_function("document.querySelectorAll('.llmc-plotview.js-plotly-plot').length >= 2",
                           timeout=60_000)
    assert sum("/llmcost/static/plotly-llmcost.min.js?v=" in u for u in urls) == 1
    assert not [u for u in urls if "jupyterlab-plotly" in u]
    assert page.evaluate("document.getElementById('llmc-plotly').dataset.state") == "loaded"
    days, t0 = text_of(page, ".llmc-headline-days"), titles(page)
    fill_number(page, "gpus", 512)
    wait_change(page, lambda: text_of(page, ".llmc-headline-gpus"), "1,024")
    assert wait_change(page, lambda: text_of(page, ".llmc-headline-days"), days) != days
    assert wait_change(page, lambda: titles(page), t0) != t0
    # the notebook's tinker cell prints only outside Voila
    assert "Days to train: " not in page.locator("body").inner_text()
    # a count typed as people write it, and shown back the same way
    fill_number(page, "gpus", "2,048")
    wait_change(page, lambda: text_of(page, ".llmc-headline-gpus"), "512")
    assert text_of(page, ".llmc-headline-gpus") == "2,048"
    assert page.locator(".llmc-ctl-gpus input").first.input_value() == "2,048"
    assert_no_error_text(page)
    shot(page, "review")


def assert_control_moves_headline(page, app, headline, change):
    """Change one control of an open app the way a person would (``change()``): the headline
    figure ``headline`` and the plots' titles must follow, with no error on the page; the
    screenshot of the app is taken after."""
    selector = f".llmc-headline-{headline}"
    before, t0 = text_of(page, selector), titles(page)
    change()
    assert wait_change(page, lambda: text_of(page, selector), before) != before
    assert wait_change(page, lambda: titles(page), t0) != t0
    assert_no_error_text(page)
    shot(page, app)


def test_tco_slider_by_keyboard(voila, page):
    open_app(page, voila, "tco")

    def ten_steps_left():
        handle = page.locator(".llmc-ctl-utilization .noUi-handle").first
        handle.focus()
        for _ in range(10):
            handle.press("ArrowLeft")
    assert_control_moves_headline(page, "tco", "breakeven_months", ten_steps_left)


SEED_SPOT = ("?price_source=custom&spot_discount=0.6&spot_lost_work=custom"
             "&lost_hours_per_preemption=1.5&restart_s=0&failure_rate=custom"
             "&failures_per_1000_gpu_days=0.0001")


def test_spot_number_box(voila, page):
    # the seed's 60% off, 2.4 preemptions a day, 1.5 h lost: 1 - 0.4 / (1 - 0.15) = 52.9%
    open_app(page, voila, "spot", SEED_SPOT)
    assert text_of(page, ".llmc-headline-net") == "52.9%"
    assert_control_moves_headline(page, "spot", "net",
                                  lambda: fill_number(page, "preemptions_per_day", 1.0))


def test_sizing_dropdown(voila, page):
    open_app(page, voila, "sizing")
    assert_control_moves_headline(page, "sizing", "days",
                                  lambda: page.locator(".llmc-ctl-gpu select").select_option("b200"))


def test_checkpoints_dropdown(voila, page):
    open_app(page, voila, "checkpoints")
    # the default is async (a 2025 team's checkpoints): switch to sync writes
    assert_control_moves_headline(
        page, "checkpoints", "stall",
        lambda: page.locator(".llmc-ctl-checkpoint_mode select").select_option("sync"))


def test_utilization_number_box(voila, page):
    open_app(page, voila, "utilization")
    assert_control_moves_headline(page, "utilization", "effective_utilization",
                                  lambda: fill_number(page, "measured_wall_clock_s", 20000))


def test_shared_link_preloads_values(voila, page):
    open_app(page, voila, "review", "?model=llama3-8b&gpus=64&theme=light")
    assert page.locator(".llmc-ctl-gpus input").first.input_value() == "64"
    assert page.locator(".llmc-ctl-model select").first.input_value() == "llama3-8b"
    assert text_of(page, ".llmc-headline-gpus") == "64"
    assert page.locator(".llmc-warning").count() == 0
    assert "gpus=64" in page.locator(".llmc-share-link").first.get_attribute("href")


def test_bad_link_warns_and_keeps_defaults(voila, page):
    open_app(page, voila, "review", "?gpus=-5&foo=bar")
    warning = page.locator(".llmc-warning").first
    assert warning.is_visible()
    text = warning.inner_text()
    assert "gpus" in text and "foo" in text
    assert text_of(page, ".llmc-headline-gpus") == "1,024"
    assert_no_error_text(page)


def test_bad_typed_value_shows_message_and_keeps_results(voila, page):
    open_app(page, voila, "review")
    days = text_of(page, ".llmc-headline-days")
    fill_number(page, "gpus", -8)
    err = page.locator(".llmc-err-gpus").first
    wait_change(page, lambda: err.inner_text().strip(), "")
    # in the control's words, with the allowed range
    assert "GPUs must be between 1 and 131,072" in err.inner_text() and err.is_visible()
    assert text_of(page, ".llmc-headline-days") == days
    fill_number(page, "tokens", 0)
    wait_change(page, lambda: page.locator(".llmc-err-tokens").first.inner_text().strip(), "")
    assert text_of(page, ".llmc-headline-days") == days
    assert_no_error_text(page)


def test_derived_controls_are_greyed_out(voila, page):
    # prices follow the GPU from the catalog: the price box shows the figure in use, disabled
    open_app(page, voila, "review")
    box = page.locator(".llmc-ctl-on_demand_usd_per_gpu_hour input").first
    # the rule's H100 on-demand offer: RunPod, $21.52 / 8 GPUs
    assert box.is_disabled() and float(box.input_value()) == 2.69
    page.locator(".llmc-ctl-price_source select").select_option("custom")
    wait_change(page, lambda: box.is_disabled(), True)
    assert float(box.input_value()) == 2.69          # custom starts from the figure shown
    assert_no_error_text(page)


def test_report_downloads_in_the_browser(voila, page, tmp_path):
    # the report is a browser download (nothing written on the server)
    open_app(page, voila, "spot")
    with page.expect_download(timeout=60_000) as dl:
        page.locator(".llmc-report button, button.llmc-report").first.click()
    saved = tmp_path / dl.value.suggested_filename
    dl.value.save_as(saved)
    text = saved.read_text()
    assert dl.value.suggested_filename.startswith("llmcost-spot-") and "Net savings" in text
    assert "spot.ipynb" in text and text.count("Plotly.newPlot") == 2
    assert not (ROOT / "notebooks" / "reports").exists() or \
        not any((ROOT / "notebooks" / "reports").iterdir())


def test_the_report_of_a_review_sized_by_days_names_the_gpus_used(voila, page, tmp_path):
    # the report's assumptions said the GPU box's 1,024 when sizing by days used
    # thousands; it also carries the cost table of the page
    open_app(page, voila, "review", "?model=llama3-70b&tokens=15e12&sizing=days&target_days=30")
    gpus = text_of(page, ".llmc-headline-gpus")
    assert gpus != "1,024"
    with page.expect_download(timeout=60_000) as dl:
        page.locator(".llmc-report button, button.llmc-report").first.click()
    saved = tmp_path / dl.value.suggested_filename
    dl.value.save_as(saved)
    text = saved.read_text()
    # the headline names the floor's size beside ("7,008 (the floor needs 6,864)")
    used = gpus.split(" (")[0]
    assert f"{used} (sized for the days)" in text and "Layout used" in text
    cash = page.locator(".llmc-cost-table tbody tr").first.locator("td").nth(2).inner_text()
    assert "Cost by way to pay" in text and f'<td class="value">{cash}</td>' in text


def test_moe_review_link_plans_deepseek_v3_on_h800(voila, page):
    # an MoE model from a shared link, planned with expert parallelism
    open_app(page, voila, "review",
             "?model=deepseek-v3&gpu=h800&gpus=2048&precision=fp8&tokens=14800000000000")
    assert page.locator(".llmc-ctl-model select").first.input_value() == "deepseek-v3"
    assert page.locator(".llmc-warning").count() == 0
    assert re.search(r"EP\d+", page.locator("body").inner_text())
    assert_no_error_text(page)
    # the load-imbalance control changes the figures and goes into the link
    before = text_of(page, ".llmc-headline-days")
    fill_number(page, "moe_load_imbalance", 1.0)
    wait_change(page, lambda: text_of(page, ".llmc-headline-days"), before)
    link = page.locator(".llmc-share-link").first
    end = time.time() + 10
    while "moe_load_imbalance=1&" not in link.get_attribute("href") and time.time() < end:
        page.wait_for_timeout(200)
    assert "moe_load_imbalance=1&" in link.get_attribute("href")
    shot(page, "review-deepseek-v3-h800")


def test_storage_and_checkpoints_link_405b_async(voila, page):
    # the storage app from a shared link; Llama 3.1 405B on 16,384 H100, async
    from llmcost import review
    from llmcost.review.storage_view import storage_summary
    from llmcost.scenario import Scenario
    # a 20 GB/s shared tier (the default scales with the cluster: 2 TB/s here, as Meta's)
    open_app(page, voila, "checkpoints",
             "?model=llama3-405b&gpu=h100-sxm&gpus=16384&checkpoint_mode=async"
             "&shared_storage_gb_per_s=20")
    assert page.locator(".llmc-title").first.inner_text().strip() == "Storage and checkpoints"
    assert page.locator(".llmc-warning").count() == 0
    out = storage_summary(review.evaluate(Scenario(model="llama3-405b", gpu="h100-sxm",
                                                   gpus=16384, checkpoint_mode="async",
                                                   shared_storage_gb_per_s=20)))
    assert text_of(page, ".llmc-headline-goodput") == f"{out['goodput']:.2%} (async)"
    # the 5.68 TB upload at 20 GB/s takes 284.1 s; Daly's 111 s is raised to it
    assert text_of(page, ".llmc-headline-upload") == "284.1 s"
    assert "raised to the upload" in text_of(page, ".llmc-headline-interval")
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 3",
                           timeout=60_000)
    assert "warm" in page.locator(".llmc-plot-tiers").first.inner_text()
    assert_no_error_text(page)
    shot(page, "checkpoints-405b-async")


def test_landing_page_cards_carry_the_link(voila, page):
    # the landing page lists every app with a live figure, review first
    from llmcost.apps.registry import apps
    page.goto(f"{voila}/index.ipynb?model=llama3-8b&gpus=64", wait_until="commit", timeout=60_000)
    page.wait_for_selector(".llmc-card-figures b", timeout=90_000)
    end = time.time() + 30
    while page.locator(".llmc-progress").count() and time.time() < end:
        page.wait_for_timeout(200)
    links = page.locator(".llmc-card-link")
    assert links.count() == len(apps())
    assert links.first.inner_text() == "Architecture review"
    assert_no_error_text(page)
    shot(page, "landing")
    links.first.click()
    page.wait_for_selector(".llmc-headline-value", timeout=90_000)
    assert page.locator(".llmc-ctl-model select").first.input_value() == "llama3-8b"


def test_pin_and_compare_in_the_browser(voila, page):
    # pin A, change a control, see A vs B with deltas; the link carries both
    open_app(page, voila, "review", "?model=llama3-8b&gpus=64")
    page.locator(".llmc-pin").first.click()
    page.wait_for_function("document.querySelector('.llmc-pin') && "
                           "document.querySelector('.llmc-pin').innerText.includes('Pin as B')",
                           timeout=30_000)
    fill_number(page, "gpus", 128)
    page.wait_for_function("document.querySelector('.llmc-compare-table') && "
                           "document.querySelector('.llmc-compare-table').innerText.includes('vs A')",
                           timeout=30_000)
    table = page.locator(".llmc-compare-table").first.inner_text()
    assert "B (current)" in table and "vs A" in table
    link = page.locator(".llmc-share-link").first
    end = time.time() + 10
    while "b.gpus=128" not in link.get_attribute("href") and time.time() < end:
        page.wait_for_timeout(200)
    assert link.get_attribute("href").endswith("model=llama3-8b&gpus=64&b.gpus=128")
    assert_no_error_text(page)
    shot(page, "review-compare")


def _overlaps(a, b) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"] or
                a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


#: text cut by its box: an ellipsis or hidden overflow (a button's, a label's, a table
#: cell's), read from the page: scrollWidth beyond clientWidth
CLIPPED_TEXT = """() => Array.from(document.querySelectorAll(
    '.widget-button, .jupyter-button, .widget-label, .llmc-label, .llmc-file-button, '
    + '.llmc-table td, .llmc-table th, .llmc-headline-label, .llmc-headline-value'))
  .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1
          && getComputedStyle(e).overflowX !== 'visible')
  .map(e => e.textContent.trim().slice(0, 60))"""


def test_every_app_screenshot_without_overlaps_or_clipped_labels(voila, page):
    """A screenshot of every registered app at 1400 x 900; in every plot the legend does
    not overlap a colorbar, the axis titles, the plot title, the tick labels and the rows of
    a table lie inside the figure; no button, label or table cell cuts its text."""
    from llmcost.apps.registry import apps
    page.set_viewport_size({"width": 1400, "height": 900})
    for cls in apps():
        open_app(page, voila, cls.name)
        page.wait_for_timeout(500)
        assert page.evaluate(CLIPPED_TEXT) == [], f"{cls.name}: text cut by its box"
        shot(page, f"app-{cls.name}")
        assert_no_error_text(page)
        for plot in page.locator(".js-plotly-plot").all():
            box = plot.bounding_box()
            legend = plot.locator("g.legend").all()
            bars = plot.locator("g.colorbar").all()
            for lg in legend:
                for cb in bars:
                    lb, cbb = lg.bounding_box(), cb.bounding_box()
                    assert not (lb and cbb and _overlaps(lb, cbb)), f"{cls.name}: legend over colorbar"
            for sel in (".xtitle", ".ytitle", ".gtitle", ".xtick text", ".ytick text",
                        ".y2tick text", "g.table-cell text"):
                for t in plot.locator(sel).all():
                    tb = t.bounding_box()
                    if not tb or not box:
                        continue
                    assert tb["x"] >= box["x"] - 1 and tb["x"] + tb["width"] <= box["x"] + box["width"] + 1, \
                        f"{cls.name}: {sel} clipped horizontally"
                    assert tb["y"] >= box["y"] - 1 and tb["y"] + tb["height"] <= box["y"] + box["height"] + 1, \
                        f"{cls.name}: {sel} clipped vertically"


def test_load_scenario_file_in_the_browser(voila, page, tmp_path):
    # the picker's label has no "(0)" count; a good file loads, a broken one changes nothing
    open_app(page, voila, "review")
    button = page.locator(".llmc-file-button").first
    assert button.inner_text() == "Load scenario or config.json"
    good = tmp_path / "s.json"
    good.write_text('{"model": "llama3-8b", "gpus": 64}')
    page.locator(".llmc-file-input").first.set_input_files(str(good))
    wait_change(page, lambda: page.locator(".llmc-ctl-model select").first.input_value(), "llama3-70b")
    assert page.locator(".llmc-ctl-gpus input").first.input_value() == "64"
    bad = tmp_path / "bad.json"
    bad.write_text("[[[[")
    page.locator(".llmc-file-input").first.set_input_files(str(bad))
    page.wait_for_selector("text=nothing changed", timeout=30_000)
    assert page.locator(".llmc-ctl-model select").first.input_value() == "llama3-8b"
    assert_no_error_text(page)


def test_hostile_link_and_csv_are_inert_in_chromium(voila, page, tmp_path):
    # no injected node, no script flag, from a link and from the scaling CSV
    from urllib.parse import quote
    payload = "<img src=x onerror=window.__xss=1>"
    q = quote(payload, safe="")
    open_app(page, voila, "sizing", f"?model={q}&{q}=1&b.gpu={q}")
    csv = tmp_path / "m.csv"
    csv.write_text(f"nodes,tokens_per_s\n{payload},1\n")
    with page.expect_file_chooser(timeout=30_000) as chooser:
        page.locator(".llmc-scaling-upload").first.click()
    chooser.value.set_files(str(csv))
    page.wait_for_selector("text=Could not read the CSV", timeout=30_000)
    page.wait_for_timeout(500)
    assert page.evaluate("window.__xss") is None
    assert page.locator("img[src='x']").count() == 0
    assert payload in page.locator("body").inner_text()      # shown as text, not markup



def test_upload_errors_in_chromium_name_the_row_and_replace_the_last_message(voila, page, tmp_path):
    # a sizing CSV with 1e400 nodes (an uncaught OverflowError before) is refused by
    # row and column, and its message replaces the good upload's fit
    open_app(page, voila, "sizing")
    good = tmp_path / "good.csv"
    good.write_text("nodes,tokens_per_s\n1,1000\n2,1950\n4,3800\n8,4800\n")
    bad = tmp_path / "bad.csv"
    bad.write_text("nodes,tokens_per_s\n1,1000\n1e400,1950\n")
    for path, expected in ((good, "Fitted communication share"), (bad, "Could not read the CSV")):
        with page.expect_file_chooser(timeout=30_000) as chooser:
            page.locator(".llmc-scaling-upload").first.click()
        chooser.value.set_files(str(path))
        page.wait_for_selector(f"text={expected}", timeout=30_000)
    body = page.locator("body").inner_text()
    assert "row 3, column nodes" in body
    assert "Fitted communication share" not in body
    assert_no_error_text(page)


def test_a_scenario_file_with_a_5000_digit_number_says_so_in_chromium(voila, page, tmp_path):
    # it was called "too deeply nested"
    open_app(page, voila, "review")
    path = tmp_path / "digits.json"
    path.write_text('{"model": "llama3-8b", "gpus": ' + "9" * 5000 + "}")
    before = page.locator(".llmc-ctl-model select").first.input_value()
    page.locator(".llmc-file-input").first.set_input_files(str(path))
    page.wait_for_selector("text=nothing changed", timeout=30_000)
    body = page.locator("body").inner_text()
    assert "a number with 5,000 digits" in body and "nested" not in body
    assert page.locator(".llmc-ctl-model select").first.input_value() == before
    assert_no_error_text(page)


BUSY_OBSERVER = """() => {
  const el = document.querySelector('.llmc-figures');
  window.__llmcStates = [];
  let title = (el.querySelector('.gtitle') || {}).textContent;
  new MutationObserver((records) => {
    for (const r of records) {
      if (r.target === el && r.attributeName === 'class') {
        const was = (r.oldValue || '').split(' ').includes('llmc-busy');
        // the transition this record made (the current state may be later than it)
        window.__llmcStates.push([was ? 'idle' : 'busy', performance.now()]);
      }
    }
    const t = (el.querySelector('.gtitle') || {}).textContent;
    if (t !== title) { title = t; window.__llmcStates.push(['figure', performance.now()]); }
  }).observe(el, {attributes: true, attributeOldValue: true, subtree: true, childList: true,
                  characterData: true});
}"""


def test_a_change_greys_the_figures_until_the_new_ones_are_drawn(voila, page):
    # after a change the old figures stayed on screen for seconds, looking current
    open_app(page, voila, "review")
    page.wait_for_function("document.querySelectorAll('.llmc-plotview.js-plotly-plot').length >= 2",
                           timeout=60_000)
    page.evaluate(BUSY_OBSERVER)
    fill_number(page, "gpus", 512)
    page.wait_for_function("window.__llmcStates.some(s => s[0] === 'figure') && "
                           "window.__llmcStates[window.__llmcStates.length - 1][0] === 'idle'",
                           timeout=60_000)
    timed = page.evaluate("window.__llmcStates")
    states = [s for s, _ in timed]
    # the busy state comes first, the new figure while it holds, and it goes after the figure
    assert states[0] == "busy", states
    assert states.index("figure") < len(states) - 1 and "idle" not in states[:states.index("figure")], states
    assert page.locator(".llmc-busy").count() == 0
    assert_no_error_text(page)


def test_a_config_json_upload_reviews_that_model_and_its_link_reproduces_it(voila, page, tmp_path):
    # a reviewer's own model, brought as its Hugging Face config.json
    src = Path(__file__).resolve().parents[1] / "data" / "hf_configs" / "qwen3-8b.json"
    cfg = tmp_path / "config.json"
    cfg.write_text(src.read_text())
    open_app(page, voila, "review")
    days = text_of(page, ".llmc-headline-days")
    page.locator(".llmc-file-input").first.set_input_files(str(cfg))
    page.wait_for_selector("text=Loaded a config.json", timeout=30_000)
    assert "36 layers, hidden 4,096" in page.locator("body").inner_text()
    # the option is labelled by the file's name (the select's value is the label)
    assert page.locator(".llmc-ctl-model select").first.input_value().replace(
        "\xa0", " ") == "config: config.json"
    new_days = wait_change(page, lambda: text_of(page, ".llmc-headline-days"), days)
    link = page.locator(".llmc-share-link").first.inner_text()
    assert "cfg.num_hidden_layers=36" in link and "model=config" in link
    # the link opens the same model and the same figures
    page.goto(link if link.startswith("http") else voila + link.split("voila", 1)[-1])
    page.wait_for_selector(".llmc-headline-days", timeout=60_000)
    wait_change(page, lambda: text_of(page, ".llmc-headline-days"), "")
    assert text_of(page, ".llmc-headline-days") == new_days
    assert_no_error_text(page)


def test_the_forecast_its_band_floor_and_napkin_on_page_report_and_landing(voila, page,
                                                                           tmp_path):
    # the review page, its report and the landing card show the forecast (days, GPU-hours),
    # the band labelled with its group and run count, the floor and the napkin: the same
    # figures as `llmcost review --json` for the link
    import json as _json

    from llmcost.cli import main as cli_main
    from llmcost.review.format import human_count
    q = "model=llama2-13b&gpu=h100-sxm&gpus=256&tokens=2e12"
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli_main(["review", "--query", q, "--json"]) == 0
    r = _json.loads(buf.getvalue())
    rr = r["realized_ratio"]
    days_text = (f"{r['days']:,.1f} (80% band {r['days_band'][0]:,.1f}-"
                 f"{r['days_band'][1]:,.1f} from {rr['runs']} published runs; "
                 f"floor {r['days_floor']:,.1f})")
    hours_text = (f"{human_count(r['gpu_hours'])} (80% band "
                  f"{human_count(r['gpu_hours_band'][0])}-"
                  f"{human_count(r['gpu_hours_band'][1])} from {rr['runs']} published runs; floor "
                  f"{human_count(r['gpu_hours_floor'])}; napkin "
                  f"{human_count(r['napkin_gpu_hours'])})")
    group_text = f"{rr['runs']} published runs, {rr['group']}"
    open_app(page, voila, "review", "?" + q)
    assert text_of(page, ".llmc-headline-days") == days_text
    assert text_of(page, ".llmc-headline-gpu_hours") == hours_text
    assert group_text in text_of(page, ".llmc-headline-realized_ratio")
    assert "forecast" in page.locator(".llmc-headline").first.inner_text()
    with page.expect_download(timeout=60_000) as dl:
        page.locator(".llmc-report button, button.llmc-report").first.click()
    saved = tmp_path / dl.value.suggested_filename
    dl.value.save_as(saved)
    report = saved.read_text()
    import html
    for text in (days_text, hours_text, group_text):
        assert html.escape(text) in report, text
    page.goto(f"{voila}/index.ipynb?{q}", wait_until="commit", timeout=60_000)
    page.wait_for_selector(".llmc-card-figures b", timeout=90_000)
    end = time.time() + 60
    while page.locator(".llmc-progress").count() and time.time() < end:
        page.wait_for_timeout(200)
    card = page.locator(".llmc-card").first.inner_text()
    for text in (days_text, hours_text, group_text):
        assert text in card, text
    assert_no_error_text(page)
