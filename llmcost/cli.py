"""The ``llmcost`` command line.

Each subcommand computes a dict of results; ``--json`` prints exactly that dict as one JSON
object, otherwise a readable table. Bad input prints one line naming the parameter on stderr
and exits with status 2 (argparse's own errors included).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import replace
from typing import Callable

import numpy as np

from . import _validate as v
from . import catalog
from . import utilization as ut
from .checks.nccl_tests import OPS as CHECK_OPS
from .economics import reliability as rel
from .economics import spot as spot_mod
from .economics import tco
from .planning import planner, sizing
from .scenario import FIELDS as SCENARIO_FIELDS
from .scenario import MOE_LOAD_IMBALANCE_DEFAULT
from .serving import query as serve_query
from .training import flops as fl
from .training import hf_config, stacks
from .training import memory as mem
from .training import step as step_mod
from .training.arch import ModelSpec
from .training.layout import Layout
from .training.moe import A2A_OVERLAP
from .training.precision import PRECISIONS
from .training.recompute import RECOMPUTE_MODULES


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage, so every error is one line."""

    def error(self, message):  # noqa: D401 - argparse API
        raise v.InputError("arguments", message)


# ---------------------------------------------------------------------------- arguments

def _add_model_args(p: argparse.ArgumentParser, required_seq=False) -> None:
    g = p.add_argument_group("model (a catalog id, or an architecture)")
    g.add_argument("--model", help="catalog id, e.g. llama3-70b (see `llmcost list models`)")
    g.add_argument("--model-config", metavar="FILE",
                   help="a Hugging Face config.json (read as JSON, never run)")
    g.add_argument("--layers", type=int)
    g.add_argument("--hidden", type=int)
    g.add_argument("--heads", type=int)
    g.add_argument("--kv-heads", type=int, help="key/value heads (GQA); default: heads")
    g.add_argument("--ffn-hidden", type=int, help="FFN inner size; default 4 x hidden")
    g.add_argument("--gated-ffn", action="store_true", help="SwiGLU-style FFN (3 matrices)")
    g.add_argument("--vocab", type=int)
    g.add_argument("--seq-len", type=int, help="sequence length (overrides the model's)")


def _model_from_args(a) -> ModelSpec:
    arch = dict(layers=a.layers, hidden=a.hidden, heads=a.heads, vocab=a.vocab)
    if getattr(a, "model_config", None):
        if a.model:
            raise v.InputError("model_config", "give --model-config or --model, not both")
        # the architecture flags beside a config replace its fields (a what-if variant), each
        # with a note, or are refused naming the field they cannot stand for
        sizes = {**arch, "kv_heads": a.kv_heads, "ffn_hidden": a.ffn_hidden,
                 "gated_ffn": True if a.gated_ffn else None}
        m, notes = hf_config.model_from_config(hf_config.read_config_file(a.model_config),
                                               seq_len=a.seq_len, overrides=sizes)
        a.model_notes = notes
        return m
    if a.model:
        # the shape flags beside an id would be ignored: refused like the others
        given = [k for k, x in {**arch, "kv_heads": a.kv_heads,
                                "ffn_hidden": a.ffn_hidden}.items() if x is not None]
        given += ["gated_ffn"] if a.gated_ffn else []
        if given:
            raise v.InputError(given[0], f"give --model or an architecture, not both ({_flag(given[0])})")
        m = catalog.model(a.model)
        return m if a.seq_len is None else m.with_(seq_len=a.seq_len)
    missing = [k for k, x in {**arch, "seq_len": a.seq_len}.items() if x is None]
    if missing:
        raise v.InputError(missing[0], f"a model is required: --model, --model-config, or "
                                       f"--{missing[0].replace('_', '-')} with the rest of "
                                       "--layers --hidden --heads --vocab --seq-len")
    return ModelSpec(**arch, seq_len=a.seq_len, kv_heads=a.kv_heads, ffn_hidden=a.ffn_hidden,
                     gated_ffn=a.gated_ffn)


def _has_model(a) -> bool:
    return bool(a.model) or bool(getattr(a, "model_config", None)) or \
        any(getattr(a, k) is not None for k in ("layers", "hidden", "heads"))


def _with_model_notes(a, result: dict) -> dict:
    """The result with the notes of reading --model-config (its assumptions, the seq_len
    chosen, the flags that replaced its fields) first in its ``notes``."""
    notes = getattr(a, "model_notes", None)
    if notes and isinstance(result, dict):
        kept = result.get("notes")
        result["notes"] = list(notes) + (list(kept) if isinstance(kept, list) else [])
    return result


# ---------------------------------------------------------------------------- subcommands

def cmd_flops(a) -> dict:
    m = _model_from_args(a)
    params = m.params
    # an MoE token meets only its active weights: 6N and PaLM on N_active (Kaplan's N)
    active = m.active_params
    chin = float(fl.chinchilla_optimal_tokens(active))
    tokens = a.tokens if a.tokens is not None else chin
    v.positive("tokens", tokens)
    by_method = {
        "architecture": m.flops_per_token("none"),
        "6n": float(fl.flops_per_token_6n(active)),
        "palm": float(fl.flops_per_token_palm(active, m.layers, m.heads, m.qk_head_dim,
                                              m.seq_len)),
    }
    fpt = by_method[a.method]
    chin_note = ("chinchilla (20 per active parameter; Hoffmann et al. fitted dense models)"
                 if m.is_moe else "chinchilla (20 per parameter)")
    return {
        "model": m.id, "params": params, "active_params": active,
        "mtp_params": m.mtp_params, "experts": m.moe_experts, "experts_per_token": m.moe_top_k,
        "method": a.method, "seq_len": m.seq_len,
        "tokens": tokens, "tokens_source": "given" if a.tokens is not None else chin_note,
        "flops_per_token": fpt, "total_flops": fpt * tokens,
        "flops_per_token_by_method": by_method,
        "hardware_flops_per_token": {r: m.flops_per_token(r) for r in fl.RECOMPUTE_MODES},
        "chinchilla_tokens": chin,
    }


def cmd_mfu(a) -> dict:
    if a.flops_per_token is None:
        if not _has_model(a):
            raise v.InputError("flops_per_token", "give --flops-per-token or a model")
        m = _model_from_args(a)
        fpt = m.flops_per_token("none")
        seq = m.seq_len
    else:
        fpt = a.flops_per_token
        if a.seq_len is None:
            raise v.InputError("seq_len", "--seq-len is required")
        seq = a.seq_len
    gpu = None
    if a.peak_tflops is not None:
        peak = a.peak_tflops
        basis = "given"
        if a.gpu:
            gpu = catalog.gpu(a.gpu)
    elif a.gpu:
        gpu = catalog.gpu(a.gpu)
        # one MFU convention for every precision: the dense BF16 peak (an FP8 run's figure
        # against its FP8 peak is half of it on H100, and that peak equals the BF16 sparse one)
        peak = gpu.bf16_dense_tflops
        basis = "bf16 dense"
    else:
        raise v.InputError("peak_tflops", "give --peak-tflops or --gpu")
    u = ut.effective_utilization(fpt, a.global_batch, seq, a.steps, peak, a.gpus, a.wall_clock_s)
    tokens_per_s = a.global_batch * seq * a.steps / a.wall_clock_s
    verdict = ut.assess_utilization(float(u), a.published, peak, gpu, precision=a.precision)
    res = {
        "effective_utilization": float(u),
        "tokens_per_s": tokens_per_s,
        "achieved_tflops_per_gpu": float(ut.achieved_tflops_per_gpu(tokens_per_s, fpt, a.gpus)),
        "peak_tflops": peak, "peak_basis": basis, "precision": a.precision,
        "flops_per_token": fpt,
        "findings": verdict.to_dict()["findings"],
    }
    if a.published is not None:
        res["published"] = float(a.published)
        res["ratio_to_published"] = float(u) / float(a.published)
    return res


def cmd_memory(a) -> dict:
    gpu = catalog.gpu(a.gpu) if a.gpu else None
    if a.params is not None:
        if getattr(a, "model_config", None):
            # model states from a bare count, or the whole memory of an architecture: the
            # config's sizes give the count (and the activations), so --params would replace
            # every one of them at once
            m = _model_from_args(a)
            raise v.InputError("params", f"--params cannot be combined with --model-config: "
                                         f"the config's hidden_size, num_hidden_layers, "
                                         f"intermediate_size and vocab_size give "
                                         f"{m.params:,} parameters; give one or the other")
        if _has_model(a):
            raise v.InputError("params", "give --params or a model, not both")
        gpus = v.integer("gpus", a.gpus)
        tp, pp = v.integer("tp", a.tp), v.integer("pp", a.pp)
        v.multiple_of("gpus", gpus, "tp x pp", tp * pp)
        dp = gpus // (tp * pp)
        w, g, o = mem.model_state_bytes(v.positive("params", a.params) / (tp * pp), dp,
                                        a.zero, a.optimizer)
        states = mem.MemoryBreakdown(weights_bytes=w, grads_bytes=g, optimizer_bytes=o,
                                     activations_bytes=0.0, overhead_bytes=0.0,
                                     total_bytes=w + g + o, peak_stage=0)
        out = {k: float(x) for k, x in states.to_gb().items()}
        out["note"] = "model states only: activations need an architecture (--model)"
        params_b = a.params / 1e9
    else:
        m = _model_from_args(a)
        _refuse_moe_flags(a, m)
        br = mem.memory_per_gpu(
            m, gpus=a.gpus, tp=a.tp, pp=a.pp, cp=a.cp, zero_stage=a.zero,
            micro_batch=a.micro_batch, global_batch=a.global_batch, recompute=a.recompute,
            sequence_parallel=a.sequence_parallel, flash_attention=not a.no_flash_attention,
            optimizer=a.optimizer, interleave=a.interleave,
            finetune=a.finetune, lora_rank=a.lora_rank,
            first_stage_layers=a.first_stage_layers, last_stage_layers=a.last_stage_layers,
            ep=a.ep, etp=a.etp, recompute_modules=a.recompute_modules, stack=a.stack,
            **_recipe_memory_kwargs(a))
        out = {k: float(x) for k, x in br.to_gb().items()}
        rank, depth = int(br.peak_stage), int(a.pp)
        out["peak_stage"] = "first" if rank == 0 else "last" if rank == depth - 1 else "middle"
        out["peak_stage_rank"] = rank
        out["peak_stage_layers"] = int(br.peak_stage_layers)
        f, mid, last = mem.pipeline_stage_layers(m.layers, depth, a.first_stage_layers,
                                                 a.last_stage_layers, a.interleave)
        out["stage_layers"] = planner.stage_layers_summary(depth, f, mid, last)
        out["model"] = m.id
        out["params"] = m.params
        out["active_params"] = m.active_params
        # the stack named, and how it holds memory: deepspeed and nanotron hold it as
        # Megatron-Core does, so their figures are megatron's
        out["stack"] = a.stack
        out["memory_model"] = stacks.stack(a.stack).memory
        if m.is_moe:
            out["expert_params"] = m.expert_params
        params_b = m.params / 1e9
        if a.recompute == "selective" and not a.no_flash_attention:
            out["notes"] = ["selective recompute stores what none does here: flash attention "
                            "already recomputes the attention scores in its backward (Dao et "
                            "al. 2022 §3.1), the activations selective recompute drops "
                            "(Korthikanti et al. 2022 Table 2, the 5as/h term); it differs "
                            "with --no-flash-attention"]
    out["seed_heuristic_gb"] = float(mem.seed_heuristic_memory_gb(params_b, a.gpus, a.tp, a.pp))
    if gpu is not None:
        cap = gpu.memory_bytes / mem.GB
        out["gpu"] = gpu.id
        out["capacity_gb"] = cap
        out["fits"] = bool(out["total_gb"] <= cap)
    return out


