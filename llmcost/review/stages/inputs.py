"""The resolve stage: the catalog rows, prices, on-premises costs, failure rate and batch a
scenario's ids and figures stand for."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd

from ... import _validate as v
from ... import catalog as catalog_mod
from ...economics import realized, tco
from ...economics import reliability as rel
from ...scenario import CONFIG_PREFIX, Scenario
from ...training import hf_config
from ...training.batch import global_batch_choice
from ...training.precision import check_precision
from ..results import Inputs
from .space import a2a_overlap, stack_of


def resolve(s: Scenario, cat: catalog_mod.Catalog) -> Inputs:
    """Catalog rows for the scenario's ids, and the prices, capex, power and failure rate
    it takes from the catalog (or from its own custom figures)."""
    m, model_warnings = model_of(s, cat)
    g = cat.gpu(s.gpu)
    up = cat.fabric(g.scale_up)
    # "custom": a fabric given by its numbers, its other constants the technology's catalog row
    # "auto": the fabric the GPU's systems ship with (an A100 cluster is not NDR InfiniBand)
    # a named offer with "auto": the fabric that offer is sold with (AWS EFA, Oracle RoCE)
    offer_fabric = offer_fabric_of(s, cat, g) if s.fabric == "auto" else None
    out = (cat.custom_fabric(s.fabric_gb_per_s_per_gpu, s.fabric_technology)
           if s.fabric == "custom" else cat.fabric(offer_fabric or g.scale_out_id(s.fabric)))
    if out.kind != "scale_out":
        raise v.InputError("fabric", f"fabric {s.fabric!r} links GPUs inside a node; pick a "
                                     "scale-out fabric (InfiniBand or RoCE)")
    check_precision(s.precision, g)
    warnings, resolved = list(model_warnings), {}
    if offer_fabric:
        which = (f"offer {s.price_offer}" if s.price_offer != "auto"
                 else f"{s.provider}'s offer (provider={s.provider})")
        warnings.append(f"timed on the fabric {which} is sold with: {offer_fabric} "
                        "(fabric=auto)")
    resolved["fabric_gb_per_s_per_gpu"] = out.bandwidth_gb_per_s_per_gpu
    if s.price_source == "catalog":
        prices, offer, billing, discount, w, offers, rule = _catalog_prices(s, cat, g)
        warnings += w
        capex = g.capex_usd_per_gpu
        power_w = g.power_w_per_gpu
        opex_other = None
        if capex is None:
            warnings.append(f"no cited purchase price for {g.id} in the catalog: on-premises is "
                            "not costed (set prices to custom and enter a capex per GPU)")
    else:
        prices, discount, capex, power_w, opex_other, w = _custom_prices(s, cat, g)
        warnings += w
        offer, billing = None, g.gpus_per_node
        offers, rule = {}, "prices entered (price_source=custom)"
    onprem = None
    if capex is not None:
        if power_w is None:
            power_w = 0.0
            warnings.append(f"no system power for {g.id} in the catalog: on-premises power "
                            "not costed")
        onprem = _onprem(s, capex, power_w, opex_other)
    # what the controls show: the figures used, whichever source they came from
    # 0 where the figures use no price: never another GPU's or a stale custom figure
    resolved["on_demand_usd_per_gpu_hour"] = (prices.on_demand or 0.0) if prices else 0.0
    resolved["reserved_1y_usd_per_gpu_hour"] = (prices.reserved_1y or 0.0) if prices else 0.0
    resolved["reserved_3y_usd_per_gpu_hour"] = (prices.reserved_3y or 0.0) if prices else 0.0
    resolved["spot_discount"] = discount or 0.0
    resolved["onprem_capex_usd_per_gpu"] = capex or 0.0
    if onprem is not None:
        resolved["onprem_power_kw_per_gpu"] = power_w / 1000
        resolved["onprem_opex_usd_per_gpu_month"] = other_opex_usd_per_gpu_month(onprem)
    rate, source, note = _failure_rate(s, cat, g)
    if note:
        warnings.append(note)
    resolved["failures_per_1000_gpu_days"] = rate
    batch = None
    if s.batch == "custom":
        batch_tokens = float(s.global_batch_tokens)
    else:
        batch = global_batch_choice(6.0 * m.active_params * s.tokens, cat.published_batches(),
                                    m.seq_len)
        seqs = splittable_sequences(batch.sequences)
        if seqs != batch.sequences:
            batch = replace(batch, tokens=float(seqs * m.seq_len), sequences=seqs,
                            reason=batch.reason + f", rounded to {seqs:,} sequences "
                                                  "(2^k x 1, 1.25, 1.5 or 1.75: splits over "
                                                  "power-of-two data-parallel groups)")
        batch_tokens = float(batch.tokens)
    resolved["global_batch_tokens"] = batch_tokens
    resolved["moe_a2a_overlap"] = a2a_overlap(s)
    ratio = realized_ratio_for(s, m, cat)
    if not ratio.runs:
        warnings.append("no published whole run to compare with in this catalog: the forecast "
                        "is the floor, with no band")
    return Inputs(scenario=s, catalog=cat, model=m, gpu=g, scale_up=up, scale_out=out,
                  prices=prices, price_offer=offer, billing_gpus=billing, spot_discount=discount,
                  onprem=onprem, failures_per_1000_gpu_days=rate, failure_source=source,
                  resolved=resolved, warnings=tuple(warnings), global_batch_tokens=batch_tokens,
                  batch=batch, stack=stack_of(s), realized=ratio,
                  spot_capacity_gpus=spot_capacity_of(cat, offers.get("spot")),
                  price_offers=offers, price_rule=rule)


def spot_capacity_of(cat: catalog_mod.Catalog, offer: str | None) -> int | None:
    """The spot capacity an offer's provider documents [GPUs] (prices.csv
    ``spot_capacity_gpus``); None when no offer or none documented."""
    if not offer:
        return None
    x = cat.lookup("prices", offer).get("spot_capacity_gpus")
    return int(x) if x is not None and pd.notna(x) else None


def realized_ratio_for(s: Scenario, m, cat: catalog_mod.Catalog) -> realized.RealizedRatio:
    """What the published runs comparable to the scenario realized over their floor
    (:func:`llmcost.economics.realized.realized_ratio`): its stack if named, else every stack;
    dense or MoE; the model's size class."""
    runs = cat.realized_runs() if cat.loaded("realized_runs") else None
    if runs is None:
        return realized.NO_RUNS
    return realized.realized_ratio(runs, stack=None if s.stack == "auto" else s.stack,
                                   moe=m.is_moe, params=m.params)


