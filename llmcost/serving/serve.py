"""The serving answer of one model on one GPU: a layout's figures, the planner's best layout
under TTFT/TPOT limits, and $ per million tokens at each pricing option of the review."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v
from .. import catalog as catalog_mod
from ..economics import tco
from . import cost, engines
from .deployment import Deployment, Search, Workload
from .engines import Engine
from .predict import ServePrediction, most_running, predict

if TYPE_CHECKING:
    from ..training.hardware import GPUSpec

#: concurrencies the planner tries [requests per instance]
CONCURRENCIES = 2 ** np.arange(0, 13)
#: serving instances the planner tries [GPUs], within one scale-up domain
TPS = (1, 2, 4, 8, 16, 32, 64, 72)


def pareto_front(latency: ArrayLike, throughput: ArrayLike) -> np.ndarray:
    """Indices of the points no other point beats on both axes (lower latency, higher
    throughput), by rising latency: the front InferenceX draws of throughput per GPU against
    interactivity. Ties on latency keep the higher throughput."""
    lat_ = np.asarray(latency, dtype=float).ravel()
    x = np.asarray(throughput, dtype=float).ravel()
    order = np.lexsort((-x, lat_))
    best = np.maximum.accumulate(x[order])
    keep = np.r_[True, best[1:] > best[:-1]] & np.isfinite(x[order])
    return order[keep]


def option_prices(gpu: GPUSpec, cat: catalog_mod.Catalog | None = None, utilization: float = 1.0) -> dict:
    """USD per used GPU-hour by pricing option: per option the offer the review's rule picks
    (:func:`llmcost.economics.offers.choose_offers`; cloud, per GPU-hour), reservations and
    the purchase amortized over the on-premises life at ``utilization``
    (:func:`llmcost.economics.tco.cost_per_useful_gpu_hour`, the review's curves)."""
    cat = cat or catalog_mod.default()
    per = {k: catalog_mod.usd_per_gpu_hour(row)[k]
           for k, row in cat.choose_offers(gpu.id).items()}
    # the four price options only (mypy takes the dict for spot_overhead too)
    prices = tco.CloudPrices(**{k: per.get(k) for k in ("on_demand", "reserved_1y",  # type: ignore[arg-type]
                                                        "reserved_3y", "spot")})
    onprem = tco.OnPrem.for_gpu(gpu)
    out = tco.cost_per_useful_gpu_hour(12 * onprem.life_years, utilization, prices, onprem)
    return {k: float(x) for k, x in out.items()}


def _result(r: ServePrediction, i: int, isl: int, osl: int, prices: dict, tp: ArrayLike,
            ep: ArrayLike) -> dict:
    shape = np.shape(r.output_tokens_per_s_per_gpu)

    def pick(a: ArrayLike) -> float:
        return float(np.broadcast_to(a, shape).flat[i])

    x = pick(r.output_tokens_per_s_per_gpu)
    n_tp, n_ep = int(pick(tp)), int(pick(ep))
    # this layout's share only: a layout that does not fit has no latency (NaN), and the
    # share's argument check would refuse the whole grid for it
    share = float(cost.prefill_time_share(pick(r.prefill_s), pick(r.latency_s), pick(r.concurrency)))
    assert r.saturation_requests_per_s is not None     # predict always sets it
    out = {
        "tp": n_tp, "ep": n_ep,
        "concurrency": int(pick(r.concurrency)),
        "ttft_ms": pick(r.ttft_s) * 1e3, "tpot_ms": pick(r.tpot_s) * 1e3,
        "output_tokens_per_s_per_gpu": x,
        "kv_bytes_per_token": r.kv_bytes_per_token,
        "max_concurrency": int(pick(r.max_concurrency)),
        "weights_gb_per_gpu": pick(r.weights_bytes_per_gpu) / 1e9,
        "kv_gb_per_gpu": pick(r.kv_bytes_per_gpu) * pick(r.concurrency) / 1e9
        / (n_tp if r.attention_dp else 1),
        "activations_gb_per_gpu": pick(r.activation_bytes_per_gpu) / 1e9,
        "fits": bool(pick(r.fits)),
        "prefill_ms": pick(r.prefill_s) * 1e3, "decode_step_ms": pick(r.decode_step_s) * 1e3,
        "prefill_time_share": share,
        "weights": r.weight_format, "kv": r.kv_format, "attention_dp": r.attention_dp,
        "load_shape": r.load_shape,
        "saturation_requests_per_s": pick(r.saturation_requests_per_s),
        "usd_per_million_output_tokens": {k: float(cost.usd_per_million_tokens(p, x))
                                          for k, p in prices.items()},
        # GPU time split by phase: prefill's share priced on input tokens, decode's on output
        "usd_per_million_input_tokens_split": {
            k: float(cost.usd_per_million_tokens(p, x * osl / isl) * share) for k, p in
            prices.items()},
        "usd_per_million_output_tokens_split": {
            k: float(cost.usd_per_million_tokens(p, x) * (1 - share)) for k, p in
            prices.items()},
    }
    if r.load_shape != "steady":
        # a simulated load sets them all
        assert r.ttft_p50_s is not None and r.ttft_p99_s is not None and r.queue_s is not None
        assert r.running_batch is not None and r.achieved_requests_per_s is not None
        out.update(ttft_ms_p50=pick(r.ttft_p50_s) * 1e3, ttft_ms_p99=pick(r.ttft_p99_s) * 1e3,
                   queue_ms=pick(r.queue_s) * 1e3, running_batch=pick(r.running_batch),
                   achieved_requests_per_s=pick(r.achieved_requests_per_s))
    return out


def _notes(out: dict, eng: Engine, r: ServePrediction, workload: Workload) -> list[str]:
    """Why an answer's load cannot be served as asked: a rate beyond saturation, a
    concurrency over the engine's cap or beyond the memory."""
    notes = []
    rate = workload.request_rate
    if rate is not None and rate > out["saturation_requests_per_s"]:
        notes.append(
            f"{float(rate):g} requests/s arrive and the instance sustains at most "
            f"{out['saturation_requests_per_s']:.3g} (its {out['max_concurrency']:,} running "
            "sequences at once): the queue grows without bound, the longer the run the longer "
            "the wait")
    if not out["fits"]:
        cap = eng.max_batch * (out["tp"] if r.attention_dp else 1)
        key = engines.ENGINE_KEYS[eng.id]["max_num_seqs"]
        notes.append(
            f"{eng.id} runs at most {cap} sequences at once ({key} {eng.max_batch}; "
            f"max_num_seqs= sets it): {out['concurrency']} asked" if eng.max_batch and
            out["concurrency"] > cap and out["concurrency"] <= out["max_concurrency"] else
            f"does not fit: {out['weights_gb_per_gpu']:.1f} GB of weights per GPU leave no room "
            f"for one sequence of {workload.isl + workload.osl} tokens (a higher TP or smaller "
            "weights spread them)" if out["max_concurrency"] == 0 else
            f"does not fit: {out['max_concurrency']} sequences of "
            f"{workload.isl + workload.osl} tokens fit beside "
            f"{out['weights_gb_per_gpu']:.1f} GB of weights per GPU, {out['concurrency']} asked")
    return notes


#: the figures of running the load: none of them exists for a load that does not fit (the
#: memory or the engine's cap), so :func:`serve` gives them as None beside the memory that
#: says why
RUN_FIGURES = ("ttft_ms", "tpot_ms", "output_tokens_per_s_per_gpu", "prefill_ms", "decode_step_ms",
               "prefill_time_share", "saturation_requests_per_s", "usd_per_million_output_tokens",
               "usd_per_million_input_tokens_split", "usd_per_million_output_tokens_split",
               "ttft_ms_p50", "ttft_ms_p99", "queue_ms", "running_batch", "achieved_requests_per_s")


def serve(deployment: Deployment, workload: Workload, prices: dict | None = None) -> dict:
    """One layout's figures as the CLI's JSON.

    Parameters
    ----------
    deployment : Deployment
        Model, GPU, one layout (scalar tp and ep), formats, engine and its scheduler
        settings over its defaults for this GPU and TP.
    workload : Workload
        Lengths and load (``concurrency`` None: the engine's maximum; ``requests`` and
        ``request_rate``: a benchmark's load, simulated step by step).
    prices : dict or None
        USD per used GPU-hour by pricing option; None: :func:`option_prices`.

    Returns
    -------
    dict
        The figures (times [ms], memory [GB], throughput [tokens/s per GPU], $ per million
        tokens [USD]), the engine and notes. A load that does not fit (``fits`` False) keeps
        its memory figures and has None for those of :data:`RUN_FIGURES`; the notes say why.

    References
    ----------
    .. [1] :func:`llmcost.serving.predict.predict`; :func:`option_prices`.
    """
    eng = deployment.resolved_engine()
    r = predict(deployment, workload, eng)
    prices = option_prices(deployment.gpu) if prices is None else prices
    out = _result(r, 0, workload.isl, workload.osl, prices, deployment.tp, deployment.ep)
    out["engine"] = eng.id
    out["notes"] = _notes(out, eng, r, workload)
    if not out["fits"]:
        out.update((k, None) for k in RUN_FIGURES if k in out)
    return out


def _layouts(deployment: Deployment, search: Search) -> tuple[np.ndarray, np.ndarray]:
    """The layouts the planner tries: (tp, ep) columns, every TP of the search within the
    GPU's scale-up domain that divides the heads, with ep 1, and ep = tp on MoE models."""
    model, dom = deployment.model, deployment.gpu.scale_up_domain
    tps = [t for t in (search.tps or TPS) if t <= dom and model.heads % t == 0]
    if not tps:
        raise v.InputError("tp", f"no tensor-parallel size divides the {model.heads} heads "
                                 f"of {model.id} within the {dom}-GPU NVLink domain")
    lay = [(t, e) for t in tps for e in ((1, t) if model.is_moe and t > 1 else (1,))]
    return np.array([t for t, _ in lay])[:, None], np.array([e for _, e in lay])[:, None]


def _candidates(deployment: Deployment, workload: Workload) -> np.ndarray:
    """Concurrencies per layout: the workload's, else powers of two and each layout's own
    most (memory and the engine's cap): with no latency limit the best point, which powers
    of two alone would miss (TP 4 at 245 in flight)."""
    given = workload.concurrency
    c = np.atleast_1d(given if given is not None else CONCURRENCIES)[None, :]
    if given is None:
        n = np.shape(deployment.tp)[0]
        most = most_running(deployment, workload)
        c = np.concatenate([np.broadcast_to(c, (n, c.shape[1])),
                            np.broadcast_to(np.asarray(most, dtype=int).reshape(-1, 1),
                                            (n, 1))], axis=1)
    return c


def _front(r: ServePrediction, x: np.ndarray, tp: np.ndarray, ep: np.ndarray) -> list[dict]:
    """The candidates on the Pareto front of TPOT against output tokens/s per GPU."""
    shape = x.shape
    tpb, epb = np.broadcast_to(tp, shape).ravel(), np.broadcast_to(ep, shape).ravel()
    cb = np.broadcast_to(r.concurrency, shape).ravel()
    tpot = np.broadcast_to(r.tpot_s, shape).ravel() * 1e3
    ttft = np.broadcast_to(r.ttft_s, shape).ravel() * 1e3
    xf = x.ravel()
    return [{"tp": int(tpb[i]), "ep": int(epb[i]), "concurrency": int(cb[i]),
             "tpot_ms": float(tpot[i]), "ttft_ms": float(ttft[i]),
             "output_tokens_per_s_per_gpu": float(xf[i])}
            for i in pareto_front(tpot, xf)]


def plan(deployment: Deployment, workload: Workload, search: Search | None = None,
         prices: dict | None = None) -> dict:
    """The layouts (TP, EP) and concurrencies that maximise output tokens/s per GPU under
    TTFT and TPOT limits, every candidate evaluated at once (arrays of layouts x
    concurrencies).

    Parameters
    ----------
    deployment : Deployment
        Model, GPU, formats, engine and its scheduler settings; the planner chooses the
        layout, so its tp and ep stay 1 (the search's ``tps`` lists the TPs to try).
    workload : Workload
        Lengths and load; ``concurrency``: the concurrencies to try (None: powers of two and
        each layout's most).
    search : Search or None
        The TPs to try, the TTFT and TPOT limits and how many layouts to list; None:
        ``Search()``.
    prices : dict or None
        USD per used GPU-hour by pricing option; None: :func:`option_prices`.

    Returns
    -------
    dict
        ``layouts`` (the best, as :func:`serve` answers one), ``evaluated`` and ``feasible``
        candidates [-], ``engine``, ``pareto`` (the front of TPOT [ms] against output
        tokens/s per GPU).

    References
    ----------
    .. [1] SemiAnalysis InferenceX (throughput per GPU against interactivity);
       :func:`llmcost.serving.predict.predict`.
    """
    search = Search() if search is None else search
    if np.any(np.asarray(deployment.tp) != 1) or np.any(np.asarray(deployment.ep) != 1):
        raise v.InputError("tp", "plan chooses the layout: give the tensor-parallel sizes "
                                 "to try as Search(tps=...), not the deployment's tp and ep")
    tp, ep = _layouts(deployment, search)
    # the engine's settings per layout (SGLang's memory share follows the TP)
    deployment = replace(deployment, tp=tp, ep=ep)
    c = _candidates(deployment, workload)
    r = predict(deployment, replace(workload, concurrency=c))
    ok = np.asarray(r.fits).copy()
    if search.ttft_ms_max is not None:
        ok &= r.ttft_s * 1e3 <= search.ttft_ms_max
    if search.tpot_ms_max is not None:
        ok &= r.tpot_s * 1e3 <= search.tpot_ms_max
    x = np.where(ok, r.output_tokens_per_s_per_gpu, -np.inf)
    order = np.argsort(-x, axis=None)
    feasible = int(ok.sum())
    prices = option_prices(deployment.gpu) if prices is None else prices
    best = [_result(r, int(i), workload.isl, workload.osl, prices, tp, ep)
            for i in order[:min(search.top, feasible)]]
    return {"layouts": best, "evaluated": int(x.size), "feasible": feasible,
            "engine": deployment.engine, "pareto": _front(r, x, tp, ep)}