def _hardware(a):
    cat = catalog.default()
    gpu = cat.gpu(a.gpu)
    up = cat.fabric(gpu.scale_up)
    out = cat.fabric(gpu.scale_out_id(a.fabric or "auto"))
    if out.kind != "scale_out":
        raise v.InputError("fabric", f"fabric {out.id!r} is a scale-up link; pick one of "
                                     + ", ".join(cat.fabrics().query("kind == 'scale_out'")["id"]))
    return gpu, up, out


def _options(a) -> step_mod.Options:
    return step_mod.Options(
        stack=getattr(a, "stack", "megatron"),
        flash_attention=not a.no_flash_attention,
        dp_overlap=float(v.in_range("dp_overlap", a.dp_overlap, 0, 1)),
        tp_comm_overlap=a.tp_comm_overlap,
        moe_load_imbalance=float(v.in_range("moe_load_imbalance", getattr(
            a, "moe_load_imbalance", MOE_LOAD_IMBALANCE_DEFAULT), 1, 16)),
        moe_a2a_overlap=_a2a_overlap(a))


def _a2a_overlap(a) -> float:
    """The all-to-all share hidden: the flag's own figure, else the named recipe's."""
    share = getattr(a, "moe_a2a_overlap", None)
    if share is None:
        return A2A_OVERLAP[getattr(a, "moe_overlap", MOE_OVERLAP_DEFAULT)]
    return float(v.in_range("moe_a2a_overlap", share, 0, 1))


#: the CLI's MoE overlap default: the Scenario's (one claim, llmcost.scenario)
MOE_OVERLAP_DEFAULT = SCENARIO_FIELDS["moe_overlap"].default


def _add_recipe_args(sp) -> None:
    """The memory recipe of a 2025 run (llmcost.training.memory, llmcost.training.recompute)."""
    sp.add_argument("--recompute-modules", default="",
                    help="modules recomputed by name, comma-separated (Megatron-Core's "
                         "--recompute-modules: " + ", ".join(RECOMPUTE_MODULES) + ")")
    sp.add_argument("--optimizer-moments", choices=mem.OPTIMIZER_MOMENTS, default="fp32",
                    help="AdamW moments in fp32 (default) or bf16 (DeepSeek-V3)")
    sp.add_argument("--moe-probs-at", choices=("combine", "activation"), default="activation",
                    help="MoE: router probabilities applied in the expert activation (Megatron-"
                         "Core since 2025, the default) or at the combine (keeps expert outputs)")
    sp.add_argument("--loss", choices=tuple(mem.LOSS_BYTES), default=None,
                    help="the loss's implementation: fused (4 bytes per logit: Megatron's "
                         "vocab-parallel cross-entropy, flash-attn's) or fp32 (12: PyTorch "
                         "cross_entropy on FP32 logits, torchtitan); default the stack's")


def _recipe_memory_kwargs(a) -> dict:
    kw = {"optimizer_moments": a.optimizer_moments, "moe_probs_at": a.moe_probs_at}
    if getattr(a, "loss", None):
        kw["loss"] = a.loss
    return kw


def _fit_reason(total_gb, cap_gb, parts) -> str:
    big = max(parts, key=parts.get)
    return (f"needs {total_gb:.1f} GB per GPU, {cap_gb:.1f} GB available; largest part: "
            f"{big.replace('_gb', '')} {parts[big]:.1f} GB")


def cmd_predict(a) -> dict:
    m = _model_from_args(a)
    _refuse_moe_flags(a, m)
    gpu, up, out = _hardware(a)
    lay = Layout(gpus=a.gpus, tp=a.tp, pp=a.pp, interleave=a.interleave, cp=a.cp, ep=a.ep,
                 etp=a.etp, micro_batch=a.micro_batch, global_batch=a.global_batch,
                 zero_stage=a.zero, recompute=a.recompute, sequence_parallel=a.sequence_parallel,
                 flash_attention=not a.no_flash_attention, tp_comm_overlap=a.tp_comm_overlap,
                 first_stage_layers=a.first_stage_layers, last_stage_layers=a.last_stage_layers,
                 precision=a.precision, recompute_modules=a.recompute_modules,
                 optimizer_moments=a.optimizer_moments)
    p = step_mod.predict_step(m, gpu, up, out, options=_options(a),
                              memory_kwargs=_recipe_memory_kwargs(a), **lay.step_kwargs())
    split = [int(x) for x in (p.first_stage_layers, p.middle_stage_layers, p.last_stage_layers)]
    parts = {k: float(x) for k, x in p.memory.to_gb().items() if k != "total_gb"}
    cap = gpu.memory_bytes / mem.GB
    res = {
        "model": m.id, "params": m.params, "active_params": m.active_params,
        "gpu": gpu.id, "fabric": out.id, "precision": a.precision,
        "layout": {**replace(lay, first_stage_layers=split[0], middle_stage_layers=split[1],
                             last_stage_layers=split[2]).to_dict(),
                   "stage_layers": planner.stage_layers_summary(a.pp, *split)},
        "stack": getattr(a, "stack", "megatron"),
        "slowest_stage": int(p.slowest_stage),
        "step_time_s": float(p.step_time_s),
        "model_tflops_per_gpu": float(p.model_tflops_per_gpu),
        "hardware_tflops_per_gpu": float(p.hardware_tflops_per_gpu),
        "mfu": float(p.mfu), "hfu": float(p.hfu), "tokens_per_s": float(p.tokens_per_s),
        "memory_gb_per_gpu": float(p.memory_bytes) / mem.GB, "capacity_gb": cap,
        "fits": bool(p.fits),
        "fit_reason": "fits" if bool(p.fits) else _fit_reason(float(p.memory_bytes) / mem.GB, cap, parts),
        "memory_breakdown_gb": parts,
        "scaling_efficiency": float(p.scaling_efficiency),
        "breakdown_s": {k: float(getattr(p, k)) for k in p.BREAKDOWN},
    }
    return res


#: most layouts `plan` prints: each is ~1 kB of JSON, and the library gives them all
PLAN_MAX_TOP = 100


def cmd_plan(a) -> dict:
    top_n = int(v.integer("top", a.top, 1, PLAN_MAX_TOP))
    m = _model_from_args(a)
    _refuse_moe_flags(a, m)
    gpu, up, out = _hardware(a)
    space = planner.Space(max_tp=a.max_tp, first_stage_layers=a.first_stage_layers,
                          last_stage_layers=a.last_stage_layers,
                          ep=tuple(a.ep) if a.ep else (), etp=tuple(a.etp) if a.etp else (1,))
    t0 = time.perf_counter()
    P = planner.plan(m, gpu, up, out, a.gpus, a.global_batch, space, _options(a),
                     usd_per_gpu_hour=a.usd_per_gpu_hour, heuristic=a.heuristic,
                     rank_by="cost" if a.rank_by == "cost" else "time",
                     precision=a.precision)
    elapsed = time.perf_counter() - t0
    top = P.top(top_n) if P.feasible else P.layouts.head(top_n)
    rows = []
    for _, r in top.iterrows():
        rows.append({
            "layout": {**{k: (x.item() if hasattr(x, "item") else x)
                          for k, x in r[list(planner.LAYOUT_COLUMNS)].items()},
                       "stage_layers": planner.stage_layers_summary(
                           r["pp"], r["first_stage_layers"], r["middle_stage_layers"],
                           r["last_stage_layers"])},
            "description": planner.describe_layout(r),
            "step_time_s": float(r["step_time_s"]), "model_tflops_per_gpu": float(r["model_tflops_per_gpu"]),
            "hardware_tflops_per_gpu": float(r["hardware_tflops_per_gpu"]),
            "mfu": float(r["mfu"]), "hfu": float(r["hfu"]), "tokens_per_s": float(r["tokens_per_s"]),
            "memory_gb_per_gpu": float(r["memory_gb"]), "fits": bool(r["fits"]),
            **({"usd_per_million_tokens": float(r["usd_per_million_tokens"])} if a.usd_per_gpu_hour else {}),
            "breakdown_s": {k: float(r[k]) for k in step_mod.STEP_TERMS},
        })
    why = []
    fitting = P.layouts[P.layouts["fits"]]
    if len(fitting) > 1:
        best = fitting.iloc[0]
        others, ties = planner.runners_up(P.layouts)
        if ties:
            why.append(f"{ties} other layout(s) tie with the best (each GPU does the same work, "
                       "e.g. CP x micro-batch swaps); the simplest is shown")
        why += [planner.why_slower(best, r) for _, r in others.iterrows()]
    res = {"model": m.id, "gpu": gpu.id, "fabric": out.id, "precision": a.precision,
           "gpus": a.gpus, "global_batch": a.global_batch, "heuristic": a.heuristic,
           "evaluated": P.evaluated, "feasible": P.feasible, "candidates": P.candidates,
           "seconds": elapsed, "layouts": rows, "why_runner_up_loses": why}
    if a.heuristic == "none" and P.feasible:
        H = planner.plan(m, gpu, up, out, a.gpus, a.global_batch, space, _options(a),
                         heuristic="seed", precision=a.precision)
        if H.feasible:
            hb = H.layouts.iloc[0]
            res["seed_heuristic_best"] = {
                "description": planner.describe_layout(hb),
                "step_time_s": float(hb["step_time_s"]),
                "slower_than_best": float(hb["step_time_s"]) / float(fitting.iloc[0]["step_time_s"]) - 1}
    if P.evaluated == 0:
        res["note"] = P.note      # no layout divides the GPUs and the batch: memory is not why
    elif not P.feasible:
        res["note"] = "no layout fits in memory: add GPUs, or a GPU with more memory"
    return res


