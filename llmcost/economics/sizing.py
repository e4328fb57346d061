"""Cluster sizing backward from a target time, and the fine-tuning ladder.

Sizing follows the scaling article [1]: total compute over per-GPU throughput adjusted for scaling
efficiency, plus headroom; here the throughput at each cluster size comes from the step-time
model (the global batch stays fixed, so the pipeline bubble and communication grow as GPUs
are added), and the memory floor (fewest GPUs on which the model fits) bounds it below.
Every cluster size gets the layouts valid at that size (the planner's own rules and space),
so the days sizing shows for a size are the days a plan of that size gives. No size meeting
the target is an answer (the nearest options), as is a batch too small for its pipeline
(:func:`batch_advice`) and a facility power envelope that binds.

References
----------
1. "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud): "size from
   the target training time backward: estimate the total compute required, divide by per-GPU
   throughput adjusted for scaling efficiency, and add headroom".
2. "LLM Training Infrastructure" (an infrastructure overview): LoRA of 7-13B on one node of
   eight accelerators, QLoRA on one card; fine-tunes cost hundreds to low thousands of dollars,
   pretraining seven figures.
3. Narayanan et al. 2021, arXiv:2104.04473, §5.1 (training time ~ 8 T P / (n X)).
4. E. Hu et al., arXiv:2106.09685, §4.2 (LoRA needs no gradients for frozen weights).
5. Llama Team 2024, "The Llama 3 Herd of Models", arXiv:2407.21783, §3.4.1 and Table 4
   (16M tokens per batch for 405B).
6. Dettmers et al. 2023, arXiv:2305.14314 (QLoRA: NF4 base weights).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .. import _validate as v
from ..training import planner
from ..training.arch import ModelSpec
from ..training.flops import chinchilla_optimal_tokens
from ..training.hardware import FabricSpec, GPUSpec
from ..training.layout import layout_columns
from ..training.memory import memory_per_gpu
from ..training.precision import PRECISIONS, check_precision
from ..training.step import Options, predict_step

SECONDS_PER_DAY = 86400.0


def days_from_efficiency(days_a, efficiency_a, efficiency_b):
    r"""Days on fabric B implied by days on A and the two scaling efficiencies (same job).

    .. math:: t_B = t_A\, \epsilon_A / \epsilon_B

    The cluster guide's 18 days on InfiniBand at 98% give 24.8 days on RoCE at 71%, not its 43.

    Parameters
    ----------
    days_a : float or array
        [days].
    efficiency_a, efficiency_b : float or array
        [-], in (0, 1].

    Returns
    -------
    days_b : float or array
        [days].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026): "18
       days instead of 43 on the RoCE setup".
    """
    return v.result(v.positive("days_a", days_a) * v.fraction("efficiency_a", efficiency_a)
                    / v.fraction("efficiency_b", efficiency_b))


def efficiency_from_days(days_a, efficiency_a, days_b):
    r"""Efficiency on fabric B that days on A and on B imply (same job and GPUs).

    .. math:: \epsilon_B = \epsilon_A\, t_A / t_B

    The cluster guide's 18 vs 43 days with IB at 98% imply RoCE at 41%, not the 71% it
    measured.

    Parameters
    ----------
    days_a : float or array
        [days].
    efficiency_a : float or array
        [-].
    days_b : float or array
        [days].

    Returns
    -------
    efficiency_b : float or array
        [-].

    References
    ----------
    .. [1] N. Dixit, "GPU Clusters for LLM Training: A Builder's Guide" (SIVARO, 2026).
    """
    return v.result(v.fraction("efficiency_a", efficiency_a) * v.positive("days_a", days_a)
                    / v.positive("days_b", days_b))


def memory_floor_gpus(model: ModelSpec, gpu: GPUSpec, candidates, seq_len=None, **mem_kw):
    """Fewest GPUs (from ``candidates``) on which some layout fits in memory.

    Layouts tried: every TP up to a node and PP dividing the layers, ZeRO 1 and 3, full
    recomputation, sequence parallelism, flash attention, micro-batch 1.

    Parameters
    ----------
    model : ModelSpec
    gpu : GPUSpec
    candidates : array of int
        GPU counts to try, ascending [-].
    seq_len : int, optional
    **mem_kw
        Passed to :func:`llmcost.training.memory.memory_per_gpu`.

    Returns
    -------
    gpus : int or None
        [-]; None when nothing fits up to the largest candidate.

    References
    ----------
    .. [1] Rajbhandari et al. 2019 (ZeRO-3 shards everything); Korthikanti et al. 2022.
    """
    c = np.unique(v.integer("candidates", candidates))
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= gpu.scale_up_domain and model.heads % t == 0
           and (model.kv_heads % t == 0 or t % model.kv_heads == 0)]
    pps = [p for p in range(1, model.layers + 1) if model.layers % p == 0]
    g, t, p, z, sp = (a.ravel() for a in np.meshgrid(c, tps, pps, (1, 3), (True, False),
                                                     indexing="ij"))
    ok = (g % (t * p) == 0) & (sp <= (t > 1))
    if not ok.any():
        return None
    g, t, p, z, sp = g[ok], t[ok], p[ok], z[ok], sp[ok]
    m = memory_per_gpu(model, gpus=g, tp=t, pp=p, cp=1, zero_stage=z, micro_batch=1,
                       global_batch=None, recompute="full", sequence_parallel=sp,
                       flash_attention=True, seq_len=seq_len, **mem_kw)
    fits = np.asarray(m.total_bytes) <= gpu.memory_bytes
    if not fits.any():
        return None
    return int(np.min(g[fits]))


#: The layouts sizing may choose from at every cluster size: every TP/PP, the common choices
#: of the rest. The review chain plans with the same space, so the layout sizing picks for a
#: size is the one the review's plan picks there (same days, by construction).
SIZING_SPACE = planner.Space(cp=(1, 2), micro_batch=(1, 2), zero_stage=(1, 3),
                             recompute=("none", "selective", "full"), interleave=(1, 2, 4),
                             flash_attention=(True,), tp_comm_overlap=(False,))
#: A size may move the global batch by at most this share to split it evenly [-].
BATCH_TOLERANCE = 0.05
#: Pipeline bubble above which the batch is too small for the pipeline [-]: (p-1)/(v m).
BUBBLE_LIMIT = 0.10
#: Power usage effectiveness by default [-]: Uptime Institute Global Data Center Survey
#: 2023, industry average 1.58 (hyperscale sites reach 1.1-1.2).
DEFAULT_PUE = 1.58
#: The largest published global batches [tokens per step], by model size [parameters]. A
#: batch advice never proposes more than the largest one published for a model of up to
#: 1.5x the size in question.
PUBLISHED_BATCH_TOKENS = (
    (6.7e9, 2.0e6, "GPT-3 6.7B: 2M tokens (Brown et al. 2020, arXiv:2005.14165, Table 2.1)"),
    (13e9, 2.0e6, "GPT-3 13B: 2M tokens (Brown et al. 2020, arXiv:2005.14165, Table 2.1)"),
    (175e9, 3.2e6, "GPT-3 175B: 3.2M tokens (Brown et al. 2020, arXiv:2005.14165, Table 2.1)"),
    (7e9, 4.0e6, "Llama 2 7B: 4M tokens (Touvron et al. 2023, arXiv:2307.09288, §2.2)"),
    (70e9, 4.0e6, "Llama 2 70B: 4M tokens (Touvron et al. 2023, arXiv:2307.09288, §2.2)"),
    (405e9, 2048 * 8192.0, "Llama 3 405B: 16M tokens, 2,048 sequences of 8,192 (Llama Team "
                           "2024, arXiv:2407.21783, §3.4.1 and Table 4)"),
)


def max_published_batch_tokens(params):
    """The largest published global batch for a model of up to 1.5x ``params``.

    Parameters
    ----------
    params : float
        Model parameters [-].

    Returns
    -------
    tokens : float or None
        [tokens per step]; None when no published run is that small.
    source : str
        The run and its reference.

    References
    ----------
    .. [1] Brown et al. 2020, arXiv:2005.14165, Table 2.1; Touvron et al. 2023,
       arXiv:2307.09288, §2.2; Llama Team 2024, arXiv:2407.21783, §3.4.1, Table 4.
    """
    n = float(v.positive("params", params))
    runs = [r for r in PUBLISHED_BATCH_TOKENS if r[0] <= 1.5 * n]
    if not runs:
        return None, ""
    best = max(runs, key=lambda r: (r[1], r[0]))
    return best[1], best[2]


@dataclass(frozen=True)
class BatchAdvice:
    """Whether the global batch leaves a pipeline too few micro-batches, and the fixes."""

    bubble_share: float             # (p-1)/(v m) [-]
    limit: float                    # [-]
    too_small: bool                 # bubble_share > limit
    num_microbatches: int           # m per replica per step [-]
    pp: int
    interleave: int
    global_batch: int               # [sequences]
    max_batch_tokens: float | None  # the stated maximum [tokens]
    max_batch_source: str
    message: str = ""               # the bubble, in one sentence with its numbers
    proposals: tuple = ()           # the fixes, each a sentence with its numbers


def _interleave_options(layers: int, p: int) -> list[int]:
    # Megatron needs the layers per stage to split into v chunks; with uneven stages (p not
    # dividing the layers) any v up to the layers per stage is offered.
    if p <= 1:
        return []
    per = layers // p
    if layers % p == 0:
        return [x for x in range(2, per + 1) if per % x == 0]
    return list(range(2, per + 1))


def batch_advice(model: ModelSpec, gpu: GPUSpec | None, pp, interleave, num_microbatches,
                 micro_batch, dp, seq_len=None, max_batch_tokens=None,
                 limit=BUBBLE_LIMIT) -> BatchAdvice:
    r"""Is the pipeline bubble of a layout above ``limit``, and what would fix it?

    .. math:: \beta = \frac{p - 1}{v\, m},\qquad B = m\, b\, d

    Three fixes are sized, each with its numbers: deeper interleaving (the smallest v with
    beta <= limit; interleaving needs m a multiple of p), less pipeline parallelism at the
    same GPUs (d grows by p/p', so m shrinks with it: beta' = p (p'-1) / (v m p')), and a
    larger global batch, up to the largest published for the model size (or
    ``max_batch_tokens``).

    Parameters
    ----------
    model : ModelSpec
        Its layers bound the interleaving; its size picks the largest published batch.
    gpu : GPUSpec or None
        Named where a fix needs the model to fit in memory.
    pp, interleave : int
        p, v [-].
    num_microbatches : int
        m per pipeline per step [-].
    micro_batch, dp : int
        b [sequences], d [-].
    seq_len : int, optional
        [tokens]; default the model's.
    max_batch_tokens : float, optional
        The largest batch to propose [tokens]; overrides the published one.
    limit : float
        [-], in (0, 1).

    Returns
    -------
    BatchAdvice
        ``message`` says the bubble; ``proposals`` the fixes (empty within the limit).

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §2.2.1-2.2.2 (bubble (p-1)/m, and
       (p-1)/(v m) interleaved; m a multiple of p).
    .. [2] Llama Team 2024, arXiv:2407.21783, §3.4.1 and Table 4 (16M tokens per batch).
    """
    L = model.layers
    p = int(v.integer("pp", pp))
    vv = int(v.integer("interleave", interleave))
    m = int(v.integer("num_microbatches", num_microbatches))
    b = int(v.integer("micro_batch", micro_batch))
    d = int(v.integer("dp", dp))
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    lim = float(v.in_range("limit", limit, 0, 1, low_inclusive=False, high_inclusive=False))
    if max_batch_tokens is not None:
        max_tok, src = float(v.positive("max_batch_tokens", max_batch_tokens)), "given"
    else:
        max_tok, src = max_published_batch_tokens(model.params)
    B = m * b * d
    bubble = (p - 1) / (vv * m)
    advice = dict(bubble_share=bubble, limit=lim, too_small=bubble > lim, num_microbatches=m,
                  pp=p, interleave=vv, global_batch=B, max_batch_tokens=max_tok,
                  max_batch_source=src)
    if bubble <= lim:
        return BatchAdvice(**advice, message=f"pipeline bubble (p-1)/(v m) = {p - 1}/({vv} x "
                                             f"{m}) = {bubble:.1%} of the ideal step, within "
                                             f"{lim:.0%}")
    message = (f"{B:,} sequences over DP {d} x micro-batch {b} leave each pipeline of {p} "
               f"stages {m} micro-batch(es): bubble (p-1)/(v m) = {p - 1}/({vv} x {m}) = "
               f"{bubble:.0%} of the ideal step, above {lim:.0%}")
    out = []
    # deeper interleaving
    opts = _interleave_options(L, p)
    need_v = (p - 1) / (lim * m)
    if not opts:
        out.append(f"deeper interleaving: not possible with PP {p} and {L} layers")
    elif m % p:
        out.append(f"deeper interleaving: needs micro-batches a multiple of PP ({m} is not "
                   f"a multiple of {p}), and v >= {need_v:.3g} for {lim:.0%}")
    else:
        ok = [x for x in opts if x >= need_v]
        if ok:
            out.append(f"deeper interleaving: v = {ok[0]} gives {(p - 1) / (ok[0] * m):.1%}")
        else:
            out.append(f"deeper interleaving: needs v >= {need_v:.3g}; the deepest possible, "
                       f"v = {opts[-1]}, gives {(p - 1) / (opts[-1] * m):.1%}")
    # less pipeline parallelism, same GPUs: d' = d p / p'
    fixes = []
    for q in range(p - 1, 0, -1):
        if (d * p) % q or (L % q and L % p == 0):
            continue
        d2 = d * p // q
        if B % (b * d2):
            continue
        m2 = B // (b * d2)
        if (q - 1) / m2 <= lim:
            fixes.append((q, d2, m2, (q - 1) / m2))
            break
    if fixes:
        q, d2, m2, bq = fixes[0]
        on = f" on {gpu.id}" if gpu is not None else ""
        out.append(f"less PP: PP {q} with DP {d2} ({m2} micro-batches) gives {bq:.1%}, if the "
                   f"model fits{on} with {p / q:g}x the layers per GPU (check with `llmcost "
                   "predict`)")
    else:
        out.append(f"less PP: no smaller PP splits {B:,} sequences with the bubble under "
                   f"{lim:.0%} (fewer stages mean more replicas, so fewer micro-batches each)")
    # a larger global batch, capped
    m_need = int(np.ceil((p - 1) / (vv * lim)))
    B_need = m_need * b * d
    text = (f"a larger batch: {m_need} micro-batches, {B_need:,} sequences = "
            f"{B_need * s / 1e6:.3g}M tokens, bring it to {lim:.0%}")
    if max_tok is None:
        out.append(text + " (no published batch of a model this size to compare with)")
    elif B_need * s <= max_tok:
        out.append(text + f", within the largest published for this size ({src})")
    else:
        m_max = int(max_tok // s // (b * d))
        if m_max >= 1:
            bq = (p - 1) / (vv * m_max)
            deep = [x for x in opts if m_max % p == 0]
            extra = ""
            if deep:
                vx = next((x for x in deep if (p - 1) / (x * m_max) <= lim), deep[-1])
                extra = f"; with interleaving v = {vx}: {(p - 1) / (vx * m_max):.1%}"
            out.append(text + f", above the largest published for this size ({src}); at "
                       f"that maximum, {m_max * b * d:,} sequences, {m_max} micro-batches: "
                       f"{bq:.1%}{extra}")
        else:
            out.append(text + f", above the largest published for this size ({src}), which "
                       f"does not give DP {d} even one micro-batch")
    return BatchAdvice(**advice, message=message, proposals=tuple(out))


@dataclass(frozen=True)
class Nearest:
    """When no size meets the target: what comes closest."""

    fastest_gpus: int | None         # the size that finishes soonest [-]
    fastest_days: float | None       # [days]; also the tightest target any size meets
    fastest_global_batch: int | None  # [sequences]
    fastest_layout: dict | None
    smallest_fitting_gpus: int | None  # fewest GPUs on which a layout fits [-]
    smallest_fitting_days: float | None
    tokens_within_target: float | None  # what the fastest size trains in the target [tokens]


@dataclass
class Sizing:
    gpus: int | None                  # None: no size meets the target (see ``nearest``)
    nodes: int | None
    days: float | None
    meets_target: bool
    mfu: float | None
    layout: dict
    memory_floor_gpus: int | None
    total_flops: float
    tokens: float
    # per candidate size: gpus, days [days] (with the headroom), days_to_train [days]
    # (without it), mfu, fits, layout...
    table: pd.DataFrame
    cost_usd: dict = field(default_factory=dict)
    notes: tuple = ()
    global_batch: int | None = None   # sequences per step at the chosen size (rounded)
    nearest: Nearest | None = None
    batch: BatchAdvice | None = None  # pipeline bubble of the chosen (or fastest) layout
    max_gpus_power: int | None = None  # the power envelope's bound on GPUs [-]
    space: planner.Space = SIZING_SPACE
    #: the size the floor (realized ratio 1) would need for the target [-]; None: none does
    floor_gpus: int | None = None


def candidate_sizes(gpus_per_node: int, max_nodes: int) -> np.ndarray:
    """Cluster sizes sizing tries [GPUs]: every node count up to 256, then a 2% geometric
    grid to ``max_nodes``.

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
    nodes = np.unique(np.concatenate([np.arange(1, min(256, n) + 1),
                                      np.round(np.geomspace(1, n, 400)), [n]])).astype(int)
    return nodes * node


