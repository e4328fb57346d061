"""The machinery every app shares: Scenario <-> controls <-> headline figures and plots.

An app declares its controls (Scenario fields), how to compute (a function of the Scenario),
its headline figures and its plots. The panel parses the page's query string strictly,
shows warnings, validates each typed value next to its control (keeping the last good
results on screen), offers a share link, save/load as JSON and an HTML report.

Plots are written kernel-side as one ``application/vnd.plotly.v1+json`` output per Output
widget: it renders every time under Voila (``clear_output`` + ``show`` stalls voila#1428)
and ships no plotly.js per figure.
"""

from __future__ import annotations

import base64
import html
import json
import os
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Callable

import ipywidgets as W

from .. import catalog as catalog_mod
from ..review import headline_items, html_report
from ..scenario import CUSTOM_MODE, FIELDS, Scenario, describe, parse_value

APPS = {
    "review": "Architecture review",
    "utilization": "Effective utilization",
    "tco": "Rent vs buy",
    "spot": "Spot vs on-demand",
    "sizing": "Sizing and layout",
    "checkpoints": "Storage and checkpoints",
}

CSS = """<style>
.llmc-headline-box {border:1px solid #ddd; border-radius:6px; padding:6px 10px; margin:3px;
  min-width:150px; background:#fafafa}
.llmc-headline-label {font-size:11px; color:#555}
.llmc-headline-value {font-size:18px; font-weight:600}
.llmc-err {color:#b00020; font-size:12px; min-height:0}
.llmc-warning {background:#fff4e5; border-left:4px solid #f0a500; padding:4px 8px; margin:4px 0}
.llmc-notes li {margin:2px 0}
.llmc-group {font-weight:600; margin-top:8px; border-bottom:1px solid #eee}
.llmc-flag-infeasible {border-color:#b00020; background:#fdecee}
.llmc-flag-infeasible .llmc-headline-value {color:#b00020}
.llmc-flag-implausible {border-color:#f0a500; background:#fff4e5}
.llmc-flag-implausible .llmc-headline-value {color:#8a5a00}
.llmc-flag-uncalibrated {border-color:#f0a500; border-style:dashed}
.llmc-flag-note {font-size:11px; color:#555; max-width:220px}
</style>"""


def plotly_output(fig) -> dict:
    return {"output_type": "display_data",
            "data": {"application/vnd.plotly.v1+json": json.loads(fig.to_json()),
                     "text/plain": f"<plotly figure: {fig.layout.title.text or ''}>"},
            "metadata": {}}


