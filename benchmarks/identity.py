"""Every number the tool answers, written to JSON, and two such files compared: the check that a
refactoring changes no output.

What it writes (one flat JSON object, key -> number):

* ``review/<scenario query>/<path>``: every number of ``evaluate(s).to_json()`` (what
  ``llmcost review --json`` prints) for the covering points of ``make test`` and the whole
  grid of ``make test-grid`` (tests/points.py: every catalog model x GPU x sizing mode);
* ``step/<row id>/<column>``: every row of ``make validate``'s step-time table;
* ``whole/<run id>/<column>``: every row of its whole-run table (review, floor, napkin);
* ``serving/<point id>/<column>``: every row of benchmarks/serving_check.py's table.

Usage::

    python benchmarks/identity.py --out before.json [--points-only] [--jobs 2]
    python benchmarks/identity.py --compare before.json after.json [--rtol 1e-9]

``--compare`` prints how many numbers it compared, the largest relative difference and the
keys that differ, appear or vanish, and exits 1 when any differs by more than ``--rtol``.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import sys
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]


def flatten(obj, prefix: str, out: dict) -> dict:
    """Numbers of a JSON-like object under slash-separated keys (booleans as 0/1, strings
    kept: a changed label is a changed output too)."""
    if isinstance(obj, dict):
        for k, x in obj.items():
            flatten(x, f"{prefix}/{k}", out)
    elif isinstance(obj, (list, tuple)):
        for i, x in enumerate(obj):
            flatten(x, f"{prefix}/{i}", out)
    elif isinstance(obj, (bool, np.bool_)):
        out[prefix] = int(obj)
    elif isinstance(obj, (int, float, np.integer, np.floating)):
        x = float(obj)
        out[prefix] = x if math.isfinite(x) else repr(x)
    elif obj is not None:
        out[prefix] = str(obj)
    return out


def _review(scenario) -> dict:
    from llmcost.review import evaluate
    key = f"review/{scenario.to_query() or 'defaults'}"
    try:
        return flatten(evaluate(scenario).to_json(), key, {})
    except Exception as e:  # an input the chain refuses is an answer too
        return {f"{key}/refused": f"{type(e).__name__}: {e}"}


def reviews(points_only: bool = False, jobs: int = 2) -> dict:
    from points import POINTS, grid
    scenarios = list(POINTS) + ([] if points_only else list(grid()))
    out: dict = {}
    if jobs > 1:
        with Pool(jobs) as pool:
            parts = pool.map(_review, scenarios, chunksize=8)
    else:
        parts = map(_review, scenarios)
    for part in parts:
        out.update(part)
    return out


def _frame(df: pd.DataFrame, prefix: str, id_col: str = "id") -> dict:
    out: dict = {}
    for rec in df.to_dict("records"):
        rid = rec.pop(id_col)
        flatten({k: (None if isinstance(x, float) and math.isnan(x) else x)
                 for k, x in rec.items()}, f"{prefix}/{rid}", out)
    return out


def tables() -> dict:
    import serving_check
    import validate

    from llmcost import catalog
    out = _frame(validate.evaluate(validate.load_rows()), "step")
    out.update(_frame(validate.whole_runs(out=io.StringIO()), "whole"))
    cat = catalog.default()
    out.update(_frame(serving_check.errors_table(serving_check.load(), cat), "serving"))
    return out


def compare(a: dict, b: dict, rtol: float = 1e-9) -> tuple[int, float, list]:
    """(numbers compared, largest relative difference, lines describing each difference)."""
    diffs, worst, n = [], 0.0, 0
    for k in sorted(a.keys() | b.keys()):
        if k not in b:
            diffs.append(f"gone: {k} = {a[k]!r}")
            continue
        if k not in a:
            diffs.append(f"new: {k} = {b[k]!r}")
            continue
        x, y = a[k], b[k]
        if isinstance(x, float) and isinstance(y, float):
            n += 1
            rel = abs(x - y) / max(abs(x), abs(y), 1e-300) if x != y else 0.0
            worst = max(worst, rel)
            if rel > rtol:
                diffs.append(f"differs by {rel:.3g}: {k}: {x!r} -> {y!r}")
        elif x != y:
            diffs.append(f"differs: {k}: {x!r} -> {y!r}")
    return n, worst, diffs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="write every number to this JSON file")
    p.add_argument("--points-only", action="store_true",
                   help="the covering points only, not the whole grid (a quick check)")
    p.add_argument("--jobs", type=int, default=2, help="processes for the reviews")
    p.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    p.add_argument("--rtol", type=float, default=1e-9)
    a = p.parse_args(argv)
    if a.compare:
        before, after = (json.loads(Path(f).read_text()) for f in a.compare)
        n, worst, diffs = compare(before, after, a.rtol)
        print(f"{len(before)} keys before, {len(after)} after; {n} numbers compared; "
              f"largest relative difference {worst:.3g}; {len(diffs)} differences")
        for line in diffs[:200]:
            print("  " + line)
        return 1 if diffs else 0
    if not a.out:
        p.error("give --out FILE or --compare BEFORE AFTER")
    out = reviews(a.points_only, a.jobs)
    n_reviews = len({k.split("/", 2)[1] for k in out})
    out.update(tables())
    Path(a.out).write_text(json.dumps(out, sort_keys=True, indent=0))
    print(f"{len(out)} values from {n_reviews} reviewed scenarios and the validation tables "
          f"-> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
