"""The serving figures carry the answer's numbers."""

import pytest

from llmcost import catalog, plots
from llmcost.serving.query import answer


def test_pareto_memory_and_cost_figures():
    a = answer("model=llama3-70b&gpu=h100-sxm&weights=fp8&isl=1000&osl=1000&tpot_ms_max=30")
    f = plots.serving_pareto(a)
    front = f.data[0]
    assert list(front.x) == [p["tpot_ms"] for p in a["pareto"]]
    assert f.data[1].x[0] == a["tpot_ms"]
    gpu = catalog.default().gpu("h100-sxm")
    m = plots.serving_memory(a, gpu.memory_bytes / 1e9)
    used = sum(t.x[0] for t in m.data[:3])
    # the bars add up to the HBM: 80 GiB = 85.9 GB
    assert used + m.data[3].x[0] == pytest.approx(80 * 2**30 / 1e9)
    c = plots.serving_cost(a)
    assert list(c.data[0].y) == list(a["usd_per_million_output_tokens"].values())


def test_empty_front_is_a_message():
    f = plots.serving_pareto({"pareto": []})
    assert "no layout fits" in str(f.layout)
