"""The ``llmcost serve`` query string: strict keys, typed and bounded values, one error
naming the key; then the serving answer (a layout, or the planner's best), with the engine
settings it used, what its constants are calibrated against and why its concurrency."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import numpy as np

from .. import _validate as v
from .. import catalog as catalog_mod
from ..training import hf_config
from . import cost, engines
from . import memory as mem
from .deployment import Deployment, Search, Workload
from .engines import ENGINES
from .serve import option_prices, plan, serve

if TYPE_CHECKING:
    from ..training.arch import ModelSpec

#: key -> (kind, bounds or choices)
KEYS: dict[str, tuple[str, Any]] = {
    "model": ("text", None), "gpu": ("text", None),
    "tp": ("int", (1, 4096)), "ep": ("int", (1, 4096)),
    "weights": ("choice", mem.WEIGHT_CHOICES), "expert_weights": ("choice", mem.WEIGHT_CHOICES),
    # auto: the engine's default (vLLM/SGLang kv_cache_dtype=auto), as the Serving app says
    "kv": ("choice", ("auto",) + tuple(mem.KV_FORMATS)),
    "isl": ("int", (1, 10_000_000)), "osl": ("int", (1, 10_000_000)),
    "concurrency": ("int", (1, 10_000_000)),
    "engine": ("choice", tuple(ENGINES)),
    "ttft_ms_max": ("float", (1e-3, 1e9)), "tpot_ms_max": ("float", (1e-3, 1e9)),
    "requests_per_s": ("float", (1e-9, 1e9)),
    "attention_dp": ("choice", ("0", "1")),
    "num_prompts": ("int", (1, 10**9)),
    # the Serving app's names of the layout (a Scenario's tp and ep are the training layout's);
    # 0: the planner chooses, as the app's controls read it
    "serve_tp": ("int", (0, 4096)), "serve_ep": ("int", (0, 4096)),
    # the engine's scheduler, by vLLM's names for every engine (engines.ENGINE_KEYS)
    "max_num_seqs": ("int", (1, 10_000_000)), "max_num_batched_tokens": ("int", (1, 10**8)),
    "gpu_memory_utilization": ("share", (0.0, 1.0)),
}
#: the Serving app's name of a layout key -> serve's
SERVING_ALIASES = {"serve_tp": "tp", "serve_ep": "ep"}
DEFAULTS = {"gpu": "h100-sxm", "weights": "bf16", "isl": 1024, "osl": 1024,
            "engine": "vllm", "ep": 1}


def parse(query: str) -> dict:
    """Typed values of the query's keys; InputError naming an unknown key or a bad value."""
    out: dict[str, Any] = {}
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
            elif kind == "share":
                out[key] = float(v.in_range(key, x, *spec, low_inclusive=False))
            else:
                out[key] = float(v.in_range(key, x, *spec))
    return out


def serving_layout(given: dict) -> tuple[dict, list]:
    """``given`` with serve_tp/serve_ep read as tp/ep (0: the planner chooses), and a note for
    each tp/ep they override (a Serving app link carries the training layout's too)."""
    q, notes = dict(given), []
    for alias, key in SERVING_ALIASES.items():
        if alias not in q:
            continue
        x = q.pop(alias)
        if key in q:
            notes.append(f"{key}={q.pop(key)} ignored: {alias}={x} is the serving "
                         f"{key.upper()}{' (0: the planner chooses)' if not x else ''}; "
                         f"{key} is the training layout's in an app link")
        if x:
            q[key] = x
    return q, notes


def concurrency_reason(out: dict, q: dict, eng_settings: dict, limits: dict) -> str:
    """Why the answer runs ``out['concurrency']`` requests at once, in a sentence."""
    c = out["concurrency"]
    if "concurrency" in q:
        return f"concurrency={c} as given"
    seqs = eng_settings["max_num_seqs"]
    cap = (seqs["value"] or 0) * (out["tp"] if out.get("attention_dp") else 1)
    held = out["max_concurrency"]
    if cap and held >= cap:
        most = (f"the engine's cap: {out['engine']} runs at most {cap:,} sequences at once "
                f"({seqs['engine_key']} {seqs['value']:,}"
                + (" per attention-DP rank" if out.get("attention_dp") else "")
                + "; max_num_seqs= sets it)")
    else:
        mem_ = eng_settings["gpu_memory_utilization"]
        most = (f"the most the KV cache holds: {held:,} sequences of {out['isl'] + out['osl']:,} "
                f"tokens beside {out['weights_gb_per_gpu']:.1f} GB of weights per GPU "
                f"({mem_['engine_key']} {mem_['value']:g}; gpu_memory_utilization= sets it)")
    if "pareto" not in out:       # a given layout, no concurrency: the engine's maximum
        return f"no concurrency given: {most}"
    under = (" under " + " and ".join(f"{k} {x:g} ms" for k, x in limits.items())
             if limits else " with no latency limit")
    head = (f"the planner's best: of {out['evaluated']:,} layouts x concurrencies (powers of "
            f"two and each layout's most), the most output tokens/s per GPU{under}")
    if c >= min(held, cap) if cap else c >= held:
        return f"{head}; at TP {out['tp']} that is {most}"
    if limits:
        return (f"{head}; at TP {out['tp']}, {c:,} in flight: more would break "
                + " or ".join(limits))
    return f"{head}; at TP {out['tp']}, {c:,} in flight: tokens/s per GPU peaks there"


