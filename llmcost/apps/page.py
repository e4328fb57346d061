"""A page of the workbook, apart from what it shows: its style sheet, the HTML of the
pieces every page has (warnings, headline boxes, tables, notes, the navigation) and how it is
sent under Voila (:func:`show_page`: preheated or not, the page before its figures)."""

from __future__ import annotations

import os
from typing import Callable

import ipywidgets as W

from .. import catalog as catalog_mod
from .registry import apps
from .shared import make, shared_layout
from .text import esc

CSS = """<style>
.llmc-headline-row {display:flex; flex-flow:row wrap}
.llmc-headline-box {border:1px solid #ddd; border-radius:6px; padding:6px 10px; margin:3px;
  min-width:150px; max-width:320px; background:#fafafa}
.llmc-headline-label {font-size:11px; color:#555}
.llmc-headline-value {font-size:18px; font-weight:600; overflow-wrap:anywhere}
.llmc-headline-value[title] {cursor:help; text-decoration:underline dotted #999}
.llmc-layout-key {font-size:11px; line-height:1.35; color:#555; margin-top:3px}
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
.llmc-table td:not(:last-child) {white-space:nowrap}
</style>"""
def html_box(css_class: str, value: str = "") -> W.HTML:
    """An HTML widget of the page, found by its class (the browser tests' hooks)."""
    w = make(W.HTML, value)
    w.add_class(css_class)
    return w


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

def warning_html(warnings, what="Some settings in the link were not used:") -> str:
    """Warnings under a heading, as the page's warning box shows them ("" for none)."""
    if not warnings:
        return ""
    items = "".join(f"<li>{esc(w)}</li>" for w in warnings)
    return f"<div class='llmc-warning'>{esc(what)}<ul>{items}</ul></div>"

def headline_html(head: dict) -> tuple[str, dict, dict]:
    """The headline figures ``head`` (key -> (label, text[, Flag])) as one row of boxes, a
    flagged one coloured by its level with its message under it; also key -> the HTML of
    its value, and key -> its Flag."""
    flags, shown, boxes = {}, {}, []
    for key, (label, text, *rest) in head.items():
        flag = rest[0] if rest else None
        classes = f"llmc-headline-box llmc-box-{key}"
        note = ""
        if flag is not None:
            classes += f" llmc-flag-{flag.level}"
            flags[key] = flag
            note = f"<div class='llmc-flag-note'>{esc(flag.level)}: {esc(flag.message)}</div>"
        value = f"<div class='llmc-headline-value'>{esc(text)}</div>"
        if key == "best_layout" and text != "none":
            value = layout_value_html(text)
        shown[key] = f"{value}{note}"
        boxes.append(f"<div class='{classes}'><div class='llmc-headline-label'>"
                     f"{esc(label)}</div><div class='llmc-headline-{key}'>"
                     f"{shown[key]}</div></div>")
    return f"<div class='llmc-headline-row'>{''.join(boxes)}</div>", shown, flags


def layout_value_html(description: str) -> str:
    """A layout string with its legend: each part's meaning on hover, and the one-line key
    to its abbreviations under it."""
    from ..training.layout import description_legend, layout_key_line
    legend = "\n".join(f"{tok}: {meaning}" for tok, meaning in description_legend(description))
    return (f"<div class='llmc-headline-value' title='{esc(legend)}'>{esc(description)}</div>"
            f"<div class='llmc-layout-key'>{esc(layout_key_line(description))}</div>")


def notes_html(lines: list) -> str:
    return "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in lines) + "</ul>" if lines else ""


def nav_html(name: str, query: str) -> str:
    """The links to every app (and the landing page) carrying ``query``; app ``name``, the
    page itself, in bold."""
    suffix = esc(f"?{query}" if query else "")
    items = [f"<a href='index.ipynb{suffix}'>All apps</a>"]
    items += [f"<b>{esc(c.title)}</b>" if c.name == name else
              f"<a href='{c.name}.ipynb{suffix}'>{esc(c.title)}</a>" for c in apps()]
    return f"<div class='llmc-navbar'>{' | '.join(items)}</div>"


def heartbeat():
    """The "connection lost" banner's widget, when its module is there."""
    try:
        from .heartbeat import Heartbeat
    except ImportError:
        return None
    return Heartbeat(layout=shared_layout())


def after_this_cell(fn) -> bool:
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
    if pending and not after_this_cell(first(page)):
        whole(page)()
    return page