def _recipe_memory_gb(model, gpu, L, s, space, options, precision, mods, moments,
                      memory_kwargs=None):
    """Peak memory per GPU [GB] of the layouts ``L`` with one memory recipe."""
    mk = {**(memory_kwargs or {}), "optimizer_moments": moments}
    if model.is_moe:
        mk.setdefault("moe_capacity_factor", options.moe_load_imbalance)
    mem = memory_per_gpu(model, gpus=L["gpus"], tp=L["tp"], pp=L["pp"], cp=L["cp"],
                         zero_stage=L["zero_stage"], micro_batch=L["micro_batch"],
                         global_batch=L["global_batch"], recompute=L["recompute"],
                         sequence_parallel=L["sequence_parallel"],
                         flash_attention=L["flash_attention"],
                         interleave=L["interleave"], seq_len=s,
                         first_stage_layers=space.first_stage_layers,
                         last_stage_layers=space.last_stage_layers, precision=precision,
                         generation=gpu.generation, ep=L["ep"], etp=L["etp"],
                         recompute_modules=mods, stack=options.stack, **mk)
    return np.asarray(mem.total_bytes) / 1e9


def _fitting_predictions(model, gpu, scale_up, scale_out, L, s, space, options, precision,
                         memory_kwargs=None):
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
                               memory_kwargs)
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
        mk = {**(memory_kwargs or {}), "optimizer_moments": moments}
        pred = predict_step(model, gpu, scale_up, scale_out, gpus=P["gpus"], tp=P["tp"],
                            pp=P["pp"], global_batch=P["global_batch"], cp=P["cp"],
                            micro_batch=P["micro_batch"], interleave=P["interleave"],
                            recompute=P["recompute"],
                            sequence_parallel=P["sequence_parallel"],
                            zero_stage=P["zero_stage"], options=options,
                            seq_len=s, memory_kwargs=mk, with_scaling=False,
                            flash_attention=P["flash_attention"],
                            tp_comm_overlap=P["tp_comm_overlap"],
                            first_stage_layers=space.first_stage_layers,
                            last_stage_layers=space.last_stage_layers, precision=precision,
                            ep=P["ep"], etp=P["etp"], recompute_modules=mods)
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


