"""Parallelism planner: every layout as numpy arrays, one vectorized prediction, ranked.

The space: TP (powers of two up to a node, or beyond on request), PP (divisors of the
layer count, and depths that leave the first and last stages one layer short, balanced
automatically: 126 layers on PP16 as 7/8/.../8/7), CP, micro-batch (gradient accumulation
follows from the global batch), ZeRO stage 0-3, recomputation, sequence parallelism and
interleaved chunks. Layouts that break a
divisibility rule never enter; those that do not fit in memory are kept but marked, so a
reviewer sees what the memory wall costs.

References
----------
1. Narayanan et al. 2021, arXiv:2104.04473, §3 (takeaways: TP within a node, PP across,
   DP for the rest) and §5.
2. Seed article 001: "keep TP within a single node (max 8 GPUs), keep PP within a rack
   (max 4 nodes), and scale DP across racks" (the "seed" heuristic here).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Mapping, Sequence, SupportsInt

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import _validate as v
from ..training.arch import ModelSpec
from ..training.hardware import FabricSpec, GPUSpec, Hardware
from ..training.layout import (  # noqa: F401
    Layout,
    describe_layout,
    field_kind,
    layout_columns,
    stage_layers_text,
)
from ..training.memory import MemoryOptions
from ..training.precision import PRECISIONS, check_precision
from ..training.step import STEP_TERMS, Calibration, Options, StepPrediction, predict_step
from .space import (  # noqa: F401
    HEURISTICS,
    Space,
    enumerate_layouts,
    expert_parallel_sizes,
    grid_size,
    interleave_valid,
    layout_axes,
    layout_valid,
    pipeline_depths,
)

GB = 1e9


@dataclass(kw_only=True)
class Plan:
    """Ranked layouts and the counts behind them."""

    layouts: pd.DataFrame          # every valid layout, best first (fitting ones first)
    evaluated: int                 # valid layouts predicted
    feasible: int                  # of which fit in memory
    candidates: int                # grid before divisibility rules
    pareto: pd.DataFrame = field(default_factory=pd.DataFrame)
    note: str = ""                 # why nothing was evaluated, when evaluated == 0

    def top(self, n: int = 5) -> pd.DataFrame:
        """The best n fitting layouts, one per distinct (step time, memory)."""
        return distinct(self.layouts[self.layouts["fits"]]).head(n)


def distinct(df: pd.DataFrame) -> pd.DataFrame:
    """Drop layouts that repeat an earlier one's step time and memory (equivalent work)."""
    key = pd.DataFrame({"t": df["step_time_s"].round(9), "m": df["memory_gb"].round(6)})
    return df[~key.duplicated()]


#: a plan frame's layout columns, in order: :class:`Layout`'s fields but the global batch
#: (the plan's, the same on every row), with dp and the micro-batches per pipeline
FRAME_LAYOUT_COLUMNS = layout_columns({"cp": "dp", "micro_batch": "num_microbatches"},
                                      drop=("global_batch",))
#: the precision and memory recipe a plan sets per prediction pass, not per layout
RECIPE_COLUMNS = ("precision", "recompute_modules", "optimizer_moments")
#: the layout as ``plan --json`` gives it (the stage split comes as ``stage_layers``, the
#: recipe in the description)
LAYOUT_COLUMNS = tuple(k for k in FRAME_LAYOUT_COLUMNS
                       if k not in (*RECIPE_COLUMNS, "middle_stage_layers"))


