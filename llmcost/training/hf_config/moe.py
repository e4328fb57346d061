"""Readers of the mixture-of-experts families with layouts of their own: DeepSeek-V2/V3
(multi-head latent attention, shared and routed experts) and gpt-oss."""

from __future__ import annotations

from .common import _dropout, _gqa_core, _windows
from .fields import _error, _Fields


def _read_deepseek(f: _Fields, fam: str) -> dict:
    spec = _gqa_core(f)
    spec.update(attention="mla", gated_ffn=True, biases="none", dropout=_dropout(f, "attention_dropout"))
    if f.get("attention_bias", False):
        raise _error("attention_bias", "attention_bias true (biases in MLA projections) is not "
                                       "modelled")
    spec["tied_embeddings"] = f.get("tie_word_embeddings", False)
    spec["ffn_hidden"] = f.size("intermediate_size", "ffn_hidden", limit="intermediate_size")
    spec["q_lora_rank"] = f.size("q_lora_rank", "q_lora_rank", required=False, default=0,
                                 minimum=0)
    spec["kv_lora_rank"] = f.size("kv_lora_rank", "kv_lora_rank")
    spec["qk_rope_head_dim"] = f.size("qk_rope_head_dim", "qk_rope_head_dim", limit="head_dim")
    spec["head_dim"] = f.size("qk_nope_head_dim", "head_dim", limit="head_dim")
    spec["v_head_dim"] = f.size("v_head_dim", "v_head_dim", limit="head_dim")
    spec["mtp_layers"] = f.size("num_nextn_predict_layers", "mtp_layers", required=False,
                                default=0, minimum=0, limit="num_hidden_layers")
    experts = f.size("n_routed_experts", "moe_experts", required=False, limit="experts")
    if experts:
        fe = f.size("moe_intermediate_size", "moe_ffn_hidden", limit="intermediate_size")
        shared = f.size("n_shared_experts", "moe_shared_ffn_hidden", required=False, default=0,
                        minimum=0, limit="experts")
        freq = f.size("moe_layer_freq", "moe_layer_step", required=False, default=1,
                      limit="num_hidden_layers")
        if freq != 1:
            raise _error("moe_layer_freq", f"moe_layer_freq {freq} is not modelled (every "
                                           "published DeepSeek-V2/V3 config has 1)")
        method = f.get("topk_method", "noaux_tc" if fam == "deepseek_v3" else "greedy")
        spec.update(moe_experts=experts, moe_ffn_hidden=fe, moe_shared_ffn_hidden=shared * fe,
                    moe_top_k=f.size("num_experts_per_tok", "moe_top_k", limit="experts"),
                    moe_dense_layers=f.size("first_k_dense_replace", "moe_dense_layers",
                                            required=False, default=0, minimum=0,
                                            limit="num_hidden_layers"),
                    moe_router_bias=method == "noaux_tc")
    return spec


def _read_gpt_oss(f: _Fields, fam: str) -> dict:
    spec = _gqa_core(f)
    ffn = f.size("intermediate_size", "moe_ffn_hidden", limit="intermediate_size")
    spec.update(ffn_hidden=ffn, moe_ffn_hidden=ffn,
                moe_experts=f.size("num_local_experts", "moe_experts", limit="experts"),
                moe_top_k=f.size("num_experts_per_tok", "moe_top_k", limit="experts"),
                moe_expert_biases=True, moe_router_bias=True, attention_sinks=True,
                biases="all" if f.get("attention_bias", True) else "none",
                tied_embeddings=f.get("tie_word_embeddings", False),
                dropout=_dropout(f, "attention_dropout"), active_params_counts="head")
    spec["attention_window"], spec["window_layers"] = _windows(f, spec["layers"], always=False)
    if not f.has("layer_types") and f.get("sliding_window"):
        # GptOssConfig's default layer_types: sliding on even layers, full on odd ones
        spec["attention_window"] = f.get("sliding_window")
        spec["window_layers"] = (spec["layers"] + 1) // 2
    return spec
