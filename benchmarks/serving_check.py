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

import re
import sys
from functools import lru_cache, partial
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llmcost import catalog  # noqa: E402
from llmcost.serving import engines, latency  # noqa: E402
from llmcost.serving import predict as serving_predict  # noqa: E402
from llmcost.serving.deployment import Deployment, Workload  # noqa: E402

ROWS = ROOT / "data" / "serving_measurements.csv"
#: the figures compared: published column = predicted key (the median TTFT where a source
#: prints it, as the vLLM blog does in place of the mean)
METRICS = ("ttft_ms", "ttft_ms_p50", "tpot_ms", "output_tokens_per_s_per_gpu")
#: the figures the fit matches (the shipped constants were fitted to these three)
FIT_METRICS = ("ttft_ms", "tpot_ms", "output_tokens_per_s_per_gpu")
#: the groups the summary averages over
GROUPS = ("source_key", "engine", "load_shape", "speculative")
#: a published mean TTFT under its floor (:func:`ttft_floor_ms`) at this quantile of the draw
#: of the prompt lengths cannot be the mean TTFT of the run the source states (other hardware,
#: prompts served from a prefix cache, another statistic): it is shown, and left out of the
#: TTFT errors and of the fit. The floor already grants 100% of peak and the shortest prompt
#: first; 1 in 1,000 draws of the first wave's lengths falls lower than this
FLOOR_QUANTILE = 0.001


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


def length_spread(row) -> tuple[float, float]:
    """How far a point's prompt and output lengths spread about their means: a random dataset
    draws them uniformly in [a, L] below the nominal L (``--random-range-ratio``), so where the
    source's totals give the mean m, a = 2 m - L and the spread is (L - m) / m; 0 where the
    lengths are the nominal ones."""
    out = []
    for nominal, mean in (("isl", "isl_mean"), ("osl", "osl_mean")):
        if _blank(row.get(mean)) or _blank(row.get(nominal)):
            out.append(0.0)
            continue
        L, m = float(row[nominal]), float(row[mean])
        out.append(float(np.clip((L - m) / m, 0.0, 0.99)))
    return tuple(out)


def load_kwargs(row) -> dict:
    """The load-shape arguments of ``predict`` for a point: ``concurrency``, that concurrency
    with the benchmark's prompts as ``requests`` (the first C at once); ``burst``, every
    prompt at once; ``rate``, Poisson arrivals at ``request_rate``; with the lengths' spread
    of the benchmark's random dataset (:func:`length_spread`)."""
    n = None if _blank(row.get("num_prompts")) else int(row["num_prompts"])
    shape = row["load_shape"]
    kw = {"requests": n, "length_spread": length_spread(row)}
    if shape == "concurrency":
        return {"concurrency": int(row["concurrency"]), **kw}
    if shape == "burst":
        return {"concurrency": None, **kw}
    if shape == "rate":
        return {"concurrency": None, "request_rate": float(row["request_rate"]), **kw}
    raise ValueError(f"{row['id']}: load_shape {shape!r} is not concurrency, rate or burst")


def first_wave(row) -> int:
    """Requests a point sends at once: every prompt of a burst, else the client's concurrency
    (at most the prompts)."""
    n = int(row["num_prompts"])
    return n if row["load_shape"] == "burst" else min(int(row["concurrency"]), n)


def ttft_floor_ms(row, cat) -> float:
    """The mean TTFT no engine can beat on a point's hardware [ms]
    (:func:`llmcost.serving.latency.mean_ttft_floor_s`: the first wave of prompts prefilled
    at 100% of the instance's dense peak at the weights' format, shortest first, 2 FLOPs per
    active matmul weight per prompt token); NaN for request-rate points (no first wave) and
    where the source prints no prompt length or prompt count."""
    if row["load_shape"] == "rate" or _blank(row.get("isl")) or _blank(row.get("num_prompts")):
        return float("nan")
    m, g = cat.model(row["model"]), cat.gpu(row["gpu"])
    vocab = m.embedding_params + (0 if m.tied_embeddings else m.output_params)
    flops = 2.0 * max(m.active_params - vocab, 1)
    peak = serving_predict.compute_peak_tflops(g, row["weights"]) * 1e12 * int(row["gpus"])
    return float(latency.mean_ttft_floor_s(flops, float(row["isl"]), first_wave(row),
                                           int(row["num_prompts"]), peak)) * 1e3


