"""The layout planner's names at their first path; they live in :mod:`llmcost.planning.planner`.

Looked up on first use, not imported here: ``planning`` sits above ``training`` (it ranks
layouts by the step model), and importing it while ``training`` loads would import upward.
"""


def __getattr__(name):
    from ..planning import planner
    return getattr(planner, name)


def __dir__():
    from ..planning import planner
    return dir(planner)
