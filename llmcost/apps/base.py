"""The machinery every app shares: Scenario <-> controls <-> headline figures and plots.

An app is one class (a ``Panel`` subclass in its own ``*_app`` module, found by
:mod:`llmcost.apps.registry`): its controls (Scenario fields), how to compute (a function of
the Scenario), its headline figures and its plots, declared once in ``figures_from``. The
panel composes parts that know nothing of each other: the scenarios it shows and their last
good results (:mod:`.state`: a link's scenarios, read strictly, with warnings; pins A, B, C
carried by one link), the form (:mod:`.form`: a control per field, a bad value refused
beside it, the last good results kept on screen), the compare table (:mod:`.compare`) and
the report and scenario files (:mod:`.report`), on a page (:mod:`.page`: its style, its
HTML pieces, how Voila sends it). Of these, only the form, the page and the panel make
widgets.

Plots are widgets from :mod:`.plotview`: under the workbook's servers a ``PlotView`` drawn
with the apps' own plotly.js bundle, elsewhere an Output holding the figure as plotly's mime
output (written kernel-side: it renders every time under Voila, where ``clear_output`` +
``show`` stalls voila#1428). Neither ships plotly.js per figure.
"""

from __future__ import annotations

import functools
import inspect
import os
import time
import traceback
from pathlib import Path
from typing import Callable

import ipywidgets as W

from .. import catalog as catalog_mod
from ..scenario import Scenario
from .compare import compare_html, comparison
from .fields import TEXT_NUMBER_FIELDS, with_value
from .form import Form
from .page import (
    CSS,
    after_this_cell,
    headline_html,
    heartbeat,
    html_box,
    nav_html,
    notes_html,
    show_page,
    tables_html,
    warning_html,
)
from .plotview import clear_figure, plot_widget, show_figure
from .registry import register
from .report import MAX_SCENARIO_BYTES, read_scenario_file, report_html, scenario_data_url, upload_text
from .shared import make, shared_layout
from .state import MODE_FIELDS, PanelState, carry_custom
from .text import esc

#: the status line when a typed value was refused
NOT_APPLIED = ("<span class='llmc-err'>Not applied: fix the value marked in red; the figures "
               "below are from the last good values.</span>")


@functools.lru_cache(maxsize=None)
def _takes(fn, arg: str) -> bool:
    try:
        return arg in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


#: the controls of the training run both the review and the sizing page plan (model, data,
#: hardware, layout search and MoE terms); each page adds its own after them
TRAINING_RUN_CONTROLS = ("model", "tokens", "gpu", "fabric", "fabric_gb_per_s_per_gpu", "fabric_technology",
                         "precision", "stack", "sizing", "gpus", "target_days", "seq_len",
                         "batch", "global_batch_tokens", "moe_load_imbalance", "moe_overlap",
                         "moe_a2a_overlap")

#: the controls that only a mixture-of-experts model reads
MOE_CONTROLS = ("moe_load_imbalance", "moe_overlap", "moe_a2a_overlap", "ep", "etp",
                "serve_ep")


def _of_state(name: str, doc: str, settable: bool = False) -> property:
    """The panel's ``name`` is its state's (:class:`.state.PanelState`)."""
    setter = (lambda self, value: setattr(self.state, name, value)) if settable else None
    return property(lambda self: getattr(self.state, name), setter, doc=doc)


