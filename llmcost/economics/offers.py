"""Which offer prices a run: the one rule every view uses (the review, the ladder, serving).

An offer is a ``data/prices.csv`` row of kind ``offer`` sold with a scale-out fabric;
market composites and articles' figures are reference prices. ``price_offer=auto`` takes,
per pricing option, the offer with the lowest price per GPU-hour (:func:`choose_offers`).
"""

from __future__ import annotations

import pandas as pd

#: prices.csv columns [USD per instance-hour] -> option name
PRICE_COLUMNS = {"on_demand": "on_demand_usd_per_hour", "reserved_1y": "reserved_1y_usd_per_hour",
                 "reserved_3y": "reserved_3y_usd_per_hour", "spot": "spot_usd_per_hour"}

#: how ``price_offer=auto`` prices a GPU, as the review's JSON states it (``price_rule``)
PRICE_RULE = ("price_offer=auto: per option, the cheapest offer of the GPU per GPU-hour "
              "among prices.csv rows of kind 'offer' sold with a scale-out fabric (market "
              "composites and articles are reference prices, not offers), the provider's own "
              "price first at an equal price; an option no offer lists is not costed, never "
              "priced from another option")


def usd_per_gpu_hour(row: pd.Series) -> dict:
    """Option -> price per GPU-hour of a prices.csv row (instance price / its ``gpus``, the
    billing unit) [USD per GPU-hour]; options the row does not list are absent."""
    n = float(row["gpus"])
    out = {}
    for name, col in PRICE_COLUMNS.items():
        x = row.get(col)
        if x is not None and not pd.isna(x) and float(x) > 0:
            out[name] = float(x) / n
    return out


def is_offer(row: pd.Series) -> bool:
    """Whether a prices.csv row is an offer a run can be bought on: ``kind`` offer (or
    blank: a user's row) and a scale-out fabric named."""
    kind = row.get("kind")
    kind = "offer" if kind is None or pd.isna(kind) or str(kind) == "" else str(kind)
    fabric = row.get("fabric")
    return kind == "offer" and fabric is not None and not pd.isna(fabric) and str(fabric) != ""


def is_first_party(row: pd.Series) -> bool:
    """Whether a prices.csv row's price was read from the provider's own page."""
    x = row.get("first_party")
    return x is not None and not pd.isna(x) and str(x).strip().lower() in ("true", "1", "yes")


def providers(prices: pd.DataFrame, gpu_id: str | None = None) -> list:
    """The providers with an offer (of ``gpu_id``, else of any GPU), in catalog order."""
    if prices is None or len(prices) == 0:
        return []
    rows = prices if gpu_id is None else prices[prices["gpu"] == gpu_id]
    return list(dict.fromkeys(str(r["provider"]) for _, r in rows.iterrows() if is_offer(r)))


def choose_offers(prices: pd.DataFrame, gpu_id: str, provider: str | None = None) -> dict:
    """The offer :data:`PRICE_RULE` picks for each option of a GPU: the one function that
    chooses offers for the review, the ladder and serving.

    Parameters
    ----------
    prices : DataFrame
        ``data/prices.csv`` rows (a catalog's ``prices`` table).
    gpu_id : str
    provider : str, optional
        Only this provider's offers (``provider`` column, case-insensitive); None: any.

    Returns
    -------
    dict
        option -> the chosen row (``on_demand``, ``reserved_1y``, ``reserved_3y``, ``spot``);
        an option no offer of the GPU lists is absent. At equal price a first-party price
        (:func:`is_first_party`) is kept over a third party's, else the catalog's first row.
    """
    best: dict = {}
    if prices is None or len(prices) == 0:
        return best
    want = None if provider is None else str(provider).strip().lower()
    for _, row in prices[prices["gpu"] == gpu_id].iterrows():
        if not is_offer(row) or (want is not None and str(row["provider"]).lower() != want):
            continue
        first = is_first_party(row)
        for option, per in usd_per_gpu_hour(row).items():
            if (option not in best or per < best[option][0]
                    or (per == best[option][0] and first and not best[option][2])):
                best[option] = (per, row, first)
    return {option: row.copy() for option, (_, row, _) in best.items()}
