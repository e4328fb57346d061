"""Readers of the GPT-2-lineage families with their own field names: Falcon, MPT, BLOOM,
GPTBigCode (StarCoder), StarCoder2, GPT-NeoX (Pythia)."""

from __future__ import annotations

from .common import _dropout, _gqa_core, _windows
from .fields import _LIMITS, _error, _Fields, _short


def _read_falcon(f: _Fields, fam: str) -> dict:
    layers = f.size(("num_hidden_layers", "n_layer"), "layers")
    hidden = f.size(("hidden_size", "n_embed"), "hidden")
    heads = f.size(("num_attention_heads", "n_head"), "heads")
    mtype = f.get("model_type")
    new_arch = f.get("new_decoder_architecture", mtype == "RefinedWeb")
    parallel = f.get("parallel_attn", True)
    if new_arch:
        kv = f.size(("num_kv_heads", "n_head_kv"), "kv_heads", required=False, default=heads,
                    limit="num_attention_heads")
        n_ln = f.size("num_ln_in_parallel_attn", "norms_per_layer", required=False, default=2,
                      limit="num_hidden_layers")
        norms = 2 if n_ln == 2 else (1 if parallel else 2)
    else:
        kv = 1 if f.get("multi_query", True) else heads
        norms = 1 if parallel else 2
    ffn = f.size("ffn_hidden_size", "ffn_hidden", required=False, default=4 * hidden,
                 limit="intermediate_size")
    return dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv, ffn_hidden=ffn,
                vocab=f.size("vocab_size", "vocab"), gated_ffn=False, norm="layernorm",
                biases="all" if f.get("bias", False) else "none", norms_per_layer=norms,
                position_embedding="alibi" if f.get("alibi", False) else "rope",
                tied_embeddings=f.get("tie_word_embeddings", True),
                dropout=_dropout(f, "hidden_dropout", "attention_dropout"))


def _read_mpt(f: _Fields, fam: str) -> dict:
    hidden = f.size("d_model", "hidden")
    heads = f.size("n_heads", "heads", limit="num_attention_heads")
    attn_type = f.get("attn_config.attn_type", "multihead_attention")
    kinds = {"multihead_attention": heads, "multiquery_attention": 1}
    if attn_type == "grouped_query_attention":
        kv = f.size("attn_config.kv_n_heads", "kv_heads", limit="num_attention_heads")
    elif attn_type in kinds:
        kv = kinds[attn_type]
    else:
        raise _error("attn_config.attn_type", "attn_config.attn_type must be one of "
                                              "'multihead_attention', 'multiquery_attention', "
                                              f"'grouped_query_attention', got {_short(attn_type)}")
    if f.get("attn_config.qk_ln", False):
        raise _error("attn_config.qk_ln", "attn_config.qk_ln true (LayerNorms on q and k) is "
                                          "not modelled")
    ffn_type = f.get("ffn_config.ffn_type", "mptmlp")
    if ffn_type not in ("mptmlp", "mptglu"):
        raise _error("ffn_config.ffn_type", f"ffn_config.ffn_type must be 'mptmlp' or 'mptglu', "
                                            f"got {_short(ffn_type)}")
    ffn = f.size("ffn_config.ffn_hidden_size", "ffn_hidden", required=False,
                 limit="intermediate_size")
    if ffn is None:
        ratio = f.get("expansion_ratio", 4)
        ffn = ratio * hidden
        if ratio <= 0 or ffn != int(ffn) or ffn > _LIMITS["intermediate_size"]:
            raise _error("expansion_ratio", f"expansion_ratio x d_model must be a whole number "
                                            f"in [1, {_LIMITS['intermediate_size']:,}], got {ffn}")
        ffn = int(ffn)
        f.spec_keys.setdefault("ffn_hidden", "expansion_ratio")
    no_bias = f.get("no_bias", False)
    norm_type = f.get("norm_type", "low_precision_layernorm")
    if norm_type in ("layernorm", "low_precision_layernorm"):
        norm = "layernorm_nobias" if no_bias else "layernorm"
    elif norm_type in ("rmsnorm", "low_precision_rmsnorm"):
        norm = "rmsnorm"
    else:
        raise _error("norm_type", f"norm_type must be a LayerNorm or RMSNorm, got {_short(norm_type)}")
    alibi = f.get("attn_config.alibi", False)
    learned = f.get("learned_pos_emb", True)
    return dict(layers=f.size("n_layers", "layers", limit="num_hidden_layers"), hidden=hidden,
                heads=heads, kv_heads=kv, ffn_hidden=ffn, gated_ffn=ffn_type == "mptglu",
                vocab=f.size("vocab_size", "vocab"), norm=norm,
                biases="none" if no_bias else "all",
                # MPTModel builds position embeddings only without ALiBi
                position_embedding="alibi" if alibi else ("learned" if learned else "none"),
                tied_embeddings=f.get("tie_word_embeddings", True),
                dropout=_dropout(f, "resid_pdrop", "emb_pdrop", "attn_config.attn_pdrop"))


