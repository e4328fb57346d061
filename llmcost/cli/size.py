"""``llmcost size``: GPUs and days for a target date, by the review chain for a catalog
model, else by the stand-alone sizing."""

from __future__ import annotations

import argparse

from .. import _validate as v
from .. import catalog
from ..planning import sizing
from ..training import step as step_mod
from .common import _add_model_args, _add_precision_arg, _hardware, _model_from_args, _options


def _size_scenario(a, m, gpu, out):
    """The review Scenario of a `size` call (sizing by days), or None when a flag has no
    Scenario field (an architecture given by flags, a fixed goodput, step-model overrides,
    a power per GPU): those keep the stand-alone sizing with its own assumptions."""
    from ..scenario import Scenario
    legacy = (not a.model or getattr(a, "model_config", None) or a.goodput != 1.0
              or a.no_flash_attention or a.tp_comm_overlap
              or a.dp_overlap != step_mod.Options.dp_overlap or a.power_kw_per_gpu is not None)
    if legacy:
        return None
    tokens = sizing.chinchilla_optimal_tokens(m.params) if a.tokens is None else a.tokens
    # without --fabric the review's own "auto" (the same Scenario as `review`'s, one cached
    # answer; a named offer's fabric, else the GPU's usual)
    kw = dict(model=a.model, tokens=float(v.positive("tokens", tokens)), gpu=gpu.id,
              fabric=out.id if a.fabric else "auto", precision=a.precision, sizing="days",
              target_days=float(v.positive("target_days", a.days)),
              headroom=a.headroom, max_power_mw=a.max_power_mw or 0.0, pue=a.pue)
    if a.seq_len is not None:
        kw["seq_len"] = a.seq_len
    if a.global_batch_tokens is not None:
        kw.update(batch="custom", global_batch_tokens=a.global_batch_tokens)
    if a.usd_per_gpu_hour is not None:
        kw.update(price_source="custom", on_demand_usd_per_gpu_hour=a.usd_per_gpu_hour)
    elif a.price:
        kw["price_offer"] = a.price
    return Scenario(**kw)


def _size_by_review(a, m, gpu, out, s) -> dict:
    """`size` through the review chain: the days, GPUs and dollars `llmcost review` gives for
    the same Scenario (its sizing stage, goodput, batch rule and catalog offer)."""
    from ..review import evaluate
    r = evaluate(s)
    j = r.to_json()
    S = r.size.sizing
    met = bool(r.size.meets_target)
    costs = dict(j["costs_usd"]) if met else {}
    res = {"model": m.id, "gpu": gpu.id, "fabric": j["fabric"], "precision": a.precision,
           "tokens": s.tokens, "total_flops": S.total_flops, "target_days": a.days,
           "gpus": j["gpus"] if met else None,
           "nodes": j["gpus"] // gpu.gpus_per_node if met else None,
           "days": j["days"] if met else None, "meets_target": met,
           # the forecast is sized to the target; the floor (the cluster's best case) beside
           "gpus_floor": r.size.floor_gpus, "days_band": j["days_band"] if met else None,
           "days_floor": j["days_floor"] if met else None,
           "gpu_hours": j["gpu_hours"] if met else None,
           "gpu_hours_band": j["gpu_hours_band"] if met else None,
           "gpu_hours_floor": j["gpu_hours_floor"] if met else None,
           "realized_ratio": j["realized_ratio"],
           "mfu": j["mfu"] if met else None, "memory_floor_gpus": S.memory_floor_gpus,
           "layout": S.layout, "global_batch": S.global_batch,
           "global_batch_tokens": j["global_batch_tokens"],
           "cost_usd": costs.get("on_demand"), "cost_usd_by_option": costs,
           "usd_per_gpu_hour": j["prices_usd_per_gpu_hour"], "price_offer": j["price_offer"],
           "goodput": j["goodput"], "review_query": s.to_query(),
           "notes": list(S.notes) + [w for w in j["warnings"] if w not in S.notes]}
    return _with_sizing_extras(res, S)


def _with_sizing_extras(res: dict, S) -> dict:
    """The sizing's optional figures (nearest options, pipeline bubble, power cap) on ``res``."""
    if S.nearest is not None:
        res["nearest"] = dict(vars(S.nearest))
    if S.batch is not None:
        res["pipeline_bubble_share"] = S.batch.bubble_share
    if S.max_gpus_power is not None:
        res["max_gpus_power"] = S.max_gpus_power
    return res


