"""Pipeline stages: how layers split over them, the layout checks, and the activations a
stage holds for its micro-batches in flight.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ... import _validate as v
from ..arch import ModelSpec
from .options import SCHEDULES, STAGES
from .stage_layout import StageLayout

if TYPE_CHECKING:
    from ..layout import Layout


def inflight_layers(layers: ArrayLike, pp: ArrayLike, num_microbatches: ArrayLike | None = None,
                    interleave: ArrayLike = 1, stage: str = "first", schedule: str = "1f1b",
                    stage_layers: ArrayLike | None = None) -> float | np.ndarray:
    r"""Layers' worth of activations a pipeline stage holds at its peak.

    1F1B: stage r holds min(p - r, m) micro-batches of its n_r layers (n_r = l/p on an
    even pipeline: the first stage holds p of them, so l in all: Eq. 5 of [1]). Interleaved
    1F1B with v chunks: stage r runs 2(p - r - 1) + (v - 1) p warm-up chunk-forwards before
    its first backward, so it holds min(2(p - r - 1) + (v - 1)p + 1, m v) chunks of n_r/v
    layers; for the first stage of an even pipeline that is l (1 + (p - 1)/(p v))
    ([1] §4.2.3). GPipe: all m micro-batches, m n_r.

    On an uneven pipeline (:func:`pipeline_stage_layers`) the first middle stage (r = 1)
    holds one micro-batch less than the first stage but may carry more layers, so it can
    hold more: 126 layers on 16 stages (7/8/.../8/7), 1F1B: 16 x 7 = 112 layers on the
    first stage, 15 x 8 = 120 on the second.

    Parameters
    ----------
    layers, pp : int or array
        l, p [-].
    num_microbatches : int or array, optional
        m per iteration per pipeline [-]; None means m >= what the schedule keeps in
        flight (required for GPipe).
    interleave : int or array
        Virtual chunks per stage v [-]; 1 = plain 1F1B.
    stage : {"first", "middle", "last"}
        Rank r = 0, 1 (the middle stage that holds the most; the last when p = 2,
        the only one when p = 1) or p - 1.
    schedule : {"1f1b", "gpipe"}
    stage_layers : int or array, optional
        Layers on this stage n_r [-]; default l/p.

    Returns
    -------
    layers_held : float or array
        [layers' worth of one micro-batch's activations].

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, §4.2.3, Eq. 5.
    .. [2] Narayanan et al. 2021, arXiv:2104.04473, §2.2.
    """
    v.choice("stage", stage, STAGES)
    v.choice("schedule", schedule, SCHEDULES)
    l = v.integer("layers", layers)
    p = v.integer("pp", pp)
    n = l / p if stage_layers is None else v.integer("stage_layers", stage_layers)
    if num_microbatches is None:
        if schedule == "gpipe":
            raise v.InputError("num_microbatches", "num_microbatches is required for GPipe")
        m: float | np.ndarray = np.inf
    else:
        m = v.positive("num_microbatches", num_microbatches)
    vv = v.integer("interleave", interleave)
    r = {"first": 0, "middle": np.minimum(1, p - 1), "last": p - 1}[stage]
    if schedule == "gpipe":
        return v.result(m * n)
    plain = np.minimum(p - r, m) * n
    chunks = np.minimum(2.0 * (p - r - 1) + (vv - 1) * p + 1, m * vv)
    inter = chunks * n / vv
    return v.result(np.where(vv > 1, inter, plain))


def _stage_layers(layers: ArrayLike, pp: ArrayLike, first: ArrayLike | None = None,
                  last: ArrayLike | None = None) -> tuple[np.ndarray, ...]:
    """(first, middle, last, ok, slots) without raising: see :func:`pipeline_stage_layers`.

    ``slots`` is True where the split is the automatic one (given or not): Megatron-Core's
    embedding/loss-in-the-split one, whose interleaving rule is on L' alone. A layout row
    passed back with its first/last columns is therefore the same layout.
    """
    L = np.asarray(layers)
    p = np.asarray(pp)
    if first is None and last is None:
        Lp = -(-L // np.maximum(p, 1))
        d = p * Lp - L
        # d <= 2: Megatron-Core's embedding and loss slots (the first end first); a larger
        # deficit alternates on, the odd layer to the last stage, which computes the LM head
        f_short = np.where(d <= 2, (d + 1) // 2, d // 2)
        f, mid, l = Lp - f_short, Lp, Lp - (d - f_short)
        ok = (f >= 1) & (l >= 1) & (p <= L)
        # only Megatron-Core's slots split interleaved chunks by L' alone
        slots = ok & (d <= 2)
    else:
        fg, lg = first is not None, last is not None
        f0 = np.asarray(first if fg else 0)
        l0 = np.asarray(last if lg else 0)
        k = p - fg - lg
        rest = L - f0 - l0
        # no middle stage (p = 2, both ends given): the automatic L' as a placeholder
        mid = np.where(k > 0, rest // np.maximum(k, 1), -(-L // np.maximum(p, 1)))
        ok = np.where(k > 0, (rest % np.maximum(k, 1) == 0) & (mid >= 1), rest == 0)
        f = f0 if fg else mid
        l = l0 if lg else mid
        ok = ok & (f >= 1) & (l >= 1)
        fa, _, la, _, auto_slots = _stage_layers(L, p)
        slots = auto_slots & (f == fa) & (l == la)
    one = p == 1
    f, mid, l = (np.where(one, L, x) for x in (f, mid, l))
    return f, mid, l, ok | one, slots | one


def _interleave_ok(pp: ArrayLike, first: np.ndarray, middle: np.ndarray, last: np.ndarray, slots: np.ndarray,
                   interleave: ArrayLike) -> np.ndarray:
    """Where v virtual chunks per stage are allowed (Megatron-Core's rules).

    Explicit first/last (``num_layers_in_first/last_pipeline_stage``): every stage's layers
    divide by v (``TransformerConfig.__post_init__``, "Uneven PP"). The automatic split with
    a deficit of 1 or 2 is Megatron-Core's ``account_for_embedding_in_pipeline_split`` /
    ``account_for_loss_in_pipeline_split``: the embedding and the loss count as one layer
    each, every stage holds L' slots split into v chunks of L'/v, and only the first chunk
    of the first stage (the last of the last) builds one layer less (``get_num_layers_to_build``
    in megatron/core/transformer/transformer_block.py), so L' must divide by v. This is
    how Llama 3 405B balanced its interleaved pipeline (arXiv:2407.21783, §3.3.2).
    """
    p, vv = np.asarray(pp), np.asarray(interleave)
    each = (first % vv == 0) & (last % vv == 0) & ((p <= 2) | (middle % vv == 0))
    return (vv == 1) | np.where(slots, middle % vv == 0, each)


def _allowed_ends(L: int, p: int, other: int | None, fixed_name: str) -> str:
    """The values one end stage may take with the other fixed, as text for an error."""
    k = p - 2 if other is not None else p - 1
    o = 0 if other is None else other
    if k == 0:
        ok: list[int | str] = [L - o] if L - o >= 1 else []
    else:
        # the end holds n = L - o - k j with j >= 1 layers on each middle stage
        j_max = (L - o - 1) // k
        js: list[int | None] = list(range(j_max, 0, -1))
        if len(js) > 12:
            js = js[:6] + [None] + js[-6:]
        ok = [L - o - k * j if j is not None else "..." for j in js]
    shown = ", ".join(map(str, ok)) or "none"
    return f"{shown} (with {fixed_name}={o})" if other is not None else shown


def _split_error(L: int, p: np.ndarray, fst: np.ndarray | None, lst: np.ndarray | None, f: np.ndarray, l: np.ndarray,
                 ok: np.ndarray) -> v.InputError:
    """The InputError for the first layout whose stages cannot hold the layers as asked."""
    shape = np.broadcast(p, f, l, ok).shape
    i = np.flatnonzero(~np.broadcast_to(ok, shape))[0]
    pi = int(np.broadcast_to(p, shape).flat[i])
    if fst is None and lst is None:
        if pi > L:
            return v.InputError("pp", f"pp must be at most the layers ({L}), got pp={pi}")
        Lp = -(-L // pi)
        return v.InputError("pp", f"pp must leave at least one layer on the first and last "
                                  f"stages when the other stages hold ceil(layers / pp) = "
                                  f"{Lp} each ({L} layers), got pp={pi} ({pi * Lp - L} "
                                  f"layers short of {Lp} per stage): give "
                                  "first_stage_layers and last_stage_layers to split it "
                                  "otherwise")
    fi = None if fst is None else int(np.broadcast_to(fst, shape).flat[i])
    li = None if lst is None else int(np.broadcast_to(lst, shape).flat[i])
    name, other, oname = (("first_stage_layers", li, "last_stage_layers")
                          if fst is not None else
                          ("last_stage_layers", fi, "first_stage_layers"))
    got = fi if name == "first_stage_layers" else li
    middle = ("first + last must equal the layers" if pi == 2 and fst is not None
              and lst is not None else
              f"the other {pi - (fst is not None) - (lst is not None)} stage(s) must "
              "split the rest evenly, at least one layer each")
    return v.InputError(name, f"{name}={got} does not split {L} layers over pp={pi} "
                              f"({middle}); allowed: "
                              f"{_allowed_ends(L, pi, other, oname)}")


def _interleave_error(f: np.ndarray, mid: np.ndarray, l: np.ndarray, slots: np.ndarray, vv: np.ndarray,
                      inter_ok: np.ndarray) -> v.InputError:
    """The InputError for the first layout whose stages cannot split into v chunks."""
    shape = np.broadcast(vv, f, mid, l, slots).shape
    i = np.flatnonzero(~np.broadcast_to(inter_ok, shape))[0]
    fi, mi, li, vi = (int(np.broadcast_to(x, shape).flat[i]) for x in (f, mid, l, vv))
    if bool(np.broadcast_to(slots, shape).flat[i]):
        return v.InputError("interleave", f"interleave must divide the {mi} layer slots "
                                          f"per pipeline stage (the first and last stages "
                                          f"count the embedding and the LM head as one "
                                          f"each), got interleave={vi}")
    return v.InputError("interleave", f"interleave must divide the layers of every "
                                      f"pipeline stage (first {fi}, middle {mi}, last "
                                      f"{li}), got interleave={vi}")


def pipeline_stage_layers(layers: ArrayLike, pp: ArrayLike, first_stage_layers: ArrayLike | None = None,
                          last_stage_layers: ArrayLike | None = None,
                          interleave: ArrayLike = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Transformer layers on the first, each middle, and the last pipeline stage.

    The first stage also holds the input embedding and the last the LM head (output
    projection, final norm, loss), so an uneven split gives them fewer layers
    (Megatron-Core's ``num_layers_in_first_pipeline_stage`` /
    ``num_layers_in_last_pipeline_stage``, the ``--decoder-first/last-pipeline-num-layers``
    flags).

    Automatic (neither given): every stage gets L' = ceil(l / p) layers and the deficit
    d = p L' - l is taken from the first and the last stage alternately, first first for
    the first two layers, then the last:

    .. math:: n_{mid} = L',\quad n_{first} = L' - \lceil d/2 \rceil,\quad
              n_{last} = L' - \lfloor d/2 \rfloor\quad (d \le 2);\qquad
              n_{first} = L' - \lfloor d/2 \rfloor,\quad
              n_{last} = L' - \lceil d/2 \rceil\quad (d \ge 3)

    (126 layers on 16 stages: 7, 14 x 8, 7; 70 on 12: 5, 10 x 6, 5; on an even split d = 0
    and every stage holds l/p). For d <= 2 this is Megatron-Core's
    ``account_for_embedding_in_pipeline_split`` (d = 1) and
    ``account_for_loss_in_pipeline_split`` (d = 2): the embedding and the LM head each fill
    one layer's slot. Beyond, the ends stay within one layer of each other and the odd
    layer goes to the last stage, which computes the LM head and the loss (and holds
    DeepSeek-V3's multi-token-prediction module): DeepSeek-V3's 61 layers on 16 stages split
    3, 14 x 4, 2 (Megatron-Bridge's DeepSeek-V3 recipe puts all three on the last stage
    with the MTP layer, 4, 14 x 4, 1 + MTP [3]; the first stage, which holds the most
    micro-batches in flight, is then the heaviest). No middle stage holds more than L', so
    the slowest stage is that of any split. An end left with no layer (13 layers on 8
    stages: 1, 6 x 2, 0) is refused: give the ends explicitly.

    Explicit: the given end stage(s) hold what is given and the other stages split the
    rest evenly, n_mid = (l - n_first - n_last) / (p - 2), which must be whole and >= 1
    (with p = 2, n_first + n_last = l; an end not given counts as a middle stage, as in
    Megatron-Core). p = 1 ignores both: the one stage holds l.

    With interleaving (v virtual chunks per stage), Megatron-Core's rules apply: given
    first/last, every stage's layer count must divide by v (``TransformerConfig.__post_init__``,
    "Uneven PP" checks); the automatic split with a deficit of 1 or 2 is its
    ``account_for_embedding_in_pipeline_split`` / ``account_for_loss_in_pipeline_split``
    (the embedding and the loss each take one layer's slot; ``get_num_layers_to_build`` in
    ``megatron/core/transformer/transformer_block.py``), which needs L' divisible by v; a
    larger automatic deficit follows the explicit rule. Activations and times treat each
    stage's chunks as n/v layers each (the one short chunk is not modelled apart).

    Parameters
    ----------
    layers : int
        l [-].
    pp : int or array
        p [-].
    first_stage_layers, last_stage_layers : int or array, optional
        n_first, n_last [-]; None: automatic.
    interleave : int or array
        v [-].

    Returns
    -------
    first, middle, last : int arrays
        Layers per stage [-] (all l when p = 1; with p = 2 there is no middle stage and
        ``middle`` is only a placeholder).

    References
    ----------
    .. [1] NVIDIA Megatron-LM (commit d98e8a6, 2026), megatron/core/transformer/
       transformer_config.py (``TransformerConfig.__post_init__``, uneven PP) and
       transformer_block.py (``get_num_layers_to_build``).
    .. [2] A. Grattafiori et al., "The Llama 3 Herd of Models", arXiv:2407.21783, §3.3.2
       (first and last stages one layer short: 126 layers on 16 stages).
    .. [3] NVIDIA-NeMo Megatron-Bridge (commit 067f987, 2026-08-22),
       src/megatron/bridge/recipes/deepseek/h100/deepseek_v3.py,
       ``_get_deepseek_v3_pipeline_layout`` ((16, 1): embedding + 4 decoder layers, 14 x 4,
       1 decoder layer + MTP + loss).
    """
    L = int(v.integer("layers", layers))
    p = v.integer("pp", pp)
    vv = v.integer("interleave", interleave)
    fst = None if first_stage_layers is None else v.integer("first_stage_layers",
                                                            first_stage_layers)
    lst = None if last_stage_layers is None else v.integer("last_stage_layers",
                                                           last_stage_layers)
    f, mid, l, ok, slots = _stage_layers(L, p, fst, lst)
    if not np.all(ok):
        raise _split_error(L, p, fst, lst, f, l, ok)
    inter_ok = _interleave_ok(p, f, mid, l, slots, vv)
    if not np.all(inter_ok):
        raise _interleave_error(f, mid, l, slots, vv, inter_ok)
    return f, mid, l


def check_layout(model: ModelSpec, layout: Layout, seq_len: ArrayLike) -> tuple[np.ndarray, ...]:
    """Check a parallel layout against a model; raise InputError naming the first parameter
    at fault (each field's own range is :class:`~llmcost.training.layout.Layout`'s check).

    Parameters
    ----------
    model : ModelSpec
    layout : Layout
        gpus, tp, pp, cp, interleave [-]: t must divide the heads (and shard or replicate
        the KV heads), p must split the layers (:func:`pipeline_stage_layers`: evenly,
        automatically balanced, or as ``first_stage_layers`` and ``last_stage_layers``
        give), v every stage's layers, c the sequence, and t p c the GPUs.
    seq_len : int
        [tokens].

    Returns
    -------
    gpus, tp, pp, cp, interleave : int arrays
        The layout's sizes as arrays [-].

    References
    ----------
    .. [1] Narayanan et al. 2021, arXiv:2104.04473, §2 (the layout's divisibility rules).
    """
    gpus, tp, pp, cp, vv = (np.asarray(x) for x in (layout.gpus, layout.tp, layout.pp,
                                                     layout.cp, layout.interleave))
    first_stage_layers, last_stage_layers = layout.first_stage_layers, layout.last_stage_layers
    assert model.kv_heads is not None  # set in ModelSpec.__post_init__
    v.divides("tp", tp, "heads", model.heads)
    # TP shards KV heads, or replicates them when TP exceeds their number (Megatron GQA).
    kv_ok = (model.kv_heads % tp == 0) | (tp % model.kv_heads == 0)
    if not np.all(kv_ok):
        bad = np.broadcast_to(tp, np.shape(kv_ok))[~kv_ok].flat[0]
        raise v.InputError("tp", f"tp must divide kv_heads ({model.kv_heads}) or be a multiple "
                                 f"of it, got tp={int(bad)}")
    pipeline_stage_layers(model.layers, pp, first_stage_layers, last_stage_layers, vv)
    v.divides("cp", cp, "seq_len", seq_len)
    v.multiple_of("gpus", gpus, "tp x pp x cp", tp * pp * cp)
    return gpus, tp, pp, cp, vv


def stage_activation_bytes(model: ModelSpec, layer_bytes: float | np.ndarray, stage_layers: float | np.ndarray,
                           layout: StageLayout, stage: str = "first", schedule: str = "1f1b",
                           recompute_bytes: ArrayLike = 0.0, loss_bytes: ArrayLike = 4.0) -> float | np.ndarray:
    r"""Activations a pipeline stage holds at its peak, per GPU.

    .. math::
        M_{act} = \bar M\, L_{inflight} + [\text{first} \lor p = 1]\,\frac{L_{inflight}}{n}
                  \frac{s b h}{c\, t}[\text{dropout}]
                  + \max\left([\text{last} \lor p = 1]\,\frac{q_{loss} s b V}{c\, t},\;
                  M_{rc}\right)

    M̄ one layer's activations per micro-batch (:func:`layer_activation_bytes`: recompute
    variant, named modules, FP8-cached inputs), L_inflight the layers' worth of micro-batches
    the schedule keeps (:func:`inflight_layers`); the first stage adds the embedding's
    dropout mask (1 byte) for each micro-batch in flight, the last the loss's logits, q_loss
    bytes each (:func:`loss_bytes_per_logit`: 4, FP32, for a fused loss, [1] §4.3);
    without pipelining (p = 1) the one stage, asked for as "first" or
    "last", holds both. M_rc is what a recomputed layer rebuilds for its own backward, one
    layer and one micro-batch at a time (full recomputation: the layer's activations
    without recomputation less the input it kept, [2]); the loss's logits are freed before
    the first layer's backward, so the two peaks do not add.

    Parameters
    ----------
    model : ModelSpec
        Architecture.
    layer_bytes : float or array
        M̄ [bytes].
    stage_layers : int or array
        n [-].
    layout : StageLayout
        s (``seq_len``, required here) [tokens], b (``micro_batch``) [sequences], t, c, p,
        v (``tp``, ``cp``, ``pp``, ``interleave``) [-] and m (``num_microbatches``,
        :func:`inflight_layers`) [-].
    stage : {"first", "middle", "last"}
    schedule : {"1f1b", "gpipe"}
    recompute_bytes : float or array
        M_rc [bytes] (:func:`recompute_working_bytes`); 0 without recomputation.
    loss_bytes : float
        q_loss [bytes per logit] (:func:`loss_bytes_per_logit`).

    Returns
    -------
    bytes : float or array
        [bytes].

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, §4.2.3 (Eq. 5), §4.3.
    .. [2] Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost",
       arXiv:1604.06174, §3 (a recomputed segment's activations are rebuilt for its
       backward, one segment at a time).
    """
    L = layout
    if L.seq_len is None:
        raise v.InputError("seq_len", "the activations need the layout's seq_len")
    held = inflight_layers(model.layers, L.pp, L.num_microbatches, L.interleave, stage, schedule,
                           stage_layers)
    act = layer_bytes * held
    rc = v.nonnegative("recompute_bytes", recompute_bytes)
    if stage == "middle":
        return v.result(act + rc)
    tokens = L.seq_len / L.cp * L.micro_batch
    # with p = 1 the one stage is both ends: embedding mask and logits
    single = np.asarray(L.pp) == 1
    embed_mask = np.where(model.dropout, 1.0, 0.0) * tokens * model.hidden / L.tp
    logits = v.positive("loss_bytes", loss_bytes) * tokens * model.vocab / L.tp
    mask = np.where(single | (stage == "first"), embed_mask * held / stage_layers, 0.0)
    return v.result(act + mask + np.maximum(np.where(single | (stage == "last"), logits, 0.0),
                                            rc))