def answer(query: str, model_config: str | None = None, cat: catalog_mod.Catalog | None = None,
           model: ModelSpec | None = None) -> dict:
    """The serve answer of a query (and a config.json model), as the CLI prints it; the
    Serving app passes its config model as ``model`` (a Model, with ``model=config``)."""
    cat = cat or catalog_mod.default()
    given, layout_notes = serving_layout(parse(query))
    q = {**DEFAULTS, **given}
    notes: list[str] = []
    if model is not None:
        m = model
    elif model_config:
        if q.get("model") not in (None, "config"):
            raise v.InputError("model_config", f"give --model-config or model={q['model']}, "
                                               "not both")
        m, notes = hf_config.model_from_config(hf_config.read_config_file(model_config))
        # the training sequence length (seq_len) is review's: serve sizes the KV cache for
        # isl + osl
        notes = [n for n in notes if not n.startswith("seq_len")]
    elif "model" not in q:
        raise v.InputError("model", "a model is required: model=<catalog id> in --query, or "
                                    "--model-config FILE")
    else:
        m = cat.model(q["model"])
    gpu = cat.gpu(q["gpu"])
    up = cat.fabric(gpu.scale_up)
    settings = {k: q[k] for k in engines.KEYS if k in q}
    kv = None if q.get("kv") in (None, "auto") else q["kv"]
    attention_dp = None if "attention_dp" not in q else q["attention_dp"] == "1"
    if q.get("expert_weights") and not m.is_moe:
        raise v.InputError("expert_weights", f"expert_weights applies to MoE models; {m.id} "
                                             "is dense")
    base = Deployment(m, gpu, up, weights=q["weights"], expert_weights=q.get("expert_weights"),
                      kv=kv, attention_dp=attention_dp, engine=q["engine"], settings=settings)
    workload = Workload(isl=q["isl"], osl=q["osl"], requests=q.get("num_prompts"))
    limits = {k: q[k] for k in ("ttft_ms_max", "tpot_ms_max") if k in q}
    if "tp" in q and not limits:
        out = serve(replace(base, tp=q["tp"], ep=q["ep"]),
                    replace(workload, concurrency=q.get("concurrency")))
    else:
        if "tp" not in q and "ep" in given:
            raise v.InputError("ep", "ep needs tp: give the layout (tp=..&ep=..) or neither")
        conc = np.atleast_1d(q["concurrency"]) if "concurrency" in q else None
        tps = [q["tp"]] if "tp" in q else None
        p = plan(base, replace(workload, concurrency=conc), Search(tps=tps, **limits))
        if not p["layouts"]:
            out = {"fits": False, "evaluated": p["evaluated"], "feasible": 0, "candidates": [],
                   "engine": p["engine"],
                   "notes": ["no layout and concurrency "
                             + (f"meets {' and '.join(f'{k}={x:g}' for k, x in limits.items())}"
                                " and " if limits else "")
                             + "fits in memory" + (f" at tp={q['tp']}" if "tp" in q else "")]}
        else:
            out = dict(p["layouts"][0])
            out.update(engine=p["engine"], evaluated=p["evaluated"], feasible=p["feasible"],
                       candidates=[{k: c[k] for k in ("tp", "ep", "concurrency", "ttft_ms",
                                                      "tpot_ms", "output_tokens_per_s_per_gpu")}
                                   for c in p["layouts"]],
                       pareto=p["pareto"], notes=[])
    if "requests_per_s" in q and out.get("output_tokens_per_s_per_gpu") is not None:
        # a traffic level: whole instances at this layout's throughput, and their cost a day
        gpus = float(cost.gpus_for_rate(q["requests_per_s"], q["osl"],
                                        out["output_tokens_per_s_per_gpu"], out["tp"]))
        out["requests_per_s"] = q["requests_per_s"]
        out["gpus_needed"] = int(gpus)
        out["usd_per_day"] = {k: float(x) * gpus * 24 for k, x in
                              option_prices(gpu, cat).items()}
        # the same traffic as an arrival rate: each instance's share, Poisson, simulated
        per = q["requests_per_s"] / max(gpus / out["tp"], 1.0)
        at = serve(replace(base, tp=out["tp"], ep=out["ep"]),
                   replace(workload, request_rate=per))
        out["arrivals"] = {k: at[k] for k in (
            "load_shape", "ttft_ms", "ttft_ms_p50", "ttft_ms_p99", "tpot_ms", "queue_ms",
            "running_batch", "achieved_requests_per_s", "saturation_requests_per_s")}
        out["arrivals"]["requests_per_s_per_instance"] = per
        out["notes"] = out["notes"] + at["notes"]
    elif "requests_per_s" in q:
        out["notes"] = out["notes"] + [f"requests_per_s={q['requests_per_s']:g} not sized: the "
                                       "load does not fit"]
    out["gpu"] = gpu.id
    out["isl"], out["osl"] = q["isl"], q["osl"]
    adp = out.get("attention_dp")
    out["engine_settings"] = engines.settings(
        q["engine"], gpu, out.get("tp", q.get("tp", 1)),
        bool(adp) if adp is not None else bool(attention_dp), **settings)
    out["calibration"] = engines.calibration(q["engine"])
    uncalibrated = engines.gpu_calibration_note(gpu.id)
    if uncalibrated:
        notes = [*notes, uncalibrated]
    if "concurrency" in out:
        out["concurrency_reason"] = concurrency_reason(out, q, out["engine_settings"], limits)
    else:
        out["concurrency_reason"] = out["notes"][0]
    out["notes"] = layout_notes + notes + out["notes"]
    return out
