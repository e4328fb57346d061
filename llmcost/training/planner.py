"""Parallelism planner: every layout as numpy arrays, one vectorized prediction, ranked.

The space: TP (powers of two up to a node, or beyond on request), PP (divisors of the
layer count), CP, micro-batch (gradient accumulation follows from the global batch), ZeRO
stage 0-3, recomputation, sequence parallelism and interleaved chunks. Layouts that break a
divisibility rule never enter; those that do not fit in memory are kept but marked, so a
reviewer sees what the memory wall costs.

References
----------
.. [1] Narayanan et al. 2021, arXiv:2104.04473, §3 (takeaways: TP within a node, PP across,
   DP for the rest) and §5.
.. [2] Seed article 001: "keep TP within a single node (max 8 GPUs), keep PP within a rack
   (max 4 nodes), and scale DP across racks" (the "seed" heuristic here).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import _validate as v
from .arch import ModelSpec
from .flops import RECOMPUTE_MODES
from .hardware import FabricSpec, GPUSpec
from .step import DEFAULT_CALIBRATION, Calibration, Options, StepPrediction, predict_step

GB = 1e9
HEURISTICS = ("none", "seed")


@dataclass(frozen=True)
class Space:
    """What the planner may choose. Defaults cover what Megatron-LM offers."""

    tp: tuple = ()                    # empty: powers of two up to GPUs per node
    max_tp: int | None = None         # allow TP beyond a node (slow: crosses the fabric)
    pp: tuple = ()                    # empty: every divisor of the layer count
    cp: tuple = (1, 2, 4, 8)
    micro_batch: tuple = (1, 2, 4, 8, 16, 32)
    zero_stage: tuple = (0, 1, 2, 3)
    recompute: tuple = RECOMPUTE_MODES
    sequence_parallel: tuple = (False, True)
    interleave: tuple = ()            # empty: every divisor of the layers per stage
    flash_attention: tuple = (False, True)
    tp_comm_overlap: tuple = (False, True)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _interleaves(model: ModelSpec, space: Space) -> tuple:
    return space.interleave or tuple(_divisors(model.layers))


def enumerate_layouts(model: ModelSpec, gpus, global_batch: int, gpus_per_node: int,
                      space: Space = Space(), seq_len: int | None = None,
                      heuristic: str = "none") -> dict[str, np.ndarray]:
    """All valid layouts as flat arrays (one element per layout).

    Valid: t divides the heads (and shards or replicates the KV heads), p divides the
    layers, c divides the sequence, t p c divides the GPUs, b d divides the global batch,
    v > 1 only with p > 1 where v divides the layers per stage and p divides the
    micro-batch count, SP only with t > 1. ``heuristic="seed"`` keeps t <= one node and
    t p <= four nodes (PP inside a rack).

    Parameters
    ----------
    model : ModelSpec
    gpus : int or sequence of int
        Cluster sizes to consider [-].
    global_batch : int
        [sequences].
    gpus_per_node : int
    space : Space
    seq_len : int, optional
    heuristic : {"none", "seed"}

    Returns
    -------
    layouts : dict of arrays
        gpus, tp, pp, cp, dp, micro_batch, num_microbatches, zero_stage, recompute,
        sequence_parallel, interleave, flash_attention, tp_comm_overlap.

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §3.
    """
    v.choice("heuristic", heuristic, HEURISTICS)
    if seq_len is not None:
        v.integer("seq_len", seq_len)
    G = np.unique(v.integer("gpus", np.atleast_1d(gpus)))
    B = int(v.integer("global_batch", global_batch))
    node = int(v.integer("gpus_per_node", gpus_per_node))
    ax = layout_axes(model, node, space, seq_len)
    rec = ax["recompute"]
    axes = [G, ax["tp"], ax["pp"], ax["cp"], ax["micro_batch"], ax["zero_stage"],
            np.arange(len(rec)), ax["sequence_parallel"], ax["interleave"],
            ax["flash_attention"], ax["tp_comm_overlap"]]
    grids = np.meshgrid(*axes, indexing="ij")
    g, t, p, c, b, z, ri, sp, vv, fa, to = (a.ravel() for a in grids)
    ok, dp, m = layout_valid(model, g, t, p, c, b, B, vv, sp, to, node, heuristic)
    out = dict(gpus=g, tp=t, pp=p, cp=c, dp=dp, micro_batch=b, num_microbatches=m,
               zero_stage=z, recompute=rec[ri], sequence_parallel=sp, interleave=vv,
               flash_attention=fa, tp_comm_overlap=to)
    return {k: x[ok] for k, x in out.items()}


def layout_axes(model: ModelSpec, gpus_per_node: int, space: Space = Space(),
                seq_len: int | None = None) -> dict[str, np.ndarray]:
    """The values each layout dimension may take for this model, before the rules that
    tie dimensions together (see :func:`layout_valid`).

    TP: the space's, or powers of two up to a node (``max_tp`` beyond), dividing the heads
    and sharding or replicating the KV heads; PP: dividing the layers; CP: dividing the
    sequence; interleave: the space's, or every divisor of the layers.

    Parameters
    ----------
    model : ModelSpec
    gpus_per_node : int
    space : Space
    seq_len : int, optional

    Returns
    -------
    axes : dict of arrays
        tp, pp, cp, micro_batch, zero_stage, recompute, sequence_parallel, interleave,
        flash_attention, tp_comm_overlap.

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §3.
    """
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    node = int(v.integer("gpus_per_node", gpus_per_node))
    max_tp = node if space.max_tp is None else int(space.max_tp)
    tps = space.tp or tuple(2**i for i in range(0, 12) if 2**i <= max_tp)
    tps = [t for t in tps if model.heads % t == 0
           and (model.kv_heads % t == 0 or t % model.kv_heads == 0)]
    pps = space.pp or tuple(_divisors(model.layers))
    pps = [p for p in pps if model.layers % p == 0]
    cps = [c for c in space.cp if s % c == 0]
    rec = np.array(space.recompute)
    v.choices("recompute", rec, RECOMPUTE_MODES)
    return dict(tp=np.array(tps, dtype=int), pp=np.array(pps, dtype=int),
                cp=np.array(cps, dtype=int), micro_batch=np.array(space.micro_batch, dtype=int),
                zero_stage=np.array(space.zero_stage, dtype=int), recompute=rec,
                sequence_parallel=np.array(space.sequence_parallel, dtype=bool),
                interleave=np.array(_interleaves(model, space), dtype=int),
                flash_attention=np.array(space.flash_attention, dtype=bool),
                tp_comm_overlap=np.array(space.tp_comm_overlap, dtype=bool))


def layout_valid(model: ModelSpec, gpus, tp, pp, cp, micro_batch, global_batch, interleave,
                 sequence_parallel=False, tp_comm_overlap=False, gpus_per_node=8,
                 heuristic="none"):
    r"""Which layouts obey the rules that tie dimensions together (arrays broadcast).

    .. math:: d = \frac{N}{t\,p\,c} \in \mathbb{N},\quad m = \frac{B}{b\,d} \in \mathbb{N},
              \quad v = 1 \;\lor\; (p > 1,\ v \mid l/p,\ p \mid m)

    and SP or TP-overlap only with t > 1; ``heuristic="seed"`` adds t <= one node and
    t p <= four nodes.

    Parameters
    ----------
    model : ModelSpec
    gpus, tp, pp, cp, micro_batch, global_batch, interleave : int or array
        N, t, p, c, b, B [sequences], v [-].
    sequence_parallel, tp_comm_overlap : bool or array
    gpus_per_node : int
    heuristic : {"none", "seed"}

    Returns
    -------
    ok : bool array
    dp, num_microbatches : int arrays
        d and m (1 where not valid) [-].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §2.2 (interleaving needs m a multiple
       of p) and §3.
    """
    g, t, p, c, b, B, vv = (np.asarray(x) for x in (gpus, tp, pp, cp, micro_batch,
                                                    global_batch, interleave))
    sp, to = np.asarray(sequence_parallel), np.asarray(tp_comm_overlap)
    used = t * p * c
    ok = (g % used == 0)
    dp = np.where(ok, g // np.maximum(used, 1), 1)
    ok = ok & (B % (b * dp) == 0)
    m = np.where(ok, B // np.maximum(b * dp, 1), 1)
    per_stage = model.layers // p
    ok &= (vv == 1) | ((p > 1) & (per_stage % vv == 0) & (m % p == 0))
    ok &= (sp <= (t > 1)) & (to <= (t > 1))
    if heuristic == "seed":
        ok &= (t <= gpus_per_node) & (t * p <= 4 * gpus_per_node)
    return ok, dp, m


def grid_size(model: ModelSpec, gpus, gpus_per_node: int, space: Space = Space()) -> int:
    """Candidates before the divisibility rules (the Cartesian grid)."""
    node = int(gpus_per_node)
    max_tp = node if space.max_tp is None else int(space.max_tp)
    n_tp = len(space.tp or [2**i for i in range(0, 12) if 2**i <= max_tp])
    n_pp = len(space.pp or _divisors(model.layers))
    return int(len(np.atleast_1d(gpus)) * n_tp * n_pp * len(space.cp) * len(space.micro_batch)
               * len(space.zero_stage) * len(space.recompute) * len(space.sequence_parallel)
               * len(_interleaves(model, space)) * len(space.flash_attention)
               * len(space.tp_comm_overlap))


@dataclass
class Plan:
    """Ranked layouts and the counts behind them."""

    layouts: pd.DataFrame          # every valid layout, best first (fitting ones first)
    evaluated: int                 # valid layouts predicted
    feasible: int                  # of which fit in memory
    candidates: int                # grid before divisibility rules
    pareto: pd.DataFrame = field(default_factory=pd.DataFrame)
    note: str = ""                 # why nothing was evaluated, when evaluated == 0

    def top(self, n=5) -> pd.DataFrame:
        """The best n fitting layouts, one per distinct (step time, memory)."""
        return distinct(self.layouts[self.layouts["fits"]]).head(n)


def distinct(df: pd.DataFrame) -> pd.DataFrame:
    """Drop layouts that repeat an earlier one's step time and memory (equivalent work)."""
    key = pd.DataFrame({"t": df["step_time_s"].round(9), "m": df["memory_gb"].round(6)})
    return df[~key.duplicated()]


