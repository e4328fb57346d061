"""The forecast against published whole runs, leave one run out; and data/realized_runs.csv.

``data/realized_runs.csv`` holds, per published run of data/whole_runs.csv (its source and
as_of are the run's), the review's floor
(the step model with goodput, for the run entered as published: model, GPU, GPU count, tokens,
precision, sequence, batch, stack, fabric; no layout) and the ratio of the published GPU-hours
to it. The review's forecast multiplies a scenario's floor by the median ratio of comparable
runs (llmcost/economics/realized.py); :func:`leave_one_run_out` judges that on every run used,
each forecast from the others' ratios only, beside the napkin.

    .venv/bin/python benchmarks/validate.py --whole-runs          # prints both
    .venv/bin/python benchmarks/validate.py --whole-runs --write-ratios   # rewrites the csv
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from llmcost.economics import realized

ROOT = Path(__file__).resolve().parents[1]
REALIZED_RUNS = ROOT / "data" / "realized_runs.csv"

COLUMNS = ["id", "stack", "moe", "params", "gpu", "gpus", "tokens", "published_gpu_hours",
           "floor_gpu_hours", "ratio", "fitted", "not_fitted_because", "source", "as_of"]


def fit_exclusion(row) -> str:
    """Why a whole run is not used in fits ('' when it is): the row's own
    ``not_fitted_because``, else its hours' status when they are not reported or derived
    (``validate.whole_run_counted``: one rule for the summary and the fits)."""
    import validate
    if validate.whole_run_counted(row):
        return ""
    return validate.not_fitted_because(row) or f"{row['hours_status']} hours"


def realized_table(res: pd.DataFrame, rows: pd.DataFrame, as_of: str | None = None
                   ) -> pd.DataFrame:
    """data/realized_runs.csv from the whole-runs results (``validate.whole_runs``) and the
    rows of data/whole_runs.csv they came from; runs the review refused are left out."""
    out = []
    for (_, row), (_, r) in zip(rows.iterrows(), res.iterrows()):
        if r["status"] != "ok" or not np.isfinite(r["floor_gpu_hours"]):
            continue
        why = fit_exclusion(row)
        out.append({"id": row["id"], "stack": row["stack"], "moe": bool(r["moe"]),
                    "params": int(r["params"]), "gpu": row["gpu"], "gpus": int(r["gpus"]),
                    "tokens": float(row["tokens"]),
                    "published_gpu_hours": float(row["published_gpu_hours"]),
                    "floor_gpu_hours": round(float(r["floor_gpu_hours"]), 1),
                    "ratio": round(float(row["published_gpu_hours"]) / float(r["floor_gpu_hours"]),
                                   4),
                    "fitted": "false" if why else "true", "not_fitted_because": why,
                    "source": row["source"],
                    "as_of": row["as_of"] if as_of is None else as_of})
    return pd.DataFrame(out, columns=COLUMNS)


def write_realized_table(res, rows, path=REALIZED_RUNS) -> pd.DataFrame:
    t = realized_table(res, rows)
    t.to_csv(path, index=False)
    return t


def leave_one_run_out(table: pd.DataFrame, res: pd.DataFrame, stack_named: bool = True
                      ) -> pd.DataFrame:
    """Each run's forecast from the other runs' ratios only (its own group, as the review
    picks it), beside its floor and the napkin.

    Runs not used in fits are forecast from all the used runs (they are never in a group).

    Returns
    -------
    DataFrame
        id, fitted, own_group (the run's own stack x dense/MoE x size), group (the label of
        the group its forecast used), runs (in that group), floor_gpu_hours,
        published_gpu_hours, forecast_gpu_hours, error, low, high (band [GPU-h]), in_band,
        width (high / low), napkin_error, floor_error.
    """
    nap = res.set_index("id")["napkin_gpu_hours"]
    out = []
    for _, t in table.iterrows():
        fitted = realized._truthy(t["fitted"])
        rr = realized.realized_ratio(table, stack=t["stack"] if stack_named else None,
                                     moe=realized._truthy(t["moe"]), params=float(t["params"]),
                                     exclude=[t["id"]] if fitted else [])
        floor, pub = float(t["floor_gpu_hours"]), float(t["published_gpu_hours"])
        fc, lo, hi = floor * rr.value, floor * rr.band[0], floor * rr.band[1]
        own = rz_group(t["stack"] if stack_named else None, realized._truthy(t["moe"]),
                       float(t["params"]))
        out.append({"id": t["id"], "fitted": fitted, "own_group": own,
                    "group": rr.group_label, "runs": rr.runs,
                    "floor_gpu_hours": floor, "published_gpu_hours": pub,
                    "forecast_gpu_hours": fc, "error": fc / pub - 1, "low": lo, "high": hi,
                    "in_band": bool(lo <= pub <= hi), "width": hi / lo if lo > 0 else np.inf,
                    "napkin_error": float(nap.get(t["id"], np.nan)) / pub - 1,
                    "floor_error": floor / pub - 1})
    return pd.DataFrame(out)


def rz_group(stack, moe: bool, params: float) -> str:
    """A run's own fixed group (stack x dense/MoE x size class), in words."""
    return realized.RealizedRatio(0.0, (0.0, 0.0), (stack, realized.kind_of(moe),
                                                    realized.size_class(params)),
                                  0, (), ()).group_label


