"""Published serving measurements against the serving model, point by point.

``data/serving_measurements.csv`` holds latencies and throughputs as the engines' own docs,
recipes and blogs print them (SGLang cookbook, SGLang's vLLM comparison, the vLLM blog and
recipes, TensorRT-LLM's docs), each with its load shape: a fixed ``--max-concurrency``, a
Poisson request rate, or a burst of all prompts at once. For every point the catalog can
express and whose lengths are known, :func:`predict_point` predicts the mean TTFT, the mean
TPOT and the output tokens/s per GPU, and the table prints published, predicted and the error
``predicted / published - 1``; then the mean |error| per metric overall, per source, per
engine, per load shape and with or without speculative decoding.

    .venv/bin/python benchmarks/serving_check.py

:func:`errors_table` is the table a fit reuses; :func:`leave_one_source_out` predicts each
source's points with constants fitted on the other sources' points (the fit is the caller's).
"""

from __future__ import annotations

import inspect
import re
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llmcost import catalog  # noqa: E402
from llmcost.serving import engines  # noqa: E402
from llmcost.serving import predict as serving_predict  # noqa: E402

ROWS = ROOT / "data" / "serving_measurements.csv"
#: the three figures compared: published column = predicted key
METRICS = ("ttft_ms", "tpot_ms", "output_tokens_per_s_per_gpu")
#: the groups the summary averages over
GROUPS = ("source_key", "engine", "load_shape", "speculative")


def load(path=ROWS) -> pd.DataFrame:
    """The measurements, with ``source_key`` (the repository a point comes from)."""
    rows = pd.read_csv(path, dtype={"engine_version": str, "scheduler_settings": str})
    return rows.assign(source_key=rows["source"].map(source_key))


def source_key(source: str) -> str:
    """The repository of a source ("owner/name" after github.com/), else the source itself."""
    m = re.search(r"github\.com/([^/\s]+/[^/\s]+)", str(source))
    return m.group(1) if m else str(source)


def _blank(x) -> bool:
    return x is None or (isinstance(x, float) and np.isnan(x)) or str(x).strip() == ""


def expressible(rows: pd.DataFrame) -> pd.Series:
    """Points whose model and GPU the catalog has (``not_expressible_because`` empty)."""
    return rows["not_expressible_because"].isna() & rows["model"].notna() & rows["gpu"].notna()


def predictable(rows: pd.DataFrame) -> pd.Series:
    """Expressible points whose lengths are known (ShareGPT runs print none)."""
    return expressible(rows) & rows["isl"].notna() & rows["osl"].notna()


def lengths(row) -> tuple[int, int]:
    """ISL and OSL the model runs at: the real means where the source's totals give them,
    else the nominal lengths."""
    isl = row["isl_mean"] if not _blank(row.get("isl_mean")) else row["isl"]
    osl = row["osl_mean"] if not _blank(row.get("osl_mean")) else row["osl"]
    return max(int(round(float(isl))), 1), max(int(round(float(osl))), 1)


def _accepts(fn, name: str) -> bool:
    params = inspect.signature(fn).parameters
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def load_kwargs(row, predict_fn=None) -> dict:
    """The load-shape arguments of ``predict`` for a point.

    ``concurrency``: that concurrency, the benchmark's ``num_prompts`` as requests (its first
    wave queues). ``burst``: concurrency None (the engine's and memory's limit) and the
    prompts as requests. ``rate``: ``request_rate=`` and ``num_prompts=`` where ``predict``
    accepts them; today it has no arrival-rate input, so concurrency None (the limit)."""
    fn = predict_fn or serving_predict.predict
    n = None if _blank(row.get("num_prompts")) else int(row["num_prompts"])
    shape = row["load_shape"]
    if shape == "concurrency":
        return {"concurrency": int(row["concurrency"]), "requests": n}
    if shape == "burst":
        return {"concurrency": None, "requests": n}
    if shape == "rate":
        kw = {"concurrency": None}
        if _accepts(fn, "request_rate"):
            kw["request_rate"] = float(row["request_rate"])
            if _accepts(fn, "num_prompts"):
                kw["num_prompts"] = n
        return kw
    raise ValueError(f"{row['id']}: load_shape {shape!r} is not concurrency, rate or burst")


def has_arrival_rate(predict_fn=None) -> bool:
    """True once ``predict`` takes ``request_rate=``."""
    return _accepts(predict_fn or serving_predict.predict, "request_rate")


def predict_point(row, cat, overrides=None) -> dict:
    """Mean TTFT [ms], mean TPOT [ms] and output tokens/s per GPU of one published point,
    and whether the layout fits.

    ``row``: a row of data/serving_measurements.csv (mapping or pandas row). ``overrides``:
    engine constants to replace, ``{engine id: {constant: value}}`` (a fit's output)."""
    eng = engines.engine(row["engine"])
    if overrides and row["engine"] in overrides:
        eng = eng.with_(**overrides[row["engine"]])
    m, g = cat.model(row["model"]), cat.gpu(row["gpu"])
    isl, osl = lengths(row)
    adp = row.get("attention_dp")
    adp = None if _blank(adp) else str(adp).lower() == "true"
    ew = row.get("expert_weights")
    kv = row.get("kv")
    p = serving_predict.predict(
        m, g, cat.fabric(g.scale_up), eng, isl=isl, osl=osl, tp=int(row["tp"]),
        ep=1 if _blank(row.get("ep")) else int(row["ep"]), weights=row["weights"],
        expert_weights=None if _blank(ew) else ew, kv=None if _blank(kv) else kv,
        attention_dp=adp, **load_kwargs(row))
    return {"ttft_ms": float(np.asarray(p.ttft_s)) * 1e3,
            "tpot_ms": float(np.asarray(p.tpot_s)) * 1e3,
            "output_tokens_per_s_per_gpu": float(np.asarray(p.output_tokens_per_s_per_gpu)),
            "fits": bool(np.asarray(p.fits))}