LAYOUT_COLUMNS = ("gpus", "tp", "pp", "cp", "dp", "micro_batch", "num_microbatches",
                  "interleave", "zero_stage", "recompute", "sequence_parallel",
                  "flash_attention", "tp_comm_overlap")


def plan(model: ModelSpec, gpu: GPUSpec, scale_up: FabricSpec, scale_out: FabricSpec, gpus,
         global_batch: int, space: Space = Space(), options: Options = Options(),
         calibration: Calibration = DEFAULT_CALIBRATION, seq_len: int | None = None,
         usd_per_gpu_hour: float | None = None, heuristic: str = "none",
         rank_by: str = "time", memory_kwargs=None) -> Plan:
    r"""Evaluate every valid layout in one vectorized call and rank them.

    Ranking: layouts that fit first, then by step time (``rank_by="time"``) or by dollars
    per token (``"cost"``: usd_per_gpu_hour x gpus / 3600 / tokens per second, which
    differs from time when several cluster sizes are offered). The Pareto front keeps the
    fitting layouts no other beats on both step time and memory headroom.

    Parameters
    ----------
    model, gpu, scale_up, scale_out
        As :func:`llmcost.training.step.predict_step`.
    gpus : int or sequence of int
        [-].
    global_batch : int
        [sequences].
    space : Space
    options : Options
    calibration : Calibration
    seq_len : int, optional
    usd_per_gpu_hour : float, optional
        [USD per GPU-hour], for $ per million tokens.
    heuristic : {"none", "seed"}
    rank_by : {"time", "cost"}
    memory_kwargs : dict, optional

    Returns
    -------
    Plan
        Layouts with step_time_s [s], mfu, hfu [-], memory_gb, headroom_gb [GB],
        usd_per_million_tokens [USD], and the step-time breakdown [s].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §3, §5.
    """
    v.choice("rank_by", rank_by, ("time", "cost"))
    if rank_by == "cost" and usd_per_gpu_hour is None:
        raise v.InputError("usd_per_gpu_hour", "ranking by cost needs usd_per_gpu_hour")
    L = enumerate_layouts(model, gpus, global_batch, gpu.gpus_per_node, space, seq_len, heuristic)
    n = len(L["tp"])
    cand = grid_size(model, gpus, gpu.gpus_per_node, space)
    if n == 0:
        # an answer, not an error: callers index "fits", "step_time_s"... on any plan
        empty = empty_layouts_frame()
        return Plan(empty, 0, 0, cand, empty.copy(),
                    note=f"no layout in the space splits a global batch of {int(global_batch)} "
                         f"sequences over {_sizes_text(gpus)} GPUs (t p c must divide the GPUs "
                         "and micro-batch x DP the batch): change the GPU count or the batch")
    pred = predict_step(model, gpu, scale_up, scale_out, L["gpus"], L["tp"], L["pp"],
                        global_batch, L["cp"], L["micro_batch"], L["interleave"],
                        L["recompute"], L["sequence_parallel"], L["zero_stage"], options,
                        calibration, seq_len, memory_kwargs, with_scaling=False,
                        flash_attention=L["flash_attention"],
                        tp_comm_overlap=L["tp_comm_overlap"])
    df = layouts_frame(L, pred, gpu, usd_per_gpu_hour)
    key = "step_time_s" if rank_by == "time" else "usd_per_million_tokens"
    # ties (e.g. CP x micro-batch swaps that leave each GPU the same work) go to the
    # simpler layout: less memory, then fewer moving parts
    df = df.sort_values(["fits", key, "memory_gb", "cp", "interleave", "zero_stage", "tp"],
                        ascending=[False, True, True, True, True, True, True],
                        kind="stable").reset_index(drop=True)
    return Plan(df, n, int(df["fits"].sum()), cand, pareto_front(df))


