"""What a panel hands out and takes in, without widgets: the HTML report of every scenario
shown, the scenario file (saved as JSON, loaded back) and a Hugging Face config.json loaded
as the scenario's model.

The report reads an app through the methods that compute its page (``fields``,
``sliders``, ``title``, ``headline``, ``resolved``, ``note_lines``, ``tables``), so a panel
built without widgets (``build=False``) reports the same as one on screen."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field, replace

from ..scenario import CUSTOM_MODE, Scenario, config_text
from .compare import changes_vs_a
from .fields import field_label, readable
from .state import PanelState

#: a scenario file holds ~60 short values: anything much larger is not one
MAX_SCENARIO_BYTES = 200_000


def report_scenario(app, label: str, s: Scenario, res, figures: dict):
    """One scenario of the report: ``app``'s headline of ``res``, the values its figures
    used for each of the app's fields (derived ones said so), its notes, figures and
    tables."""
    from ..review.report import ReportScenario
    used = app.resolved(res)
    plan = getattr(res, "plan", None)
    assumptions = []
    for name in app.fields:
        mode = CUSTOM_MODE.get(name)
        derived = mode is not None and getattr(s, mode[0]) != mode[1] and name in used
        value = readable(name, used[name] if derived else getattr(s, name), app.sliders)
        suffix = " (derived)" if derived else ""
        inp = getattr(res, "inputs", None)
        if name == "fabric" and s.fabric == "auto" and inp is not None:
            suffix = f" ({inp.scale_out.id}, the GPU's usual)"
        if name == "gpus" and s.sizing == "days" and plan is not None:
            # sized by days: the figures used the GPUs the sizing chose, not the box's
            value, suffix = readable(name, int(plan.gpus)), " (sized for the days)"
        assumptions.append((field_label(name), value + suffix))
    if plan is not None and plan.layout is not None and "gpus" in app.fields:
        assumptions.append(("Layout used", plan.layout.description))
    shown = {lab for lab, _ in assumptions}
    assumptions += [(lab, text) for lab, text in review_assumptions(res) if lab not in shown]
    head = [(lab, text, getattr(rest[0], "level", None) if rest and rest[0] else None)
            for lab, text, *rest in app.headline(res).values()]
    return ReportScenario(label=label, headline=head, assumptions=assumptions,
                          notes=app.note_lines(res), figures=figures, tables=app.tables(res))


def review_assumptions(res) -> list:
    """(label, text) of every assumption a review's figures use beyond the page's controls:
    failures, restarts, preemptions, power and facility costs, the offer behind each way to
    pay and the fabric's assumed terms; empty for results that are not a review's."""
    inp, r = getattr(res, "inputs", None), getattr(res, "reliability", None)
    if inp is None or not hasattr(inp, "price_offers"):
        return []
    from ..review.results import OPTION_LABELS
    s = res.scenario
    out = [("Failure rate [per 1000 GPU-days]",
            f"{inp.failures_per_1000_gpu_days:.4g} ({inp.failure_source})")]
    if r is not None:
        out += [("Job MTBF [h]", f"{r.job_mtbf_h:,.1f}"),
                ("Restart per interruption [min]", f"{r.restart_h * 60:,.1f}"
                 + (" (" + ", ".join(f"{k.removesuffix('_s')} {x:,.0f} s"
                                     for k, x in r.restart_terms_s.items() if k != "total_s")
                    + ")" if r.restart_terms_s else "")),
                ("Checkpoint interval [s]", f"{r.interval_s:,.0f}")]
    out.append(("Spot preemptions [per day]", f"{s.preemptions_per_day:g}"))
    if inp.onprem is not None:
        o = inp.onprem
        out += [("PUE", f"{o.pue:g}"), ("Electricity [$/kWh]", f"{o.usd_per_kwh:g}"),
                ("System power per GPU [W]", f"{o.power_w_per_gpu:,.0f}"),
                ("Facility and operations [$/GPU-month]", f"{o.space_usd_per_gpu_month:,.2f}")]
    offers = "; ".join(f"{OPTION_LABELS.get(k, k)}: {x}" for k, x in inp.price_offers.items())
    out.append(("Offer per way to pay", offers or "prices entered"))
    out.append(("Price rule", inp.price_rule))
    fa = res.fabric_assumptions() if hasattr(res, "fabric_assumptions") else None
    if fa:
        out.append((f"Fabric {fa['fabric']}: assumed terms",
                    ", ".join(f"{k} {x:g}" for k, x in fa["assumed"].items())
                    + f"; step {fa['step_time_s_band'][0]:.3g}-{fa['step_time_s_band'][1]:.3g} s"
                      " over the values measured on other fabrics"))
    return out


def report_html(app, state: PanelState, share_url: str) -> str:
    """A standalone HTML report of every scenario of ``state`` (pinned first): headline
    figures (and their changes against A), the app's assumptions, notes and plots, dated,
    with the llmcost version and the share link."""
    from ..review.report import render_report
    pinned = state.pinned_results if state.pins else []
    sections = [report_scenario(app, label, s, r, {})
                for (label, r), s in zip(pinned, state.pins)]
    sections.append(report_scenario(app, state.label, state.scenario, state.results,
                                    state.figures))
    deltas = None
    if pinned:
        others = [r for _, r in pinned[1:]] + [state.results]
        deltas = changes_vs_a(app.headline(state.results), pinned[0][1], others)
    return render_report(sections, title=f"llmcost: {app.title}", share_url=share_url,
                         deltas=deltas or None)


def scenario_data_url(s: Scenario) -> str:
    """The scenario file of ``s`` as a data: URL (the page's "Save scenario" link)."""
    return "data:application/json;base64," + base64.b64encode(s.to_json().encode()).decode()


def upload_text(files) -> tuple[str, str] | None:
    """(name, text) of the first file of a FileUpload-style value (a list of dicts with
    ``content`` and maybe ``name``, or a dict of them); None for no file. A file over
    :data:`MAX_SCENARIO_BYTES` raises ValueError saying its size."""
    if not files:
        return None
    item = files[0] if isinstance(files, (list, tuple)) else next(iter(files.values()))
    content = bytes(item["content"])
    if len(content) > MAX_SCENARIO_BYTES:
        raise ValueError(f"the file is {len(content):,} bytes; a scenario file is at most "
                         f"{MAX_SCENARIO_BYTES:,}")
    return item.get("name", "scenario.json"), content.decode("utf-8", errors="replace")


def looks_like_hf_config(text: str) -> bool:
    """A Hugging Face config.json (it names its model type or architectures), not a
    scenario file; a file that does not parse is left to the scenario reader's message."""
    try:
        d = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(d, dict) and ("model_type" in d or "architectures" in d)


@dataclass(frozen=True)
class LoadedFile:
    """A file read as a scenario: ``scenario`` None when it is not one (``error`` says
    why); else what to tell the user once it is applied (``title``, ``messages``) and, if
    its scenario does not evaluate, ``refused``."""

    scenario: Scenario | None
    error: str = ""
    title: str = ""
    messages: list = field(default_factory=list)
    refused: str = ""


def read_scenario_file(name: str, text: str, current: Scenario, catalog=None,
                       takes_model: bool = True) -> LoadedFile:
    """A scenario file's values (what it sets that cannot be used is listed), or, when
    ``takes_model``, a Hugging Face config.json as ``current`` with that model (carried by
    the link as ``cfg.<field>`` keys)."""
    if takes_model and looks_like_hf_config(text):
        return _read_config(name, text, current)
    s, warnings = Scenario.from_json(text, catalog)
    if warnings and warnings[0].startswith("not a scenario file"):
        return LoadedFile(None, error=warnings[0])
    return LoadedFile(s, title="Some settings in the file were not used:", messages=warnings,
                      refused="its values could not be evaluated (see the message above the "
                              "figures); the controls keep the last good values")


def _read_config(name: str, text: str, current: Scenario) -> LoadedFile:
    from ..training import hf_config
    try:
        fields_ = hf_config.file_config_fields(hf_config.read_config(text, name=name), name)
        model, notes = hf_config.model_from_config(fields_)
        s = replace(current, model="config", model_config=config_text(fields_))
    except ValueError as e:
        return LoadedFile(None, error=str(e))
    label = fields_["_name_or_path"]
    head = (f"Model from {name}" + (f" ({label})" if label != name else "")
            + f": {model.layers} layers, hidden {model.hidden:,}, "
            f"{model.params / 1e9:,.1f} B parameters"
            + (f" ({model.active_params / 1e9:,.1f} B active)" if model.is_moe else "")
            + "; the share link carries it.")
    return LoadedFile(s, title="Loaded a config.json:", messages=[head, *notes],
                      refused="the model it describes could not be evaluated (see the message "
                              "above the figures); the controls keep the last good values")
