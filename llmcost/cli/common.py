"""What several subcommands share: the model flags and the model they give, the hardware,
the step options, the memory recipe, and the refusal of MoE flags for a dense model."""

from __future__ import annotations

import argparse

from .. import _validate as v
from .. import catalog
from ..scenario import FIELDS as SCENARIO_FIELDS
from ..scenario import MOE_LOAD_IMBALANCE_DEFAULT
from ..training import hf_config, stacks
from ..training import memory as mem
from ..training import step as step_mod
from ..training.arch import ModelSpec
from ..training.hardware import Hardware
from ..training.moe import A2A_OVERLAP
from ..training.precision import PRECISIONS
from ..training.recompute import RECOMPUTE_MODULES


def _add_model_args(p: argparse.ArgumentParser, required_seq=False) -> None:
    g = p.add_argument_group("model (a catalog id, or an architecture)")
    g.add_argument("--model", help="catalog id, e.g. llama3-70b (see `llmcost list models`)")
    g.add_argument("--model-config", metavar="FILE",
                   help="a Hugging Face config.json (read as JSON, never run)")
    g.add_argument("--layers", type=int)
    g.add_argument("--hidden", type=int)
    g.add_argument("--heads", type=int)
    g.add_argument("--kv-heads", type=int, help="key/value heads (GQA); default: heads")
    g.add_argument("--ffn-hidden", type=int, help="FFN inner size; default 4 x hidden")
    g.add_argument("--gated-ffn", action="store_true", help="SwiGLU-style FFN (3 matrices)")
    g.add_argument("--vocab", type=int)
    g.add_argument("--seq-len", type=int, help="sequence length (overrides the model's)")


def _model_from_args(a) -> ModelSpec:
    arch = dict(layers=a.layers, hidden=a.hidden, heads=a.heads, vocab=a.vocab)
    if getattr(a, "model_config", None):
        if a.model:
            raise v.InputError("model_config", "give --model-config or --model, not both")
        # the architecture flags beside a config replace its fields (a what-if variant), each
        # with a note, or are refused naming the field they cannot stand for
        sizes = {**arch, "kv_heads": a.kv_heads, "ffn_hidden": a.ffn_hidden,
                 "gated_ffn": True if a.gated_ffn else None}
        m, notes = hf_config.model_from_config(hf_config.read_config_file(a.model_config),
                                               seq_len=a.seq_len, overrides=sizes)
        a.model_notes = notes
        return m
    if a.model:
        # the shape flags beside an id would be ignored: refused like the others
        given = [k for k, x in {**arch, "kv_heads": a.kv_heads,
                                "ffn_hidden": a.ffn_hidden}.items() if x is not None]
        given += ["gated_ffn"] if a.gated_ffn else []
        if given:
            raise v.InputError(given[0], f"give --model or an architecture, not both ({_flag(given[0])})")
        m = catalog.model(a.model)
        return m if a.seq_len is None else m.with_(seq_len=a.seq_len)
    missing = [k for k, x in {**arch, "seq_len": a.seq_len}.items() if x is None]
    if missing:
        raise v.InputError(missing[0], f"a model is required: --model, --model-config, or "
                                       f"--{missing[0].replace('_', '-')} with the rest of "
                                       "--layers --hidden --heads --vocab --seq-len")
    return ModelSpec(**arch, seq_len=a.seq_len, kv_heads=a.kv_heads, ffn_hidden=a.ffn_hidden,
                     gated_ffn=a.gated_ffn)


def _has_model(a) -> bool:
    return bool(a.model) or bool(getattr(a, "model_config", None)) or \
        any(getattr(a, k) is not None for k in ("layers", "hidden", "heads"))


def _with_model_notes(a, result: dict) -> dict:
    """The result with the notes of reading --model-config (its assumptions, the seq_len
    chosen, the flags that replaced its fields) first in its ``notes``."""
    notes = getattr(a, "model_notes", None)
    if notes and isinstance(result, dict):
        kept = result.get("notes")
        result["notes"] = list(notes) + (list(kept) if isinstance(kept, list) else [])
    return result


def _hardware(a) -> Hardware:
    """The ``--gpu`` with its scale-up link and the ``--fabric`` (default: the GPU's usual)."""
    cat = catalog.default()
    gpu = cat.gpu(a.gpu)
    up = cat.fabric(gpu.scale_up)
    out = cat.fabric(gpu.scale_out_id(a.fabric or "auto"))
    if out.kind != "scale_out":
        raise v.InputError("fabric", f"fabric {out.id!r} is a scale-up link; pick one of "
                                     + ", ".join(cat.fabrics().query("kind == 'scale_out'")["id"]))
    return Hardware(gpu, up, out)


def _options(a) -> step_mod.Options:
    return step_mod.Options(
        stack=getattr(a, "stack", "megatron"),
        flash_attention=not a.no_flash_attention,
        dp_overlap=float(v.in_range("dp_overlap", a.dp_overlap, 0, 1)),
        tp_comm_overlap=a.tp_comm_overlap,
        moe_load_imbalance=float(v.in_range("moe_load_imbalance", getattr(
            a, "moe_load_imbalance", MOE_LOAD_IMBALANCE_DEFAULT), 1, 16)),
        moe_a2a_overlap=_a2a_overlap(a))


