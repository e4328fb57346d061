"""Fitting an engine's efficiency constants to measured serving rows (data/serving_runs.csv
rows: engine, model, gpu, tp, ep, weights, kv, isl, osl, and a measured throughput, TTFT or
TPOT). Used by the tests and benchmarks; the package never reads the rows at run time."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from .. import catalog as catalog_mod
from .deployment import Deployment, Workload
from .engines import Engine
from .predict import predict

#: the constants a fit moves, with their bounds
FIT_PARAMS = {"memory_efficiency": (0.3, 1.0), "prefill_efficiency": (0.1, 1.0),
              "decode_compute_efficiency": (0.1, 1.0), "step_overhead_s": (0.0, 0.05),
              "sequence_overhead_s": (0.0, 1e-4), "moe_efficiency": (0.1, 1.0),
              "collective_latency_us": (0.0, 200.0), "fp4_efficiency": (0.3, 1.0)}


def predict_rows(rows: pd.DataFrame, eng: Engine, cat: catalog_mod.Catalog | None = None) -> pd.DataFrame:
    """Predicted output tokens/s per GPU, TTFT [ms] and TPOT [ms] of each row (at the row's
    concurrency, or the engine's maximum when it is blank)."""
    cat = cat or catalog_mod.default()
    out = []
    for r in rows.itertuples():
        m, g = cat.model(r.model), cat.gpu(r.gpu)
        c = None if pd.isna(r.concurrency) or r.concurrency == "" else int(r.concurrency)
        p = predict(Deployment(m, g, cat.fabric(g.scale_up), tp=int(r.tp), ep=int(r.ep),
                               weights=r.weights, kv=r.kv, engine=eng.id),
                    Workload(isl=int(r.isl), osl=int(r.osl), concurrency=c), eng)
        out.append({"id": r.id, "output_tokens_per_s_per_gpu": float(p.output_tokens_per_s_per_gpu),
                    "ttft_ms": float(p.ttft_s) * 1e3, "tpot_ms": float(p.tpot_s) * 1e3,
                    "latency_ms": float(p.latency_s) * 1e3,
                    "concurrency": float(p.concurrency)})
    return pd.DataFrame(out)


def log_errors(rows: pd.DataFrame, eng: Engine, cat: catalog_mod.Catalog | None = None) -> np.ndarray:
    """log(predicted / measured) of every measured figure of the rows [-]."""
    pred = predict_rows(rows, eng, cat)
    errs = []
    for col in ("output_tokens_per_s_per_gpu", "ttft_ms", "tpot_ms", "latency_ms"):
        meas = pd.to_numeric(rows[col], errors="coerce").to_numpy()
        ok = np.isfinite(meas)
        errs.append(np.log(pred[col].to_numpy()[ok] / meas[ok]))
    return np.concatenate(errs)


def fit(rows: pd.DataFrame, eng: Engine, params: Sequence[str] = tuple(FIT_PARAMS),
        cat: catalog_mod.Catalog | None = None) -> tuple[Engine, float]:
    """Least squares on log(predicted / measured) over ``params`` (scipy.optimize).

    Returns (fitted Engine, mean absolute relative error ``|pred / meas - 1|`` at the fit)."""
    from scipy.optimize import least_squares
    lo = [FIT_PARAMS[p][0] for p in params]
    hi = [FIT_PARAMS[p][1] for p in params]
    x0 = np.clip([getattr(eng, p) for p in params], lo, hi)

    def res(x: np.ndarray) -> np.ndarray:
        return log_errors(rows, eng.with_(**dict(zip(params, x))), cat)

    sol = least_squares(res, x0, bounds=(lo, hi), x_scale="jac", diff_step=1e-3)
    best = eng.with_(**{p: float(x) for p, x in zip(params, sol.x)})
    return best, float(np.mean(np.abs(np.exp(res(sol.x)) - 1.0)))
