"""Cluster sizing backward from a target time, and the fine-tuning ladder.

Sizing follows seed article 000: total compute over per-GPU throughput adjusted for scaling
efficiency, plus headroom; here the throughput at each cluster size comes from the step-time
model (the global batch stays fixed, so the pipeline bubble and communication grow as GPUs
are added), and the memory floor (fewest GPUs on which the model fits) bounds it below.

References
----------
.. [1] Seed article 000 ("size from the target training time backward: estimate the total
   compute required, divide by per-GPU throughput adjusted for scaling efficiency, and add
   headroom").
.. [2] Seed article 003: LoRA of 7-13B on one node of eight accelerators, QLoRA on one card;
   fine-tunes cost hundreds to low thousands of dollars, pretraining seven figures.
.. [3] Narayanan et al. 2021, arXiv:2104.04473, §5.1 (training time ~ 8 T P / (n X)).
.. [4] E. Hu et al., arXiv:2106.09685, §4.2 (LoRA needs no gradients for frozen weights).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import _validate as v
from ..training import planner
from ..training.arch import ModelSpec
from ..training.flops import chinchilla_optimal_tokens
from ..training.hardware import FabricSpec, GPUSpec
from ..training.memory import memory_per_gpu
from ..training.step import Options, predict_step

SECONDS_PER_DAY = 86400.0


def training_days(total_flops, gpus, peak_tflops, mfu, goodput=1.0):
    r"""Days to train at a given MFU and goodput.

    .. math:: t = \frac{C}{N\, F_{peak}\, \mathrm{MFU}\, G} \,/\, 86400

    Parameters
    ----------
    total_flops : float or array
        C, model FLOPs [FLOP].
    gpus : float or array
        N [-].
    peak_tflops : float or array
        [TFLOP/s].
    mfu : float or array
        [-], in (0, 1].
    goodput : float or array
        G, share of wall time that advances training [-].

    Returns
    -------
    days : float or array
        [days].

    References
    ----------
    .. [1] Narayanan et al. 2021, §5.1.
    """
    c = v.positive("total_flops", total_flops)
    n = v.positive("gpus", gpus)
    p = v.positive("peak_tflops", peak_tflops)
    u = v.fraction("mfu", mfu)
    g = v.fraction("goodput", goodput)
    return v.result(c / (n * p * 1e12 * u * g) / SECONDS_PER_DAY)


def days_from_efficiency(days_a, efficiency_a, efficiency_b):
    r"""Days on fabric B implied by days on A and the two scaling efficiencies (same job).

    .. math:: t_B = t_A\, \epsilon_A / \epsilon_B

    The seed's 18 days on InfiniBand at 98% give 24.8 days on RoCE at 71%, not its 43.

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
    .. [1] Seed article 001 ("18 days instead of 43 on the RoCE setup").
    """
    return v.result(v.positive("days_a", days_a) * v.fraction("efficiency_a", efficiency_a)
                    / v.fraction("efficiency_b", efficiency_b))


def efficiency_from_days(days_a, efficiency_a, days_b):
    r"""Efficiency on fabric B that days on A and on B imply (same job and GPUs).

    .. math:: \epsilon_B = \epsilon_A\, t_A / t_B

    The seed's 18 vs 43 days with IB at 98% imply RoCE at 41%, not the 71% it measured.

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
    .. [1] Seed article 001.
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
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= gpu.gpus_per_node and model.heads % t == 0
           and (model.kv_heads % t == 0 or t % model.kv_heads == 0)]
    pps = [p for p in range(1, model.layers + 1) if model.layers % p == 0]
    g, t, p, z, sp = (a.ravel() for a in np.meshgrid(c, tps, pps, (1, 3), (True, False),
                                                     indexing="ij"))
    ok = (g % (t * p) == 0) & (sp <= (t > 1))
    if not ok.any():
        return None
    g, t, p, z, sp = g[ok], t[ok], p[ok], z[ok], sp[ok]
    m = memory_per_gpu(model, g, t, p, 1, z, 1, None, "full", sp, True, seq_len=seq_len, **mem_kw)
    fits = np.asarray(m.total_bytes) <= gpu.memory_bytes
    if not fits.any():
        return None
    return int(np.min(g[fits]))


