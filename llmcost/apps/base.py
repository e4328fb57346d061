"""The machinery every app shares: Scenario <-> controls <-> headline figures and plots.

An app is one class (a ``Panel`` subclass in its own ``*_app`` module, found by
:mod:`llmcost.apps.registry`): its controls (Scenario fields), how to compute (a function of
the Scenario), its headline figures and its plots, declared once in ``figures_from``. The
panel parses the page's query string strictly, shows warnings, validates each typed value
next to its control (keeping the last good results on screen), pins scenarios to compare
(A, B, C: one link carries them all), offers a share link, save/load as JSON and a report.

Plots are widgets from :mod:`.plotview`: under the workbook's servers a ``PlotView`` drawn
with the apps' own plotly.js bundle, elsewhere an Output holding the figure as plotly's mime
output (written kernel-side: it renders every time under Voila, where ``clear_output`` +
``show`` stalls voila#1428). Neither ships plotly.js per figure.
"""

from __future__ import annotations

import base64
import functools
import inspect
import os
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Callable

import ipywidgets as W

from .. import catalog as catalog_mod
from ..scenario import (COMPARE_LABELS, CUSTOM_MODE, FIELDS, Scenario, config_text, describe,
                        number_text, parse_value, scenarios_from_query, scenarios_to_query)
from .plotview import clear_figure, plot_widget, show_figure
from .registry import apps, register
from .shared import make, shared_layout
from .text import esc

CSS = """<style>
.llmc-headline-row {display:flex; flex-flow:row wrap}
.llmc-headline-box {border:1px solid #ddd; border-radius:6px; padding:6px 10px; margin:3px;
  min-width:150px; max-width:320px; background:#fafafa}
.llmc-headline-label {font-size:11px; color:#555}
.llmc-headline-value {font-size:18px; font-weight:600; overflow-wrap:anywhere}
.llmc-err {color:#b00020; font-size:12px; min-height:0}
.llmc-span {grid-column: 1 / span 2}
.llmc-form {align-items:start}
.llmc-warning {background:#fff4e5; border-left:4px solid #f0a500; padding:4px 8px; margin:4px 0;
  overflow-wrap:anywhere}
.llmc-notes li {margin:2px 0}
.llmc-group {font-weight:600; margin-top:8px; border-bottom:1px solid #eee}
.llmc-label {font-size:13px; line-height:1.25; white-space:normal; overflow-wrap:anywhere;
  padding:4px 8px 0 0}
.llmc-share-link {overflow-wrap:anywhere; word-break:break-all; font-size:12px}
.llmc-flag-infeasible {border-color:#b00020; background:#fdecee}
.llmc-flag-infeasible .llmc-headline-value {color:#b00020}
.llmc-flag-implausible {border-color:#f0a500; background:#fff4e5}
.llmc-flag-implausible .llmc-headline-value {color:#8a5a00}
.llmc-flag-uncalibrated {border-color:#f0a500; border-style:dashed}
.llmc-flag-note {font-size:11px; color:#555; max-width:300px}
.llmc-progress {color:#555; font-style:italic; padding:6px 0}
.llmc-compare-table {border-collapse:collapse; margin:6px 0; font-size:13px}
.llmc-compare-table th, .llmc-compare-table td {border-bottom:1px solid #e5e5e5;
  padding:3px 10px; text-align:left; vertical-align:top}
.llmc-compare-table .llmc-delta {color:#555; font-size:12px}
.llmc-navbar a, .llmc-navbar b {margin-right:4px}
.llmc-file-button {width:auto; min-width:148px; padding:0 12px}
.llmc-busy {opacity:0.35; transition:opacity 0.15s; pointer-events:none}
.llmc-table-title {font-weight:600; margin:8px 0 2px}
.llmc-table {border-collapse:collapse; margin:2px 0 8px; font-size:13px}
.llmc-table th, .llmc-table td {border-bottom:1px solid #e5e5e5; padding:3px 10px;
  text-align:right; vertical-align:top}
.llmc-table th:first-child, .llmc-table td:first-child,
.llmc-table th:last-child, .llmc-table td:last-child {text-align:left}
.llmc-table td:last-child {max-width:320px; overflow-wrap:anywhere; font-size:12px}
</style>"""

