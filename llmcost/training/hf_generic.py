"""Decoder-only ``config.json`` files of families llmcost has no reader for, read from the
usual fields, with a note naming every assumption made.

:mod:`llmcost.training.hf_config` reads the families it lists (``SUPPORTED``) by their
``transformers`` classes; any other architecture comes here. The sizes are read under the
names the common configuration classes give them (:data:`ALIASES`, first present wins), and
what no field says is assumed and said:

- **FFN matrices.** ``transformers`` decides gating by model class, not by activation name.
  In its modeling files (v5.25) every causal LM whose configuration defaults ``hidden_act``
  to ``"silu"`` (Llama, Mistral, Qwen2/3, InternLM2, Cohere, Granite, StableLM, OLMo, ...)
  builds gate, up and down projections, the SwiGLU of Shazeer (2020); GELU and ReLU MLPs are
  mostly two projections (GPT-2, GPT-NeoX, Falcon, StarCoder2, Nemotron and Persimmon's
  ``relu2``), with exceptions (Gemma's GeGLU, BitNet's gated ReLU^2). So: ``hidden_act`` /
  ``activation_function`` ``silu`` or ``swish``, or any ``*glu`` / ``gated-*`` name
  (``swiglu``: Jais; ``geglu``) -> 3 matrices; any other name -> 2; no such field -> the
  default of the class the field names imply (LlamaConfig's ``silu`` -> 3; GPT2Config's
  ``gelu_new`` -> 2 when the config uses GPT-2's ``n_embd``).
- **Tied embeddings.** ``tie_word_embeddings`` when given, else true:
  ``PretrainedConfig.__init__`` defaulted it to true in transformers 4.x, whose
  ``save_pretrained`` drops a value equal to that default, so a config.json without the key
  was saved tied.
- **FFN width** 4 x hidden without ``intermediate_size`` (or an alias); **KV heads** = heads
  without ``num_key_value_heads`` (or an alias), 1 with ``multi_query`` true.
- **Layout** (a few parameters per layer, said so the count can be checked): RMSNorm unless
  a LayerNorm epsilon is the only norm field; rotary positions (no parameters) unless ALiBi or
  learned positions are named; biases from the usual flags, none without them; dropout from the
  usual rates, none without them.
- **Experts** (``num_local_experts`` or an alias above 0): ``num_experts_per_tok`` (or an
  alias) per token, each ``moe_intermediate_size`` wide (else ``intermediate_size``, as
  Mixtral), ``n_shared_experts`` of that width (or ``shared_expert_intermediate_size``), the
  first ``first_k_dense_replace`` layers dense, every ``decoder_sparse_step``-th layer MoE.

One family's usual fields mean something else, and it is read as its own code builds it:
Qwen-1 (``QWenLMHeadModel``, ``modeling_qwen.py``) makes its MLP's ``w1`` and ``w2``
``intermediate_size // 2`` wide and gives ``c_attn`` (q, k, v) a bias whatever ``no_bias``
says; read literally, Qwen-7B would have 44% more FFN weights than it has.

Encoder-decoder configs (``is_encoder_decoder`` true, or T5/BART keys such as
``num_decoder_layers``, ``decoder_layers``, ``encoder_layers``) and masked-LM encoders are
refused by name: their encoder and cross-attention are not a decoder-only model's.

References
----------
1. Hugging Face transformers v5.25, ``activations.py`` (ACT2FN), ``models/*/modeling_*.py``
   (which MLPs are gated), ``configuration_llama.py`` and ``configuration_gpt2.py`` (default
   activations); v4.46 ``configuration_utils.py`` (``PretrainedConfig(tie_word_embeddings=
   True)``, ``to_diff_dict``) (https://github.com/huggingface/transformers).
2. N. Shazeer, "GLU Variants Improve Transformer", arXiv:2002.05202 (2020).
3. Qwen team, ``modeling_qwen.py`` of Qwen/Qwen-7B (QWenMLP, QWenAttention), and J. Bai et al.,
   "Qwen Technical Report", arXiv:2309.16609, §2.2 (biases in the QKV layer only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from .. import _validate as v

if TYPE_CHECKING:
    from .hf_config.fields import _Fields

#: ModelSpec field -> the config keys that give it, the first present wins. The order puts
#: the transformers name first; ``padded_vocab_size`` precedes ``vocab_size`` because a
#: Megatron-exported config gives both and its embedding has the padded rows.
ALIASES: dict[str, tuple[str, ...]] = {
    "hidden": ("hidden_size", "d_model", "n_embd"),
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "heads": ("num_attention_heads", "n_head"),
    # ChatGLM's multi_query_group_num counts only with multi_query_attention true (below)
    "kv_heads": ("num_key_value_heads", "num_kv_heads", "n_head_kv"),
    "ffn_hidden": ("intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size"),
    "vocab": ("padded_vocab_size", "vocab_size", "n_vocab"),
    "head_dim": ("head_dim", "kv_channels"),
    "max_positions": ("max_position_embeddings", "n_positions", "seq_length", "max_seq_len"),
    "moe_experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "moe_top_k": ("num_experts_per_tok", "moe_topk", "top_k"),
    "activation": ("hidden_act", "activation_function"),
}
#: the fields that name the norm: RMSNorm's, then LayerNorm's (epsilon keys)
RMSNORM_KEYS = ("rms_norm_eps", "rmsnorm")
LAYERNORM_KEYS = ("layer_norm_eps", "layer_norm_epsilon", "layernorm_epsilon")
#: bias flags on every linear layer; on q, k and v only (StableLM, ChatGLM, Qwen-1 inverse)
ALL_BIAS_KEYS = ("bias", "use_bias", "add_bias_linear")
QKV_BIAS_KEYS = ("use_qkv_bias", "add_qkv_bias", "qkv_bias", "attention_bias")
#: fields that show rotary positions are used
ROPE_KEYS = ("rope_theta", "rotary_emb_base", "rotary_pct", "partial_rotary_factor",
             "rotary_dim", "original_rope")
DROPOUT_KEYS = ("attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop")
#: keys only encoder-decoder configs carry (T5: num_decoder_layers; BART, Marian, Whisper:
#: encoder_layers, decoder_layers)
ENCODER_DECODER_KEYS = ("num_decoder_layers", "decoder_layers", "encoder_layers")

#: architectures whose MLP is half as wide as ``intermediate_size`` and whose q, k, v keep a
#: bias (module notes: Qwen-1)
HALF_FFN_QKV_BIAS = ("QWenLMHeadModel",)

#: the kinds of the fields this reader uses that hf_config's readers do not
#: (merged into hf_config.FIELD_KINDS, so that a link carries them)
FIELD_KINDS: dict[str, str] = {
    "num_layers": "int", "ffn_dim": "int", "padded_vocab_size": "int", "n_vocab": "int",
    "kv_channels": "int", "seq_length": "int", "moe_topk": "int", "top_k": "int",
    "multi_query_group_num": "int", "multi_query_attention": "bool",
    "shared_expert_intermediate_size": "int",
    "hidden_act": "str", "activation_function": "str", "position_embedding_type": "str",
    "rms_norm_eps": "number", "rmsnorm": "bool", "layer_norm_eps": "number",
    "layer_norm_epsilon": "number", "layernorm_epsilon": "number",
    "use_qkv_bias": "bool", "add_qkv_bias": "bool", "qkv_bias": "bool", "add_bias_linear": "bool",
    "rope_theta": "number", "rotary_emb_base": "number", "rotary_dim": "int",
    "original_rope": "bool", "is_encoder_decoder": "bool",
}


def _error(key: str, message: str) -> v.InputError:
    return v.InputError(key, f"model_config: {message}")


def _gated_ffn(f: _Fields, gpt2_names: bool) -> tuple[bool, str]:
    """(gated, the note saying why) from the activation's name (module notes)."""
    key, act = f.first(ALIASES["activation"])
    if act is None:
        if gpt2_names:
            return False, ("FFN of 2 matrices: no activation_function, GPT2Config's default "
                           "'gelu_new'")
        return True, "FFN gated, 3 matrices: no hidden_act, LlamaConfig's default 'silu'"
    name = act.lower()
    if name in ("silu", "swish") or name.endswith("glu") or name.startswith("gated"):
        return True, (f"FFN gated, 3 matrices: {key} {act!r} is SiLU/GLU-type (transformers "
                      "builds gate, up and down projections for it)")
    return False, (f"FFN of 2 matrices: {key} {act!r} is not SiLU/GLU-type (a gated model of "
                   "this activation, as Gemma's GeGLU, needs hidden_act 'geglu')")