@dataclass(frozen=True)
class Search:
    """What the planner searches and how it ranks what it finds, checked once here.

    Attributes
    ----------
    space : Space
        The layouts to choose from.
    precision : {"bf16", "fp8", "mxfp8"}, optional
        GEMM precision of every layout (a numerics decision, not searched); None: the step
        options' precision.
    heuristic : {"none", "seed"}
        "seed" keeps TP within a node and PP within four nodes.
    rank_by : {"time", "cost"}
        Rank fitting layouts by step time, or by dollars per token (needs
        ``usd_per_gpu_hour``).
    usd_per_gpu_hour : float, optional
        [USD per GPU-hour], for $ per million tokens.
    simplest_within : float
        Among the fitting layouts within this share of the best, the one with the fewest
        parallel dimensions (:func:`parallel_dimensions`) ranks first [-], in [0, 1]; 0
        ranks by time or cost alone.
    memory_margin : float
        Share of the GPU's memory a layout should leave free [-], in [0, 1): within
        ``simplest_within`` of the best, layouts that leave it rank first
        (:func:`memory_tight`); 0: memory does not rank.
    memory : MemoryOptions
        The memory model's choices for every layout (e.g. ``moe_probs_at``).
    """

    space: Space = Space()
    precision: str | None = None
    heuristic: str = "none"
    rank_by: str = "time"
    usd_per_gpu_hour: float | None = None
    simplest_within: float = 0.0
    memory_margin: float = 0.0
    memory: MemoryOptions = MemoryOptions()

    def __post_init__(self) -> None:
        v.choice("rank_by", self.rank_by, ("time", "cost"))
        if self.rank_by == "cost" and self.usd_per_gpu_hour is None:
            raise v.InputError("usd_per_gpu_hour", "ranking by cost needs usd_per_gpu_hour")
        if self.usd_per_gpu_hour is not None:
            v.positive("usd_per_gpu_hour", self.usd_per_gpu_hour)
        if self.precision is not None:
            v.choice("precision", self.precision, PRECISIONS)
        v.choice("heuristic", self.heuristic, HEURISTICS)
        v.in_range("simplest_within", self.simplest_within, 0, 1)
        v.in_range("memory_margin", self.memory_margin, 0, 1, high_inclusive=False)
        if not isinstance(self.memory, MemoryOptions):
            raise v.InputError("memory", f"memory must be a MemoryOptions, not {self.memory!r}")

    def precision_on(self, gpu: GPUSpec, options: Options) -> str:
        """The GEMM precision every layout runs in (``options.precision`` unless the search
        sets one), refused where ``gpu`` cannot run it
        (:func:`llmcost.training.precision.check_precision`)."""
        prec = str(v.choice("precision", options.precision if self.precision is None
                            else self.precision, PRECISIONS))
        check_precision(prec, gpu)
        return prec

    def require_time_ranking(self, caller: str) -> None:
        """Refuse a search ``caller`` would not honour: it ranks by step time over the
        whole space (no cost ranking, no heuristic)."""
        if self.rank_by != "time" or self.heuristic != "none":
            raise v.InputError("search", f"{caller} ranks by time over the whole space: "
                                         f"rank_by must be 'time' and heuristic 'none', got "
                                         f"{self.rank_by!r} and {self.heuristic!r}")


def plan(model: ModelSpec, hardware: Hardware, gpus: ArrayLike, global_batch: int,
         search: Search = Search(), options: Options = Options(),
         calibration: Calibration | None = None, seq_len: int | None = None) -> Plan:
    r"""Evaluate every valid layout in one vectorized call and rank them.

    Ranking: layouts that fit first, then by step time (``search.rank_by="time"``) or by
    dollars per token (``"cost"``: usd_per_gpu_hour x gpus / 3600 / tokens per second, which
    differs from time when several cluster sizes are offered). The Pareto front keeps the
    fitting layouts no other beats on both step time and memory headroom.

    The GEMM precision is an input, not a dimension of the search: every layout runs in
    ``search.precision`` (a run's number format is a numerics decision, not a layout one),
    and the frame carries it in a ``precision`` column.

    Parameters
    ----------
    model : ModelSpec
    hardware : Hardware
        The GPU and its fabrics, as :func:`llmcost.training.step.predict_step`.
    gpus : int or sequence of int
        [-].
    global_batch : int
        [sequences].
    search : Search
        The space, precision, heuristic and ranking (:class:`Search`).
    options : Options
    calibration : Calibration, optional
        Default: the set of the GPU's generation (:func:`llmcost.training.step.calibration_for`).
    seq_len : int, optional

    Returns
    -------
    Plan
        Layouts with step_time_s [s], mfu, hfu [-], memory_gb, headroom_gb [GB],
        usd_per_million_tokens [USD], and the step-time breakdown [s].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §3, §5.
    """
    gpu, scale_up, scale_out = hardware.gpu, hardware.scale_up, hardware.scale_out
    space = search.space
    prec = search.precision_on(gpu, options)
    # TP and CP may span the scale-up (NVLink) domain, e.g. 72 GPUs of a GB200 NVL72 rack
    L = enumerate_layouts(model, gpus, global_batch, gpu.scale_up_domain, space, seq_len,
                          search.heuristic)
    n = len(L["tp"])
    cand = grid_size(model, gpus, gpu.scale_up_domain, space)
    if n == 0:
        # an answer, not an error: callers index "fits", "step_time_s"... on any plan
        empty = empty_layouts_frame()
        return Plan(layouts=empty, evaluated=0, feasible=0, candidates=cand,
                    pareto=empty.copy(),
                    note=f"no layout in the space splits a global batch of {int(global_batch)} "
                         f"sequences over {_sizes_text(gpus)} GPUs (t p c must divide the GPUs "
                         "and micro-batch x DP the batch): change the GPU count or the batch")
    df = _predicted(model, gpu, scale_up, scale_out, L, global_batch, space, options,
                    calibration, seq_len, search.memory, prec, search.usd_per_gpu_hour)
    n = len(df)
    key = "step_time_s" if search.rank_by == "time" else "usd_per_million_tokens"
    df = _ranked(df, key, search.simplest_within, search.memory_margin)
    return Plan(layouts=df, evaluated=n, feasible=int(df["fits"].sum()), candidates=cand,
                pareto=pareto_front(df))