def _evaluate_sizes(model, gpu, scale_up, scale_out, gpus, B, s, space, options,
                    precision="bf16", simplest_within=0.0, memory_kwargs=None,
                    memory_margin=0.0):
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
    J, Z, R, SP, FA, TO = (a.ravel() for a in np.meshgrid(
        np.arange(len(j)), ax["zero_stage"], np.arange(len(rec)), ax["sequence_parallel"],
        ax["flash_attention"], ax["tp_comm_overlap"], indexing="ij"))
    jj = j[J]
    L = dict(si=si[jj], gpus=g[jj], tp=t[jj], pp=p[jj], cp=c[jj], micro_batch=b[jj],
             interleave=vv[jj], global_batch=BB[J], zero_stage=Z, recompute=rec[R],
             sequence_parallel=SP, flash_attention=FA, tp_comm_overlap=TO, ep=e[jj],
             etp=te[jj])
    ok, dp, m = planner.layout_valid(model, L["gpus"], L["tp"], L["pp"], L["cp"],
                                     L["micro_batch"], L["global_batch"], L["interleave"],
                                     L["sequence_parallel"], L["tp_comm_overlap"],
                                     gpu.scale_up_domain,
                                     first_stage_layers=space.first_stage_layers,
                                     last_stage_layers=space.last_stage_layers)
    L = {key: a[ok] for key, a in L.items()}
    L["dp"], L["num_microbatches"] = dp[ok], m[ok]
    if len(L["tp"]) == 0:
        return None, empty
    L, evaluated = _fitting_predictions(model, gpu, scale_up, scale_out, L, s, space, options,
                                        precision, memory_kwargs)
    if L is None:
        return None, dict(evaluated=evaluated)
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