def model_of(s: Scenario, cat: catalog_mod.Catalog):
    """The scenario's architecture: a catalog row, or a config.json's fields (``model=config``,
    :mod:`llmcost.training.hf_config`), at the scenario's sequence length; with warnings."""
    if s.model != "config":
        if s.model_config:
            return _with_seq_len(cat.model(s.model), s), [
                f"config fields ignored: model is {s.model!r} (model=config uses them)"]
        return _with_seq_len(cat.model(s.model), s), []
    if not s.model_config:
        raise v.InputError("model", "model=config needs the config.json's fields "
                                    "(cfg.<field>= keys, or --model-config FILE)")
    fields_ = hf_config.fields_from_query({CONFIG_PREFIX + k: x
                                           for k, x in json.loads(s.model_config).items()})
    m, warnings = hf_config.model_from_config(fields_, seq_len=s.seq_len or None, id="config")
    return m, list(warnings)


def _with_seq_len(m, s: Scenario):
    return replace(m, seq_len=int(s.seq_len)) if s.seq_len else m


def provider_of(s: Scenario) -> str | None:
    """The provider the scenario restricts offers to, or None (any)."""
    return None if s.provider == "any" else s.provider


def offers_of(s: Scenario, cat: catalog_mod.Catalog, g) -> dict:
    """option -> the offer the price rule picks for the scenario's GPU (and provider); an
    InputError naming ``provider`` when that provider has no offer of the GPU."""
    chosen = cat.choose_offers(g.id, provider_of(s))
    if not chosen and provider_of(s) is not None:
        others = cat.providers(g.id)
        raise v.InputError("provider", f"provider {s.provider} has no offer of {g.id} in the "
                                       f"catalog (providers of {g.id}: "
                                       f"{', '.join(others) or 'none'}); set provider=any")
    return chosen


def offer_fabric_of(s: Scenario, cat: catalog_mod.Catalog, g) -> str | None:
    """The scale-out fabric of the offer a scenario names for its GPU (``price_offer``), or of
    the on-demand offer of the provider it names (``provider``); None: neither, an offer of
    another GPU, or a fabric the catalog lacks."""
    if s.price_offer == "auto":
        if provider_of(s) is None or s.price_source != "catalog":
            return None
        chosen = offers_of(s, cat, g)
        row = chosen.get("on_demand", next(iter(chosen.values()), None))
        if row is None:
            return None
    else:
        try:
            row = cat.lookup("prices", s.price_offer)
        except v.InputError:
            return None
    fab = str(row.get("fabric") or "")
    if row["gpu"] != g.id or fab not in set(cat.fabrics()["id"]):
        return None
    return fab if cat.fabric(fab).kind == "scale_out" else None


