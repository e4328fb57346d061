"""Which GPU, which cloud: one run on every GPU with an offer, each offer and each way to
pay (:func:`llmcost.review.compare.compare`), the same rows as ``llmcost compare``."""

from __future__ import annotations

from .. import plots
from ..review import OPTION_LABELS
from ..review.format import usd_text
from .base import Panel


class OffersApp(Panel):
    name = "offers"
    title = "Which GPU, which cloud"
    question = ("For this run, which GPU from which provider under which commitment, at what "
                "days and cost, and how sure?")
    order = 15
    card_keys = ("cheapest_here",)
    intro = ("Each row is the review of this run on one GPU and one offer of data/prices.csv "
             "(timed on the fabric the offer is sold with), under one way to pay; buying is "
             "a row per GPU. Cheapest first. A GPU the step model has no published run for "
             "ranks at the slow end of its bands; spot ranks after the rest where the offer "
             "documents no spot capacity for this many GPUs; an option an offer does not "
             "list is shown missing, never priced from another offer. The same rows as "
             "`llmcost compare`.")
    fields = ("model", "tokens", "gpus", "precision", "seq_len", "stack")

    def compute(self, s):
        from ..review.compare import compare
        return compare(s, self.catalog)

    def card_compute(self, s):
        """The landing card: the scenario's own GPU across its offers and ways to pay (the
        rows the app shows for that GPU; the whole comparison is the app's)."""
        from ..review.compare import compare
        return compare(s, self.catalog, gpus=[s.gpu])

    def card(self, res) -> dict:
        return {"cheapest_here": _cheapest_on(res, res.scenario.gpu)}

    def headline(self, res):
        costed = [r for r in res.rows if r.cost_usd is not None]
        out = {}
        if costed:
            top = costed[0]
            out["cheapest"] = ("Cheapest way to pay",
                               f"{top.gpu} · {top.offer or 'buy'} · "
                               f"{OPTION_LABELS[top.option]}: {usd_text(top.cost_usd)} in "
                               f"{top.days:,.1f} days")
            fast = min((r for r in costed if not r.flag), key=lambda r: r.rank_days,
                       default=top)
            out["fastest"] = ("Fastest", f"{fast.gpu} · {fast.offer or 'buy'}: "
                                         f"{fast.days:,.1f} days, {usd_text(fast.cost_usd)}")
        out["cheapest_here"] = _cheapest_on(res, res.scenario.gpu)
        gpus = len({r.gpu for r in res.rows})
        offers = len({r.offer for r in res.rows if r.offer})
        out["rows"] = ("Compared", f"{gpus} GPUs, {offers} offers, {len(res.rows)} rows")
        return out

    def tables(self, res) -> list[dict]:
        rows = []
        for r in res.rows:
            band = (f"{r.days_band[0]:,.0f}-{r.days_band[1]:,.0f}" if r.days_band else "-")
            status = r.calibration_text(res.sort)
            if r.flag:
                status += f"; {r.flag}"
            rows.append([r.gpu, r.offer or "buy", OPTION_LABELS.get(r.option, r.option),
                         r.fabric, f"{r.days:,.1f}" if r.days is not None else "-", band,
                         usd_text(r.cost_usd) if r.cost_usd is not None else
                         f"missing ({r.missing})",
                         f"${r.usd_per_million_tokens:,.2f}" if r.usd_per_million_tokens
                         else "-", status])
        return [{"title": "Every GPU, offer and way to pay, cheapest first",
                 "cls": "llmc-offers-table",
                 "columns": ["GPU", "offer", "way to pay", "fabric", "days", "days band",
                             "cash cost", "$ per million tokens", "calibrated"],
                 "rows": rows}]

    def note_lines(self, res):
        return []

    figures_from = (("cost_days", plots.offers_cost_days),)


def _cheapest_on(res, gpu: str) -> tuple:
    """(label, text) of the cheapest row on ``gpu`` that can be taken at this size: the
    headline's and the landing card's figure (one computation: the same reviews)."""
    rows = [r for r in res.rows if r.gpu == gpu and r.cost_usd is not None and not r.flag]
    if not rows:
        return (f"Cheapest way to pay on {gpu}", "no offer prices this run")
    top = rows[0]
    return (f"Cheapest way to pay on {gpu}",
            f"{top.offer or 'buy'} · {OPTION_LABELS[top.option]}: {usd_text(top.cost_usd)}")
