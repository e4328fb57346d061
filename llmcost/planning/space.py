"""The layouts the planner searches: what it may choose (:class:`Space`), the values each
dimension takes for a model, and the divisibility rules that tie the dimensions together.

Layouts that break a rule never enter the plan (:func:`enumerate_layouts`); sizing applies the
same rules at every cluster size, so this module is what the planner and sizing share.

References
----------
1. Narayanan et al. 2021, arXiv:2104.04473, §2.2 and §3.
2. NVIDIA Megatron-LM, megatron/core/transformer/transformer_block.py and
   transformer_config.py (pipeline stage splits, interleaving rules).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v
from ..training.arch import ModelSpec
from ..training.flops import RECOMPUTE_MODES
from ..training.layout import Layout
from ..training.memory import _interleave_ok, _stage_layers

HEURISTICS = ("none", "seed")


@dataclass(frozen=True)
class Space:
    """What the planner may choose. Defaults cover what Megatron-LM offers."""

    tp: tuple = ()                    # empty: powers of two up to GPUs per node
    max_tp: int | None = None         # allow TP beyond a node (slow: crosses the fabric)
    pp: tuple = ()                    # empty: every depth that splits the layers
    cp: tuple = (1, 2, 4, 8)
    micro_batch: tuple = (1, 2, 4, 8, 16, 32)
    zero_stage: tuple = (0, 1, 2, 3)
    recompute: tuple = RECOMPUTE_MODES
    sequence_parallel: tuple = (False, True)
    interleave: tuple = ()            # empty: every divisor of the layers per stage
    flash_attention: tuple = (False, True)
    tp_comm_overlap: tuple = (False, True)
    #: layers on the first / last pipeline stage for every PP > 1 (Megatron-Core's
    #: num_layers_in_first/last_pipeline_stage); None: even or balanced automatically
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None
    #: expert-parallel sizes for an MoE model; empty: every power of two dividing the
    #: routed experts (1 for a dense model)
    ep: tuple = ()
    #: expert tensor-parallel sizes (MoE)
    etp: tuple = (1,)
    #: memory recipes searched beside the layout: the modules recomputed by name (each a
    #: tuple of llmcost.training.recompute.RECOMPUTE_MODULES; () recomputes none by name) and
    #: the AdamW moments' precision ("fp32", or "bf16" as DeepSeek-V3 ran)
    recompute_modules: tuple = ((),)
    optimizer_moments: tuple = ("fp32",)


def expert_parallel_sizes(model: ModelSpec, space: Space = Space()) -> tuple[list, list]:
    """EP and ETP values the planner searches: the space's, or for an MoE model every
    power of two dividing the routed experts (ETP dividing the expert width); (1,) and (1,)
    for a dense model.

    Parameters
    ----------
    model : ModelSpec
    space : Space

    Returns
    -------
    eps, etps : list of int
        [-].

    References
    ----------
    .. [1] Megatron-Core documentation, "Mixture of Experts" (EP divides the experts;
       ETP the expert FFN).
    """
    if not model.is_moe:
        return [1], [1]
    E = model.moe_experts
    assert model.moe_ffn_hidden is not None  # set in ModelSpec.__post_init__ for an MoE model
    eps = [e for e in (space.ep or [2**i for i in range(0, 12)]) if E % int(e) == 0]
    etps = [t for t in space.etp if model.moe_ffn_hidden % int(t) == 0]
    return eps, etps or [1]


def _divisors(n: int) -> list[int]:
    # trial division up to sqrt(n) in blocks: fast, and bounded memory for any layer count
    n = int(n)
    root = math.isqrt(n)
    small = []
    for lo in range(1, root + 1, 1 << 20):
        d = np.arange(lo, min(lo + (1 << 20), root + 1), dtype=np.int64)
        small += d[n % d == 0].tolist()
    return sorted(set(small) | {n // d for d in small})


def _split(model: ModelSpec, pp: ArrayLike, space: Space) -> tuple[np.ndarray, ...]:
    """First, middle, last stage layers, valid, automatic (see memory._stage_layers)."""
    f = None if space.first_stage_layers is None else int(
        v.integer("first_stage_layers", space.first_stage_layers))
    l_ = None if space.last_stage_layers is None else int(
        v.integer("last_stage_layers", space.last_stage_layers))
    return _stage_layers(model.layers, np.asarray(pp), f, l_)


def pipeline_depths(model: ModelSpec, space: Space = Space()) -> list[int]:
    """PP values the planner searches: the space's, or every p in 1..l that splits the
    layers evenly, or (automatic balancing) with the first and last stages one layer short
    (l + 1 or l + 2 divisible by p), or as ``space.first/last_stage_layers`` say.

    126 layers (Llama 3.1 405B): the divisors 1, 2, 3, 6, 7, 9, 14, 18, 21, 42, 63, 126
    and 4, 8, 16, 32, 64 (128 = 126 + 2).

    Parameters
    ----------
    model : ModelSpec
    space : Space

    Returns
    -------
    pps : list of int
        [-].

    References
    ----------
    .. [1] NVIDIA Megatron-LM, megatron/core/transformer/transformer_block.py,
       ``get_num_layers_to_build`` (account_for_embedding/loss_in_pipeline_split).
    """
    L = model.layers
    # Megatron-Core's slots (l, l + 1 or l + 2 divisible by p), and the powers of two the
    # published recipes use (DeepSeek-V3's 61 layers on PP16), split with longer ends short
    auto = sorted({p for n in (L, L + 1, L + 2) for p in _divisors(n) if p <= L}
                  | {2 ** k for k in range(1, 17) if 2 ** k <= L})
    cand = np.asarray(space.pp or auto, dtype=np.int64)
    if not space.pp and (space.first_stage_layers is not None
                         or space.last_stage_layers is not None):
        cand = np.arange(1, min(L, 1 << 16) + 1, dtype=np.int64)
    if len(cand) == 0:
        return []
    ok = _split(model, np.maximum(cand, 1), space)[3] & (cand >= 1)
    return [int(p) for p in cand[ok]]


def interleave_valid(model: ModelSpec, pp: ArrayLike, interleave: ArrayLike, space: Space = Space()) -> np.ndarray:
    """Where v virtual chunks suit pipeline depth p (arrays broadcast): v = 1, or p > 1 and
    v divides every stage's layers (Megatron-Core's rules, see
    :func:`llmcost.training.memory.pipeline_stage_layers`).

    Parameters
    ----------
    model : ModelSpec
    pp, interleave : int or array
        p, v [-].
    space : Space

    Returns
    -------
    ok : bool array

    References
    ----------
    .. [1] NVIDIA Megatron-LM, megatron/core/transformer/transformer_config.py
       (``TransformerConfig.__post_init__``, uneven PP).
    """
    p, vv = np.asarray(pp), np.asarray(interleave)
    if p.size > 4096 and vv.size == p.size and p.min() >= 1 and vv.min() >= 1:
        # a planner grid: few distinct (p, v), so look them up in a small table
        pmax, vmax = int(p.max()), int(vv.max())
        if (pmax + 1) * (vmax + 1) <= 1 << 20:
            P, V = np.meshgrid(np.arange(1, pmax + 2), np.arange(1, vmax + 2), indexing="ij")
            table = _interleave_valid(model, P, V, space).ravel()
            return table[(p - 1) * (vmax + 1) + (vv - 1)]
    return _interleave_valid(model, p, vv, space)


def _interleave_valid(model: ModelSpec, p: np.ndarray, vv: np.ndarray, space: Space) -> np.ndarray:
    f, mid, l_, ok, slots = _split(model, np.maximum(p, 1), space)
    return ok & ((vv == 1) | ((p > 1) & _interleave_ok(p, f, mid, l_, slots, vv)))


def _interleaves(model: ModelSpec, space: Space) -> tuple:
    return space.interleave or tuple(_divisors(model.layers))


def enumerate_layouts(model: ModelSpec, gpus: ArrayLike, global_batch: int, gpus_per_node: int,
                      space: Space = Space(), seq_len: int | None = None,
                      heuristic: str = "none") -> dict[str, np.ndarray]:
    """All valid layouts as flat arrays (one element per layout).

    Valid: t divides the heads (and shards or replicates the KV heads), p splits the
    layers (:func:`pipeline_depths`), c divides the sequence, t p c divides the GPUs, b d
    divides the global batch, v > 1 only with p > 1 where v divides every stage's layers
    and p divides the micro-batch count, SP only with t > 1. ``heuristic="seed"`` keeps
    t <= one node and t p <= four nodes (PP inside a rack).

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
        sequence_parallel, interleave, flash_attention, tp_comm_overlap,
        first_stage_layers, middle_stage_layers, last_stage_layers.

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
    # (gpus, t, p, c) that split the GPUs first, then the other axes: the same layouts in
    # the same order as one full grid, without building the combinations that cannot be
    g, t, p, c, e, te = (a.ravel() for a in np.meshgrid(
        G, ax["tp"], ax["pp"], ax["cp"], ax["ep"], ax["etp"], indexing="ij"))
    # experts fold over the DP x TP x CP ranks of a stage: e t_e divides gpus / p
    keep = np.flatnonzero((g % (t * p * c) == 0) & ((g // p) % (e * te) == 0))
    axes = [keep, ax["micro_batch"], ax["zero_stage"],
            np.arange(len(rec)), ax["sequence_parallel"], ax["interleave"],
            ax["flash_attention"], ax["tp_comm_overlap"]]
    grids = np.meshgrid(*axes, indexing="ij")
    k, b, z, ri, sp, vv, fa, to = (a.ravel() for a in grids)
    g0, t0, p0, c0 = g, t, p, c
    g, t, p, c, e, te = g[k], t[k], p[k], c[k], e[k], te[k]
    # the rules on one Layout whose fields run along their own axis of the grid (each
    # checked once at its own length), broadcast to the grid and flattened as it is
    on = [np.reshape(a, [-1 if j == i else 1 for j in range(len(axes))])
          for i, a in enumerate(axes)]
    sizes = on[0]
    grid = Layout(gpus=g0[sizes], tp=t0[sizes], pp=p0[sizes], cp=c0[sizes], micro_batch=on[1],
                  global_batch=B, interleave=on[5], sequence_parallel=on[4], tp_comm_overlap=on[7])
    ok, dp, m = (np.broadcast_to(x, grids[0].shape).ravel()
                 for x in layout_valid(model, grid, space, node, heuristic))
    out = dict(gpus=g, tp=t, pp=p, cp=c, dp=dp, micro_batch=b, num_microbatches=m,
               zero_stage=z, recompute=rec[ri], sequence_parallel=sp, interleave=vv,
               flash_attention=fa, tp_comm_overlap=to, ep=e, etp=te)
    out = {k: x[ok] for k, x in out.items()}
    # per depth once, then gathered: the same split for every layout of that depth
    depth = np.sort(ax["pp"])
    f, mid, l_, _, _ = _split(model, depth, space)
    at = np.searchsorted(depth, out["pp"])
    out.update(first_stage_layers=np.asarray(f)[at], middle_stage_layers=np.asarray(mid)[at],
               last_stage_layers=np.asarray(l_)[at])
    return out


def layout_axes(model: ModelSpec, gpus_per_node: int, space: Space = Space(),
                seq_len: int | None = None) -> dict[str, np.ndarray]:
    """The values each layout dimension may take for this model, before the rules that
    tie dimensions together (see :func:`layout_valid`).

    TP: the space's, or powers of two up to a node (``max_tp`` beyond), dividing the heads
    and sharding or replicating the KV heads; PP: :func:`pipeline_depths`; CP: dividing the
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
    tps: Sequence[int] = space.tp or tuple(2**i for i in range(0, 12) if 2**i <= max_tp)
    assert model.kv_heads is not None  # set in ModelSpec.__post_init__
    tps = [t for t in tps if model.heads % t == 0
           and (model.kv_heads % t == 0 or t % model.kv_heads == 0)]
    pps = pipeline_depths(model, space)
    cps = [c for c in space.cp if s % c == 0]
    rec = np.array(space.recompute)
    v.choices("recompute", rec, RECOMPUTE_MODES)
    eps, etps = expert_parallel_sizes(model, space)
    return dict(ep=np.array(eps, dtype=int), etp=np.array(etps, dtype=int),
                tp=np.array(tps, dtype=int), pp=np.array(pps, dtype=int),
                cp=np.array(cps, dtype=int), micro_batch=np.array(space.micro_batch, dtype=int),
                zero_stage=np.array(space.zero_stage, dtype=int), recompute=rec,
                sequence_parallel=np.array(space.sequence_parallel, dtype=bool),
                interleave=np.array(_interleaves(model, space), dtype=int),
                flash_attention=np.array(space.flash_attention, dtype=bool),
                tp_comm_overlap=np.array(space.tp_comm_overlap, dtype=bool))


def layout_valid(model: ModelSpec, layouts: Layout, space: Space = Space(), gpus_per_node: int = 8,
                 heuristic: str = "none") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Which layouts obey the rules that tie dimensions together (arrays broadcast).

    .. math:: d = \frac{N}{t\,p\,c} \in \mathbb{N},\quad m = \frac{B}{b\,d} \in \mathbb{N},
              \quad v = 1 \;\lor\; (p > 1,\ v \mid n_r\ \forall r,\ p \mid m)

    with n_r the layers of stage r (:func:`interleave_valid`; p must split the layers).

    and SP or TP-overlap only with t > 1; ``heuristic="seed"`` adds t <= one node and
    t p <= four nodes.

    Parameters
    ----------
    model : ModelSpec
    layouts : Layout
        The candidate layouts (arrays): ``gpus``, ``tp``, ``pp``, ``cp``, ``micro_batch``,
        ``global_batch``, ``interleave`` (N, t, p, c, b, B [sequences], v [-]),
        ``sequence_parallel`` and ``tp_comm_overlap`` (None: False); its stage split is
        ``space``'s.
    space : Space
        Its ``first_stage_layers`` and ``last_stage_layers`` split the pipeline stages
        (None: even or automatic).
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
    L = layouts
    if L.global_batch is None:
        raise v.InputError("global_batch", "the layouts' global_batch is needed to split it "
                                           "into micro-batches")
    g, t, p, c, b, B, vv = (np.asarray(x) for x in (L.gpus, L.tp, L.pp, L.cp, L.micro_batch,
                                                     L.global_batch, L.interleave))
    sp = np.asarray(L.sequence_parallel)
    to = np.asarray(False if L.tp_comm_overlap is None else L.tp_comm_overlap)
    used = t * p * c
    ok = (g % used == 0)
    dp = np.where(ok, g // np.maximum(used, 1), 1)
    ok = ok & (B % (b * dp) == 0)
    m = np.where(ok, B // np.maximum(b * dp, 1), 1)
    split = Space(first_stage_layers=space.first_stage_layers,
                  last_stage_layers=space.last_stage_layers)
    # not in place: fields along different axes broadcast to a larger shape
    ok = ok & interleave_valid(model, p, vv, split) & ((vv == 1) | (m % np.maximum(p, 1) == 0))
    ok = ok & (sp <= (t > 1)) & (to <= (t > 1))
    if heuristic == "seed":
        ok = ok & (t <= gpus_per_node) & (t * p <= 4 * gpus_per_node)
    return ok, dp, m


def grid_size(model: ModelSpec, gpus: ArrayLike, gpus_per_node: int, space: Space = Space()) -> int:
    """Candidates before the divisibility rules (the Cartesian grid)."""
    node = int(gpus_per_node)
    max_tp = node if space.max_tp is None else int(space.max_tp)
    n_tp = len(space.tp or [2**i for i in range(0, 12) if 2**i <= max_tp])
    n_pp = len(pipeline_depths(model, space))
    return int(len(np.atleast_1d(gpus)) * n_tp * n_pp * len(space.cp) * len(space.micro_batch)
               * len(space.zero_stage) * len(space.recompute) * len(space.sequence_parallel)
               * len(_interleaves(model, space)) * len(space.flash_attention)
               * len(space.tp_comm_overlap)
               * int(np.prod([len(x) for x in expert_parallel_sizes(model, space)])))