@lru_cache(maxsize=None)
def floor_draw_share(first_wave: int, quantile: float = FLOOR_QUANTILE, draws: int = 20_000
                     ) -> float:
    """The ``quantile`` of the shortest-first sum of completion times of ``first_wave``
    uniform prompt lengths, as a share of its mean (the floor's expectation): seeded Monte
    Carlo over the draw of the lengths. 0.68 for 64 prompts, 0.45 for 16."""
    rng = np.random.default_rng(0)
    s = np.sort(rng.uniform(0.0, 1.0, size=(draws, int(first_wave))), axis=1)
    sums = np.cumsum(s, axis=1).sum(axis=1)
    return float(np.quantile(sums, quantile) / sums.mean())


def below_floor(row, cat, floor_ms: float | None = None) -> bool:
    """The point's published mean TTFT is under :func:`ttft_floor_ms` (``floor_ms`` when the
    caller has it) at the FLOOR_QUANTILE of the prompt lengths' draw
    (:func:`floor_draw_share`)."""
    if _blank(row.get("ttft_ms")):
        return False
    floor = ttft_floor_ms(row, cat) if floor_ms is None else floor_ms
    if not np.isfinite(floor):
        return False
    return bool(float(row["ttft_ms"]) < floor_draw_share(first_wave(row)) * floor)


