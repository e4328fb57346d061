"""Cluster sizing backward from a target time: the fewest GPUs whose predicted days meet it.

Sizing follows the scaling article [1]: total compute over per-GPU throughput adjusted for scaling
efficiency, plus headroom; here the throughput at each cluster size comes from the step-time
model (the global batch stays fixed, so the pipeline bubble and communication grow as GPUs
are added), and the memory floor (fewest GPUs on which the model fits) bounds it below.
Every cluster size gets the layouts valid at that size (the planner's own rules and space,
evaluated in :mod:`llmcost.planning.sizes`), so the days sizing shows for a size are the days
a plan of that size gives. No size meeting the target is an answer (the nearest options), as
is a batch too small for its pipeline (:func:`~llmcost.planning.pipeline_batch.batch_advice`)
and a facility power envelope that binds.

References
----------
1. "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud): "size from
   the target training time backward: estimate the total compute required, divide by per-GPU
   throughput adjusted for scaling efficiency, and add headroom".
2. Narayanan et al. 2021, arXiv:2104.04473, §5.1 (training time ~ 8 T P / (n X)).
3. Uptime Institute, Global Data Center Survey 2023 (PUE 1.58).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import _validate as v
from ..economics.reliability import days_to_train
from ..training.arch import ModelSpec
from ..training.flops import chinchilla_optimal_tokens
from ..training.hardware import GPUSpec, Hardware
from ..training.layout import Layout, layout_columns
from ..training.memory import MemoryOptions, memory_per_gpu
from ..training.step import Options
from . import planner
from .pipeline_batch import BatchAdvice, batch_advice
from .planner import Search
from .sizes import BATCH_TOLERANCE, _evaluate_sizes, candidate_sizes


def days_from_efficiency(days_a: ArrayLike, efficiency_a: ArrayLike, efficiency_b: ArrayLike) -> float | np.ndarray:
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


def efficiency_from_days(days_a: ArrayLike, efficiency_a: ArrayLike, days_b: ArrayLike) -> float | np.ndarray:
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


def memory_floor_gpus(model: ModelSpec, gpu: GPUSpec, candidates: ArrayLike, seq_len: int | None = None,
                      **mem_kw: Any) -> int | None:
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
    assert model.kv_heads is not None  # set in ModelSpec.__post_init__
    tps = [t for t in (1, 2, 4, 8, 16, 32, 64) if t <= gpu.scale_up_domain and model.heads % t == 0
           and (model.kv_heads % t == 0 or t % model.kv_heads == 0)]
    pps = [p for p in range(1, model.layers + 1) if model.layers % p == 0]
    g, t, p, z, sp = (a.ravel() for a in np.meshgrid(c, tps, pps, (1, 3), (True, False),
                                                     indexing="ij"))
    ok = (g % (t * p) == 0) & (sp <= (t > 1))
    if not ok.any():
        return None
    g, t, p, z, sp = g[ok], t[ok], p[ok], z[ok], sp[ok]
    m = memory_per_gpu(model, Layout(gpus=g, tp=t, pp=p, cp=1, zero_stage=z, micro_batch=1,
                                     global_batch=None, recompute="full", sequence_parallel=sp,
                                     flash_attention=True), MemoryOptions(**mem_kw), seq_len=seq_len)
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
#: Power usage effectiveness by default [-]: Uptime Institute Global Data Center Survey
#: 2023, industry average 1.58 (hyperscale sites reach 1.1-1.2).
DEFAULT_PUE = 1.58
#: sizing's search: :data:`SIZING_SPACE`, the options' precision, the fastest layout at each size
SIZING_SEARCH = Search(SIZING_SPACE)


def cluster_power_mw(gpus: ArrayLike, power_kw_per_gpu: ArrayLike,
                     pue: ArrayLike = DEFAULT_PUE) -> float | np.ndarray:
    r"""Facility power a cluster draws at full load.

    .. math:: P = N\,w\,\mathrm{PUE} / 1000

    Parameters
    ----------
    gpus : int or array
        N, GPUs in the cluster [-].
    power_kw_per_gpu : float or array
        w, system power per GPU at full load [kW] (DGX H100: 10.2 kW / 8 = 1.275 kW).
    pue : float or array
        Power usage effectiveness [-], in [1, 5].

    Returns
    -------
    power_mw : float or array
        P [MW].

    References
    ----------
    .. [1] NVIDIA DGX H100 datasheet (10.2 kW per system of 8 GPUs).
    .. [2] Uptime Institute, Global Data Center Survey 2023 (PUE 1.58).
    """
    n, w = v.checked(v.nonnegative, gpus=gpus, power_kw_per_gpu=power_kw_per_gpu)
    return v.result(n * w * v.in_range("pue", pue, 1.0, 5.0) / 1000)


@dataclass(frozen=True)
class Target:
    r"""The run sizing plans for: its tokens within its days at its batch, and the margins
    between the step model's floor and a run's days; checked once here.

    Attributes
    ----------
    target_days : float
        [days], > 0.
    tokens : float, optional
        D [tokens]; None: Chinchilla's 20 per parameter.
    global_batch_tokens : float
        [tokens per step]; default 4,194,304, Llama 3 405B's first batch (4M tokens, doubled
        to 8M and 16M as it trained: Llama Team 2024, arXiv:2407.21783 §3.4.1), whatever the
        model. The review passes its batch law's instead
        (:func:`llmcost.training.batch.global_batch_choice`).
    max_batch_tokens : float, optional
        Largest batch the batch advice may propose [tokens]; None: the largest published
        for the model size.
    headroom : float
        h, schedule margin [-], in [0, 1).
    goodput : float or callable
        G [-], in (0, 1], from :mod:`llmcost.economics.reliability`; or a function of the
        GPU count (an int array, returning an array of G): more GPUs fail more often, so
        the review passes its reliability model here.
    data_stall : float or callable
        Share of time waiting for data [-], in [0, 1); or a function of (tokens/s, GPUs)
        arrays: a faster cluster reads faster, so the review passes its storage model here.
        Days are divided by G (1 - stall).
    realized_ratio : float
        :math:`\hat r`, what comparable published runs realized over the floor
        (:mod:`llmcost.economics.realized`) [-], > 0; 1: size the floor.
    """

    target_days: float
    tokens: float | None = None
    global_batch_tokens: float = 4_194_304
    max_batch_tokens: float | None = None
    headroom: float = 0.10
    goodput: float | Callable[[np.ndarray], ArrayLike] = 1.0
    data_stall: float | Callable[[np.ndarray, np.ndarray], ArrayLike] = 0.0
    realized_ratio: float = 1.0

    def __post_init__(self) -> None:
        v.positive("target_days", self.target_days)
        if self.tokens is not None:
            v.positive("tokens", self.tokens)
        v.positive("global_batch_tokens", self.global_batch_tokens)
        if self.max_batch_tokens is not None:
            v.positive("max_batch_tokens", self.max_batch_tokens)
        v.in_range("headroom", self.headroom, 0, 1, high_inclusive=False)
        # a model of G or of the stall is checked where it answers, at each size
        if not callable(self.goodput):
            v.fraction("goodput", self.goodput)
        if not callable(self.data_stall):
            v.fraction("data_stall", self.data_stall, allow_zero=True, allow_one=False)
        v.positive("realized_ratio", self.realized_ratio)


@dataclass(frozen=True)
class Facility:
    """The site a cluster must fit: how many nodes, and the power it can feed them; checked
    once here.

    Attributes
    ----------
    max_nodes : int
        Largest cluster sizing tries [nodes].
    max_power_mw : float, optional
        Facility envelope P_max [MW]; None: no envelope.
    power_kw_per_gpu : float, optional
        w, system power per GPU at full load [kW] (e.g. DGX H100: 10.2 kW / 8 = 1.275);
        required with ``max_power_mw`` unless the GPU carries ``power_w_per_gpu``.
    pue : float
        Power usage effectiveness [-], in [1, 5]; default 1.58.
    """

    max_nodes: int = 4096
    max_power_mw: float | None = None
    power_kw_per_gpu: float | None = None
    pue: float = DEFAULT_PUE

    def __post_init__(self) -> None:
        v.integer("max_nodes", self.max_nodes)
        if self.max_power_mw is not None:
            v.positive("max_power_mw", self.max_power_mw)
        if self.power_kw_per_gpu is not None:
            v.positive("power_kw_per_gpu", self.power_kw_per_gpu)
        v.in_range("pue", self.pue, 1.0, 5.0)


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


#: a size's layout (Sizing.layout, the table's columns): Layout's fields with dp, less the
#: GPUs and batch (the size's own), the precision (its input), the stage split (the space's)
#: and the expert sizes (never in ``size``'s layout so far; ``best`` carries them)
LAYOUT_KEYS = layout_columns({"cp": "dp"},
                             drop=("gpus", "global_batch", "precision", "first_stage_layers",
                                   "middle_stage_layers", "last_stage_layers", "ep", "etp"))


def size_cluster(model: ModelSpec, hardware: Hardware, target: Target,
                 facility: Facility = Facility(), search: Search = SIZING_SEARCH,
                 options: Options = Options(flash_attention=True), seq_len: int | None = None,
                 usd_per_gpu_hour: Mapping[str, float | None] | None = None) -> Sizing:
    r"""GPUs and nodes needed to train ``target.tokens`` within ``target.target_days``.

    For every candidate size N (:func:`.candidate_sizes`) the layouts of ``search.space``
    valid at that size are predicted, with the global batch B held or moved by at most
    :data:`.BATCH_TOLERANCE` so that it splits evenly; the fastest that fits gives

    .. math:: t(N) = \hat r\, \frac{D}{\dot D(N)\, G}\,(1 + h)

    and the answer is the smallest N with t(N) <= t_target and, with a facility envelope
    P_max, N w PUE <= P_max. The layout at N is the one :func:`llmcost.planning.planner.plan`
    ranks first at N with the same batch and search, so a review of that size shows the
    same days. More days never need more GPUs: the grid and t(N) do not depend on the
    target. Infeasible is an answer: ``gpus`` None, ``meets_target`` False, the nearest
    options in ``nearest`` and why in ``notes``.

    Stages: the inputs resolved, the sizes evaluated (:func:`._evaluate_sizes`), their days
    (:func:`_size_columns`) and table (:func:`_size_table`), then the smallest size that
    meets the target (:func:`_met_sizing`) or the nearest options
    (:func:`_nearest_sizing`).

    Parameters
    ----------
    model : ModelSpec
    hardware : Hardware
        The GPU and its fabrics.
    target : Target
        Tokens, target days, batch, headroom h, goodput G, data stalls and the realized
        ratio :math:`\hat r` (the table keeps the floor's days beside, ``days_floor``, and
        ``floor_gpus`` is the size the floor would need).
    facility : Facility
        Largest cluster and the power envelope P_max, w and PUE.
    search : Search
        Layouts to choose from (default :data:`SIZING_SEARCH`: :data:`SIZING_SPACE`), the
        precision of every layout (None: ``options.precision``), and at each size the layout
        with the fewest parallel dimensions within ``simplest_within`` of the fastest,
        leaving ``memory_margin`` free (as :func:`llmcost.planning.planner.plan`); ranked by
        time, with no heuristic.
    options : Options
    seq_len : int, optional
    usd_per_gpu_hour : dict of str -> float, optional
        Prices by option name [USD per GPU-hour].

    Returns
    -------
    Sizing

    References
    ----------
    .. [1] "How to Scale LLM Training Infrastructure Without Bottlenecks" (OneSource Cloud);
       Narayanan et al. 2021, §5.1.
    .. [2] Uptime Institute, Global Data Center Survey 2023 (PUE 1.58).
    """
    search.require_time_ranking("size_cluster")
    gpu = hardware.gpu
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    prec = search.precision_on(gpu, options)
    D = float(chinchilla_optimal_tokens(model.params)) if target.tokens is None else float(target.tokens)
    cap_gpus, kw = _power_cap(gpu, facility)
    gpus = candidate_sizes(gpu.gpus_per_node, int(facility.max_nodes))
    G = _goodput_at(target.goodput, gpus)
    B = max(1, int(round(float(target.global_batch_tokens) / s)))
    best, info = _evaluate_sizes(model, gpu, hardware.scale_up, hardware.scale_out, gpus, B, s,
                                 search.space, options, prec, search.simplest_within,
                                 search.memory, float(search.memory_margin))
    floor_days, floor_train_days, cols, lay = _size_columns(best, gpus, D, G, float(target.headroom),
                                                            target.data_stall)
    ratio = float(target.realized_ratio)
    days, train_days = floor_days * ratio, floor_train_days * ratio
    fits = np.isfinite(days)
    in_power = np.ones(len(gpus), bool) if cap_gpus is None else gpus <= cap_gpus
    table = _size_table(gpus, gpu.gpus_per_node, (days, train_days, floor_days), fits, in_power, cols,
                        lay, facility, cap_gpus, kw)
    horizon = float(target.target_days)
    meets_any = fits & (days <= horizon)
    meets = meets_any & in_power
    floor_meets = fits & in_power & (floor_days <= horizon)
    floor_gpus = int(gpus[np.argmax(floor_meets)]) if floor_meets.any() else None

    def layout_at(i: int) -> dict[str, Any]:
        return {k: (lay[k][i].item() if hasattr(lay[k][i], "item") else lay[k][i])
                for k in LAYOUT_KEYS}

    def advice_at(i: int) -> BatchAdvice:
        L = layout_at(i)
        return batch_advice(model, Layout(gpus=int(gpus[i]), tp=L["tp"], pp=L["pp"], cp=L["cp"],
                                          micro_batch=L["micro_batch"],
                                          global_batch=int(cols["global_batch"][i]),
                                          interleave=L["interleave"]),
                            gpu, s, target.max_batch_tokens)

    notes = []
    if cap_gpus is not None:
        notes += _power_notes(cap_gpus, facility.max_power_mw, kw, float(facility.pue),
                              gpu.gpus_per_node, gpus, days, fits, meets_any, meets, horizon)
    floor = int(gpus[fits][0]) if fits.any() else None
    common = dict(memory_floor_gpus=floor, total_flops=model.flops_per_token("none", s) * D,
                  tokens=D, table=table, max_gpus_power=cap_gpus, space=search.space)
    if meets.any():
        return _met_sizing(int(np.argmax(meets)), gpus, gpu.gpus_per_node, days, cols, layout_at,
                           advice_at, notes, usd_per_gpu_hour, common, floor_gpus)
    return replace(_nearest_sizing(model, gpu, gpus, days, train_days, fits, fits & in_power, cols,
                                   layout_at, advice_at, notes, floor, common["total_flops"], D,
                                   table, horizon, float(target.headroom), B,
                                   int(facility.max_nodes), info, cap_gpus, search.space),
                   floor_gpus=floor_gpus)


def _goodput_at(goodput: float | Callable[[np.ndarray], ArrayLike], gpus: np.ndarray) -> np.ndarray:
    """G at each candidate size [-]: the model's answer (checked here), or the one figure."""
    if callable(goodput):
        return np.broadcast_to(v.fraction("goodput", goodput(gpus)), gpus.shape)
    return np.full(gpus.shape, float(goodput))