def cmd_size(a) -> dict:
    """GPUs and days for a target date. A catalog model is sized by the review chain
    (`llmcost review` with sizing=days on the same keys: one answer); other inputs by the
    stand-alone sizing."""
    m = _model_from_args(a)
    hardware = _hardware(a)
    gpu, out = hardware.gpu, hardware.scale_out
    s = _size_scenario(a, m, gpu, out)
    if s is not None:
        return _size_by_review(a, m, gpu, out, s)
    prices = _gpu_prices(gpu, a.usd_per_gpu_hour, a.price)
    batch = 4_194_304 if a.global_batch_tokens is None else a.global_batch_tokens
    S = sizing.size_cluster(m, hardware,
                            sizing.Target(a.days, a.tokens, batch, headroom=a.headroom,
                                          goodput=a.goodput),
                            sizing.Facility(max_power_mw=a.max_power_mw,
                                            power_kw_per_gpu=a.power_kw_per_gpu, pue=a.pue),
                            sizing.Search(sizing.SIZING_SPACE, precision=a.precision), _options(a),
                            usd_per_gpu_hour=prices)
    res = {"model": m.id, "gpu": gpu.id, "fabric": out.id, "precision": a.precision,
           "tokens": S.tokens,
           "total_flops": S.total_flops, "target_days": a.days, "gpus": S.gpus,
           "nodes": S.nodes, "days": S.days, "meets_target": S.meets_target, "mfu": S.mfu,
           "memory_floor_gpus": S.memory_floor_gpus, "layout": S.layout,
           "global_batch": S.global_batch,
           "cost_usd": S.cost_usd.get("on_demand"), "cost_usd_by_option": S.cost_usd,
           "usd_per_gpu_hour": prices, "notes": list(S.notes)}
    _with_sizing_extras(res, S)
    if not prices:
        res["notes"].append(f"no price for {gpu.id} in the catalog: give --usd-per-gpu-hour")
    if "spot" in S.cost_usd:
        res["notes"].append("spot cost is at list price with no preemptions: `llmcost spot` "
                            "gives the net savings after them")
    return res


def _gpu_prices(gpu, usd_per_gpu_hour=None, price_id=None) -> dict:
    if usd_per_gpu_hour is not None:
        return {"on_demand": float(v.positive("usd_per_gpu_hour", usd_per_gpu_hour))}
    row = catalog.default().price_offer(gpu.id, price_id)
    return {} if row is None else catalog.usd_per_gpu_hour(row)


def _args_size(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost size``."""
    _add_model_args(sp)
    sp.add_argument("--tokens", type=float, help="training tokens (default: 20 per parameter)")
    sp.add_argument("--days", type=float, required=True, help="target days")
    sp.add_argument("--gpu", default="h100-sxm")
    sp.add_argument("--fabric", help="scale-out fabric (default: the GPU's usual, as the "
                                     "review's fabric=auto)")
    sp.add_argument("--global-batch-tokens", type=float,
                    help="global batch in tokens (default: the review's batch rule)")
    sp.add_argument("--headroom", type=float, default=0.10)
    sp.add_argument("--goodput", type=float, default=1.0,
                    help="a fixed goodput (default: the review's, from failures and checkpoints)")
    sp.add_argument("--usd-per-gpu-hour", type=float)
    sp.add_argument("--price", help="prices.csv id (default: the first for the GPU)")
    sp.add_argument("--no-flash-attention", action="store_true")
    sp.add_argument("--dp-overlap", type=float, default=step_mod.Options.dp_overlap)
    sp.add_argument("--tp-comm-overlap", action="store_true")
    _add_precision_arg(sp)
    sp.add_argument("--max-power-mw", type=float, help="facility power envelope (MW)")
    sp.add_argument("--power-kw-per-gpu", type=float,
                    help="system power per GPU (default: the catalog's system power / GPUs)")
    sp.add_argument("--pue", type=float, default=sizing.DEFAULT_PUE,
                    help="power usage effectiveness (default 1.58, Uptime Institute 2023)")