def cmd_breakeven(a) -> dict:
    # checked under the command's own names: the library's are per GPU (units cancel)
    v.positive("cloud_usd_per_node_hour", a.cloud_usd_per_node_hour)
    v.positive("onprem_capex_usd_per_node", a.onprem_capex_usd_per_node)
    v.nonnegative("onprem_opex_usd_per_node_month", a.onprem_opex_usd_per_node_month)
    m = float(tco.breakeven_months(a.cloud_usd_per_node_hour, a.onprem_capex_usd_per_node,
                                   a.utilization, a.onprem_opex_usd_per_node_month))
    cloud_month = tco.HOURS_PER_MONTH * a.cloud_usd_per_node_hour * a.utilization
    res = {"breakeven_months": m if math.isfinite(m) else None,
           "breaks_even": math.isfinite(m),
           "cloud_usd_per_node_month": cloud_month,
           "onprem_opex_usd_per_node_month": a.onprem_opex_usd_per_node_month}
    if a.horizon_months is not None:
        h = float(v.positive("horizon_months", a.horizon_months))
        cloud = cloud_month * h
        prem = a.onprem_capex_usd_per_node + a.onprem_opex_usd_per_node_month * h
        res.update({"horizon_months": h, "cloud_usd_per_node": cloud, "onprem_usd_per_node": prem,
                    "cheaper": "buy (on-premises)" if prem < cloud else "rent (cloud)"})
    if not math.isfinite(m):
        res["note"] = "the cloud bill per month never exceeds on-premises opex: renting stays cheaper"
    return res


def cmd_spot(a) -> dict:
    if a.lost_hours_per_preemption is not None:
        lost = float(v.nonnegative("lost_hours_per_preemption", a.lost_hours_per_preemption))
    elif a.checkpoint_interval_s is not None:
        # one interruption model: a preemption loses what a failure does (reliability)
        lost = float(rel.lost_hours_per_interruption(a.checkpoint_interval_s, a.checkpoint_s))
    else:
        raise v.InputError("lost_hours_per_preemption", "give --lost-hours-per-preemption or "
                                                        "--checkpoint-interval-s")
    if a.on_demand_failures_per_day is not None:
        if a.failures_per_day is not None:
            raise v.InputError("failures_per_day", "give --failures-per-day or its old name "
                                                   "--on-demand-failures-per-day, not both")
        a.failures_per_day = a.on_demand_failures_per_day
    terms = dict(restart_h=a.restart_h, capacity_wait_h=a.capacity_wait_h,
                 billed_share_during_wait=a.billed_share_during_wait,
                 failures_per_day=a.failures_per_day or 0.0,
                 failure_lost_hours=a.failure_lost_hours)
    r = spot_mod.spot_net_savings(a.discount, a.preemptions_per_day, lost, **terms)
    lost_total = lost + a.restart_h + a.capacity_wait_h
    breakeven = None
    if a.preemptions_per_day > 0:
        # w* ~ 24 d / r: a vanishing preemption rate overflows to "no limit", as r = 0 does
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            breakeven = float(spot_mod.breakeven_lost_hours(a.discount, a.preemptions_per_day,
                                                            **terms))
        breakeven = breakeven if math.isfinite(breakeven) else None
    res = {"net_savings": float(r.net_savings), "duration_stretch": float(r.duration_stretch),
           "lost_hours_per_preemption": lost,
           "hours_lost_per_preemption": lost_total,
           "breakeven_lost_hours_per_preemption": breakeven}
    if a.observed_net_savings is not None:
        res["implied_lost_hours_per_preemption"] = float(spot_mod.implied_lost_hours(
            a.discount, v.positive("preemptions_per_day", a.preemptions_per_day),
            a.observed_net_savings, **terms))
    if a.monte_carlo_runs:
        mc = spot_mod.spot_monte_carlo(a.discount, a.preemptions_per_day, a.run_hours,
                                       lost_hours_per_preemption=lost, runs=a.monte_carlo_runs,
                                       **terms)
        pc = mc.percentiles()
        res["monte_carlo"] = {
            "runs": a.monte_carlo_runs, "run_hours": a.run_hours,
            "net_savings_mean": float(1 - mc.cost_share.mean() / float(r.on_demand_cost_share)),
            "cost_share_p10_p50_p90": [float(x) for x in pc["cost_share"]],
            "duration_share_p10_p50_p90": [float(x) for x in pc["duration_share"]]}
    return res


def cmd_checkpoint(a) -> dict:
    rate_info, warnings = None, []
    if a.mtbf_h is None:
        if a.gpus is not None and a.nodes is not None:
            raise v.InputError("gpus", "give --gpus or --nodes, not both")
        if a.gpus is None and a.nodes is None:
            raise v.InputError("mtbf_h", "give --mtbf-h, or --gpus (or --nodes) and a failure rate")
        gpus = (float(v.positive("gpus", a.gpus)) if a.gpus is not None else
                float(v.positive("nodes", a.nodes)) * float(v.positive("gpus_per_node",
                                                                        a.gpus_per_node)))
        given = [f for f, x in (("failures_per_1000_gpu_days", a.failures_per_1000_gpu_days),
                                ("node_failures_per_1000_node_days",
                                 a.node_failures_per_1000_node_days),
                                ("failure_rate", a.failure_rate)) if x is not None]
        if len(given) > 1:
            raise v.InputError(given[1], f"give one failure rate, not both --{given[0]} and "
                                         f"--{given[1]}".replace("_", "-"))
        if a.failures_per_1000_gpu_days is not None:
            rate = float(v.positive("failures_per_1000_gpu_days", a.failures_per_1000_gpu_days))
        elif a.node_failures_per_1000_node_days is not None:
            rate = float(rel.gpu_rate_from_node_rate(a.node_failures_per_1000_node_days,
                                                     a.gpus_per_node))
        else:
            fr = (catalog.failure_rate(a.failure_rate) if a.failure_rate is not None else
                  catalog.default_failure_rate(catalog.gpu(a.gpu).generation))
            rate = fr.failures_per_1000_gpu_days
            rate_info = {"id": fr.id, "counts": fr.counts, "source": fr.source}
            if fr.note:
                warnings.append(fr.note)
        mtbf = float(rel.mtbf_h(rel.job_failures_per_day(gpus, rate)))
        rate_info = {"failures_per_1000_gpu_days": rate, "gpus": gpus, **(rate_info or {})}
    else:
        mtbf = float(v.positive("mtbf_h", a.mtbf_h))
    M = mtbf * 3600
    young = float(rel.young_interval_s(a.checkpoint_s, M))
    daly = float(rel.daly_interval_s(a.checkpoint_s, M))
    tau = daly if a.interval_s is None else float(v.positive("interval_s", a.interval_s))
    br = rel.goodput_breakdown(tau, a.checkpoint_s, M, a.restart_s)
    res = {"mtbf_h": mtbf, "young_interval_s": young, "daly_interval_s": daly,
           "interval_s": tau, "goodput": float(br.goodput),
           "losses": {"checkpoints": float(br.checkpoint_share), "rework": float(br.rework_share),
                      "restarts": float(br.restart_share)}}
    if a.run_days is not None:
        days = float(v.positive("run_days", a.run_days))
        n = days * 86400 / (tau + a.checkpoint_s)
        res["checkpoints_in_run"] = n
        res["checkpoint_hours_in_run"] = n * a.checkpoint_s / 3600
    if rate_info is not None:
        res["failure_rate"] = rate_info
    if warnings:
        res["warnings"] = warnings
    return res


def _size_scenario(a, m, gpu, out):
    """The review Scenario of a `size` call (sizing by days), or None when a flag has no
    Scenario field (an architecture given by flags, a fixed goodput, step-model overrides,
    a power per GPU): those keep the stand-alone sizing with its own assumptions."""
    from .scenario import Scenario
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
    from .review import evaluate
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
    gpu, up, out = _hardware(a)
    s = _size_scenario(a, m, gpu, out)
    if s is not None:
        return _size_by_review(a, m, gpu, out, s)
    prices = _gpu_prices(gpu, a.usd_per_gpu_hour, a.price)
    batch = 4_194_304 if a.global_batch_tokens is None else a.global_batch_tokens
    S = sizing.size_cluster(m, a.tokens, gpu, up, out, a.days, batch,
                            a.headroom, a.goodput, prices, options=_options(a),
                            max_power_mw=a.max_power_mw, power_kw_per_gpu=a.power_kw_per_gpu,
                            pue=a.pue, precision=a.precision)
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