def _kv_heads(f: _Fields, heads: int, assumed: list) -> int:
    if f.get("multi_query_attention", False):
        return f.size("multi_query_group_num", "kv_heads", limit="num_attention_heads")
    if f.has("multi_query") and not any(f.has(k) for k in ALIASES["kv_heads"]):
        return 1 if f.get("multi_query") else heads
    kv = f.size(ALIASES["kv_heads"], "kv_heads", required=False, limit="num_attention_heads")
    if kv is None:
        assumed.append(f"key/value heads = heads {heads} (no {ALIASES['kv_heads'][0]})")
        return heads
    return kv


def _biases(f: _Fields, assumed: list) -> str:
    if any(f.get(k, False) for k in ALL_BIAS_KEYS) or f.get("no_bias") is False or \
            (f.get("attention_bias", False) and f.get("mlp_bias", False)):
        return "all"
    if any(f.get(k, False) for k in QKV_BIAS_KEYS):
        # Llama-style attention_bias also biases o: h per layer more than "qkv" counts
        return "qkv"
    if not any(f.has(k) for k in ALL_BIAS_KEYS + QKV_BIAS_KEYS + ("no_bias", "mlp_bias")):
        assumed.append("no biases (no bias field)")
    return "none"


def _layout(f: _Fields, assumed: list) -> dict:
    """Norm, positions, biases and dropout: the small terms (module notes)."""
    if any(f.get(k) for k in RMSNORM_KEYS):
        norm = "rmsnorm"
    elif any(f.get(k) is not None for k in LAYERNORM_KEYS):
        norm = "layernorm"
    else:
        norm = "rmsnorm"
        assumed.append("RMSNorm (no norm epsilon field)")
    kind = (f.get("position_embedding_type") or "").lower()
    if f.get("alibi", False) or kind == "alibi":
        position = "alibi"
    elif kind in ("absolute", "learned"):
        position = "learned"
    else:
        position = "rope"
        if not kind and not any(f.get(k) is not None for k in ROPE_KEYS):
            assumed.append("rotary positions, no parameters (no rope_theta or position field)")
    rates = [f.get(k) for k in DROPOUT_KEYS]
    if all(r is None for r in rates):
        assumed.append("no dropout (no dropout rate)")
    return dict(norm=norm, position_embedding=position, biases=_biases(f, assumed),
                dropout=any((r or 0) > 0 for r in rates))