def recipe_layout(L: Mapping[str, np.ndarray], global_batch: ArrayLike, space: Space, precision: str,
                  recompute_modules: tuple[str, ...], optimizer_moments: str) -> Layout:
    """The candidate layouts ``L`` (arrays of the searched axes, one element per layout) as
    one :class:`~llmcost.training.layout.Layout` under one memory recipe: the space's stage
    split, the precision, the modules recomputed by name and the optimizer moments."""
    return Layout(gpus=L["gpus"], tp=L["tp"], pp=L["pp"], cp=L["cp"], micro_batch=L["micro_batch"],
                  global_batch=global_batch, interleave=L["interleave"], zero_stage=L["zero_stage"],
                  recompute=L["recompute"], sequence_parallel=L["sequence_parallel"],
                  flash_attention=L["flash_attention"], tp_comm_overlap=L["tp_comm_overlap"],
                  ep=L["ep"], etp=L["etp"], first_stage_layers=space.first_stage_layers,
                  last_stage_layers=space.last_stage_layers, precision=precision,
                  recompute_modules=recompute_modules, optimizer_moments=optimizer_moments)


def _predicted(model: ModelSpec, gpu: GPUSpec, scale_up: FabricSpec, scale_out: FabricSpec,
               L: dict[str, np.ndarray], global_batch: ArrayLike, space: Space, options: Options,
               calibration: Calibration | None, seq_len: int | None, memory: MemoryOptions,
               prec: str, usd_per_gpu_hour: float | None) -> pd.DataFrame:
    """The frame of layouts ``L`` predicted under each memory recipe of ``space``, recipe
    after recipe (``global_batch``: one, or one per layout)."""
    frames = []
    # one vectorized prediction per memory recipe (a handful), every layout in each
    for mods in space.recompute_modules:
        for moments in space.optimizer_moments:
            layout = recipe_layout(L, global_batch, space, prec, tuple(mods), moments)
            pred = predict_step(model, Hardware(gpu, scale_up, scale_out), layout,
                                options=options, calibration=calibration,
                                memory=memory, seq_len=seq_len,
                                with_scaling=False)
            frames.append(layouts_frame(L, pred, gpu, usd_per_gpu_hour,
                                        recipe=dict(precision=prec,
                                                    recompute_modules=",".join(mods),
                                                    optimizer_moments=moments)))
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _ranked(df: pd.DataFrame, key: str, simplest_within: float,
            memory_margin: float) -> pd.DataFrame:
    """The layouts in :func:`plan`'s order: fitting first, by ``key``, ties to the simpler
    layout; then, within ``simplest_within`` of the best, :func:`_simplest_first`."""
    # ties (e.g. CP x micro-batch swaps that leave each GPU the same work) go to the
    # simpler layout: less memory, then fewer moving parts
    df = df.sort_values(["fits", key, "memory_gb", "cp", "interleave", "zero_stage", "tp"],
                        ascending=[False, True, True, True, True, True, True],
                        kind="stable").reset_index(drop=True)
    within, margin = float(simplest_within), float(memory_margin)
    if within > 0 and bool(df["fits"].iloc[0]):
        df = _simplest_first(df, key, within, margin)
    return df