def _sizes_text(gpus) -> str:
    g = np.unique(np.atleast_1d(gpus))
    return str(int(g[0])) if len(g) == 1 else f"{int(g[0])}-{int(g[-1])}"


def empty_layouts_frame() -> pd.DataFrame:
    """A frame with every column :func:`plan` gives, and no rows."""
    cols = {k: pd.Series(dtype=bool if k in ("sequence_parallel", "flash_attention",
                                              "tp_comm_overlap") else
                         object if k == "recompute" else int) for k in LAYOUT_COLUMNS}
    for k in ("step_time_s", "mfu", "hfu", "model_tflops_per_gpu", "hardware_tflops_per_gpu",
              "tokens_per_s", *StepPrediction.BREAKDOWN, "memory_gb", "capacity_gb",
              "headroom_gb", "fits", "usd_per_million_tokens"):
        cols[k] = pd.Series(dtype=bool if k == "fits" else float)
    return pd.DataFrame(cols)


def layouts_frame(L: dict, pred: StepPrediction, gpu: GPUSpec,
                  usd_per_gpu_hour: float | None) -> pd.DataFrame:
    n = len(L["tp"])

    def col(x):
        return np.broadcast_to(np.asarray(x), (n,))

    df = pd.DataFrame({k: col(L[k]) for k in LAYOUT_COLUMNS})
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


