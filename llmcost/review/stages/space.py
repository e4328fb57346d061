"""The planner's space inside the review and the step model's options: what every stage
that plans or predicts a layout searches, and the layout a scenario gives."""

from __future__ import annotations

from dataclasses import replace

from ... import _validate as v
from ...planning import planner
from ...scenario import Scenario
from ...training import stacks
from ...training.layout import LINK_KEYS
from ...training.memory import MemoryOptions
from ...training.moe import A2A_OVERLAP
from ...training.step import DEFAULT_STACK, Options

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
REVIEW_MEMORY = MemoryOptions(moe_probs_at="activation")


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
