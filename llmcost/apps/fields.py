"""How a Scenario field reads on a panel: its label with its unit, the text its control
shows, the text the report prints, and a typed value read back into a Scenario. No widgets:
the form, the compare table and the report read fields the same way."""

from __future__ import annotations

from dataclasses import replace

from ..scenario import FIELDS, Scenario, describe, number_text, parse_value

#: float fields whose values span many orders of magnitude: typed and shown as "2T", "4M"
BIG_NUMBER_FIELDS = frozenset(
    name for name, f in FIELDS.items()
    if f.metadata["kind"] == "float" and (f.metadata["hi"] or 0) >= 1e9)
#: fields typed in text boxes read by parse_number: the big numbers, and the counts, which
#: people write as "100,000" or "16k" (a number box refuses the comma)
TEXT_NUMBER_FIELDS = BIG_NUMBER_FIELDS | frozenset(
    name for name, f in FIELDS.items() if f.metadata["kind"] == "int")


def field_label(name: str) -> str:
    """A control's label with its unit, as the user reads it."""
    d = describe(name)
    return d["label"] + (f" [{d['unit']}]" if d["unit"] else "")


def is_share(d: dict) -> bool:
    """A unitless float field bounded to [0, 1] (``d`` from :func:`describe`): a share."""
    return d["kind"] == "float" and d["lo"] == 0 and d["hi"] == 1 and not d["unit"]


def shown(name: str, value):
    """The control's value for a Scenario value: "2T" reads better than 2000000000000, and
    parses back to the same number."""
    return number_text(value) if name in TEXT_NUMBER_FIELDS else value


def readable(name: str, value, sliders: tuple = ()) -> str:
    """A field's value as the report reads it: shares (and fields shown as sliders) as
    percentages, big numbers as "2T"."""
    if isinstance(value, str):
        return value
    if is_share(describe(name)) or name in sliders:
        return f"{value:.1%}"
    if name in BIG_NUMBER_FIELDS:
        return number_text(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:,.6g}"


def with_value(s: Scenario, name: str, raw, cat=None) -> Scenario:
    """``s`` with field ``name`` set to the control's ``raw`` value; a value out of range
    raises ValueError in the words of the field's label, with the allowed range."""
    return replace(s, **{name: parse_value(FIELDS[name], raw, cat)})