#: a size's layout (Sizing.layout, the table's columns): Layout's fields with dp, less the
#: GPUs and batch (the size's own), the precision (its input), the stage split (the space's)
#: and the expert sizes (never in ``size``'s layout so far; ``best`` carries them)
LAYOUT_KEYS = layout_columns({"cp": "dp"},
                             drop=("gpus", "global_batch", "precision", "first_stage_layers",
                                   "middle_stage_layers", "last_stage_layers", "ep", "etp"))


def size_cluster(model: ModelSpec, tokens, gpu: GPUSpec, scale_up: FabricSpec,
                 scale_out: FabricSpec, target_days, global_batch_tokens=4_194_304,
                 headroom=0.10, goodput=1.0, usd_per_gpu_hour: dict | None = None,
                 data_stall=0.0,
                 max_nodes=4096, options: Options = Options(flash_attention=True),
                 seq_len=None, space: planner.Space = SIZING_SPACE, max_power_mw=None,
                 power_kw_per_gpu=None, pue=DEFAULT_PUE, max_batch_tokens=None,
                 precision=None, simplest_within=0.0, memory_kwargs=None,
                 memory_margin=0.0, realized_ratio=1.0) -> Sizing:
    r"""GPUs and nodes needed to train ``tokens`` within ``target_days``.

    For every candidate size N (:func:`candidate_sizes`) the layouts of ``space`` valid at
    that size are predicted, with the global batch B held or moved by at most
    :data:`BATCH_TOLERANCE` so that it splits evenly; the fastest that fits gives

    .. math:: t(N) = \hat r\, \frac{D}{\dot D(N)\, G}\,(1 + h)

    and the answer is the smallest N with t(N) <= t_target and, with a facility envelope
    P_max, N w PUE <= P_max. The layout at N is the one :func:`llmcost.training.planner.plan`
    ranks first at N with the same batch and space, so a review of that size shows the same
    days. More days never need more GPUs: the grid and t(N) do not depend on the target.
    Infeasible is an answer: ``gpus`` None, ``meets_target`` False, the nearest options in
    ``nearest`` and why in ``notes``.

    Parameters
    ----------
    model : ModelSpec
    tokens : float or None
        D [tokens]; None: Chinchilla's 20 per parameter.
    gpu, scale_up, scale_out
        Hardware.
    target_days : float
        [days], > 0.
    global_batch_tokens : float
        [tokens per step].
    headroom : float
        h, schedule margin [-], in [0, 1).
    goodput : float or callable
        G [-], from :mod:`llmcost.economics.reliability`; or a function of the GPU count
        (an int array, returning an array of G): more GPUs fail more often, so the review
        passes its reliability model here.
    data_stall : float or callable
        Share of time waiting for data [-]; or a function of (tokens/s, GPUs) arrays: a
        faster cluster reads faster, so the review passes its storage model here. Days are
        divided by G (1 - stall).
    usd_per_gpu_hour : dict of str -> float, optional
        Prices by option name [USD per GPU-hour].
    max_nodes : int
    options : Options
    seq_len : int, optional
    space : planner.Space
        Layouts to choose from (default :data:`SIZING_SPACE`).
    max_power_mw : float, optional
        Facility envelope P_max [MW].
    power_kw_per_gpu : float, optional
        w, system power per GPU at full load [kW] (e.g. DGX H100: 10.2 kW / 8 = 1.275);
        required with ``max_power_mw`` unless the GPU carries ``power_w_per_gpu``.
    pue : float
        [-], in [1, 5]; default 1.58.
    max_batch_tokens : float, optional
        Largest batch the advice may propose [tokens]; default: the largest published for
        the model size.
    precision : {"bf16", "fp8", "mxfp8"}, optional
        GEMM precision of every layout (not searched); None: ``options.precision``.
    simplest_within : float, optional
        At each size, the layout with the fewest parallel dimensions among those within this
        share of the fastest (as :func:`llmcost.training.planner.plan`) [-]; 0: the fastest.
    memory_kwargs : dict, optional
        Options of the memory model for every layout (e.g. ``moe_probs_at``).
        Refused where the GPU cannot run it.
    memory_margin : float, optional
        Within the ``simplest_within`` band, layouts leaving this share of the GPU's memory
        free rank first (as :func:`llmcost.training.planner.plan`) [-], in [0, 1).
    realized_ratio : float, optional
        :math:`\hat r`, what comparable published runs realized over the floor
        (:mod:`llmcost.economics.realized`) [-], > 0; 1: size the floor. The table keeps the
        floor's days beside (``days_floor``) and ``floor_gpus`` is the size the floor would
        need.

    Returns
    -------
    Sizing

    References
    ----------
    .. [1] "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud);
       Narayanan et al. 2021, §5.1.
    .. [2] Uptime Institute, Global Data Center Survey 2023 (PUE 1.58).
    """
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    prec = str(v.choice("precision", options.precision if precision is None else precision,
                        PRECISIONS))
    check_precision(prec, gpu)
    D = float(chinchilla_optimal_tokens(model.params)) if tokens is None else float(v.positive("tokens", tokens))
    target = float(v.positive("target_days", target_days))
    h = float(v.in_range("headroom", headroom, 0, 1, high_inclusive=False))
    node = gpu.gpus_per_node
    B = max(1, int(round(float(v.positive("global_batch_tokens", global_batch_tokens)) / s)))
    max_nodes = int(v.integer("max_nodes", max_nodes))
    PUE = float(v.in_range("pue", pue, 1.0, 5.0))
    cap_gpus, kw = _power_cap(gpu, max_power_mw, power_kw_per_gpu, PUE)
    gpus = candidate_sizes(node, max_nodes)
    nodes = gpus // node
    if callable(goodput):
        G = np.broadcast_to(v.fraction("goodput", goodput(gpus)), gpus.shape)
    else:
        G = np.full(gpus.shape, float(v.fraction("goodput", goodput)))
    total_flops = model.flops_per_token("none", s) * D

    margin = float(v.in_range("memory_margin", memory_margin, 0, 1, high_inclusive=False))
    ratio = float(v.positive("realized_ratio", realized_ratio))
    best, info = _evaluate_sizes(model, gpu, scale_up, scale_out, gpus, B, s, space, options,
                                 prec, simplest_within, memory_kwargs, margin)
    days, train_days, cols, lay = _size_columns(best, gpus, D, G, h, data_stall)
    floor_days = days
    days, train_days = days * ratio, train_days * ratio
    fits = np.isfinite(days)
    in_power = np.ones(len(gpus), bool) if cap_gpus is None else gpus <= cap_gpus
    table = pd.DataFrame({"gpus": gpus, "nodes": nodes, "days": np.where(fits, days, np.nan),
                          "days_to_train": np.where(fits, train_days, np.nan),
                          "days_floor": np.where(fits, floor_days, np.nan), "fits": fits,
                          "within_power": in_power, **cols, **lay})
    if cap_gpus is not None or power_kw_per_gpu is not None:
        table["power_mw"] = gpus * kw * PUE / 1000

    notes = []
    floor = int(gpus[fits][0]) if fits.any() else None
    meets_any = fits & (days <= target)
    meets = meets_any & in_power
    floor_meets = fits & in_power & (floor_days <= target)
    floor_gpus = int(gpus[np.argmax(floor_meets)]) if floor_meets.any() else None

    def layout_at(i):
        return {k: (lay[k][i].item() if hasattr(lay[k][i], "item") else lay[k][i])
                for k in LAYOUT_KEYS}

    def advice_at(i):
        L = layout_at(i)
        m = int(cols["global_batch"][i]) // (L["micro_batch"] * L["dp"])
        return batch_advice(model, gpu, L["pp"], L["interleave"], m, L["micro_batch"],
                            L["dp"], s, max_batch_tokens)

    if cap_gpus is not None:
        notes += _power_notes(cap_gpus, max_power_mw, kw, PUE, node, gpus, days, fits,
                              meets_any, meets, target)

    cost = {}
    if meets.any():
        i = int(np.argmax(meets))
        adv = advice_at(i)
        if adv.too_small:
            notes += [adv.message, *adv.proposals]
        gpu_hours = float(gpus[i] * days[i] * 24)
        for name, price in (usd_per_gpu_hour or {}).items():
            if price is not None:
                cost[name] = gpu_hours * float(v.positive(f"usd_per_gpu_hour[{name}]", price))
        return Sizing(gpus=int(gpus[i]), nodes=int(nodes[i]), days=float(days[i]),
                      meets_target=True, mfu=float(cols["mfu"][i]), layout=layout_at(i),
                      memory_floor_gpus=floor, total_flops=total_flops, tokens=D, table=table,
                      cost_usd=cost, notes=tuple(notes), global_batch=int(cols["global_batch"][i]),
                      nearest=None, batch=adv, max_gpus_power=cap_gpus, space=space,
                      floor_gpus=floor_gpus)

    return replace(_nearest_sizing(model, gpu, gpus, days, train_days, fits, fits & in_power, cols,
                           layout_at, advice_at, notes, floor, total_flops, D, table, target, h,
                           B, max_nodes, info, cap_gpus, space), floor_gpus=floor_gpus)


