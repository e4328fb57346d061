"""Readers of the Llama-like decoders: Llama, Mistral, Mixtral, Qwen2/3, Qwen3-MoE, SmolLM3
(one reader), OLMo 1-3, Gemma 2 and 3, Phi-3."""

from __future__ import annotations

from typing import Mapping

from .common import _biases, _class_windows, _dropout, _gqa_core, _windows
from .fields import _error, _Fields, _short


def _read_decoder(f: _Fields, fam: str) -> dict:
    """Llama, Mistral, Mixtral, Qwen2, Qwen3, Qwen3-MoE, SmolLM3."""
    spec = _gqa_core(f, head_dim_default=128 if fam == "qwen3" else None)
    spec["ffn_hidden"] = f.size("intermediate_size", "ffn_hidden", limit="intermediate_size")
    spec["tied_embeddings"] = f.get("tie_word_embeddings", fam == "smollm3")
    spec["dropout"] = _dropout(f, "attention_dropout")
    if fam in ("llama", "smollm3"):
        spec["biases"] = _biases(f)
    elif fam == "qwen2":
        spec["biases"] = "qkv"
    elif fam in ("qwen3", "qwen3_moe"):
        if f.get("attention_bias", False):
            raise _error("attention_bias", "attention_bias true (biases on q, k, v and o, none "
                                           "in the MLP) is not modelled")
        spec["biases"], spec["qk_norm"] = "none", True
    else:
        spec["biases"] = "none"
    spec["attention_window"], spec["window_layers"] = _windows(
        f, spec["layers"], always=fam in ("mistral", "mixtral"))
    if fam == "mixtral":
        spec["moe_experts"] = f.size("num_local_experts", "moe_experts", limit="experts")
        spec["moe_top_k"] = f.size("num_experts_per_tok", "moe_top_k", limit="experts")
        spec["moe_ffn_hidden"] = spec["ffn_hidden"]
    elif fam == "qwen3_moe":
        spec["moe_experts"] = f.size("num_experts", "moe_experts", limit="experts")
        spec["moe_top_k"] = f.size("num_experts_per_tok", "moe_top_k", limit="experts")
        spec["moe_ffn_hidden"] = f.size("moe_intermediate_size", "moe_ffn_hidden",
                                        limit="intermediate_size")
        step = f.size("decoder_sparse_step", "moe_layer_step", required=False, default=1,
                      limit="num_hidden_layers")
        dense = sorted(set(f.get("mlp_only_layers") or []))
        if any(i < 0 or i >= spec["layers"] for i in dense):
            raise _error("mlp_only_layers", f"mlp_only_layers must list layers in "
                                            f"[0, {spec['layers'] - 1}], got {dense}")
        if dense and step != 1:
            raise _error("mlp_only_layers", "mlp_only_layers with decoder_sparse_step "
                                            f"{step} is not modelled")
        # only the count of dense layers enters the parameter count
        spec["moe_layer_step"], spec["moe_dense_layers"] = step, len(dense)
    return spec