def predict_point(row, cat, overrides=None) -> dict:
    """Mean TTFT [ms], mean TPOT [ms] and output tokens/s per GPU of one published point,
    and whether the layout fits.

    ``row``: a row of data/serving_measurements.csv (mapping or pandas row). ``overrides``:
    engine constants to replace, ``{engine id: {constant: value}}`` (a fit's output)."""
    m, g = cat.model(row["model"]), cat.gpu(row["gpu"])
    isl, osl = lengths(row)
    adp = row.get("attention_dp")
    adp = None if _blank(adp) else str(adp).lower() == "true"
    # the engine's defaults for this GPU and TP, as `serve` resolves them
    e0 = engines.engine(row["engine"])
    eng = engines.resolve(row["engine"], g, int(row["tp"]),
                          (e0.attention_dp_moe and m.is_moe) if adp is None else adp)
    if overrides and row["engine"] in overrides:
        eng = eng.with_(**overrides[row["engine"]])
    ew = row.get("expert_weights")
    kv = row.get("kv")
    p = serving_predict.predict(
        Deployment(m, g, cat.fabric(g.scale_up), tp=int(row["tp"]),
                   ep=1 if _blank(row.get("ep")) else int(row["ep"]), weights=row["weights"],
                   expert_weights=None if _blank(ew) else ew, kv=None if _blank(kv) else kv,
                   attention_dp=adp, engine=row["engine"]),
        Workload(isl=isl, osl=osl, **load_kwargs(row)), eng)
    p50 = np.nan if p.ttft_p50_s is None else float(np.asarray(p.ttft_p50_s)) * 1e3
    return {"ttft_ms": float(np.asarray(p.ttft_s)) * 1e3, "ttft_ms_p50": p50,
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
        line["ttft_ms_floor"] = ttft_floor_ms(r, cat) if ok[i] else np.nan
        line["below_floor"] = below_floor(r, cat, line["ttft_ms_floor"]) if ok[i] else False
        for k in METRICS:
            pub = float(r[k]) if not _blank(r[k]) else np.nan
            got = pred[k] if pred else np.nan
            line[f"{k}_published"] = pub
            line[f"{k}_predicted"] = got
            judged = (np.isfinite(pub) and pub > 0
                      and not (k.startswith("ttft_ms") and line["below_floor"]))
            line[f"{k}_error"] = got / pub - 1.0 if judged else np.nan
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


#: the constants a fit on the measurements moves, per engine, with their bounds: the GEMM
#: shares of prefill and decode, the HBM share, the fixed time of a step and of a request
#: outside the steps (HTTP, tokenization, admission)
FIT_PARAMS = {"prefill_efficiency": (0.1, 0.95), "decode_compute_efficiency": (0.1, 0.95),
              "memory_efficiency": (0.3, 0.95), "step_overhead_s": (0.0, 0.05),
              "request_overhead_s": (0.0, 0.5)}


def _log_errors(rows, cat, eng_id, values, params):
    over = {eng_id: dict(zip(params, values))}
    out = []
    for _, r in rows.iterrows():
        got = predict_point(r, cat, overrides=over)
        low = below_floor(r, cat)
        for k in FIT_METRICS:
            if k == "ttft_ms" and low:
                continue
            if not _blank(r[k]) and float(r[k]) > 0 and np.isfinite(got[k]) and got[k] > 0:
                out.append(np.log(got[k] / float(r[k])))
    return np.asarray(out)


def fit_measurements(rows: pd.DataFrame, cat, params=tuple(FIT_PARAMS)) -> dict:
    """Engine constants fitted to published points: per engine with predictable points,
    least squares on log(predicted / published) of every metric the points print
    (scipy.optimize.least_squares). Returns ``{engine id: {constant: value}}``."""
    from scipy.optimize import least_squares
    use = rows[expressible(rows) & predictable(rows) & ~rows["speculative"].astype(bool)]
    out = {}
    for eng_id, g in use.groupby("engine"):
        base = engines.engine(eng_id)
        lo = [FIT_PARAMS[p][0] for p in params]
        hi = [FIT_PARAMS[p][1] for p in params]
        x0 = np.clip([getattr(base, p) for p in params], lo, hi)
        if len(_log_errors(g, cat, eng_id, x0, params)) < 3 * len(params):
            continue          # too few figures to identify the constants
        sol = least_squares(lambda x: _log_errors(g, cat, eng_id, x, params), x0,
                            bounds=(lo, hi), x_scale="jac", diff_step=1e-2)
        out[eng_id] = {p: float(x) for p, x in zip(params, sol.x)}
    return out


def _fmt(df: pd.DataFrame) -> str:
    return df.to_string(index=False, float_format=lambda x: f"{x:.3g}")


def report(rows: pd.DataFrame | None = None, cat=None) -> str:
    rows = load() if rows is None else rows
    cat = cat or catalog.default()
    table = errors_table(rows, cat)
    n_all, n_expr = len(rows), int(expressible(rows).sum())
    lines = [f"serving measurements: {n_all} points, {n_expr} expressible, "
             f"{int(predictable(rows).sum())} with known lengths (predicted)"]
    cols = ["id", "source_key", "engine", "load_shape", "model", "gpu", "status", "fits"]
    for k in METRICS:
        cols += [f"{k}_published", f"{k}_predicted", f"{k}_error"]
    lines += ["", "Every expressible point (error = predicted / published - 1):",
              _fmt(table[[c for c in cols if c in table]])]
    lines += ["", "Mean |error| overall:", _fmt(summary(table))]
    for by in GROUPS:
        lines += ["", f"Mean |error| per {by}:", _fmt(summary(table, by))]
    low = table[table["below_floor"].astype(bool)]
    lines += ["", f"Published mean TTFT under its floor ({len(low)} points: the first wave of "
              "prompts prefilled at 100% of the dense peak, shortest first, at the "
              f"{FLOOR_QUANTILE:.1%} quantile of the prompt lengths' draw; shown, left out of "
              "the TTFT errors and of the fit):"]
    lines += [f"  {r.id} {r.model} on {r.gpu}: published {r.ttft_ms_published:.0f} ms, floor "
              f"{r.ttft_ms_floor:.0f} ms in expectation" for r in low.itertuples()]
    skipped = rows[~expressible(rows)]
    lines += ["", f"Not expressible ({len(skipped)} points, shown, not predicted):"]
    lines += [f"  {r.id} {r.model_printed} on {r.gpu_printed}: {r.not_expressible_because}"
              for r in skipped.itertuples()]
    return "\n".join(lines)


def fit_report(rows: pd.DataFrame | None = None, cat=None) -> str:
    """The engine constants fitted on every source's points (:func:`fit_measurements`) and the
    errors in sample, per source; and each source held out where another source prints the
    same metric (:func:`leave_one_source_out`)."""
    rows = load() if rows is None else rows
    cat = cat or catalog.default()
    fitted = fit_measurements(rows, cat)
    table = errors_table(rows, cat, partial(predict_point, overrides=fitted))
    lines = ["", "Fitted on every source (in sample): " + ", ".join(
        f"{e}: " + ", ".join(f"{k} {x:.4g}" for k, x in c.items()) for e, c in fitted.items()),
        _fmt(summary(table)), _fmt(summary(table, "source_key"))]
    held = leave_one_source_out(rows, cat, fit_measurements)
    if len(held):
        lines += ["", "Each source held out of the fit:", _fmt(summary(held, "held_out"))]
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--fit", action="store_true",
                    help="also fit the engine constants on the points (minutes)")
    a = ap.parse_args(argv)
    pd.set_option("display.width", 250)
    print(report())
    if a.fit:
        print(fit_report())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