def _size_columns(best, gpus, D, G, h, data_stall) -> tuple:
    """Per candidate size: days with the schedule headroom (the target's test), days to
    train without it (the review's figure), the best layout's figures and its layout (inf,
    NaN and None where nothing fits)."""
    days = np.full(len(gpus), np.inf)
    train_days = np.full(len(gpus), np.inf)
    cols = {k: np.full(len(gpus), np.nan) for k in ("mfu", "global_batch", "tokens_per_s",
                                                    "memory_gb", "bubble_share")}
    lay = {k: np.full(len(gpus), None, dtype=object) for k in LAYOUT_KEYS}
    if best is not None:
        i = best["si"]
        stall = data_stall(best["tokens_per_s"], gpus[i]) if callable(data_stall) else \
            np.full(len(i), float(data_stall))
        stall = v.fraction("data_stall", stall, allow_zero=True, allow_one=False)
        train_days[i] = D / best["tokens_per_s"] / G[i] / (1 - stall) / SECONDS_PER_DAY
        days[i] = train_days[i] * (1 + h)
        for k in ("mfu", "global_batch", "tokens_per_s", "memory_gb"):
            cols[k][i] = best[k]
        cols["bubble_share"][i] = (best["pp"] - 1) / (best["interleave"]
                                                      * best["num_microbatches"])
        for k in LAYOUT_KEYS:
            lay[k][i] = best[k]
    return days, train_days, cols, lay


def _power_cap(gpu, max_power_mw, power_kw_per_gpu, pue) -> tuple:
    """(the most GPUs within the power envelope or None, kW per GPU or None)."""
    cap_gpus, kw = None, None
    if max_power_mw is not None:
        P = float(v.positive("max_power_mw", max_power_mw))
        if power_kw_per_gpu is None:
            w = getattr(gpu, "power_w_per_gpu", None)
            if w is None:
                raise v.InputError("power_kw_per_gpu", "a power envelope needs the system "
                                   "power per GPU (e.g. DGX H100: 10.2 kW / 8 = 1.275 kW)")
            kw = float(w) / 1000
        else:
            kw = float(v.positive("power_kw_per_gpu", power_kw_per_gpu))
        cap_gpus = int(np.floor(P * 1000 / (kw * pue) + 1e-9))
    elif power_kw_per_gpu is not None:
        kw = float(v.positive("power_kw_per_gpu", power_kw_per_gpu))
    return cap_gpus, kw


def _power_notes(cap_gpus, max_power_mw, kw, pue, node, gpus, days, fits, meets_any, meets,
                 target) -> list:
    """What the power envelope does to the sizing, in words."""
    if cap_gpus < gpus[0]:
        return [f"the power envelope ({max_power_mw:g} MW at {kw:g} kW per GPU and "
                f"PUE {pue:g}) allows {cap_gpus} GPUs, less than one node of {node}"]
    if meets_any.any() and not meets.any():
        need = int(gpus[np.argmax(meets_any)])
        return [f"the power envelope binds: {max_power_mw:g} MW allows {cap_gpus:,} "
                f"GPUs ({kw:g} kW each at PUE {pue:g}); meeting {target:g} days needs "
                f"{need:,} GPUs ({need * kw * pue / 1000:.3g} MW)"]
    if not meets_any.any() and fits.any() and gpus[np.argmin(days)] > cap_gpus:
        return [f"the power envelope binds: {max_power_mw:g} MW allows {cap_gpus:,} "
                f"GPUs; the fastest size, {int(gpus[np.argmin(days)]):,} GPUs, is beyond it"]
    return []


