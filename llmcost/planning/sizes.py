"""The cluster sizes sizing tries, and at each the fastest layout that fits, found in one
vectorized pass over every (size, batch, layout) the planner's rules allow.

The global batch may move a little at each size so that it splits evenly
(:data:`BATCH_TOLERANCE`); each layout is tried with the memory recipes of the space in order
and predicted with the first that fits, so a size's first row is the layout
:func:`llmcost.planning.planner.plan` ranks first there.

References
----------
1. Narayanan et al. 2021, arXiv:2104.04473, §3 (the layout rules) and §5.1.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _validate as v
from ..training.hardware import Hardware
from ..training.layout import Layout
from ..training.memory import MemoryOptions, memory_per_gpu
from ..training.step import predict_step
from . import planner

if TYPE_CHECKING:
    from ..training.arch import ModelSpec
    from ..training.hardware import FabricSpec, GPUSpec
    from ..training.step import Options

#: A size may move the global batch by at most this share to split it evenly [-].
BATCH_TOLERANCE = 0.05


def candidate_sizes(gpus_per_node: int, max_nodes: int) -> np.ndarray:
    """Cluster sizes sizing tries [GPUs]: every node count up to 256, then a 2% geometric
    grid to ``max_nodes`` with the round counts teams build among it (2^k x 1, 1.25, 1.5 and
    1.75 nodes: 1,024, 1,280, 1,536, 1,792 ...), on which a power-of-two batch splits over
    many layouts; the geometric points alone are odd counts (1,248 nodes = 2^5 x 39) that a
    batch of 2^k sequences splits only with deep pipelines.

    Parameters
    ----------
    gpus_per_node : int
    max_nodes : int

    Returns
    -------
    gpus : int array
        Ascending [-].

    References
    ----------
    .. [1] "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud):
       sizing by whole nodes.
    """
    node = int(v.integer("gpus_per_node", gpus_per_node))
    n = int(v.integer("max_nodes", max_nodes))
    octaves = 2 ** np.arange(8, max(8, int(n).bit_length()) + 1)
    rounds = (octaves[:, None] * np.array([4, 5, 6, 7])[None, :] // 4).ravel()
    nodes = np.unique(np.concatenate([np.arange(1, min(256, n) + 1),
                                      np.round(np.geomspace(1, n, 400)), rounds[rounds <= n],
                                      [n]])).astype(int)
    return nodes * node


def _recipe_memory_gb(model: ModelSpec, gpu: GPUSpec, L: dict[str, np.ndarray], s: int, space: planner.Space,
                      options: Options, precision: str, mods: tuple[str, ...], moments: str,
                      memory: MemoryOptions = MemoryOptions()) -> np.ndarray:
    """Peak memory per GPU [GB] of the layouts ``L`` with one memory recipe."""
    mo = memory
    if model.is_moe and mo.moe_capacity_factor is None:
        mo = replace(mo, moe_capacity_factor=options.moe_load_imbalance)
    layout = planner.recipe_layout(L, L["global_batch"], space, precision, mods, moments)
    mem = memory_per_gpu(model, layout, mo, seq_len=s, generation=gpu.generation,
                         stack=options.stack)
    return np.asarray(mem.total_bytes) / 1e9


def _fitting_predictions(model: ModelSpec, gpu: GPUSpec, scale_up: FabricSpec, scale_out: FabricSpec,
                         L: dict[str, np.ndarray], s: int, space: planner.Space, options: Options, precision: str,
                         memory: MemoryOptions = MemoryOptions()) -> tuple[dict[str, np.ndarray] | None, int]:
    """Each layout of ``L`` with the first memory recipe it fits with, in the order of
    ``space.recompute_modules`` x ``space.optimizer_moments`` (none recomputed by name and
    FP32 moments first: for one layout the first that fits is the fastest and the simplest,
    as the planner ranks them), predicted once; and how many (layout, recipe) pairs were
    evaluated."""
    recipes = [(tuple(m), o) for m in space.recompute_modules for o in space.optimizer_moments]
    n = len(L["tp"])
    chosen = np.full(n, -1)
    memory_gb = np.full(n, np.nan)
    evaluated = 0
    for j, (mods, moments) in enumerate(recipes):
        todo = np.flatnonzero(chosen < 0)
        if len(todo) == 0:
            break
        sub = {key: a[todo] for key, a in L.items()}
        gb = _recipe_memory_gb(model, gpu, sub, s, space, options, precision, mods, moments,
                               memory)
        evaluated += len(todo)
        fit = gb * 1e9 <= gpu.memory_bytes
        chosen[todo[fit]] = j
        memory_gb[todo[fit]] = gb[fit]
    parts = []
    for j, (mods, moments) in enumerate(recipes):
        rows = np.flatnonzero(chosen == j)
        if len(rows) == 0:
            continue
        P = {key: a[rows] for key, a in L.items()}
        P["memory_gb"] = memory_gb[rows]
        layout = planner.recipe_layout(P, P["global_batch"], space, precision, mods, moments)
        pred = predict_step(model, Hardware(gpu, scale_up, scale_out), layout, options=options,
                            memory=memory, seq_len=s,
                            with_scaling=False)
        P["tokens_per_s"] = np.asarray(pred.tokens_per_s)
        P["step_time_s"] = np.asarray(pred.step_time_s)
        P["mfu"] = np.asarray(pred.mfu)
        P["pp_bubble_s"] = np.asarray(pred.pp_bubble_s)
        P["recompute_modules"] = np.full(len(rows), ",".join(mods), dtype=object)
        P["optimizer_moments"] = np.full(len(rows), moments, dtype=object)
        parts.append(P)
    if not parts:
        return None, evaluated
    return {key: np.concatenate([q[key] for q in parts]) for key in parts[0]}, evaluated


def _evaluate_sizes(model: ModelSpec, gpu: GPUSpec, scale_up: FabricSpec, scale_out: FabricSpec, gpus: np.ndarray,
                    B: int, s: int, space: planner.Space, options: Options, precision: str = "bf16",
                    simplest_within: float = 0.0, memory: MemoryOptions = MemoryOptions(),
                    memory_margin: float = 0.0) -> tuple[dict[str, np.ndarray] | None, dict[str, Any]]:
    """Per size, the fastest fitting layout over the batches within BATCH_TOLERANCE of B.

    One vectorized pass: structural layouts (t, p, c, b, v) per size, the batches they
    round B to, every (size, batch) pair joined with the structural layouts that split that
    batch, expanded by ZeRO, recomputation and SP, memory first, then step time of the
    fitting ones.
    """
    # layouts reach across the scale-up domain (as in planner.plan); sizes stay whole nodes
    ax = planner.layout_axes(model, gpu.scale_up_domain, space, s)
    k = len(gpus)
    si, t, p, c, b, vv, e, te = (a.ravel() for a in np.meshgrid(
        np.arange(k), ax["tp"], ax["pp"], ax["cp"], ax["micro_batch"], ax["interleave"],
        ax["ep"], ax["etp"], indexing="ij"))
    g = gpus[si]
    # MoE experts fold over the DP x TP x CP ranks of a stage (dense: e = t_e = 1)
    ok = (g % (t * p * c) == 0) & ((g // p) % (e * te) == 0)
    ok &= planner.interleave_valid(model, p, vv, space)
    si, t, p, c, b, vv, g, e, te = (a[ok] for a in (si, t, p, c, b, vv, g, e, te))
    dp = g // (t * p * c)
    unit = b * dp * np.where(vv > 1, p, 1)
    Bc = np.maximum(np.round(B / unit), 1).astype(np.int64) * unit
    near = np.abs(Bc / B - 1) <= BATCH_TOLERANCE
    pairs = np.unique(np.stack([si[near], Bc[near]], axis=1), axis=0) if near.any() else \
        np.zeros((0, 2), dtype=np.int64)
    empty = dict(days_key=None)
    if len(pairs) == 0:
        return None, empty
    # join each (size, batch) pair with the structural layouts of that size
    order = np.argsort(si, kind="stable")
    si, t, p, c, b, vv, g, dp, e, te = (a[order] for a in (si, t, p, c, b, vv, g, dp, e, te))
    start = np.searchsorted(si, np.arange(k))
    count = np.searchsorted(si, np.arange(k), side="right") - start
    pc = count[pairs[:, 0]]
    rep = np.repeat(np.arange(len(pairs)), pc)
    offs = np.arange(len(rep)) - np.repeat(np.cumsum(pc) - pc, pc)
    j = start[pairs[rep, 0]] + offs
    BB = pairs[rep, 1]
    # then the axes that do not change which batches split
    rec = ax["recompute"]
    grids = np.meshgrid(np.arange(len(j)), ax["zero_stage"], np.arange(len(rec)),
                        ax["sequence_parallel"], ax["flash_attention"], ax["tp_comm_overlap"],
                        indexing="ij")
    J, Z, R, SP, FA, TO = (a.ravel() for a in grids)
    jj = j[J]
    L = dict(si=si[jj], gpus=g[jj], tp=t[jj], pp=p[jj], cp=c[jj], micro_batch=b[jj],
             interleave=vv[jj], global_batch=BB[J], zero_stage=Z, recompute=rec[R],
             sequence_parallel=SP, flash_attention=FA, tp_comm_overlap=TO, ep=e[jj],
             etp=te[jj])
    # the rules on one Layout whose fields run along their own axis of the grid (each
    # checked once at its own length), broadcast to the grid and flattened as it is
    col, sp_axis, to_axis = (np.reshape(a, [-1 if i == k else 1 for i in range(6)]) for k, a in (
        (0, np.arange(len(j))), (3, ax["sequence_parallel"]), (5, ax["tp_comm_overlap"])))
    jc = j[col]
    grid = Layout(gpus=g[jc], tp=t[jc], pp=p[jc], cp=c[jc], micro_batch=b[jc],
                  global_batch=BB[col], interleave=vv[jc], sequence_parallel=sp_axis,
                  tp_comm_overlap=to_axis)
    ok, dp, m = (np.broadcast_to(x, grids[0].shape).ravel()
                 for x in planner.layout_valid(model, grid, space, gpu.scale_up_domain))
    L = {key: a[ok] for key, a in L.items()}
    L["dp"], L["num_microbatches"] = dp[ok], m[ok]
    if len(L["tp"]) == 0:
        return None, empty
    fitted, evaluated = _fitting_predictions(model, gpu, scale_up, scale_out, L, s, space, options,
                                             precision, memory)
    if fitted is None:
        return None, dict(evaluated=evaluated)
    L = fitted
    # the planner's order within a batch (step time, memory, cp, interleave, ZeRO, TP),
    # throughput across batches: the first row of each size is the plan's best there
    key = np.lexsort((L["tp"], L["zero_stage"], L["interleave"], L["cp"], L["memory_gb"],
                      -L["tokens_per_s"], L["si"]))
    if simplest_within > 0:
        # as planner.plan(simplest_within=..., memory_margin=...): among the layouts within
        # that share of each size's fastest, those leaving the margin free, then the fewest
        # parallel dimensions, then the fastest of those
        best_tps = np.zeros(len(gpus))
        np.maximum.at(best_tps, L["si"], L["tokens_per_s"])
        near = L["tokens_per_s"] * (1 + simplest_within) >= best_tps[L["si"]]
        dims = np.where(near, planner.parallel_dimensions(L), 99)
        # (rows beyond the band count as tight: they stay behind every row within it)
        tight = ~near | planner.memory_tight(L["memory_gb"], gpu.memory_bytes / planner.GB,
                                             memory_margin)
        key = np.lexsort((L["tp"], L["zero_stage"], L["interleave"], L["cp"], L["memory_gb"],
                          -L["tokens_per_s"], dims, tight, L["si"]))
    first = key[np.r_[True, L["si"][key][1:] != L["si"][key][:-1]]]
    return {name: a[first] for name, a in L.items()}, dict(evaluated=evaluated)
