"""The apps' plots: the plotly.js bundle they draw with, and the widgets that hold them.

Under the workbook's servers a plot is a ``PlotView`` drawing with
``llmcost/apps/static/plotly-llmcost.min.js`` (plotly.js with only the apps' trace types);
elsewhere an Output with plotly's mime output. The browser tests (test_browser.py, served by
llmcost.server) see the first kind draw; tests/test_server.py checks both servers serve
the bundle.
"""

import re

import plotly.graph_objects as go
import plotly.offline
import pytest

from llmcost.apps import assets
from llmcost.apps.plotview import PlotView, plot_widget, show_figure, shown_figure
from llmcost.apps.registry import apps
from llmcost.apps.review_app import ReviewApp
from llmcost.scenario import Scenario

BANNER = re.compile(r"^/\*! plotly\.js v(\S+) .*traces: ([a-z0-9 ]+) \*/")


def bundle_banner():
    with open(assets.STATIC_DIR / assets.BUNDLE) as f:
        m = BANNER.match(f.readline())
    assert m, "the bundle's first line names its plotly.js version and trace types"
    return m.group(1), set(m.group(2).split())


def test_bundle_is_the_plotly_js_of_the_installed_plotly():
    # the apps draw with the same plotly.js as the reports (plotly.py's own copy)
    version, _ = bundle_banner()
    assert version == plotly.offline.get_plotlyjs_version()


def test_bundle_is_a_fraction_of_plotly_js():
    size = (assets.STATIC_DIR / assets.BUNDLE).stat().st_size
    assert size < 0.4 * len(plotly.offline.get_plotlyjs())


#: the default scenario in make test; the others (a dense giant, a MoE, sizing by days) are
#: the grid of make test-grid: each draws every app's figures (~30 s a scenario)
SCENARIOS = [
    "",
    *(pytest.param(q, marks=pytest.mark.grid) for q in (
        "model=llama3-405b&gpu=h100&gpus=16384", "model=deepseek-v3&gpu=h800&gpus=2048",
        "model=llama3-8b&gpu=a100&gpus=64&sizing=days&target_days=30")),
]


# every app's figures on each scenario
@pytest.mark.slow
@pytest.mark.parametrize("query", SCENARIOS)
def test_bundle_draws_every_trace_type_the_apps_use(query):
    _, traces = bundle_banner()
    used = set()
    for cls in apps():
        p = cls(query=query)
        figs = list(p.figures.values())
        p.pin()                                  # the compare overlays
        figs += p.figures.values()
        if hasattr(p, "scaling_out"):            # the sizing app's measured-scaling upload
            csv = "nodes,tokens_per_s\n1,1000\n2,1950\n4,3800\n"
            p._on_scaling({"new": [{"content": memoryview(csv.encode())}]})
            figs.append(go.Figure(shown_figure(p.scaling_out)))
        for fig in figs:
            used |= {t.type for t in fig.data}
    assert used, "no figure drawn"
    assert used <= traces, f"add {sorted(used - traces)} to plotly-llmcost.entry.js"


def test_plot_widget_is_a_plotview_under_a_workbook_server(monkeypatch):
    fig = go.Figure(go.Bar(x=[1, 2], y=[3, 4]), layout={"title": {"text": "t"}})
    monkeypatch.delenv(assets.URL_ENV, raising=False)
    plain = plot_widget()
    assert not isinstance(plain, PlotView) and shown_figure(plain) is None
    show_figure(plain, fig)
    assert shown_figure(plain)["data"][0]["y"] == [3, 4]
    monkeypatch.setenv(assets.URL_ENV, assets.bundle_url("/user/x/"))
    view = plot_widget()
    assert isinstance(view, PlotView) and shown_figure(view) is None
    assert view.bundle_url == f"/user/x/llmcost/static/{assets.BUNDLE}?v={assets.bundle_version()}"
    show_figure(view, fig)
    assert shown_figure(view) == shown_figure(plain)


def test_apps_build_their_plots_as_plotviews_under_a_workbook_server(monkeypatch):
    monkeypatch.setenv(assets.URL_ENV, assets.bundle_url("/"))
    p = ReviewApp(query="")
    assert p.outputs and all(isinstance(w, PlotView) for w in p.outputs.values())
    for name, w in p.outputs.items():
        assert shown_figure(w)["layout"]["title"]["text"], name
    # a scenario change redraws the same widgets
    before = {n: shown_figure(w) for n, w in p.outputs.items()}
    p.set_scenario(Scenario(gpus=2 * p.scenario.gpus))
    assert any(shown_figure(w) != before[n] for n, w in p.outputs.items())
