"""Sizing's names at their first path; they live in :mod:`llmcost.planning`: sizing from a target
time (:mod:`~llmcost.planning.sizing`, :mod:`~llmcost.planning.sizes`), the pipeline batch
advice (:mod:`~llmcost.planning.pipeline_batch`) and the fine-tune ladder
(:mod:`~llmcost.planning.ladder`).

Looked up on first use, not imported here: ``planning`` sits above ``economics``, and importing
it while ``economics`` loads would import upward.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_MODULES = ("sizing", "sizes", "pipeline_batch", "ladder")


def __getattr__(name: str) -> Any:
    for m in _MODULES:
        module = import_module(f"llmcost.planning.{m}")
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({n for m in _MODULES for n in dir(import_module(f"llmcost.planning.{m}"))})