def _read_bloom(f: _Fields, fam: str) -> dict:
    hidden = f.size(("hidden_size", "n_embed"), "hidden")
    return dict(layers=f.size(("n_layer", "num_hidden_layers"), "layers",
                              limit="num_hidden_layers"),
                hidden=hidden, heads=f.size(("n_head", "num_attention_heads"), "heads",
                                            limit="num_attention_heads"),
                vocab=f.size("vocab_size", "vocab"), ffn_hidden=4 * hidden, gated_ffn=False,
                norm="layernorm", biases="all", position_embedding="alibi",
                embedding_norm=True, tied_embeddings=f.get("tie_word_embeddings", True),
                dropout=_dropout(f, "hidden_dropout", "attention_dropout"))


def _read_gpt_bigcode(f: _Fields, fam: str) -> dict:
    """GPTBigCode (SantaCoder, StarCoder/StarCoderBase, WizardCoder): GPT-2 with multi-query
    attention; GPTBigCodeConfig maps hidden_size, num_attention_heads, num_hidden_layers and
    max_position_embeddings onto n_embd, n_head, n_layer and n_positions."""
    hidden = f.size(("n_embd", "hidden_size"), "hidden")
    heads = f.size(("n_head", "num_attention_heads"), "heads", limit="num_attention_heads")
    ffn = f.size("n_inner", "ffn_hidden", required=False, default=4 * hidden,
                 limit="intermediate_size")
    # GPTBigCodeConfig: num_key_value_heads = 1 if multi_query else n_head
    kv = 1 if f.get("multi_query", True) else heads
    # GPTBigCodeConfig's dropouts default to 0.1 each
    dropout = any(f.get(k, 0.1) > 0 for k in ("resid_pdrop", "embd_pdrop", "attn_pdrop"))
    return dict(layers=f.size(("n_layer", "num_hidden_layers"), "layers",
                              limit="num_hidden_layers"),
                hidden=hidden, heads=heads, kv_heads=kv, ffn_hidden=ffn,
                vocab=f.size("vocab_size", "vocab"), gated_ffn=False, norm="layernorm",
                biases="all", position_embedding="learned",
                tied_embeddings=f.get("tie_word_embeddings", True), dropout=dropout)


def _read_starcoder2(f: _Fields, fam: str) -> dict:
    """StarCoder2: GQA with RoPE, a GELU MLP (c_fc, c_proj), LayerNorms, ``use_bias`` on every
    linear layer, a sliding window on every layer when ``sliding_window`` is set."""
    spec = _gqa_core(f)
    spec.update(ffn_hidden=f.size("intermediate_size", "ffn_hidden", limit="intermediate_size"),
                gated_ffn=False, norm="layernorm",
                # nn.LayerNorm keeps its bias whatever use_bias says
                biases="all" if f.get("use_bias", True) else "none",
                tied_embeddings=f.get("tie_word_embeddings", True),
                dropout=_dropout(f, "attention_dropout", "residual_dropout", "embedding_dropout"))
    spec["attention_window"], spec["window_layers"] = _windows(f, spec["layers"], always=True)
    return spec


def _read_gpt_neox(f: _Fields, fam: str) -> dict:
    """GPT-NeoX (GPT-NeoX-20B, Pythia): fused QKV and a GELU MLP with biases, two LayerNorms
    per layer, rotary positions on ``rotary_pct`` of each head, untied embed_in/embed_out."""
    if not f.get("attention_bias", True):
        raise _error("attention_bias", "attention_bias false (biases in the MLP only) is not "
                                       "modelled")
    # transformers >= 4.45 saves rotary_pct also as partial_rotary_factor
    key, pct = f.first(("rotary_pct", "partial_rotary_factor"), 0.25)
    if not 0 <= pct <= 1:
        raise _error(key, f"{key} must be in [0, 1], got {pct}")
    # attention and MLP in parallel (the GPT-J residual) or in series: the same weights, each
    # branch with its own LayerNorm either way, so ModelSpec needs no field for it
    f.get("use_parallel_residual", True)
    return dict(layers=f.size("num_hidden_layers", "layers"),
                hidden=f.size("hidden_size", "hidden"),
                heads=f.size("num_attention_heads", "heads"),
                ffn_hidden=f.size("intermediate_size", "ffn_hidden", limit="intermediate_size"),
                vocab=f.size("vocab_size", "vocab"), gated_ffn=False, norm="layernorm",
                biases="all", position_embedding="rope" if pct > 0 else "none",
                tied_embeddings=f.get("tie_word_embeddings", False),
                dropout=_dropout(f, "attention_dropout", "hidden_dropout"))
