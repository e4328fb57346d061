"""How much a sampling test draws: a fixed budget in ``make test`` (and CI), the full one in
``make test-grid``.

``LLMCOST_BUDGET=full`` (set by ``make test-grid``) gives every Hypothesis test and every
seeded sweep the number of examples it names; otherwise each draws :func:`examples` of it, and
Hypothesis runs derandomized, so a CI failure replays as it ran. Tests import it by name
(``tests/`` is on pytest's pythonpath).
"""

import os

FULL = os.environ.get("LLMCOST_BUDGET", "").strip().lower() == "full"

#: the share of a test's full number of examples drawn in ``make test``, and the fewest
SHARE = 0.1
LEAST = 20


def examples(full: int) -> int:
    """The examples a test draws: ``full`` under ``LLMCOST_BUDGET=full``, else about a tenth
    (at least :data:`LEAST`, at most ``full``)."""
    return full if FULL else min(full, max(LEAST, round(full * SHARE)))
