"""A panel's form: one control per Scenario field, grouped under titles, each with the
message that refuses a bad value beside it. The form shows values and hands typed ones to
its owner (``on_change(name, raw)``); reading them into a Scenario and refusing them is
:func:`llmcost.apps.fields.with_value`'s."""

from __future__ import annotations

from typing import Callable

import ipywidgets as W
import pandas as pd

from ..scenario import CUSTOM_MODE, Scenario, describe
from .fields import TEXT_NUMBER_FIELDS, field_label, is_share, shown
from .shared import make
from .text import esc


class Form:
    """The controls of ``fields`` showing ``scenario``: ``controls`` and ``errors`` (the
    message under each) by field name, in one grid, ``widget``."""

    def __init__(self, fields: tuple, scenario: Scenario, catalog,
                 on_change: Callable[[str, object], None], *, sliders: tuple = (),
                 group_titles: dict | None = None):
        self.catalog, self.sliders, self.on_change = catalog, sliders, on_change
        self.controls: dict[str, W.Widget] = {}
        self.errors: dict[str, W.HTML] = {}
        #: True while the form itself sets values (they are the scenario's, not the user's)
        self.updating = False
        groups: dict[str, list] = {}
        for name in fields:
            groups.setdefault(describe(name)["group"], []).append(
                self._control(name, getattr(scenario, name)))
        cells = []
        for g, items in groups.items():
            head = make(W.HTML, f"<div class='llmc-group'>{esc((group_titles or {}).get(g, g))}</div>")
            head.add_class("llmc-span")
            cells.append(head)
            for item in items:
                cells += item
        self.widget = make(W.GridBox, cells, layout=dict(grid_template_columns="180px 190px"))
        self.widget.add_class("llmc-form")

    def _control(self, name: str, value) -> list:
        d = describe(name)
        label = field_label(name)
        lay = dict(width="190px")
        if d["kind"] == "choice":
            table = d["table"]
            df = (pd.DataFrame({"id": self.catalog.providers()}) if table == "providers"
                  else self.catalog.table(table))
            if table == "fabrics":
                df = df[df["kind"] == "scale_out"]
            opts = list(d.get("special", ())) + list(df["id"])
            if table == "fabrics":
                opts = [("auto: the GPU's usual", "auto")] + [(o, o) for o in opts if o != "auto"]
                if value not in [o[1] for o in opts]:
                    opts.append((value, value))
            elif table == "prices":
                opts = [("auto: the cheapest offer for each way to pay", "auto")] + [
                    (f"{r.id} ({r.gpus} x {r.gpu})", r.id) for r in df.itertuples()]
            elif table == "models":
                opts = [(o, o) for o in opts] + ([] if value in opts else [(value, value)])
            elif value not in opts:
                opts.append(value)
            w = make(W.Dropdown, options=opts, value=value, layout=lay)
        elif d["kind"] == "options":
            w = make(W.Dropdown, options=list(d["options"]), value=value, layout=lay)
        elif name in self.sliders or is_share(d):
            # a share reads as a percentage, as the headline shows it
            w = make(W.FloatSlider, value=value, min=d["lo"] if d["lo"] is not None else 0,
                     max=d["hi"] if d["hi"] is not None else 1, step=d["step"] or 0.01,
                     layout=lay, continuous_update=False, readout_format=".1%")
        elif name in TEXT_NUMBER_FIELDS:
            w = make(W.Text, value=shown(name, value), layout=lay, continuous_update=False)
        else:
            w = make(W.FloatText, value=value, layout=lay)
        w.add_class(f"llmc-ctl-{name}")
        w.observe(lambda ch, n=name: self._changed(n, ch["new"]), names="value")
        # the label wraps instead of being cut off; its full text is also the tooltip
        text = make(W.HTML, f"<div class='llmc-label' title='{esc(label)}'>{esc(label)}</div>")
        err = make(W.HTML, "")
        for cls in ("llmc-err", f"llmc-err-{name}", "llmc-span"):
            err.add_class(cls)
        self.controls[name] = w
        self.errors[name] = err
        return [text, w, err]

    def _changed(self, name: str, raw) -> None:
        if not self.updating:
            self.on_change(name, raw)

    def set(self, **values) -> None:
        """Set control values as a user would (tests and scripts)."""
        for k, x in values.items():
            self.controls[k].value = x if isinstance(x, str) else shown(k, x)

    def refuse(self, name: str, message: str) -> None:
        """Say beside control ``name`` why its value was not applied."""
        if name in self.errors:
            self.errors[name].value = esc(message)

    def clear_errors(self) -> None:
        for err in self.errors.values():
            err.value = ""

    def sync(self, scenario: Scenario, clear_errors: bool = True) -> None:
        """Every control shows the scenario's value (a control never shows a value the
        figures are not using)."""
        self.updating = True
        try:
            if "model" in self.controls:
                self._name_config(self.controls["model"], scenario)
            for name, w in self.controls.items():
                value = shown(name, getattr(scenario, name))
                if isinstance(w, W.Dropdown) and value not in w._options_values:
                    # as _control offers a value its catalog table does not list
                    w.options = [*w._options_full, (str(value), value)]
                if w.value != value:
                    w.value = value
                if clear_errors:
                    self.errors[name].value = ""
        finally:
            self.updating = False

    @staticmethod
    def _name_config(w, scenario: Scenario) -> None:
        """The Model control's "config" entry names the config's model (its
        ``_name_or_path``, else its architecture) once one is loaded."""
        label = scenario.model_label if scenario.model == "config" else "config"
        opts = [(lab, val) for lab, val in
                (o if isinstance(o, tuple) else (o, o) for o in w._options_full)]
        if any(val == "config" and lab != label for lab, val in opts):
            value = w.value
            w.options = [(label if val == "config" else lab, val) for lab, val in opts]
            w.value = value

    def show_used(self, scenario: Scenario, used: dict) -> None:
        """As :meth:`sync`, and controls whose figure comes from the catalog, a cited default
        or a derivation (their mode field is not custom) show the value ``used`` by the
        figures, greyed out; in custom mode they are the user's."""
        self.sync(scenario, clear_errors=False)
        self.updating = True
        try:
            for name, (mode, custom) in CUSTOM_MODE.items():
                w = self.controls.get(name)
                if w is None:
                    continue
                derived = getattr(scenario, mode) != custom
                w.disabled = derived
                # six significant digits: the figure in use, without float noise
                value = shown(name, float(f"{used[name]:.6g}")) if name in used else None
                if derived and value is not None and w.value != value:
                    w.value = value
        finally:
            self.updating = False

    def grey_inapplicable(self, names, why: str, applies: bool) -> None:
        """Controls ``names`` greyed out, their tooltip saying ``why``, when they do not apply
        to the scenario's figures (``applies`` False); editable again when they do."""
        for name in names:
            w = self.controls.get(name)
            if w is None:
                continue
            if applies:
                w.remove_class("llmc-not-applicable")
                if name not in CUSTOM_MODE:
                    w.disabled = False
                w.tooltip = None
            else:
                w.disabled = True
                w.add_class("llmc-not-applicable")
                w.tooltip = why

    def enable_derived(self) -> None:
        """Controls greyed out as derived are editable again (until results say otherwise)."""
        for name in CUSTOM_MODE:
            if name in self.controls:
                self.controls[name].disabled = False
