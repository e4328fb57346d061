"""Whether a global batch leaves a pipeline too few micro-batches, and the fixes, each sized
with its numbers: deeper interleaving, less pipeline parallelism at the same GPUs, a larger
batch up to the largest one published for the model size.

Sizing attaches the advice to the size it picks (or the fastest when none meets the target);
the review to the layout it plans.

References
----------
1. Narayanan et al. 2021, arXiv:2104.04473, §2.2.1-2.2.2 (bubble (p-1)/m, (p-1)/(v m)
   interleaved).
2. Brown et al. 2020, arXiv:2005.14165, Table 2.1; Touvron et al. 2023, arXiv:2307.09288,
   §2.2; Llama Team 2024, arXiv:2407.21783, §3.4.1 and Table 4 (published global batches).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v
from ..training.arch import ModelSpec
from ..training.hardware import GPUSpec
from ..training.layout import Layout

#: Pipeline bubble above which the batch is too small for the pipeline [-]: (p-1)/(v m).
BUBBLE_LIMIT = 0.10
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



def max_published_batch_tokens(params: ArrayLike) -> tuple[float | None, str]:
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


def batch_advice(model: ModelSpec, layout: Layout, gpu: GPUSpec | None = None,
                 seq_len: int | None = None, max_batch_tokens: float | None = None,
                 limit: float = BUBBLE_LIMIT) -> BatchAdvice:
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
    layout : Layout
        Its pp and interleave (p, v [-]), micro-batch (b [sequences]), data-parallel size
        d = gpus / (tp pp cp) [-] and micro-batches per pipeline per step
        m = B / (b d) [-]; B (``global_batch``) a multiple of b d.
    gpu : GPUSpec, optional
        Named where a fix needs the model to fit in memory.
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
    # the layout's fields are whole numbers >= 1 (Layout checks them); its data-parallel
    # size is not, where tp pp cp exceed the GPUs
    p, vv, b = layout.pp, layout.interleave, layout.micro_batch
    d = int(v.integer("dp", layout.dp))
    # m is B / (b d) exactly: a batch the replicas' micro-batches do not split is refused
    # (Layout.num_microbatches rounds it)
    if layout.global_batch is None:
        raise v.InputError("global_batch", "batch_advice needs the layout's global_batch")
    v.multiple_of("global_batch", layout.global_batch, "micro_batch x dp", b * d)
    m = layout.num_microbatches
    s = model.seq_len if seq_len is None else int(v.integer("seq_len", seq_len))
    lim = float(v.in_range("limit", limit, 0, 1, low_inclusive=False, high_inclusive=False))
    max_tok: float | None
    if max_batch_tokens is not None:
        max_tok, src = float(v.positive("max_batch_tokens", max_batch_tokens)), "given"
    else:
        max_tok, src = max_published_batch_tokens(model.params)
    B = m * b * d
    bubble = (p - 1) / (vv * m)
    advice: dict[str, Any] = dict(bubble_share=bubble, limit=lim, too_small=bubble > lim,
                                  num_microbatches=m, pp=p, interleave=vv, global_batch=B,
                                  max_batch_tokens=max_tok, max_batch_source=src)
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