def _catalog_prices(s, cat, g):
    """Per GPU-hour prices from the catalog: the offer ``price_offer`` names, else per option
    the offer :data:`llmcost.economics.offers.PRICE_RULE` picks; none (with a warning) for an
    unpriced GPU.

    Returns
    -------
    (prices, offer id, GPUs per billed instance, spot discount, warnings, option -> offer id,
    the rule in words)
    """
    warnings = []
    named = None if s.price_offer == "auto" else cat.price_offer(g.id, s.price_offer)
    if named is not None and named["gpu"] != g.id:
        warnings.append(f"price offer {named['id']!r} is for {named['gpu']}, not "
                        f"{g.id}: priced by the catalog's rule for {g.id} instead")
        named = None
    if named is not None:
        chosen = {k: named for k in catalog_mod.usd_per_gpu_hour(named)}
        rule = f"the offer named: price_offer={named['id']}"
    else:
        chosen = offers_of(s, cat, g)
        rule = catalog_mod.PRICE_RULE + (f"; among {s.provider}'s offers only (provider="
                                         f"{s.provider})" if provider_of(s) else "")
    if not chosen:
        warnings.append(f"no cited cloud price for {g.id} in the catalog: cloud costs are "
                        "not shown (set prices to custom to enter your own)")
        return None, None, g.gpus_per_node, None, warnings, {}, rule
    per = {k: catalog_mod.usd_per_gpu_hour(row)[k] for k, row in chosen.items()}
    base = chosen.get("on_demand", next(iter(chosen.values())))
    od, sp = per.get("on_demand"), per.get("spot")
    if sp is not None and od is not None and sp >= od:
        warnings.append(f"spot at ${sp:.2f}/GPU-h ({chosen['spot']['id']}) is not below "
                        f"on-demand ${od:.2f}/GPU-h ({chosen['on_demand']['id']}): spot is "
                        "not costed")
        chosen.pop("spot")
        sp = None
    # one stored spot figure, the discount, rounded to what its control shows (0.01% of the
    # on-demand price at most); the spot price follows from it
    discount = round(1 - sp / od, 4) if (sp is not None and od) else None
    prices = tco.CloudPrices(on_demand=od, reserved_1y=per.get("reserved_1y"),
                             reserved_3y=per.get("reserved_3y"),
                             spot=od * (1 - discount) if discount else None)
    # the offer named lacks the option, or (by the rule) no offer of the GPU lists it
    def lacks(what: str) -> str:
        return (f"{base['id']} lists no {what}" if named is not None
                else f"no offer of {g.id} lists a {what}")
    if discount is None and "spot" not in chosen:
        warnings.append(f"{lacks('spot price')}: spot is not costed")
    for name, term in (("reserved_1y", "1-year"), ("reserved_3y", "3-year")):
        if getattr(prices, name) is None:
            warnings.append(f"{lacks(term + ' reserved price')}: the {term} reservation is "
                            "not costed")
    offers = {k: str(row["id"]) for k, row in chosen.items()}
    return prices, str(base["id"]), int(base["gpus"]), discount, warnings, offers, rule


#: custom-price fields -> (catalog option of the GPU's offer, what the warning calls it)
_CUSTOM_CLOUD = {"on_demand_usd_per_gpu_hour": ("on_demand", "on-demand"),
                 "reserved_1y_usd_per_gpu_hour": ("reserved_1y", "1-year reserved"),
                 "reserved_3y_usd_per_gpu_hour": ("reserved_3y", "3-year reserved")}


def _entered(s: Scenario, name: str) -> bool:
    """True when the scenario's figure differs from the field's default (the user entered it)."""
    return getattr(s, name) != Scenario.__dataclass_fields__[name].default


