"""The "Which GPU, which cloud" app (offers): the rows of `llmcost compare` for the same
link, cheapest first, each the review of its GPU and offer; in chromium the page's table
carries the command line's rows."""

import pytest
from cli.test_cli_robust import cli_json

from llmcost.apps.offers_app import OffersApp
from llmcost.apps.plotview import shown_figure

Q = "model=llama3-8b&gpus=64&tokens=1e11"


@pytest.fixture(scope="module")
def app():
    return OffersApp(query=Q)


def test_the_app_shows_the_rows_of_llmcost_compare(app):
    cli = cli_json(["compare", "--query", Q])["rows"]
    mine = app.results.to_json()["rows"]
    assert mine == cli
    table = app.tables(app.results)[0]
    assert len(table["rows"]) == len(cli)
    # the calibrated column says what the command line says, row by row
    col = table["columns"].index("calibrated")
    assert [r[col].split("; ")[0] for r in table["rows"]] == [r["calibration_text"] for r in cli]
    first = next(r for r in cli if r["cost_usd"] is not None)
    label, text = app.headline(app.results)["cheapest"]
    assert label == "Cheapest way to pay" and text.startswith(
        f"{first['gpu']} · {first['offer'] or 'buy'} · {first['option_label']}")
    # the plot: a trace per GPU, a marker per costed row
    fig = shown_figure(app.outputs["cost_days"])
    costed = [r for r in cli if r["cost_usd"] is not None and r["days"] is not None]
    assert sum(len(d["x"]) for d in fig["data"]) == len(costed)
    assert {d["name"] for d in fig["data"]} == {r["gpu"] for r in costed}


def test_the_table_says_what_keeps_a_row_from_being_the_cheapest(app):
    rows = app.tables(app.results)[0]["rows"]
    text = [" | ".join(r) for r in rows]
    assert any("spot capacity not documented at this size" in t for t in text)
    ranked = [t for t in text if ", its bands' slow end" in t]
    assert ranked and all("no: ranked at $" in t for t in ranked)
    assert any("missing (" in t for t in text)


@pytest.mark.browser
def test_the_page_carries_the_command_lines_rows(voila, page):
    from browser_support import assert_no_error_text, open_app
    open_app(page, voila, "offers", f"?{Q}")
    page.wait_for_selector(".llmc-offers-table tbody tr", timeout=90_000)
    cli = cli_json(["compare", "--query", Q])["rows"]
    rows = page.locator(".llmc-offers-table tbody tr")
    assert rows.count() == len(cli)
    first = rows.first.inner_text()
    assert cli[0]["gpu"] in first and (cli[0]["offer"] or "buy") in first
    assert_no_error_text(page)


def test_the_landing_card_is_the_apps_row_for_the_scenarios_gpu(app):
    # the card reads the scenario's own GPU only (cheap on the landing page); its figure is
    # the app's cheapest row on that GPU that can be taken at this size
    label, text = app.card(app.card_compute(app.scenario))["cheapest_here"]
    mine = [r for r in app.results.rows if r.gpu == app.scenario.gpu and r.cost_usd is not None
            and not r.flag]
    from llmcost.review import OPTION_LABELS
    from llmcost.review.format import usd_text
    top = mine[0]
    assert label == f"Cheapest way to pay on {top.gpu}"
    assert text == f"{top.offer or 'buy'} · {OPTION_LABELS[top.option]}: {usd_text(top.cost_usd)}"
