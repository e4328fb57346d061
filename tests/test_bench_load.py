"""benchmarks/load.py (``make bench``'s browser rounds): the parts that run without a
browser: the floor layout's folder and the table's rows."""

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
