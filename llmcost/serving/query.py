"""The ``llmcost serve`` query string: strict keys, typed and bounded values, one error
naming the key; then the serving answer (a layout, or the planner's best)."""

from __future__ import annotations

from urllib.parse import parse_qsl

from .. import _validate as v
from .. import catalog as catalog_mod
from ..training import hf_config
from . import memory as mem
from .engines import ENGINES
from . import cost
from .serve import option_prices, plan, serve

#: key -> (kind, bounds or choices)
KEYS = {
    "model": ("text", None), "gpu": ("text", None),
    "tp": ("int", (1, 4096)), "ep": ("int", (1, 4096)),
    "weights": ("choice", mem.WEIGHT_CHOICES), "expert_weights": ("choice", mem.WEIGHT_CHOICES),
    "kv": ("choice", tuple(mem.KV_FORMATS)),
    "isl": ("int", (1, 10_000_000)), "osl": ("int", (1, 10_000_000)),
    "concurrency": ("int", (1, 10_000_000)),
    "engine": ("choice", tuple(ENGINES)),
    "ttft_ms_max": ("float", (1e-3, 1e9)), "tpot_ms_max": ("float", (1e-3, 1e9)),
    "requests_per_s": ("float", (1e-9, 1e9)),
    "attention_dp": ("choice", ("0", "1")),
    "num_prompts": ("int", (1, 10**9)),
}
DEFAULTS = {"gpu": "h100-sxm", "weights": "bf16", "isl": 1024, "osl": 1024,
            "engine": "vllm", "ep": 1}


def parse(query: str) -> dict:
    """Typed values of the query's keys; InputError naming an unknown key or a bad value."""
    out = {}
    for key, raw in parse_qsl(query or "", keep_blank_values=True, strict_parsing=False):
        if key not in KEYS:
            raise v.InputError(key, f"unknown serve key {key!r} (known: {', '.join(KEYS)})")
        if key in out:
            raise v.InputError(key, f"serve key {key!r} given twice")
        kind, spec = KEYS[key]
        if kind == "text":
            if not raw:
                raise v.InputError(key, f"{key} must not be empty")
            out[key] = raw
        elif kind == "choice":
            out[key] = v.choice(key, raw, spec)
        else:
            try:
                x = float(raw)
            except ValueError:
                raise v.InputError(key, f"{key} must be a number, got {raw[:40]!r}") from None
            if kind == "int":
                if not float(x).is_integer():
                    raise v.InputError(key, f"{key} must be a whole number, got {raw[:40]!r}")
                out[key] = int(v.integer(key, x, minimum=spec[0], maximum=spec[1]))
            else:
                out[key] = float(v.in_range(key, x, *spec))
    return out


def answer(query: str, model_config: str | None = None, cat=None, model=None) -> dict:
    """The serve answer of a query (and a config.json model), as the CLI prints it; the
    Serving app passes its config model as ``model`` (a Model, with ``model=config``)."""
    cat = cat or catalog_mod.default()
    q = {**DEFAULTS, **parse(query)}
    notes = []
    if model is not None:
        m = model
    elif model_config:
        if q.get("model") not in (None, "config"):
            raise v.InputError("model_config", f"give --model-config or model={q['model']}, "
                                               "not both")
        m, notes = hf_config.model_from_config(hf_config.read_config_file(model_config))
        notes = list(notes)
    elif "model" not in q:
        raise v.InputError("model", "a model is required: model=<catalog id> in --query, or "
                                    "--model-config FILE")
    else:
        m = cat.model(q["model"])
    gpu = cat.gpu(q["gpu"])
    up = cat.fabric(gpu.scale_up)
    common = dict(isl=q["isl"], osl=q["osl"], engine=q["engine"], weights=q["weights"],
                  expert_weights=q.get("expert_weights"), kv=q.get("kv"),
                  attention_dp=None if "attention_dp" not in q else q["attention_dp"] == "1",
                  requests=q.get("num_prompts"))
    if q.get("expert_weights") and not m.is_moe:
        raise v.InputError("expert_weights", f"expert_weights applies to MoE models; {m.id} "
                                             "is dense")
    limits = {k: q[k] for k in ("ttft_ms_max", "tpot_ms_max") if k in q}
    if "tp" in q and not limits:
        out = serve(m, gpu, up, tp=q["tp"], ep=q["ep"], concurrency=q.get("concurrency"),
                    **common)
    else:
        if "tp" not in q and "ep" in parse(query):
            raise v.InputError("ep", "ep needs tp: give the layout (tp=..&ep=..) or neither")
        conc = [q["concurrency"]] if "concurrency" in q else None
        tps = [q["tp"]] if "tp" in q else None
        p = plan(m, gpu, up, tps=tps, concurrencies=conc, **limits, **common)
        if not p["layouts"]:
            out = {"fits": False, "evaluated": p["evaluated"], "feasible": 0, "candidates": [],
                   "engine": p["engine"],
                   "notes": ["no layout and concurrency meets the limits and fits in memory"]}
        else:
            out = dict(p["layouts"][0])
            out.update(engine=p["engine"], evaluated=p["evaluated"], feasible=p["feasible"],
                       candidates=[{k: c[k] for k in ("tp", "ep", "concurrency", "ttft_ms",
                                                      "tpot_ms", "output_tokens_per_s_per_gpu")}
                                   for c in p["layouts"]],
                       pareto=p["pareto"], notes=[])
    if "requests_per_s" in q and "output_tokens_per_s_per_gpu" in out:
        # a traffic level: whole instances at this layout's throughput, and their cost a day
        gpus = float(cost.gpus_for_rate(q["requests_per_s"], q["osl"],
                                        out["output_tokens_per_s_per_gpu"], out["tp"]))
        out["requests_per_s"] = q["requests_per_s"]
        out["gpus_needed"] = int(gpus)
        out["usd_per_day"] = {k: float(x) * gpus * 24 for k, x in
                              option_prices(gpu, cat).items()}
        # the same traffic as an arrival rate: each instance's share, Poisson, simulated
        per = q["requests_per_s"] / max(gpus / out["tp"], 1.0)
        at = serve(m, gpu, up, tp=out["tp"], ep=out["ep"], request_rate=per,
                   requests=q.get("num_prompts"), **{k: x for k, x in common.items()
                                                     if k != "requests"})
        out["arrivals"] = {k: at[k] for k in (
            "load_shape", "ttft_ms", "ttft_ms_p50", "ttft_ms_p99", "tpot_ms", "queue_ms",
            "running_batch", "achieved_requests_per_s", "saturation_requests_per_s")}
        out["arrivals"]["requests_per_s_per_instance"] = per
        out["notes"] = out["notes"] + at["notes"]
    out["gpu"] = gpu.id
    out["isl"], out["osl"] = q["isl"], q["osl"]
    out["notes"] = notes + out["notes"]
    return out
