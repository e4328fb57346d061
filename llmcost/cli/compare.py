"""``llmcost compare``: one run on every GPU with an offer, a row per GPU, offer and option."""

from __future__ import annotations

import argparse

from .review import _args_review
from .scenarios import _scenarios_from_args


def cmd_compare(a) -> dict:
    """One run on every GPU with an offer, each offer and each pricing option: each row the
    review of the scenario with that GPU and offer (``--gpus`` narrows the GPUs)."""
    from ..review.compare import compare
    scenarios, cat, notes = _scenarios_from_args(a)
    if len(scenarios) > 1:
        notes.append("compare reads scenario A of a compare link")
    gpus = None
    if a.gpus is not None:
        gpus = [g.strip() for g in a.gpus.split(",") if g.strip()]
        for g in gpus:
            cat.gpu(g)
    out = compare(scenarios[0], cat, sort=a.sort, by=a.by, gpus=gpus).to_json()
    out["warnings"] = notes
    return out


def _compare_text(r: dict) -> str:
    """The comparison for a terminal: a row per GPU x offer x option, sorted."""
    head = (f"{'gpu':10s} {'offer':24s} {'option':13s} {'fabric':20s} {'days':>7s} "
            f"{'band':>13s} {'cost':>10s} {'$/M tok':>8s}  calibrated")
    lines = [f"{r['scenario'] or 'defaults'}: sorted by {r['sort']}"
             + (f", grouped by {r['by']}" if r["by"] != "none" else ""), head]
    for x in r["rows"]:
        days = f"{x['days']:.1f}" if x["days"] is not None else "-"
        band = (f"{x['days_band'][0]:.0f}-{x['days_band'][1]:.0f}" if x["days_band"] else "-")
        cost = _money(x["cost_usd"]) if x["cost_usd"] is not None else "missing"
        per = f"{x['usd_per_million_tokens']:.2f}" if x["usd_per_million_tokens"] else "-"
        cal = x["calibration_text"]
        if x["flag"]:
            cal += f"; {x['flag']}"
        lines.append(f"{x['gpu']:10s} {x['offer'] or 'buy':24s} {x['option_label']:13s} "
                     f"{x['fabric']:20s} {days:>7s} {band:>13s} {cost:>10s} {per:>8s}  {cal}")
    lines += [f"note: {n}" for n in r["warnings"]]
    return "\n".join(lines)


def _money(x: float) -> str:
    from ..review.format import usd_text
    return usd_text(x)


def _args_compare(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost compare``."""
    _args_review(sp)
    sp.add_argument("--sort", choices=("cost", "days"), default="cost",
                    help="order of the rows (an uncalibrated GPU's row at its band's slow end)")
    sp.add_argument("--by", choices=("none", "gpu", "provider"), default="none",
                    help="group the rows by GPU or provider, sorted within each group")
    sp.add_argument("--gpus", metavar="IDS", help="only these GPUs, comma-separated")
