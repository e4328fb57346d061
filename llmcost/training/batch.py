"""The global batch a team would choose for a pre-training run, by a cited rule.

The rule has two parts, each a function:

1. DeepSeek LLM's fitted batch law, B_opt = 0.2920 C^0.3271 tokens [1]
   (:func:`batch_tokens_scaling_law`);
2. the range of final batches that published runs of comparable compute used
   (``data/published_batches.csv``, :func:`batch_bounds_tokens`), which the law is clipped to
   (:func:`default_global_batch_tokens`).

The law alone would extrapolate far past its fit (DeepSeek fitted it on small runs, below
1e21 FLOPs in Fig. 3 of [1], and used it for their 7B and 67B runs at 8e22-1e24): at Llama 3
405B's 3.8e25 FLOPs it asks for 68M tokens where the largest dense runs used 9-17M [2]. The
published runs keep the default where teams have actually trained, and the law places it
inside that range.

All compute here is :math:`C = 6 N_{active} D` [FLOPs] (the catalog's ``compute_flops``).
Batches are tokens per optimizer step (sequences x sequence length), the final one for runs
that ramped it up.

References
----------
1. DeepSeek-AI, "DeepSeek LLM: Scaling Open-Source Language Models with Longtermism",
   arXiv:2401.02954, §3.1 (Eq. for B_opt and eta_opt, Fig. 3), §3.2 (M, non-embedding
   FLOPs per token), Table 2 (7B: 2304 and 67B: 4608 sequences of 4096 tokens).
2. ``data/published_batches.csv``: the global batch of published pre-training runs, each
   row with its paper section or table (e.g. Llama 3: arXiv:2407.21783 §3.4.1 and Table 4;
   DeepSeek-V3: arXiv:2412.19437 §4.2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import _validate as v

#: DeepSeek LLM's batch law, B_opt = 0.2920 C^0.3271 tokens ([1] §3.1), fitted by DeepSeek to
#: their grid of small runs (Fig. 3, below 1e21 FLOPs), taken as published. Fig. 3 marks a broad
#: band of batches within 0.25% of the best loss around it: the law places a region, not a point.
LAW_COEFFICIENT_TOKENS = 0.2920
LAW_EXPONENT = 0.3271

#: comparable compute: within this many decades of the run's compute on either side
NEIGHBOURHOOD_DECADES = 1.0
#: widening step when fewer than MIN_NEIGHBOURS runs lie in the neighbourhood [decades]
WIDEN_STEP_DECADES = 0.5
MIN_NEIGHBOURS = 2

_COLUMNS = ("id", "compute_flops", "batch_tokens")


def batch_tokens_scaling_law(compute_flops: ArrayLike) -> float | np.ndarray:
    r"""Optimal global batch by DeepSeek LLM's fitted power law.

    .. math:: B_{opt} = 0.2920\, C^{0.3271}

    DeepSeek define the compute budget as :math:`C = M D`, with :math:`M` the non-embedding
    FLOPs per token, :math:`M = 72\, n_{layer} d_{model}^2 + 6\, n_{layer} d_{model} l_{seq}`
    (attention included, embedding and output layer left out), and :math:`D` the training
    tokens ([1] §3.2). Our callers pass :math:`C = 6 N_{active} D` instead. For DeepSeek's own
    7B and 67B, :math:`6 N` is 7% above and 16% below :math:`M` (the attention term, the
    grouped-query attention of the 67B that :math:`72 n d^2` ignores, embeddings), which moves
    the batch by 2% and 6% (the 0.3271 power), inside the law's own scatter (Fig. 3 of [1]
    shows a broad near-optimal band).

    Parameters
    ----------
    compute_flops : float or array
        Training compute C [FLOPs], > 0.

    Returns
    -------
    batch_tokens : float or array
        Optimal global batch [tokens per optimizer step], same shape as ``compute_flops``.

    References
    ----------
    .. [1] DeepSeek-AI, arXiv:2401.02954, §3.1 (B_opt = 0.2920 C^0.3271, Fig. 3), §3.2 (M).
    """
    c = v.positive("compute_flops", compute_flops)
    return v.result(LAW_COEFFICIENT_TOKENS * c ** LAW_EXPONENT)


def _runs(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, compute [FLOPs], final batch [tokens]) of a published_batches table."""
    if not isinstance(table, pd.DataFrame):
        raise v.InputError("table", "table must be a pandas DataFrame like "
                                    f"Catalog.published_batches(), got {type(table).__name__}")
    missing = [c for c in _COLUMNS if c not in table.columns]
    if missing:
        raise v.InputError("table", f"table must have columns {', '.join(_COLUMNS)}; "
                                    f"missing {', '.join(missing)}")
    if len(table) < MIN_NEIGHBOURS:
        raise v.InputError("table", f"table must hold at least {MIN_NEIGHBOURS} published runs, "
                                    f"got {len(table)}")
    compute = v.positive("compute_flops", pd.to_numeric(table["compute_flops"]).to_numpy(float))
    batch = v.positive("batch_tokens", pd.to_numeric(table["batch_tokens"]).to_numpy(float))
    return table["id"].astype(str).to_numpy(), compute, batch


