"""The stages of the review chain, each a small function of the Scenario's inputs and the
results of earlier stages (pvlib's ModelChain is the model: named stages, typed results,
each stage replaceable).

    resolve -> size (only when sizing by days) -> plan -> predict -> reliability -> economics
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import OrderedDict
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import pandas as pd

from .. import _validate as v
from .. import catalog as catalog_mod
from .. import utilization as ut
from ..economics import napkin, realized, spot, storage, tco
from ..economics import reliability as rel
from ..economics.waterfall import waterfall_from_step
from ..planning import pipeline_batch, planner, sizing
from ..scenario import CONFIG_PREFIX, Scenario
from ..training import hf_config, memory, stacks
from ..training.batch import global_batch_choice
from ..training.layout import LINK_KEYS
from ..training.moe import A2A_OVERLAP
from ..training.precision import check_precision, peak_tflops_by_part
from ..training.step import DEFAULT_STACK, STEP_TERMS, Options, calibration_note, predict_step
from ..training.uncertainty import throughput_band
from . import fill
from .results import (
    EconomicsResult,
    Flag,
    ForecastResult,
    Inputs,
    Layout,
    MfuLimit,
    PlanResult,
    PredictResult,
    ReliabilityResult,
    SizeResult,
    SpotSummary,
)

#: The planner's space inside the review: every TP/PP, the common choices of the rest (a full
#: search is `llmcost plan`); keeps a control change well under a second.
REVIEW_SPACE = planner.Space(cp=(1, 2), micro_batch=(1, 2), zero_stage=(1, 3),
                             recompute=("none", "selective", "full"), interleave=(1, 2, 4),
                             flash_attention=(True,), tp_comm_overlap=(False,),
                             # MoE: no EP, one node's worth, and the sizes the published
                             # runs use across nodes (DeepSeek-V3 EP 64, Megatron-Bridge 32)
                             ep=(1, 8, 32, 64))
#: the micro-batches the fsdp stack searches (:func:`review_space`)
FSDP_MICRO_BATCHES = (1, 2, 4, 8, 16)
#: the step model's options every review starts from (:func:`options_for` adds the scenario's)
STEP_OPTIONS = Options(flash_attention=True)


#: CP only from the sequence lengths where published recipes use it: Megatron-Bridge
#: 25.11-26.08 runs CP2 only at 8,192 tokens (Llama 3.1 405B), Llama 3 CP16 at 131,072
#: (arXiv:2407.21783 Table 4); no calibration row uses CP below 8,192 (data/calibration_runs.csv).
MIN_CP_SEQ_LEN = 8192

#: the review ranks by step time, then takes the simplest layout (fewest parallel dimensions)
#: among the fitting ones within this share of the fastest: a 2% gain does not pay for a
#: dimension a team must configure, debug and keep balanced
SIMPLEST_WITHIN = 0.02

#: within that band, the review prefers layouts that leave this share of the GPU's memory
#: free: the memory model counts 2% allocator fragmentation (memory.FRAGMENTATION, the most
#: Megatron-Bridge's tightest recipes leave room for, with expandable segments), while
#: eager FSDP loses more: llm-foundry's benchmark sweep ran its 7B without checkpointing at
#: micro-batch 7 on 8 x A100 80 GB (93% of memory in our model) and its tables, which list
#: the runs that finished, give micro-batch 6 (83%). 5% is an assumption, a preference and
#: not a limit (no stack's own figure is identified: torchtitan's FSDP2 reads below our
#: model): a layout above 95% is chosen only when nothing within 2% of its speed leaves
#: more, and the review then says so
MEMORY_MARGIN = 0.05


def a2a_overlap(s: Scenario) -> float:
    """The share of the MoE all-to-all hidden: the named recipe's, or the custom figure."""
    return s.moe_a2a_overlap if s.moe_overlap == "custom" else A2A_OVERLAP[s.moe_overlap]


def stack_of(s: Scenario) -> str:
    """The training stack the floor runs: the scenario's, or with none named ("auto") the
    one a 2025-26 team would run (:data:`llmcost.training.step.DEFAULT_STACK`)."""
    return DEFAULT_STACK if s.stack == "auto" else s.stack


def options_for(s: Scenario) -> Options:
    """The step model's options for a scenario: one precision for sizing, plan and predict
    (they must pick and predict the same layout)."""
    return replace(STEP_OPTIONS, precision=s.precision, moe_load_imbalance=s.moe_load_imbalance,
                   moe_a2a_overlap=a2a_overlap(s), stack=stack_of(s))


#: the memory model's options for every layout the review tries: the router's probabilities
#: applied in the expert activation, as Megatron-Core does since 2025 (commit 2659630), so the
#: expert outputs are not kept for the combine (llmcost.training.memory.memory_per_gpu)
REVIEW_MEMORY = {"moe_probs_at": "activation"}


def recompute_recipes(m, stack="megatron") -> tuple:
    """The modules a 2025 recipe recomputes by name, searched beside none: DeepSeek-V3's RMSNorm
    and MLA up-projections (arXiv:2412.19437 §3.2.3) for an MLA model; the norms and the
    expert activation (Megatron-Core's --recompute-modules layernorm moe_act, as the
    Megatron-Bridge MoE recipes set it) for another MoE model; for a dense one none by name
    on Megatron (its selective recompute is the ``recompute`` axis) and torchtitan's per-op
    selective checkpointing ("op_sac", its default ``selective_ac_option = "op"``) on the
    fsdp stack."""
    if m.attention == "mla":
        return ((), ("layernorm", "mla_up_proj"))
    if m.is_moe:
        return ((), ("layernorm", "moe_act"))
    if stacks.stack(stack).space == "fsdp":
        return ((), ("op_sac",))
    return ((),)


def given_layout(s: Scenario) -> dict:
    """The layout fields a scenario fixes (:data:`llmcost.training.layout.LINK_KEYS`), by
    Layout field name; the planner chooses the rest."""
    out = {}
    for key, name in LINK_KEYS.items():
        x = getattr(s, key)
        if x in (0, "auto"):
            continue
        out[name] = int(x) if key == "zero" else x
    return out


def given_layout_text(s: Scenario) -> str:
    """The layout keys a scenario gives, as the link spells them ("tp=4, pp=4")."""
    return ", ".join(f"{k}={getattr(s, k)}" for k in LINK_KEYS if getattr(s, k) not in (0, "auto"))


#: the given-layout keys the planner's Space takes as one value, not a tuple to search
STAGE_SPLIT = ("first_stage_layers", "last_stage_layers")


def check_given_layout(s: Scenario, m) -> None:
    """Refuse the layout keys a scenario gives that contradict the model or each other,
    whatever the GPUs and the batch: expert sizes on a dense model or not dividing the
    experts, stage layers or interleaving with ``pp=1`` (one stage has no pipeline to split).
    Without this the planner would drop them: its expert sizes are 1 for a dense model."""
    if not m.is_moe:
        for key in ("ep", "etp"):
            x = getattr(s, key)
            if x > 1:
                raise v.InputError(key, f"{key}={x}: the model is dense, it has no experts "
                                        f"({m.id}); set {key} to 0 (the planner) or 1")
    else:
        if s.ep > 1 and m.moe_experts % s.ep:
            raise v.InputError("ep", f"ep={s.ep}: expert parallelism splits the "
                                     f"{m.moe_experts} routed experts of {m.id}, so it must "
                                     "divide them")
        if s.etp > 1 and m.moe_ffn_hidden % s.etp:
            raise v.InputError("etp", f"etp={s.etp}: expert tensor parallelism splits each "
                                      f"expert's {m.moe_ffn_hidden:,} FFN columns, so it must "
                                      "divide them")
    if s.pp == 1:
        split = [k for k in STAGE_SPLIT if getattr(s, k)]
        if split:
            keys = " and ".join(f"{k}={getattr(s, k)}" for k in split)
            raise v.InputError(split[0], f"{keys} with pp=1: stage layers split a pipeline, "
                                         "and pp=1 runs the model as one stage; set pp above "
                                         f"1, or {' and '.join(split)} to 0")
        if s.vp > 1:
            raise v.InputError("vp", f"vp={s.vp} with pp=1: interleaving splits each pipeline "
                                     "stage into chunks, and pp=1 runs the model as one stage; "
                                     "set pp above 1, or vp to 0")