def first_layouts(model: ModelSpec, hardware: Hardware, pairs: Sequence[tuple[int, int]],
                  search: Search = Search(), options: Options = Options()) -> list:
    """The layout :func:`plan` ranks first (by time) at each (gpus, global batch) pair, all
    pairs predicted together: one vectorized prediction per memory recipe, each pair's rows
    then ranked alone, in the order :func:`plan` gives them (the same frame, the same stable
    sort), so each first row is :func:`plan`'s at that pair.

    Parameters
    ----------
    model, hardware, options
        As :func:`plan`.
    pairs : sequence of (int, int)
        (GPUs [-], global batch [sequences]).
    search : Search
        As :func:`plan`'s, ranking by time with no heuristic.

    Returns
    -------
    list of pandas.Series or None
        Per pair, :func:`plan`'s first layout; None where no layout splits the batch.
    """
    search.require_time_ranking("first_layouts")
    gpu, scale_up, scale_out = hardware.gpu, hardware.scale_up, hardware.scale_out
    space = search.space
    prec = search.precision_on(gpu, options)
    Ls = [enumerate_layouts(model, int(g), int(B), gpu.scale_up_domain, space)
          for g, B in pairs]
    sizes = [len(L["tp"]) for L in Ls]
    out = [None] * len(Ls)
    if sum(sizes) == 0:
        return out
    L = {k: np.concatenate([x[k] for x in Ls]) for k in Ls[0]}
    batch = np.concatenate([np.full(n, int(B), dtype=np.int64) for n, (_, B) in zip(sizes, pairs)])
    df = _predicted(model, gpu, scale_up, scale_out, L, batch, space, options, None, None,
                    search.memory, prec, None)
    pair = np.tile(np.repeat(np.arange(len(Ls)), sizes), len(df) // sum(sizes))
    for i, rows in df.groupby(pair, sort=True):
        out[int(i)] = _ranked(rows.reset_index(drop=True), "step_time_s",
                              search.simplest_within, search.memory_margin).iloc[0]
    return out


def parallel_dimensions(df: pd.DataFrame | Mapping[str, np.ndarray]) -> np.ndarray:
    """How many ways a layout splits the work, the measure of its complexity [-]: one per
    size above 1 among TP, PP, interleaving, CP, EP and expert TP, plus one each for ZeRO-3
    (parameter gathers every layer), recomputation, modules recomputed by name and
    low-precision optimizer moments."""
    n = sum((np.asarray(df[k]) > 1).astype(int) for k in ("tp", "pp", "interleave", "cp", "ep", "etp"))
    n = n + (np.asarray(df["zero_stage"]) >= 3) + (np.asarray(df["recompute"]) != "none")
    if "recompute_modules" in df:
        n = n + (np.asarray(df["recompute_modules"]) != "")
    if "optimizer_moments" in df:
        n = n + (np.asarray(df["optimizer_moments"]) != "fp32")
    return n


def memory_tight(memory_gb: ArrayLike, capacity_gb: ArrayLike, margin: ArrayLike) -> np.ndarray:
    """Whether a layout leaves less than ``margin`` of the GPU's memory free [bool]:
    memory_gb > (1 - margin) x capacity_gb (arrays broadcast)."""
    return np.asarray(memory_gb) > (1 - np.asarray(margin)) * np.asarray(capacity_gb)


def _simplest_first(df: pd.DataFrame, key: str, within: float,
                    margin: float = 0.0) -> pd.DataFrame:
    """The fitting layouts within ``within`` of the best, those leaving ``margin`` of memory
    free first, then simplest first (then by ``key``), ahead of the rest in their order."""
    near = df["fits"].to_numpy() & (df[key].to_numpy() <= df[key].iloc[0] * (1 + within))
    tight = memory_tight(df["memory_gb"][near], df["capacity_gb"][near], margin) \
        if margin > 0 else False
    head = df[near].assign(_dims=parallel_dimensions(df[near]), _tight=tight)
    head = head.sort_values(["_tight", "_dims", key], kind="stable")
    head = head.drop(columns=["_dims", "_tight"])
    return pd.concat([head, df[~near]]).reset_index(drop=True)


def _sizes_text(gpus: ArrayLike) -> str:
    g = np.unique(np.atleast_1d(gpus))
    return str(int(g[0])) if len(g) == 1 else f"{int(g[0])}-{int(g[-1])}"


def empty_layouts_frame() -> pd.DataFrame:
    """A frame with every column :func:`plan` gives, and no rows."""
    # dtypes from Layout's annotations (strings here); dp and the micro-batches are ints
    types = {f.name: field_kind(f.name) for f in fields(Layout)}
    cols = {k: pd.Series(dtype={"bool": bool, "str": object, "tuple": object}.get(
        types.get(k), int)) for k in FRAME_LAYOUT_COLUMNS}  # type: ignore[arg-type]  # None (dp...) finds int
    for k in ("step_time_s", "mfu", "hfu", "model_tflops_per_gpu", "hardware_tflops_per_gpu",
              "tokens_per_s", *StepPrediction.BREAKDOWN, "memory_gb", "capacity_gb",
              "headroom_gb", "fits", "usd_per_million_tokens"):
        cols[k] = pd.Series(dtype=bool if k == "fits" else float)
    return pd.DataFrame(cols)


def layouts_frame(L: dict, pred: StepPrediction, gpu: GPUSpec,
                  usd_per_gpu_hour: float | None, recipe: dict) -> pd.DataFrame:
    """The frame of layouts ``L`` (:func:`.enumerate_layouts`) predicted with one ``recipe``
    (:data:`RECIPE_COLUMNS`, one value each for every row) as ``pred``."""
    n = len(L["tp"])

    def col(x: ArrayLike) -> np.ndarray:
        return np.broadcast_to(np.asarray(x), (n,))

    df = pd.DataFrame({k: col(L[k]) for k in FRAME_LAYOUT_COLUMNS if k not in RECIPE_COLUMNS})
    for k in RECIPE_COLUMNS:
        df.insert(FRAME_LAYOUT_COLUMNS.index(k), k, recipe[k])
    for k in ("step_time_s", "mfu", "hfu", "model_tflops_per_gpu", "hardware_tflops_per_gpu",
              "tokens_per_s", *StepPrediction.BREAKDOWN):
        df[k] = col(getattr(pred, k))
    df["memory_gb"] = col(pred.memory_bytes) / GB
    df["capacity_gb"] = gpu.memory_bytes / GB
    df["headroom_gb"] = df["capacity_gb"] - df["memory_gb"]
    df["fits"] = col(pred.fits).astype(bool)
    if usd_per_gpu_hour is not None:
        price = float(v.positive("usd_per_gpu_hour", usd_per_gpu_hour))
        df["usd_per_million_tokens"] = price * df["gpus"] / 3600 / df["tokens_per_s"] * 1e6
    else:
        df["usd_per_million_tokens"] = np.nan
    return df


def pareto_front(df: pd.DataFrame) -> pd.DataFrame:
    """Fitting layouts not beaten on both step time and memory headroom."""
    f = df[df["fits"]].sort_values(["step_time_s", "headroom_gb"], ascending=[True, False])
    best_headroom = -np.inf
    keep = []
    for i, h in zip(f.index, f["headroom_gb"].to_numpy()):
        if h > best_headroom:   # sorted by time: each new point must add headroom
            keep.append(i)
            best_headroom = h
    return df.loc[keep].reset_index(drop=True)


def stage_layers_summary(pp: SupportsInt, first: SupportsInt, middle: SupportsInt, last: SupportsInt) -> dict:
    """Layers per stage as JSON: first, middle (per stage), middle_stages (count), last."""
    p = int(pp)
    return {"first": int(first), "middle": int(middle) if p > 2 else None,
            "middle_stages": max(p - 2, 0), "last": int(last)}


def runners_up(layouts: pd.DataFrame, n: int = 2, rel: float = 1e-3) -> tuple[pd.DataFrame, int]:
    """The next ``n`` fitting layouts slower than the best by more than ``rel``, and how many
    tie with the best (same step time: variants that give each GPU the same work)."""
    f = layouts[layouts["fits"]]
    if f.empty:
        return f, 0
    t0 = float(f["step_time_s"].iloc[0])
    slower = f["step_time_s"] > t0 * (1 + rel)
    ties = int((~slower).sum()) - 1
    return distinct(f[slower]).head(n), ties


def why_slower(best: pd.Series, other: pd.Series) -> str:
    """One sentence: by how much ``other`` is slower than ``best`` and which terms cause it."""
    dt = float(other["step_time_s"]) - float(best["step_time_s"])
    pct = dt / float(best["step_time_s"])
    diffs = sorted(((float(other[k]) - float(best[k]), k) for k in STEP_TERMS),
                   key=lambda x: -abs(x[0]))
    terms = [f"{'+' if d > 0 else '-'}{abs(d):.3g} s {STEP_TERMS[k].label}"
             for d, k in diffs[:3] if abs(d) > 1e-3 * float(best["step_time_s"])]
    extra = ""
    if not bool(other["fits"]):
        extra = f"; it does not fit ({float(other['memory_gb']):.1f} GB > {float(other['capacity_gb']):.1f} GB)"
    return (f"{describe_layout(other)} is {pct:+.1%} per step ({dt:+.3g} s): "
            f"{', '.join(terms) if terms else 'same terms'}{extra}")