def cmd_ladder(a) -> dict:
    from .review.ladder import ladder
    if a.tokens is not None:
        raise v.InputError("tokens", f"--tokens {a.tokens:g}: ladder takes "
                                     "--finetune-tokens (fine-tune tokens, epochs included) "
                                     "and --pretrain-tokens (the pretraining rung's)")
    m = _model_from_args(a)
    L = ladder(m, catalog.default(), a.finetune_tokens, a.pretrain_tokens, a.pretrain_days,
               a.gpu, a.seq_len)
    rows = [{"method": r.method, "gpu": r.gpu, "gpus": r.gpus, "hours": r.hours,
             "cost_usd": r.cost_usd, "note": r.note, "gpu_hours": r.gpu_hours,
             "min_gpus": r.min_gpus, "usd_per_gpu_hour": r.usd_per_gpu_hour,
             "price_id": (L.pretrain_price_id if r.method == "pretrain" else
                          L.price_ids.get(r.gpu) if r.gpu else None),
             "calibration": _rung_calibration(r),
             "ranked_by": r.ranked_by if r.gpu else None,
             "rank_cost_usd": r.rank_cost_usd if r.gpu else None} for r in L.rungs]
    res = {"model": m.id, "finetune_tokens": a.finetune_tokens, "rungs": rows, "notes": [],
           "uncalibrated_gpus": list(L.uncalibrated)}
    if L.skipped:
        res["notes"].append("skipped (no price in data/prices.csv): " + ", ".join(L.skipped))
    res["notes"] += list(L.notes)
    return res


def _rung_calibration(rung) -> str | None:
    """What is known of a ladder rung's GPU: "validated" (a published run validates its
    band), "fitted" (constants fitted to published training runs, band not validated) or
    "none" (no published training run: the prior constants); None for the hosted rung."""
    from .training.step import is_calibrated
    if not rung.gpu:
        return None
    if not is_calibrated(catalog.default().gpu(rung.gpu)):
        return "none"
    return "validated" if rung.band == 0 else "fitted"


def _ladder_table(r: dict) -> str:
    lines = [f"fine-tune ladder for {r['model']} ({r['finetune_tokens']:.3g} fine-tune tokens), "
             "cheapest first", "",
             f"{'method':<9} {'gpu':<10} {'gpus':>6} {'hours':>9} {'cost_usd':>13}  note"]
    for x in r["rungs"]:
        hours = "-" if x["hours"] is None else f"{x['hours']:,.1f}"
        lines.append(f"{x['method']:<9} {x['gpu'] or 'hosted':<10} {x['gpus']:>6,} {hours:>9} "
                     f"{x['cost_usd']:>13,.2f}  {x['note']}")
    lines += [""] + r["notes"] if r["notes"] else []
    return "\n".join(lines)


def _gpu_prices(gpu, usd_per_gpu_hour=None, price_id=None) -> dict:
    if usd_per_gpu_hour is not None:
        return {"on_demand": float(v.positive("usd_per_gpu_hour", usd_per_gpu_hour))}
    row = catalog.default().price_offer(gpu.id, price_id)
    return {} if row is None else catalog.usd_per_gpu_hour(row)


def cmd_review(a) -> dict:
    """The review chain on a Scenario from a query string and/or a scenario file (the file
    first, then the query on top); infeasible scenarios are answered, bad values refused.
    A link that compares scenarios (``b.``/``c.`` keys, as the apps share) reviews each."""
    from .review import evaluate
    scenarios, cat, notes = _scenarios_from_args(a)
    out = [evaluate(s, cat).to_json() for s in scenarios]
    if len(out) == 1:
        out[0]["warnings"] = notes + out[0]["warnings"]
        return out[0]
    return _compared(out, notes)


def cmd_compare(a) -> dict:
    """One run on every GPU with an offer, each offer and each pricing option: each row the
    review of the scenario with that GPU and offer (``--gpus`` narrows the GPUs)."""
    from .review.compare import compare
    scenarios, cat, notes = _scenarios_from_args(a)
    if len(scenarios) > 1:
        notes.append("compare reads scenario A of a compare link")
    gpus = None
    if a.gpus is not None:
        gpus = [g.strip() for g in a.gpus.split(",") if g.strip()]
        for g in gpus:
            cat.gpu(g)
    out = compare(scenarios[0], cat, sort=a.sort, by=a.by, gpus=gpus).to_json()
    out["warnings"] = notes
    return out


def _compare_text(r: dict) -> str:
    """The comparison for a terminal: a row per GPU x offer x option, sorted."""
    head = (f"{'gpu':10s} {'offer':24s} {'option':13s} {'fabric':20s} {'days':>7s} "
            f"{'band':>13s} {'cost':>10s} {'$/M tok':>8s}  calibrated")
    lines = [f"{r['scenario'] or 'defaults'}: sorted by {r['sort']}"
             + (f", grouped by {r['by']}" if r["by"] != "none" else ""), head]
    for x in r["rows"]:
        days = f"{x['days']:.1f}" if x["days"] is not None else "-"
        band = (f"{x['days_band'][0]:.0f}-{x['days_band'][1]:.0f}" if x["days_band"] else "-")
        cost = _money(x["cost_usd"]) if x["cost_usd"] is not None else "missing"
        per = f"{x['usd_per_million_tokens']:.2f}" if x["usd_per_million_tokens"] else "-"
        cal = "yes" if x["calibrated"] else "no (ranked at its band's slow end)"
        if x["flag"]:
            cal += f"; {x['flag']}"
        lines.append(f"{x['gpu']:10s} {x['offer'] or 'buy':24s} {x['option_label']:13s} "
                     f"{x['fabric']:20s} {days:>7s} {band:>13s} {cost:>10s} {per:>8s}  {cal}")
    lines += [f"note: {n}" for n in r["warnings"]]
    return "\n".join(lines)


def _money(x: float) -> str:
    from .review.format import usd_text
    return usd_text(x)


def cmd_storage(a) -> dict:
    """Checkpoint and data-read figures of a reviewed scenario (the same Results)."""
    from .review import evaluate
    from .review.storage_view import storage_summary
    scenarios, cat, notes = _scenarios_from_args(a)
    out = [storage_summary(evaluate(s, cat)) for s in scenarios]
    if len(out) == 1:
        out[0]["warnings"] = notes
        return out[0]
    return _compared(out, notes)


def cmd_check(a) -> dict:
    """Is the cluster delivering: nccl-tests output, a training log and/or DCGM samples read
    and checked against the model. The hardware from --gpu/--fabric or the query, the
    placement from the output or --nodes/--gpus-per-node/--nics-per-node; a log's model
    from model= (or --model), --model-config or the log itself, else its measured figures
    alone."""
    from .checks import check as chk
    from .checks import text as ctext
    if a.nccl_tests is None and a.train_log is None and a.dcgm is None:
        raise v.InputError("nccl_tests", "give --nccl-tests FILE, --train-log FILE and/or "
                                         "--dcgm FILE")
    for dest in ("nodes", "gpus_per_node", "nics_per_node"):
        if getattr(a, dest) is not None:
            v.integer(_flag(dest), getattr(a, dest), 1, 1_000_000)
    texts = {k: (path, ctext.read_file(path, k)) if path is not None else None
             for k, path in (("nccl_tests", a.nccl_tests), ("train_log", a.train_log),
                             ("dcgm", a.dcgm))}
    scenario = None
    notes = []
    query = a.query
    if a.model is not None:
        if query is not None and "model" in chk.typed_keys(query):
            raise v.InputError("model", "--model and model= in --query: give one")
        query = (query + "&" if query else "") + "model=" + a.model
    model_given = a.model is not None or a.model_config is not None or (
        query is not None and "model" in chk.typed_keys(query))
    if query is not None or a.model_config is not None:
        scenarios, _, notes = _scenarios_from_args(argparse.Namespace(
            query=query if query is not None else "", scenario=None,
            model_config=a.model_config))
        scenario = scenarios[0]
        if len(scenarios) > 1:
            notes.append("check reads scenario A of a compare link")
    hardware = None
    if a.nccl_tests is not None and a.gpu is not None:
        hardware = _hardware(a)
    elif a.nccl_tests is not None and query is None:
        raise v.InputError("gpu", "--nccl-tests needs the hardware: --gpu [--fabric], or "
                                  "--query \"gpu=..&fabric=..\"")
    res = chk.check_texts(texts["nccl_tests"], texts["train_log"], texts["dcgm"],
                          scenario=scenario, query=query, model_given=model_given,
                          hardware=hardware, nccl_op=a.nccl_op, nodes=a.nodes,
                          gpus_per_node=a.gpus_per_node, nics_per_node=a.nics_per_node,
                          cat=catalog.default())
    res["warnings"] = notes
    return res


def _check_text(r: dict) -> str:
    """The check for a terminal: findings first, then the figures."""
    lines = ["findings:" + ("" if r["findings"] else " none")]
    lines += [f"  [{f['level']}] {f['what']}: {f['evidence']}" for f in r["findings"]]
    if r["collectives"]:
        lines.append("collectives (busbw measured / expected, GB/s):")
        for c in r["collectives"]:
            e = c["expected_busbw_gb_per_s"]
            lines.append(f"  {c['op']:<14} {c['size_bytes']:>14,} B  {_fmt(c['busbw_gb_per_s'])}"
                         f" / {_fmt(e) if e is not None else '-'}")
    if r["steps"]:
        lines.append("steps:")
        lines += [f"  {k}: " + (", ".join(_fmt(e) for e in x) if isinstance(x, list) else _fmt(x))
                  for k, x in r["steps"].items()]
    if r.get("dcgm"):
        lines.append("dcgm (mean, min, max; blanks):")
        lines += [f"  {k}: " + ", ".join("-" if x[q] is None else _fmt(x[q])
                                         for q in ("mean", "min", "max")) + f"; {x['blank']}"
                  for k, x in r["dcgm"]["metrics"].items()]
    lines += [f"note: {n}" for n in r["notes"] + r["assumptions"] + r["warnings"]]
    return "\n".join(lines)


def _compared(results: list, notes: list) -> dict:
    """Several scenarios' answers side by side, A first, with B's and C's relative changes
    against A for every top-level number."""
    from .scenario import COMPARE_LABELS
    labels = COMPARE_LABELS[:len(results)]
    a = results[0]
    deltas = {}
    for label, r in zip(labels[1:], results[1:]):
        deltas[label] = {k: (x - a[k]) / abs(a[k]) for k, x in r.items()
                         if isinstance(x, (int, float)) and not isinstance(x, bool)
                         and isinstance(a.get(k), (int, float)) and not isinstance(a[k], bool)
                         and a[k] != 0 and x != a[k]}
    return {"compared": list(labels), "scenarios": dict(zip(labels, results)),
            "changes_vs_a": deltas, "warnings": notes}


