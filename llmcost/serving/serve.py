"""The serving answer of one model on one GPU: a layout's figures, the planner's best layout
under TTFT/TPOT limits, and $ per million tokens at each pricing option of the review."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v
from .. import catalog as catalog_mod
from ..economics import tco
from . import cost, engines
from .predict import ServePrediction, predict

if TYPE_CHECKING:
    from ..training.arch import ModelSpec
    from ..training.hardware import FabricSpec, GPUSpec

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
    share = pick(cost.prefill_time_share(r.prefill_s, r.latency_s, r.concurrency))
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


def _adp(model: ModelSpec, engine: str, attention_dp: bool | None) -> bool:
    """Whether attention runs data-parallel: as given, else the engine's default."""
    return (engines.engine(engine).attention_dp_moe and model.is_moe) if attention_dp is None \
        else bool(attention_dp)


def serve(model: ModelSpec, gpu: GPUSpec, scale_up: FabricSpec, *, isl: int, osl: int, engine: str = "vllm",
          tp: int = 1, ep: int = 1, weights: str = "bf16", expert_weights: str | None = None,
          kv: str | None = None, concurrency: int | None = None, prices: dict | None = None,
          attention_dp: bool | None = None, requests: int | None = None, settings: dict | None = None,
          request_rate: float | None = None) -> dict:
    """One layout's figures as the CLI's JSON (``concurrency`` None: the engine's maximum;
    ``requests`` and ``request_rate``: a benchmark's load, simulated step by step).
    ``settings``: the engine's scheduler keys (:data:`llmcost.serving.engines.KEYS`) over
    its defaults for this GPU and TP."""
    eng = engines.resolve(engine, gpu, tp, _adp(model, engine, attention_dp), **(settings or {}))
    r = predict(model, gpu, scale_up, eng, isl=isl, osl=osl, tp=tp, ep=ep, weights=weights,
                expert_weights=expert_weights, kv=kv, concurrency=concurrency,
                attention_dp=attention_dp, requests=requests, request_rate=request_rate)
    prices = option_prices(gpu) if prices is None else prices
    out = _result(r, 0, isl, osl, prices, tp, ep)
    out["engine"] = eng.id
    out["notes"] = []
    if request_rate is not None and request_rate > out["saturation_requests_per_s"]:
        out["notes"].append(
            f"{request_rate:g} requests/s arrive and the instance sustains at most "
            f"{out['saturation_requests_per_s']:.3g} (its {out['max_concurrency']:,} running "
            "sequences at once): the queue grows without bound, the longer the run the longer "
            "the wait")
    if not out["fits"]:
        cap = eng.max_batch * (out["tp"] if r.attention_dp else 1)
        key = engines.ENGINE_KEYS[eng.id]["max_num_seqs"]
        out["notes"].append(
            f"{eng.id} runs at most {cap} sequences at once ({key} {eng.max_batch}; "
            f"max_num_seqs= sets it): {out['concurrency']} asked" if eng.max_batch and
            out["concurrency"] > cap and out["concurrency"] <= out["max_concurrency"] else
            f"does not fit: {out['max_concurrency']} sequences of {isl + osl} tokens fit beside "
            f"{out['weights_gb_per_gpu']:.1f} GB of weights per GPU, {out['concurrency']} asked")
    return out


def plan(model: ModelSpec, gpu: GPUSpec, scale_up: FabricSpec, *, isl: int, osl: int, engine: str = "vllm",
         weights: str = "bf16", expert_weights: str | None = None, kv: str | None = None,
         ttft_ms_max: float | None = None, tpot_ms_max: float | None = None,
         tps: Sequence[int] | None = None, concurrencies: ArrayLike | None = None,
         prices: dict | None = None, top: int = 5, attention_dp: bool | None = None,
         requests: int | None = None, settings: dict | None = None) -> dict:
    """The layouts (TP, EP) and concurrencies that maximise output tokens/s per GPU under
    TTFT and TPOT limits, every candidate evaluated at once (arrays of layouts x
    concurrencies). ``settings``: the engine's scheduler keys over its defaults (as
    :func:`serve`)."""
    engines.engine(engine)
    dom = gpu.scale_up_domain
    tps = [t for t in (tps or TPS) if t <= dom and model.heads % t == 0]
    if not tps:
        raise v.InputError("tp", f"no tensor-parallel size divides the {model.heads} heads "
                                 f"of {model.id} within the {dom}-GPU NVLink domain")
    lay = [(t, e) for t in tps for e in ((1, t) if model.is_moe and t > 1 else (1,))]
    tp = np.array([t for t, _ in lay])[:, None]
    ep = np.array([e for _, e in lay])[:, None]
    c = np.asarray(concurrencies if concurrencies is not None else CONCURRENCIES)[None, :]
    # the engine's settings per layout (SGLang's memory share follows the TP)
    eng = engines.resolve(engine, gpu, tp, _adp(model, engine, attention_dp),
                          **(settings or {}))
    if concurrencies is None:
        # each layout's own most (memory and the engine's cap): with no latency limit the
        # best point, which powers of two alone would miss (TP 4 at 245 in flight)
        most = predict(model, gpu, scale_up, eng, isl=isl, osl=osl, tp=tp, ep=ep,
                       weights=weights, expert_weights=expert_weights, kv=kv,
                       attention_dp=attention_dp, requests=requests).concurrency
        c = np.concatenate([np.broadcast_to(c, (len(lay), c.shape[1])),
                            np.broadcast_to(np.asarray(most, dtype=int).reshape(-1, 1),
                                            (len(lay), 1))], axis=1)
    r = predict(model, gpu, scale_up, eng, isl=isl, osl=osl, tp=tp, ep=ep, weights=weights,
                expert_weights=expert_weights, kv=kv, concurrency=c, attention_dp=attention_dp,
                requests=requests)
    ok = np.asarray(r.fits).copy()
    if ttft_ms_max is not None:
        ok &= r.ttft_s * 1e3 <= v.positive("ttft_ms_max", ttft_ms_max)
    if tpot_ms_max is not None:
        ok &= r.tpot_s * 1e3 <= v.positive("tpot_ms_max", tpot_ms_max)
    x = np.where(ok, r.output_tokens_per_s_per_gpu, -np.inf)
    order = np.argsort(-x, axis=None)
    feasible = int(ok.sum())
    prices = option_prices(gpu) if prices is None else prices
    best = [_result(r, int(i), isl, osl, prices, tp, ep) for i in order[:min(top, feasible)]]
    shape = x.shape
    tpb, epb = np.broadcast_to(tp, shape).ravel(), np.broadcast_to(ep, shape).ravel()
    cb = np.broadcast_to(r.concurrency, shape).ravel()
    tpot = np.broadcast_to(r.tpot_s, shape).ravel() * 1e3
    ttft = np.broadcast_to(r.ttft_s, shape).ravel() * 1e3
    xf = x.ravel()
    front = [{"tp": int(tpb[i]), "ep": int(epb[i]), "concurrency": int(cb[i]),
              "tpot_ms": float(tpot[i]), "ttft_ms": float(ttft[i]),
              "output_tokens_per_s_per_gpu": float(xf[i])}
             for i in pareto_front(tpot, xf)]
    return {"layouts": best, "evaluated": int(x.size), "feasible": feasible,
            "engine": eng.id, "pareto": front}