def _neighbourhood(compute_flops: ArrayLike,
                   table: pd.DataFrame) -> tuple[np.ndarray, tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
    """(C, runs, in-neighbourhood mask [..., runs], half-width [decades])."""
    c = v.positive("compute_flops", compute_flops)
    ids, run_c, run_b = _runs(table)
    dist = np.abs(np.log10(c)[..., None] - np.log10(run_c))
    # the k-th nearest run fixes how far the window must widen, in whole steps past 1 decade
    kth = np.sort(dist, axis=-1)[..., MIN_NEIGHBOURS - 1]
    steps = np.ceil((kth - NEIGHBOURHOOD_DECADES) / WIDEN_STEP_DECADES - 1e-9)
    width = NEIGHBOURHOOD_DECADES + np.maximum(steps, 0) * WIDEN_STEP_DECADES
    inside = dist <= width[..., None] + 1e-9
    return c, (ids, run_c, run_b), inside, width


def batch_bounds_tokens(compute_flops: ArrayLike,
                        table: pd.DataFrame) -> tuple[float | np.ndarray, float | np.ndarray]:
    r"""Smallest and largest final global batch of published runs of comparable compute.

    Comparable: the runs whose compute lies within one decade of ``compute_flops`` on either
    side, :math:`|\log_{10} C_i - \log_{10} C| \le w` with :math:`w = 1`; when fewer than two
    runs do, :math:`w` widens by half a decade at a time until two do.

    .. math:: B_{low} = \min_{i \in S} B_i,\quad B_{high} = \max_{i \in S} B_i,\quad
              S = \{i : |\log_{10} C_i - \log_{10} C| \le w\}

    Parameters
    ----------
    compute_flops : float or array
        Training compute C = 6 x active parameters x tokens [FLOPs], > 0.
    table : pandas.DataFrame
        Published runs with ``id``, ``compute_flops`` [FLOPs] and ``batch_tokens`` [tokens]
        (the final batch of ramped runs): ``Catalog.published_batches()`` or a user's own.

    Returns
    -------
    low_tokens, high_tokens : float or array
        Batch range of the comparable runs [tokens], each shaped like ``compute_flops``.

    References
    ----------
    .. [1] ``data/published_batches.csv`` (30 runs, 2.3e20-3.8e25 FLOPs; e.g. GPT-3:
       arXiv:2005.14165 Table 2.1; Llama 3: arXiv:2407.21783 §3.4.1; DeepSeek-V3:
       arXiv:2412.19437 §4.2).
    """
    _, (_, _, run_b), inside, _ = _neighbourhood(compute_flops, table)
    low = np.where(inside, run_b, np.inf).min(axis=-1)
    high = np.where(inside, run_b, -np.inf).max(axis=-1)
    return v.result(low), v.result(high)


def _round_to_sequences(tokens: ArrayLike, seq_len: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Nearest whole number of sequences (at least one) [sequences], and its tokens."""
    seq = v.integer("seq_len", seq_len)
    n = np.maximum(np.rint(tokens / seq), 1)
    return n, n * seq


def default_global_batch_tokens(compute_flops: ArrayLike, table: pd.DataFrame,
                                seq_len: ArrayLike | None = None) -> float | np.ndarray:
    r"""The global batch a team would choose: the batch law clipped to published practice.

    .. math:: B = \min(\max(B_{opt}(C),\, B_{low}(C)),\, B_{high}(C))

    then, with ``seq_len`` :math:`s`, :math:`B = s \max(1, \mathrm{round}(B / s))`: a whole
    number of sequences. Not a power of two of sequences: the published runs do not keep to
    one (DeepSeek LLM 2304 and 4608, DeepSeek-V2 9216, DeepSeek-V3 15360, Nemotron-4 2304
    sequences), so rounding further would only move the batch off the law.

    Parameters
    ----------
    compute_flops : float or array
        Training compute C = 6 x active parameters x tokens [FLOPs], > 0.
    table : pandas.DataFrame
        Published runs, as :func:`batch_bounds_tokens`.
    seq_len : int or array, optional
        Training sequence length [tokens]; broadcasts with ``compute_flops``.

    Returns
    -------
    batch_tokens : float or array
        Global batch [tokens per optimizer step], shaped like ``compute_flops`` (broadcast with
        ``seq_len``).

    References
    ----------
    .. [1] DeepSeek-AI, arXiv:2401.02954, §3.1 (the law).
    .. [2] ``data/published_batches.csv`` (the bounds), see :func:`batch_bounds_tokens`.
    """
    law = batch_tokens_scaling_law(compute_flops)
    low, high = batch_bounds_tokens(compute_flops, table)
    tokens = np.clip(law, low, high)
    if seq_len is not None:
        _, tokens = _round_to_sequences(tokens, seq_len)
    return v.result(tokens)


@dataclass(frozen=True)
class BatchChoice:
    """The default global batch of one run and why (for a review's headline)."""

    tokens: float                   #: chosen global batch [tokens]
    sequences: int | None           #: whole sequences of ``seq_len`` (None without one)
    seq_len: int | None             #: [tokens]
    compute_flops: float            #: C = 6 x active parameters x tokens [FLOPs]
    law_tokens: float               #: DeepSeek LLM's B_opt at C [tokens]
    low_tokens: float               #: smallest batch of the comparable runs [tokens]
    high_tokens: float              #: largest batch of the comparable runs [tokens]
    window_decades: float           #: half-width of the compute neighbourhood [decades]
    runs: tuple                     #: ids of the comparable runs
    clipped: str | None             #: "raised", "lowered" or None (the law stands)
    reason: str                     #: one line for the headline


def _tokens_text(x: float) -> str:
    return f"{x / 1e6:.3g}M" if x >= 1e6 else f"{x / 1e3:.3g}k"


def global_batch_choice(compute_flops: ArrayLike, table: pd.DataFrame, seq_len: int | None = None) -> BatchChoice:
    r"""The default global batch of one run, with the law, the bounds and a one-line reason.

    Same rule as :func:`default_global_batch_tokens` (law clipped to the published range,
    rounded to whole sequences when ``seq_len`` is given), for a single compute budget.

    .. math:: B = \min(\max(0.2920\, C^{0.3271},\, B_{low}),\, B_{high})

    Parameters
    ----------
    compute_flops : float
        Training compute C = 6 x active parameters x tokens [FLOPs], > 0 (one number).
    table : pandas.DataFrame
        Published runs, as :func:`batch_bounds_tokens`.
    seq_len : int, optional
        Training sequence length [tokens].

    Returns
    -------
    choice : BatchChoice
        ``tokens`` [tokens], ``sequences`` [-], ``law_tokens``, ``low_tokens``, ``high_tokens``
        [tokens], the comparable ``runs`` and the ``reason`` text, e.g. "16.8M tokens:
        DeepSeek LLM batch law gives 67.9M at 3.79e+25 FLOPs, lowered to the largest batch
        used by 3 published runs of 6.3e+24-3.79e+25 FLOPs (9.44M-16.8M tokens)".

    References
    ----------
    .. [1] DeepSeek-AI, arXiv:2401.02954, §3.1 (the law).
    .. [2] ``data/published_batches.csv`` (the bounds).
    """
    if np.ndim(compute_flops) != 0:
        raise v.InputError("compute_flops", "compute_flops must be one number here (use "
                                            "default_global_batch_tokens for arrays), got "
                                            f"shape {np.shape(compute_flops)}")
    if seq_len is not None and np.ndim(seq_len) != 0:
        raise v.InputError("seq_len", f"seq_len must be one number here, got shape {np.shape(seq_len)}")
    c_arr, (ids, run_c, run_b), inside, width_arr = _neighbourhood(compute_flops, table)
    c, inside, width = float(c_arr), np.asarray(inside), float(width_arr)
    law = float(batch_tokens_scaling_law(c))
    low, high = float(run_b[inside].min()), float(run_b[inside].max())
    tokens = min(max(law, low), high)
    clipped = "raised" if law < low else "lowered" if law > high else None
    sequences = None
    if seq_len is not None:
        n, t = _round_to_sequences(tokens, seq_len)
        sequences, tokens, seq_len = int(n), float(t), int(seq_len)
    span_c = f"{run_c[inside].min():.3g}-{run_c[inside].max():.3g} FLOPs"
    runs = f"{int(inside.sum())} published runs of {span_c}"
    span_b = f"{_tokens_text(low)}-{_tokens_text(high)} tokens"
    head = f"{_tokens_text(tokens)} tokens: DeepSeek LLM batch law"
    if clipped is None:
        reason = f"{head} at {c:.3g} FLOPs, within {span_b} used by {runs}"
    else:
        edge = "smallest" if clipped == "raised" else "largest"
        reason = (f"{head} gives {_tokens_text(law)} at {c:.3g} FLOPs, {clipped} to the {edge} "
                  f"batch used by {runs} ({span_b})")
    if width > NEIGHBOURHOOD_DECADES:
        reason += f" (window widened to {width:g} decades to find {MIN_NEIGHBOURS} runs)"
    if sequences is not None:
        reason += f"; {sequences:,} sequences of {seq_len:,}"
    return BatchChoice(tokens=tokens, sequences=sequences, seq_len=seq_len, compute_flops=c,
                       law_tokens=law, low_tokens=low, high_tokens=high, window_decades=width,
                       runs=tuple(ids[inside]), clipped=clipped, reason=reason)