def review_space(s: Scenario, m, gpus_per_node: int) -> planner.Space:
    """The planner's space for a scenario: :data:`REVIEW_SPACE`, no CP below
    :data:`MIN_CP_SEQ_LEN`, narrowed to the layout the scenario gives (refused by
    :func:`check_given_layout` where it contradicts itself or the model). Stage layers
    given without ``pp`` narrow the search to the depths above 1 they split: they describe a
    pipeline, and the planner's PP1 would drop them."""
    check_given_layout(s, m)
    # BF16 AdamW moments as DeepSeek-V3 ran them (§3.3.3), searched for MoE models; dense
    # recipes keep FP32 moments (Llama 3; Megatron-Bridge's dense recipes)
    kw = {"recompute_modules": recompute_recipes(m, stack_of(s)),
          "optimizer_moments": ("fp32", "bf16") if m.is_moe else ("fp32",)}
    if m.seq_len < MIN_CP_SEQ_LEN:
        kw["cp"] = (1,)
    if stacks.stack(stack_of(s)).space == "fsdp":
        # PyTorch FSDP stacks shard parameters, gradients and optimizer (FULL_SHARD, ZeRO-3)
        # or gradients and optimizer (SHARD_GRAD_OP, ZeRO-2: no parameter gathers inside a
        # micro-batch; llm-foundry's tables run both) over data parallelism, with TP at most
        # inside a node (torchtitan's 2D) and no pipeline or context parallelism in
        # llm-foundry's benchmark runs. Micro-batches as large as memory allows: FULL_SHARD
        # gathers the parameters again for every micro-batch, so an FSDP team runs few, large
        # ones (llm-foundry's tables: 1-128 sequences per GPU; TinyLlama's FSDP run,
        # jzhang38/TinyLlama pretrain/tinyllama.py: micro_batch_size = 8, no activation
        # checkpointing). With the Megatron space's (1, 2), TinyLlama's 3T tokens on 16
        # A100-40GB were reviewed at mb2, four times the gathers per step: +42% GPU-hours
        # against its published 16 GPUs x ~90 days (+6% at mb8).
        kw.update(zero_stage=(2, 3), pp=(1,), interleave=(1,), cp=(1,),
                  micro_batch=FSDP_MICRO_BATCHES)
    fixed = given_layout(s)
    for name, x in fixed.items():
        # the planner's Space searches tuples of values, except the stage split it takes as is
        kw[name] = x if name in STAGE_SPLIT else (x,)
    split = [k for k in STAGE_SPLIT if k in fixed]
    if split and "pp" not in fixed:
        deep = tuple(p for p in planner.pipeline_depths(
            m, planner.Space(**{k: fixed[k] for k in split})) if p > 1)
        if not deep:
            keys = " and ".join(f"{k}={fixed[k]}" for k in split)
            raise v.InputError(split[0], f"{keys}: no pipeline depth above 1 splits the "
                                         f"{m.layers} layers of {m.id} with "
                                         f"{'these' if len(split) > 1 else 'this'}")
        kw["pp"] = deep
    if fixed.get("tp", 0) > gpus_per_node:
        kw["max_tp"] = fixed["tp"]
    return replace(REVIEW_SPACE, **kw)


HOURS_PER_YEAR = 8760.0


# ------------------------------------------------------------------ resolve

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


# ------------------------------------------------------------------ size

def size(inp: Inputs) -> SizeResult | None:
    """GPUs needed to meet the target days (only when the scenario sizes by days).

    Sizing sizes the forecast (the floor x the realized ratio of comparable published runs)
    to meet the target; the size the floor alone would need is kept beside (``floor_gpus``).
    Sizing divides by the useful share of wall time (goodput x (1 - data stalls)) at each
    candidate size (more GPUs fail more often), from the same reliability model as the
    reliability stage: the days sizing reports at its size are the review's days there,
    with the schedule headroom.

    With no batch given, sized at the batch law's batch; when that batch does not fill the
    size found (:func:`law_batch`, the rule a review with that many GPUs applies), sized once
    more at the batch that fills it: a batch that fills its GPUs runs faster per GPU, so the
    second size is the one that meets the target on fewer GPUs (or the faster one when none
    meets it)."""
    s = inp.scenario
    if s.sizing != "days":
        return None
    space = review_space(s, inp.model, inp.gpu.gpus_per_node)
    sz = _size_at(inp, space, inp.global_batch_tokens)
    law = None
    if s.batch != "custom":
        B = max(1, int(round(inp.global_batch_tokens / inp.model.seq_len)))
        law, run = law_batch(inp, space, _sized_gpus(sz, s), B)
        if not law.fills:
            sz = _size_at(inp, space, float(run * inp.model.seq_len))
    gpus = _sized_gpus(sz, s)
    return SizeResult(sizing=sz, gpus=int(gpus), meets_target=bool(sz.meets_target),
                      notes=tuple(sz.notes), batch_fill=law, floor_gpus=sz.floor_gpus)


def _size_at(inp: Inputs, space: planner.Space, batch_tokens: float):
    s = inp.scenario
    power = inp.onprem.power_w_per_gpu / 1000 if inp.onprem is not None else None
    if power is None and inp.gpu.power_w_per_gpu is not None:
        power = inp.gpu.power_w_per_gpu / 1000
    return sizing.size_cluster(inp.model, s.tokens, inp.gpu, inp.scale_up, inp.scale_out,
                               s.target_days, batch_tokens, s.headroom,
                               goodput=lambda n: checkpoint_goodput_at(inp, n),
                               data_stall=lambda tps, n: data_stall_at(inp, tps, n),
                               options=options_for(s), space=space,
                               max_power_mw=s.max_power_mw or None,
                               simplest_within=SIMPLEST_WITHIN, memory_kwargs=REVIEW_MEMORY,
                               memory_margin=MEMORY_MARGIN, power_kw_per_gpu=power, pue=s.pue,
                               realized_ratio=inp.realized.value if inp.realized else 1.0)


def _sized_gpus(sz, s) -> int:
    """The size to plan: the one that meets the target, else the fastest, else the
    smallest that fits, else the scenario's own."""
    if sz.gpus:
        return int(sz.gpus)
    n = sz.nearest
    for x in ((n.fastest_gpus, n.smallest_fitting_gpus) if n is not None else ()):
        if x:
            return int(x)
    return int(s.gpus)


class InterruptionTerms(NamedTuple):
    """The reliability model at each GPU count (arrays of one shape, the checkpoint's bytes
    a scalar)."""

    failures_per_day: np.ndarray
    mtbf_s: np.ndarray
    checkpoint_bytes: float
    nodes: np.ndarray
    stall_s: np.ndarray
    #: the scenario's interval or the recommended one (async: never shorter than the upload)
    interval_s: np.ndarray
    upload_s: np.ndarray
    #: restart per interruption: its terms' sum, or the scenario's own figure
    restart_s: np.ndarray
    #: the shared tier's aggregate bandwidth the job gets [GB/s]
    storage_gb_per_s: np.ndarray


def interruption_terms(inp: Inputs, gpus, mode: str | None = None) -> InterruptionTerms:
    """The reliability model at each GPU count (vectorized), shared by sizing, the
    reliability stage and the storage view (:class:`InterruptionTerms`), for ``mode``
    ("sync" or "async"; default the scenario's). The shared tier scales with the job: its
    per-node bandwidth times the nodes, unless the scenario gives the tier's total."""
    s, g = inp.scenario, inp.gpu
    mode = s.checkpoint_mode if mode is None else mode
    gpus = np.asarray(gpus)
    nodes = np.maximum(1, np.ceil(gpus / g.gpus_per_node))
    if s.mtbf_h > 0:
        per_day = np.full(gpus.shape, 24.0 / s.mtbf_h)
    else:
        per_day = np.asarray(rel.job_failures_per_day(gpus, inp.failures_per_1000_gpu_days))
    M = rel.mtbf_h(per_day) * 3600
    size_b = float(rel.checkpoint_size_bytes(inp.model.params))
    shared = np.asarray(rel.shared_tier_gb_per_s(nodes, s.storage_gb_per_s_per_node,
                                                 s.shared_storage_gb_per_s), float)
    stall = rel.checkpoint_stall_s(size_b, mode, nodes, shared,
                                   local_write_gb_per_s=s.local_write_gb_per_s,
                                   gpus_per_node=g.gpus_per_node)
    # async: the snapshot is durable only once uploaded, so the interval is never shorter
    # than the upload (and rework counts back to the last durable copy: storage.rework_s)
    upload = storage.upload_s(size_b, nodes, shared, NODE_NETWORK_GB_PER_S) \
        if mode == "async" else np.zeros(np.shape(M))
    tau = s.checkpoint_interval_s if s.checkpoint_interval_s > 0 else \
        storage.recommended_interval_s(stall, M, upload)
    terms = restart_terms_at(inp, gpus)
    restart = s.restart_s if terms is None else terms.total_s
    shape = np.shape(M)
    return InterruptionTerms(failures_per_day=per_day, mtbf_s=M, checkpoint_bytes=size_b,
                             nodes=nodes, stall_s=stall,
                             interval_s=np.broadcast_to(tau, shape),
                             upload_s=np.broadcast_to(upload, shape),
                             restart_s=np.broadcast_to(restart, shape),
                             storage_gb_per_s=np.broadcast_to(shared, shape))