#: a scenario file holds ~60 short values: anything much larger is not one
MAX_SCENARIO_BYTES = 200_000

#: headline keys whose raw values are numbers a delta means something for
_NUMERIC_DELTA = {"days", "gpus", "cost_on_demand_usd", "mfu", "effective_utilization",
                  "memory_gb_per_gpu", "goodput", "breakeven_months", "spot_net_savings",
                  "job_mtbf_h"}


@functools.lru_cache(maxsize=None)
def _takes(fn, arg: str) -> bool:
    try:
        return arg in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def field_label(name: str) -> str:
    """A control's label with its unit, as the user reads it."""
    d = describe(name)
    return d["label"] + (f" [{d['unit']}]" if d["unit"] else "")


def _looks_like_hf_config(text: str) -> bool:
    """A Hugging Face config.json (it names its model type or architectures), not a
    scenario file; a file that does not parse is left to the scenario reader's message."""
    import json
    try:
        d = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(d, dict) and ("model_type" in d or "architectures" in d)


def tables_html(tables: list[dict]) -> str:
    """The app's tables as escaped HTML (the report renders the same dicts with jinja2)."""
    out = []
    for t in tables:
        head = "".join(f"<th scope='col'>{esc(c)}</th>" for c in t["columns"])
        body = "".join("<tr>" + "".join(f"<td>{esc(x)}</td>" for x in row) + "</tr>"
                       for row in t["rows"])
        out.append(f"<div class='llmc-table-title'>{esc(t['title'])}</div>"
                   f"<table class='llmc-table {esc(t.get('cls', ''))}'><thead><tr>{head}</tr>"
                   f"</thead><tbody>{body}</tbody></table>")
    return "".join(out)


#: float fields whose values span many orders of magnitude: typed and shown as "2T", "4M"
BIG_NUMBER_FIELDS = frozenset(
    name for name, f in FIELDS.items()
    if f.metadata["kind"] == "float" and (f.metadata["hi"] or 0) >= 1e9)
#: fields typed in text boxes read by parse_number: the big numbers, and the counts, which
#: people write as "100,000" or "16k" (a number box refuses the comma)
TEXT_NUMBER_FIELDS = BIG_NUMBER_FIELDS | frozenset(
    name for name, f in FIELDS.items() if f.metadata["kind"] == "int")


def _delta(key: str, a, r) -> str:
    """A headline figure's change from scenario A to ``r`` ("+12.3%"), or "" where a change
    means nothing (texts, flags, zero, equal)."""
    x0 = (getattr(a, "headline", None) or {}).get(key) if isinstance(getattr(a, "headline", None), dict) else None
    x1 = (getattr(r, "headline", None) or {}).get(key) if isinstance(getattr(r, "headline", None), dict) else None
    if key not in _NUMERIC_DELTA or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                            for x in (x0, x1)) or not x0 or x1 == x0:
        return ""
    return f"{(x1 - x0) / abs(x0):+.1%}"


def _is_share(d: dict) -> bool:
    """A unitless float field bounded to [0, 1]: a share of something."""
    return d["kind"] == "float" and d["lo"] == 0 and d["hi"] == 1 and not d["unit"]