def _scenarios_from_args(a):
    """The scenario file (if any), then the query on top; a query with ``b.``/``c.`` keys
    gives up to three scenarios, A first."""
    from .scenario import Scenario, scenarios_from_query
    if a.query is None and a.scenario is None:
        raise v.InputError("query", "give --query \"model=...&gpus=...\" and/or --scenario file.json")
    cat = catalog.default()
    s = Scenario()
    config = None
    if getattr(a, "model_config", None):
        from .scenario import config_text
        config = config_text(hf_config.file_config_fields(
            hf_config.read_config_file(a.model_config), a.model_config))
    if a.scenario is not None:
        try:
            with open(a.scenario, encoding="utf-8") as fh:
                text = fh.read(5_000_000)
        except OSError as e:
            raise v.InputError("scenario", f"cannot read scenario file {a.scenario!r}: "
                                           f"{e.strerror or e}") from None
        s, notes = Scenario.from_json(text, cat, strict=True)
    else:
        notes = []
    if config is not None:
        # the file's model, under whatever the link or scenario file says
        s = replace(s, model="config", model_config=config)
    if a.query is None:
        return [s], cat, notes
    from urllib.parse import urlencode
    query = a.query.lstrip("?")
    if config is not None and a.scenario is None:
        from urllib.parse import parse_qsl
        link = dict(parse_qsl(query, keep_blank_values=True))
        if "model" in link:
            raise v.InputError("model_config", "give --model-config or model= in the query, "
                                               "not both")
        s, query, more = _config_keys_over_file(s, query)
        notes = notes + more
        query = s.to_query() + ("&" + query if query else "")
    if a.scenario is not None:
        # the file's values are A's starting point: the link's A keys go on top of them
        from urllib.parse import parse_qsl
        file_keys = {k: x for k, x in s.to_dict().items() if x != getattr(Scenario(), k)}
        link = dict(parse_qsl(query, keep_blank_values=True))
        query = urlencode({**{k: x for k, x in file_keys.items() if k not in link}}) + \
            ("&" + query if query else "")
    scenarios, more = scenarios_from_query(query, cat, strict=True)
    return scenarios, cat, notes + more


def _forecast_lines(r: dict) -> list:
    """The forecast's GPU-hours, band, floor, napkin and the group it compares with."""
    from .review.format import band_text, human_count
    if r.get("gpu_hours") is None:
        return []
    rr = r["realized_ratio"]
    lo, hi = r["gpu_hours_band"] or (r["gpu_hours"], r["gpu_hours"])
    return [f"  GPU-hours         {human_count(r['gpu_hours'])}  "
            f"({band_text(human_count(lo), human_count(hi), rr['runs'])}; floor "
            f"{human_count(r['gpu_hours_floor'])}; napkin "
            f"{human_count(r['napkin_gpu_hours'])})",
            f"  realized ratio    x{rr['value']:.2f} (band x{rr['band'][0]:.2f}-x{rr['band'][1]:.2f})"
            f" over the floor: {rr['group']}, {rr['runs']} published runs"
            + (f" ({rr['fallback']})" if rr.get("fallback") else "")]


def _config_keys_over_file(s, query: str):
    """The link's ``cfg.<field>=`` keys beside --model-config replace (or add) the file's
    fields, as the architecture flags do beside it for the other subcommands; each with a
    note. Returns the scenario, the query without those keys, and the notes. A key given
    twice is left in the query, where it is refused."""
    from urllib.parse import parse_qsl, urlencode

    from .scenario import CONFIG_PREFIX, config_text
    pairs = parse_qsl(query, keep_blank_values=True)
    counts = {}
    for k, _ in pairs:
        counts[k] = counts.get(k, 0) + 1
    given = {k: x for k, x in pairs if k.startswith(CONFIG_PREFIX) and counts[k] == 1}
    if not given:
        return s, query, []
    fields = json.loads(s.model_config)
    notes = []
    for key, text in given.items():
        name = key[len(CONFIG_PREFIX):]
        notes.append(f"{key}={text} replaces the config file's {name} {fields[name]}"
                     if name in fields else f"{key}={text} added to the config file's fields")
        fields[name] = text
    rest = urlencode([(k, x) for k, x in pairs if k not in given])
    return replace(s, model_config=config_text(fields)), rest, notes


def _review_text(r: dict) -> str:
    def num(x, fmt):
        return "n/a" if x is None else fmt.format(x)

    from .review.format import band_text, human_count, memory_text
    lay = r["layout"]
    size = human_count(r["params"])
    if r["active_params"] != r["params"]:
        size += f", {human_count(r['active_params'])} active"
    band = ""
    if r.get("days_band"):
        lo, hi = (f"{x:,.1f}" for x in r["days_band"])
        band = (f"  ({band_text(lo, hi, r['realized_ratio']['runs'])}; floor "
                f"{r['days_floor']:,.1f})")
    lines = [f"{r['model']} ({size} parameters) on {r['gpus']:,} x {r['gpu']} ({r['fabric']})",
             f"  days              {num(r['days'], '{:,.1f}')}" + band
             + (f"   (target met: {'yes' if r['meets_target'] else 'no'})" if "meets_target" in r else ""),
             *_forecast_lines(r),
             f"  layout            {lay['description'] if lay else 'none'}",
             f"  fits in memory    {'yes' if r['fits'] else 'NO'}  "
             + (f"({memory_text(r['memory_gb_per_gpu'], r['capacity_gb'])} per GPU)"
                if r['memory_gb_per_gpu'] is not None else "(no layout)"),
             f"  MFU               {num(r['mfu'], '{:.1%}')}"
             + (f" of the dense BF16 peak; {num(r.get('mfu_precision'), '{:.1%}')} of the dense "
                f"{r['precision'].upper()} peak" if r.get("precision") in ("fp8", "mxfp8") else ""),
             f"  effective util.   {num(r['effective_utilization'], '{:.1%}')}",
             f"  job MTBF          {num(r['job_mtbf_h'], '{:,.1f} h')}  "
             f"({r['failures_per_1000_gpu_days']:.3g} failures per 1000 GPU-days, {r['failure_source']})",
             f"  checkpoint every  {num(r['checkpoint_interval_s'], '{:,.0f} s')}   goodput "
             f"{num(r['goodput'], '{:.1%}')}",
             f"  spot net savings  {num(r['spot_net_savings'], '{:.1%}')}",
             f"  breakeven         {num(r['breakeven_months'], '{:,.1f} months')} (buying vs on-demand)",
             "  cash cost of this run (commitments included):"]
    for k, x in r["costs_usd"].items():
        extra = r["commitments"].get(k, "")
        lines.append(f"    {k:<12} ${x:>18,.0f}  amortized ${r['costs_amortized_usd'].get(k, x):>16,.0f}"
                     + (f"  [{extra}]" if extra else ""))
    if not r["costs_usd"]:
        lines.append("    none (no run: no layout)" if r.get("days") is None
                     else "    none (no price for this GPU)")
    for name, f in r["flags"].items():
        lines.append(f"  FLAG {name}: {f['level']}: {f['message']}")
    if r["warnings"]:
        lines.append("warnings:")
        lines += [f"  - {w}" for w in r["warnings"]]
    return "\n".join(lines)


#: columns `llmcost list <table>` prints as text (JSON keeps all of them)
LIST_TEXT_COLUMNS = {
    "models": ("id", "name", "layers", "hidden", "heads", "kv_heads", "vocab", "seq_len",
               "published_params_b", "moe_experts", "moe_top_k", "published_active_params_b",
               "as_of"),
    "gpus": ("id", "name", "generation", "bf16_dense_tflops", "fp8_dense_tflops", "memory_gib",
             "hbm_bandwidth_tb_per_s", "scale_up", "scale_up_domain_gpus", "gpus_per_node", "as_of"),
    "fabrics": ("id", "name", "kind", "bandwidth_gb_per_s_per_gpu", "latency_us", "efficiency",
                "congestion_per_doubling", "as_of"),
}


def cmd_serve(a) -> dict:
    """Serving figures of a layout (llmcost.serving), or the planner's best under limits."""
    return serve_query.answer(a.query, a.model_config)


def cmd_list(a) -> dict:
    df = catalog.default().table(a.table)
    cols = [c for c in df.columns if c not in ("notes",)]
    return {"table": a.table, "rows": json.loads(df[cols].to_json(orient="records"))}


# ---------------------------------------------------------------------------- output

def _fmt(x) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{x:,}"
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if x == 0:
            return "0"
        if abs(x) >= 1e6 or abs(x) < 1e-3:
            return f"{x:.4g}"
        return f"{x:,.4g}" if abs(x) >= 1 else f"{x:.4g}"
    return str(x)


def _table(result: dict) -> str:
    if "layouts" in result and isinstance(result["layouts"], list) and "evaluated" in result:
        return _plan_table(result)
    if "rungs" in result:
        return _ladder_table(result)
    lines = []
    width = max(len(k) for k in result)
    for k, x in result.items():
        if isinstance(x, dict):
            lines.append(f"{k}:")
            w2 = max(len(str(kk)) for kk in x) if x else 0
            for kk, xx in x.items():
                if isinstance(xx, dict):
                    # one level deeper (storage's by_mode and tiers): key=value, formatted
                    shown = ", ".join(f"{k3}={_fmt(x3)}" for k3, x3 in xx.items())
                elif isinstance(xx, list):
                    shown = ", ".join(_fmt(e) for e in xx)
                else:
                    shown = _fmt(xx)
                lines.append(f"  {str(kk):<{w2}}  {shown}")
        elif isinstance(x, list):
            lines.append(f"{k}:" + ("" if x else " none"))
            for item in x:
                if isinstance(item, dict) and "message" in item:
                    lines.append(f"  [{item['level']}] {item['message']}")
                else:
                    lines.append(f"  {item}")
        else:
            lines.append(f"{k:<{width}}  {_fmt(x)}")
    return "\n".join(lines)


