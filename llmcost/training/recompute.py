"""Activation recomputation by named module: which modules may be recomputed, and the FLOPs
their second forward adds.

Megatron-Core's selective recomputation (``--recompute-granularity selective
--recompute-modules ...``) checkpoints named submodules of a transformer layer instead of the
whole layer; DeepSeek-V3 recomputes "all RMSNorm operations and MLA up-projections" the same
way. What each module frees is counted in :mod:`llmcost.training.memory`
(:func:`~llmcost.training.memory.layer_activation_bytes`); what it costs is one more forward
of the module, counted here. Hardware FLOPs (HFU) include it, model FLOPs (MFU) do not.

References
----------
1. NVIDIA Megatron-LM (commit d98e8a6, 2026-08-22), megatron/core/transformer/
   transformer_config.py (``recompute_modules``: "core_attn", "moe_act", "layernorm",
   "mla_up_proj", "mlp", "moe", "shared_experts"; output-discarding checkpoints for
   "moe_act", "layernorm", "mla_up_proj", normal checkpoints for the others), and
   megatron/training/arguments.py (``--recompute-modules``).
2. DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, §3.2.3
   ("Recomputation of RMSNorm and MLA Up-Projection").
3. V. Korthikanti et al., arXiv:2205.05198, §5, Eq. 8 (selective recomputation of the
   attention core: 72 B s l h^2 (1 + s/3h + V/12lh) hardware FLOPs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .. import _validate as v

if TYPE_CHECKING:
    from .arch import ModelSpec

#: Modules a layer may recompute, by Megatron-Core's names (``--recompute-modules``):
#: "core_attn" (the attention core: what ``recompute="selective"`` means), "layernorm" (the
#: outputs of the pre-attention and pre-FFN norms), "mla_up_proj" (MLA's query/key/value
#: up-projections with their latent norms and RoPE), "mlp" (the dense FFN), "moe_act" (the
#: routed experts' activation function), "shared_experts", "moe" (the whole MoE block);
#: and "op_sac", torchtitan's per-op selective checkpointing of a dense layer (its
#: ``selective_ac_option = "op"``: every op recomputed but the fused attention and every
#: other matmul, :func:`op_sac_matmuls`), a policy for the whole layer, named alone.
RECOMPUTE_MODULES = ("core_attn", "layernorm", "mla_up_proj", "mlp", "moe_act",
                     "shared_experts", "moe", "op_sac")


def op_sac_matmuls(gated_ffn: bool = True) -> tuple[tuple[str, bool], ...]:
    """The matmuls of a dense layer in torchtitan's forward order, and whether per-op
    selective checkpointing saves each one's output.

    torchtitan counts ``aten.mm`` calls inside each checkpointed block and saves the output
    of the odd ones (the 1st, 3rd, ...), recomputing the even ones: with separate Q, K, V
    projections and a gated FFN (w2(silu(w1 x) * w3 x)) that saves wq, wv, w1, w2 and
    recomputes wk, wo, w3; a plain FFN (fc1, fc2) saves wq, wv, fc1 and recomputes wk, wo,
    fc2. The same split is taken for FP8 linears (torchao's Float8Linear): torchtitan's
    Table 1 measures the same peak memory with and without Float8 under torch.compile (76.8
    and 77.0 GiB), so FP8 runs keep what BF16 runs keep.

    Parameters
    ----------
    gated_ffn : bool
        A gated FFN (gate, up, down) [-].

    Returns
    -------
    matmuls : tuple of (str, bool)
        (name, saved) in forward order: "q", "k", "v", "o", then "gate", "up", "down" or
        "fc1", "fc2".

    References
    ----------
    .. [1] pytorch/torchtitan, torchtitan/models/llama3/parallelize.py (2024-12,
       ``_save_list`` and ``_custom_policy``: "Saves output of all compute ops, except every
       second mm"); torchtitan/models/llama3/model.py (forward order of wq, wk, wv, wo and
       w1, w3, w2).
    """
    names = ("q", "k", "v", "o") + (("gate", "up", "down") if gated_ffn else ("fc1", "fc2"))
    return tuple((n, i % 2 == 0) for i, n in enumerate(names))


def check_recompute_modules(recompute_modules: str | Sequence[str] | None, attention: str = "gqa", moe: bool = False,
                            shared_experts: bool = False) -> tuple[str, ...]:
    """Validate named recompute modules against what a model has.

    Parameters
    ----------
    recompute_modules : str or sequence of str
        Names from :data:`RECOMPUTE_MODULES`, as a tuple or one comma-separated string
        ("layernorm,mla_up_proj"); empty: none.
    attention : {"gqa", "mla"}
        The model's attention; "mla_up_proj" needs "mla".
    moe : bool
        The model has MoE layers; "moe_act", "shared_experts" and "moe" need them.
    shared_experts : bool
        The MoE layers have shared experts; "shared_experts" needs them.

    Returns
    -------
    modules : tuple of str
        The names, each once, in :data:`RECOMPUTE_MODULES` order [-].

    Raises
    ------
    InputError
        Naming ``recompute_modules``, its value and the allowed names.

    References
    ----------
    .. [1] Megatron-LM, megatron/core/transformer/transformer_config.py,
       ``TransformerConfig.__post_init__`` (allowed modules; "mla_up_proj" only with
       multi-latent attention; "moe_act" only with grouped-GEMM experts).
    """
    if recompute_modules is None:
        return ()
    if isinstance(recompute_modules, str):
        names = [n.strip() for n in recompute_modules.split(",") if n.strip()]
    else:
        try:
            names = list(recompute_modules)
        except TypeError:
            raise v.InputError("recompute_modules", f"recompute_modules must be a tuple of names "
                                                    f"from {', '.join(RECOMPUTE_MODULES)}, got "
                                                    f"{recompute_modules!r}") from None
    for n in names:
        if not isinstance(n, str) or n not in RECOMPUTE_MODULES:
            raise v.InputError("recompute_modules", f"recompute_modules must name modules from "
                                                    f"{', '.join(RECOMPUTE_MODULES)}, got {n!r}")
    need = {"mla_up_proj": (attention == "mla", "multi-head latent attention (attention='mla')"),
            "moe_act": (moe, "a mixture-of-experts model"),
            "moe": (moe, "a mixture-of-experts model"),
            "shared_experts": (moe and shared_experts, "MoE layers with shared experts"),
            "op_sac": (attention != "mla" and not moe,
                       "a dense model with multi-head or grouped-query attention")}
    for n in names:
        ok, what = need.get(n, (True, ""))
        if not ok:
            raise v.InputError("recompute_modules", f"recompute_modules {n!r} needs {what}; "
                                                    f"this model has none: drop it")
    if "op_sac" in names and len(set(names)) > 1:
        raise v.InputError("recompute_modules", "recompute_modules 'op_sac' is a policy for the "
                                                "whole layer and is named alone, got "
                                                f"{','.join(names)}")
    return tuple(n for n in RECOMPUTE_MODULES if n in names)


def recompute_flops_per_token(model: ModelSpec, recompute_modules: str | Sequence[str] | None,
                              seq_len: ArrayLike | None = None, imbalance: ArrayLike = 1.0) -> float | np.ndarray:
    r"""FLOPs the recomputed modules add per token and layer: one more forward of each.

    A forward costs 2 FLOPs per weight a token meets (the 6 N rule's forward third), so per
    token, averaged over the l layers (l_m of them MoE layers), with the MLA and MoE symbols
    of :mod:`llmcost.training.moe`:

    .. math::
        F_{mla\_up\_proj} &= 2\,[r_q\,a (d_n + d_r) + r_{kv}\,a (d_n + d_v)]
            \quad (r_q = 0:\ h\,a (d_n + d_r) \text{ for the query projection})\\
        F_{mlp} &= 2\,k_g\,h f\;\frac{l - l_m}{l}, \qquad
        F_{shared\_experts} = 2\,k_g\,h f_s\;\frac{l_m}{l}\\
        F_{moe} &= 2\,(h E + \iota\, k\, k_g\, h f_e + k_g\, h f_s)\;\frac{l_m}{l}\\
        F_{core\_attn} &= 12\, s\, d_q \quad (\text{MLA: } 6\, s\, a (d_{qk} + d_v))\\
        F_{op\_sac} &= 2\,(h\, d_{kv} + d_q h + h f) \quad \text{(gated FFN; plain: the
            same with its down projection)}

    with k_g = 3 for a gated FFN (gate, up, down) else 2, iota the busiest rank's load over
    the mean. "layernorm" and "moe_act" recompute element-wise operations only: 0 FLOPs
    (their cost is memory traffic, which :func:`llmcost.training.step.predict_step` adds).
    "core_attn" follows the convention of ``recompute="selective"`` (Korthikanti Eq. 8 adds
    the whole attention term once more); "moe" includes the shared experts, so naming both
    counts them once. "op_sac" runs again the matmuls torchtitan's policy does not save
    (:func:`op_sac_matmuls`: K, the output projection and the FFN's up or down projection).

    Parameters
    ----------
    model : ModelSpec
        Architecture (:class:`llmcost.training.arch.ModelSpec`).
    recompute_modules : str or sequence of str
        Names from :data:`RECOMPUTE_MODULES` (:func:`check_recompute_modules`).
    seq_len : int or array, optional
        s [tokens] for "core_attn"; default the model's.
    imbalance : float or array
        iota >= 1, tokens the busiest expert rank computes over the mean [-] (1: the mean,
        for hardware FLOPs).

    Returns
    -------
    flops : float or array
        [FLOP per token per layer], before tensor-parallel sharding.

    References
    ----------
    .. [1] Megatron-LM, transformer_config.py (``recompute_modules``), multi_latent_attention.py
       (``qkv_up_proj_and_rope_apply`` under ``CheckpointWithoutOutput``).
    .. [2] DeepSeek-AI, arXiv:2412.19437, §3.2.3.
    .. [3] Korthikanti et al. 2022, arXiv:2205.05198, Eq. 8.
    .. [4] pytorch/torchtitan, torchtitan/models/llama3/parallelize.py (per-op selective
       checkpointing).
    """
    mods = check_recompute_modules(recompute_modules, model.attention, model.is_moe,
                                   model.moe_shared_ffn_hidden > 0)
    # set in ModelSpec.__post_init__
    assert model.head_dim is not None and model.v_head_dim is not None and model.kv_heads is not None
    assert model.ffn_hidden is not None
    s = model.seq_len if seq_len is None else v.integer("seq_len", seq_len)
    iota = v.in_range("imbalance", imbalance, 1.0, 16.0)
    h, a, L = model.hidden, model.heads, model.layers
    share = model.moe_layers / L
    kg = 3.0 if model.gated_ffn else 2.0
    out = np.zeros(np.broadcast(s, iota).shape)
    if "core_attn" in mods:
        attn = 6.0 * s * a * (model.qk_head_dim + model.v_head_dim)
        if model.attention_window and model.window_layers:
            attn = attn * (1.0 - model.window_layers / L
                           * (1.0 - np.minimum(model.attention_window, s) / s))
        out = out + attn
    if "mla_up_proj" in mods:
        dn, dr, dv = model.head_dim, model.qk_rope_head_dim, model.v_head_dim
        q_in = model.q_lora_rank if model.q_lora_rank else h
        out = out + 2.0 * (q_in * a * (dn + dr) + model.kv_lora_rank * a * (dn + dv))
    if "mlp" in mods:
        out = out + 2.0 * kg * h * model.ffn_hidden * (1.0 - share)
    if "moe" in mods:
        assert model.moe_ffn_hidden is not None  # set for an MoE model, which "moe" needs
        out = out + 2.0 * share * (h * model.moe_experts + iota * model.moe_top_k * kg * h
                                   * model.moe_ffn_hidden + kg * h * model.moe_shared_ffn_hidden)
    elif "shared_experts" in mods:
        out = out + 2.0 * share * kg * h * model.moe_shared_ffn_hidden
    if "op_sac" in mods:
        d_q = a * model.head_dim
        d_kv = model.kv_heads * model.head_dim
        f = model.ffn_hidden
        size = {"q": h * d_q, "k": h * d_kv, "v": h * d_kv, "o": d_q * h, "gate": h * f,
                "up": h * f, "down": f * h, "fc1": h * f, "fc2": f * h}
        pairs = op_sac_matmuls(model.gated_ffn)
        out = out + 2.0 * sum(size[n] for n, saved in pairs if not saved)
    return v.result(out)