class Panel:
    """Base class of the apps. Subclasses set the class attributes and ``compute``.

    A subclass that sets ``name`` in its own body is an app: it is registered (the landing
    page, the navigation and the tests read the registry) and served as
    ``notebooks/<name>.ipynb``."""

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
        self.pins: list[Scenario] = []
        if scenario is None:
            query = os.environ.get("QUERY_STRING", "") if query is None else query
            scenarios, warnings = scenarios_from_query(query, self.catalog)
            self.pins, scenario = scenarios[:-1], scenarios[-1]
        else:
            warnings = []
        self.scenario = scenario
        self.results = None
        self.pinned_results: list = []
        self.figures: dict = {}
        self.timings: list[float] = []
        self.last_error = None
        self.link_warnings = list(warnings)
        if not build:
            return
        self.controls: dict[str, W.Widget] = {}
        self.errors: dict[str, W.HTML] = {}
        self._updating = False
        self.warning_box = make(W.HTML, self._warning_html(warnings))
        self.warning_box.add_class("llmc-warning-area")
        self.status = make(W.HTML, "")
        self.status.add_class("llmc-status")
        self.headline_box = make(W.HTML, "")
        self.headline_box.add_class("llmc-headline")
        self.headline_html: dict[str, str] = {}     # key -> its value's HTML, as shown
        self.flags: dict = {}
        self.notes = make(W.HTML, "")
        self.notes.add_class("llmc-notes")
        self.tables_box = make(W.HTML, "")
        self.tables_box.add_class("llmc-tables")
        self.outputs: dict[str, W.Widget] = {}      # plot name -> its plot widget
        self.share = make(W.HTML, "")
        self.share.add_class("llmc-share")
        self.nav = make(W.HTML, "")
        self.nav.add_class("llmc-nav")
        self.download = make(W.HTML, "")
        self.download.add_class("llmc-download")
        from .download import Download
        self.downloader = Download(layout=shared_layout())
        self.downloader.add_class("llmc-report-link")
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
        self.compare_box = make(W.HTML, "")
        self.compare_box.add_class("llmc-compare")
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

    def _computing_html(self) -> str:
        return f"<div class='llmc-progress'>Computing the {esc(self.title.lower())}...</div>"

    def apply_query(self, query: str) -> bool:
        """Make this page (built and computed for the default scenario before a visitor
        arrived, in a preheated kernel) the page a link's ``query`` opens: its scenarios,
        warnings, controls and links, the same as ``type(self)(query=query)`` shows. Returns
        True when its results must be computed (:meth:`first_paint`): they are cleared
        until then and the progress line says so, so no figure stands beside controls it
        was not computed from. False when the query asks for what is already on the page."""
        scenarios, warnings = scenarios_from_query(query, self.catalog)
        pins, scenario = list(scenarios[:-1]), scenarios[-1]
        self.link_warnings = list(warnings)
        self.warning_box.value = self._warning_html(warnings)
        if pins == self.pins and scenario == self.scenario and self.results is not None:
            return False
        self.pins, self.scenario = pins, scenario
        self._sync_controls()
        for name in CUSTOM_MODE:
            if name in self.controls:
                self.controls[name].disabled = False
        self.results, self.figures, self.pinned_results = None, {}, []
        self.headline_box.value, self.headline_html, self.flags = "", {}, {}
        self.compare_box.value = ""
        self.notes.value = ""
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

    def card(self, res) -> dict:
        """The landing card's figures: key -> (label, text)."""
        head = self.headline(res)
        return {k: head[k][:2] for k in self.card_keys if k in head}

    # ------------------------------------------------------------ building
    def _control(self, name: str) -> W.Widget:
        d = describe(name)
        label = field_label(name)
        value = getattr(self.scenario, name)
        lay = dict(width="190px")
        if d["kind"] == "choice":
            table = d["table"]
            df = self.catalog.table(table)
            if table == "fabrics":
                df = df[df["kind"] == "scale_out"]
            opts = list(d.get("special", ())) + list(df["id"])
            if table == "prices":
                opts = [("auto: first offer for the GPU", "auto")] + [
                    (f"{r.id} ({r.gpus} x {r.gpu})", r.id) for r in df.itertuples()]
            elif value not in opts:
                opts.append(value)
            w = make(W.Dropdown, options=opts, value=value, layout=lay)
        elif d["kind"] == "options":
            w = make(W.Dropdown, options=list(d["options"]), value=value, layout=lay)
        elif name in self.sliders or _is_share(d):
            # a share reads as a percentage, as the headline shows it
            w = make(W.FloatSlider, value=value, min=d["lo"] if d["lo"] is not None else 0,
                     max=d["hi"] if d["hi"] is not None else 1, step=d["step"] or 0.01,
                     layout=lay, continuous_update=False, readout_format=".1%")
        elif name in TEXT_NUMBER_FIELDS:
            # "2T" reads better than 2000000000000, and parses back to the same number
            w = make(W.Text, value=number_text(value), layout=lay, continuous_update=False)
        else:
            w = make(W.FloatText, value=value, layout=lay)
        w.add_class(f"llmc-ctl-{name}")
        w.observe(lambda ch, n=name: self._on_change(n, ch["new"]), names="value")
        # the label wraps instead of being cut off; its full text is also the tooltip
        text = make(W.HTML, f"<div class='llmc-label' title='{esc(label)}'>{esc(label)}</div>")
        err = make(W.HTML, "")
        err.add_class("llmc-err")
        err.add_class(f"llmc-err-{name}")
        err.add_class("llmc-span")
        self.controls[name] = w
        self.errors[name] = err
        return [text, w, err]

    def _shown(self, name: str, value):
        """The control's text for a Scenario value."""
        if name in TEXT_NUMBER_FIELDS:
            return number_text(value)
        return value

    def _build(self) -> W.Widget:
        groups: dict[str, list] = {}
        for name in self.fields:
            groups.setdefault(describe(name)["group"], []).append(self._control(name))
        cells = []
        for g, items in groups.items():
            head = make(W.HTML, f"<div class='llmc-group'>{esc(self.group_titles.get(g, g))}</div>")
            head.add_class("llmc-span")
            cells.append(head)
            for item in items:
                cells += item
        form = make(W.GridBox, cells, layout=dict(grid_template_columns="180px 190px"))
        form.add_class("llmc-form")
        left = [form]
        left += [make(W.HTML, "<div class='llmc-group'>Compare, share and save</div>"),
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
        beat = _heartbeat()
        if beat is not None:
            parts.append(beat)
        root = make(W.VBox, parts)
        root.add_class(f"llmc-app-{self.name}")
        return root

    # ------------------------------------------------------------ behaviour
    def _warning_html(self, warnings, what="Some settings in the link were not used:") -> str:
        if not warnings:
            return ""
        items = "".join(f"<li>{esc(w)}</li>" for w in warnings)
        return f"<div class='llmc-warning'>{esc(what)}<ul>{items}</ul></div>"

    def _on_change(self, name: str, value) -> None:
        if self._updating:
            return
        try:
            parsed = parse_value(FIELDS[name], value, self.catalog)
            new = replace(self.scenario, **{name: parsed})
        except ValueError as e:
            self.errors[name].value = esc(str(e))
            self.status.value = ("<span class='llmc-err'>Not applied: fix the value marked in "
                                 "red; the figures below are from the last good values.</span>")
            return
        self.errors[name].value = ""
        mode_of = {m for m, _ in CUSTOM_MODE.values()}
        if name in mode_of and self.results is not None:
            # switching to custom starts from the figures on screen, not stale custom ones
            used = self.resolved(self.results)
            carry = {k: float(f"{used[k]:.6g}") for k, (m, want) in CUSTOM_MODE.items()
                     if m == name and parsed == want and k in used}
            if carry:
                try:
                    new = replace(new, **carry)
                except ValueError:
                    pass
            self.set_scenario(new, sync_controls=bool(carry))
            return
        self.set_scenario(new, sync_controls=name in TEXT_NUMBER_FIELDS)

    def set_scenario(self, s: Scenario, sync_controls=False) -> bool:
        old = self.scenario
        self.scenario = s
        if sync_controls:
            self._sync_controls()
        if not self.refresh():
            self.scenario = old
            return False
        return True

    def _sync_controls(self, clear_errors: bool = True) -> None:
        """Every control shows the scenario's value (a control never shows a value the
        figures are not using)."""
        self._updating = True
        try:
            for name, w in self.controls.items():
                shown = self._shown(name, getattr(self.scenario, name))
                if isinstance(w, W.Dropdown) and shown not in w._options_values:
                    # as _control offers a value its catalog table does not list
                    w.options = [*w._options_full, (str(shown), shown)]
                if w.value != shown:
                    w.value = shown
                if clear_errors:
                    self.errors[name].value = ""
        finally:
            self._updating = False

    def _compute_pinned(self) -> list:
        """(label, Results) of the pinned scenarios; one that no longer computes is dropped
        with a warning (a link can pin anything)."""
        out, keep, dropped = [], [], []
        for label, s in zip(COMPARE_LABELS, self.pins):
            try:
                out.append((label, self.compute(s)))
                keep.append(s)
            except ValueError as e:
                dropped.append(f"scenario {label} dropped: {e}")
        if dropped:
            self.pins = keep
            out = [(lab, r) for lab, (_, r) in zip(COMPARE_LABELS, out)]
            self.warning_box.value = self._warning_html(dropped, "Compared scenarios:")
        return out

    @property
    def label(self) -> str:
        """The current scenario's letter when scenarios are pinned, else ""."""
        return COMPARE_LABELS[len(self.pins)] if self.pins else ""

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
            if param in self.errors and not isinstance(e, catalog_mod.CatalogError):
                self.errors[param].value = esc(str(e))
            self.status.value = (f"<span class='llmc-err'>Not applied: {esc(str(e))}; "
                                 "the figures below are from the last good values.</span>")
            return False
        except Exception as e:  # noqa: BLE001 - never a traceback on a reviewer's screen
            self.last_error = traceback.format_exc()
            self.status.value = (f"<span class='llmc-err'>Could not evaluate this scenario "
                                 f"({type(e).__name__}); the figures below are from the last "
                                 "good values.</span>")
            return False
        self.results, self.figures, self.pinned_results = res, figs, pinned
        for err in self.errors.values():
            err.value = ""
        self._show_headline(head)
        self.compare_box.value = self._compare_html(pinned, res, head) if pinned else ""
        self._sync_resolved(res)
        self.tables_box.value = tables_html(self.tables(res))
        lines = self.note_lines(res)
        self.notes.value = ("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in lines) + "</ul>"
                            if lines else "")
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
        if not _after_this_cell(self.refresh):
            self.refresh()

    # ------------------------------------------------------------ compare
    def pin(self) -> None:
        """Keep the current values as the next compared scenario (at most two pinned)."""
        if len(self.pins) >= len(COMPARE_LABELS) - 1 or self.results is None:
            return
        self.pins = [*self.pins, self.scenario]
        self.refresh()

    def clear_pins(self) -> None:
        self.pins = []
        self.refresh()

    def _compare_html(self, pinned, res, head) -> str:
        cols = [(label, r, self.headline(r)) for label, r in pinned]
        cols.append((self.label, res, head))
        keys = list(dict.fromkeys(k for _, _, h in cols for k in h))
        heads = "".join(f"<th>{esc(lab)}{' (current)' if i == len(cols) - 1 else ''}</th>"
                        for i, (lab, _, _) in enumerate(cols))
        rows = []
        for k in keys:
            label = next(h[k][0] for _, _, h in cols if k in h)
            cells = []
            for i, (_, r, h) in enumerate(cols):
                text = esc(h[k][1]) if k in h else "-"
                change = _delta(k, cols[0][1], r) if i else ""
                if change:
                    text += f" <span class='llmc-delta'>({change} vs A)</span>"
                cells.append(f"<td>{text}</td>")
            rows.append(f"<tr><th>{esc(label)}</th>{''.join(cells)}</tr>")
        diffs = []
        a = self.pins[0]
        for label, s in zip(COMPARE_LABELS[1:], [*self.pins[1:], self.scenario]):
            changed = [f"{describe(k)['label']} = {self._shown(k, getattr(s, k))}"
                       for k in FIELDS if getattr(s, k) != getattr(a, k)]
            diffs.append(f"<li>{esc(label)} differs from A in: "
                         f"{esc('; '.join(changed) or 'nothing')}</li>")
        return (f"<table class='llmc-compare-table'><tr><th></th>{heads}</tr>{''.join(rows)}"
                f"</table><ul class='llmc-compare-diffs'>{''.join(diffs)}</ul>")

    # ------------------------------------------------------------ headline and links
    def _show_headline(self, head: dict) -> None:
        """The headline figures, one box per key, as one HTML widget (a widget per box and
        per label made 33 of the review page's 181 widgets, each a model and a view for the
        browser to build)."""
        self.flags = {}
        self.headline_html = {}
        boxes = []
        for key, (label, text, *rest) in head.items():
            flag = rest[0] if rest else None
            classes = f"llmc-headline-box llmc-box-{key}"
            note = ""
            if flag is not None:
                classes += f" llmc-flag-{flag.level}"
                self.flags[key] = flag
                note = (f"<div class='llmc-flag-note'>{esc(flag.level)}: "
                        f"{esc(flag.message)}</div>")
            self.headline_html[key] = (f"<div class='llmc-headline-value'>{esc(text)}</div>"
                                       f"{note}")
            boxes.append(f"<div class='{classes}'><div class='llmc-headline-label'>"
                         f"{esc(label)}</div><div class='llmc-headline-{key}'>"
                         f"{self.headline_html[key]}</div></div>")
        self.headline_box.value = f"<div class='llmc-headline-row'>{''.join(boxes)}</div>"

    def _sync_resolved(self, res) -> None:
        """Controls whose figure comes from the catalog, a cited default or a derivation show
        the value the figures use, greyed out; in custom mode they are the user's."""
        used = self.resolved(res)
        self._sync_controls(clear_errors=False)
        self._updating = True
        try:
            for name, (mode, custom) in CUSTOM_MODE.items():
                w = self.controls.get(name)
                if w is None:
                    continue
                derived = getattr(self.scenario, mode) != custom
                w.disabled = derived
                # six significant digits: the figure in use, without float noise
                shown = self._shown(name, float(f"{used[name]:.6g}")) if name in used else None
                if derived and shown is not None and w.value != shown:
                    w.value = shown
        finally:
            self._updating = False

    def query(self) -> str:
        """The link's query: every scenario shown (pinned first, the current one last)."""
        return scenarios_to_query([*self.pins, self.scenario])

    def _update_links(self) -> None:
        q = self.query()
        suffix = f"?{q}" if q else ""
        link = self.share_link()
        self.share.value = (f"<div>Link to these values: <a class='llmc-share-link' "
                            f"href='{esc(link)}' target='_blank' "
                            f"title='{esc(link)}'>{esc(link)}</a></div>")
        items = ["<a href='index.ipynb" + esc(suffix) + "'>All apps</a>"]
        items += [f"<b>{esc(c.title)}</b>" if c.name == self.name else
                  f"<a href='{c.name}.ipynb{esc(suffix)}'>{esc(c.title)}</a>"
                  for c in apps()]
        self.nav.value = f"<div class='llmc-navbar'>{' | '.join(items)}</div>"
        data = base64.b64encode(self.scenario.to_json().encode()).decode()
        self.download.value = (f"<a download='scenario.json' href='data:application/json;base64,{data}'>"
                               "Save scenario (JSON)</a>")
        self.pin_button.description = (f"Pin as {COMPARE_LABELS[len(self.pins)]}"
                                       if len(self.pins) < len(COMPARE_LABELS) - 1 else "Pinned: A, B")
        self.pin_button.disabled = len(self.pins) >= len(COMPARE_LABELS) - 1
        self.clear_button.disabled = not self.pins

    def _on_upload(self, change) -> None:
        """FileUpload-style change (tests and scripts): the first file's bytes."""
        files = change["new"]
        if not files:
            return
        item = files[0] if isinstance(files, (list, tuple)) else next(iter(files.values()))
        content = bytes(item["content"])
        if len(content) > MAX_SCENARIO_BYTES:
            self._load_failed(f"the file is {len(content):,} bytes; a scenario file is at most "
                              f"{MAX_SCENARIO_BYTES:,}")
            return
        self._load_text(item.get("name", "scenario.json"), content.decode("utf-8", errors="replace"))

    def _load_failed(self, message: str) -> None:
        self.warning_box.value = self._warning_html([message], "The file was not loaded; "
                                                               "nothing changed:")

    def _load_text(self, name: str, text: str) -> None:
        """A scenario file's values replace the controls'; a Hugging Face config.json (in
        an app with a model) becomes the scenario's model, carried by its link as
        ``cfg.<field>`` keys; a file that is neither changes nothing and says why."""
        if "model" in self.fields and _looks_like_hf_config(text):
            self._load_config(name, text)
            return
        s, warnings = Scenario.from_json(text, self.catalog)
        if warnings and warnings[0].startswith("not a scenario file"):
            self._load_failed(warnings[0])
            return
        self.warning_box.value = self._warning_html(warnings, "Some settings in the file were "
                                                              "not used:")
        if not self.set_scenario(s, sync_controls=True):
            self._load_failed("its values could not be evaluated (see the message above the "
                              "figures); the controls keep the last good values")
            self.scenario_sync_back()

    def _load_config(self, name: str, text: str) -> None:
        from ..training import hf_config
        try:
            fields = hf_config.config_fields(hf_config.read_config(text, name=name))
            model, notes = hf_config.model_from_config(fields)
            s = replace(self.scenario, model="config", model_config=config_text(fields))
        except ValueError as e:
            self._load_failed(str(e))
            return
        if not self.set_scenario(s, sync_controls=True):
            self._load_failed("the model it describes could not be evaluated (see the message "
                              "above the figures); the controls keep the last good values")
            self.scenario_sync_back()
            return
        head = (f"Model from {name}: {model.layers} layers, hidden {model.hidden:,}, "
                f"{model.params / 1e9:,.1f} B parameters"
                + (f" ({model.active_params / 1e9:,.1f} B active)" if model.is_moe else "")
                + "; the share link carries it.")
        self.warning_box.value = self._warning_html([head, *notes], "Loaded a config.json:")

    def scenario_sync_back(self) -> None:
        self._sync_controls()

    # ------------------------------------------------------------ report
    def _readable(self, name: str, value) -> str:
        """A field's value as the report reads it."""
        d = describe(name)
        if isinstance(value, str):
            return value
        if _is_share(d) or name in self.sliders:
            return f"{value:.1%}"
        if name in BIG_NUMBER_FIELDS:
            return number_text(value)
        return f"{value:,}" if isinstance(value, int) else f"{value:,.6g}"

    def _report_scenario(self, label: str, s: Scenario, res, figures: dict):
        from ..review.report import ReportScenario
        used = self.resolved(res)
        assumptions = []
        for name in self.fields:
            mode = CUSTOM_MODE.get(name)
            derived = mode is not None and getattr(s, mode[0]) != mode[1] and name in used
            value = self._readable(name, used[name] if derived else getattr(s, name))
            suffix = " (derived)" if derived else ""
            plan = getattr(res, "plan", None)
            if name == "gpus" and s.sizing == "days" and plan is not None:
                # sized by days: the figures used the GPUs the sizing chose, not the box's
                value, suffix = self._readable(name, int(plan.gpus)), " (sized for the days)"
            assumptions.append((field_label(name), value + suffix))
        plan = getattr(res, "plan", None)
        if plan is not None and plan.layout is not None and "gpus" in self.fields:
            assumptions.append(("Layout used", plan.layout.description))
        head = [(lab, text, getattr(rest[0], "level", None) if rest and rest[0] else None)
                for lab, text, *rest in self.headline(res).values()]
        return ReportScenario(label=label, headline=head, assumptions=assumptions,
                              notes=self.note_lines(res), figures=figures,
                              tables=self.tables(res))

    def report_html(self, share_url: str | None = None) -> str:
        """A standalone HTML report of every scenario shown (pinned first): headline figures
        (and their changes against A), the app's assumptions, notes and plots, dated, with
        the llmcost version and the share link."""
        from ..review.report import render_report
        pinned = self.pinned_results if self.pins else []
        sections = [self._report_scenario(label, s, r, {})
                    for (label, r), s in zip(pinned, self.pins)]
        sections.append(self._report_scenario(self.label, self.scenario, self.results,
                                              self.figures))
        deltas = None
        if pinned:
            deltas = []
            a = pinned[0][1]
            others = [r for _, r in pinned[1:]] + [self.results]
            for key, (lab, *_rest) in self.headline(self.results).items():
                changes = [_delta(key, a, r) for r in others]
                if any(changes):
                    deltas.append((lab, changes))
        if share_url is None:
            share_url = self.share_link()
        return render_report(sections, title=f"llmcost: {self.title}", share_url=share_url,
                             deltas=deltas or None)

    def share_link(self) -> str:
        """The link to what is on screen: absolute once the page has said where it is."""
        from urllib.parse import urljoin
        q = self.query()
        rel = f"{self.name}.ipynb" + (f"?{q}" if q else "")
        base = getattr(getattr(self, "downloader", None), "page_url", "")
        return urljoin(base, rel) if base else rel

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
        for k, x in values.items():
            self.controls[k].value = self._shown(k, x) if not isinstance(x, str) else x

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)