def _nearest_sizing(model, gpu, gpus, days, train_days, fits, ok, cols, layout_at, advice_at,
                    notes, floor, total_flops, D, table, target, h, B, max_nodes, info,
                    cap_gpus, space) -> Sizing:
    """No size meets the target: the nearest options (the fastest size, the fewest GPUs
    that fit), or why nothing fits."""
    if not ok.any():
        if not fits.any():
            why = (f"{model.id} fits in no layout of the space on up to {max_nodes:,} nodes of "
                   f"{gpu.id} with a global batch near {B:,} sequences"
                   if info.get("evaluated") else
                   f"no layout in the space splits a global batch near {B:,} sequences (within "
                   f"{BATCH_TOLERANCE:.0%}) over any size up to {max_nodes:,} nodes of {gpu.id}")
        else:
            why = f"nothing fits within the power envelope ({cap_gpus:,} GPUs)"
        notes.insert(0, why)
        return Sizing(gpus=None, nodes=None, days=None, meets_target=False, mfu=None, layout={},
                      memory_floor_gpus=floor, total_flops=total_flops, tokens=D, table=table,
                      notes=tuple(notes), max_gpus_power=cap_gpus, space=space,
                      nearest=Nearest(
                          fastest_gpus=None, fastest_days=None, fastest_global_batch=None,
                          fastest_layout=None, smallest_fitting_gpus=floor,
                          smallest_fitting_days=(float(days[np.argmax(fits)]) if fits.any()
                                                 else None),
                          tokens_within_target=None))
    f = int(np.argmin(np.where(ok, days, np.inf)))
    sm = int(np.argmax(ok))
    adv = advice_at(f)
    within = D * target / float(days[f])
    nearest = Nearest(fastest_gpus=int(gpus[f]), fastest_days=float(days[f]),
                      fastest_global_batch=int(cols["global_batch"][f]),
                      fastest_layout=layout_at(f), smallest_fitting_gpus=int(gpus[sm]),
                      smallest_fitting_days=float(days[sm]), tokens_within_target=within)
    top = int(gpus[-1]) if cap_gpus is None else min(int(gpus[-1]), cap_gpus)
    # days without the headroom first: the figure a review shows as "days to train"
    notes.insert(0, f"no size up to {top:,} GPUs meets {target:g} days (with the {h:.0%} "
                    f"schedule headroom): the fastest, {int(gpus[f]):,} GPUs, takes "
                    f"{train_days[f]:.1f} days ({days[f]:.1f} with headroom; a target of "
                    f"{np.ceil(days[f] * 10) / 10:.1f} days is met), or trains {within:.3g} "
                    f"tokens in {target:g} days; the fewest GPUs that fit, {int(gpus[sm]):,}, "
                    f"take {train_days[sm]:.1f} days")
    if adv.too_small:
        notes += [adv.message, *adv.proposals]
    elif cap_gpus is None or int(gpus[np.argmin(days)]) <= cap_gpus:
        notes.append("adding GPUs stops helping: the fixed global batch limits how far the run "
                     "parallelises (communication and per-GPU work shrink together)")
    return Sizing(gpus=None, nodes=None, days=None, meets_target=False, mfu=None, layout={},
                  memory_floor_gpus=floor, total_flops=total_flops, tokens=D, table=table,
                  notes=tuple(notes), nearest=nearest, batch=adv, max_gpus_power=cap_gpus,
                  space=space)


@dataclass(frozen=True)
class Rung:
    method: str                 # "adapt", "qlora", "lora", "full", "pretrain"
    gpu: str | None             # catalog id; None for "adapt" (a hosted API)
    gpus: int                   # GPUs used and billed [-]
    hours: float | None         # wall clock [h]; None for "adapt" (API calls)
    gpu_hours: float            # [GPU-h]
    cost_usd: float             # [USD]
    flops: float                # [FLOP]
    tokens: float               # [tokens]
    mfu: float | None           # [-]
    note: str
    min_gpus: int = 0           # fewest GPUs of this type on which it fits in memory [-]
    usd_per_gpu_hour: float | None = None
    #: how the rung's GPU was chosen: "point" (its predicted cost) or "slow end" (the cost at
    #: the slow end of a band no published run validates: cost / (1 - band))
    ranked_by: str = "point"
    rank_cost_usd: float | None = None    # the figure the GPUs were ranked by [USD]
    band: float = 0.0                     # the throughput band behind a slow-end rank [-]


def slow_end_cost(cost_usd: float, band: float) -> float:
    r"""Cost at the slow end of a throughput band: the figure an unvalidated prediction is
    ranked by, so that its uncertainty, not its point, decides against a validated one.

    .. math:: \$_{slow} = \frac{\$}{1 - e}

    (tokens/s at (1 - e) x the prediction bill 1 / (1 - e) x the hours).

    Parameters
    ----------
    cost_usd : float
        Predicted cost [USD].
    band : float
        e, the relative throughput band [-], in [0, 1); 0 for a validated prediction.

    Returns
    -------
    cost : float
        [USD].

    References
    ----------
    .. [1] :func:`llmcost.training.uncertainty.throughput_band` (the band).
    """
    return float(cost_usd) / (1.0 - float(v.fraction("band", band, allow_zero=True, allow_one=False)))


#: FLOPs per token and parameter by method: forward 2N; backward 4N with weight gradients,
#: 2N without (frozen base: only input gradients flow, Hu et al. 2021 §4.2).
FLOPS_PER_PARAM_TOKEN = {"qlora": 4.0, "lora": 4.0, "full": 6.0, "pretrain": 6.0}
#: MFU assumed per method [-]: full fine-tune and pretraining at 0.40 (published large runs:
#: 0.38-0.57); LoRA at 0.40 of its reduced FLOPs; QLoRA at 0.30 (dequantising NF4 weights in
#: every matmul slows it: assumption, Dettmers et al. report QLoRA slower than LoRA).
DEFAULT_MFU = {"qlora": 0.30, "lora": 0.40, "full": 0.40, "pretrain": 0.40}
#: Hosted-API prices for the "adapt" rung [USD per million tokens]: OpenAI
#: text-embedding-3-small $0.02 (OpenAI model page, developers.openai.com, standard tier,
#: as tabulated 2026-07); GPT-4o mini $0.15 input, $0.60 output (OpenAI, 2024-07-18).
EMBED_USD_PER_MILLION_TOKENS = 0.02
HOSTED_INPUT_USD_PER_MILLION_TOKENS = 0.15
HOSTED_OUTPUT_USD_PER_MILLION_TOKENS = 0.60
#: "Adapt" workload (assumption): 10,000 queries (an evaluation set plus a pilot), each with
#: 4,000 prompt tokens (retrieved passages) and 500 answer tokens.
ADAPT_QUERIES = 10_000
ADAPT_PROMPT_TOKENS = 4_000
ADAPT_ANSWER_TOKENS = 500
#: Epochs a fine-tune makes over its corpus (assumption): the corpus the "adapt" rung
#: embeds is the fine-tune's tokens / this.
FINETUNE_EPOCHS = 3


def adapt_cost_usd(corpus_tokens, queries=ADAPT_QUERIES, prompt_tokens=ADAPT_PROMPT_TOKENS,
                   answer_tokens=ADAPT_ANSWER_TOKENS,
                   embed_usd_per_million=EMBED_USD_PER_MILLION_TOKENS,
                   input_usd_per_million=HOSTED_INPUT_USD_PER_MILLION_TOKENS,
                   output_usd_per_million=HOSTED_OUTPUT_USD_PER_MILLION_TOKENS):
    r"""Cost of adapting by retrieval on a hosted model: embed the corpus once, answer queries.

    .. math:: \$ = \frac{D_c\, p_e + Q\,(T_{in}\, p_{in} + T_{out}\, p_{out})}{10^6}

    Parameters
    ----------
    corpus_tokens : float or array
        D_c [tokens].
    queries : float or array
        Q [-].
    prompt_tokens, answer_tokens : float or array
        T_in, T_out per query [tokens].
    embed_usd_per_million, input_usd_per_million, output_usd_per_million : float
        p_e, p_in, p_out [USD per million tokens].

    Returns
    -------
    cost_usd : float or array
        [USD].

    References
    ----------
    .. [1] "LLM Training Infrastructure" (an infrastructure overview): "Adapt: prompting and
       retrieval on a hosted model".
    .. [2] OpenAI pricing: text-embedding-3-small $0.02, GPT-4o mini $0.15 / $0.60 per
       million tokens.
    """
    Dc = v.nonnegative("corpus_tokens", corpus_tokens)
    Q = v.nonnegative("queries", queries)
    ti = v.nonnegative("prompt_tokens", prompt_tokens)
    to = v.nonnegative("answer_tokens", answer_tokens)
    pe = v.nonnegative("embed_usd_per_million", embed_usd_per_million)
    pi = v.nonnegative("input_usd_per_million", input_usd_per_million)
    po = v.nonnegative("output_usd_per_million", output_usd_per_million)
    return v.result((Dc * pe + Q * (ti * pi + to * po)) / 1e6)