class Panel:
    """Base class of the apps. Subclasses set the class attributes and ``compute``.

    A subclass that sets ``name`` in its own body is an app: it is registered (the landing
    page, the navigation and the tests read the registry) and served as
    ``notebooks/<name>.ipynb``. ``build=False`` makes a panel without widgets, to compute
    and report (a landing card)."""

    #: URL stem of the app's notebook; "" for intermediate bases
    name = ""
    title = "llmcost"
    #: the question the app answers, on the landing page
    question = ""
    #: position on the landing page and in the navigation
    order = 100
    intro = ""
    fields: tuple = ()
    sliders: tuple = ()             # fields shown as sliders (bounded shares)
    #: headline keys shown on the landing card
    card_keys: tuple = ()
    #: the plots, declared once: (name, function(results[, compare=...]) or a method name)
    figures_from: tuple = ()
    group_titles = {"run": "The run", "prices": "Cloud prices", "onprem": "On premises",
                    "spot": "Spot", "reliability": "Failures, checkpoints and storage",
                    "measured": "Your measured run"}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__dict__.get("name"):
            register(cls)

    def __init__(self, scenario: Scenario | None = None, query: str | None = None,
                 catalog: catalog_mod.Catalog | None = None, *, build: bool = True,
                 defer: bool = False):
        self.catalog = catalog_mod.default() if catalog is None else catalog
        if scenario is None:
            query = os.environ.get("QUERY_STRING", "") if query is None else query
            self.state = PanelState.from_query(query, self.catalog)
        else:
            self.state = PanelState(scenario)
        self.timings: list[float] = []
        self.last_error = None
        if not build:
            return
        self.warning_box = html_box("llmc-warning-area", warning_html(self.link_warnings))
        self.status = html_box("llmc-status")
        self.headline_box = html_box("llmc-headline")
        self.headline_html: dict[str, str] = {}     # key -> its value's HTML, as shown
        self.flags: dict = {}
        self.notes = html_box("llmc-notes")
        self.tables_box = html_box("llmc-tables")
        self.outputs: dict[str, W.Widget] = {}      # plot name -> its plot widget
        self.share = html_box("llmc-share")
        self.nav = html_box("llmc-nav")
        self.download = html_box("llmc-download")
        from .download import Download
        self.downloader = Download(layout=shared_layout())
        self.downloader.add_class("llmc-report-link")
        # the share link turns absolute as soon as the browser says where the page is
        self.downloader.observe(
            lambda _change: self._update_links() if hasattr(self, "pin_button") else None,
            names="page_url")
        self.report_button = make(W.Button, description="Download report", icon="download",
                                  tooltip="A standalone HTML report of every scenario shown")
        self.report_button.add_class("llmc-report")
        self.report_button.on_click(lambda _: self.report())
        from .upload import FilePicker
        takes_model = "model" in self.fields
        self.upload = FilePicker(self._load_text, self._load_failed,
                                 label="Load scenario or config.json" if takes_model
                                 else "Load scenario",
                                 accept=".json", max_bytes=MAX_SCENARIO_BYTES,
                                 hint="A scenario file saved here (JSON)" + (
                                     ", or a model's Hugging Face config.json" if takes_model
                                     else ""))
        self.upload.add_class("llmc-load")
        self.pin_button = make(W.Button, description="Pin as A", icon="thumb-tack",
                               tooltip="Keep these values as a scenario to compare against")
        self.pin_button.add_class("llmc-pin")
        self.pin_button.on_click(lambda _: self.pin())
        self.clear_button = make(W.Button, description="Clear pinned", icon="times")
        self.clear_button.add_class("llmc-unpin")
        self.clear_button.on_click(lambda _: self.clear_pins())
        self.compare_box = html_box("llmc-compare")
        self.extra_widgets: list[W.Widget] = []
        for name in self.plot_names():
            out = plot_widget()
            out.add_class(f"llmc-plot-{name}")
            self.outputs[name] = out
        self.widget = self._build()
        self._update_links()
        if defer:
            self.status.value = self._computing_html()
        else:
            self.refresh()

    # ------------------------------------------------------------ state
    scenario = _of_state("scenario", "The scenario on screen (the last of the link's).",
                         settable=True)
    pins = _of_state("pins", "The pinned scenarios, A first.")
    results = _of_state("results", "The current scenario's last good results (None until "
                                   "computed).")
    figures = _of_state("figures", "name -> plotly Figure of the last good results.")
    pinned_results = _of_state("pinned_results", "[(label, results)] of the pinned scenarios.")
    link_warnings = _of_state("link_warnings", "What the link that opened the page did not use.")
    label = _of_state("label", "The current scenario's letter when scenarios are pinned, "
                               "else \"\".")

    def _computing_html(self) -> str:
        return f"<div class='llmc-progress'>Computing the {esc(self.title.lower())}...</div>"

    def apply_query(self, query: str) -> bool:
        """Make this page (built and computed for the default scenario before a visitor
        arrived, in a preheated kernel) the page a link's ``query`` opens: its scenarios,
        warnings, controls and links, the same as ``type(self)(query=query)`` shows. Returns
        True when its results must be computed (:meth:`first_paint`): they are cleared
        until then and the progress line says so, so no figure stands beside controls it
        was not computed from. False when the query asks for what is already on the page."""
        new = PanelState.from_query(query, self.catalog)
        self.warning_box.value = warning_html(new.link_warnings)
        if self.state.shows(new):
            self.state.link_warnings = new.link_warnings
            return False
        self.state = new
        self.form.sync(self.scenario)
        self.form.enable_derived()
        self.headline_box.value, self.headline_html, self.flags = "", {}, {}
        self.compare_box.value = self.notes.value = self.tables_box.value = ""
        for out in self.outputs.values():
            clear_figure(out)
        self._update_links()
        self.status.value = self._computing_html()
        return True

    # ------------------------------------------------------------ to override
    def compute(self, s: Scenario):
        raise NotImplementedError

    #: headline keys read from a review Results (apps built on ``evaluate``)
    headline_keys: tuple = ()

    def headline(self, res) -> dict:
        """key -> (label, text) or (label, text, Flag)."""
        from ..review import headline_items
        return headline_items(res, self.headline_keys) if self.headline_keys else {}

    def resolved(self, res) -> dict:
        """Scenario field -> the value the figures use (for controls whose mode is not custom)."""
        inp = getattr(res, "inputs", None)
        out = dict(inp.resolved) if inp is not None else {}
        econ = getattr(res, "economics", None)
        if econ is not None:
            # derived from the prediction, after the resolve stage
            out["data_stall_share"] = econ.data_stall_share
        return out

    def plot_names(self) -> tuple:
        return tuple(name for name, _ in self.figures_from)

    def make_figures(self, res, compare=()) -> dict:
        """Every declared plot; ``compare`` [(label, Results)] overlays pinned scenarios on
        the plots that can show them."""
        out = {}
        for name, fn in self.figures_from:
            fn = getattr(self, fn) if isinstance(fn, str) else fn
            kw = {}
            if compare and _takes(fn, "compare"):
                kw["compare"] = compare
                if _takes(fn, "label"):
                    kw["label"] = self.label or "current"
            out[name] = fn(res, **kw)
        return out

    def tables(self, res) -> list[dict]:
        """Tables shown under the headline and in the report: each {"title", "columns",
        "rows" (lists of texts), "cls"}, built from ``res`` (none by default)."""
        return []

    def note_lines(self, res) -> list[str]:
        return list(getattr(res, "notes", []) or [])

    def card_compute(self, s: Scenario):
        """What the landing card reads (:meth:`card`): the app's own results by default."""
        return self.compute(s)

    def card(self, res) -> dict:
        """The landing card's figures: key -> (label, text)."""
        head = self.headline(res)
        return {k: head[k][:2] for k in self.card_keys if k in head}

    # ------------------------------------------------------------ building
    def _build(self) -> W.Widget:
        self.form = Form(self.fields, self.scenario, self.catalog, self._on_change,
                         sliders=self.sliders, group_titles=self.group_titles)
        self.controls, self.errors = self.form.controls, self.form.errors
        left = [self.form.widget,
                make(W.HTML, "<div class='llmc-group'>Compare, share and save</div>"),
                make(W.HBox, [self.pin_button, self.clear_button]), self.share,
                self.download, self.upload, self.report_button, self.downloader]
        # one box for the plots: the busy state greys it (a PlotView's own classes are not
        # updated by its view after the first render)
        self.figures_box = make(W.VBox, list(self.outputs.values()))
        self.figures_box.add_class("llmc-figures")
        right = [self.headline_box, self.status, self.compare_box, self.tables_box, self.notes,
                 *self.extra_widgets, self.figures_box]
        header = make(W.HTML, f"{CSS}<h2 class='llmc-title'>{esc(self.title)}</h2>"
                              f"<div class='llmc-intro'>{self.intro}</div>")
        body = make(W.HBox, [make(W.VBox, left, layout=dict(width="400px", flex="0 0 400px")),
                             make(W.VBox, right, layout=dict(flex="1 1 auto", min_width="0"))])
        parts = [self.nav, header, self.warning_box, body]
        beat = heartbeat()
        if beat is not None:
            parts.append(beat)
        root = make(W.VBox, parts)
        root.add_class(f"llmc-app-{self.name}")
        return root

    # ------------------------------------------------------------ behaviour
    def _on_change(self, name: str, raw) -> None:
        try:
            new = with_value(self.scenario, name, raw, self.catalog)
        except ValueError as e:
            self.form.refuse(name, str(e))
            self.status.value = NOT_APPLIED
            return
        self.form.refuse(name, "")
        if name in MODE_FIELDS and self.results is not None:
            new, carried = carry_custom(new, name, self.resolved(self.results))
            self.set_scenario(new, sync_controls=carried)
            return
        self.set_scenario(new, sync_controls=name in TEXT_NUMBER_FIELDS)

    def set_scenario(self, s: Scenario, sync_controls=False) -> bool:
        """Show ``s``: False (the last good scenario and results kept) when it does not
        compute."""
        old = self.scenario
        self.scenario = s
        if sync_controls:
            self.form.sync(s)
        if not self.refresh():
            self.scenario = old
            return False
        return True

    def _busy_widgets(self) -> list:
        return [self.headline_box, self.tables_box, getattr(self, "figures_box", None)]

    def _set_busy(self, busy: bool) -> None:
        """Grey the figures from a change until the new ones are sent: figures on screen are
        never taken for current while the kernel computes (the class goes out before the
        computation, and is removed after the new figures' messages)."""
        for w in filter(None, self._busy_widgets()):
            (w.add_class if busy else w.remove_class)("llmc-busy")

    def refresh(self) -> bool:
        self._set_busy(True)
        try:
            return self._refresh()
        finally:
            self._set_busy(False)

    def _compute_pinned(self) -> list:
        pinned, dropped = self.state.compute_pinned(self.compute)
        if dropped:
            self.warning_box.value = warning_html(dropped, "Compared scenarios:")
        return pinned

    def _refresh(self) -> bool:
        t0 = time.perf_counter()
        try:
            res = self.compute(self.scenario)
            pinned = self._compute_pinned() if self.pins else []
            compare = [*pinned, (self.label, res)] if pinned else ()
            figs = self.make_figures(res, compare=compare[:-1] if compare else ())
            head = self.headline(res)
        except ValueError as e:   # a scenario the models refuse: keep the last results
            param = getattr(e, "param", None)
            if not isinstance(e, catalog_mod.CatalogError):
                self.form.refuse(param, str(e))
            self.status.value = (f"<span class='llmc-err'>Not applied: {esc(str(e))}; "
                                 "the figures below are from the last good values.</span>")
            return False
        except Exception as e:  # noqa: BLE001 - never a traceback on a reviewer's screen
            self.last_error = traceback.format_exc()
            self.status.value = (f"<span class='llmc-err'>Could not evaluate this scenario "
                                 f"({type(e).__name__}); the figures below are from the last "
                                 "good values.</span>")
            return False
        self.state.keep(res, figs, pinned)
        self.form.clear_errors()
        self._show_headline(head)
        self.compare_box.value = (compare_html(comparison(
            [(label, r, self.headline(r)) for label, r in pinned] + [(self.label, res, head)],
            self.pins, self.scenario)) if pinned else "")
        self.form.show_used(self.scenario, self.resolved(res))
        model = getattr(getattr(res, "inputs", None), "model", None)
        if model is not None:
            self.form.grey_inapplicable(
                MOE_CONTROLS, f"{model.id} is dense: the MoE settings do not apply",
                model.is_moe)
        self.form.grey_inapplicable(("fabric_technology",),
                                    "used only with Scale-out fabric: custom",
                                    self.scenario.fabric == "custom")
        self.tables_box.value = tables_html(self.tables(res))
        self.notes.value = notes_html(self.note_lines(res))
        for name, out in self.outputs.items():
            if name in figs:
                show_figure(out, figs[name])
        self.status.value = ""
        self._update_links()
        self.timings.append(time.perf_counter() - t0)
        return True

    def first_paint(self) -> None:
        """The first results in two steps, cheap parts first: the headline figures, then
        (on the next turn of the kernel's loop, so the page can draw them) the plots."""
        try:
            head = self.headline(self.compute(self.scenario))
        except Exception:  # noqa: BLE001 - refresh says what went wrong, next to the control
            self.refresh()
            return
        self._show_headline(head)
        self.status.value = "<div class='llmc-progress'>Drawing the plots...</div>"
        if not after_this_cell(self.refresh):
            self.refresh()

    # ------------------------------------------------------------ compare
    def pin(self) -> None:
        """Keep the current values as the next compared scenario (at most two pinned)."""
        if self.state.pin():
            self.refresh()

    def clear_pins(self) -> None:
        self.state.clear_pins()
        self.refresh()

    # ------------------------------------------------------------ headline and links
    def _show_headline(self, head: dict) -> None:
        """The headline figures, one box per key, as one HTML widget (a widget per box and
        per label made 33 of the review page's 181 widgets, each a model and a view for the
        browser to build)."""
        self.headline_box.value, self.headline_html, self.flags = headline_html(head)

    def query(self) -> str:
        """The link's query: every scenario shown (pinned first, the current one last)."""
        return self.state.query()

    def share_link(self) -> str:
        """The link to what is on screen: absolute once the page has said where it is."""
        return self.state.share_link(
            self.name, getattr(getattr(self, "downloader", None), "page_url", ""))

    def _update_links(self) -> None:
        link = self.share_link()
        self.share.value = (f"<div>Link to these values: <a class='llmc-share-link' "
                            f"href='{esc(link)}' target='_blank' "
                            f"title='{esc(link)}'>{esc(link)}</a></div>")
        self.nav.value = nav_html(self.name, self.query())
        self.download.value = (f"<a download='scenario.json' href='{scenario_data_url(self.scenario)}'>"
                               "Save scenario (JSON)</a>")
        self.pin_button.description = self.state.pin_text()
        self.pin_button.disabled = not self.state.can_pin
        self.clear_button.disabled = not self.pins

    # ------------------------------------------------------------ files and report
    def _on_upload(self, change) -> None:
        """FileUpload-style change (tests and scripts): the first file's bytes."""
        try:
            got = upload_text(change["new"])
        except ValueError as e:
            self._load_failed(str(e))
            return
        if got is not None:
            self._load_text(*got)

    def _load_failed(self, message: str) -> None:
        self.warning_box.value = warning_html([message], "The file was not loaded; "
                                                         "nothing changed:")

    def _load_text(self, name: str, text: str) -> None:
        """A scenario file's values replace the controls'; a Hugging Face config.json (in
        an app with a model) becomes the scenario's model, carried by its link as
        ``cfg.<field>`` keys; a file that is neither changes nothing and says why."""
        loaded = read_scenario_file(name, text, self.scenario, self.catalog,
                                    takes_model="model" in self.fields)
        if loaded.scenario is None:
            self._load_failed(loaded.error)
            return
        if not self.set_scenario(loaded.scenario, sync_controls=True):
            self._load_failed(loaded.refused)
            self.form.sync(self.scenario)
            return
        self.warning_box.value = warning_html(loaded.messages, loaded.title)

    def report_html(self, share_url: str | None = None) -> str:
        """A standalone HTML report of every scenario shown (:func:`.report.report_html`)."""
        return report_html(self, self.state,
                           self.share_link() if share_url is None else share_url)

    def report(self, folder: str | os.PathLike | None = None):
        """Download the report in the browser (nothing is written on the server); with a
        ``folder`` (scripts, tests), write it there instead and return its path."""
        from datetime import datetime, timezone

        from ..review.report import report_filename
        now = datetime.now(timezone.utc)
        name = report_filename(self.name, now)
        text = self.report_html()
        if folder is not None:
            path = Path(folder) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return path
        self.downloader.send_file(name, text.encode("utf-8"))
        return name

    def set(self, **values) -> None:
        """Set control values as a user would (for tests and scripts)."""
        self.form.set(**values)

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)


class ReviewPanel(Panel):
    """An app whose numbers are one review Results (cached per Scenario)."""

    #: the subjects of the review's notes this page shows (llmcost.review.format.note_subject);
    #: None: every note
    note_subjects: tuple | None = None

    def note_lines(self, res) -> list[str]:
        from ..review.format import note_subject
        lines = super().note_lines(res)
        if self.note_subjects is None:
            return lines
        return [x for x in lines if note_subject(x) in self.note_subjects]

    def compute(self, s):
        from ..review import evaluate
        return evaluate(s, self.catalog)


def run_app(cls: Callable[..., Panel]) -> Panel:
    """Build and display an app; the page's query string preloads its Scenario(s).

    In a preheated Voila kernel (``VOILA_PREHEAT``) the page for the default scenario is
    built and computed before a visitor arrives; ``get_query_string`` then waits for the
    visitor's link, which is applied to it (:func:`show_page`). A page whose results are
    not computed yet is sent with the controls and a progress line; the figures follow as
    soon as they are computed."""
    return show_page(lambda query: cls(query=query, defer=True), lambda: cls(query=""),
                     lambda panel: panel.first_paint, lambda panel: panel.refresh)

