"""The fine-tune ladder of a review (the infrastructure overview, "LLM Training
Infrastructure"): adapt a hosted model, QLoRA, LoRA, full fine-tune, pretraining, each on the
cheapest catalog GPU it fits, cheapest first. One composition for `llmcost ladder` and the
sizing app. The pretraining rung is a review (the chain of :func:`llmcost.review.evaluate`,
sizing by days): the same days, GPUs and on-demand dollars as `llmcost review` and
`llmcost size` for that run.

How GPUs are ranked, by what is known of them (:func:`ladder`): a GPU whose prediction a
published run validates competes at its predicted cost; one whose constants are fitted to
published training runs but whose band no run validates (MI300X, Blackwell at BF16) at the
slow end of that band; one no published training run calibrates at all (its constants are the
prior, :data:`llmcost.training.step.UNCALIBRATED_CALIBRATION`) is not ranked while a
calibrated GPU can take the rung, and is named in the notes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from .. import _validate as v
from ..catalog import Catalog
from ..planning.ladder import (
    DEFAULT_MFU,
    LadderSpeed,
    LadderWork,
    Rung,
    cheapest_on_demand,
    finetune_ladder,
    slow_end_cost,
)
from ..scenario import Scenario
from ..training.arch import ModelSpec
from ..training.flops import chinchilla_optimal_tokens
from ..training.hardware import Hardware
from ..training.layout import Layout


@dataclass(frozen=True)
class LadderResult:
    model: str
    finetune_tokens: float
    rungs: tuple                 # Rung, cheapest first
    price_ids: dict              # gpu id -> prices.csv id the fine-tune rungs use
    skipped: tuple               # GPUs with no price in the catalog
    #: the prices.csv id of the pretraining rung's review (its catalog offer), if any
    pretrain_price_id: str | None = None
    #: priced GPUs no published training run calibrates: not ranked (calibrated ones exist)
    uncalibrated: tuple = ()
    #: what the ladder says of its ranking: which GPUs were left out or ranked at a slow end
    notes: tuple = ()

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"method": r.method, "gpu": r.gpu or "hosted", "gpus": r.gpus,
                              "hours": r.hours, "cost_usd": r.cost_usd,
                              "note": r.note + (f"; ranked at the slow end of its +-{r.band:.0%} "
                                                "band (no published run validates it)"
                                                if r.ranked_by == "slow end" else "")}
                             for r in self.rungs])


#: sequences per optimizer step of a fine-tune (assumption: a common SFT/LoRA batch of 64
#: sequences, gradient accumulation making it up on few GPUs)
FINETUNE_BATCH_SEQUENCES = 64


def finetune_mfu(model: ModelSpec, cat: Catalog, fabric: str, seq_len=None):
    """``predict_mfu(gpu, method, n)`` for :func:`~llmcost.planning.ladder.finetune_ladder`:
    the step model's MFU of the full fine-tune's layout on ``n`` GPUs (data parallel, ZeRO-3,
    full recomputation, micro-batch 1, :data:`FINETUNE_BATCH_SEQUENCES` per step). LoRA is
    taken at the same efficiency of its smaller FLOP count (the same GEMM shapes), QLoRA at
    :data:`~llmcost.planning.ladder.DEFAULT_MFU`'s QLoRA / full ratio (its NF4 dequantisation:
    an assumption the step model does not model)."""
    from ..training import step

    def predict(gpu, method, n):
        # "auto": each GPU on the fabric its systems ship with
        up = cat.fabric(gpu.scale_up)
        out = cat.fabric(gpu.scale_out_id(fabric))
        batch = int(n * -(-FINETUNE_BATCH_SEQUENCES // n))
        # flash attention as the default options say
        layout = Layout(gpus=int(n), global_batch=batch, recompute="full", zero_stage=3,
                        flash_attention=None)
        p = step.predict_step(model, Hardware(gpu, up, out), layout, seq_len=seq_len,
                              with_scaling=False)
        u = float(p.mfu)
        if method == "qlora":
            u *= DEFAULT_MFU["qlora"] / DEFAULT_MFU["full"]
        return u
    return predict


def rank_band(cat: Catalog, precision: str = "bf16"):
    """``rank_band(gpu, mfu)`` for :func:`~llmcost.planning.ladder.finetune_ladder`: the
    throughput band of a prediction no published run validates (:func:`throughput_band`), 0
    for a validated one."""
    from ..training.step import calibration_note
    from ..training.uncertainty import throughput_band

    def band(gpu, mfu):
        b = throughput_band(gpu.generation, precision, max(float(mfu), 1e-9),
                            cat.step_model_errors(), note=calibration_note(gpu))
        return 0.0 if b.calibrated else b.low
    return band


def pretrain_rung(results) -> Rung | None:
    """The pretraining rung of a reviewed run (any sizing): its GPU, GPUs, days, GPU-hours
    and on-demand dollars, ranked at the slow end of its band when no published run
    validates it; None when the run has no on-demand cost (no price)."""
    j = results.to_json()
    cost = j["costs_usd"].get("on_demand")
    if cost is None or j["days"] is None:
        return None
    s, m = results.scenario, results.inputs.model
    flops = 6.0 * m.active_params * s.tokens
    price = j["prices_usd_per_gpu_hour"].get("on_demand")
    b = j["prediction_band"]
    band = 0.0 if b is None or b["calibrated"] else float(b["low"])
    return Rung(method="pretrain", gpu=s.gpu, gpus=int(j["gpus"]),
                hours=float(j["days"]) * 24, gpu_hours=float(j["gpu_hours"]),
                cost_usd=float(cost), flops=flops, tokens=float(s.tokens), mfu=j["mfu"],
                note=f"{s.tokens:.3g} tokens on {int(j['gpus']):,} x {s.gpu} in "
                     f"{j['days']:.1f} days (the review: MFU {j['mfu']:.1%}, goodput "
                     f"{j['goodput']:.1%}, {j['price_offer'] or 'entered price'})", min_gpus=0,
                usd_per_gpu_hour=price, ranked_by="slow end" if band else "point",
                rank_cost_usd=slow_end_cost(cost, band), band=band)


def _reviewed_pretrain(model, priced, tokens, days, base, cat):
    """The review of pretraining, sized by days, with the lowest rank cost over the priced
    GPUs (:func:`pretrain_rung`)."""
    from .chain import evaluate
    best = None
    for g in priced:
        try:
            s = replace(base, model=model.id, gpu=g.id, tokens=float(tokens), sizing="days",
                        target_days=float(days))
            r = pretrain_rung(evaluate(s, cat))
        except v.InputError:
            continue            # the scenario asks what this GPU lacks (e.g. FP8 on an A100)
        if r is not None and (best is None or r.rank_cost_usd < best.rank_cost_usd):
            best = r
    return best


def _ranking_notes(rungs, uncalibrated, ranked_alone) -> tuple:
    """What the output says of the ranking: the GPUs left out, and each rung won at a slow
    end."""
    notes = []
    if uncalibrated:
        notes.append("not ranked (no published training run calibrates them, so their cost "
                     "would rest on the datasheet peak and a prior efficiency): "
                     + ", ".join(uncalibrated))
    if ranked_alone:
        notes.append("no calibrated GPU was given: these are ranked by the slow end of their "
                      "band, uncalibrated: " + ", ".join(ranked_alone))
    slow = [r for r in rungs if r.ranked_by == "slow end"]
    for r in slow:
        notes.append(f"ranked at the slow end of its +-{r.band:.0%} band (no published run "
                     f"validates the step model on it): the {r.method} rung on {r.gpu}, "
                     f"cost / (1 - {r.band:.3f}) = ${r.rank_cost_usd:,.2f}")
    return tuple(notes)


@dataclass(frozen=True)
class Pretraining:
    """The ladder's pretraining rung as asked for, checked once here.

    Attributes
    ----------
    pretrain_tokens : float, optional
        Tokens of the run [-]; None: Chinchilla-optimal for the model.
    pretrain_days : float
        Days the run may take [days].
    review : Results, optional
        A review of the run (:func:`llmcost.review.evaluate`): the rung is that run.
    base : Scenario, optional
        The scenario each GPU's review starts from (default: ``review``'s, else Scenario()).
    """

    pretrain_tokens: float | None = None
    pretrain_days: float = 30.0
    review: Any = None
    base: Scenario | None = None

    def __post_init__(self) -> None:
        if self.pretrain_tokens is not None:
            object.__setattr__(self, "pretrain_tokens",
                               float(v.positive("pretrain_tokens", self.pretrain_tokens)))
        object.__setattr__(self, "pretrain_days", float(v.positive("pretrain_days", self.pretrain_days)))


def ladder(model: ModelSpec, cat: Catalog, finetune_tokens=1e9, pretraining: Pretraining | None = None,
           gpu_ids=None, seq_len=None) -> LadderResult:
    """Rungs on the catalog's priced GPUs (the cheapest on-demand offer of each); GPUs with
    no cited price are skipped and listed, never given an invented one.

    The pretraining rung (``pretraining``, default :class:`Pretraining`) is its ``review``
    (a review's Results: that run) when given, else the cheapest on-demand review (its
    ``base`` with the model, GPU, tokens and days; default Scenario) over the priced GPUs of
    a catalog model; a model outside the catalog keeps the fixed-MFU estimate of
    :func:`llmcost.planning.ladder.finetune_ladder`."""
    from ..training.step import is_calibrated
    pt = Pretraining() if pretraining is None else pretraining
    pretrain_tokens, pretrain_days, pretrain, base = pt.pretrain_tokens, pt.pretrain_days, pt.review, pt.base
    ids = list(gpu_ids) if gpu_ids else list(cat.gpus()["id"])
    gpus = [cat.gpu(g) for g in ids]
    cheapest = cheapest_on_demand(cat.prices())
    priced = [g for g in gpus if g.id in cheapest]
    skipped = tuple(g.id for g in gpus if g.id not in cheapest)
    if not priced:
        raise v.InputError("gpu", "no price in data/prices.csv for " + ", ".join(skipped))
    # a GPU no published training run calibrates is never ranked against one that is; with
    # only such GPUs given, they are ranked by the slow end of their (widest) band
    uncalibrated = tuple(g.id for g in priced if not is_calibrated(g))
    ranked_alone = ()
    if len(uncalibrated) < len(priced):
        priced = [g for g in priced if g.id not in uncalibrated]
    else:
        ranked_alone, uncalibrated = uncalibrated, ()
    fabric = (base or (pretrain.scenario if pretrain is not None else Scenario())).fabric
    if fabric == "custom":
        fabric = Scenario().fabric
    rungs = finetune_ladder(
        model, priced, {g.id: cheapest[g.id][0] for g in priced},
        LadderWork(finetune_tokens, pretrain_tokens, pretrain_days, seq_len=seq_len),
        LadderSpeed(predict_mfu=finetune_mfu(model, cat, fabric, seq_len),
                    rank_band=rank_band(cat)),
        billing_gpus={g.id: cheapest[g.id][1] for g in priced})
    price_ids = {g.id: cheapest[g.id][2] for g in priced}
    reviewed = pretrain_rung(pretrain) if pretrain is not None else None
    offer = None
    if reviewed is not None:
        offer = pretrain.inputs.price_offer
    elif model.id in set(cat.models()["id"]):
        # the review's run has no price (or none was given): review each priced GPU
        tokens = chinchilla_optimal_tokens(model.params) if pretrain_tokens is None \
            else pretrain_tokens
        base = base or (pretrain.scenario if pretrain is not None else Scenario())
        if seq_len is not None:
            base = replace(base, seq_len=int(seq_len))
        reviewed = _reviewed_pretrain(model, priced, tokens, pretrain_days, base, cat)
        if reviewed is not None:
            offer = str(cat.price_offer(reviewed.gpu)["id"])
    if reviewed is not None:
        rungs = sorted([r for r in rungs if r.method != "pretrain"] + [reviewed],
                       key=lambda r: r.cost_usd)
    return LadderResult(model=model.id, finetune_tokens=float(finetune_tokens),
                        rungs=tuple(rungs), price_ids=price_ids, skipped=skipped,
                        pretrain_price_id=offer, uncalibrated=uncalibrated,
                        notes=_ranking_notes(rungs, uncalibrated, ranked_alone))
