"""A preheated kernel builds and computes the default page before its visitor arrives, then
applies the visitor's link to it (``apply_query``): the page must be the one a kernel
started for that link shows, for every app and for the landing page."""

from __future__ import annotations

from dataclasses import replace

import ipywidgets as W
import pytest
from ipywidgets.widgets import widget as widget_module
from ipywidgets.widgets.widget_style import Style

from llmcost.apps import base, preheat
from llmcost.apps.landing import Landing, show_landing
from llmcost.apps.plotview import shown_figure
from llmcost.apps.registry import apps
from llmcost.apps.review_app import ReviewApp

# whole reviews and app builds: make test, not the fast loop
pytestmark = pytest.mark.slow

QUERIES = {
    "default": "",
    "changed": "model=llama3-70b&gpus=2048&fabric=roce-400",
    "pinned": "b.gpus=512&gpus=2048",
    "bad values only": "gpus=abc&bogus=1",
}


def page_state(p) -> dict:
    """Everything a visitor sees that a link sets."""
    return {
        "headline": (p.headline_box.value, p.headline_html, p.flags),
        "controls": {k: (w.value, w.disabled) for k, w in p.controls.items()},
        "options": {k: getattr(w, "options", None) for k, w in p.controls.items()},
        "errors": {k: e.value for k, e in p.errors.items()},
        "figures": {k: shown_figure(w) for k, w in p.outputs.items()},
        "share": p.share.value, "nav": p.nav.value, "download": p.download.value,
        "warnings": p.warning_box.value, "compare": p.compare_box.value,
        "notes": p.notes.value, "status": p.status.value,
        "pin": (p.pin_button.description, p.pin_button.disabled, p.clear_button.disabled),
        "scenarios": (p.pins, p.scenario),
    }


def live_widgets() -> set:
    """The kernel's widgets but layouts and styles (shared ones are made once per kernel,
    by whichever page comes first)."""
    return {k for k, w in widget_module._instances.items()
            if not isinstance(w, (W.Layout, Style))}


def new_widgets(before: set) -> int:
    return len(live_widgets() - before)


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
@pytest.mark.parametrize("cls", apps(), ids=lambda c: c.name)
def test_a_prebuilt_page_given_a_link_is_the_page_built_for_it(cls, query):
    fresh = cls(query=query)
    pre = cls(query="")
    if pre.apply_query(query):
        pre.first_paint()
    assert page_state(pre) == page_state(fresh)


@pytest.mark.parametrize("cls", apps(), ids=lambda c: c.name)
def test_until_its_results_are_computed_a_prebuilt_page_shows_none_of_the_old_ones(cls):
    pre = cls(query="")
    assert pre.results is not None and all(shown_figure(w) for w in pre.outputs.values())
    assert pre.apply_query(QUERIES["changed"])
    assert pre.results is None
    assert not any(shown_figure(w) for w in pre.outputs.values())
    assert not pre.headline_box.value and not pre.headline_html and not pre.flags
    assert not pre.notes.value and not pre.compare_box.value
    assert "llmc-progress" in pre.status.value
    # the controls already show the link's values, the share link says them
    if "model" in pre.controls:
        assert pre.controls["model"].value == "llama3-70b"
    assert "gpus=2048" in pre.share.value


def test_the_default_link_keeps_the_prebuilt_results():
    pre = ReviewApp(query="")
    res, figs = pre.results, pre.figures
    assert pre.apply_query("") is False
    assert pre.results is res and pre.figures is figs


def test_a_control_shows_a_value_its_list_does_not_offer():
    # as the form does when it builds one: the value is added, never refused
    pre = ReviewApp(query="")
    pre.scenario = replace(pre.scenario, fabric="nvlink4")
    pre.form.sync(pre.scenario)
    assert pre.controls["fabric"].value == "nvlink4"


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
def test_the_preheated_flow_shows_one_page_for_the_link(monkeypatch, query):
    """``run_app`` in a preheated kernel: the page equals one built for the link, and it is
    the only page in the kernel (every widget the page's state sends belongs to it)."""
    before = live_widgets()
    fresh = ReviewApp(query=query)
    one_page = new_widgets(before)

    monkeypatch.setenv("VOILA_PREHEAT", "True")
    monkeypatch.setattr(preheat, "get_query_string", lambda url=None: query)
    before = live_widgets()
    page = base.run_app(ReviewApp)
    assert page_state(page) == page_state(fresh)
    assert new_widgets(before) == one_page

    monkeypatch.setenv("VOILA_PREHEAT", "False")
    monkeypatch.setenv("QUERY_STRING", query)
    assert page_state(base.run_app(ReviewApp)) == page_state(fresh)


@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
def test_the_landing_page_prebuilt_given_a_link_is_the_one_built_for_it(monkeypatch, query):
    before = live_widgets()
    fresh = Landing(query=query)
    one_page = new_widgets(before)
    state = lambda p: (p.header.value, {k: c.value for k, c in p.cards.items()}, p.figures)  # noqa: E731
    monkeypatch.setenv("VOILA_PREHEAT", "True")
    monkeypatch.setattr(preheat, "get_query_string", lambda url=None: query)
    before = live_widgets()
    page = show_landing()
    assert state(page) == state(fresh)
    assert new_widgets(before) == one_page
    assert page.apply_query(query) is False


def test_computing_the_landing_cards_makes_no_widget():
    # each card is a panel made only to compute: a widget it made would be sent to every
    # landing page's browser and never shown
    page = Landing(query="")
    before = live_widgets()
    page.refresh()
    assert new_widgets(before) == 0