def restart_terms_at(inp: Inputs, gpus) -> rel.RestartTerms | None:
    """The restart per interruption as its terms at each GPU count
    (:func:`llmcost.economics.reliability.restart.restart_terms`: detection, rescheduling, checkpoint
    load from the shared tier, warm-up), with the scenario's detector and rescheduling; None
    when the scenario gives its own restart (``restart`` = "custom")."""
    s = inp.scenario
    if s.restart == "custom":
        return None
    return rel.restart_terms(np.asarray(gpus), float(rel.checkpoint_size_bytes(inp.model.params)),
                             inp.gpu.gpus_per_node, s.storage_gb_per_s_per_node,
                             s.shared_storage_gb_per_s, detector=s.failure_detection,
                             reschedule=s.reschedule)


#: per-node bandwidth towards shared storage [GB/s] (one 400 Gb/s storage NIC per node;
#: the default of :func:`llmcost.economics.reliability.checkpoints.checkpoint_stall_s`)
NODE_NETWORK_GB_PER_S = rel.NODE_NETWORK_GB_PER_S


def mode_goodput(inp: Inputs, tau, stall, M, upload, mode: str | None = None, restart_s=None):
    """Goodput of a checkpoint mode (default the scenario's; :func:`storage.checkpoint_goodput`)
    with the restart of :func:`interruption_terms` (``restart_s``; None: the scenario's own
    figure, which only a custom restart has)."""
    s = inp.scenario
    if restart_s is None:
        if s.restart != "custom":
            raise ValueError("mode_goodput: pass restart_s from interruption_terms (the "
                             "scenario's restart comes from its terms)")
        restart_s = s.restart_s
    return storage.checkpoint_goodput(s.checkpoint_mode if mode is None else mode,
                                      tau, stall, M, restart_s, upload)


def checkpoint_goodput_at(inp: Inputs, gpus):
    """Goodput of failures and checkpoints at each GPU count (vectorized)."""
    t = interruption_terms(inp, gpus)
    return mode_goodput(inp, t.interval_s, t.stall_s, t.mtbf_s, t.upload_s,
                        restart_s=t.restart_s)


def data_stall_at(inp: Inputs, tokens_per_s, gpus):
    """Share of time the run waits for data at a throughput (vectorized): the scenario's
    measured share (custom), or the read rate the tokens need (ids of 2 or 4 bytes x read
    amplification) against the dataset tier's read bandwidth, prefetch hiding what it can
    (:func:`llmcost.economics.storage.data_stall_share`)."""
    s = inp.scenario
    if s.data_stall == "custom":
        return np.full(np.shape(tokens_per_s), s.data_stall_share)
    read = data_read_at(inp, tokens_per_s, gpus)
    return np.asarray(storage.data_stall_share(read.aggregate_gb_per_s,
                                               s.data_tier_read_gb_per_s), dtype=float)


def data_read_at(inp: Inputs, tokens_per_s, gpus):
    """The run's data read rate at a throughput (:func:`storage.data_read_rate_gb_per_s`:
    token ids of 2 or 4 bytes x the scenario's read amplification), aggregate and per node."""
    nodes = np.maximum(1, np.ceil(np.asarray(gpus) / inp.gpu.gpus_per_node))
    tps = np.maximum(np.asarray(tokens_per_s, dtype=float), 1e-9)
    return storage.data_read_rate_gb_per_s(tps, nodes, storage.token_bytes(inp.model.vocab),
                                           inp.scenario.data_read_amplification)


# ------------------------------------------------------------------ plan

#: link key of each Layout field (the inverse of LINK_KEYS), for naming a refused key
LINK_KEY_OF = {name: key for key, name in LINK_KEYS.items()}


def given_layout_error(inp: Inputs, gpus: int, B: int) -> v.InputError | None:
    """Why the layout a scenario gives cannot run on ``gpus`` GPUs, as an InputError naming
    the given key at fault, in the step model's own words (the stage split, interleave,
    expert or divisibility rule it breaks); None when the scenario gives no layout or the step
    model takes it."""
    s, m = inp.scenario, inp.model
    given = given_layout(s)
    if not given:
        return None
    keys = given_layout_text(s)
    named = [LINK_KEY_OF[n] for n in given]
    lay = {"tp": 1, "pp": 1, "cp": 1, "micro_batch": 1, **given}
    ranks = lay["tp"] * lay["pp"] * lay["cp"]
    if gpus % ranks:
        key = next(k for k in ("tp", "pp", "cp", *named) if k in named)
        return v.InputError(key, f"the given layout ({keys}) cannot run on {gpus:,} GPUs: "
                                 f"TP x PP x CP = {ranks} does not divide {gpus:,}")
    # the nearest batch the layout's data-parallel groups split evenly
    per_step = gpus // ranks * lay["micro_batch"]
    batch = max(per_step, int(round(B / per_step)) * per_step)
    try:
        predict_step(m, inp.gpu, inp.scale_up, inp.scale_out, gpus=gpus, global_batch=batch,
                     options=options_for(s), memory_kwargs=REVIEW_MEMORY, with_scaling=False,
                     precision=s.precision, **lay)
    except ValueError as e:
        key = LINK_KEY_OF.get(getattr(e, "param", None), getattr(e, "param", None))
        return v.InputError(key if key in named else named[0],
                            f"the given layout ({keys}) cannot run on {gpus:,} GPUs: {e}")
    return None


def _splits_any(inp: Inputs, space: planner.Space, gpus: int) -> bool:
    """Whether any layout of ``space`` runs on ``gpus`` with some batch: a batch of gpus x the
    largest micro-batch splits over every data-parallel group, with micro-batches a multiple
    of every pipeline depth (gpus / dp = t p c)."""
    return len(_batch_units(inp.model, int(gpus), inp.gpu.scale_up_domain, space)[0]) > 0


def review_plan(inp: Inputs, space: planner.Space, gpus: int, B: int) -> planner.Plan:
    """The planner's ranking on ``gpus`` GPUs at a batch of ``B`` sequences, as the review
    ranks (fastest, then simplest within :data:`SIMPLEST_WITHIN`, memory margin)."""
    s = inp.scenario
    return _review_plan(inp.model, inp.gpu, inp.scale_up, inp.scale_out, options_for(s),
                        s.precision, space, int(gpus), int(B))


@functools.lru_cache(maxsize=8)
def _review_plan(m, g, up, out, options, precision, space, gpus, B):
    return planner.plan(m, g, up, out, gpus, B, space, options, precision=precision,
                        simplest_within=SIMPLEST_WITHIN, memory_margin=MEMORY_MARGIN,
                        memory_kwargs=REVIEW_MEMORY)


#: the review's first layout at (inputs of the planner, gpus, batch), as fill.Best or None;
#: the oldest entries go first beyond _BEST_SIZE
_BEST: "OrderedDict[tuple, fill.Best | None]" = OrderedDict()
_BEST_SIZE = 8192


def _bests(key: tuple, pairs) -> list:
    """The review's first layout at each (gpus, batch) pair (:class:`fill.Best`, None where
    no layout splits the batch): :func:`planner.first_layouts` for the pairs not cached yet,
    in one vectorized prediction, each the first layout :func:`review_plan` ranks there."""
    pairs = [(int(g), int(b)) for g, b in pairs]
    todo = list(dict.fromkeys(p for p in pairs if (key, p) not in _BEST))
    if todo:
        m, g, up, out, options, precision, space = key
        rows = planner.first_layouts(m, g, up, out, todo, space, options, precision=precision,
                                     simplest_within=SIMPLEST_WITHIN,
                                     memory_margin=MEMORY_MARGIN, memory_kwargs=REVIEW_MEMORY)
        for p, r in zip(todo, rows):
            _BEST[(key, p)] = None if r is None else fill.Best(
                tokens_per_s=float(r["tokens_per_s"]), mfu=float(r["mfu"]),
                layout=planner.describe_layout(r), fits=bool(r["fits"]))
        while len(_BEST) > _BEST_SIZE:
            _BEST.popitem(last=False)
    return [_BEST[(key, p)] for p in pairs]


