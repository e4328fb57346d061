"""``llmcost flops``: parameters and training FLOPs of a model."""

from __future__ import annotations

import argparse

from .. import _validate as v
from ..training import flops as fl
from .common import _add_model_args, _model_from_args


def cmd_flops(a) -> dict:
    m = _model_from_args(a)
    params = m.params
    # an MoE token meets only its active weights: 6N and PaLM on N_active (Kaplan's N)
    active = m.active_params
    chin = float(fl.chinchilla_optimal_tokens(active))
    tokens = a.tokens if a.tokens is not None else chin
    v.positive("tokens", tokens)
    by_method = {
        "architecture": m.flops_per_token("none"),
        "6n": float(fl.flops_per_token_6n(active)),
        "palm": float(fl.flops_per_token_palm(active, m.layers, m.heads, m.qk_head_dim,
                                              m.seq_len)),
    }
    fpt = by_method[a.method]
    chin_note = ("chinchilla (20 per active parameter; Hoffmann et al. fitted dense models)"
                 if m.is_moe else "chinchilla (20 per parameter)")
    return {
        "model": m.id, "params": params, "active_params": active,
        "mtp_params": m.mtp_params, "experts": m.moe_experts, "experts_per_token": m.moe_top_k,
        "method": a.method, "seq_len": m.seq_len,
        "tokens": tokens, "tokens_source": "given" if a.tokens is not None else chin_note,
        "flops_per_token": fpt, "total_flops": fpt * tokens,
        "flops_per_token_by_method": by_method,
        "hardware_flops_per_token": {r: m.flops_per_token(r) for r in fl.RECOMPUTE_MODES},
        "chinchilla_tokens": chin,
    }


def _args_flops(sp: argparse.ArgumentParser) -> None:
    """The flags of ``llmcost flops``."""
    _add_model_args(sp)
    sp.add_argument("--tokens", type=float, help="training tokens (default: 20 per parameter)")
    sp.add_argument("--method", choices=("architecture", "6n", "palm"), default="architecture",
                    help="FLOPs per token: from the architecture (Megatron/Korthikanti Eq. 7), "
                         "6N, or PaLM 6N + 12LHQT")