def _custom_prices(s, cat, g):
    """Prices of ``price_source`` = "custom": each figure entered by the user, or this GPU's.

    A price field left at its Scenario default was not entered. Its defaults are the H100's
    (AWS p5.48xlarge per GPU, a DGX H100 server and system power), so it never stands for
    another GPU: a figure not entered is this GPU's catalog figure (the price per GPU-hour of
    ``price_offer``, or per option of the rule's offer; its server price and system power
    from data/gpus.csv), and absent with a warning when the catalog has none. An entered 0 on a
    reservation or the server price means "none". The spot discount (the cluster guide's 60%
    off the on-demand price) and the facility opex ($50k per node over its life) are not
    figures of one GPU: their entered or default values apply to any GPU. A figure entered
    exactly equal to its default is read as not entered.

    Returns
    -------
    (prices, spot discount, capex [USD per GPU], system power [W per GPU], opex [USD per
    GPU-month] or None, warnings)
    """
    warnings = []
    row = None if s.price_offer == "auto" else cat.price_offer(g.id, s.price_offer)
    if row is not None and row["gpu"] == g.id:
        per = catalog_mod.usd_per_gpu_hour(row)
    else:
        # the catalog's rule, per option (the figures price_source=catalog would use)
        per = {k: catalog_mod.usd_per_gpu_hour(r)[k]
               for k, r in offers_of(s, cat, g).items()}
    got = {}
    for name, (option, what) in _CUSTOM_CLOUD.items():
        if _entered(s, name):
            got[option] = getattr(s, name) or None
        elif option in per:
            got[option] = per[option]
        else:
            got[option] = None
            warnings.append(f"no {what} price entered and none in the catalog for {g.id}: "
                            f"{what} is not costed")
    od = got["on_demand"]
    discount = s.spot_discount or None
    for option in ("reserved_1y", "reserved_3y"):
        if got[option] is not None and od is not None and got[option] > od:
            warnings.append(f"{_CUSTOM_CLOUD[option + '_usd_per_gpu_hour'][1]} price "
                            f"${got[option]:.2f}/GPU-h is above the on-demand ${od:.2f}/GPU-h")
    if od is None:
        discount = None
    prices = None
    if any(x is not None for x in got.values()):
        prices = tco.CloudPrices(on_demand=od, reserved_1y=got["reserved_1y"],
                                 reserved_3y=got["reserved_3y"],
                                 spot=od * (1 - discount) if discount else None)
    if _entered(s, "onprem_capex_usd_per_gpu"):
        capex = s.onprem_capex_usd_per_gpu or None
    else:
        capex = g.capex_usd_per_gpu
        if capex is None:
            warnings.append(f"no server price entered and none cited for {g.id} in the catalog: "
                            "on-premises is not costed")
    power_w = (s.onprem_power_kw_per_gpu * 1000 if _entered(s, "onprem_power_kw_per_gpu")
               else g.power_w_per_gpu)
    return prices, discount, capex, power_w, s.onprem_opex_usd_per_gpu_month, warnings


def _onprem(s, capex, power_w, opex_other):
    """Per-GPU on-premises costs: the cited defaults of tco.OnPrem (network, storage, space,
    staff, upkeep) around the server price and power, or the scenario's own opex figure."""
    kw = dict(capex_usd_per_gpu=capex, power_w_per_gpu=power_w, pue=s.pue,
              usd_per_kwh=s.usd_per_kwh, life_years=s.life_years,
              residual_share=s.residual_share)
    if opex_other is not None:
        # one custom figure replaces the split defaults (space, staff, maintenance)
        kw.update(space_usd_per_gpu_month=opex_other, staff_usd_per_gpu_month=0.0,
                  maintenance_per_year=0.0)
    return tco.OnPrem(**kw)


def other_opex_usd_per_gpu_month(onprem) -> float:
    """Opex besides power: space, staff and maintenance [USD per GPU-month]."""
    return (onprem.space_usd_per_gpu_month + onprem.staff_usd_per_gpu_month
            + onprem.maintenance_per_year / 12 * (onprem.capex_usd or 0.0))


def _failure_rate(s, cat, g):
    """(rate, "id: what it counts", warning or None)."""
    if s.failure_rate == "custom":
        return s.failures_per_1000_gpu_days, "custom: the scenario's own rate", None
    if s.failure_rate == "by-gpu":
        fr = rel.default_failure_rate(g.generation, cat.failure_rates())
    else:
        fr = rel.failure_rate(s.failure_rate, cat.failure_rates())
    return float(fr.failures_per_1000_gpu_days), f"{fr.id}: {fr.counts}", fr.note or None


def splittable_sequences(n: int) -> int:
    """The nearest batch of 2^k x {1, 1.25, 1.5, 1.75} sequences (at least 1): a rule's
    batch rounded so that data-parallel groups of powers of two split it, as published runs'
    batches do (2,048 for Llama 3 405B, 1,536 for GPT-3, 15,360 for DeepSeek-V3 = 2^13 x 1.875
    is the exception that keeps a fourth bit) [sequences]."""
    n = max(1, int(n))
    if n < 4:
        return n
    k = n.bit_length() - 1
    grid = [int(2 ** k * f) for f in (1, 1.25, 1.5, 1.75)] + [2 ** (k + 1)]
    return min(grid, key=lambda x: (abs(x - n), x))
