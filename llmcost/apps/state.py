"""A panel's scenarios without its widgets: the current Scenario, the pinned ones it is
compared with (A, B before it), what the link that opened them did not use, and the last
good results. One link carries them all (:meth:`PanelState.query`); a visitor's link read
into a page built before it arrived is :meth:`PanelState.from_query` compared with
:meth:`PanelState.shows`."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable
from urllib.parse import urljoin

from ..scenario import COMPARE_LABELS, CUSTOM_MODE, Scenario, scenarios_from_query, scenarios_to_query

#: the most scenarios pinned beside the current one (A and B; the current is then C)
MAX_PINS = len(COMPARE_LABELS) - 1
#: the fields that switch a group of values between derived and custom (price_source...)
MODE_FIELDS = frozenset(mode for mode, _ in CUSTOM_MODE.values())


class PanelState:
    """The scenarios a panel shows and their last good results.

    ``results``, ``figures`` and ``pinned_results`` ([(label, results)] of the pins) are
    those of the last scenario that computed; None and empty until one has."""

    def __init__(self, scenario: Scenario, pins=(), link_warnings=()):
        self.scenario = scenario
        self.pins: list[Scenario] = list(pins)
        self.link_warnings: list[str] = list(link_warnings)
        self.results = None
        self.figures: dict = {}
        self.pinned_results: list = []

    @classmethod
    def from_query(cls, query: str, catalog=None) -> "PanelState":
        """The scenarios of a link (``b.``/``c.`` keys pin A and B), with warnings for what
        it did not use; no results yet."""
        scenarios, warnings = scenarios_from_query(query, catalog)
        return cls(scenarios[-1], scenarios[:-1], warnings)

    def shows(self, other: "PanelState") -> bool:
        """Whether this state's results are those ``other`` asks for."""
        return (self.results is not None and other.pins == self.pins
                and other.scenario == self.scenario)

    @property
    def label(self) -> str:
        """The current scenario's letter when scenarios are pinned, else ""."""
        return COMPARE_LABELS[len(self.pins)] if self.pins else ""

    def query(self) -> str:
        """The link's query: every scenario shown (pinned first, the current one last)."""
        return scenarios_to_query([*self.pins, self.scenario])

    def share_link(self, name: str, base: str = "") -> str:
        """The link to app ``name`` showing these scenarios, absolute when the page's own
        address ``base`` is known."""
        q = self.query()
        rel = f"{name}.ipynb" + (f"?{q}" if q else "")
        return urljoin(base, rel) if base else rel

    @property
    def can_pin(self) -> bool:
        return len(self.pins) < MAX_PINS

    def pin_text(self) -> str:
        """What the pin button says: the letter the current scenario would be pinned as."""
        return f"Pin as {COMPARE_LABELS[len(self.pins)]}" if self.can_pin else "Pinned: A, B"

    def pin(self) -> bool:
        """Keep the current scenario as the next compared one; False (nothing pinned) when
        two are pinned already or the current one has no results."""
        if not self.can_pin or self.results is None:
            return False
        self.pins = [*self.pins, self.scenario]
        return True

    def clear_pins(self) -> None:
        self.pins = []

    def compute_pinned(self, compute: Callable) -> tuple[list, list[str]]:
        """[(label, compute(pin))] of the pinned scenarios, and a message for each that no
        longer computes: it is unpinned and the others take the letters in order (a link
        can pin anything)."""
        out, keep, dropped = [], [], []
        for label, s in zip(COMPARE_LABELS, self.pins):
            try:
                out.append(compute(s))
                keep.append(s)
            except ValueError as e:
                dropped.append(f"scenario {label} dropped: {e}")
        self.pins = keep
        return list(zip(COMPARE_LABELS, out)), dropped

    def keep(self, results, figures: dict, pinned: list) -> None:
        """The results of the current scenario (and of the pins) that computed."""
        self.results, self.figures, self.pinned_results = results, figures, pinned


def carry_custom(s: Scenario, mode: str, used: dict) -> tuple[Scenario, bool]:
    """``s`` just switched its ``mode`` field (price_source...): a group switched to custom
    starts from the values the figures on screen ``used``, not from stale custom ones.
    Returns the scenario and whether any value was carried."""
    carry = {k: float(f"{used[k]:.6g}") for k, (m, want) in CUSTOM_MODE.items()
             if m == mode and getattr(s, mode) == want and k in used}
    if not carry:
        return s, False
    try:
        return replace(s, **carry), True
    except ValueError:
        return s, True