#: the largest batch the search for a batch that fills the GPUs tries [tokens]: the largest a
#: scenario may give (Scenario.global_batch_tokens' bound)
FILL_CAP_TOKENS = 1e9


def batch_fill_at(inp: Inputs, space: planner.Space, gpus: int, B: int) -> fill.BatchFill:
    """Whether ``B`` sequences fill ``gpus`` GPUs in the review's layouts, the largest GPU count
    they fill and the smallest batch that fills ``gpus`` (:mod:`llmcost.review.fill`)."""
    s, m, g = inp.scenario, inp.model, inp.gpu
    key = (m, g, inp.scale_up, inp.scale_out, options_for(s), s.precision, space)

    def best(n, b):
        return _bests(key, [(n, b)])[0]

    # never below a batch that splits over every layout's replicas (gpus x micro-batch)
    cap = max(int(FILL_CAP_TOKENS // m.seq_len), gpus * max(space.micro_batch))
    return fill.batch_fill(best, int(gpus), int(B), m.seq_len, g.gpus_per_node, cap,
                           lambda b: near_batch(inp, space, gpus, b),
                           warm=lambda pairs: _bests(key, pairs))


def as_typed(x: float) -> str:
    """A number as a user types it: a whole number in full (8388608), others as %g."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def batch_sequences(inp: Inputs, notes: list) -> int:
    """The resolved global batch in whole sequences (at least one); a given batch that is not a
    whole number of them says so in ``notes``."""
    s, seq = inp.scenario, inp.model.seq_len
    B = max(1, int(round(inp.global_batch_tokens / seq)))
    if s.batch == "custom" and B * seq != inp.global_batch_tokens:
        notes.append(f"global_batch_tokens={as_typed(s.global_batch_tokens)} is "
                     f"{inp.global_batch_tokens / seq:,.4g} sequences of {seq:,} tokens: "
                     f"{B:,} whole sequence{'s' if B > 1 else ''} per step")
    return B


def law_batch(inp: Inputs, space: planner.Space, gpus: int, B: int) -> tuple:
    """The batch law's ``B`` sequences on ``gpus`` GPUs: its fill
    (:func:`batch_fill_at`, at the nearest batch some layout splits), and the batch the review
    runs: that one when it fills the GPUs, else the smallest that fills them (none up to the
    search's cap: the law's where some layout splits it, else gpus x the largest micro-batch,
    which every replica splits)."""
    near = near_batch(inp, space, gpus, B)
    law = batch_fill_at(inp, space, gpus, near if near is not None else B)
    if law.fills:
        return law, near
    return law, law.fill_batch or near or gpus * max(space.micro_batch)


def _law_batch_reason(inp: Inputs, lf: fill.BatchFill, B: int, gpus: int) -> str:
    """Why the review runs ``B`` sequences when the scenario gives no batch: the batch law's
    choice (its source) and the fill rule."""
    law = inp.batch.reason
    if lf.fills or lf.test.batch == B:
        return f"{law}; {lf.what()}" if lf.test.gain is not None else law
    resized = (f"; sized again at that batch: {gpus:,} GPUs" if gpus != lf.test.gpus else "")
    return (f"{B:,} sequences ({lf.tokens(B)} tokens), raised to fill the GPUs: "
            f"{lf.what()}; {lf.largest_text()}; {lf.filling_text()}{resized}. "
            f"The batch law: {law}")


def plan(inp: Inputs, sized: SizeResult | None) -> PlanResult:
    """The fastest layout that fits on the cluster, with the batch split evenly.

    The batch: the scenario's, kept (refused, naming ``global_batch_tokens``, when no layout
    splits it); or the batch law's when it fills the GPUs (:mod:`llmcost.review.fill`), else
    the smallest batch that fills them. A given layout no batch can run is refused, naming
    the key at fault."""
    s, m, g = inp.scenario, inp.model, inp.gpu
    gpus = sized.gpus if sized is not None else s.gpus
    notes = []
    space = review_space(s, m, g.gpus_per_node)
    B = batch_sequences(inp, notes)
    if given_layout(s) and not _splits_any(inp, space, gpus):
        err = given_layout_error(inp, gpus, B)
        if err is None:
            first = next(iter(given_layout(s)))
            err = v.InputError(LINK_KEY_OF[first], f"the given layout "
                               f"({given_layout_text(s)}) leaves the planner no layout on "
                               f"{gpus:,} GPUs")
        raise err
    given_batch = s.batch == "custom"
    law = None
    sized_batch = _sized_batch(sized, gpus)
    if sized_batch is not None:
        # the size's own batch: the days sizing found there are the review's
        B, law = sized_batch, sized.batch_fill
    else:
        near = near_batch(inp, space, gpus, B)
        if given_batch:
            if near is None:
                f = batch_fill_at(inp, space, gpus, B)
                with_layout = f" with the given layout ({given_layout_text(s)})" \
                    if given_layout(s) else ""
                raise v.InputError("global_batch_tokens", (
                    f"global_batch_tokens={as_typed(s.global_batch_tokens)}: {f.what()}"
                    f"{with_layout}; "
                    f"{f.largest_text()}; {f.filling_text()}"))
        else:
            law, near = law_batch(inp, space, gpus, B)
        if near != B and (given_batch or law.fills):
            notes.append(f"global batch adjusted from {B} to {near} sequences so that it "
                         f"splits evenly over {gpus} GPUs")
        B = near
    used = batch_fill_at(inp, space, gpus, B)
    if given_batch:
        reason = "given by the scenario"
        if not used.fills and used.test.at is not None:
            notes.append(f"global_batch_tokens={as_typed(s.global_batch_tokens)} kept: "
                         f"{used.advice()}{used.cost_text()}")
    else:
        reason = _law_batch_reason(inp, law, B, gpus) if law is not None else inp.batch.reason
        if not used.fills and used.test.at is not None:
            notes.append(used.advice())
    P = review_plan(inp, space, gpus, B)
    L = P.layouts
    fitting = planner.distinct(L[L["fits"]]) if len(L) else L
    if fitting.empty:
        given = given_layout(s)
        if given:
            keys = given_layout_text(s)
            r0 = planner.distinct(L.sort_values("memory_gb")).iloc[0] if len(L) else None
            need = f": needs {float(r0['memory_gb']):.1f} GB per GPU of {float(r0['capacity_gb']):.1f} GB" \
                if r0 is not None else ""
            notes.append(f"the given layout ({keys}) does not fit on {gpus:,} x {g.id}{need}; "
                         "shown as given, not replaced")
        else:
            notes.append(f"{m.id} does not fit on {gpus:,} x {g.id} in any layout tried: showing "
                         "the smallest-memory layout; add GPUs or pick a GPU with more memory")
        shown = planner.distinct(L.sort_values("memory_gb")).head(10)
        fits = False
    else:
        shown = fitting.head(10)
        fits = True
        first = shown.iloc[0]
        if planner.memory_tight(first["memory_gb"], first["capacity_gb"], MEMORY_MARGIN):
            notes.append(
                f"the layout uses {float(first['memory_gb']):.1f} of "
                f"{float(first['capacity_gb']):.1f} GB per GPU "
                f"({float(first['memory_gb']) / float(first['capacity_gb']):.0%}), and no layout "
                f"within {SIMPLEST_WITHIN:.0%} of its speed leaves {MEMORY_MARGIN:.0%} free: the "
                f"model counts {memory.FRAGMENTATION:.0%} allocator fragmentation, more (eager "
                "FSDP, no expandable segments) would not fit; check the run's peak memory early")
    layout = Layout.from_row(shown.iloc[0], global_batch=int(B), precision=s.precision)
    return PlanResult(gpus=int(gpus), global_batch=int(B), layouts=shown.reset_index(drop=True),
                      layout=layout, fits=fits, evaluated=int(P.evaluated),
                      feasible=int(P.feasible), notes=tuple(notes), batch_fill=used,
                      batch_reason=reason, batch_source=(
                          "scenario" if given_batch else
                          "fill" if law is not None and not law.fills and law.test.batch != B
                          else "law"))


def _sized_batch(sized: SizeResult | None, gpus: int) -> int | None:
    """The batch sizing ran at ``gpus`` (the size that meets the target, or the fastest when
    none does); None when the review does not plan a size sizing evaluated."""
    if sized is None:
        return None
    sz = sized.sizing
    if sz.gpus and sz.global_batch:
        return int(sz.global_batch)
    if sz.nearest is not None and sz.nearest.fastest_gpus == gpus and \
            sz.nearest.fastest_global_batch:
        return int(sz.nearest.fastest_global_batch)
    return None


def near_batch(inp: Inputs, space: planner.Space, gpus: int, B: int) -> int | None:
    """The batch the review runs for ``B`` sequences on ``gpus``: :func:`splittable_batch` with
    TP inside a node (a batch that only TP across nodes splits moves to one that replicas
    split), else with TP across the GPU's scale-up domain as the planner searches it."""
    near = splittable_batch(inp.model, gpus, B, inp.gpu.gpus_per_node, space)
    if near is None and inp.gpu.scale_up_domain > inp.gpu.gpus_per_node:
        near = splittable_batch(inp.model, gpus, B, inp.gpu.scale_up_domain, space)
    return near


def splittable_batch(m, gpus, B, node, space=REVIEW_SPACE):
    """B if some layout splits it over ``gpus``; else, within 5% (then 12.5%, 25%), the batch
    with the most valid layouts (the nearest on ties); None if there is none."""
    return _splittable_batch(m, int(gpus), int(B), int(node), space)


@functools.lru_cache(maxsize=1024)
def _splittable_batch(m, gpus, B, node, space):
    units, weights = _batch_units(m, gpus, node, space)
    if len(units) == 0:
        return None

    def count(b):
        """Layouts that split each batch of ``b`` (an array) [-]."""
        return ((np.asarray(b)[:, None] % units[None, :]) == 0).astype(np.int64) @ weights

    if count([B])[0]:
        return B
    for band in (0.05, 0.125, 0.25):
        lo, hi = max(1, int(B * (1 - band))), int(B * (1 + band)) + 1
        step = max(1, (hi - lo) // 400)     # a bounded search however large the batch
        b = np.arange(lo, hi, step)
        n = count(b)
        if n.max() > 0:
            # the most layouts, then the nearest to B, then the larger
            best = np.lexsort((b, -np.abs(b - B), n))[-1]
            return int(b[best])
    return None


@functools.lru_cache(maxsize=256)
def _batch_units(m, gpus, node, space):
    """The batches every layout of ``space`` on ``gpus`` needs a multiple of, and how many
    layouts need each: a layout splits a batch B when b dp divides it and, interleaved, its
    micro-batches are a multiple of p (planner.layout_valid), i.e. when B is a multiple of
    b dp (p when v > 1). Every layout splits gpus x the largest micro-batch (m = t p c b'/b),
    so enumerating at that batch lists them all once."""
    L = planner.enumerate_layouts(m, gpus, gpus * max(space.micro_batch), node, space)
    u = L["micro_batch"] * L["dp"] * np.where(L["interleave"] > 1, L["pp"], 1)
    units, weights = np.unique(np.asarray(u, dtype=np.int64), return_counts=True)
    return units, weights.astype(np.int64)


# ------------------------------------------------------------------ predict

def predict(inp: Inputs, pl: PlanResult) -> PredictResult | None:
    if pl.layout is None:
        return None
    L = pl.layout
    p = predict_step(inp.model, inp.gpu, inp.scale_up, inp.scale_out,
                     options=options_for(inp.scenario),
                     memory_kwargs={**REVIEW_MEMORY, **L.memory_options()}, **L.step_kwargs())
    mem = {k: float(x) for k, x in p.memory.to_gb().items()}
    step = float(p.step_time_s)
    mfu_p, hfu_p = precision_utilization(float(p.mfu), float(p.hfu), inp.gpu,
                                         inp.scenario.precision)
    bounds = inp.catalog.fabric_bounds(inp.scale_out)
    band = None
    if bounds is not None:
        # both ends in one vectorized call: the banded terms as arrays of two
        lo, hi = bounds
        both = replace(lo, **{t: np.array([getattr(lo, t), getattr(hi, t)], dtype=float)
                              for t in catalog_mod.BANDED_TERMS})
        ends = predict_step(inp.model, inp.gpu, inp.scale_up, both,
                            options=options_for(inp.scenario), with_scaling=False,
                            memory_kwargs={**REVIEW_MEMORY, **L.memory_options()},
                            **L.step_kwargs()).step_time_s
        band = (float(ends[0]), float(ends[1]))
    return PredictResult(fabric_step_time_s_band=band, step=p, step_time_s=step, tokens_per_s=float(p.tokens_per_s),
                         mfu=float(p.mfu), hfu=float(p.hfu),
                         model_tflops_per_gpu=float(p.model_tflops_per_gpu), memory_gb=mem,
                         memory_gb_per_gpu=mem["total_gb"],
                         capacity_gb=inp.gpu.memory_bytes / 1e9, fits=bool(p.fits),
                         bubble_share=float(p.pp_bubble_s) / step, mfu_precision=mfu_p,
                         hfu_precision=hfu_p, mfu_limit=mfu_limit(inp, pl, p))


#: the step's communication terms, and the optimizer's memory-bound step: what the "bandwidth"
#: limit of MFU counts (llmcost.training.step.STEP_TERMS)
BANDWIDTH_TERMS = ("tp_comm_s", "cp_comm_s", "ep_comm_s", "pp_p2p_s", "dp_comm_s",
                   "optimizer_s")


def mfu_shares(p, peak_ratio: float = 1.0) -> dict:
    r"""The step split by what it loses against the dense peak of the precision its GEMMs run
    at [-], with that MFU, :math:`U = \mathrm{MFU} \times` ``peak_ratio`` (BF16 peak over the
    precision's; :func:`g_peak_ratio`), summing to 1:

    .. math:: 1 = U + \underbrace{c\,\tfrac{M}{H} - U}_{compute}
              + \underbrace{c\,(1 - \tfrac{M}{H})}_{memory} + \underbrace{b}_{bubble}
              + \underbrace{\textstyle\sum_k x_k}_{bandwidth}

    with every term a share of the step: :math:`c` the compute (matmuls at their efficiency and
    memory-bound kernels), of which recomputation is the share :math:`1 - M/H` (MFU over HFU:
    the FLOPs done again to fit in memory), :math:`b` the pipeline bubble and :math:`x_k` the
    exposed communication and the optimizer step (:data:`BANDWIDTH_TERMS`)."""
    step = float(p.step_time_s)
    c = float(p.compute_s) / step
    mh = float(p.mfu) / float(p.hfu) if float(p.hfu) > 0 else 1.0
    return {"compute": max(0.0, c * mh - float(p.mfu) * peak_ratio), "memory": max(0.0, c * (1 - mh)),
            "bubble": float(p.pp_bubble_s) / step,
            "bandwidth": sum(float(getattr(p, k)) for k in BANDWIDTH_TERMS) / step}


def mfu_limit(inp: Inputs, pl: PlanResult, p) -> MfuLimit:
    """What limits the run's MFU, in one line: the batch when it does not fill the GPUs
    (:mod:`llmcost.review.fill`), memory when nothing fits, else the largest of
    :func:`mfu_shares`."""
    ratio = g_peak_ratio(inp.gpu, inp.scenario.precision)
    shares = mfu_shares(p, ratio)
    L, f = pl.layout, pl.batch_fill
    if f is not None and not f.fills and f.test.at is not None:
        return MfuLimit("batch", f"{f.what()}; {f.filling_text()}", shares)
    if not pl.fits:
        return MfuLimit("memory", f"{inp.model.id} does not fit in {inp.gpu.id} memory on "
                                  f"{pl.gpus:,} GPUs in any layout tried", shares)
    limit = max(shares, key=shares.get)
    x = shares[limit]
    step = float(p.step_time_s)
    if limit == "bubble":
        why = (f"the pipeline bubble takes {x:.1%} of the step (PP{L.pp}, v{L.interleave}, "
               f"{L.num_microbatches} micro-batches per replica: (p-1)/(v m) = "
               f"{(L.pp - 1) / (L.interleave * L.num_microbatches):.1%} of the ideal step)")
    elif limit == "bandwidth":
        k = max(BANDWIDTH_TERMS, key=lambda k: float(getattr(p, k)))
        why = (f"communication and the optimizer step take {x:.1%} of the step, most of it "
               f"{STEP_TERMS[k].label} ({float(getattr(p, k)) / step:.1%})")
    elif limit == "memory":
        why = (f"recomputation to fit in memory takes {x:.1%} of the step "
               f"(recompute={L.recompute}"
               + (f", modules {','.join(L.recompute_modules)}" if L.recompute_modules else "")
               + ")")
    else:
        why = (f"the compute runs at {float(p.hfu) * ratio * step / float(p.compute_s):.1%} "
               f"of the dense {inp.scenario.precision.upper()} peak (matmul efficiency and "
               f"memory-bound kernels): {x:.1%} of the step beyond the model's FLOPs at peak")
    return MfuLimit(limit, why, shares)


class PhysicalBoundError(ValueError):
    """A prediction beyond what the hardware can do: a bug in the step model, never an answer
    (a ValueError, so the command line prints it as its one error line)."""


def precision_utilization(mfu: float, hfu: float, gpu, precision: str) -> tuple:
    r"""MFU and HFU against the dense peak of the precision the GEMMs run at.

    .. math:: U_p = U_{BF16} \, F_{BF16} / F_{p}

    where :math:`U_{BF16}` is stated against the dense BF16 peak :math:`F_{BF16}` (as published
    runs state MFU) and :math:`F_p` is the dense peak of precision ``p`` (FP8 and MXFP8: the FP8
    dense rate). No FLOP of the run executes faster than :math:`F_p`, so :math:`U_p \le 1`.

    Parameters
    ----------
    mfu, hfu : float
        Model and hardware FLOPs utilization against the dense BF16 peak [-].
    gpu : GPUSpec
        The accelerator (:meth:`GPUSpec.peak_tflops`).
    precision : {"bf16", "fp8", "mxfp8"}

    Returns
    -------
    (mfu_precision, hfu_precision) : tuple of float [-]

    Raises
    ------
    PhysicalBoundError
        When either is above 1: the step model predicted more FLOP/s than the peak.

    References
    ----------
    .. [1] Chowdhery et al., "PaLM", arXiv:2204.02311, 2022, Appendix B (MFU against the peak).
    .. [2] NVIDIA Blackwell / Hopper datasheets: dense FP8 = 2 x dense BF16 (data/gpus.csv).
    """
    ratio = gpu.peak_tflops("bf16") / gpu.peak_tflops(precision)
    out = (mfu * ratio, hfu * ratio)
    for name, x in zip(("MFU", "HFU"), out):
        if not x <= 1.0:
            raise PhysicalBoundError(
                f"the step model predicts {name} {x:.1%} of {gpu.id}'s dense {precision.upper()} "
                f"peak ({gpu.peak_tflops(precision):,.0f} TFLOP/s), above what the GPU can do: a "
                "bug in the model, not an answer; please report this scenario")
    return out


# ------------------------------------------------------------------ reliability

def reliability(inp: Inputs, pl: PlanResult) -> ReliabilityResult:
    """Failures at this size, checkpoint cost and interval, goodput (Daly's model)."""
    return _reliability_at(inp, pl.gpus)


def _reliability_at(inp: Inputs, gpus: int) -> ReliabilityResult:
    s = inp.scenario
    t = interruption_terms(inp, gpus)
    per_day, M, size_b, nodes, stall, interval, upload, R, shared = (float(x) for x in t)
    mtbf = M / 3600
    nodes = int(nodes)
    daly = float(rel.daly_interval_s(stall, M))
    if s.checkpoint_mode == "sync":
        gb = rel.goodput_breakdown(interval, stall, M, R)
        good, shares = float(gb.goodput), (float(gb.checkpoint_share),
                                           float(gb.rework_share), float(gb.restart_share))
    else:
        good = float(mode_goodput(inp, interval, stall, M, upload, restart_s=R))
        # apportioned: the stall per period, then the failure stretch split between rework
        # (from the last durable copy) and restarts
        tau_e = max(interval, upload)
        ckpt = stall / (tau_e + stall)
        w = float(storage.rework_s("async", interval, stall, upload))
        rest = max(0.0, 1.0 - good - ckpt)
        shares = (ckpt, rest * w / (w + R), rest * R / (w + R))
    lost_h = float(storage.rework_s(s.checkpoint_mode, interval, stall, upload)) / 3600
    terms = restart_terms_at(inp, gpus)
    return ReliabilityResult(
        failures_per_1000_gpu_days=inp.failures_per_1000_gpu_days,
        failure_source=inp.failure_source, failures_per_day=per_day, job_mtbf_h=mtbf,
        checkpoint_bytes=size_b, checkpoint_stall_s=stall, interval_s=interval,
        young_interval_s=float(rel.young_interval_s(stall, M)), daly_interval_s=daly,
        goodput=good, checkpoint_share=shares[0], rework_share=shares[1],
        restart_share=shares[2], nodes=nodes, lost_hours_per_interruption=lost_h,
        restart_h=R / 3600,
        bandwidth_for_10s_gb_per_s=float(rel.storage_bandwidth_for_stall_gb_per_s(size_b, 10.0)),
        upload_s=upload, restart_terms_s=terms.as_dict() if terms is not None else {},
        storage_gb_per_s=shared)


# ------------------------------------------------------------------ economics

def spot_summary(inp: Inputs, r: ReliabilityResult) -> SpotSummary:
    """Spot under the same interruption model as failures: each preemption loses the work
    since the last checkpoint and a restart, unless the scenario sets its own hours.

    The spot run's checkpoint interval is Daly's optimum for failures plus preemptions; the
    extra checkpoint stalls that shorter interval costs (delta / tau) are second order and
    not counted."""
    s = inp.scenario
    custom = s.spot_lost_work == "custom"
    # a spot run is interrupted by failures and preemptions: it checkpoints at the optimum
    # for both (Daly at the combined rate), unless the scenario fixes the interval
    rate = r.failures_per_day + s.preemptions_per_day
    if s.checkpoint_interval_s > 0 or s.preemptions_per_day == 0:
        tau = r.interval_s
    else:
        tau = float(rel.daly_interval_s(r.checkpoint_stall_s, 24 * 3600 / rate))
    w = s.lost_hours_per_preemption if custom else float(
        rel.lost_hours_per_interruption(tau, r.checkpoint_stall_s))
    d = inp.spot_discount
    common = dict(restart_h=r.restart_h, capacity_wait_h=s.capacity_wait_h,
                  failures_per_day=r.failures_per_day,
                  failure_lost_hours=r.lost_hours_per_interruption)
    asked = dict(preemptions_per_day=s.preemptions_per_day, lost_hours_per_preemption=w,
                 lost_hours_source=s.spot_lost_work, checkpoint_interval_s=tau)
    not_run = dict(net_savings=None, duration_stretch=None, breakeven_lost_hours=None,
                   implied_lost_hours=None)
    if d is None:
        return SpotSummary(offered=False, discount=None, **asked, **not_run)
    try:
        res = spot.spot_net_savings(d, s.preemptions_per_day, w, **common)
    except v.InputError:
        # preemptions x hours lost fill the day: the spot run never finishes
        return SpotSummary(offered=False, discount=d, **asked, **not_run)
    be = implied = None
    if s.preemptions_per_day > 0:
        be = float(spot.breakeven_lost_hours(d, s.preemptions_per_day, **common))
        # the goal-seek answers the saving the user observed: the default figure (the cluster
        # guide's 22%) is an example, so when these terms cannot give it, it is left out, not
        # refused
        entered = s.observed_net_savings != Scenario.__dataclass_fields__["observed_net_savings"].default
        if s.observed_net_savings <= d:
            try:
                implied = float(spot.implied_lost_hours(d, s.preemptions_per_day,
                                                        s.observed_net_savings, **common))
            except v.InputError:
                if entered:
                    raise
                implied = None
    return SpotSummary(offered=True, discount=d, **asked, net_savings=float(res.net_savings),
                       duration_stretch=float(res.duration_stretch), breakeven_lost_hours=be,
                       implied_lost_hours=implied, result=res)


def economics(inp: Inputs, pl: PlanResult, pr: PredictResult | None,
              r: ReliabilityResult, fc: ForecastResult) -> EconomicsResult:
    """Days and dollars of the run as forecast (``fc``), and rent vs buy for this cluster."""
    s, g = inp.scenario, inp.gpu
    stall_share, useful = fc.data_stall_share, fc.useful_share
    sp = spot_summary(inp, r)
    billed = int(math.ceil(pl.gpus / inp.billing_gpus) * inp.billing_gpus)
    costs, amort, commit, run_days = {}, {}, {}, {}
    days = fc.days
    hours = days * 24 if days is not None else None
    prices = inp.prices
    if prices is not None and sp.offered and prices.spot is not None:
        # billed spot hours per useful hour, from the spot model (one stored spot figure)
        overhead = (1 - sp.net_savings) / (1 - sp.discount) if prices.on_demand else 1.0
        prices = replace(prices, spot_overhead=max(1.0, overhead))
    elif prices is not None and prices.spot is not None:
        prices = replace(prices, spot=None)        # the spot run never finishes
    cloud_prices = prices if prices is not None else tco.CloudPrices()
    op = inp.onprem if inp.onprem is not None else tco.OnPrem(capex_usd_per_gpu=None)
    if hours is not None and (prices is not None or inp.onprem is not None):
        costs = tco.run_costs_usd(hours, billed, cloud_prices, op, s.discount_rate, s.resale)
        amort = tco.run_costs_amortized_usd(hours, billed, cloud_prices, op, s.utilization,
                                            s.discount_rate, s.resale)
        costs = {k: float(x) for k, x in costs.items()}
        amort = {k: float(x) for k, x in amort.items()}
        for k in costs:
            run_days[k] = days * (sp.duration_stretch if k == "spot" else 1.0)
        for k, years in (("reserved_1y", 1), ("reserved_3y", 3)):
            if k in costs:
                terms = math.ceil(hours / (years * HOURS_PER_YEAR))
                commit[k] = (f"{terms} x {years}-year term{'s' if terms > 1 else ''} on "
                             f"{billed:,} GPUs ({terms * years * HOURS_PER_YEAR:,.0f} h billed; "
                             f"the run uses {hours:,.0f} h)")
        if "on_prem" in costs:
            commit["on_prem"] = (f"{billed:,} GPUs bought"
                                 + (" and resold at market value after the run"
                                    if s.resale == "market" else "; not resold (cash view)"))
    be, per_h = None, {}
    if prices is not None and prices.on_demand and inp.onprem is not None:
        opex = float(tco.onprem_opex_usd_per_gpu_month(inp.onprem, s.utilization))
        b = float(tco.breakeven_months(prices.on_demand, inp.onprem.capex_usd, s.utilization, opex,
                                       s.discount_rate))
        be = b if math.isfinite(b) else None
    if prices is not None or inp.onprem is not None:
        per_h = {k: float(x) for k, x in tco.cost_per_useful_gpu_hour(
            s.horizon_months, s.utilization, cloud_prices, op, discount_rate=s.discount_rate,
            resale=s.resale).items()}
    band = None
    costs_range = {}
    if pr is not None and days is not None:
        # the step model's own error on published step times (shown as the prediction band);
        # about the share of the peak the GEMMs run at (FP8: the FP8 peak)
        band = throughput_band(g.generation, s.precision, pr.mfu * g_peak_ratio(g, s.precision),
                               inp.catalog.step_model_errors(), moe=inp.model.is_moe,
                               note=calibration_note(g),
                               stack_note=stacks.calibration_note(stack_of(s)),
                               stack_error=stacks.stack(stack_of(s)).held_out_error)
        if costs and fc.days_band is not None:
            lo, hi = (tco.run_costs_usd(d * 24, billed, cloud_prices, op, s.discount_rate,
                                        s.resale) for d in fc.days_band)
            costs_range = {k: (float(lo[k]), float(hi[k])) for k in costs}
    wf = eff = None
    if pr is not None:
        wf = waterfall_from_step(pr.step, g.bf16_dense_tflops, data_stall_share=stall_share,
                                 checkpoint_share=r.checkpoint_share,
                                 failure_share=r.rework_share + r.restart_share,
                                 flops_per_token=inp.model.flops_per_token("none"),
                                 usd_per_gpu_hour=(inp.prices.on_demand
                                                   if inp.prices and inp.prices.on_demand else None))
        eff = float(wf["share_of_peak"].iloc[-1])
    m = inp.model
    nap = float(napkin.napkin_gpu_hours(m.active_params, s.tokens, g.peak_tflops("bf16") * 1e12))
    factors = {}
    if pr is not None and pr.mfu > 0 and useful > 0:
        fpt = pr.model_tflops_per_gpu * 1e12 / (pr.tokens_per_s / pl.gpus)
        factors = {k: float(x) for k, x in
                   napkin.napkin_factors(fpt, m.active_params, pr.mfu, useful,
                                         realized_ratio=fc.realized.value).items()}
    return EconomicsResult(useful_share=useful, days=days, run_hours=hours, billed_gpus=billed,
                           costs_usd=costs, costs_amortized_usd=amort, commitments=commit,
                           run_days=run_days, breakeven_months=be, usd_per_used_gpu_hour=per_h,
                           spot=sp, waterfall=wf, effective_utilization=eff, prices=prices,
                           onprem=op, band=band,
                           costs_usd_range=costs_range, data_stall_share=stall_share,
                           gpu_hours=fc.gpu_hours,
                           napkin_gpu_hours=nap, napkin_factors=factors)



# ------------------------------------------------------------------ checks

#: a run that trains less than half its wall clock is a scenario no one runs: flagged
GOODPUT_FLOOR = 0.5
#: dollars for one run above which a result is flagged (published frontier training runs
#: are estimated in the hundreds of millions: Epoch AI, "The rising costs of training
#: frontier AI models", 2024); ten billion is beyond any of them by a wide margin
COST_BOUND_USD = 1e10

def flags_and_warnings(inp, sized, pl, pr, r, e):
    """Warnings for the notes, and the headline figures to flag visibly."""
    s = inp.scenario
    warnings = list(inp.warnings)
    if e is not None and "spot" in e.costs_usd and not inp.spot_covers(pl.gpus):
        cap = inp.spot_capacity_gpus
        warnings.append(
            f"spot: capacity not documented at this size ({pl.gpus:,} GPUs"
            + (f"; {inp.price_offers.get('spot', inp.price_offer)} documents {cap:,}" if cap
               else f"; {inp.price_offers.get('spot') or 'the entered price'} documents none")
            + "): costed, never named the cheapest way to pay")
    if sized is not None:
        warnings += [n for n in sized.notes]
    warnings += list(pl.notes)
    flags = {}
    if pl.layout is None:
        given = given_layout(inp.scenario)
        flags["days"] = Flag("days", "infeasible", "the given layout cannot run on these GPUs "
                             "(see the warnings)" if given else
                             "no layout splits the batch over these GPUs")
    elif not pl.fits:
        flags["fits"] = Flag("fits", "infeasible", f"{inp.model.id} does not fit in "
                             f"{inp.gpu.id} memory on {pl.gpus:,} GPUs in any layout tried")
        flags["days"] = Flag("days", "infeasible", "the layout does not fit in memory: these "
                             "days assume memory the GPUs do not have")
        flags["memory_gb_per_gpu"] = flags["fits"]
    if pr is not None and pr.fabric_step_time_s_band is not None:
        warnings.append(fabric_assumption_note(inp.scale_out, pr, e))
    if pr is not None:
        verdict = ut.assess_utilization(pr.mfu, precision=s.precision)
        for f in verdict.findings:
            warnings.append(f.message)
            flags["mfu"] = Flag("mfu", "implausible", f.message)
        # the bubble's fixes where the bubble is what limits MFU (a bubble the batch leaves
        # is the batch's: its note says which batch fills the GPUs)
        if pl.layout is not None and pl.layout.pp > 1 and pr.bubble_share > 0.10 and \
                pr.mfu_limit is not None and pr.mfu_limit.limit == "bubble":
            try:
                adv = pipeline_batch.batch_advice(inp.model, inp.gpu, pl.layout.pp, pl.layout.interleave,
                                          pl.layout.num_microbatches, pl.layout.micro_batch,
                                          pl.layout.dp, inp.model.seq_len)
                if adv.too_small:
                    # the planner already searched fewer stages and deeper interleaving and
                    # kept this layout as the fastest that fits: only the batch is the
                    # reviewer's to change
                    larger = [p for p in adv.proposals if p.startswith("a larger batch")]
                    warnings.append(f"{adv.message}; the planner found no faster layout with "
                                    "fewer stages or deeper interleaving that fits"
                                    + (f"; {larger[0]}" if larger else ""))
            except ValueError:
                warnings.append(f"pipeline bubble {pr.bubble_share:.0%} of the step: too few "
                                "micro-batches per replica for PP "
                                f"{pl.layout.pp}; a larger global batch would shrink it")
    if pr is not None and pl.layout is not None and pl.layout.ep > 1:
        note = a2a_note(float(pr.step.ep_comm_s), pr.step_time_s, a2a_overlap(s))
        if note:
            warnings.append(note)
    if e is not None and e.band is not None and not e.band.calibrated:
        _put(flags, Flag("days", "uncalibrated", e.band.reason))
        warnings.append(f"step model: {e.band.reason}; days and dollars carry that band")
    if e is not None and e.days is not None:
        if e.days > 3650:
            _put(flags, Flag("days", "implausible", f"{e.days:,.0f} days ({e.days / 365:,.0f} "
                             "years): no one plans a run this long; add GPUs or cut tokens"))
        # against the peak the GEMMs run at (FP8: twice the BF16 peak that MFU is stated on)
        gemm_share = g_peak_ratio(inp.gpu, s.precision)
        if e.effective_utilization is not None and e.effective_utilization * gemm_share > 0.6:
            flags["effective_utilization"] = Flag("effective_utilization", "implausible",
                                                  "above any published large run")
    if e is not None and e.gpu_hours is not None and e.napkin_gpu_hours:
        warnings.append(napkin_note(e))
        ratio = e.gpu_hours / e.napkin_gpu_hours
        if not 1 / napkin.NAPKIN_FLAG_RATIO <= ratio <= napkin.NAPKIN_FLAG_RATIO:
            _put(flags, Flag("days", "implausible",
                             f"{ratio:.2g}x the napkin (6 N D at 40% of the dense BF16 peak): "
                             + napkin_note(e, lead=False)))
    if inp.batch is not None:
        warnings.append(batch_note(inp, pl))
    if pr is not None and pr.mfu_limit is not None:
        warnings.append(f"what limits MFU ({pr.mfu:.1%}): {pr.mfu_limit.limit}: "
                        f"{pr.mfu_limit.reason}")
    if r is not None and r.goodput < GOODPUT_FLOOR:
        _put(flags, Flag("goodput", "implausible",
                         f"{r.goodput * 100:.2g}%: failures, restarts and checkpoints take most of "
                         "the run; no one runs a job like this (checkpoint faster, restart "
                         "faster or check the failure rate)"))
    if e is not None and e.costs_usd:
        top = max(e.costs_usd.values())
        if top > COST_BOUND_USD:
            _put(flags, Flag("cost_on_demand_usd", "implausible",
                             f"${top / 1e9:,.0f} B for one run: beyond any published training "
                             "budget; check the tokens, the cluster and the prices"))
    if sized is not None and not sized.meets_target:
        flags["meets_target"] = Flag("meets_target", "infeasible",
                                     f"no size meets {s.target_days:g} days")
        _put(flags, Flag("days", "infeasible", f"misses the target of {s.target_days:g} days"))
    if e is not None and s.preemptions_per_day > 0 and not e.spot.offered and \
            inp.spot_discount is not None:
        warnings.append("spot: preemptions x hours lost per preemption fill the day, the spot "
                        "run never finishes; spot is not costed")
    return warnings, flags


#: the napkin's factors in words, largest departure first
NAPKIN_FACTOR_LABELS = {"attention_flops": "attention FLOPs beyond 6N",
                        "layout_mfu": "the layout's MFU against 40%",
                        "goodput_and_stalls": "failures, checkpoints and data stalls",
                        "realized_ratio": "what comparable published runs realized over "
                                          "their floor"}


_LEADING_TOKENS = re.compile(r"^[0-9.,]+[kKMBGT]? tokens: ")


def batch_note(inp: Inputs, pl: PlanResult) -> str:
    """The global batch note: the batch the figures use, as the headline states it (one
    computation), then why the batch rule chose it."""
    from .format import format_headline
    reason = pl.batch_reason or inp.batch.reason
    B = pl.global_batch
    lead = (f"global batch {format_headline('global_batch_tokens', B * inp.model.seq_len)} "
            f"({B:,} sequences of {inp.model.seq_len:,})")
    return f"{lead}: {_LEADING_TOKENS.sub('', reason)}"


#: how the notes name a fabric's assumed terms
_TERM_WORDS = {"latency_us": ("latency", "{:g} us"), "efficiency": ("efficiency", "{:g}"),
               "congestion_per_doubling": ("congestion", "{:g} per doubling of nodes"),
               "oversubscription": ("oversubscription", "{:g}:1")}


def fabric_assumption_note(fab, pr: PredictResult, e: EconomicsResult | None) -> str:
    """The note naming the scale-out fabric's assumed terms and the band they put on the step
    time and on the forecast's days (the same figures as ``fabric_assumptions`` in the JSON)."""
    terms = [f"{_TERM_WORDS[t][0]} {_TERM_WORDS[t][1].format(getattr(fab, t))}"
             for t in fab.assumed if t in _TERM_WORDS]
    lo, hi = pr.fabric_step_time_s_band
    text = (f"fabric {fab.id}: {', '.join(terms)} assumed, not measured (data/fabrics.csv); "
            f"with those terms at the best and worst values measured on other fabrics the "
            f"step takes {lo:.3g}-{hi:.3g} s (now {pr.step_time_s:.3g} s)")
    if e is not None and e.days is not None:
        d_lo, d_hi = pr.fabric_days_band(e.days)
        text += f", the forecast {d_lo:,.1f}-{d_hi:,.1f} days"
    return text


def napkin_note(e: EconomicsResult, lead: bool = True) -> str:
    """The review's GPU-hours beside the napkin's, and the factors between them."""
    parts = sorted(e.napkin_factors.items(), key=lambda kv: -abs(np.log(kv[1])))
    terms = ", ".join(f"{NAPKIN_FACTOR_LABELS[k]} x{x:.2f}" for k, x in parts)
    head = (f"GPU-hours {e.gpu_hours / 1e6:,.3g}M against the napkin's "
            f"{e.napkin_gpu_hours / 1e6:,.3g}M (6 N D at 40% of the dense BF16 peak): "
            if lead else "")
    return head + terms


#: an exposed expert all-to-all above this share of the step gets a note [-]
A2A_NOTE_SHARE = 0.10


def a2a_note(ep_comm_s: float, step_time_s: float, overlap: float) -> str | None:
    """A note when the experts' all-to-all left in the step takes more than
    :data:`A2A_NOTE_SHARE` of it, saying what published MoE runs hide.

    Parameters
    ----------
    ep_comm_s : float
        Exposed all-to-all per step, after the stated overlap [s].
    step_time_s : float
        Step time [s].
    overlap : float
        Share of the all-to-all the scenario states hidden [-].

    Returns
    -------
    str or None
        The note; None when the exposed all-to-all is at most 10% of the step.

    References
    ----------
    .. [1] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024, §3.2.1.
    """
    share = ep_comm_s / step_time_s if step_time_s > 0 else 0.0
    if share <= A2A_NOTE_SHARE:
        return None
    hidden = f"{overlap:.0%} of it hidden" if overlap > 0 else "none of it hidden"
    return (f"MoE all-to-all: {ep_comm_s:,.2f} s of the {step_time_s:,.2f} s step "
            f"({share:.0%}), {hidden}; DeepSeek-V3's DualPipe leaves \"near-zero all-to-all "
            "communication overhead\" (arXiv:2412.19437, §3.2.1) and Megatron-LM's "
            "expert-parallel overlap hides part of it: if your stack overlaps it, pick it "
            "under 'MoE all-to-all overlap' (moe_overlap=1f1b or dualpipe)")


#: a headline keeps its most severe flag
SEVERITY = {"uncalibrated": 0, "implausible": 1, "infeasible": 2}


def _put(flags: dict, flag) -> None:
    old = flags.get(flag.key)
    if old is None or SEVERITY[flag.level] > SEVERITY[old.level]:
        flags[flag.key] = flag


def g_peak_ratio(gpu, precision) -> float:
    """BF16 dense peak over the peak the run's GEMMs run at [-] (1 for BF16, 1/2 for FP8)."""
    return gpu.bf16_dense_tflops / float(peak_tflops_by_part(gpu, precision)[0])
