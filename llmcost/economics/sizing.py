"""Sizing's names at their first path; they live in :mod:`llmcost.planning`: sizing from a target
time (:mod:`~llmcost.planning.sizing`, :mod:`~llmcost.planning.sizes`), the pipeline batch
advice (:mod:`~llmcost.planning.pipeline_batch`) and the fine-tune ladder
(:mod:`~llmcost.planning.ladder`).

Looked up on first use, not imported here: ``planning`` sits above ``economics``, and importing
it while ``economics`` loads would import upward.
"""

from importlib import import_module

_MODULES = ("sizing", "sizes", "pipeline_batch", "ladder")


def __getattr__(name):
    for m in _MODULES:
        module = import_module(f"llmcost.planning.{m}")
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({n for m in _MODULES for n in dir(import_module(f"llmcost.planning.{m}"))})
