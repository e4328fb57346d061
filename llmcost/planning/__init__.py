"""Planning a run: the layout planner (:mod:`~llmcost.planning.planner` over the space of
:mod:`~llmcost.planning.space`), sizing a cluster from a target time
(:mod:`~llmcost.planning.sizing`, :mod:`~llmcost.planning.sizes`), the pipeline batch advice
(:mod:`~llmcost.planning.pipeline_batch`) and the fine-tune ladder
(:mod:`~llmcost.planning.ladder`).

Above ``training`` (the step and memory models it ranks layouts by) and ``economics`` (offers);
no widgets, no plotting.
"""
