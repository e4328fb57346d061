"""The HTML report (llmcost.review.report): one template, plotly.js once, dated, versioned,
share link, one or several scenarios, and every user string escaped.

Scenarios are built from real ``evaluate`` results and llmcost.plots figures. The HTML is
read back with html.parser, the way a browser tokenizes it, so an injected element would
show up as an element, not as a substring.
"""

import json
import re
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser
from importlib.metadata import version as dist_version

import pytest

pytest.importorskip("jinja2")
pytest.importorskip("plotly")

from plotly.offline import get_plotlyjs  # noqa: E402

from llmcost import InputError, plots  # noqa: E402
from llmcost.review import evaluate, headline_items  # noqa: E402
from llmcost.review.report import ReportScenario, render_report, report_filename  # noqa: E402
from llmcost.scenario import Scenario  # noqa: E402

KEYS = ("days", "gpus", "cost_on_demand_usd", "mfu", "fits", "goodput")
WHEN = datetime(2026, 11, 30, 6, 12, 5, tzinfo=timezone.utc)
IMG = "<img src=x onerror=alert(1)>"
BREAK = '"><script>alert(2)</script>'
SCRIPT_END = "</script><script>alert(1)</script>"


class Page(HTMLParser):
    """Elements with their attributes, each script's body and the visible text."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self.scripts, self.text = [], [], []
        self._in_script = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)

    def tags(self, name, **attrs):
        return [a for t, a in self.elements if t == name
                and all(a.get(k) == v for k, v in attrs.items())]

    def visible(self) -> str:
        return " ".join(" ".join(self.text).split())


def scenario_of(gpus: int, label: str) -> ReportScenario:
    res = evaluate(Scenario(gpus=gpus))
    head = [(lab, text, flag.level if flag else None)
            for lab, text, flag in headline_items(res, KEYS).values()]
    return ReportScenario(label, head, [("GPUs", f"{gpus:,}"), ("Training tokens", "2 T"),
                                        ("GPU", "h100-sxm")],
                          list(res.notes) or [f"{gpus} GPUs"],
                          {"waterfall": plots.waterfall(res), "costs": plots.cost_by_option(res)})


@pytest.fixture(scope="module")
def three():
    return [scenario_of(g, lab) for g, lab in ((1024, "A"), (512, "B"), (2048, "C"))]


def newplot_ids(page: Page) -> list[str]:
    return [m.group(1) for s in page.scripts
            for m in re.finditer(r'Plotly\.newPlot\("([^"]+)"', s)]


def figure_json(page: Page, div_id: str) -> dict:
    for s in page.scripts:
        if f'Plotly.newPlot("{div_id}"' in s:
            return json.loads(re.search(r"var f = (\{.*\});\s*Plotly\.newPlot", s, re.S).group(1))
    raise AssertionError(f"no newPlot call for {div_id}")


def plotly_copies(text: str) -> int:
    # a stretch from the middle of plotly.js: its banner could be quoted, this could not
    js = get_plotlyjs()
    return text.count(js[len(js) // 2: len(js) // 2 + 400])


def test_one_scenario_report(three):
    sc = ReportScenario("", three[0].headline, three[0].assumptions, three[0].notes,
                        three[0].figures)
    url = "https://example.org/voila/render/review.ipynb?gpus=1024&tokens=2e12"
    text = render_report([sc], title="llmcost: Architecture review", share_url=url,
                         generated_at=WHEN)
    page = Page(text)
    assert plotly_copies(text) == 1
    # one script for plotly.js, one per figure, nothing else
    assert len(page.scripts) == 1 + 2
    divs = [a["id"] for a in page.tags("div") if "plotly-graph-div" in a.get("class", "")]
    assert len(divs) == 2 and newplot_ids(page) == divs
    # the figures arrive whole: their titles read back from the embedded JSON
    for div_id, fig in zip(divs, sc.figures.values()):
        assert figure_json(page, div_id)["layout"]["title"]["text"] == fig.layout.title.text
    assert page.tags("time", datetime="2026-11-30T06:12:05Z")
    assert "2026-11-30 06:12 UTC" in page.visible()
    assert f"llmcost {dist_version('llmcost')}" in page.visible()
    assert page.tags("a", href=url) and url in page.visible()
    visible = page.visible()
    for label, value, _ in sc.headline:
        assert label in visible and value in visible
    for label, value in sc.assumptions:
        assert label in visible and value in visible
    assert page.tags("title") and "llmcost: Architecture review" in visible
    # one scenario: no comparison columns
    assert not page.tags("th", **{"class": "scenario-col"})


def test_three_scenarios_compare(three):
    deltas = [("GPUs", ["-512", "+1,024"])]
    text = render_report(three, title="A vs B vs C", share_url="review.ipynb?b.gpus=512",
                         generated_at=WHEN, version="9.9.9", deltas=deltas)
    page = Page(text)
    assert plotly_copies(text) == 1
    assert len(page.scripts) == 1 + 6
    divs = [a["id"] for a in page.tags("div") if "plotly-graph-div" in a.get("class", "")]
    assert len(divs) == 6 and newplot_ids(page) == divs
    assert "llmcost 9.9.9" in page.visible()
    assert page.tags("a", href="review.ipynb?b.gpus=512")

    table = text[text.index('<table class="headline compare">'):]
    table = table[:table.index("</table>")]
    head = Page(table)
    # one column per scenario, then "B vs A" and "C vs A"
    assert [len(head.tags("th", **{"class": "scenario-col"})),
            len(head.tags("th", **{"class": "delta-col"}))] == [3, 2]
    rows = re.findall(r"<tr[^>]*>.*?</tr>", table[table.index("<tbody>"):], re.S)
    assert len(rows) == len(KEYS)
    for row in rows:
        assert row.count('<td class="value') == 3
    gpus_row = next(r for r in rows if ">GPUs<" in r)
    assert 'class="differs"' in gpus_row
    assert re.findall(r'<td class="delta">([^<]*)</td>', gpus_row) == ["-512", "+1,024"]
    fits_row = next(r for r in rows if ">Fits in memory<" in r)
    assert 'class="differs"' not in fits_row           # "yes" in all three

    assumptions = text[text.index('<table class="assumptions compare">'):]
    assumptions = assumptions[:assumptions.index("</table>")]
    differing = re.findall(r'<tr class="differs"><th scope="row">([^<]*)</th>', assumptions)
    assert differing == ["GPUs"]                        # tokens and GPU are the same
    # a heading per scenario above its plots
    fig_section = Page(text[text.index('<section class="figures">'):])
    assert [t.strip() for t in fig_section.text if t.strip() in ("A", "B", "C")] == \
        ["A", "B", "C"]


def test_overlay_given_once_and_empty_figures_skipped(three):
    a = three[0]
    overlay = {"overlay": plots.waterfall(evaluate(Scenario(gpus=256))), **a.figures}
    scs = [ReportScenario("A", a.headline, a.assumptions, a.notes, overlay),
           ReportScenario("B", three[1].headline, three[1].assumptions, three[1].notes, {})]
    page = Page(render_report(scs, title="t", share_url=None, generated_at=WHEN))
    divs = page.tags("div")
    names = [d["data-figure"] for d in divs if "data-figure" in d]
    assert names == ["overlay", "waterfall", "costs"]
    assert len(page.scripts) == 1 + 3
    assert not page.tags("a", **{"class": "share-link"})
    text = render_report(scs, title="t", share_url=None, generated_at=WHEN)
    plot_headings = re.findall(r"<h3>([^<]*)</h3>", text[text.index('<section class="figures">'):])
    assert plot_headings == ["A"]                  # B has no plots of its own: no heading


def test_no_figures_no_plotly():
    sc = ReportScenario("", [("GPUs", "8", None)], [("GPUs", "8")], [], {})
    text = render_report([sc], title="t", share_url=None, generated_at=WHEN)
    assert plotly_copies(text) == 0 and not Page(text).scripts
    assert render_report(sc, title="t", share_url=None, generated_at=WHEN) == text
    assert len(text) < 20_000


def test_missing_figure_and_flags(three):
    a = ReportScenario("A", [("Days to train", "25.0", "implausible"), ("GPUs", "1,024", None)],
                       [], [], {})
    b = ReportScenario("B", [("GPUs", "512", "infeasible")], [], [], {})
    text = render_report([a, b], title="t", share_url=None, generated_at=WHEN)
    assert '<td class="value num flag-implausible">25.0<span class="flag">implausible</span>' \
        in text
    assert '<td class="value missing">&mdash;</td>' in text      # B has no days
    assert '<td class="value num flag-infeasible">512' in text


HOSTILE = [IMG, BREAK, SCRIPT_END, "' onmouseover='alert(3)"]


@pytest.mark.parametrize("payload", HOSTILE)
def test_every_user_string_is_escaped(three, payload):
    fig = plots.waterfall(evaluate(Scenario()))
    fig.update_layout(title=SCRIPT_END + payload)
    scs = [ReportScenario(payload, [(payload, payload, payload), ("GPUs", "1", None)],
                          [(payload, payload), ("GPUs", "1")], [payload],
                          {payload: fig}),
           ReportScenario("B" + payload, [("GPUs", payload, None)], [("GPUs", "2")], [payload],
                          {})]
    url = "https://example.org/?q=" + payload
    text = render_report(scs, title=payload, share_url=url, generated_at=WHEN,
                         version=payload, deltas=[("GPUs", [payload])])
    page = Page(text)
    # the plotly.js script and one per figure: no injected script element
    assert len(page.scripts) == 2 == len(page.tags("script"))
    # a figure's JSON holds the payload as data, with no "<" to end or open an element
    figure_script = next(s for s in page.scripts if "Plotly.newPlot" in s and len(s) < 10**6)
    assert "<" not in figure_script and ">" not in figure_script
    div = next(a["id"] for a in page.tags("div") if "plotly-graph-div" in a.get("class", ""))
    assert figure_json(page, div)["layout"]["title"]["text"] == SCRIPT_END + payload
    markup = text
    for body in page.scripts:
        markup = markup.replace(body, "")
    for raw in (IMG, BREAK, SCRIPT_END, "<script>alert", "onmouseover='"):
        assert raw not in markup
    assert not page.tags("img")
    assert all(not k.startswith("on") for _, attrs in page.elements for k in attrs)
    # every string is shown as text: title, label, headline, assumption, note, version
    assert page.visible().count(payload) >= 8
    share = [a for a in page.tags("a") if "share-link" in a.get("class", "")]
    if any(c.isspace() for c in payload):
        assert not share                       # a link with spaces is shown, not followed
    else:
        assert [a["href"] for a in share] == [url]
    assert url in page.visible()


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JavaScript:alert(1)",
                                 " javascript:alert(1)", "java\tscript:alert(1)",
                                 "data:text/html,<script>alert(1)</script>",
                                 "vbscript:msgbox(1)", "https://x.org/ a", "\\\\evil/x"])
def test_unsafe_share_links_are_text(url):
    sc = ReportScenario("", [("GPUs", "8", None)], [], [], {})
    page = Page(render_report([sc], title="t", share_url=url, generated_at=WHEN))
    assert not page.tags("a")
    assert " ".join(url.split()) in page.visible()


@pytest.mark.parametrize("url", ["http://127.0.0.1:8866/voila/render/review.ipynb?gpus=8",
                                 "https://mybinder.org/v2/gh/o/r/main?urlpath=voila%2Frender",
                                 "review.ipynb?gpus=8&b.gpus=16", "/voila/render/x.ipynb"])
def test_safe_share_links_are_clickable(url):
    sc = ReportScenario("", [("GPUs", "8", None)], [], [], {})
    page = Page(render_report([sc], title="t", share_url=url, generated_at=WHEN))
    assert page.tags("a", href=url)


def test_dates_are_utc():
    sc = ReportScenario("", [("GPUs", "8", None)], [], [], {})
    paris = timezone(timedelta(hours=2))
    page = Page(render_report([sc], title="t", share_url=None,
                              generated_at=datetime(2026, 11, 30, 8, 12, tzinfo=paris)))
    assert page.tags("time", datetime="2026-11-30T06:12:00Z")
    now = datetime.now(timezone.utc)
    page = Page(render_report([sc], title="t", share_url=None))
    stamp = page.tags("time")[0]["datetime"]
    assert abs(datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
               - now) < timedelta(minutes=1)


def test_report_filename():
    assert report_filename("review", WHEN) == "llmcost-review-2026-11-30-0612.html"
    paris = timezone(timedelta(hours=2))
    assert report_filename("Rent vs buy", datetime(2026, 1, 1, 1, 5, tzinfo=paris)) == \
        "llmcost-rent-vs-buy-2025-12-31-2305.html"
    assert report_filename("../../etc/passwd", WHEN) == "llmcost-etc-passwd-2026-11-30-0612.html"
    assert report_filename("<>", WHEN) == "llmcost-report-2026-11-30-0612.html"


def test_bad_input_names_the_parameter():
    sc = ReportScenario("A", [("GPUs", "8", None)], [], [], {})
    with pytest.raises(InputError) as e:
        render_report([], title="t", share_url=None)
    assert e.value.param == "scenarios"
    with pytest.raises(InputError) as e:
        render_report([sc, sc], title="t", share_url=None, deltas=[("Days", ["+1"])])
    assert e.value.param == "deltas" and "Days" in str(e.value)
    with pytest.raises(InputError) as e:
        render_report([sc, sc], title="t", share_url=None, deltas=[("GPUs", ["+1", "+2"])])
    assert e.value.param == "deltas"
    with pytest.raises(InputError) as e:
        render_report([ReportScenario("A", [("GPUs",)], [], [], {})], title="t", share_url=None)
    assert e.value.param == "headline"
    with pytest.raises(InputError) as e:
        render_report([ReportScenario("A", [], [("GPUs", "8", "extra")], [], {})], title="t",
                      share_url=None)
    assert e.value.param == "assumptions"
    with pytest.raises(InputError) as e:
        render_report([sc], title="t", share_url=None, generated_at="2026-11-30")
    assert e.value.param == "generated_at"
    with pytest.raises(InputError) as e:
        render_report([ReportScenario("A", [], [], [], {"x": 42})], title="t", share_url=None)
    assert e.value.param == "figures"