def errors_table(rows: pd.DataFrame, cat, predict_fn=predict_point) -> pd.DataFrame:
    """One line per expressible point: published, predicted and ``predicted / published - 1``
    for each metric (NaN where the source prints no mean), ``fits``, and ``status``
    ("predicted" or why not)."""
    if "source_key" not in rows:
        rows = rows.assign(source_key=rows["source"].map(source_key))
    out = []
    ok = predictable(rows)
    for i, r in rows[expressible(rows)].iterrows():
        line = {"id": r["id"], "source_key": r["source_key"], "engine": r["engine"],
                "load_shape": r["load_shape"], "speculative": bool(r["speculative"]),
                "model": r["model"], "gpu": r["gpu"]}
        pred = None
        if not ok[i]:
            line["status"] = "no ISL/OSL printed"
        else:
            pred = predict_fn(r, cat)
            line["status"] = "predicted"
            line["fits"] = pred["fits"]
        for k in METRICS:
            pub = float(r[k]) if not _blank(r[k]) else np.nan
            got = pred[k] if pred else np.nan
            line[f"{k}_published"] = pub
            line[f"{k}_predicted"] = got
            line[f"{k}_error"] = got / pub - 1.0 if np.isfinite(pub) and pub > 0 else np.nan
        out.append(line)
    return pd.DataFrame(out)


def summary(table: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Mean |error| per metric and the count of points (and of points with each metric)
    overall (``by`` None) or per group."""
    t = table.assign(all="all") if by is None else table
    key = "all" if by is None else by
    rows = []
    for name, g in t.groupby(key, sort=True):
        line = {"group": name, "points": len(g), "predicted": int((g["status"] == "predicted").sum())}
        for k in METRICS:
            e = g[f"{k}_error"].dropna()
            line[f"{k}_n"] = len(e)
            line[f"{k}_mean_abs_error"] = float(e.abs().mean()) if len(e) else np.nan
        rows.append(line)
    return pd.DataFrame(rows)


def leave_one_source_out(rows: pd.DataFrame, cat, fit_fn, predict_fn=predict_point):
    """Each source's points predicted with constants fitted on the other sources' points.

    ``fit_fn(train_rows, cat) -> {engine id: {constant: value}}`` (overrides of the engine
    presets); ``predict_fn(row, cat, overrides=...)``. Returns :func:`errors_table` of every
    source's points with a ``held_out`` column naming the source left out of the fit."""
    if "source_key" not in rows:
        rows = rows.assign(source_key=rows["source"].map(source_key))
    parts = []
    for src in sorted(rows["source_key"].unique()):
        held = rows[rows["source_key"] == src]
        if not expressible(held).any():
            continue
        overrides = fit_fn(rows[rows["source_key"] != src], cat)
        t = errors_table(held, cat, partial(predict_fn, overrides=overrides))
        parts.append(t.assign(held_out=src))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _fmt(df: pd.DataFrame) -> str:
    return df.to_string(index=False, float_format=lambda x: f"{x:.3g}")


def report(rows: pd.DataFrame | None = None, cat=None) -> str:
    rows = load() if rows is None else rows
    cat = cat or catalog.default()
    table = errors_table(rows, cat)
    n_all, n_expr = len(rows), int(expressible(rows).sum())
    lines = [f"serving measurements: {n_all} points, {n_expr} expressible, "
             f"{int(predictable(rows).sum())} with known lengths (predicted)"]
    if not has_arrival_rate():
        lines.append("predict has no arrival-rate input yet: request-rate points run at the "
                     "engine's concurrency limit")
    cols = ["id", "source_key", "engine", "load_shape", "model", "gpu", "status", "fits"]
    for k in METRICS:
        cols += [f"{k}_published", f"{k}_predicted", f"{k}_error"]
    lines += ["", "Every expressible point (error = predicted / published - 1):",
              _fmt(table[[c for c in cols if c in table]])]
    lines += ["", "Mean |error| overall:", _fmt(summary(table))]
    for by in GROUPS:
        lines += ["", f"Mean |error| per {by}:", _fmt(summary(table, by))]
    skipped = rows[~expressible(rows)]
    lines += ["", f"Not expressible ({len(skipped)} points, shown, not predicted):"]
    lines += [f"  {r.id} {r.model_printed} on {r.gpu_printed}: {r.not_expressible_because}"
              for r in skipped.itertuples()]
    return "\n".join(lines)


def main(argv=None) -> int:
    pd.set_option("display.width", 250)
    print(report())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