def _plan_table(r: dict) -> str:
    lines = [f"{r['model']} on {r['gpus']} x {r['gpu']} ({r['fabric']}), global batch "
             f"{r['global_batch']}: {r['evaluated']:,} layouts evaluated, {r['feasible']:,} fit "
             f"in memory ({r['seconds']:.2f} s)", ""]
    hdr = f"{'#':>2}  {'layout':<58} {'step s':>8} {'MFU':>6} {'HFU':>6} {'mem GB':>7} fits"
    lines.append(hdr)
    for i, L in enumerate(r["layouts"], 1):
        lines.append(f"{i:>2}  {L['description']:<58} {L['step_time_s']:>8.3f} {L['mfu']:>6.1%} "
                     f"{L['hfu']:>6.1%} {L['memory_gb_per_gpu']:>7.1f} {'yes' if L['fits'] else 'no'}")
    if r["why_runner_up_loses"]:
        lines += ["", "why the runners-up lose:"] + [f"  {w}" for w in r["why_runner_up_loses"]]
    if "seed_heuristic_best" in r:
        h = r["seed_heuristic_best"]
        lines += ["", "the cluster guide's rule (TP in a node, PP in a rack of 4 nodes): best "
                      f"{h['description']}, {h['step_time_s']:.3f} s per step ({h['slower_than_best']:+.1%} vs best)"]
    if r.get("note"):
        lines += ["", r["note"]]
    return "\n".join(lines)


def _predict_notes(result: dict) -> str:
    lines = ["", "step time, term by term:"]
    total = result["step_time_s"]
    for k, x in result["breakdown_s"].items():
        lines.append(f"  {k:<12} {x:>10.4g} s  {x / total:>6.1%}  "
                     f"{step_mod.STEP_TERMS[k].explanation}")
    return "\n".join(lines)


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def _finite(obj, where="result"):
    """Refuse to print NaN/inf as a result: they mean a bug or inputs out of range, not an
    answer. The error names the result key, so the user knows which figure blew up."""
    if isinstance(obj, dict):
        for key, val in obj.items():
            _finite(val, key)
    elif isinstance(obj, (list, tuple)):
        for val in obj:
            _finite(val, where)
    elif isinstance(obj, (float, np.floating)) and not math.isfinite(obj):
        raise v.InputError("result", f"the inputs give a non-finite {where} ({float(obj)}); "
                                     "check their ranges")


# ---------------------------------------------------------------------------- parser

def _add_stage_args(sp):
    sp.add_argument("--first-stage-layers", type=int,
                    help="layers on the first pipeline stage (Megatron's "
                         "--decoder-first-pipeline-num-layers); default: even, or one short "
                         "at each end when PP does not divide the layers")
    sp.add_argument("--last-stage-layers", type=int,
                    help="layers on the last pipeline stage (--decoder-last-pipeline-num-layers)")


def _add_precision_arg(sp):
    sp.add_argument("--precision", choices=PRECISIONS, default="bf16",
                    help="GEMM precision: bf16, fp8 (per-tensor scaling; Hopper, Ada, "
                         "Blackwell) or mxfp8 (Blackwell); attention and the rest stay BF16")


def _add_layout_common(sp: argparse.ArgumentParser) -> None:
    """The model, precision, hardware and options flags of predict and plan."""
    _add_model_args(sp)
    sp.add_argument("--gpu", default="a100-80gb", help="catalog id (default a100-80gb)")
    sp.add_argument("--fabric", help="scale-out fabric id (default: the GPU's usual)")
    sp.add_argument("--gpus", type=int, required=True)
    sp.add_argument("--global-batch", type=int, required=True, help="sequences per step")
    sp.add_argument("--no-flash-attention", action="store_true")
    sp.add_argument("--dp-overlap", type=float, default=step_mod.Options.dp_overlap,
                    help="share of gradient sync overlapped with backward (0-1)")
    sp.add_argument("--tp-comm-overlap", action="store_true",
                    help="TP communication overlapped with GEMMs (TransformerEngine)")
    _add_precision_arg(sp)
    sp.add_argument("--stack", choices=stacks.NAMES, default=stacks.DEFAULT,
                    help="training stack (default megatron): " + stacks.help_text())
    sp.add_argument("--moe-load-imbalance", type=float,
                    default=MOE_LOAD_IMBALANCE_DEFAULT,
                    help="MoE: tokens on the busiest expert rank over the mean (>= 1; "
                         f"default {MOE_LOAD_IMBALANCE_DEFAULT}, auxiliary-loss-free "
                         "balancing as 2025 recipes route)")
    sp.add_argument("--moe-overlap", choices=tuple(A2A_OVERLAP), default=MOE_OVERLAP_DEFAULT,
                    help="MoE: how the expert all-to-all is hidden, a named recipe ("
                         + ", ".join(f"{k} {x:g}" for k, x in A2A_OVERLAP.items())
                         + f"; default {MOE_OVERLAP_DEFAULT})")
    sp.add_argument("--moe-a2a-overlap", type=float, default=None,
                    help="MoE: your own share of the all-to-all hidden (0-1), instead of "
                         "--moe-overlap")


