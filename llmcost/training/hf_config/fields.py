"""The fields a reader may use: the families and the names that choose them, each field's
kind, the size limits, and typed access to a config that records what a reader read (the
record a link carries)."""

from __future__ import annotations

import math
from typing import Any, Iterable, Literal, Mapping, overload

from ... import _validate as v
from .. import hf_generic

#: the architectures (``architectures[0]``) and ``model_type`` values each reader accepts
SUPPORTED: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "llama": (("LlamaForCausalLM",), ("llama",)),
    "mistral": (("MistralForCausalLM",), ("mistral",)),
    "mixtral": (("MixtralForCausalLM",), ("mixtral",)),
    "qwen2": (("Qwen2ForCausalLM",), ("qwen2",)),
    "qwen3": (("Qwen3ForCausalLM",), ("qwen3",)),
    "qwen3_moe": (("Qwen3MoeForCausalLM",), ("qwen3_moe",)),
    "deepseek_v2": (("DeepseekV2ForCausalLM",), ("deepseek_v2",)),
    "deepseek_v3": (("DeepseekV3ForCausalLM",), ("deepseek_v3",)),
    "gpt_oss": (("GptOssForCausalLM",), ("gpt_oss",)),
    "falcon": (("FalconForCausalLM", "RWForCausalLM"), ("falcon", "RefinedWeb", "RefinedWebModel")),
    "mpt": (("MptForCausalLM", "MPTForCausalLM"), ("mpt",)),
    "bloom": (("BloomForCausalLM",), ("bloom",)),
    "smollm3": (("SmolLM3ForCausalLM",), ("smollm3",)),
    "gpt_bigcode": (("GPTBigCodeForCausalLM",), ("gpt_bigcode",)),
    "starcoder2": (("Starcoder2ForCausalLM",), ("starcoder2",)),
    "gpt_neox": (("GPTNeoXForCausalLM",), ("gpt_neox",)),
    "olmo": (("OlmoForCausalLM",), ("olmo",)),
    "olmo2": (("Olmo2ForCausalLM",), ("olmo2",)),
    "olmo3": (("Olmo3ForCausalLM",), ("olmo3",)),
    "gemma2": (("Gemma2ForCausalLM",), ("gemma2",)),
    "gemma3_text": (("Gemma3ForCausalLM",), ("gemma3_text",)),
    "gemma3": (("Gemma3ForConditionalGeneration",), ("gemma3",)),
    "phi3": (("Phi3ForCausalLM",), ("phi3",)),
}
_BY_ARCHITECTURE = {a: fam for fam, (archs, _) in SUPPORTED.items() for a in archs}
_BY_MODEL_TYPE = {t: fam for fam, (_, types) in SUPPORTED.items() for t in types}