@dataclass
class Sizing:
    gpus: int | None
    nodes: int | None
    days: float | None
    meets_target: bool
    mfu: float | None
    layout: dict
    memory_floor_gpus: int | None
    total_flops: float
    tokens: float
    table: pd.DataFrame                   # per candidate size: gpus, days, mfu, fits
    cost_usd: dict = field(default_factory=dict)
    notes: tuple = ()
    global_batch: int | None = None       # sequences per step at the chosen size (rounded)


def size_cluster(model: ModelSpec, tokens, gpu: GPUSpec, scale_up: FabricSpec,
                 scale_out: FabricSpec, target_days, global_batch_tokens=4_194_304,
                 headroom=0.10, goodput=1.0, usd_per_gpu_hour: dict | None = None,
                 max_nodes=4096, options: Options = Options(flash_attention=True),
                 seq_len=None) -> Sizing:
    r"""GPUs and nodes needed to train ``tokens`` within ``target_days``.

    For every node count n (a geometric grid up to ``max_nodes``), the fastest of the
    planner's best layouts is predicted with the global batch held (rounded to whole
    micro-batches per replica); then

    .. math:: t(n) = \frac{D}{\dot D(n)\, G}\,(1 + h) \le t_{target}

    picks the smallest n above the memory floor. More days never need more GPUs: the set of
    sizes that meet a target only grows as the target loosens.

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
    goodput : float
        G [-], from :mod:`llmcost.economics.reliability`.
    usd_per_gpu_hour : dict of str -> float, optional
        Prices by option name [USD per GPU-hour].
    max_nodes : int
    options : Options
    seq_len : int, optional

    Returns
    -------
    Sizing

    References
    ----------
    .. [1] Seed article 000; Narayanan et al. 2021, §5.1.
    """
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    D = float(chinchilla_optimal_tokens(model.params)) if tokens is None else float(v.positive("tokens", tokens))
    target = float(v.positive("target_days", target_days))
    h = float(v.in_range("headroom", headroom, 0, 1, high_inclusive=False))
    G = float(v.fraction("goodput", goodput))
    node = gpu.gpus_per_node
    B = max(1, int(round(float(v.positive("global_batch_tokens", global_batch_tokens)) / s)))
    max_nodes = int(v.integer("max_nodes", max_nodes))
    # every node count up to 256, then a 2% geometric grid
    nodes = np.unique(np.concatenate([np.arange(1, min(256, max_nodes) + 1),
                                      np.round(np.geomspace(1, max_nodes, 400)),
                                      [max_nodes]])).astype(int)
    gpus = nodes * node
    total_flops = model.flops_per_token("none", s) * D

    floor = memory_floor_gpus(model, gpu, gpus, s)
    notes = []
    if floor is None:
        table = pd.DataFrame({"gpus": gpus, "days": np.nan, "mfu": np.nan, "fits": False})
        return Sizing(None, None, None, False, None, {}, None, total_flops, D, table,
                      notes=(f"{model.id} does not fit on up to {max_nodes} nodes of {gpu.id}",))

    # Layouts: the planner's distinct best at a reference size near the estimate at 40% MFU.
    est = total_flops / (gpu.peak_tflops(options.precision) * 1e12 * 0.4 * target * SECONDS_PER_DAY)
    ref = int(max(floor, node * max(1, 2 ** int(np.ceil(np.log2(max(est / node, 1)))))))
    ref = int(min(ref, gpus.max()))
    B_ref = B
    space = planner.Space(cp=(1, 2), micro_batch=(1, 2), zero_stage=(1, 3),
                          recompute=("none", "selective", "full"), interleave=(1, 2, 4),
                          flash_attention=(True,), tp_comm_overlap=(False,))
    P = planner.plan(model, gpu, scale_up, scale_out, ref, B_ref, space, options, seq_len=s)
    cands = planner.distinct(P.layouts[P.layouts["fits"]]).head(6)
    if cands.empty:
        cands = planner.distinct(P.layouts).head(6)

    # Evaluate every (size, layout) pair in one vectorized call.
    k = len(cands)
    gg = np.repeat(gpus, k)
    cols = {c: np.tile(cands[c].to_numpy(), len(gpus)) for c in
            ("tp", "pp", "cp", "micro_batch", "interleave", "zero_stage", "recompute",
             "sequence_parallel")}
    used = cols["tp"] * cols["pp"] * cols["cp"]
    ok = gg % used == 0
    dp = np.maximum(gg // used, 1)
    Bn = _round_batch(B, gg, cols["micro_batch"] * dp, cols["pp"], cols["interleave"])
    # keep the batch the user chose: sizes that would move it by more than 5% are skipped
    ok &= np.abs(Bn / B - 1) <= 0.05
    idx = np.nonzero(ok)[0]
    pred = predict_step(model, gpu, scale_up, scale_out, gg[idx], cols["tp"][idx],
                        cols["pp"][idx], Bn[idx], cols["cp"][idx], cols["micro_batch"][idx],
                        cols["interleave"][idx], cols["recompute"][idx],
                        cols["sequence_parallel"][idx], cols["zero_stage"][idx], options,
                        seq_len=s, with_scaling=False)
    tps = np.full(gg.shape, np.nan)
    fits = np.zeros(gg.shape, bool)
    mfu = np.full(gg.shape, np.nan)
    tps[idx], fits[idx], mfu[idx] = pred.tokens_per_s, pred.fits, pred.mfu
    days_all = np.where(fits, D / np.where(fits, tps, 1) / G / SECONDS_PER_DAY * (1 + h), np.inf)
    days_all = days_all.reshape(len(gpus), k)
    best_k = np.argmin(days_all, axis=1)
    days = days_all[np.arange(len(gpus)), best_k]
    mfu_best = mfu.reshape(len(gpus), k)[np.arange(len(gpus)), best_k]
    table = pd.DataFrame({"gpus": gpus, "nodes": nodes, "days": days, "mfu": mfu_best,
                          "fits": np.isfinite(days)})
    meets = np.isfinite(days) & (days <= target) & (gpus >= floor)
    if meets.any():
        i = int(np.argmax(meets))
    else:
        i = int(np.argmin(days))
        notes.append(f"no size up to {max_nodes} nodes meets {target:g} days; the fastest "
                     f"({gpus[i]} GPUs) takes {days[i]:.1f} days: the fixed global batch limits "
                     "how far the run parallelises")
    if not np.isfinite(days[i]):
        return Sizing(None, None, None, False, None, {}, floor, total_flops, D, table,
                      notes=tuple(notes) + ("no evaluated layout fits",))
    row = cands.iloc[int(best_k[i])]
    layout = {c: (row[c].item() if hasattr(row[c], "item") else row[c]) for c in
              ("tp", "pp", "cp", "micro_batch", "interleave", "zero_stage", "recompute",
               "sequence_parallel")}
    layout["dp"] = int(gpus[i] // (layout["tp"] * layout["pp"] * layout["cp"]))
    gpu_hours = float(gpus[i] * days[i] * 24)
    cost = {}
    for name, price in (usd_per_gpu_hour or {}).items():
        if price is not None:
            cost[name] = gpu_hours * float(v.positive(f"usd_per_gpu_hour[{name}]", price))
    j = i * k + int(best_k[i])
    return Sizing(int(gpus[i]), int(nodes[i]), float(days[i]), bool(meets.any()),
                  float(mfu_best[i]), layout, floor, total_flops, D, table, cost, tuple(notes),
                  int(Bn[j]))


def _round_batch(B, gpus, unit, pp=1, interleave=1):
    """The global batch rounded to whole micro-batches per replica (and to a multiple of pp
    for interleaved schedules), never below one per replica."""
    unit = np.asarray(unit) * np.where(np.asarray(interleave) > 1, np.asarray(pp), 1)
    return np.maximum(np.round(B / unit), 1).astype(int) * unit


@dataclass(frozen=True)
class Rung:
    method: str
    gpus: int
    hours: float
    gpu_hours: float
    cost_usd: float
    flops: float
    tokens: float
    mfu: float
    note: str


#: FLOPs per token and parameter by method: forward 2N; backward 4N with weight gradients,
#: 2N without (frozen base: only input gradients flow, Hu et al. 2021 §4.2).
FLOPS_PER_PARAM_TOKEN = {"qlora": 4.0, "lora": 4.0, "full": 6.0, "pretrain": 6.0}
#: MFU assumed per method [-]: full fine-tune and pretraining at 0.40 (published large runs:
#: 0.38-0.57); LoRA at 0.40 of its reduced FLOPs; QLoRA at 0.30 (dequantising NF4 weights in
#: every matmul slows it: assumption, Dettmers et al. report QLoRA slower than LoRA).
DEFAULT_MFU = {"qlora": 0.30, "lora": 0.40, "full": 0.40, "pretrain": 0.40}


def finetune_ladder(model: ModelSpec, gpu: GPUSpec, usd_per_gpu_hour, finetune_tokens=1e9,
                    pretrain_tokens=None, pretrain_days=30.0, mfu: dict | None = None,
                    lora_rank=16, seq_len=None, finetune_max_hours=24.0) -> list[Rung]:
    r"""GPUs, hours and dollars for QLoRA, LoRA, a full fine-tune and pretraining.

    Each fine-tune takes the fewest GPUs (1, 2, 4, ... then whole nodes) on which it fits
    (ZeRO-3 over data parallelism, full recomputation, micro-batch 1) and finishes within
    ``finetune_max_hours``; pretraining takes enough nodes to finish in ``pretrain_days``.

    .. math:: t = \frac{k\, N\, D}{n\, F_{peak}\, \mathrm{MFU}},\qquad
              \$ = n\, t\, p_{GPU\text{-}h}

    Parameters
    ----------
    model : ModelSpec
    gpu : GPUSpec
    usd_per_gpu_hour : float
        [USD per GPU-hour].
    finetune_tokens : float
        Tokens seen by a fine-tune, epochs included [tokens]; default 1e9 (about three
        epochs over a 330M-token domain corpus: an assumption).
    pretrain_tokens : float, optional
        Default: Chinchilla's 20 per parameter.
    pretrain_days : float
        [days].
    mfu : dict, optional
        Overrides of :data:`DEFAULT_MFU`.
    lora_rank : int
    seq_len : int, optional
    finetune_max_hours : float
        Wall-clock budget of one fine-tune [h].

    Returns
    -------
    rungs : list of Rung
        Cheapest first.

    References
    ----------
    .. [1] Seed article 003; Hu et al. 2021; Dettmers et al. 2023, arXiv:2305.14314.
    """
    price = float(v.positive("usd_per_gpu_hour", usd_per_gpu_hour))
    Dft = float(v.positive("finetune_tokens", finetune_tokens))
    Dpt = float(chinchilla_optimal_tokens(model.params)) if pretrain_tokens is None else \
        float(v.positive("pretrain_tokens", pretrain_tokens))
    days = float(v.positive("pretrain_days", pretrain_days))
    max_h = float(v.positive("finetune_max_hours", finetune_max_hours))
    u = {**DEFAULT_MFU, **(mfu or {})}
    for name, x in u.items():
        v.fraction(f"mfu[{name}]", x)
    node = gpu.gpus_per_node
    sizes = np.array([g for g in (1, 2, 4) if g < node] + [node * k for k in (1, 2, 4, 8, 16, 32, 64)])
    peak = gpu.bf16_dense_tflops * 1e12
    rungs = []
    for method in ("qlora", "lora", "full"):
        ft = "full" if method == "full" else method
        m = memory_per_gpu(model, sizes, 1, 1, 1, 3, 1, None, "full", False, True,
                           finetune=ft, lora_rank=lora_rank, seq_len=seq_len)
        fits = np.asarray(m.total_bytes) <= gpu.memory_bytes
        if not fits.any():
            continue
        flops = FLOPS_PER_PARAM_TOKEN[method] * model.params * Dft
        hours_at = flops / (sizes * peak * u[method]) / 3600
        quick = fits & (hours_at <= max_h)
        n = int(sizes[np.argmax(quick)] if quick.any() else sizes[fits][-1])
        hours = flops / (n * peak * u[method]) / 3600
        rungs.append(Rung(method, n, hours, n * hours, n * hours * price, flops, Dft, u[method],
                          f"{n} GPU(s): fits with ZeRO-3 and full recomputation, "
                          f"{hours:.1f} h"))
    flops = FLOPS_PER_PARAM_TOKEN["pretrain"] * model.params * Dpt
    gpu_hours = flops / (peak * u["pretrain"]) / 3600
    n = int(node * max(1, np.ceil(gpu_hours / (days * 24) / node)))
    rungs.append(Rung("pretrain", n, gpu_hours / n, gpu_hours, gpu_hours * price, flops, Dpt,
                      u["pretrain"], f"{Dpt:.3g} tokens in about {gpu_hours / n / 24:.0f} days"))
    return rungs
