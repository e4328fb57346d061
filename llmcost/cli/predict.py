"""``llmcost predict``: step time, MFU/HFU and memory of one layout, term by term."""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..planning import planner
from ..training import flops as fl
from ..training import memory as mem
from ..training import step as step_mod
from ..training.layout import Layout
from .common import (
    _add_layout_common,
    _add_recipe_args,
    _add_stage_args,
    _hardware,
    _model_from_args,
    _options,
    _recipe_memory_options,
    _refuse_moe_flags,
)


def _fit_reason(total_gb, cap_gb, parts) -> str:
    big = max(parts, key=parts.get)
    return (f"needs {total_gb:.1f} GB per GPU, {cap_gb:.1f} GB available; largest part: "
            f"{big.replace('_gb', '')} {parts[big]:.1f} GB")


def cmd_predict(a) -> dict:
    m = _model_from_args(a)
    _refuse_moe_flags(a, m)
    hardware = _hardware(a)
    gpu, out = hardware.gpu, hardware.scale_out
    lay = Layout(gpus=a.gpus, tp=a.tp, pp=a.pp, interleave=a.interleave, cp=a.cp, ep=a.ep,
                 etp=a.etp, micro_batch=a.micro_batch, global_batch=a.global_batch,
                 zero_stage=a.zero, recompute=a.recompute, sequence_parallel=a.sequence_parallel,
                 flash_attention=not a.no_flash_attention, tp_comm_overlap=a.tp_comm_overlap,
                 first_stage_layers=a.first_stage_layers, last_stage_layers=a.last_stage_layers,
                 precision=a.precision, recompute_modules=a.recompute_modules,
                 optimizer_moments=a.optimizer_moments)
    p = step_mod.predict_step(m, hardware, lay, options=_options(a),
                              memory=_recipe_memory_options(a))
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


def _predict_notes(result: dict) -> str:
    lines = ["", "step time, term by term:"]
    total = result["step_time_s"]
    for k, x in result["breakdown_s"].items():
        lines.append(f"  {k:<12} {x:>10.4g} s  {x / total:>6.1%}  "
                     f"{step_mod.STEP_TERMS[k].explanation}")
    return "\n".join(lines)


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