def _experts(f: _Fields, ffn: int, assumed: list) -> dict:
    experts = f.size(ALIASES["moe_experts"], "moe_experts", required=False, minimum=0,
                     limit="experts")
    if not experts:
        return {}
    fe = f.size("moe_intermediate_size", "moe_ffn_hidden", required=False,
                limit="intermediate_size")
    if fe is None:
        fe = ffn
        assumed.append(f"each expert {ffn} wide, the dense FFN width (no moe_intermediate_size)")
    shared = f.size("shared_expert_intermediate_size", "moe_shared_ffn_hidden", required=False,
                    minimum=0, limit="intermediate_size")
    if shared is None:
        shared = fe * f.size("n_shared_experts", "moe_shared_ffn_hidden", required=False,
                             default=0, minimum=0, limit="experts")
    dense = f.size("first_k_dense_replace", "moe_dense_layers", required=False, minimum=0,
                   limit="num_hidden_layers")
    if dense is None:
        dense = 0
        assumed.append("every layer an MoE layer (no first_k_dense_replace)")
    return dict(moe_experts=experts, moe_ffn_hidden=fe, moe_shared_ffn_hidden=shared,
                moe_top_k=f.size(ALIASES["moe_top_k"], "moe_top_k", limit="experts"),
                moe_dense_layers=dense,
                moe_layer_step=f.size("decoder_sparse_step", "moe_layer_step", required=False,
                                      default=1, limit="num_hidden_layers"))


