"""Pinned scenarios side by side: each headline figure of A, B and C with its change
against A, and the settings in which B and C differ from A. No widgets: the panel shows
:func:`compare_html` of :func:`comparison`, the report the same changes
(:func:`changes_vs_a`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..scenario import COMPARE_LABELS, FIELDS, Scenario, describe
from .fields import shown
from .text import esc

#: headline keys whose raw values are numbers a change means something for
NUMERIC_DELTA = frozenset({"days", "gpus", "cost_on_demand_usd", "mfu",
                           "effective_utilization", "memory_gb_per_gpu", "goodput",
                           "breakeven_months", "spot_net_savings", "job_mtbf_h"})


def _raw(res, key: str):
    head = getattr(res, "headline", None)
    return head.get(key) if isinstance(head, dict) else None


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def change(key: str, a, r) -> float | None:
    """The relative change of headline figure ``key`` from results ``a`` to ``r``,
    (r - a) / |a|, from their raw values (``Results.headline``); None where a change means
    nothing (texts, flags, a zero or an equal figure, results without raw values)."""
    x0, x1 = _raw(a, key), _raw(r, key)
    if key not in NUMERIC_DELTA or not (_number(x0) and _number(x1)) or not x0 or x1 == x0:
        return None
    return (x1 - x0) / abs(x0)


def change_text(key: str, a, r) -> str:
    """:func:`change` as the page prints it ("+12.3%"), "" where there is none."""
    c = change(key, a, r)
    return "" if c is None else f"{c:+.1%}"


@dataclass(frozen=True)
class Comparison:
    """The compare table as text.

    Attributes
    ----------
    labels : list
        The columns' letters, A first, the current scenario last.
    rows : list
        (figure label, [(text, change vs A)] per column) per headline figure; "-" where a
        scenario has no such figure, "" where there is no change (always in column A).
    differences : list
        (letter, ["<setting> = <value>", ...]) for B and C: the settings that differ from A.
    """

    labels: list
    rows: list
    differences: list


def comparison(columns: list, pins: list, scenario: Scenario) -> Comparison:
    """The table of ``columns`` [(letter, results, headline)] (A first, the current last;
    headline as ``Panel.headline``: key -> (label, text[, flag])), with the settings in
    which each of ``[*pins[1:], scenario]`` differs from ``pins[0]``."""
    keys = list(dict.fromkeys(k for _, _, h in columns for k in h))
    a = columns[0][1]
    rows = []
    for k in keys:
        label = next(h[k][0] for _, _, h in columns if k in h)
        cells = [(h[k][1] if k in h else "-", change_text(k, a, r) if i else "")
                 for i, (_, r, h) in enumerate(columns)]
        rows.append((label, cells))
    differences = [(label, [f"{describe(k)['label']} = {shown(k, getattr(s, k))}"
                            for k in FIELDS if getattr(s, k) != getattr(pins[0], k)])
                   for label, s in zip(COMPARE_LABELS[1:], [*pins[1:], scenario])]
    return Comparison(labels=[label for label, _, _ in columns], rows=rows,
                      differences=differences)


def compare_html(c: Comparison) -> str:
    """The compare table and the list of differences, every text escaped."""
    last = len(c.labels) - 1
    heads = "".join(f"<th>{esc(lab)}{' (current)' if i == last else ''}</th>"
                    for i, lab in enumerate(c.labels))
    rows = []
    for label, cells in c.rows:
        tds = "".join(f"<td>{esc(text)}"
                      + (f" <span class='llmc-delta'>({esc(ch)} vs A)</span>" if ch else "")
                      + "</td>" for text, ch in cells)
        rows.append(f"<tr><th>{esc(label)}</th>{tds}</tr>")
    diffs = "".join(f"<li>{esc(label)} differs from A in: {esc('; '.join(d) or 'nothing')}</li>"
                    for label, d in c.differences)
    return (f"<table class='llmc-compare-table'><tr><th></th>{heads}</tr>{''.join(rows)}"
            f"</table><ul class='llmc-compare-diffs'>{diffs}</ul>")


def changes_vs_a(head: dict, a, others: list) -> list:
    """(figure label, [change of each of ``others`` against ``a``]) for the figures of
    ``head`` (key -> (label, ...)) that changed in at least one."""
    out = []
    for key, (label, *_rest) in head.items():
        changes = [change_text(key, a, r) for r in others]
        if any(changes):
            out.append((label, changes))
    return out
