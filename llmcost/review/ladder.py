"""The fine-tune ladder of a review (seed article 003): adapt a hosted model, QLoRA, LoRA,
full fine-tune, pretraining, each on the cheapest catalog GPU it fits, cheapest first.
One composition for `llmcost ladder` and the sizing app."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .. import _validate as v
from ..catalog import Catalog
from ..economics import sizing
from ..training.arch import ModelSpec


@dataclass(frozen=True)
class LadderResult:
    model: str
    finetune_tokens: float
    rungs: tuple                 # sizing.Rung, cheapest first
    price_ids: dict              # gpu id -> prices.csv id used
    skipped: tuple               # GPUs with no price in the catalog

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"method": r.method, "gpu": r.gpu or "hosted", "gpus": r.gpus,
                              "hours": r.hours, "cost_usd": r.cost_usd, "note": r.note}
                             for r in self.rungs])


def ladder(model: ModelSpec, cat: Catalog, finetune_tokens=1e9, pretrain_tokens=None,
           pretrain_days=30.0, gpu_ids=None, seq_len=None) -> LadderResult:
    """Rungs on the catalog's priced GPUs (the cheapest on-demand offer of each); GPUs with
    no cited price are skipped and listed, never given an invented one."""
    ids = list(gpu_ids) if gpu_ids else list(cat.gpus()["id"])
    gpus = [cat.gpu(g) for g in ids]
    cheapest = sizing.cheapest_on_demand(cat.prices())
    priced = [g for g in gpus if g.id in cheapest]
    skipped = tuple(g.id for g in gpus if g.id not in cheapest)
    if not priced:
        raise v.InputError("gpu", "no price in data/prices.csv for " + ", ".join(skipped))
    rungs = sizing.finetune_ladder(
        model, priced, {g.id: cheapest[g.id][0] for g in priced}, finetune_tokens,
        pretrain_tokens, pretrain_days, billing_gpus={g.id: cheapest[g.id][1] for g in priced},
        seq_len=seq_len)
    return LadderResult(model.id, float(finetune_tokens), tuple(rungs),
                        {g.id: cheapest[g.id][2] for g in priced}, skipped)