def _billed(n, unit):
    return int(np.ceil(n / unit) * unit)


def finetune_ladder(model: ModelSpec, gpus, usd_per_gpu_hour, finetune_tokens=1e9,
                    pretrain_tokens=None, pretrain_days=30.0, mfu: dict | None = None,
                    lora_rank=16, seq_len=None, finetune_max_hours=24.0,
                    billing_gpus: dict | None = None, corpus_tokens=None,
                    adapt_queries=ADAPT_QUERIES, predict_mfu=None, rank_band=None) -> list[Rung]:
    r"""The infrastructure overview's ladder [1], cheapest first: adapt, QLoRA, LoRA, full fine-tune, pretrain.

    Each GPU rung is priced on every GPU given a price and keeps the cheapest. QLoRA runs on
    the fewest cards it fits (one for 7-70B: NF4 transformer blocks, embeddings and LM head
    in 16 bits as in QLoRA's reference code); LoRA and the full fine-tune on the fewest GPUs
    that fit (ZeRO-3 over data parallelism, full recomputation, micro-batch 1) and finish
    within ``finetune_max_hours``; pretraining on enough nodes to finish in
    ``pretrain_days``. GPUs are billed by whole instances (``billing_gpus``); a run uses
    every GPU it pays for (data parallel), which changes its hours, not its GPU-hours.

    .. math:: t = \frac{k\, N\, D}{n\, F_{peak}\, \mathrm{MFU}},\qquad
              \$ = n\, t\, p_{GPU\text{-}h} = \frac{k N D}{F_{peak}\, \mathrm{MFU}}\, p

    with k from :data:`FLOPS_PER_PARAM_TOKEN`. "Adapt" is :func:`adapt_cost_usd` on a
    corpus of ``finetune_tokens`` / :data:`FINETUNE_EPOCHS` tokens.

    Parameters
    ----------
    model : ModelSpec
    gpus : GPUSpec or list of GPUSpec
    usd_per_gpu_hour : float or dict of str -> float
        [USD per GPU-hour], by GPU id (a float with a single GPU). GPUs without a price are
        skipped, never priced by guess.
    finetune_tokens : float
        Tokens seen by a fine-tune, epochs included [tokens]; default 1e9 (about three
        epochs over a 330M-token domain corpus: an assumption).
    pretrain_tokens : float, optional
        Default: Chinchilla's 20 per parameter.
    pretrain_days : float
        [days].
    mfu : dict, optional
        Overrides of :data:`DEFAULT_MFU`.
    predict_mfu : callable, optional
        ``predict_mfu(gpu, method, n)`` -> MFU [-] of the fine-tune ``method`` on ``n`` of
        ``gpu`` (a step model); used for the QLoRA, LoRA and full rungs a ``mfu`` entry does
        not fix. Default: :data:`DEFAULT_MFU`.
    lora_rank : int
    seq_len : int, optional
    finetune_max_hours : float
        Wall-clock budget of one fine-tune [h].
    billing_gpus : dict of str -> int, optional
        GPUs per billed instance, by GPU id; default 1 (per-GPU rental).
    corpus_tokens : float, optional
        Corpus the "adapt" rung embeds [tokens]; default finetune_tokens / 3.
    adapt_queries : int
        Queries the "adapt" rung answers [-].
    rank_band : callable, optional
        ``rank_band(gpu, mfu)`` -> band [-] of a prediction no published run validates (0:
        validated). Such a GPU competes at :func:`slow_end_cost`, a validated one at its
        predicted cost. Default: every GPU at its predicted cost.

    Returns
    -------
    rungs : list of Rung
        Cheapest first.

    References
    ----------
    .. [1] "LLM Training Infrastructure" (an infrastructure overview); Hu et al. 2021,
       arXiv:2106.09685; Dettmers et al. 2023, arXiv:2305.14314 (NF4 base weights; the
       reference code keeps embeddings and the LM head in 16 bits).
    """
    priced, prices = _ladder_prices(gpus, usd_per_gpu_hour)
    Dft = float(v.positive("finetune_tokens", finetune_tokens))
    Dpt = float(chinchilla_optimal_tokens(model.params)) if pretrain_tokens is None else \
        float(v.positive("pretrain_tokens", pretrain_tokens))
    days = float(v.positive("pretrain_days", pretrain_days))
    max_h = float(v.positive("finetune_max_hours", finetune_max_hours))
    Dc = Dft / FINETUNE_EPOCHS if corpus_tokens is None else \
        float(v.positive("corpus_tokens", corpus_tokens))
    u = {**DEFAULT_MFU, **(mfu or {})}
    for name, x in u.items():
        v.fraction(f"mfu[{name}]", x)
    unit = {g.id: int(v.integer(f"billing_gpus[{g.id}]", (billing_gpus or {}).get(g.id, 1)))
            for g in priced}

    adapt = float(adapt_cost_usd(Dc, adapt_queries))
    rungs = [Rung(method="adapt", gpu=None, gpus=0, hours=None, gpu_hours=0.0, cost_usd=adapt,
                  flops=0.0, tokens=Dc, mfu=None,
                  note=f"retrieval on a hosted model: embed {Dc:.3g} tokens at "
                       f"${EMBED_USD_PER_MILLION_TOKENS}/M (text-embedding-3-small) and answer "
                       f"{int(adapt_queries):,} queries of {ADAPT_PROMPT_TOKENS:,} + "
                       f"{ADAPT_ANSWER_TOKENS} tokens at ${HOSTED_INPUT_USD_PER_MILLION_TOKENS}/"
                       f"${HOSTED_OUTPUT_USD_PER_MILLION_TOKENS} per M (GPT-4o mini); query volume "
                  "and corpus size are assumptions; serving costs after that are not counted")]

    one_card = {}
    for g in priced:
        m1 = memory_per_gpu(model, gpus=1, tp=1, pp=1, cp=1, zero_stage=3, micro_batch=1,
                            global_batch=None, recompute="full", sequence_parallel=False,
                            flash_attention=True, finetune="qlora", lora_rank=lora_rank, seq_len=seq_len,
                            qlora_16bit_embeddings=True)
        one_card[g.id] = bool(float(m1.total_bytes) <= g.memory_bytes)
    for method in ("qlora", "lora", "full"):
        best = None
        # QLoRA's point is one card: where some card holds it, only such cards compete
        pool = [g for g in priced if one_card[g.id]] if method == "qlora" and any(
            one_card.values()) else priced
        for g in pool:
            node = g.gpus_per_node
            sizes = np.array([x for x in (1, 2, 4) if x < node]
                             + [node * k for k in (1, 2, 4, 8, 16, 32, 64)])
            m = memory_per_gpu(model, gpus=sizes, tp=1, pp=1, cp=1, zero_stage=3, micro_batch=1,
                               global_batch=None, recompute="full",
                               sequence_parallel=False, flash_attention=True,
                               finetune=method, lora_rank=lora_rank, seq_len=seq_len,
                               qlora_16bit_embeddings=True)
            fits = np.asarray(m.total_bytes) <= g.memory_bytes
            if not fits.any():
                continue
            n_min = int(sizes[np.argmax(fits)])
            peak = g.bf16_dense_tflops * 1e12
            flops = FLOPS_PER_PARAM_TOKEN[method] * model.params * Dft

            def mfu_on(k, g=g, method=method):
                if predict_mfu is None or method in (mfu or {}):
                    return u[method]
                return float(v.fraction(f"predicted mfu[{method}]", predict_mfu(g, method, k)))
            n = _billed(n_min, unit[g.id])
            u_n = mfu_on(n)
            gpu_hours = flops / (peak * u_n) / 3600
            if method != "qlora":
                # more GPUs (whole instances) until it finishes in the budget
                while gpu_hours / n > max_h and n < sizes[-1]:
                    n = _billed(n * 2, unit[g.id])
                    u_n = mfu_on(n)
                    gpu_hours = flops / (peak * u_n) / 3600
            hours = gpu_hours / n
            cost = gpu_hours * prices[g.id]
            band = float(rank_band(g, u_n)) if rank_band is not None else 0.0
            rank = slow_end_cost(cost, band)
            if best is None or rank < best.rank_cost_usd:
                how = ("NF4 blocks, 16-bit embeddings and head" if method == "qlora" else
                       "ZeRO-3, full recomputation")
                why = [f"whole {unit[g.id]}-GPU instances"] if _billed(n_min, unit[g.id]) > n_min \
                    else []
                if n > _billed(n_min, unit[g.id]):
                    why.append(f"to finish within {max_h:g} h")
                runs = f"; runs {n}-way data parallel ({', '.join(why)})" if why else ""
                src = " (step model)" if predict_mfu is not None and method not in (mfu or {}) \
                    else ""
                best = Rung(method=method, gpu=g.id, gpus=n, hours=hours, gpu_hours=gpu_hours,
                            cost_usd=cost, flops=flops, tokens=Dft, mfu=u_n,
                            note=f"fits on {'one' if n_min == 1 else f'{n_min} x'} {g.id} ({how}){runs}; "
                                 f"{hours:.1f} h at MFU {u_n:.2f}{src}", min_gpus=n_min,
                            usd_per_gpu_hour=prices[g.id], **_ranked(rank, band))
        if best is not None:
            rungs.append(best)

    rungs.append(_pretrain_rung(model, priced, prices, unit, Dpt, days, u["pretrain"], rank_band))
    return sorted(rungs, key=lambda r: r.cost_usd)