def describe_layout(row) -> str:
    parts = [f"TP{int(row['tp'])}", f"PP{int(row['pp'])}"]
    if int(row["interleave"]) > 1:
        parts[-1] += f"x{int(row['interleave'])}"
    if int(row["cp"]) > 1:
        parts.append(f"CP{int(row['cp'])}")
    parts.append(f"DP{int(row['dp'])}")
    parts.append(f"mb{int(row['micro_batch'])}")
    parts.append(f"ZeRO-{int(row['zero_stage'])}")
    parts.append(f"recompute={row['recompute']}")
    if bool(row["sequence_parallel"]):
        parts.append("SP")
    if "flash_attention" in row and bool(row["flash_attention"]):
        parts.append("flash")
    if "tp_comm_overlap" in row and bool(row["tp_comm_overlap"]):
        parts.append("TP-overlap")
    return " ".join(parts)


BREAKDOWN_LABELS = {
    "compute_s": "compute", "tp_comm_s": "tensor-parallel communication",
    "cp_comm_s": "context-parallel communication", "pp_p2p_s": "pipeline sends",
    "pp_bubble_s": "pipeline bubble", "dp_comm_s": "data-parallel gradient sync",
    "optimizer_s": "optimizer step",
}


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


def why_slower(best, other) -> str:
    """One sentence: by how much ``other`` is slower than ``best`` and which terms cause it."""
    dt = float(other["step_time_s"]) - float(best["step_time_s"])
    pct = dt / float(best["step_time_s"])
    diffs = sorted(((float(other[k]) - float(best[k]), k) for k in BREAKDOWN_LABELS),
                   key=lambda x: -abs(x[0]))
    terms = [f"{'+' if d > 0 else '-'}{abs(d):.3g} s {BREAKDOWN_LABELS[k]}"
             for d, k in diffs[:3] if abs(d) > 1e-3 * float(best["step_time_s"])]
    extra = ""
    if not bool(other["fits"]):
        extra = f"; it does not fit ({float(other['memory_gb']):.1f} GB > {float(other['capacity_gb']):.1f} GB)"
    return (f"{describe_layout(other)} is {pct:+.1%} per step ({dt:+.3g} s): "
            f"{', '.join(terms) if terms else 'same terms'}{extra}")
