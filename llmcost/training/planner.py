"""The layout planner's names at their first path; they live in :mod:`llmcost.planning.planner`.

Looked up on first use, not imported here: ``planning`` sits above ``training`` (it ranks
layouts by the step model), and importing it while ``training`` loads would import upward.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    from ..planning import planner
    return getattr(planner, name)


def __dir__() -> list[str]:
    from ..planning import planner
    return dir(planner)