class ReviewPanel(Panel):
    """An app whose numbers are one review Results (cached per Scenario)."""

    def compute(self, s):
        from ..review import evaluate
        return evaluate(s, self.catalog)


def _heartbeat():
    """The "connection lost" banner's widget, when its module is there."""
    try:
        from .heartbeat import Heartbeat
    except ImportError:
        return None
    return Heartbeat(layout=shared_layout())


def _after_this_cell(fn) -> bool:
    """Run ``fn`` on the kernel's event loop once the running cell has finished, so Voila
    sends the page (controls and a progress line) before the first results are computed.
    Returns False when there is no running loop (plain Python): the caller runs it now."""
    import asyncio
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return False
    if not loop.is_running():
        return False
    loop.call_soon(fn)
    return True


def run_app(cls: Callable[..., Panel]) -> Panel:
    """Build and display an app; the page's query string preloads its Scenario(s).

    In a preheated Voila kernel (``VOILA_PREHEAT``) the page for the default scenario is
    built and computed before a visitor arrives; ``get_query_string`` then waits for the
    visitor's link, which is applied to it (:func:`show_page`). A page whose results are
    not computed yet is sent with the controls and a progress line; the figures follow as
    soon as they are computed."""
    return show_page(lambda query: cls(query=query, defer=True), lambda: cls(query=""),
                     lambda panel: panel.first_paint, lambda panel: panel.refresh)