def _size_table(gpus: np.ndarray, gpus_per_node: int, days: tuple, fits: np.ndarray,
                in_power: np.ndarray, cols: dict[str, np.ndarray], lay: dict[str, np.ndarray],
                facility: Facility, cap_gpus: int | None, kw: float | None) -> pd.DataFrame:
    """The table of every candidate size: ``days`` (with the headroom, without it, the
    floor's; NaN where nothing fits), whether it fits and is within the power envelope, the
    best layout's figures and the layout, and the power drawn when a power is known."""
    with_headroom, to_train, floor = days
    table = pd.DataFrame({"gpus": gpus, "nodes": gpus // gpus_per_node,
                          "days": np.where(fits, with_headroom, np.nan),
                          "days_to_train": np.where(fits, to_train, np.nan),
                          "days_floor": np.where(fits, floor, np.nan), "fits": fits,
                          "within_power": in_power, **cols, **lay})
    if cap_gpus is not None or facility.power_kw_per_gpu is not None:
        assert kw is not None  # set by _power_cap whenever either is
        table["power_mw"] = cluster_power_mw(gpus, kw, facility.pue)
    return table


def _met_sizing(i: int, gpus: np.ndarray, gpus_per_node: int, days: np.ndarray,
                cols: dict[str, np.ndarray],
                layout_at: Callable[[int], dict[str, Any]], advice_at: Callable[[int], BatchAdvice],
                notes: list[str], usd_per_gpu_hour: Mapping[str, float | None] | None,
                common: dict[str, Any], floor_gpus: int | None) -> Sizing:
    """The sizing at size ``i``, the smallest that meets the target: its layout, batch
    advice and cost by price option."""
    adv = advice_at(i)
    if adv.too_small:
        notes += [adv.message, *adv.proposals]
    gpu_hours = float(gpus[i] * days[i] * 24)
    cost = {}
    for name, price in (usd_per_gpu_hour or {}).items():
        if price is not None:
            cost[name] = gpu_hours * float(v.positive(f"usd_per_gpu_hour[{name}]", price))
    return Sizing(gpus=int(gpus[i]), nodes=int(gpus[i] // gpus_per_node), days=float(days[i]),
                  meets_target=True,
                  mfu=float(cols["mfu"][i]), layout=layout_at(i), cost_usd=cost,
                  notes=tuple(notes), global_batch=int(cols["global_batch"][i]), nearest=None,
                  batch=adv, floor_gpus=floor_gpus, **common)


def _size_columns(best: dict[str, np.ndarray] | None, gpus: np.ndarray, D: float, G: np.ndarray, h: float,
                  data_stall: float | Callable[[np.ndarray, np.ndarray], ArrayLike]) -> tuple:
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
        # a model of the stall is checked where it answers (a figure by Target)
        stall = v.fraction("data_stall", data_stall(best["tokens_per_s"], gpus[i]),
                           allow_zero=True, allow_one=False) if callable(data_stall) else \
            np.full(len(i), float(data_stall))
        train_days[i] = days_to_train(D, best["tokens_per_s"], G[i] * (1 - stall))
        days[i] = train_days[i] * (1 + h)
        for k in ("mfu", "global_batch", "tokens_per_s", "memory_gb"):
            cols[k][i] = best[k]
        cols["bubble_share"][i] = (best["pp"] - 1) / (best["interleave"]
                                                      * best["num_microbatches"])
        for k in LAYOUT_KEYS:
            lay[k][i] = best[k]
    return days, train_days, cols, lay


def _power_cap(gpu: GPUSpec, facility: Facility) -> tuple:
    """(the most GPUs within the power envelope or None, kW per GPU or None)."""
    cap_gpus, kw = None, None
    pue, power_kw_per_gpu = float(facility.pue), facility.power_kw_per_gpu
    if facility.max_power_mw is not None:
        P = float(facility.max_power_mw)
        if power_kw_per_gpu is None:
            w = getattr(gpu, "power_w_per_gpu", None)
            if w is None:
                raise v.InputError("power_kw_per_gpu", "a power envelope needs the system "
                                   "power per GPU (e.g. DGX H100: 10.2 kW / 8 = 1.275 kW)")
            kw = float(w) / 1000
        else:
            kw = float(power_kw_per_gpu)
        cap_gpus = int(np.floor(P * 1000 / (kw * pue) + 1e-9))
    elif power_kw_per_gpu is not None:
        kw = float(power_kw_per_gpu)
    return cap_gpus, kw


def _power_notes(cap_gpus: int, max_power_mw: float | None, kw: float, pue: float, node: int, gpus: np.ndarray,
                 days: np.ndarray, fits: np.ndarray, meets_any: np.ndarray, meets: np.ndarray,
                 target: float) -> list:
    """What the power envelope does to the sizing, in words."""
    if cap_gpus < gpus[0]:
        return [f"the power envelope ({max_power_mw:g} MW at {kw:g} kW per GPU and "
                f"PUE {pue:g}) allows {cap_gpus} GPUs, less than one node of {node}"]
    if meets_any.any() and not meets.any():
        need = int(gpus[np.argmax(meets_any)])
        return [f"the power envelope binds: {max_power_mw:g} MW allows {cap_gpus:,} "
                f"GPUs ({kw:g} kW each at PUE {pue:g}); meeting {target:g} days needs "
                f"{need:,} GPUs ({cluster_power_mw(need, kw, pue):.3g} MW)"]
    if not meets_any.any() and fits.any() and gpus[np.argmin(days)] > cap_gpus:
        return [f"the power envelope binds: {max_power_mw:g} MW allows {cap_gpus:,} "
                f"GPUs; the fastest size, {int(gpus[np.argmin(days)]):,} GPUs, is beyond it"]
    return []


def _nearest_sizing(model: ModelSpec, gpu: GPUSpec, gpus: np.ndarray, days: np.ndarray, train_days: np.ndarray,
                    fits: np.ndarray, ok: np.ndarray, cols: dict[str, np.ndarray],
                    layout_at: Callable[[int], dict[str, Any]], advice_at: Callable[[int], BatchAdvice],
                    notes: list[str], floor: int | None, total_flops: float, D: float, table: pd.DataFrame,
                    target: float, h: float, B: int, max_nodes: int, info: dict[str, Any], cap_gpus: int | None,
                    space: planner.Space) -> Sizing:
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