def refuse_non_decoder(config: Mapping[str, Any], name: str) -> None:
    """Refuse an encoder-decoder or masked-LM config by name (module notes).

    Parameters
    ----------
    config : mapping
        The parsed config (or a link's typed fields).
    name : str
        The architecture (or model_type) to name in the message.

    Raises
    ------
    llmcost._validate.InputError
        Naming the architecture and the field that shows it is not decoder-only.
    """
    keys = [k for k in ENCODER_DECODER_KEYS if config.get(k) is not None]
    if config.get("is_encoder_decoder") is True or keys:
        why = "is_encoder_decoder true" if config.get("is_encoder_decoder") is True else \
            f"{keys[0]} {config[keys[0]]!r}"
        raise _error("architectures", f"{name} is an encoder-decoder model ({why}): llmcost "
                                      "reads decoder-only configs (an encoder and "
                                      "cross-attention are not modelled)")
    if name.endswith("ForMaskedLM"):
        raise _error("architectures", f"{name} is a masked-language-model encoder: llmcost "
                                      "reads decoder-only configs")


def read(f: _Fields, name: str) -> dict:
    """ModelSpec fields of a decoder-only config no family reader lists, with a note.

    Parameters
    ----------
    f : hf_config._Fields
        The config's typed fields (records what is read, for links).
    name : str
        The architecture (or model_type) the config names; "" when it names none.

    Returns
    -------
    spec : dict
        ModelSpec keyword arguments; the note naming the architecture, that it was read
        generically and every assumption made is appended to ``f.warnings``.

    Raises
    ------
    llmcost._validate.InputError
        An encoder-decoder or masked-LM config (naming it), or a missing hidden size, layer
        count, head count or vocabulary (naming the field and its aliases).

    References
    ----------
    .. [1] See the module notes: transformers' activations and MLP classes,
       PretrainedConfig's tie_word_embeddings default.
    """
    refuse_non_decoder(f._c, name or "the config")
    label = name or "a config naming no architecture"
    f.family = f"{label} (not a family llmcost lists, read generically)"
    layers = f.size(ALIASES["layers"], "layers", limit="num_hidden_layers")
    hidden = f.size(ALIASES["hidden"], "hidden", limit="hidden_size")
    heads = f.size(ALIASES["heads"], "heads", limit="num_attention_heads")
    vocab = f.size(ALIASES["vocab"], "vocab", limit="vocab_size")
    assumed: list[str] = []
    kv = _kv_heads(f, heads, assumed)
    head_dim = f.size(ALIASES["head_dim"], "head_dim", required=False, limit="head_dim")
    ffn = f.size(ALIASES["ffn_hidden"], "ffn_hidden", required=False, limit="intermediate_size")
    if ffn is None:
        ffn = 4 * hidden
        assumed.append(f"FFN width 4 x hidden = {ffn} (no {' or '.join(ALIASES['ffn_hidden'])})")
    layout = _layout(f, assumed)
    if name in HALF_FFN_QKV_BIAS:
        ffn //= 2
        layout["biases"] = "qkv"
        assumed.append(f"{name}: FFN width {ffn} = intermediate_size / 2 and biases on q, k, v "
                       "(its MLP halves intermediate_size; its c_attn has a bias whatever "
                       "no_bias says)")
    gated, ffn_note = _gated_ffn(f, gpt2_names=f.has("n_embd"))
    assumed.insert(0, ffn_note)
    tied = f.get("tie_word_embeddings")
    if tied is None:
        tied = True
        assumed.append("tied embeddings (no tie_word_embeddings: PretrainedConfig's default "
                       "true)")
    spec = dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv, head_dim=head_dim,
                vocab=vocab, ffn_hidden=ffn, gated_ffn=gated, tied_embeddings=tied,
                **layout, **_experts(f, ffn, assumed))
    f.warnings.append(f"{label} is not a family llmcost lists: read generically as a "
                      "decoder-only transformer from its usual fields; assumed: "
                      + "; ".join(assumed))
    return spec
