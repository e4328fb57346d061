"""benchmarks/load.py (``make bench``'s browser rounds): the parts that run without a
browser: the floor layout's folder, the table's rows, how a round's end is waited for."""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("load_bench", ROOT / "benchmarks" / "load.py")
load = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = load          # its dataclasses look their module up
spec.loader.exec_module(load)


def test_floor_folder_is_the_workbook_with_one_widget_as_review(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    out = load.floor_folder(ROOT / "notebooks")
    assert out.parent == tmp_path
    names = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert {p.name for p in out.glob("*.ipynb")} == names       # the same pools
    assert (out / "voila.json").read_text() == (ROOT / "notebooks" / "voila.json").read_text()
    nb = json.loads((out / "review.ipynb").read_text())
    assert [c["source"] for c in nb["cells"]] == [load.FLOOR_SOURCE]
    assert load.FLOOR_SELECTOR.lstrip(".") in load.FLOOR_SOURCE
    assert (out / "index.ipynb").read_text() == (ROOT / "notebooks" / "index.ipynb").read_text()


def _round(times, **kw):
    r = load.Round()
    r.times_s = list(times)
    for k, v in kw.items():
        setattr(r, k, v)
    return r


def test_rows_put_today_and_the_floor_beside_the_workbooks_concurrent_round():
    res = {
        "today": {"warm": _round([6.0, 6.2, 6.1]), 8: _round([], failures=8)},
        "workbook": {"warm": _round([2.4, 2.5, 2.6]), "returning": _round([2.3]),
                     8: _round([20.0 + i for i in range(8)], peak_kernels=15,
                               peak_rss=15 * 136e6)},
        "floor": {"warm": _round([2.3]), 8: _round([19.0 + i for i in range(8)])},
    }
    rows = {name: text for name, _, _, text in load.rows(res)}
    wb8 = rows["voila [workbook] 8 simultaneous first visit(s)"]
    # p50 of 20..27 by the nearest-rank rule used by Round.p: index round(0.5 * 7) = 4
    assert "p50 24.0 s, p95 27.0 s (budget 15 s)" in wb8
    assert "floor (the same browsers, one widget, no app) p50 23.0 s, p95 26.0 s" in wb8
    assert "136 MB each" in wb8
    floor8 = rows["voila [floor: one widget, no app] 8 simultaneous first visit(s)"]
    assert "budget" not in floor8 and "today" not in floor8
    assert "(budget 2.5 s)" in rows["voila [workbook] review plots drawn, warm, 1 visit"]
    assert "budget" not in rows["voila [floor: one widget, no app] page drawn, warm, 1 visit"]


def test_the_server_rounds_of_the_default_page_and_of_a_shared_link_are_two_rows():
    res = {"today": {"warm": _round([6.0]),
                     "server 8": _round([9.0] * 8, settled_s=9.8, server_cpu_s=18),
                     "server 8 link": _round([9.1] * 8, settled_s=9.9, server_cpu_s=18)},
           "workbook": {"warm": _round([2.4]),
                        "server 8": _round([0.1] * 8, settled_s=0.2, server_cpu_s=0),
                        "server 8 link": _round([0.2] * 8, settled_s=1.4, server_cpu_s=2)}}
    rows = {name: (n, sec, text) for name, n, sec, text in load.rows(res)}
    link = rows["voila [workbook] server work for 8 simultaneous first visits of a shared link "
                "(not the defaults)"]
    assert link[:2] == (8, 1.4)
    assert "all first results computed 1.4 s" in link[2] and "today 9.9 s" in link[2]
    assert rows["voila [workbook] server work for 8 simultaneous first visits"][1] == 0.2


def test_a_link_round_gets_the_link():
    from llmcost import catalog
    from llmcost.scenario import Scenario, scenarios_from_query
    scenarios, warnings = scenarios_from_query(load.LINK_QUERY, catalog.default())
    # every value is used, and none is the default: the page's results must be computed
    assert warnings == [] and len(scenarios) == 1
    default = Scenario()
    for key in ("model", "gpus", "fabric"):
        assert getattr(scenarios[0], key) != getattr(default, key)


KID = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"


def test_a_pages_kernel_id_is_read_from_its_config():
    html = f'<script id="jupyter-config-data">{{"baseUrl": "/", "kernelId": "{KID}"}}</script>'
    assert load.page_kernel_ids(html) == {KID}
    assert load.page_kernel_ids("<html>no kernel</html>") == set()


def test_wait_quiet_waits_for_the_last_rounds_page_kernels_to_go(tmp_path):
    # a stand-in kernel: a child of this process named like one, with Jupyter's
    # connection file naming its id
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                              "ipykernel_launcher", "-f", str(tmp_path / f"kernel-{KID}.json")])
    try:
        server = load.Server("workbook", types.SimpleNamespace(pid=os.getpid()), "", tmp_path / "log")
        deadline = time.time() + 10
        while server.kernel_ids() != {KID} and time.time() < deadline:
            time.sleep(0.1)
        assert server.kernel_ids() == {KID}
        server.pool = 1
        load.wait_quiet(server, timeout_s=5)          # the pools' one kernel, idle: quiet
        server.after_round = frozenset({KID})         # ...unless a page used that kernel
        with pytest.raises(RuntimeError, match="1 of the last round's pages"):
            load.wait_quiet(server, timeout_s=2)
    finally:
        child.kill()
        child.wait()


def test_paired_rows_give_every_rounds_figures_in_the_order_run():
    res = {"workbook": [_round([30.0 + i for i in range(8)], machine_cpu_s=70.0),
                        _round([20.0 + i for i in range(8)], machine_cpu_s=60.0),
                        _round([25.0 + i for i in range(8)], machine_cpu_s=65.0, failures=1)],
           "floor": [_round([24.0] * 8, machine_cpu_s=55.0)]}
    rows = load.paired_rows(res)
    name, n, mid, text = rows[0]
    assert name == "voila [workbook] 8 simultaneous first visits, rounds alternated" and n == 8
    # each round's p50 by Round.p (index 4 of 8): 34, 24, 29; their median 29
    assert mid == 29.0
    assert "p50 by round 34.0, 24.0, 29.0 s; machine 70, 60, 65 CPU-s; failures 1" in text
    assert rows[1][2] == 24.0


def test_the_readmes_paired_command_runs_the_paired_rounds(monkeypatch, capsys):
    # docs/serving.md's `python benchmarks/load.py --paired 3`, with the browser rounds stubbed
    # (a real run takes ~20 min: make bench's territory)
    asked = []
    monkeypatch.setattr(load, "paired", lambda pairs: asked.append(pairs) or {
        "workbook": [_round([30.0] * 8, machine_cpu_s=60.0)],
        "floor": [_round([24.0] * 8, machine_cpu_s=50.0)]})
    page = (ROOT / "docs" / "serving.md").read_text()
    argv = "python benchmarks/load.py --paired 3".split()
    assert " ".join(argv) in page
    load.main(argv[2:])
    out = capsys.readouterr().out.splitlines()
    assert asked == [3]
    assert [line.split("  ")[0] for line in out] == [
        "voila [workbook] 8 simultaneous first visits, rounds alternated",
        "voila [floor] 8 simultaneous first visits, rounds alternated"]
    assert "p50 by round 30.0 s; machine 60 CPU-s" in out[0]
