"""``llmcost plan``: every layout evaluated and ranked, and why the runners-up lose."""

from __future__ import annotations

import argparse
import time

from .. import _validate as v
from ..planning import planner
from ..training import step as step_mod
from .common import _add_layout_common, _add_stage_args, _hardware, _model_from_args, _options, _refuse_moe_flags

#: most layouts `plan` prints: each is ~1 kB of JSON, and the library gives them all
PLAN_MAX_TOP = 100


def cmd_plan(a) -> dict:
    top_n = int(v.integer("top", a.top, 1, PLAN_MAX_TOP))
    m = _model_from_args(a)
    _refuse_moe_flags(a, m)
    hardware = _hardware(a)
    gpu, out = hardware.gpu, hardware.scale_out
    space = planner.Space(max_tp=a.max_tp, first_stage_layers=a.first_stage_layers,
                          last_stage_layers=a.last_stage_layers,
                          ep=tuple(a.ep) if a.ep else (), etp=tuple(a.etp) if a.etp else (1,))
    t0 = time.perf_counter()
    search = planner.Search(space, precision=a.precision, heuristic=a.heuristic,
                            rank_by="cost" if a.rank_by == "cost" else "time",
                            usd_per_gpu_hour=a.usd_per_gpu_hour)
    P = planner.plan(m, hardware, a.gpus, a.global_batch, search, _options(a))
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
        H = planner.plan(m, hardware, a.gpus, a.global_batch,
                         planner.Search(space, precision=a.precision, heuristic="seed"),
                         _options(a))
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
