"""The fine-tuning ladder, cheapest first: adapt (retrieval on a hosted model), QLoRA, LoRA,
a full fine-tune and pretraining, each rung priced on the priced GPU that runs it cheapest.

References
----------
1. "LLM Training Infrastructure" (an infrastructure overview): LoRA of 7-13B on one node of
   eight accelerators, QLoRA on one card; fine-tunes cost hundreds to low thousands of dollars,
   pretraining seven figures.
2. E. Hu et al., arXiv:2106.09685, §4.2 (LoRA needs no gradients for frozen weights).
3. Dettmers et al. 2023, arXiv:2305.14314 (QLoRA: NF4 base weights).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from .. import _validate as v
from ..training.arch import ModelSpec
from ..training.flops import chinchilla_optimal_tokens
from ..training.layout import Layout
from ..training.memory import MemoryOptions, memory_per_gpu

if TYPE_CHECKING:
    from ..training.hardware import GPUSpec


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


@dataclass(frozen=True)
class LadderWork:
    """What the ladder's rungs train and in how long; checked once here.

    Attributes
    ----------
    finetune_tokens : float
        Tokens seen by a fine-tune, epochs included [tokens]; default 1e9 (about three
        epochs over a 330M-token domain corpus: an assumption).
    pretrain_tokens : float, optional
        [tokens]; default: Chinchilla's 20 per parameter.
    pretrain_days : float
        Wall clock pretraining may take [days].
    finetune_max_hours : float
        Wall-clock budget of one fine-tune [h].
    corpus_tokens : float, optional
        Corpus the "adapt" rung embeds [tokens]; default finetune_tokens /
        :data:`FINETUNE_EPOCHS`.
    adapt_queries : int
        Queries the "adapt" rung answers [-].
    lora_rank : int
        Rank of the LoRA and QLoRA adapters [-].
    seq_len : int, optional
        [tokens]; default the model's.
    """

    finetune_tokens: float = 1e9
    pretrain_tokens: float | None = None
    pretrain_days: float = 30.0
    finetune_max_hours: float = 24.0
    corpus_tokens: float | None = None
    adapt_queries: int = ADAPT_QUERIES
    lora_rank: int = 16
    seq_len: int | None = None

    def __post_init__(self) -> None:
        v.positive("finetune_tokens", self.finetune_tokens)
        if self.pretrain_tokens is not None:
            v.positive("pretrain_tokens", self.pretrain_tokens)
        v.positive("pretrain_days", self.pretrain_days)
        v.positive("finetune_max_hours", self.finetune_max_hours)
        if self.corpus_tokens is not None:
            v.positive("corpus_tokens", self.corpus_tokens)
        v.nonnegative("adapt_queries", self.adapt_queries)


@dataclass(frozen=True)
class LadderSpeed:
    """How fast each GPU runs a rung, and how far its GPUs are ranked by that; checked once
    here.

    Attributes
    ----------
    mfu : dict of str -> float, optional
        Overrides of :data:`DEFAULT_MFU` by method [-], each in (0, 1].
    predict_mfu : callable, optional
        ``predict_mfu(gpu, method, n)`` -> MFU [-] of the fine-tune ``method`` on ``n`` of
        ``gpu`` (a step model); used for the QLoRA, LoRA and full rungs a ``mfu`` entry does
        not fix. Default: :data:`DEFAULT_MFU`.
    rank_band : callable, optional
        ``rank_band(gpu, mfu)`` -> band [-] of a prediction no published run validates (0:
        validated). Such a GPU competes at :func:`slow_end_cost`, a validated one at its
        predicted cost. Default: every GPU at its predicted cost.
    """

    mfu: Mapping[str, float] | None = None
    predict_mfu: Callable[[GPUSpec, str, int], float] | None = None
    rank_band: Callable[[GPUSpec, float], float] | None = None

    def __post_init__(self) -> None:
        for name, x in self.by_method().items():
            v.fraction(f"mfu[{name}]", x)

    def by_method(self) -> dict[str, float]:
        """The MFU assumed for each method [-]: :data:`DEFAULT_MFU` with the overrides."""
        return {**DEFAULT_MFU, **(self.mfu or {})}


def adapt_cost_usd(corpus_tokens: ArrayLike, queries: ArrayLike = ADAPT_QUERIES,
                   prompt_tokens: ArrayLike = ADAPT_PROMPT_TOKENS, answer_tokens: ArrayLike = ADAPT_ANSWER_TOKENS,
                   embed_usd_per_million: ArrayLike = EMBED_USD_PER_MILLION_TOKENS,
                   input_usd_per_million: ArrayLike = HOSTED_INPUT_USD_PER_MILLION_TOKENS,
                   output_usd_per_million: ArrayLike = HOSTED_OUTPUT_USD_PER_MILLION_TOKENS) -> float | np.ndarray:
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
    Dc, Q, ti, to, pe, pi, po = v.checked(
        v.nonnegative, corpus_tokens=corpus_tokens, queries=queries, prompt_tokens=prompt_tokens,
        answer_tokens=answer_tokens, embed_usd_per_million=embed_usd_per_million,
        input_usd_per_million=input_usd_per_million, output_usd_per_million=output_usd_per_million)
    return v.result((Dc * pe + Q * (ti * pi + to * po)) / 1e6)


def _billed(n: float, unit: int) -> int:
    return int(np.ceil(n / unit) * unit)


def finetune_ladder(model: ModelSpec, gpus: GPUSpec | list[GPUSpec] | tuple[GPUSpec, ...],
                    usd_per_gpu_hour: float | dict[str, float | None],
                    work: LadderWork = LadderWork(), speed: LadderSpeed = LadderSpeed(),
                    billing_gpus: Mapping[str, int] | None = None) -> list[Rung]:
    r"""The infrastructure overview's ladder [1], cheapest first: adapt, QLoRA, LoRA, full fine-tune, pretrain.

    Each GPU rung is priced on every GPU given a price and keeps the cheapest. QLoRA runs on
    the fewest cards it fits (one for 7-70B: NF4 transformer blocks, embeddings and LM head
    in 16 bits as in QLoRA's reference code); LoRA and the full fine-tune on the fewest GPUs
    that fit (ZeRO-3 over data parallelism, full recomputation, micro-batch 1) and finish
    within ``work.finetune_max_hours``; pretraining on enough nodes to finish in
    ``work.pretrain_days``. GPUs are billed by whole instances (``billing_gpus``); a run uses
    every GPU it pays for (data parallel), which changes its hours, not its GPU-hours.

    .. math:: t = \frac{k\, N\, D}{n\, F_{peak}\, \mathrm{MFU}},\qquad
              \$ = n\, t\, p_{GPU\text{-}h} = \frac{k N D}{F_{peak}\, \mathrm{MFU}}\, p

    with k from :data:`FLOPS_PER_PARAM_TOKEN`. "Adapt" is :func:`adapt_cost_usd` on a
    corpus of ``work.finetune_tokens`` / :data:`FINETUNE_EPOCHS` tokens.

    Stages: the priced GPUs, the adapt rung (:func:`_adapt_rung`), each fine-tune's
    cheapest GPU (:func:`_finetune_rung`) and pretraining (:func:`_pretrain_rung`).

    Parameters
    ----------
    model : ModelSpec
    gpus : GPUSpec or list of GPUSpec
    usd_per_gpu_hour : float or dict of str -> float
        [USD per GPU-hour], by GPU id (a float with a single GPU). GPUs without a price are
        skipped, never priced by guess.
    work : LadderWork
        Tokens of the fine-tunes and of pretraining, their time budgets, the adapt rung's
        corpus and queries, the LoRA rank and the sequence length.
    speed : LadderSpeed
        MFU by method (overrides of :data:`DEFAULT_MFU`, or a step model's
        ``predict_mfu``) and the band an unvalidated GPU is ranked by (``rank_band``).
    billing_gpus : dict of str -> int, optional
        GPUs per billed instance, by GPU id; default 1 (per-GPU rental).

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
    Dpt = float(chinchilla_optimal_tokens(model.params)) if work.pretrain_tokens is None else \
        float(work.pretrain_tokens)
    u = speed.by_method()
    unit = {g.id: int(v.integer(f"billing_gpus[{g.id}]", (billing_gpus or {}).get(g.id, 1)))
            for g in priced}
    rungs = [_adapt_rung(work)]
    one_card = _fits_one_card(model, priced, work)
    for method in ("qlora", "lora", "full"):
        # QLoRA's point is one card: where some card holds it, only such cards compete
        pool = [g for g in priced if one_card[g.id]] if method == "qlora" and any(
            one_card.values()) else priced
        best = _finetune_rung(model, method, pool, prices, unit, work, speed)
        if best is not None:
            rungs.append(best)
    rungs.append(_pretrain_rung(model, priced, prices, unit, Dpt, float(work.pretrain_days),
                                u["pretrain"], speed.rank_band))
    return sorted(rungs, key=lambda r: r.cost_usd)


def _adapt_rung(work: LadderWork) -> Rung:
    """The ladder's first rung: retrieval on a hosted model (:func:`adapt_cost_usd`)."""
    Dft = float(work.finetune_tokens)
    Dc = Dft / FINETUNE_EPOCHS if work.corpus_tokens is None else float(work.corpus_tokens)
    adapt_queries = work.adapt_queries
    adapt = float(adapt_cost_usd(Dc, adapt_queries))
    return Rung(method="adapt", gpu=None, gpus=0, hours=None, gpu_hours=0.0, cost_usd=adapt,
                flops=0.0, tokens=Dc, mfu=None,
                note=f"retrieval on a hosted model: embed {Dc:.3g} tokens at "
                     f"${EMBED_USD_PER_MILLION_TOKENS}/M (text-embedding-3-small) and answer "
                     f"{int(adapt_queries):,} queries of {ADAPT_PROMPT_TOKENS:,} + "
                     f"{ADAPT_ANSWER_TOKENS} tokens at ${HOSTED_INPUT_USD_PER_MILLION_TOKENS}/"
                     f"${HOSTED_OUTPUT_USD_PER_MILLION_TOKENS} per M (GPT-4o mini); query volume "
                "and corpus size are assumptions; serving costs after that are not counted")


def _fits_one_card(model: ModelSpec, priced: list[GPUSpec], work: LadderWork) -> dict[str, bool]:
    """GPU id -> whether one card holds the QLoRA fine-tune."""
    m1 = memory_per_gpu(model, Layout(gpus=1, zero_stage=3, global_batch=None, recompute="full"),
                        MemoryOptions(finetune="qlora", lora_rank=work.lora_rank,
                                      qlora_16bit_embeddings=True), seq_len=work.seq_len)
    need_bytes = float(m1.total_bytes)
    return {g.id: bool(need_bytes <= g.memory_bytes) for g in priced}


def _finetune_rung(model: ModelSpec, method: str, pool: list[GPUSpec], prices: dict[str, float],
                   unit: dict[str, int], work: LadderWork, speed: LadderSpeed) -> Rung | None:
    """The rung of fine-tune ``method`` on the GPU of ``pool`` that ranks cheapest (None:
    it fits on none): on the fewest GPUs it fits, in whole instances, doubled (but for
    QLoRA) until it finishes within the budget."""
    lora_rank, seq_len = work.lora_rank, work.seq_len
    Dft, max_h = float(work.finetune_tokens), float(work.finetune_max_hours)
    mfu, predict_mfu, rank_band, u = speed.mfu, speed.predict_mfu, speed.rank_band, speed.by_method()
    best = None
    for g in pool:
        node = g.gpus_per_node
        sizes = np.array([x for x in (1, 2, 4) if x < node]
                         + [node * k for k in (1, 2, 4, 8, 16, 32, 64)])
        m = memory_per_gpu(model, Layout(gpus=sizes, zero_stage=3, global_batch=None,
                                         recompute="full"),
                           MemoryOptions(finetune=method, lora_rank=lora_rank,
                                         qlora_16bit_embeddings=True), seq_len=seq_len)
        fits = np.asarray(m.total_bytes) <= g.memory_bytes
        if not fits.any():
            continue
        n_min = int(sizes[np.argmax(fits)])
        peak = g.bf16_dense_tflops * 1e12
        flops = FLOPS_PER_PARAM_TOKEN[method] * model.params * Dft

        def mfu_on(k: int, g: GPUSpec = g, method: str = method) -> float:
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
        # every rung built here has rank_cost_usd set (by _ranked)
        if best is None or rank < best.rank_cost_usd:  # type: ignore[operator]
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
    return best


def _ranked(rank_cost: float, band: float) -> dict:
    """The Rung fields that say how its GPU was ranked."""
    return dict(ranked_by="slow end" if band > 0 else "point", rank_cost_usd=float(rank_cost),
                band=float(band))


def _ladder_prices(gpus: GPUSpec | list[GPUSpec] | tuple[GPUSpec, ...],
                   usd_per_gpu_hour: float | dict[str, float | None]) -> tuple[list, dict]:
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


def _pretrain_rung(model: ModelSpec, priced: list[GPUSpec], prices: dict[str, float], unit: dict[str, int],
                   tokens: float, days: float, mfu: float,
                   rank_band: Callable[[GPUSpec, float], float] | None = None) -> "Rung":
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
        # every rung built here has rank_cost_usd set (by _ranked)
        if best is None or rank < best.rank_cost_usd:  # type: ignore[operator]
            best = Rung(method="pretrain", gpu=g.id, gpus=n, hours=gpu_hours / n,
                        gpu_hours=gpu_hours, cost_usd=cost, flops=flops, tokens=tokens, mfu=mfu,
                        note=f"{tokens:.3g} tokens on {n:,} x {g.id} in about "
                             f"{gpu_hours / n / 24:.0f} days at MFU {mfu:.2f}", min_gpus=0,
                        usd_per_gpu_hour=prices[g.id], **_ranked(rank, band))
    assert best is not None  # priced is never empty (_ladder_prices refuses that)
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
    from ..economics.offers import choose_offers
    out: dict[str, tuple[float, int, str]] = {}
    if prices is None or len(prices) == 0:
        return out
    for gpu in dict.fromkeys(prices["gpu"]):
        row = choose_offers(prices, gpu).get("on_demand")
        if row is not None:
            out[gpu] = (float(row["on_demand_usd_per_hour"]) / float(row["gpus"]),
                        int(row["gpus"]), str(row["id"]))
    return out