def _a2a_overlap(a) -> float:
    """The all-to-all share hidden: the flag's own figure, else the named recipe's."""
    share = getattr(a, "moe_a2a_overlap", None)
    if share is None:
        return A2A_OVERLAP[getattr(a, "moe_overlap", MOE_OVERLAP_DEFAULT)]
    return float(v.in_range("moe_a2a_overlap", share, 0, 1))


#: the CLI's MoE overlap default: the Scenario's (one claim, llmcost.scenario)
MOE_OVERLAP_DEFAULT = SCENARIO_FIELDS["moe_overlap"].default


def _add_recipe_args(sp) -> None:
    """The memory recipe of a 2025 run (llmcost.training.memory, llmcost.training.recompute)."""
    sp.add_argument("--recompute-modules", default="",
                    help="modules recomputed by name, comma-separated (Megatron-Core's "
                         "--recompute-modules: " + ", ".join(RECOMPUTE_MODULES) + ")")
    sp.add_argument("--optimizer-moments", choices=mem.OPTIMIZER_MOMENTS, default="fp32",
                    help="AdamW moments in fp32 (default) or bf16 (DeepSeek-V3)")
    sp.add_argument("--moe-probs-at", choices=("combine", "activation"), default="activation",
                    help="MoE: router probabilities applied in the expert activation (Megatron-"
                         "Core since 2025, the default) or at the combine (keeps expert outputs)")
    sp.add_argument("--loss", choices=tuple(mem.LOSS_BYTES), default=None,
                    help="the loss's implementation: fused (4 bytes per logit: Megatron's "
                         "vocab-parallel cross-entropy, flash-attn's) or fp32 (12: PyTorch "
                         "cross_entropy on FP32 logits, torchtitan); default the stack's")


def _recipe_memory_options(a, **kw) -> mem.MemoryOptions:
    """The memory recipe's flags (and ``kw``) as the memory model's options."""
    return mem.MemoryOptions(moe_probs_at=a.moe_probs_at, loss=getattr(a, "loss", None) or None,
                             **kw)


def _add_stage_args(sp):
    sp.add_argument("--first-stage-layers", type=int,
                    help="layers on the first pipeline stage (Megatron's "
                         "--decoder-first-pipeline-num-layers); default: even, or one short "
                         "at each end when PP does not divide the layers")
    sp.add_argument("--last-stage-layers", type=int,
                    help="layers on the last pipeline stage (--decoder-last-pipeline-num-layers)")


def _add_precision_arg(sp):
    sp.add_argument("--precision", choices=PRECISIONS, default="bf16",
                    help="GEMM precision: bf16, fp8 (per-tensor scaling; Hopper, Ada, "
                         "Blackwell) or mxfp8 (Blackwell); attention and the rest stay BF16")


def _add_layout_common(sp: argparse.ArgumentParser) -> None:
    """The model, precision, hardware and options flags of predict and plan."""
    _add_model_args(sp)
    sp.add_argument("--gpu", default="a100-80gb", help="catalog id (default a100-80gb)")
    sp.add_argument("--fabric", help="scale-out fabric id (default: the GPU's usual)")
    sp.add_argument("--gpus", type=int, required=True)
    sp.add_argument("--global-batch", type=int, required=True, help="sequences per step")
    sp.add_argument("--no-flash-attention", action="store_true")
    sp.add_argument("--dp-overlap", type=float, default=step_mod.Options.dp_overlap,
                    help="share of gradient sync overlapped with backward (0-1)")
    sp.add_argument("--tp-comm-overlap", action="store_true",
                    help="TP communication overlapped with GEMMs (TransformerEngine)")
    _add_precision_arg(sp)
    sp.add_argument("--stack", choices=stacks.NAMES, default=stacks.DEFAULT,
                    help="training stack (default megatron): " + stacks.help_text())
    sp.add_argument("--moe-load-imbalance", type=float,
                    default=MOE_LOAD_IMBALANCE_DEFAULT,
                    help="MoE: tokens on the busiest expert rank over the mean (>= 1; "
                         f"default {MOE_LOAD_IMBALANCE_DEFAULT}, auxiliary-loss-free "
                         "balancing as 2025 recipes route)")
    sp.add_argument("--moe-overlap", choices=tuple(A2A_OVERLAP), default=MOE_OVERLAP_DEFAULT,
                    help="MoE: how the expert all-to-all is hidden, a named recipe ("
                         + ", ".join(f"{k} {x:g}" for k, x in A2A_OVERLAP.items())
                         + f"; default {MOE_OVERLAP_DEFAULT})")
    sp.add_argument("--moe-a2a-overlap", type=float, default=None,
                    help="MoE: your own share of the all-to-all hidden (0-1), instead of "
                         "--moe-overlap")


#: the MoE flags: refused for a dense model, which has no router or experts to read them
MOE_ONLY = ("moe_load_imbalance", "moe_overlap", "moe_a2a_overlap", "moe_probs_at", "ep", "etp")


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _refuse_moe_flags(a, m) -> None:
    """A dense model reads none of the MoE flags: each one given is refused."""
    if not m.is_moe:
        for dest in MOE_ONLY:
            if dest in getattr(a, "typed", ()):
                raise v.InputError(dest, f"{_flag(dest)} applies to MoE models; {m.id} is dense")
