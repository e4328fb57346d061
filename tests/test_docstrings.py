"""Every public formula function documents its parameters, units and sources (numpydoc)."""

import inspect
import re

import pytest

from llmcost import utilization
from llmcost.economics import spot, storage, tco, waterfall
from llmcost.economics.reliability import checkpoints, failures, restart, wall_time
from llmcost.planning import ladder, pipeline_batch, planner, sizes, sizing
from llmcost.training import comm, flops, memory, moe, precision, scaling, step, uncertainty

MODULES = [flops, memory, utilization, comm, step, scaling, tco, spot, failures, checkpoints,
           wall_time, restart, sizing, sizes, pipeline_batch, ladder, waterfall, precision,
           uncertainty, moe, storage]
# a package's functions live in its submodules: they count as the package's own
FUNCS = [(m.__name__, n, f) for m in MODULES for n, f in inspect.getmembers(m, inspect.isfunction)
         if (f.__module__ == m.__name__ or f.__module__.startswith(m.__name__ + "."))
         and not n.startswith("_")]


#: modules whose every public function states its equation
EQUATION_MODULES = {storage.__name__, moe.__name__}


@pytest.mark.parametrize("module,name,func", FUNCS, ids=[f"{m}.{n}" for m, n, _ in FUNCS])
def test_numpydoc_with_units_and_references(module, name, func):
    doc = inspect.getdoc(func) or ""
    if module in EQUATION_MODULES:
        assert ".. math::" in doc, f"{name}: no equation"
    for section in ("Parameters", "Returns"):
        assert re.search(rf"^{section}\n-+$", doc, re.M), f"{name}: no {section} section"
    if name not in ("assess_utilization", "analyse_measured_scaling"):  # wrappers, not formulas
        assert re.search(r"^References\n-+$", doc, re.M), f"{name}: no References"
        assert re.search(r"\[[^\]]+\]", doc.split("Returns")[1]), f"{name}: no [unit] in Returns"