def _read_olmo(f: _Fields, fam: str) -> dict:
    """OLMo 1 (non-parametric LayerNorms) and OLMo 2 (RMSNorm after attention and MLP, RMSNorm
    over the projected q and k): otherwise Llama's SwiGLU, RoPE and bias-free linears."""
    spec = _gqa_core(f)
    if f.get("attention_bias", False):
        raise _error("attention_bias", "attention_bias true (biases on q, k, v and o, none in "
                                       "the MLP) is not modelled")
    spec.update(ffn_hidden=f.size("intermediate_size", "ffn_hidden", limit="intermediate_size"),
                biases="none", tied_embeddings=f.get("tie_word_embeddings", False),
                dropout=_dropout(f, "attention_dropout"))
    if fam == "olmo":
        # OlmoLayerNorm has no weights: no norm parameters in the layers; ModelSpec counts
        # the final norm at h (4,096 of OLMo-7B's 6.9e9)
        spec.update(norm="layernorm_nobias", norms_per_layer=0)
    else:
        # q_norm over a x d and k_norm over kv x d, counted by ModelSpec as 2 d (per-head
        # norms): (a + kv - 2) d fewer per layer, 253,952 of OLMo 2 7B's 7.3e9
        spec["qk_norm"] = True
    if fam == "olmo3":
        # Olmo3Config's layer_types: sliding_attention except every 4th layer (3, 7, ...);
        # its sliding_window defaults to 4096
        layers = spec["layers"]
        spec["attention_window"], spec["window_layers"] = _class_windows(
            f, layers, default_window=4096, default_sliding=layers - layers // 4)
    return spec


#: Gemma2Config's / Gemma3TextConfig's defaults of the sizes their published files may omit
_GEMMA_DEFAULTS = {"gemma2": dict(num_attention_heads=8, num_key_value_heads=4,
                                  vocab_size=256_000),
                   "gemma3": dict(num_attention_heads=8, num_key_value_heads=4,
                                  vocab_size=262_208)}


def _read_gemma(f: _Fields, fam: str) -> dict:
    """Gemma 2 and Gemma 3 (``Gemma3ForCausalLM``, or the language model under ``text_config``
    of ``Gemma3ForConditionalGeneration``): GQA with its own head_dim, a GeGLU MLP (gate, up,
    down), four RMSNorms per layer, tied embeddings, no biases, sliding windows on the layers
    the configuration class marks; Gemma 3 adds an RMSNorm over head_dim on q and on k."""
    if fam == "gemma3":
        sub = f._c.get("text_config")
        flat = any(isinstance(k, str) and k.startswith("text_config.") for k in f._c)
        if sub is None and not flat:
            raise _error("text_config", "text_config is missing: Gemma3ForConditionalGeneration "
                                        "configs hold the language model there (transformers "
                                        "would build a default Gemma3TextConfig, not this model)")
        if sub is not None and not isinstance(sub, Mapping):
            raise _error("text_config", f"text_config must be an object, got {_short(sub)}")
        f.prefix = "text_config."
        f.warnings.append("Gemma3ForConditionalGeneration: the language model (text_config) is "
                          "counted; the vision tower (vision_config) and the multimodal projector "
                          "are not")
    spec = _gqa_core(f, head_dim_default=256,
                     defaults=_GEMMA_DEFAULTS["gemma2" if fam == "gemma2" else "gemma3"])
    if f.get("attention_bias", False):
        raise _error(f.prefix + "attention_bias", "attention_bias true (biases on q, k, v and o, "
                                                  "none in the MLP) is not modelled")
    layers = spec["layers"]
    if fam == "gemma2":
        # Gemma2Config's layer_types: sliding_attention on even layers (0, 2, ...), full on odd
        sliding = (layers + 1) // 2
    else:
        # Gemma3TextConfig's: full_attention on every sliding_window_pattern-th layer (5, 11, ...)
        pattern = f.size("sliding_window_pattern", "window_layers", required=False, default=6,
                         limit="num_hidden_layers")
        sliding = layers - layers // pattern
    spec.update(ffn_hidden=f.size("intermediate_size", "ffn_hidden", limit="intermediate_size"),
                biases="none", norms_per_layer=4, qk_norm=fam != "gemma2",
                tied_embeddings=f.get("tie_word_embeddings", True),
                dropout=_dropout(f, "attention_dropout"))
    spec["attention_window"], spec["window_layers"] = _class_windows(
        f, layers, default_window=4096, default_sliding=sliding)
    return spec


def _read_phi3(f: _Fields, fam: str) -> dict:
    """Phi-3, Phi-3.5, Phi-4 (``Phi3ForCausalLM``): Llama's layout with q, k, v fused in
    qkv_proj and gate and up in gate_up_proj (the same weights), no biases (the code builds
    none, whatever a file's attention_bias says), a sliding window on every layer when
    ``sliding_window`` is set (MistralModel's mask), untied embeddings by default."""
    spec = _gqa_core(f)
    spec.update(ffn_hidden=f.size("intermediate_size", "ffn_hidden", limit="intermediate_size"),
                biases="none", tied_embeddings=f.get("tie_word_embeddings", False),
                dropout=_dropout(f, "attention_dropout", "resid_pdrop", "embd_pdrop"))
    spec["attention_window"], spec["window_layers"] = _windows(f, spec["layers"], always=True)
    return spec
