"""The landing page: one card per registered app, the review first; each card's
figure is the app's own headline text for the link's scenario, and each card's link
carries the link's query (every compared scenario)."""

import pytest

from llmcost.apps.landing import Landing
from llmcost.apps.registry import app, apps, titles
from llmcost.review import evaluate
from llmcost.scenario import Scenario


def test_registry_lists_every_app_once_review_first():
    names = [c.name for c in apps()]
    assert names[0] == "review" and len(names) == len(set(names)) == 8
    assert set(titles()) == set(names) and app("tco").title == "Rent vs buy"
    for cls in apps():
        assert cls.question.endswith("?") and cls.card_keys and cls.figures_from


@pytest.mark.slow
def test_cards_show_each_apps_own_headline_for_the_linked_scenario():
    q = "model=llama3-8b&gpus=64"
    page = Landing(query=q)
    assert list(page.cards) == [c.name for c in apps()]
    for cls in apps():
        panel = cls(query=q)
        head = panel.headline(panel.results)
        for key, (label, text) in page.figures[cls.name].items():
            assert head[key][:2] == (label, text)
        card = page.cards[cls.name].value
        assert f"href='{cls.name}.ipynb?{q.replace('&', '&amp;')}'" in card
        assert cls.question.split()[0] in card
    # the review card's days are the review's figure for that scenario
    days = evaluate(Scenario(model="llama3-8b", gpus=64)).headline["days"]
    assert page.figures["review"]["days"][1].startswith(f"{days:,.1f}")


def test_utilization_card_names_the_measured_run_its_figure_is_of():
    # the measured run is the app's own inputs, not the scenario's cluster: the card says
    # which run, and its figure is the seed's formula for that run
    q = "model=llama3-8b&gpus=64&measured_gpus=64&measured_wall_clock_s=5400"
    page = Landing(query=q)
    fig = page.figures["utilization"]
    s = Scenario(model="llama3-8b")
    tokens = 512 * 8192 * 1000                       # the app's default batch, length, steps
    # 6 (N - V d) + 12 L d s: the input embedding is a lookup, no FLOPs (Narayanan et al. 2021)
    fpt = 6 * (8.03e9 - 128256 * 4096) + 12 * 32 * 4096 * 8192
    u = fpt * tokens / (989.4e12 * 64 * 5400)
    assert float(fig["effective_utilization"][1].rstrip("%")) / 100 == pytest.approx(u, abs=0.0006)
    assert fig["run"] == ("Measured run", "llama3-8b, 4.19 B tokens on 64 GPUs in 1.5 h")
    assert s.measured_gpus == 512 and "on 64 GPUs" in page.cards["utilization"].value


def test_compare_link_carries_over_and_bad_values_warn_without_breaking_cards():
    page = Landing(query="gpus=64&b.gpu=b200&model=nope")
    assert "b.gpu=b200" in page.cards["sizing"].value and len(page.scenarios) == 2
    assert any("Model 'nope' is not in the catalog" in w for w in page.warnings)
    assert all(page.figures[c.name] for c in apps())


def test_a_new_app_is_its_module_alone_for_navigation_landing_and_registry(tmp_path, monkeypatch):
    """A seventh app touches its module (and its one-cell notebook): nothing else
    lists it. A module dropped beside the others appears in the registry, the navigation of
    every app and the landing page."""
    import llmcost.apps as package
    from llmcost.apps import registry
    from llmcost.apps.review_app import ReviewApp
    (tmp_path / "demo_app.py").write_text(
        "from llmcost.apps.base import ReviewPanel\n"
        "from llmcost import plots\n\n"
        "class DemoApp(ReviewPanel):\n"
        "    name = 'demo'\n    title = 'Demo'\n    question = 'Does a new app need more?'\n"
        "    order = 99\n    fields = ('gpus',)\n    headline_keys = ('gpus',)\n"
        "    card_keys = ('gpus',)\n"
        "    figures_from = (('waterfall', plots.waterfall),)\n")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    registry._load.cache_clear()
    try:
        assert [c.name for c in registry.apps()][-1] == "demo"
        assert "href='demo.ipynb'" in ReviewApp(query="").nav.value
        page = Landing(query="gpus=64")
        assert page.figures["demo"] == {"gpus": ("GPUs", "64")}
    finally:
        import sys
        sys.modules.pop("llmcost.apps.demo_app", None)
        registry.REGISTRY.pop("demo", None)
        registry._load.cache_clear()