_INT, _NUM, _BOOL, _STR, _INTS, _STRS = "int", "number", "bool", "str", "list[int]", "list[str]"
#: every field a reader may use and its kind (nested fields flattened as ``parent.child``);
#: ``fields_from_query`` types link values by this table
FIELD_KINDS: dict[str, str] = {
    "architectures": _STRS, "model_type": _STR, "_name_or_path": _STR,
    "num_hidden_layers": _INT, "hidden_size": _INT, "num_attention_heads": _INT,
    "num_key_value_heads": _INT, "intermediate_size": _INT, "vocab_size": _INT,
    "head_dim": _INT, "tie_word_embeddings": _BOOL, "max_position_embeddings": _INT,
    "attention_bias": _BOOL, "mlp_bias": _BOOL, "attention_dropout": _NUM,
    "sliding_window": _INT, "use_sliding_window": _BOOL, "max_window_layers": _INT,
    "layer_types": _STRS,
    # mixture of experts
    "num_local_experts": _INT, "num_experts": _INT, "num_experts_per_tok": _INT,
    "moe_intermediate_size": _INT, "decoder_sparse_step": _INT, "mlp_only_layers": _INTS,
    "n_routed_experts": _INT, "n_shared_experts": _INT, "first_k_dense_replace": _INT,
    "moe_layer_freq": _INT, "topk_method": _STR,
    # multi-head latent attention, multi-token prediction
    "q_lora_rank": _INT, "kv_lora_rank": _INT, "qk_rope_head_dim": _INT,
    "qk_nope_head_dim": _INT, "v_head_dim": _INT, "num_nextn_predict_layers": _INT,
    # Falcon / RefinedWeb, BLOOM
    "n_embed": _INT, "n_layer": _INT, "n_head": _INT, "num_kv_heads": _INT, "n_head_kv": _INT,
    "new_decoder_architecture": _BOOL, "multi_query": _BOOL, "parallel_attn": _BOOL,
    "bias": _BOOL, "alibi": _BOOL, "num_ln_in_parallel_attn": _INT, "ffn_hidden_size": _INT,
    "hidden_dropout": _NUM,
    # MPT
    "d_model": _INT, "n_heads": _INT, "n_layers": _INT, "expansion_ratio": _NUM,
    "max_seq_len": _INT, "no_bias": _BOOL, "norm_type": _STR, "learned_pos_emb": _BOOL,
    "resid_pdrop": _NUM, "emb_pdrop": _NUM, "attn_config.alibi": _BOOL,
    "attn_config.attn_type": _STR, "attn_config.kv_n_heads": _INT,
    "attn_config.attn_pdrop": _NUM, "attn_config.qk_ln": _BOOL,
    "ffn_config.ffn_type": _STR, "ffn_config.ffn_hidden_size": _INT,
    # GPTBigCode (StarCoder, SantaCoder), StarCoder2, GPT-NeoX (Pythia)
    "n_embd": _INT, "n_inner": _INT, "n_positions": _INT, "embd_pdrop": _NUM,
    "attn_pdrop": _NUM, "use_bias": _BOOL, "residual_dropout": _NUM,
    "embedding_dropout": _NUM, "rotary_pct": _NUM, "partial_rotary_factor": _NUM,
    "use_parallel_residual": _BOOL,
    # Gemma 3
    "sliding_window_pattern": _INT,
}
#: the Gemma 3 language-model fields, read under ``text_config`` in the multimodal wrapper
_GEMMA3_TEXT_FIELDS = ("num_hidden_layers", "hidden_size", "num_attention_heads",
                       "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size",
                       "tie_word_embeddings", "max_position_embeddings", "attention_bias",
                       "attention_dropout", "sliding_window", "sliding_window_pattern",
                       "layer_types")
FIELD_KINDS.update({"text_config." + k: FIELD_KINDS[k] for k in _GEMMA3_TEXT_FIELDS})
# the generic reader's own fields (aliases, activation, norm and bias flags), one kind each
assert not {k for k, kind in hf_generic.FIELD_KINDS.items() if FIELD_KINDS.get(k, kind) != kind}
FIELD_KINDS.update(hf_generic.FIELD_KINDS)

# upper ends of the sizes accepted: beyond any published model, and small enough that no
# parameter or FLOP product overflows 64-bit integers
_LIMITS = {"num_hidden_layers": 10_000, "hidden_size": 1 << 20, "num_attention_heads": 1 << 16,
           "intermediate_size": 1 << 22, "vocab_size": 1 << 26, "head_dim": 1 << 16,
           "experts": 1 << 16, "seq_len": 1 << 30}
_MAX_TOTAL_PARAMS = 1e15


def _error(key: str, message: str) -> v.InputError:
    return v.InputError(key, f"model_config: {message}")


def _short(value: Any, n: int = 60) -> str:
    s = repr(value)
    return s if len(s) <= n else s[:n - 3] + "..."


# ---------------------------------------------------------------------------- typed fields

