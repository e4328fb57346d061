"""``llmcost memory``: per-GPU memory of a layout, by component."""

from __future__ import annotations

import argparse

from .. import _validate as v
from .. import catalog
from ..planning import planner
from ..training import flops as fl
from ..training import memory as mem
from ..training import stacks
from ..training.layout import Layout
from .common import (
    _add_model_args,
    _add_recipe_args,
    _add_stage_args,
    _has_model,
    _model_from_args,
    _recipe_memory_options,
    _refuse_moe_flags,
)


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
        lay = Layout(gpus=a.gpus, tp=a.tp, pp=a.pp, cp=a.cp, zero_stage=a.zero,
                     micro_batch=a.micro_batch, global_batch=a.global_batch,
                     recompute=a.recompute, sequence_parallel=a.sequence_parallel,
                     flash_attention=not a.no_flash_attention, interleave=a.interleave,
                     first_stage_layers=a.first_stage_layers,
                     last_stage_layers=a.last_stage_layers, ep=a.ep, etp=a.etp,
                     recompute_modules=a.recompute_modules,
                     optimizer_moments=a.optimizer_moments)
        br = mem.memory_per_gpu(m, lay, _recipe_memory_options(
            a, optimizer=a.optimizer, finetune=a.finetune, lora_rank=a.lora_rank),
            stack=a.stack)
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