def show_page(build: Callable, prebuild: Callable, first: Callable, whole: Callable):
    """Display the page for the visitor's query.

    In a preheated kernel (``VOILA_PREHEAT``) ``prebuild()`` runs before the visitor
    arrives: the page for the default scenario, its widgets built and its results
    computed; the visitor's query is then applied to it (its ``apply_query``), so the
    HTML is sent as soon as the query arrives, with no widget to build first (in chromium
    the review's HTML completed 0.4-1.2 s after the request when its 181 widgets were
    built on request, 0.03-0.25 s since, 2026-12-02). Otherwise ``build(query)`` makes
    it. The callable ``first(page)`` gives runs once the cell has finished (the page is
    sent before it); outside an event loop, ``whole(page)``'s runs at once; neither when
    the prebuilt page already shows the query's results. A catalog that cannot be read
    is said on the page (file, row and column), not as Voila's generic cell error."""
    from IPython.display import display
    try:
        from .preheat import get_query_string
        page = prebuild() if os.environ.get("VOILA_PREHEAT") == "True" else None
        query = get_query_string()
        pending = True
        if page is None:
            page = build(query)
        else:
            pending = page.apply_query(query)
    except catalog_mod.CatalogError as e:
        display(make(W.HTML, f"<div class='llmc-warning llmc-fatal'>The catalog cannot be read: "
                             f"{esc(str(e))}</div>"))
        return None
    display(page.widget)
    if pending and not _after_this_cell(first(page)):
        whole(page)()
    return page
