"""The workbook's front page: one card per app (from the registry), each with the question
it answers and a live figure for the scenario in the link, the review first. Every card's
link carries the page's query, so a shared link opens every app on the same scenario(s)."""

from __future__ import annotations

import os
import time

import ipywidgets as W

from .. import catalog as catalog_mod
from .._validate import InputError
from ..review.format import format_headline
from ..scenario import scenarios_from_query, scenarios_to_query
from .page import CSS, heartbeat, show_page, warning_html
from .registry import apps
from .shared import make
from .text import esc

LANDING_CSS = """<style>
.llmc-cards {display:flex; flex-wrap:wrap; gap:12px}
.llmc-card {border:1px solid #ddd; border-radius:8px; padding:12px 14px; width:300px;
  background:#fff; box-shadow:0 1px 2px rgba(0,0,0,.05)}
.llmc-card h3 {margin:0 0 4px 0; font-size:17px}
.llmc-card h3 a {text-decoration:none}
.llmc-card-question {color:#333; font-size:13px; min-height:54px}
.llmc-card-figures {margin-top:8px; font-size:13px}
.llmc-card-figures b {font-size:15px}
.llmc-card-first {border-color:#4a78c2; border-width:2px}
</style>"""

INTRO = ("Numbers for an LLM training-infrastructure architecture review: how many GPUs of "
         "which kind, which fabric and parallel layout, rent or buy, spot or on-demand, how "
         "often to checkpoint, and whether a running cluster delivers. Every app opens on the "
         "same scenario; tune it there, pin it to compare, share the link.")


class Landing:
    """The landing page's widget; ``refresh`` fills each card's figures."""

    def __init__(self, query: str | None = None, catalog: catalog_mod.Catalog | None = None,
                 defer: bool = False):
        self.catalog = catalog_mod.default() if catalog is None else catalog
        query = os.environ.get("QUERY_STRING", "") if query is None else query
        self.figures: dict[str, dict] = {}
        self.cards: dict[str, W.HTML] = {}
        self.header = make(W.HTML, "")
        self._set_scenarios(*scenarios_from_query(query, self.catalog))
        parts = [self.header, W.Box(list(self.cards.values()),
                               layout=dict(display="flex", flex_flow="row wrap"))]
        beat = heartbeat()
        if beat is not None:
            parts.append(beat)
        self.widget = make(W.VBox, parts)
        self.widget.add_class("llmc-landing")
        self.timings: list[float] = []
        if not defer:
            self.refresh()

    def _set_scenarios(self, scenarios: list, warnings: list) -> None:
        """A link's scenarios (as ``scenarios_from_query`` reads them), the header that
        says them and the cards (their figures to compute)."""
        self.scenarios, self.warnings = scenarios, warnings
        self.scenario = scenarios[-1]
        q = scenarios_to_query(scenarios)
        self.suffix = f"?{q}" if q else ""
        self.figures = {}
        for i, cls in enumerate(apps()):
            card = self.cards.get(cls.name)
            if card is None:
                card = self.cards[cls.name] = make(W.HTML, "")
                card.add_class("llmc-card-widget")
                card.add_class(f"llmc-card-{cls.name}")
            card.value = self._card_html(cls, None, first=i == 0)
        warn = warning_html(self.warnings)
        s = self.scenario
        self.header.value = (f"{CSS}{LANDING_CSS}<h2 class='llmc-title'>llmcost workbook</h2>"
                             f"<div class='llmc-intro'>{esc(INTRO)}</div>"
                             f"<p class='llmc-scenario'>Scenario: {esc(s.model_label)} on "
                             f"{s.gpus:,} x {esc(s.gpu)} ({esc(self._fabric_text(s))}), "
                             f"{esc(format_headline('tokens', s.tokens))}, "
                             f"{esc(s.precision.upper())}"
                             + (f", {len(scenarios)} scenarios compared" if len(scenarios) > 1
                                else "")
                             + f"</p>{warn}")

    def _fabric_text(self, s) -> str:
        """The scenario's fabric as the figures use it ("auto": the GPU's usual)."""
        if s.fabric != "auto":
            return s.fabric
        try:
            return f"{self.catalog.gpu(s.gpu).usual_scale_out}, the GPU's usual"
        except InputError:
            # an unreadable catalog is named by the cards below, not by the header
            return "the GPU's usual"

    def apply_query(self, query: str) -> bool:
        """Make this page (built and computed for the default scenario before a visitor
        arrived) the page a link's ``query`` opens; True when its cards must be computed
        again (:meth:`refresh`), False when the link asks for what is on the page."""
        scenarios, warnings = scenarios_from_query(query, self.catalog)
        if scenarios == self.scenarios and warnings == self.warnings and self.figures:
            return False
        self._set_scenarios(scenarios, warnings)
        return True

    def _card_html(self, cls, figures: dict | None, first=False) -> str:
        link = f"{cls.name}.ipynb{self.suffix}"
        if figures is None:
            figs = "<span class='llmc-progress'>computing...</span>"
        elif not figures:
            figs = "<span>open the app for its figures</span>"
        else:
            figs = "<br>".join(f"{esc(label)}: <b>{esc(text)}</b>"
                               for label, text in figures.values())
        return (f"<div class='llmc-card{' llmc-card-first' if first else ''}'>"
                f"<h3><a class='llmc-card-link' href='{esc(link)}'>"
                f"{esc(cls.title)}</a></h3>"
                f"<div class='llmc-card-question'>{esc(cls.question)}</div>"
                f"<div class='llmc-card-figures'>{figs}</div></div>")

    def card_figures(self, cls) -> dict:
        """label -> text of one app's card, for the current scenario (never raises)."""
        panel = cls(scenario=self.scenario, catalog=self.catalog, build=False)
        try:
            return panel.card(panel.card_compute(self.scenario))
        except ValueError as e:
            return {"why": ("Not computed", str(e)[:200])}
        except Exception as e:  # noqa: BLE001 - a card never shows a traceback
            return {"why": ("Not computed", type(e).__name__)}

    def refresh(self) -> None:
        t0 = time.perf_counter()
        for i, cls in enumerate(apps()):
            self.figures[cls.name] = self.card_figures(cls)
            self.cards[cls.name].value = self._card_html(cls, self.figures[cls.name], first=i == 0)
        self.timings.append(time.perf_counter() - t0)

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)


def show_landing() -> Landing:
    """Build and display the landing page (the query string as in :func:`run_app`)."""
    return show_page(lambda query: Landing(query=query, defer=True), lambda: Landing(query=""),
                     lambda page: page.refresh, lambda page: page.refresh)