def _pct(x) -> str:
    return "" if x is None or pd.isna(x) else f"{100 * x:+.1f}%"


def format_loo(loo: pd.DataFrame) -> str:
    lines = [f"{'run':20s} {'published':>10s} {'floor':>9s} {'forecast':>9s} {'error':>8s} "
             f"{'band':>17s} {'in':>3s} {'napkin':>8s}  group (runs)"]
    for _, r in loo.iterrows():
        mark = "" if r["fitted"] else " *"
        band = f"{r['low'] / 1e6:.3f}-{r['high'] / 1e6:.3f}M"
        lines.append(f"{r['id'] + mark:20s} {r['published_gpu_hours'] / 1e6:>9.3f}M "
                     f"{r['floor_gpu_hours'] / 1e6:>8.3f}M {r['forecast_gpu_hours'] / 1e6:>8.3f}M "
                     f"{_pct(r['error']):>8s} {band:>17s} {'yes' if r['in_band'] else 'no':>3s} "
                     f"{_pct(r['napkin_error']):>8s}  {r['group']} ({r['runs']})")
    return "\n".join(lines)


def loo_summary(loo: pd.DataFrame) -> dict:
    """Overall and per-group figures over the runs used in fits; groups are the runs' own
    (stack x dense/MoE x size), whichever group their leave-one-out forecast fell back to."""
    use = loo[loo["fitted"]]
    e, n = use["error"].abs(), use["napkin_error"].abs()
    groups = {}
    for g, part in use.groupby("own_group"):
        groups[g] = {"runs": int(len(part)), "forecast": float(part["error"].abs().mean()),
                     "napkin": float(part["napkin_error"].abs().mean()),
                     "in_band": float(part["in_band"].mean())}
    return {"runs": int(len(use)), "forecast_mean_abs_error": float(e.mean()),
            "forecast_max_abs_error": float(e.max()), "napkin_mean_abs_error": float(n.mean()),
            "floor_mean_abs_error": float(use["floor_error"].abs().mean()),
            "coverage": float(use["in_band"].mean()),
            "median_width": float(use["width"].median()), "groups": groups}


def format_summary(s: dict, title: str) -> str:
    lines = [f"{title}: {s['runs']} runs used in fits, each forecast from the others' ratios: "
             f"forecast mean |error| {100 * s['forecast_mean_abs_error']:.1f}% (max "
             f"{100 * s['forecast_max_abs_error']:.1f}%), napkin "
             f"{100 * s['napkin_mean_abs_error']:.1f}%, floor "
             f"{100 * s['floor_mean_abs_error']:.1f}%; published figure inside the band "
             f"{100 * s['coverage']:.0f}%, median band width (high / low) "
             f"{s['median_width']:.2f}"]
    for g, x in sorted(s["groups"].items()):
        lines.append(f"  {g:32s} {x['runs']:>3d} runs: forecast {100 * x['forecast']:.1f}%, "
                     f"napkin {100 * x['napkin']:.1f}%, in band {100 * x['in_band']:.0f}%")
    return "\n".join(lines)


def report(res: pd.DataFrame, table: pd.DataFrame, out=None) -> dict:
    """Prints the leave-one-run-out table and summaries (stack as published, and not named);
    returns the summaries."""
    out = out or sys.stdout
    summaries = {}
    for named, title in ((True, "stack as published"), (False, "stack not named")):
        loo = leave_one_run_out(table, res, stack_named=named)
        if named:
            print("\nThe forecast (floor x the median realized ratio of comparable published "
                  "runs, data/realized_runs.csv), each run left out of its own group "
                  "(* = not used in fits: listed only)", file=out)
            print(format_loo(loo), file=out)
        summaries[named] = loo_summary(loo)
        print(format_summary(summaries[named], title), file=out)
    return summaries
