"""The HTML report of a review: one page, one or several pinned scenarios (A, B, C).

The page is rendered from one Jinja2 template (``llmcost/templates/report.html.j2``) with
autoescape on: labels, values, notes, titles and the share link are the user's and may be
hostile, so none of them reaches the page unescaped. plotly.js is embedded once, so the file
opens offline; each figure is a ``div`` and a ``Plotly.newPlot`` call on its JSON.

Nothing here is computed: the caller passes readable text (units in the labels) and plotly
Figures. No widgets and no plotly import at module level (plotly.js is read only when a
report has figures); jinja2 is imported when a report is rendered (the ``app`` extra).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from typing import Sequence
from urllib.parse import urlsplit

from .._validate import InputError

__all__ = ["ReportScenario", "render_report", "report_filename"]

FLAG_LEVELS = ("infeasible", "implausible", "uncalibrated")
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class ReportScenario:
    """One scenario of a report, as readable text.

    Attributes
    ----------
    label : str
        "A", "B", "C", or "" for a report of one scenario.
    headline : tuple
        (label, text, flag level or None) per headline figure, in display order.
    assumptions : tuple
        (readable label with unit, readable value) per setting that matters.
    notes : tuple
        Sentences shown under the scenario.
    figures : dict
        Name -> plotly Figure. An overlay of several scenarios is given once, in the
        first scenario's figures.
    tables : tuple
        The app's tables of this scenario, as it shows them.
    """

    label: str = ""
    headline: list = field(default_factory=list)
    assumptions: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    figures: dict = field(default_factory=dict)
    #: tables: {"title", "columns", "rows" (lists of texts)}, as the app shows them
    tables: list = field(default_factory=list)


def report_filename(app_name: str, generated_at: datetime) -> str:
    """File name of a report, dated in UTC: ``llmcost-review-2026-11-30-0612.html``."""
    slug = re.sub(r"[^a-z0-9]+", "-", str(app_name).lower()).strip("-") or "report"
    return f"llmcost-{slug}-{_utc(generated_at):%Y-%m-%d-%H%M}.html"


def render_report(scenarios: Sequence[ReportScenario], *, title: str, share_url: str | None,
                  version: str | None = None, generated_at: datetime | None = None,
                  deltas: list[tuple[str, list[str]]] | None = None) -> str:
    """The standalone HTML page of one or several scenarios.

    Parameters
    ----------
    scenarios : one ReportScenario, or several to compare (a headline table with one column
        per scenario, assumptions side by side with the differing values highlighted).
    title : page title.
    share_url : the link that reopens these values; clickable only if it is an http(s) or a
        relative link, otherwise shown as text.
    version : llmcost version shown; default: the installed package's.
    generated_at : when; default now. Shown in UTC (a naive datetime is taken as UTC).
    deltas : (headline label, [text of scenario 2 vs 1, scenario 3 vs 1, ...]) per headline
        row that has deltas; shown as "B vs A", "C vs A" columns. Several scenarios only.

    Returns
    -------
    str
        The page (UTF-8 when encoded): ~4.8 MB with figures (plotly.js alone is ~4.8 MB),
        a few kB without.

    Raises
    ------
    InputError
        A malformed scenario item, an unknown delta row or a generated_at that is not a
        datetime, naming the parameter.
    """
    from markupsafe import Markup  # with jinja2, the app extra: the numbers need neither

    scenarios = [scenarios] if isinstance(scenarios, ReportScenario) else list(scenarios)
    if not scenarios or not all(isinstance(s, ReportScenario) for s in scenarios):
        raise InputError("scenarios", "scenarios must be one or more ReportScenario, got "
                         f"{len(scenarios)} item(s) of types "
                         f"{sorted({type(s).__name__ for s in scenarios})}")
    multi = len(scenarios) > 1
    when = _utc(datetime.now(timezone.utc) if generated_at is None else generated_at)
    names = [_column_name(s.label, i, multi) for i, s in enumerate(scenarios)]
    delta_names = [f"{n} vs {names[0]}" for n in names[1:]] if multi and deltas else []
    # checked before anything else reads the items, so a malformed one names its parameter
    headline_rows = _headline_rows(scenarios, deltas, len(delta_names), multi)
    assumption_rows = _assumption_rows(scenarios)
    groups = _figure_groups(scenarios, names, multi)
    share = None if share_url is None else _text(share_url).strip() or None
    context = dict(
        title=_text(title), version=_text(version) if version else _llmcost_version(),
        generated_iso=f"{when:%Y-%m-%dT%H:%M:%SZ}", generated_text=f"{when:%Y-%m-%d %H:%M} UTC",
        share_url=share, share_href=_safe_href(share) if share else None,
        multi=multi, scenarios=[_clean(s) for s in scenarios], column_names=names,
        delta_names=delta_names,
        headline_rows=headline_rows, assumption_rows=assumption_rows,
        figure_groups=groups,
        plotly_js=Markup(_plotly_js()) if groups else None,
    )
    return _template().render(**context)


# ------------------------------------------------------------------ helpers
def _utc(t: datetime) -> datetime:
    if not isinstance(t, datetime):
        raise InputError("generated_at", f"generated_at must be a datetime, got {t!r}")
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


def _text(x) -> str:
    # str() of a markupsafe.Markup is a plain str: a caller's Markup cannot skip escaping
    return str(x)


def _llmcost_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("llmcost")
    except PackageNotFoundError:
        import llmcost
        return getattr(llmcost, "__version__", "unknown")


def _column_name(label, i: int, multi: bool) -> str:
    label = _text(label).strip()
    if label:
        return label
    return _LETTERS[i % len(_LETTERS)] if multi else ""


_UNSAFE_URL = re.compile(r"[\x00-\x20\x7f\\]")


def _safe_href(url: str) -> str | None:
    """The link as an href if it is http(s) or relative; None (shown as text) otherwise.
    Whitespace, control characters and backslashes are refused outright: browsers drop or
    reinterpret them, which is how "java\\tscript:" slips past a scheme check."""
    if _UNSAFE_URL.search(url):
        return None
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError:
        return None
    return url if scheme in ("", "http", "https") else None


def _flag(value) -> tuple[str | None, str | None]:
    """(shown text, css class) of a flag level; a level not known gets a neutral class."""
    if value is None or value == "":
        return None, None
    level = _text(getattr(value, "level", value))
    return level, level if level in FLAG_LEVELS else "other"


def _headline_cells(s: ReportScenario) -> dict:
    out = {}
    for i, item in enumerate(s.headline):
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise InputError("headline", "each headline item must be (label, text, flag level "
                             f"or None); item {i} of scenario {s.label!r} is {item!r}")
        label, text, *rest = item
        flag, flag_class = _flag(rest[0] if rest else None)
        out[_text(label)] = {"text": _text(text), "flag": flag, "flag_class": flag_class}
    return out


def _headline_rows(scenarios, deltas, n_delta: int, multi: bool) -> list[dict]:
    cells = [_headline_cells(s) for s in scenarios]
    labels = list(dict.fromkeys(k for c in cells for k in c))
    by_label: dict[str, list[str]] = {}
    if deltas and not multi:
        raise InputError("deltas", "deltas compare scenarios: give two or more scenarios, "
                         f"got one and {len(deltas)} delta row(s)")
    for item in deltas or ():
        label, texts = item
        label, texts = _text(label), [_text(t) for t in texts]
        if label not in labels:
            raise InputError("deltas", f"deltas name a headline row that no scenario has: "
                             f"{label!r}; rows are {labels}")
        if len(texts) > n_delta:
            raise InputError("deltas", f"deltas for {label!r} give {len(texts)} values; at most "
                             f"{n_delta} (one per scenario after the first)")
        by_label[label] = texts + [""] * (n_delta - len(texts))
    rows = []
    for label in labels:
        row_cells = [c.get(label) for c in cells]
        texts = {c["text"] if c else None for c in row_cells}
        rows.append({"label": label, "cells": row_cells, "differs": multi and len(texts) > 1,
                     "deltas": by_label.get(label, [""] * n_delta)})
    return rows


def _assumption_rows(scenarios) -> list[dict]:
    tables = []
    for s in scenarios:
        table = {}
        for i, item in enumerate(s.assumptions):
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise InputError("assumptions", "each assumption must be (label with unit, "
                                 f"value); item {i} of scenario {s.label!r} is {item!r}")
            table[_text(item[0])] = _text(item[1])
        tables.append(table)
    labels = list(dict.fromkeys(k for t in tables for k in t))
    rows = []
    for label in labels:
        values = [t.get(label) for t in tables]
        rows.append({"label": label, "texts": values, "differs": len(set(values)) > 1})
    return rows


def _clean(s: ReportScenario) -> dict:
    return {"label": _text(s.label), "notes": [_text(n) for n in s.notes or ()],
            "assumptions": [(_text(a), _text(b)) for a, b in s.assumptions or ()],
            "tables": [{"title": _text(t["title"]), "cls": _text(t.get("cls", "")),
                        "columns": [_text(c) for c in t["columns"]],
                        "rows": [[_text(x) for x in row] for row in t["rows"]]}
                       for t in s.tables or ()]}


def _script_json(text: str) -> str:
    """JSON made safe inside <script>: "<", ">" and "&" occur only within JSON strings, where
    their \\u escapes mean the same, so "</script>" and "<!--" cannot end the element."""
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _figure_json(name: str, fig) -> str:
    if hasattr(fig, "to_json"):
        text = fig.to_json()
    elif isinstance(fig, dict):
        text = json.dumps(fig)
    else:
        raise InputError("figures", f"figure {name!r} must be a plotly Figure or its dict, "
                         f"got {type(fig).__name__}")
    return _script_json(text)


def _figure_groups(scenarios, names, multi: bool) -> list[dict]:
    from markupsafe import Markup
    groups, n = [], 0
    for s, name in zip(scenarios, names):
        figs = []
        for fig_name, fig in (s.figures or {}).items():
            if fig is None:
                continue
            figs.append({"id": f"llmc-fig-{n}", "name": _text(fig_name),
                         "json": Markup(_figure_json(_text(fig_name), fig))})
            n += 1
        if figs:
            groups.append({"heading": name if multi else None, "figures": figs})
    return groups


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs
    js = get_plotlyjs()
    # plotly.js has no "</script" today; a future build must not end the element early
    return re.sub(r"</(script)", r"<\\/\1", js, flags=re.IGNORECASE)


@lru_cache(maxsize=1)
def _template():
    import jinja2
    path = resources.files("llmcost").joinpath("templates").joinpath("report.html.j2")
    text = path.read_text("utf-8")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=False, lstrip_blocks=False)
    return env.from_string(text)