def _ranked(rank_cost: float, band: float) -> dict:
    """The Rung fields that say how its GPU was ranked."""
    return dict(ranked_by="slow end" if band > 0 else "point", rank_cost_usd=float(rank_cost),
                band=float(band))


def _ladder_prices(gpus, usd_per_gpu_hour) -> tuple[list, dict]:
    """The GPUs of the ladder that have a price, and GPU id -> $ per GPU-hour."""
    gpu_list = list(gpus) if isinstance(gpus, (list, tuple)) else [gpus]
    if not gpu_list:
        raise v.InputError("gpus", "give at least one GPU")
    if isinstance(usd_per_gpu_hour, dict):
        prices = {k: float(v.positive(f"usd_per_gpu_hour[{k}]", x))
                  for k, x in usd_per_gpu_hour.items() if x is not None}
    else:
        if len(gpu_list) != 1:
            raise v.InputError("usd_per_gpu_hour", "with several GPUs give prices by GPU id")
        prices = {gpu_list[0].id: float(v.positive("usd_per_gpu_hour", usd_per_gpu_hour))}
    priced = [g for g in gpu_list if g.id in prices]
    if not priced:
        raise v.InputError("usd_per_gpu_hour", "no GPU given has a price: "
                           + ", ".join(g.id for g in gpu_list))
    return priced, prices


def _pretrain_rung(model, priced, prices, unit, tokens, days, mfu, rank_band=None) -> "Rung":
    """The ladder's last rung: pretraining on whole nodes of the cheapest priced GPU within
    ``days``, at ``mfu`` (ranked as :func:`finetune_ladder` ranks)."""
    best = None
    for g in priced:
        node = g.gpus_per_node
        peak = g.bf16_dense_tflops * 1e12
        flops = FLOPS_PER_PARAM_TOKEN["pretrain"] * model.params * tokens
        gpu_hours = flops / (peak * mfu) / 3600
        n = _billed(node * max(1, np.ceil(gpu_hours / (days * 24) / node)), unit[g.id])
        cost = gpu_hours * prices[g.id]
        band = float(rank_band(g, mfu)) if rank_band is not None else 0.0
        rank = slow_end_cost(cost, band)
        if best is None or rank < best.rank_cost_usd:
            best = Rung(method="pretrain", gpu=g.id, gpus=n, hours=gpu_hours / n,
                        gpu_hours=gpu_hours, cost_usd=cost, flops=flops, tokens=tokens, mfu=mfu,
                        note=f"{tokens:.3g} tokens on {n:,} x {g.id} in about "
                             f"{gpu_hours / n / 24:.0f} days at MFU {mfu:.2f}", min_gpus=0,
                        usd_per_gpu_hour=prices[g.id], **_ranked(rank, band))
    return best


def cheapest_on_demand(prices: pd.DataFrame) -> dict:
    """The cheapest on-demand price per GPU-hour of each GPU in a price table.

    Parameters
    ----------
    prices : DataFrame
        Rows with ``id``, ``gpu``, ``gpus`` (GPUs per billed instance) and
        ``on_demand_usd_per_hour`` [USD per instance-hour], as ``data/prices.csv``; the
        offer of each GPU is the one :func:`llmcost.economics.offers.choose_offers` picks (reference
        prices, composites and articles, are never offers).

    Returns
    -------
    cheapest : dict of str -> (float, int, str)
        GPU id -> (USD per GPU-hour, GPUs per instance, price row id). GPUs with no
        on-demand price are absent.

    References
    ----------
    .. [1] ``data/prices.csv`` (instance price / its GPUs = price per GPU-hour).
    """
    from .offers import choose_offers
    out = {}
    if prices is None or len(prices) == 0:
        return out
    for gpu in dict.fromkeys(prices["gpu"]):
        row = choose_offers(prices, gpu).get("on_demand")
        if row is not None:
            out[gpu] = (float(row["on_demand_usd_per_hour"]) / float(row["gpus"]),
                        int(row["gpus"]), str(row["id"]))
    return out