def _typed(key: str, value: Any, kind: str, label: str) -> Any:
    """``value`` checked against ``kind`` (None passes: an unset optional field)."""
    if value is None:
        return None
    if kind == _INT:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _error(key, f"{label} must be a whole number, got {_short(value)}")
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise _error(key, f"{label} must be a whole number, got {value}")
        return int(value)
    if kind == _NUM:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _error(key, f"{label} must be a finite number, got {_short(value)}")
        return value
    if kind == _BOOL:
        if not isinstance(value, bool):
            raise _error(key, f"{label} must be true or false, got {_short(value)}")
        return value
    if kind == _STR:
        if not isinstance(value, str):
            raise _error(key, f"{label} must be a string, got {_short(value)}")
        return value
    item = _INT if kind == _INTS else _STR
    if not isinstance(value, (list, tuple)):
        raise _error(key, f"{label} must be a list, got {_short(value)}")
    return [_typed(key, x, item, f"{label}[{i}]") for i, x in enumerate(value)]


class _Fields:
    """Typed access to a config's fields, recording each field found (for links)."""

    def __init__(self, config: Mapping, family: str) -> None:
        self._c = config
        self.family = family
        self.read: dict[str, Any] = {}
        self.spec_keys: dict[str, str] = {}     # ModelSpec field -> the config key it came from
        #: prepended to every key a reader names ("text_config." for a multimodal wrapper)
        self.prefix = ""
        #: a reader's notes for the user, passed on as model_from_config warnings
        self.warnings: list[str] = []

    def _lookup(self, key: str) -> tuple[bool, Any]:
        key = self.prefix + key
        if key in self._c:
            return True, self._c[key]
        head, _, rest = key.partition(".")
        sub = self._c.get(head) if rest else None
        if isinstance(sub, Mapping) and rest in sub:
            return True, sub[rest]
        return False, None

    def has(self, key: str) -> bool:
        found, value = self._lookup(key)
        return found and value is not None

    def get(self, key: str, default: Any = None) -> Any:
        found, value = self._lookup(key)
        if not found:
            return default
        key = self.prefix + key
        value = _typed(key, value, FIELD_KINDS[key], key)
        self.read[key] = value
        return default if value is None else value

    def first(self, keys: tuple[str, ...], default: Any = None) -> tuple[str, Any]:
        """The first of ``keys`` present (aliases: ``n_head`` for ``num_attention_heads``)."""
        for key in keys:
            if self.has(key):
                return key, self.get(key)
        for key in keys:        # record an explicit null too
            self.get(key)
        return keys[0], default

    # a required size, or one with a default, is an int; an optional one without a default may be None
    @overload
    def size(self, keys: str | Iterable[str], spec_field: str, *, required: Literal[True] = ...,
             default: int | None = ..., minimum: int = ..., limit: str | None = ...) -> int: ...
    @overload
    def size(self, keys: str | Iterable[str], spec_field: str, *, required: bool = ..., default: int,
             minimum: int = ..., limit: str | None = ...) -> int: ...
    @overload
    def size(self, keys: str | Iterable[str], spec_field: str, *, required: bool = ..., default: None = ...,
             minimum: int = ..., limit: str | None = ...) -> int | None: ...

    def size(self, keys: str | Iterable[str], spec_field: str, *, required: bool = True, default: int | None = None,
             minimum: int = 1, limit: str | None = None) -> int | None:
        """A whole-number size from the first present of ``keys``, in [minimum, limit]."""
        keys = (keys,) if isinstance(keys, str) else tuple(keys)
        key, value = self.first(keys, default)
        if value is None:
            if required:
                names = " or ".join(self.prefix + k for k in keys)
                raise _error(self.prefix + keys[0], f"{names} is missing; {self.family} configs "
                                                    "need it")
            return None
        high = _LIMITS.get(limit or key, _LIMITS["hidden_size"])
        key = self.prefix + key
        if value < minimum or value > high:
            raise _error(key, f"{key} must be in [{minimum}, {high:,}], got {value}")
        self.spec_keys.setdefault(spec_field, key)
        return value