class Panel:
    """Base class of the apps. Subclasses set the class attributes and ``compute``."""

    name = "review"
    title = "llmcost"
    intro = ""
    fields: tuple = ()
    sliders: tuple = ()             # fields shown as sliders (bounded shares)
    group_titles = {"run": "The run", "prices": "Cloud prices", "onprem": "On premises",
                    "spot": "Spot", "reliability": "Failures, checkpoints and storage",
                    "measured": "Your measured run"}

    def __init__(self, scenario: Scenario | None = None, query: str | None = None,
                 catalog: catalog_mod.Catalog | None = None):
        self.catalog = catalog_mod.default() if catalog is None else catalog
        if scenario is None:
            query = os.environ.get("QUERY_STRING", "") if query is None else query
            scenario, warnings = Scenario.from_query(query, self.catalog)
        else:
            warnings = []
        self.scenario = scenario
        self.results = None
        self.figures: dict = {}
        self.timings: list[float] = []
        self.controls: dict[str, W.Widget] = {}
        self.errors: dict[str, W.HTML] = {}
        self._updating = False
        self.last_error = None
        self.warning_box = W.HTML(self._warning_html(warnings))
        self.warning_box.add_class("llmc-warning-area")
        self.status = W.HTML("")
        self.status.add_class("llmc-status")
        self.headline_box = W.HBox(layout=W.Layout(flex_flow="row wrap"))
        self.headline_box.add_class("llmc-headline")
        self.headline_values: dict[str, W.HTML] = {}
        self.notes = W.HTML("")
        self.notes.add_class("llmc-notes")
        self.outputs: dict[str, W.Output] = {}
        self.share = W.HTML("")
        self.share.add_class("llmc-share")
        self.nav = W.HTML("")
        self.nav.add_class("llmc-nav")
        self.download = W.HTML("")
        self.download.add_class("llmc-download")
        self.report_link = W.HTML("")
        self.report_link.add_class("llmc-report-link")
        self.report_button = W.Button(description="Export HTML report", icon="file")
        self.report_button.add_class("llmc-report")
        self.report_button.on_click(lambda _: self.report())
        self.upload = W.FileUpload(accept=".json", multiple=False, description="Load scenario")
        self.upload.add_class("llmc-load")
        self.upload.observe(self._on_upload, names="value")
        self.extra_widgets: list[W.Widget] = []
        for name in self.plot_names():
            out = W.Output()
            out.add_class(f"llmc-plot-{name}")
            self.outputs[name] = out
        self.widget = self._build()
        self.refresh()

    # ------------------------------------------------------------ to override
    def compute(self, s: Scenario):
        raise NotImplementedError

    #: headline keys read from a review Results (apps built on ``evaluate``)
    headline_keys: tuple = ()

    def headline(self, res) -> dict:
        """key -> (label, text) or (label, text, Flag)."""
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

    def make_figures(self, res) -> dict:
        return {}

    def plot_names(self) -> tuple:
        return ()

    def note_lines(self, res) -> list[str]:
        return list(getattr(res, "notes", []) or [])

    # ------------------------------------------------------------ building
    def _control(self, name: str) -> W.Widget:
        d = describe(name)
        label = d["label"] + (f" [{d['unit']}]" if d["unit"] else "")
        value = getattr(self.scenario, name)
        style = {"description_width": "200px"}
        lay = W.Layout(width="380px")
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
            w = W.Dropdown(options=opts, value=value, description=label, style=style, layout=lay)
        elif d["kind"] == "options":
            w = W.Dropdown(options=list(d["options"]), value=value, description=label,
                           style=style, layout=lay)
        elif name in self.sliders:
            w = W.FloatSlider(value=value, min=d["lo"] if d["lo"] is not None else 0,
                              max=d["hi"] if d["hi"] is not None else 1, step=d["step"] or 0.01,
                              description=label, style=style, layout=lay, continuous_update=False,
                              readout_format=".2f")
        elif d["kind"] == "int":
            w = W.IntText(value=value, description=label, style=style, layout=lay)
        else:
            w = W.FloatText(value=value, description=label, style=style, layout=lay)
        w.add_class(f"llmc-ctl-{name}")
        w.observe(lambda ch, n=name: self._on_change(n, ch["new"]), names="value")
        err = W.HTML("")
        err.add_class("llmc-err")
        err.add_class(f"llmc-err-{name}")
        self.controls[name] = w
        self.errors[name] = err
        return W.VBox([w, err], layout=W.Layout(margin="0 0 2px 0"))

    def _build(self) -> W.Widget:
        groups: dict[str, list] = {}
        for name in self.fields:
            groups.setdefault(describe(name)["group"], []).append(self._control(name))
        left = []
        for g, items in groups.items():
            head = W.HTML(f"<div class='llmc-group'>{html.escape(self.group_titles.get(g, g))}</div>")
            left += [head, *items]
        left += [W.HTML("<div class='llmc-group'>Share and save</div>"), self.share,
                 self.download, self.upload, self.report_button, self.report_link]
        right = [self.headline_box, self.status, self.notes, *self.extra_widgets,
                 *self.outputs.values()]
        header = W.HTML(f"{CSS}<h2 class='llmc-title'>{html.escape(self.title)}</h2>"
                        f"<div class='llmc-intro'>{self.intro}</div>")
        body = W.HBox([W.VBox(left, layout=W.Layout(width="400px", flex="0 0 400px")),
                       W.VBox(right, layout=W.Layout(flex="1 1 auto", min_width="0"))])
        root = W.VBox([self.nav, header, self.warning_box, body])
        root.add_class(f"llmc-app-{self.name}")
        return root

    # ------------------------------------------------------------ behaviour
    def _warning_html(self, warnings) -> str:
        if not warnings:
            return ""
        items = "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
        return (f"<div class='llmc-warning'>Some settings in the link were not used:"
                f"<ul>{items}</ul></div>")

    def _on_change(self, name: str, value) -> None:
        if self._updating:
            return
        try:
            parsed = parse_value(FIELDS[name], value)
            new = replace(self.scenario, **{name: parsed})
        except ValueError as e:
            self.errors[name].value = html.escape(str(e))
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
        self.set_scenario(new)

    def set_scenario(self, s: Scenario, sync_controls=False) -> None:
        old = self.scenario
        self.scenario = s
        if sync_controls:
            self._updating = True
            try:
                for name, w in self.controls.items():
                    if w.value != getattr(s, name):
                        w.value = getattr(s, name)
                    self.errors[name].value = ""
            finally:
                self._updating = False
        if not self.refresh():
            self.scenario = old

    def refresh(self) -> bool:
        t0 = time.perf_counter()
        try:
            res = self.compute(self.scenario)
            figs = self.make_figures(res)
            head = self.headline(res)
        except ValueError as e:   # a scenario the models refuse: keep the last results
            param = getattr(e, "param", None)
            if param in self.errors:
                self.errors[param].value = html.escape(str(e))
            self.status.value = (f"<span class='llmc-err'>Not applied: {html.escape(str(e))}; "
                                 "the figures below are from the last good values.</span>")
            return False
        except Exception as e:  # noqa: BLE001 - never a traceback on a reviewer's screen
            self.last_error = traceback.format_exc()
            self.status.value = (f"<span class='llmc-err'>Could not evaluate this scenario "
                                 f"({type(e).__name__}); the figures below are from the last "
                                 "good values.</span>")
            return False
        self.results, self.figures = res, figs
        for err in self.errors.values():
            err.value = ""
        self._show_headline(head)
        self._sync_resolved(res)
        lines = self.note_lines(res)
        self.notes.value = ("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in lines) + "</ul>"
                            if lines else "")
        for name, out in self.outputs.items():
            if name in figs:
                out.outputs = (plotly_output(figs[name]),)
        self.status.value = ""
        self._update_links()
        self.timings.append(time.perf_counter() - t0)
        return True

    def _show_headline(self, head: dict) -> None:
        if set(head) != set(self.headline_values):
            boxes = []
            self.headline_values = {}
            self.headline_boxes = {}
            for key, (label, *_rest) in head.items():
                val = W.HTML("")
                val.add_class(f"llmc-headline-{key}")
                self.headline_values[key] = val
                box = W.VBox([W.HTML(f"<div class='llmc-headline-label'>{html.escape(label)}</div>"), val])
                box.add_class("llmc-headline-box")
                self.headline_boxes[key] = box
                boxes.append(box)
            self.headline_box.children = boxes
        self.flags = {}
        for key, (_, text, *rest) in head.items():
            flag = rest[0] if rest else None
            box = self.headline_boxes[key]
            for level in ("infeasible", "implausible", "uncalibrated"):
                box.remove_class(f"llmc-flag-{level}")
            note = ""
            if flag is not None:
                box.add_class(f"llmc-flag-{flag.level}")
                self.flags[key] = flag
                note = (f"<div class='llmc-flag-note'>{html.escape(flag.level)}: "
                        f"{html.escape(flag.message)}</div>")
            self.headline_values[key].value = (f"<div class='llmc-headline-value'>{html.escape(text)}"
                                               f"</div>{note}")

    def _sync_resolved(self, res) -> None:
        """Controls whose figure comes from the catalog, a cited default or a derivation show
        the value the figures use, greyed out; in custom mode they are the user's."""
        used = self.resolved(res)
        self._updating = True
        try:
            # a control never shows a value the figures are not using
            for name, w in self.controls.items():
                if w.value != getattr(self.scenario, name):
                    w.value = getattr(self.scenario, name)
            for name, (mode, custom) in CUSTOM_MODE.items():
                w = self.controls.get(name)
                if w is None:
                    continue
                derived = getattr(self.scenario, mode) != custom
                w.disabled = derived
                # six significant digits: the figure in use, without float noise
                shown = float(f"{used[name]:.6g}") if name in used else None
                if derived and shown is not None and w.value != shown:
                    w.value = shown
        finally:
            self._updating = False

    def _update_links(self) -> None:
        q = self.scenario.to_query()
        suffix = f"?{q}" if q else ""
        link = f"{self.name}.ipynb{suffix}"
        self.share.value = (f"<div>Link to these values: <a class='llmc-share-link' href='{html.escape(link)}' "
                            f"target='_blank'>{html.escape(link)}</a></div>")
        nav = " | ".join(
            f"<b>{html.escape(t)}</b>" if n == self.name else
            f"<a href='{n}.ipynb{html.escape(suffix)}'>{html.escape(t)}</a>" for n, t in APPS.items())
        self.nav.value = f"<div class='llmc-navbar'>{nav}</div>"
        data = base64.b64encode(self.scenario.to_json().encode()).decode()
        self.download.value = (f"<a download='scenario.json' href='data:application/json;base64,{data}'>"
                               "Save scenario (JSON)</a>")

    def _on_upload(self, change) -> None:
        files = change["new"]
        if not files:
            return
        item = files[0] if isinstance(files, (list, tuple)) else next(iter(files.values()))
        content = item["content"]
        text = bytes(content).decode("utf-8", errors="replace")
        s, warnings = Scenario.from_json(text, self.catalog)
        self.warning_box.value = self._warning_html(warnings)
        self.set_scenario(s, sync_controls=True)

    def report(self, folder: str | os.PathLike = "reports") -> Path:
        """Write a standalone HTML report of the current results; return its path."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = folder / f"{self.name}-{stamp}.html"
        res = self.results
        if hasattr(res, "headline") and hasattr(res, "scenario"):
            text = html_report(res, self.figures, title=f"llmcost: {self.title}",
                               headline=self.headline(res), notes=self.note_lines(res))
        else:
            text = self._generic_report()
        path.write_text(text, encoding="utf-8")
        self.report_link.value = (f"<a class='llmc-report-file' href='../files/{path.as_posix()}' "
                                  f"target='_blank'>Report written: {html.escape(path.name)}</a>")
        return path

    def _generic_report(self) -> str:
        head = "".join(f"<tr><th>{html.escape(label)}</th><td>{html.escape(text)}</td></tr>"
                       for label, text, *_ in self.headline(self.results).values())
        plots, first = "", True
        for name, fig in self.figures.items():
            plots += fig.to_html(full_html=False, include_plotlyjs=first)
            first = False
        rows = "".join(f"<tr><td>{html.escape(describe(k)['label'])}</td><td>{html.escape(str(getattr(self.scenario, k)))}</td></tr>"
                       for k in self.fields)
        return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}</title></head>"
                f"<body><h1>llmcost: {html.escape(self.title)}</h1><table>{head}</table>{plots}"
                f"<h2>Assumptions</h2><table>{rows}</table></body></html>")

    def set(self, **values) -> None:
        """Set control values as a user would (for tests and scripts)."""
        for k, x in values.items():
            self.controls[k].value = x

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)


def run_app(cls: Callable[..., Panel]) -> Panel:
    """Build and display an app; Voila's query string preloads its Scenario."""
    from IPython.display import display
    panel = cls()
    display(panel.widget)
    return panel