def _args_flops(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost flops``."""
    _add_model_args(sp)
    sp.add_argument("--tokens", type=float, help="training tokens (default: 20 per parameter)")
    sp.add_argument("--method", choices=("architecture", "6n", "palm"), default="architecture",
                    help="FLOPs per token: from the architecture (Megatron/Korthikanti Eq. 7), "
                         "6N, or PaLM 6N + 12LHQT")


def _args_mfu(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost mfu``."""
    _add_model_args(sp)
    sp.add_argument("--flops-per-token", type=float, help="model FLOPs per token (or give a model)")
    sp.add_argument("--global-batch", type=float, required=True, help="sequences per step")
    sp.add_argument("--steps", type=float, required=True)
    sp.add_argument("--gpus", type=float, required=True)
    sp.add_argument("--peak-tflops", type=float, help="dense peak per GPU (or --gpu)")
    sp.add_argument("--gpu", help="catalog id; its dense peak is used")
    sp.add_argument("--precision", choices=PRECISIONS, default="bf16",
                    help="the run's GEMM precision (MFU is stated against the dense BF16 "
                         "peak for every precision)")
    sp.add_argument("--wall-clock-s", type=float, required=True)
    sp.add_argument("--published", type=float, help="a published figure to compare with (0-1)")


def _args_memory(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost memory``."""
    _add_model_args(sp)
    sp.add_argument("--params", type=float, help="parameters (model states only, no activations)")
    sp.add_argument("--gpus", type=int, required=True)
    sp.add_argument("--tp", type=int, required=True)
    sp.add_argument("--pp", type=int, required=True)
    sp.add_argument("--cp", type=int, default=1)
    sp.add_argument("--zero", type=int, default=0, help="ZeRO stage 0-3")
    sp.add_argument("--micro-batch", type=int, default=1)
    sp.add_argument("--global-batch", type=int, help="sequences per step (sets micro-batches in flight)")
    sp.add_argument("--recompute", choices=fl.RECOMPUTE_MODES, default="none")
    sp.add_argument("--sequence-parallel", action="store_true")
    sp.add_argument("--no-flash-attention", action="store_true",
                    help="store the s x s attention scores (Korthikanti's 5as/h term)")
    sp.add_argument("--optimizer", choices=mem.OPTIMIZERS, default="adam")
    sp.add_argument("--interleave", type=int, default=1, help="virtual pipeline chunks")
    _add_stage_args(sp)
    sp.add_argument("--finetune", choices=mem.FINETUNE_MODES, default="full")
    sp.add_argument("--lora-rank", type=int, default=16)
    sp.add_argument("--gpu", help="catalog id: report capacity and whether it fits")
    sp.add_argument("--ep", type=int, default=1, help="expert-parallel size (MoE models)")
    sp.add_argument("--etp", type=int, default=1, help="expert tensor-parallel size (MoE)")
    sp.add_argument("--stack", choices=stacks.NAMES, default=stacks.DEFAULT,
                    help="training stack (default megatron; fsdp: FSDP2 keeps a pipeline "
                         "stage gathered, its usual loss is FP32): " + stacks.help_text())
    _add_recipe_args(sp)


def _args_predict(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost predict``."""
    _add_layout_common(sp)
    sp.add_argument("--tp", type=int, required=True)
    sp.add_argument("--pp", type=int, required=True)
    sp.add_argument("--cp", type=int, default=1)
    sp.add_argument("--micro-batch", type=int, default=1)
    sp.add_argument("--interleave", type=int, default=1)
    _add_stage_args(sp)
    sp.add_argument("--recompute", choices=fl.RECOMPUTE_MODES, default="none")
    sp.add_argument("--sequence-parallel", action="store_true")
    sp.add_argument("--zero", type=int, default=0)
    sp.add_argument("--ep", type=int, default=1, help="expert-parallel size (MoE models)")
    sp.add_argument("--etp", type=int, default=1, help="expert tensor-parallel size (MoE)")
    _add_recipe_args(sp)


def _args_plan(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost plan``."""
    _add_layout_common(sp)
    sp.add_argument("--top", type=int, default=5)
    sp.add_argument("--max-tp", type=int, help="allow TP beyond one node, up to this")
    _add_stage_args(sp)
    sp.add_argument("--heuristic", choices=planner.HEURISTICS, default="none",
                    help="'seed': the cluster guide's rule (GPU Clusters for LLM Training: A "
                         "Builder's Guide, 2026): TP in a node, PP in a rack of 4 nodes, DP "
                         "across racks")
    sp.add_argument("--usd-per-gpu-hour", type=float, help="price, for $ per million tokens")
    sp.add_argument("--rank-by", choices=("time", "cost"), default="time")
    sp.add_argument("--ep", type=int, nargs="+",
                    help="expert-parallel sizes to search (MoE; default: every power of two "
                         "dividing the experts)")
    sp.add_argument("--etp", type=int, nargs="+", help="expert tensor-parallel sizes (MoE)")


def _args_breakeven(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost breakeven``."""
    sp.add_argument("--cloud-usd-per-node-hour", type=float, required=True)
    sp.add_argument("--onprem-capex-usd-per-node", type=float, required=True)
    sp.add_argument("--utilization", type=float, required=True, help="share of hours used (0-1]")
    sp.add_argument("--onprem-opex-usd-per-node-month", type=float, default=0.0)
    sp.add_argument("--horizon-months", type=float, help="also compare total cost over a horizon")


def _args_spot(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost spot``."""
    sp.add_argument("--discount", type=float, required=True, help="spot price cut (0-1)")
    sp.add_argument("--preemptions-per-day", type=float, required=True)
    sp.add_argument("--lost-hours-per-preemption", type=float,
                    help="billed job-hours lost per preemption (rework); overrides the "
                         "checkpoint interval")
    sp.add_argument("--checkpoint-interval-s", type=float,
                    help="instead of --lost-hours-per-preemption: lost work = interval / 2 "
                         "+ checkpoint stall, as for a failure")
    sp.add_argument("--checkpoint-s", type=float, default=0.0,
                    help="blocking time per checkpoint, with --checkpoint-interval-s")
    sp.add_argument("--restart-h", type=float, default=0.0,
                    help="restart and reload after any interruption")
    sp.add_argument("--capacity-wait-h", type=float, default=0.0)
    sp.add_argument("--billed-share-during-wait", type=float, default=1.0,
                    help="share of nodes billed while waiting for capacity (0-1)")
    sp.add_argument("--failures-per-day", type=float,
                    help="job failures per day, suffered by both the spot and on-demand run")
    sp.add_argument("--on-demand-failures-per-day", type=float,
                    help="old name of --failures-per-day")
    sp.add_argument("--failure-lost-hours", type=float,
                    help="work lost per failure (default: as per preemption)")
    sp.add_argument("--observed-net-savings", type=float,
                    help="goal-seek the hours lost per preemption this saving implies")
    sp.add_argument("--monte-carlo-runs", type=int, default=0)
    sp.add_argument("--run-hours", type=float, default=24 * 18.0, help="useful hours, for Monte Carlo")


def _args_checkpoint(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost checkpoint``."""
    sp.add_argument("--checkpoint-s", type=float, required=True, help="blocking time per checkpoint")
    sp.add_argument("--mtbf-h", type=float, help="job mean time between failures")
    sp.add_argument("--gpus", type=float, help="instead of --mtbf-h: GPUs in the job")
    sp.add_argument("--nodes", type=float, help="instead of --gpus: nodes (x --gpus-per-node)")
    sp.add_argument("--gpus-per-node", type=float, default=8.0,
                    help="converts --nodes and --node-failures-per-1000-node-days")
    sp.add_argument("--failures-per-1000-gpu-days", type=float,
                    help="job failure rate per GPU (default: the --gpu generation's)")
    sp.add_argument("--node-failures-per-1000-node-days", type=float,
                    help="old form: a per-node rate, divided by --gpus-per-node")
    sp.add_argument("--failure-rate", help="failure-rate preset id (`llmcost list failure_rates`)")
    sp.add_argument("--gpu", default="h100-sxm",
                    help="GPU whose generation picks the default failure rate")
    sp.add_argument("--interval-s", type=float, help="evaluate this interval (default: Daly's)")
    sp.add_argument("--restart-s", type=float, default=0.0)
    sp.add_argument("--run-days", type=float, help="count checkpoints and their hours over a run")


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


def _args_ladder(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost ladder``."""
    _add_model_args(sp)
    sp.add_argument("--finetune-tokens", type=float, default=1e9,
                    help="fine-tune tokens, epochs included (default 1e9)")
    # the old name, refused: it read as pretraining tokens beside the review's tokens=
    sp.add_argument("--tokens", type=float, help=argparse.SUPPRESS)
    sp.add_argument("--pretrain-tokens", type=float,
                    help="pretraining tokens (default: 20 per parameter)")
    sp.add_argument("--pretrain-days", type=float, default=30.0)
    sp.add_argument("--gpu", action="append",
                    help="a GPU to consider (repeatable; default: every catalog GPU with a price)")


def _args_review(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost review``."""
    sp.add_argument("--query", help='the apps\' query string, e.g. "model=llama3-405b&gpus=16384"')
    sp.add_argument("--scenario", help="a scenario file saved by an app (JSON)")
    sp.add_argument("--model-config", metavar="FILE",
                    help="a Hugging Face config.json: review that model (model=config)")


def _args_compare(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost compare``."""
    _args_review(sp)
    sp.add_argument("--sort", choices=("cost", "days"), default="cost",
                    help="order of the rows (an uncalibrated GPU's row at its band's slow end)")
    sp.add_argument("--by", choices=("none", "gpu", "provider"), default="none",
                    help="group the rows by GPU or provider, sorted within each group")
    sp.add_argument("--gpus", metavar="IDS", help="only these GPUs, comma-separated")


def _args_storage(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost storage``."""
    sp.add_argument("--query", help='the apps\' query string, e.g. '
                                    '"model=llama3-405b&gpus=16384&checkpoint_mode=async"')
    sp.add_argument("--scenario", help="a scenario file saved by an app (JSON)")
    sp.add_argument("--model-config", metavar="FILE",
                    help="a Hugging Face config.json: that model's checkpoints and reads")


def _args_serve(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost serve``."""
    sp.add_argument("--query", required=True,
                    help='e.g. "model=llama3-70b&gpu=h100-sxm&tp=4&weights=fp8&isl=1000&'
                         'osl=1000&concurrency=64&engine=vllm"; keys: '
                         + ", ".join(serve_query.KEYS) + "; ttft_ms_max/tpot_ms_max without "
                         "tp: the best layout under them; max_num_seqs, max_num_batched_tokens "
                         "and gpu_memory_utilization set the engine's scheduler (vLLM's names "
                         "for every engine; the answer's engine_settings says which setting "
                         "each is); serve_tp/serve_ep: the Serving app's tp/ep")
    sp.add_argument("--model-config", metavar="FILE",
                    help="a Hugging Face config.json: serve that model (model=config)")


def _args_check(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost check``."""
    sp.add_argument("--nccl-tests", metavar="FILE",
                    help="nccl-tests output (text of any *_perf, or its -J JSON)")
    sp.add_argument("--nccl-op", choices=CHECK_OPS,
                    help="the collective of --nccl-tests when the output does not name it "
                         "(default: from the output, the file name, or busbw/algbw)")
    sp.add_argument("--train-log", metavar="FILE",
                    help="a Megatron-LM/Megatron-Bridge, NeMo 2 or torchtitan training log")
    sp.add_argument("--dcgm", metavar="FILE",
                    help="dcgm-exporter's /metrics text (Prometheus) or 'dcgmi dmon -e ...' "
                         "output: profiling gauges, blanks")
    sp.add_argument("--gpu", help="catalog id of the nccl-tests GPUs (or give --query)")
    sp.add_argument("--fabric", help="scale-out fabric id of the nccl-tests run (default: "
                                     "the GPU's usual)")
    sp.add_argument("--query", help='the run, as the apps\' query string, e.g. '
                                    '"model=llama3-8b&gpu=h100-sxm&gpus=8&seq_len=8192"')
    sp.add_argument("--model", help="catalog id of the log's model (as model= in --query); "
                                    "without it, --model-config or a model the log prints, "
                                    "the log's measured figures alone are reported")
    sp.add_argument("--model-config", metavar="FILE",
                    help="a Hugging Face config.json: the log's model")
    sp.add_argument("--nodes", type=int, help="nodes of the nccl-tests run where its output "
                                              "has no Rank lines with hosts")
    sp.add_argument("--gpus-per-node", type=int, help="GPUs (ranks) per node of the "
                                                      "nccl-tests run")
    sp.add_argument("--nics-per-node", type=int, help="scale-out NICs per node (default: "
                                                      "NCCL_IB_HCA or NCCL's NET/IB line in "
                                                      "the output, else one per GPU)")


def _args_list(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost list``."""
    sp.add_argument("table", choices=catalog.TABLES)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="llmcost", description="Numbers for an LLM training architecture review.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    def add(name: str, func: Callable, help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.add_argument("--json", action="store_true", help="print one JSON object")
        sp.set_defaults(func=func)
        return sp
    sp = add("flops", cmd_flops, "Parameters and training FLOPs of a model.")
    _args_flops(sp)
    sp = add("mfu", cmd_mfu, "Effective utilization of a measured run (the cluster guide's formula), "
                             "with plausibility findings.")
    _args_mfu(sp)
    sp = add("memory", cmd_memory, "Per-GPU memory of a layout, by component (GB = 1e9 bytes).")
    _args_memory(sp)
    sp = add("predict", cmd_predict, "Step time, MFU/HFU and memory of one layout, each term explained.")
    _args_predict(sp)
    sp = add("plan", cmd_plan, "Every layout evaluated and ranked; the best first.")
    _args_plan(sp)
    sp = add("breakeven", cmd_breakeven, "Months after which buying a node beats renting it.")
    _args_breakeven(sp)
    sp = add("spot", cmd_spot, "Net savings of spot over on-demand after preemptions.")
    _args_spot(sp)
    sp = add("checkpoint", cmd_checkpoint, "Optimal checkpoint interval (Young, Daly) and goodput.")
    _args_checkpoint(sp)
    sp = add("size", cmd_size, "GPUs and nodes to train within a target number of days, and cost.")
    _args_size(sp)
    sp = add("ladder", cmd_ladder, "The fine-tune ladder of the infrastructure overview ('LLM "
                                   "Training Infrastructure'): adapt, QLoRA, LoRA, full "
                                   "fine-tune, pretraining; GPUs, hours and dollars, cheapest first.")
    _args_ladder(sp)
    sp = add("review", cmd_review, "The whole review of a scenario: days, layout, MFU, "
                                   "reliability and the cash cost of each pricing option.")
    _args_review(sp)
    sp = add("storage", cmd_storage, "Checkpoint size, stalls, upload, durable interval, "
                                     "goodput and data read rate of a scenario.")
    _args_storage(sp)
    sp = add("serve", cmd_serve, "Serving a model: memory, TTFT, TPOT, output tokens/s per "
                                 "GPU and $ per million tokens; the best layout under limits.")
    _args_serve(sp)
    sp = add("compare", cmd_compare, "One run on every GPU with an offer, each offer and each "
                                     "option: forecast days and band, cost, $ per million "
                                     "tokens; each row the review for its GPU and offer.")
    _args_compare(sp)
    sp = add("check", cmd_check, "Is the cluster delivering: nccl-tests output and a training "
                                 "log against the model's expectations, with findings.")
    _args_check(sp)
    sp = add("list", cmd_list, "List a catalog table.")
    _args_list(sp)
    return p


#: (command, the flag that picks a mode, the flags that mode does not read): given together,
#: the second is refused rather than silently ignored
IGNORED_WITH = (
    ("mfu", "flops_per_token", ("model", "model_config", "layers", "hidden", "heads", "kv_heads",
                                "ffn_hidden", "gated_ffn", "vocab")),
    ("checkpoint", "mtbf_h", ("gpus", "nodes", "gpus_per_node", "failures_per_1000_gpu_days",
                              "node_failures_per_1000_node_days", "failure_rate", "gpu")),
    ("spot", "lost_hours_per_preemption", ("checkpoint_interval_s", "checkpoint_s")),
)
#: (commands, flag, whether the call reads it, why not): a flag the call does not read is
#: refused rather than silently ignored
NEEDS = (
    (("memory", "predict"), "first_stage_layers", lambda a: (a.pp or 1) > 1,
     "--first-stage-layers needs --pp above 1 (one stage holds every layer)"),
    (("memory", "predict"), "last_stage_layers", lambda a: (a.pp or 1) > 1,
     "--last-stage-layers needs --pp above 1 (one stage holds every layer)"),
    (("memory", "predict"), "interleave", lambda a: (a.pp or 1) > 1,
     "--interleave needs --pp above 1 (virtual stages split a pipeline stage)"),
    (("memory",), "lora_rank", lambda a: a.finetune == "lora",
     "--lora-rank is used only with --finetune lora"),
    (("checkpoint",), "gpus_per_node",
     lambda a: a.nodes is not None or a.node_failures_per_1000_node_days is not None,
     "--gpus-per-node is used only with --nodes or --node-failures-per-1000-node-days"),
    (("checkpoint",), "gpu",
     lambda a: a.failure_rate is None and a.failures_per_1000_gpu_days is None
     and a.node_failures_per_1000_node_days is None,
     "--gpu picks the default failure rate of its generation: not used with a failure rate "
     "given"),
    (("check",), "gpu", lambda a: a.nccl_tests is not None,
     "--gpu is the nccl-tests hardware: used only with --nccl-tests (a training log's GPU "
     "is the query's gpu=)"),
    (("check",), "fabric", lambda a: a.nccl_tests is not None and a.gpu is not None,
     "--fabric goes with --nccl-tests and --gpu (with --query alone the fabric is its fabric=)"),
    (("check",), "nccl_op", lambda a: a.nccl_tests is not None,
     "--nccl-op is used only with --nccl-tests"),
    (("check",), "nodes", lambda a: a.nccl_tests is not None,
     "--nodes is the nccl-tests placement: used only with --nccl-tests"),
    (("check",), "gpus_per_node", lambda a: a.nccl_tests is not None,
     "--gpus-per-node is the nccl-tests placement: used only with --nccl-tests"),
    (("check",), "nics_per_node", lambda a: a.nccl_tests is not None,
     "--nics-per-node is the nccl-tests fabric: used only with --nccl-tests"),
    (("check",), "model", lambda a: a.train_log is not None,
     "--model is the training log's model: used only with --train-log"),
    (("check",), "model_config", lambda a: a.train_log is not None,
     "--model-config is the training log's model: used only with --train-log"),
    (("check",), "query",
     lambda a: a.train_log is not None or (a.nccl_tests is not None and a.gpu is None),
     "--query is read for --train-log, or for --nccl-tests without --gpu (with --gpu the "
     "hardware is --gpu's)"),
    (("spot",), "billed_share_during_wait", lambda a: bool(a.capacity_wait_h),
     "--billed-share-during-wait is used only with --capacity-wait-h above 0"),
    (("spot",), "failure_lost_hours",
     lambda a: bool(a.failures_per_day or a.on_demand_failures_per_day),
     "--failure-lost-hours is used only with --failures-per-day above 0"),
)
#: the MoE flags: refused for a dense model, which has no router or experts to read them
MOE_ONLY = ("moe_load_imbalance", "moe_overlap", "moe_a2a_overlap", "moe_probs_at", "ep", "etp")
#: numeric flags whose range includes negative values (a saving can be a loss)
NEGATIVE_OK = {"observed_net_savings"}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _typed(parser, a) -> list:
    """The optional flags of ``a.command`` given a value other than their default, by dest."""
    sub = parser._subparsers._group_actions[0].choices[a.command]
    return [x.dest for x in sub._actions
            if x.option_strings and x.dest not in ("help", "json")
            and getattr(a, x.dest, None) != x.default]


def _check_flags(parser, a) -> list:
    """Refuse a flag the chosen mode ignores (naming both flags). Returns the flags given."""
    typed = _typed(parser, a)
    for command, mode, ignored in IGNORED_WITH:
        if a.command == command and mode in typed:
            for dest in ignored:
                if dest in typed:
                    raise v.InputError(dest, f"{_flag(dest)} is not used with {_flag(mode)}: give "
                                             "one or the other")
    if a.command == "spot" and "run_hours" in typed and not a.monte_carlo_runs:
        raise v.InputError("run_hours", "--run-hours is used only with --monte-carlo-runs")
    for commands, dest, reads, why in NEEDS:
        if a.command in commands and dest in typed and not reads(a):
            raise v.InputError(dest, why)
    a.typed = typed
    return typed


def _refuse_moe_flags(a, m) -> None:
    """A dense model reads none of the MoE flags: each one given is refused."""
    if not m.is_moe:
        for dest in MOE_ONLY:
            if dest in getattr(a, "typed", ()):
                raise v.InputError(dest, f"{_flag(dest)} applies to MoE models; {m.id} is dense")


def _check_ranges(a, typed) -> None:
    """Refuse a numeric flag out of range whether or not the mode read it: finite, and not
    negative but where a negative value means something. Run after the command, so that a
    flag it reads is refused by its own, narrower check first."""
    for dest in typed:
        x = getattr(a, dest)
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            if dest in NEGATIVE_OK:
                v.as_float(_flag(dest), x)
            else:
                v.nonnegative(_flag(dest), x)


def _named(msg: str, e, a, typed) -> str:
    """The error line naming a flag the user gave: the flag of the parameter the error names
    (prefixed if the message does not say it), else the flags given."""
    param = getattr(e, "param", None)
    if a is None or not typed or param == "arguments":
        return msg
    if param in typed:
        flag = _flag(param)
        return msg if flag in msg else f"{flag}: {msg}"
    if a.command in ("review", "storage") and param in SCENARIO_FIELDS and param in msg:
        return msg
    if any(_flag(d) in msg for d in typed):
        return msg
    return f"{msg} (from {', '.join(_flag(d) for d in typed[:6])})"


def _extreme(a, typed) -> str:
    """The numeric flags given, farthest from 1 in decades first (the likeliest to take the
    arithmetic out of range), as the user typed them; "their ranges" if none."""
    nums = [(d, getattr(a, d)) for d in typed if isinstance(getattr(a, d), (int, float))
            and not isinstance(getattr(a, d), bool)]
    if not nums:
        return "their ranges"

    def decades(x):
        try:
            y = abs(float(x))
        except OverflowError:               # an integer beyond float's range
            return math.inf
        return abs(math.log10(y or 1e-300)) if math.isfinite(y) else math.inf

    nums.sort(key=lambda dx: -decades(dx[1]))
    return ", ".join(f"{_flag(d)}={str(x)[:24]}" for d, x in nums[:3])


def _print_result(a, result) -> None:
    """Print a command's result: JSON with --json, else its text view."""
    if a.json:
        print(json.dumps(result, default=_json_default))
    elif a.command == "review" and "compared" in result:
        print("\n\n".join(f"scenario {label}\n" + _review_text(r)
                           for label, r in result["scenarios"].items()))
    elif a.command == "review":
        print(_review_text(result))
    elif a.command == "check":
        print(_check_text(result))
    elif a.command == "compare":
        print(_compare_text(result))
    elif a.command == "mfu" and any(f["code"] == "above-peak" for f in result["findings"]):
        # above the peak is no utilization: the text says so, never a figure over 100%
        u = result["effective_utilization"]
        print(_table({**result, "effective_utilization": f"above the peak ({u:.3g} x): "
                                                         "check the figures"}))
    elif a.command == "list":
        import pandas as pd
        df = pd.DataFrame(result["rows"])
        # the text view: the columns that identify a row (--json has every column)
        keep = LIST_TEXT_COLUMNS.get(result["table"])
        if keep:
            df = df[[c for c in keep if c in df]]
        print(df.to_string(index=False))
    else:
        text = _table({k: x for k, x in result.items() if k != "breakdown_s"}) \
            if a.command == "predict" else _table(result)
        print(text + (_predict_notes(result) if a.command == "predict" else ""))


def main(argv=None) -> int:
    parser = build_parser()
    a, typed = None, []
    try:
        a = parser.parse_args(argv)
        typed = _check_flags(parser, a)
        # numpy would print a RuntimeWarning and carry on with inf/nan or a wrapped integer;
        # raised, it becomes the one error line below (valid inputs never trigger these)
        with np.errstate(over="raise", divide="raise", invalid="raise"):
            result = _with_model_notes(a, a.func(a))
        _check_ranges(a, typed)
        _finite(result)
    except ValueError as e:  # InputError included
        msg = _named(" ".join(str(e).split()), e, a, typed)
        if len(msg) > 500:
            msg = msg[:500] + "..."
        print(f"llmcost: error: {msg}", file=sys.stderr)
        return 2
    except FloatingPointError as e:
        print(f"llmcost: error: the inputs take the arithmetic out of range ({e}); check "
              f"{_extreme(a, typed)}", file=sys.stderr)
        return 2
    except (ArithmeticError, MemoryError) as e:   # OverflowError, ZeroDivisionError
        print(f"llmcost: error: a value is too large to compute with ({type(e).__name__}); "
              f"check {_extreme(a, typed)}", file=sys.stderr)
        return 2
    try:
        _print_result(a, result)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader closed the pipe (`llmcost review ... | head`): stop quietly, as Unix
        # tools do, with stdout pointed at devnull so the interpreter's final flush is silent
        # (the recipe of the Python signal module's documentation, "Note on SIGPIPE")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
