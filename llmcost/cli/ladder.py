"""``llmcost ladder``: the fine-tune ladder, cheapest first."""

from __future__ import annotations

import argparse

from .. import _validate as v
from .. import catalog
from .common import _add_model_args, _model_from_args


def cmd_ladder(a) -> dict:
    from ..review.ladder import Pretraining, ladder
    if a.tokens is not None:
        raise v.InputError("tokens", f"--tokens {a.tokens:g}: ladder takes "
                                     "--finetune-tokens (fine-tune tokens, epochs included) "
                                     "and --pretrain-tokens (the pretraining rung's)")
    m = _model_from_args(a)
    L = ladder(m, catalog.default(), a.finetune_tokens, Pretraining(a.pretrain_tokens, a.pretrain_days),
               a.gpu, a.seq_len)
    rows = [{"method": r.method, "gpu": r.gpu, "gpus": r.gpus, "hours": r.hours,
             "cost_usd": r.cost_usd, "note": r.note, "gpu_hours": r.gpu_hours,
             "min_gpus": r.min_gpus, "usd_per_gpu_hour": r.usd_per_gpu_hour,
             "price_id": (L.pretrain_price_id if r.method == "pretrain" else
                          L.price_ids.get(r.gpu) if r.gpu else None),
             "calibration": _rung_calibration(r),
             "ranked_by": r.ranked_by if r.gpu else None,
             "rank_cost_usd": r.rank_cost_usd if r.gpu else None} for r in L.rungs]
    res = {"model": m.id, "finetune_tokens": a.finetune_tokens, "rungs": rows, "notes": [],
           "uncalibrated_gpus": list(L.uncalibrated)}
    if L.skipped:
        res["notes"].append("skipped (no price in data/prices.csv): " + ", ".join(L.skipped))
    res["notes"] += list(L.notes)
    return res


def _rung_calibration(rung) -> str | None:
    """What is known of a ladder rung's GPU: "validated" (a published run validates its
    band), "fitted" (constants fitted to published training runs, band not validated) or
    "none" (no published training run: the prior constants); None for the hosted rung."""
    from ..training.step import is_calibrated
    if not rung.gpu:
        return None
    if not is_calibrated(catalog.default().gpu(rung.gpu)):
        return "none"
    return "validated" if rung.band == 0 else "fitted"


def _ladder_table(r: dict) -> str:
    lines = [f"fine-tune ladder for {r['model']} ({r['finetune_tokens']:.3g} fine-tune tokens), "
             "cheapest first", "",
             f"{'method':<9} {'gpu':<10} {'gpus':>6} {'hours':>9} {'cost_usd':>13}  note"]
    for x in r["rungs"]:
        hours = "-" if x["hours"] is None else f"{x['hours']:,.1f}"
        lines.append(f"{x['method']:<9} {x['gpu'] or 'hosted':<10} {x['gpus']:>6,} {hours:>9} "
                     f"{x['cost_usd']:>13,.2f}  {x['note']}")
    lines += [""] + r["notes"] if r["notes"] else []
    return "\n".join(lines)


def _args_ladder(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost ladder``."""
    _add_model_args(sp)
    sp.add_argument("--finetune-tokens", type=float, default=1e9,
                    help="fine-tune tokens, epochs included (default 1e9)")
    # the old name, refused: it read as pretraining tokens beside the review's tokens=
    sp.add_argument("--tokens", type=float, help=argparse.SUPPRESS)
    sp.add_argument("--pretrain-tokens", type=float,
                    help="pretraining tokens (default: 20 per parameter)")
    sp.add_argument("--pretrain-days", type=float, default=30.0)
    sp.add_argument("--gpu", action="append",
                    help="a GPU to consider (repeatable; default: every catalog GPU with a price)")
