"""Models from a Hugging Face ``config.json``: the architecture fields read into a ModelSpec.

A config is data, never code: it is parsed as bounded JSON (:func:`read_config`), its
architecture is chosen by name from :data:`SUPPORTED`, and each family's reader maps the
fields its ``transformers`` class defines onto :class:`llmcost.training.arch.ModelSpec`, with
that class's defaults for absent fields. Any other decoder-only config is read generically from
the usual fields, with a warning naming each assumption (:mod:`llmcost.training.hf_generic`).
The fields a reader uses are recorded, so a link can carry them as ``cfg.<field>=value``
(:func:`config_fields`, :func:`fields_from_query`) and rebuild the same ModelSpec.

Family notes (parameter layout, from each model's published code and configuration class):

- Llama 1-3, Mistral, Mixtral, Qwen2/2.5, Qwen3, Qwen3-MoE, SmolLM3: pre-norm RMSNorm,
  SwiGLU, rotary positions (SmolLM3 leaves every 4th layer without them: no parameters
  either way). Qwen2 biases q, k and v; Qwen3 adds per-head RMSNorm on q and k.
- DeepSeek-V2/V3: multi-head latent attention, ``first_k_dense_replace`` dense layers then
  MoE layers of shared + routed experts; V3's ``noaux_tc`` routing keeps one balancing
  bias per routed expert; ``num_nextn_predict_layers`` multi-token-prediction modules are
  reported apart (:attr:`ModelSpec.mtp_params`), not in ``params``.
- gpt-oss: biases on attention, router and experts, one sink logit per head, 128-token
  sliding windows on the ``layer_types`` marked so; published active counts include the
  output head but not the input embedding.
- Falcon: fused QKV with 1 KV head (``multi_query``, 7B) or ``num_kv_heads`` groups
  (``new_decoder_architecture``, 40B/180B); parallel attention and MLP reading one shared
  LayerNorm (7B) or two (new architecture); GELU MLP of 4h; ALiBi when ``alibi``; the
  original ``RWForCausalLM`` files (``model_type`` RefinedWebModel = 7B layout, RefinedWeb
  = new architecture, keys ``n_head``/``n_head_kv``/``n_layer``) read the same way.
- MPT: ALiBi (no position parameters), ``no_bias`` removes every bias including the
  LayerNorms', GELU MLP of ``expansion_ratio`` x d_model, tied embeddings.
- BLOOM: ALiBi, biases everywhere, GELU MLP of 4h, a LayerNorm on the word embeddings.
- GPTBigCode (SantaCoder, StarCoder/StarCoderBase, WizardCoder): GPT-2 with multi-query
  attention (``multi_query``: 1 KV head, else ``n_head``), GELU MLP of ``n_inner`` (None:
  4h), biases everywhere, LayerNorm, learned positions, lm_head tied to wte; ``hidden_size``,
  ``num_attention_heads``, ``num_hidden_layers``, ``max_position_embeddings`` are read as
  ``n_embd``, ``n_head``, ``n_layer``, ``n_positions``. ModelSpec counts the position table
  at the sequence length, s x h: the n_positions x h table when seq_len is left to its
  default (n_positions up to 8,192), short of it by (n_positions - s) h for a shorter
  seq_len (StarCoder at 4,096: 25e6 of 15.5e9, 0.16%).
- StarCoder2: GQA with RoPE, GELU MLP (c_fc, c_proj), LayerNorm, ``use_bias`` on every
  linear layer (the LayerNorms keep theirs either way), ``sliding_window`` on every layer,
  ``tie_word_embeddings`` per config (default true; 15B unties).
- GPT-NeoX (Pythia, GPT-NeoX-20B): fused QKV and a GELU MLP, all with biases, two
  LayerNorms per layer, rotary positions on ``rotary_pct`` of each head (no parameters; 0:
  none), untied embed_in/embed_out by default. ``use_parallel_residual`` (attention and MLP
  side by side, each with its own LayerNorm, the GPT-J residual) is read but changes no
  parameter or FLOP count, so ModelSpec has no field for it (Falcon-7B's parallel layout shows
  only as its one shared norm, ``norms_per_layer`` 1).
- OLMo: Llama's SwiGLU, RoPE and bias-free linears with non-parametric LayerNorms, so no
  norm parameters in the layers (``norms_per_layer`` 0); ModelSpec still counts a final norm
  of h (4,096 of OLMo-7B's 6.9e9).
- OLMo 2: RMSNorm after attention and after the MLP (two per layer, as pre-norm counts),
  RMSNorm over the projected q (a x d) and k (kv x d), counted as ModelSpec's per-head
  ``qk_norm`` (2 d per layer): (a + kv - 2) d fewer per layer, 253,952 of OLMo 2 7B's
  7,298,617,344 (0.003%).
- OLMo 3: OLMo 2's layout (the same q/k-norm approximation: 253,952 of Olmo 3 7B's
  7,298,011,136) plus sliding windows of ``sliding_window`` (Olmo3Config: 4096) on the
  layers ``layer_types`` marks ``sliding_attention``, by default all but every 4th.
- Gemma 2: GQA with ``head_dim`` apart from h / a (9B: 16 x 256 on h = 3584), GeGLU MLP
  (gate, up, down: SwiGLU's count), four RMSNorms per layer (input, post-attention,
  pre- and post-feedforward: ``norms_per_layer`` 4), embeddings tied by default and scaled
  by sqrt(h) (a buffer, no parameter), no biases (``attention_bias`` true is refused);
  windows of ``sliding_window`` (4096) on the even layers (``layer_types`` when given).
  Logit soft-capping (``attn_logit_softcapping``, ``final_logit_softcapping``: a tanh per
  score and per logit) and ``query_pre_attn_scalar`` (the score scale) change no parameter
  and no FLOP count worth modelling, so they are not read.
- Gemma 3: Gemma 2's layout plus an RMSNorm over head_dim on q and on k (ModelSpec's
  ``qk_norm``, exactly), full attention on every ``sliding_window_pattern``-th layer (6:
  five local layers of ``sliding_window`` tokens, 1024 in 4B-27B and 512 in 1B, per global
  one) or as ``layer_types`` says. ``Gemma3ForConditionalGeneration`` (model_type gemma3)
  holds the language model under ``text_config`` and is read from there (fields
  ``text_config.<field>``), with a warning that its SigLIP vision tower and multimodal
  projector (423e6 of gemma-3-27b-it's 27.43e9) are not counted; its sparse ``text_config``
  takes Gemma3TextConfig's defaults (vocab 262,208, 8 heads, 4 KV heads, head_dim 256).
- Phi-3, Phi-3.5, Phi-4 (``Phi3ForCausalLM``): Llama's layout with q, k, v fused in
  ``qkv_proj`` and gate and up in ``gate_up_proj`` (the same weights as separate ones), no
  biases (the code builds none; ``attention_bias`` is not read), untied embeddings by
  default; ``sliding_window`` (Phi-3-mini-4k: 2047) applies to every layer, as Phi3Model's
  Mistral mask does, and a window longer than the sequence (Phi-3.5's 262,144) changes
  nothing.

References
----------
1. Hugging Face transformers, ``configuration_<model>.py`` and ``modeling_<model>.py``
   of llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, deepseek_v3, gpt_oss, falcon, mpt,
   bloom, smollm3, gpt_bigcode, starcoder2, gpt_neox, olmo, olmo2, olmo3, gemma2, gemma3,
   phi3 (https://github.com/huggingface/transformers): field names, defaults, the default
   ``layer_types`` patterns.
2. DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, §2.1-2.2, §4.2.
3. OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card", arXiv:2508.10925, §2.
4. E. Almazrouei et al., "The Falcon Series of Open Language Models",
   arXiv:2311.16867, §4 (multigroup attention, parallel attention/MLP).
5. MosaicML, MPT-7B (https://huggingface.co/mosaicml/mpt-7b, 2023-05): ALiBi, no biases.
6. BigScience, "BLOOM", arXiv:2211.05100, §3.2 (ALiBi, embedding LayerNorm).
7. R. Li et al., "StarCoder: may the source be with you!", arXiv:2305.06161 (15.5B,
   multi-query attention, 8K context); L. Ben Allal et al., "SantaCoder: don't reach for the
   stars!", arXiv:2301.03988.
8. A. Lozhkov et al., "StarCoder 2 and The Stack v2: The Next Generation", arXiv:2402.19173.
9. S. Black et al., "GPT-NeoX-20B", arXiv:2204.06745; S. Biderman et al., "Pythia",
   arXiv:2304.01373, Table 1 (non-embedding parameter counts).
10. D. Groeneveld et al., "OLMo", arXiv:2402.00838; Team OLMo, "2 OLMo 2 Furious",
    arXiv:2501.00656 (post-norm RMSNorm, QK-norm); Team OLMo, "Olmo 3", 2025 (sliding-window
    attention on three of four layers).
11. Gemma Team, "Gemma 2: Improving Open Language Models at a Practical Size",
    arXiv:2408.00118, §2 (local/global alternation, logit soft-capping, post-norms);
    Gemma Team, "Gemma 3 Technical Report", arXiv:2503.19786, §2 (5:1 local:global,
    1024-token windows, QK-norm, Table 1 parameter counts).
12. M. Abdin et al., "Phi-3 Technical Report", arXiv:2404.14219; M. Abdin et al., "Phi-4
    Technical Report", arXiv:2412.08905.
"""

from __future__ import annotations

import ast
import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

from .. import _validate as v
from . import hf_generic, hf_override
from .arch import ModelSpec

#: largest config accepted [bytes] (1 MB = 1e6 bytes; real config.json files are < 10 kB)
MAX_CONFIG_BYTES = 1_000_000
#: deepest nesting of objects/lists accepted (real files nest 3 levels)
MAX_DEPTH = 32
#: longest list value accepted from a link (a per-layer list of a 1,000-layer model fits)
_MAX_QUERY_CHARS = 40_000
#: sequence length read when ``seq_len`` is not given: min(max_position_embeddings, this)
DEFAULT_SEQ_CAP = 8192

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


def _short(value, n: int = 60) -> str:
    s = repr(value)
    return s if len(s) <= n else s[:n - 3] + "..."


# ---------------------------------------------------------------------------- reading JSON

def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"{text} is beyond the float range")
    return x


def _check_tree(value, where: str) -> None:
    """JSON types only, finite numbers, at most :data:`MAX_DEPTH` levels (iterative)."""
    stack = [(value, 1, "")]
    nodes = 0
    while stack:
        node, depth, path = stack.pop()
        nodes += 1
        if nodes > MAX_CONFIG_BYTES:
            raise _error("model_config", f"{where} holds more than {MAX_CONFIG_BYTES:,} values")
        if isinstance(node, dict):
            if depth > MAX_DEPTH:
                raise _error("model_config", f"{where} nests deeper than {MAX_DEPTH} levels")
            for k, x in node.items():
                if not isinstance(k, str):
                    raise _error("model_config", f"{where}: key {_short(k)} is not a string")
                stack.append((x, depth + 1, f"{path}.{k}" if path else k))
        elif isinstance(node, list):
            if depth > MAX_DEPTH:
                raise _error("model_config", f"{where} nests deeper than {MAX_DEPTH} levels")
            stack.extend((x, depth + 1, f"{path}[{i}]") for i, x in enumerate(node))
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise _error(path or "model_config",
                             f"{where}: {path or 'a value'} must be a finite number, got {node}")
        elif not (node is None or isinstance(node, (str, bool, int))):
            raise _error("model_config", f"{where}: {path or 'a value'} is a "
                                         f"{type(node).__name__}, not a JSON value")


def read_config(text_or_bytes_or_dict, *, name: str = "config.json") -> dict:
    """Parse a Hugging Face ``config.json`` into a dict, bounded and strict.

    Parameters
    ----------
    text_or_bytes_or_dict : str, bytes or dict
        The file's text (UTF-8 bytes or str) or an already parsed object.
    name : str
        What to call the input in messages (a file name).

    Returns
    -------
    config : dict
        The JSON object (a copy when a dict is given).

    Raises
    ------
    llmcost._validate.InputError
        One line starting "model_config:": more than :data:`MAX_CONFIG_BYTES` bytes
        (1 MB = 1e6 bytes), not UTF-8, not JSON (with the line and column), NaN or
        Infinity, nesting deeper than :data:`MAX_DEPTH`, or a top level that is not an object.

    References
    ----------
    .. [1] RFC 8259, "The JavaScript Object Notation (JSON) Data Interchange Format", §6
       (NaN and Infinity are not JSON numbers).
    """
    data = text_or_bytes_or_dict
    if isinstance(data, Mapping):
        _check_tree(dict(data), name)
        try:
            return json.loads(json.dumps(dict(data)))
        except ValueError as e:
            raise _error("model_config", f"{name}: {e}") from None
    if isinstance(data, str):
        size = len(data.encode("utf-8", errors="surrogatepass"))
    elif isinstance(data, (bytes, bytearray, memoryview)):
        size = len(data)
    else:
        raise _error("model_config", f"{name} must be JSON text or an object, "
                                     f"got a {type(data).__name__}")
    if size > MAX_CONFIG_BYTES:
        raise _error("model_config", f"{name} is {size:,} bytes; at most "
                                     f"{MAX_CONFIG_BYTES:,} bytes (1 MB) are read")
    if not isinstance(data, str):
        try:
            data = bytes(data).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise _error("model_config", f"{name} is not UTF-8 text (byte {e.start})") from None
    try:
        obj = json.loads(data, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as e:
        raise _error("model_config", f"{name} is not valid JSON: {e.msg} at line {e.lineno} "
                                     f"column {e.colno}") from None
    except RecursionError:
        raise _error("model_config", f"{name} nests deeper than {MAX_DEPTH} levels") from None
    except ValueError as e:
        raise _error("model_config", f"{name} is not valid JSON: {e}") from None
    if not isinstance(obj, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(obj), "a number")
        raise _error("model_config", f"{name} must hold a JSON object, got {kind}")
    _check_tree(obj, name)
    return obj


def read_config_file(path) -> dict:
    """Read and parse a ``config.json`` file (:func:`read_config`), never more than
    :data:`MAX_CONFIG_BYTES` + 1 bytes of it.

    Parameters
    ----------
    path : str or os.PathLike
        The file.

    Returns
    -------
    config : dict

    References
    ----------
    .. [1] See :func:`read_config`.
    """
    p = Path(path)
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as e:
        raise _error("model_config", f"cannot read {p}: {e.strerror or e}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise _error("model_config", f"{p.name} is more than {MAX_CONFIG_BYTES:,} bytes; at "
                                     f"most {MAX_CONFIG_BYTES:,} bytes (1 MB) are read")
    return read_config(data, name=p.name)


# ---------------------------------------------------------------------------- typed fields

def _typed(key: str, value, kind: str, label: str):
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

    def __init__(self, config: Mapping, family: str):
        self._c = config
        self.family = family
        self.read: dict[str, Any] = {}
        self.spec_keys: dict[str, str] = {}     # ModelSpec field -> the config key it came from
        #: prepended to every key a reader names ("text_config." for a multimodal wrapper)
        self.prefix = ""
        #: a reader's notes for the user, passed on as model_from_config warnings
        self.warnings: list[str] = []

    def _lookup(self, key: str):
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

    def get(self, key: str, default=None):
        found, value = self._lookup(key)
        if not found:
            return default
        key = self.prefix + key
        value = _typed(key, value, FIELD_KINDS[key], key)
        self.read[key] = value
        return default if value is None else value

    def first(self, keys: tuple[str, ...], default=None):
        """The first of ``keys`` present (aliases: ``n_head`` for ``num_attention_heads``)."""
        for key in keys:
            if self.has(key):
                return key, self.get(key)
        for key in keys:        # record an explicit null too
            self.get(key)
        return keys[0], default

    def size(self, keys, spec_field: str, *, required=True, default=None, minimum=1,
             limit: str | None = None):
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


# ---------------------------------------------------------------------------- readers

def _biases(f: _Fields, attention_default=False) -> str:
    """Llama-style ``attention_bias`` (q, k, v, o) and ``mlp_bias`` as ModelSpec.biases."""
    attn = f.get("attention_bias", attention_default)
    mlp = f.get("mlp_bias", False)
    if attn == mlp:
        return "all" if attn else "none"
    on = "attention_bias" if attn else "mlp_bias"
    raise _error(on, f"{on} true with {'mlp_bias' if attn else 'attention_bias'} false is not "
                     "modelled (biases are counted on all linear layers, on q/k/v only, or on none)")


def _windows(f: _Fields, layers: int, *, always: bool) -> tuple[int, int]:
    """(attention_window, window_layers): ``layer_types`` when given, else every layer
    (Mistral: ``always``) or the layers from ``max_window_layers`` on (Qwen2/3 with
    ``use_sliding_window``)."""
    window = f.get("sliding_window")
    types = f.get("layer_types")
    if types is not None:
        if len(types) != layers:
            raise _error("layer_types", f"layer_types has {len(types)} entries for "
                                        f"{layers} layers")
        n = sum(t == "sliding_attention" for t in types)
        return (int(window), n) if window and n else (0, 0)
    if not window:
        return 0, 0
    if always:
        return int(window), layers
    if not f.get("use_sliding_window", False):
        return 0, 0
    first = f.get("max_window_layers", layers)
    return int(window), max(0, layers - min(first, layers))


def _class_windows(f: _Fields, layers: int, *, default_window: int,
                   default_sliding: int) -> tuple[int, int]:
    """(attention_window, window_layers) for families whose configuration class builds
    ``layer_types`` itself (Gemma 2, Gemma 3, OLMo 3): the layers ``layer_types`` marks
    "sliding_attention" when the config gives it, else ``default_sliding`` layers (the
    class's pattern); the window ``sliding_window``, the class's ``default_window`` when the
    key is absent, none when it is null."""
    found, value = f._lookup("sliding_window")
    if found and value is None:
        window = f.get("sliding_window")        # an explicit null: full attention everywhere
    else:
        window = f.size("sliding_window", "attention_window", required=False,
                        default=default_window, limit="seq_len")
    types = f.get("layer_types")
    if types is not None:
        if len(types) != layers:
            raise _error(f.prefix + "layer_types", f"{f.prefix}layer_types has {len(types)} "
                                                   f"entries for {layers} layers")
        default_sliding = sum(t == "sliding_attention" for t in types)
    return (int(window), default_sliding) if window and default_sliding else (0, 0)


def _dropout(f: _Fields, *keys: str) -> bool:
    return any((f.get(k) or 0) > 0 for k in keys)


def _gqa_core(f: _Fields, *, head_dim_default=None, defaults: Mapping | None = None) -> dict:
    """Layers, widths, heads and vocabulary of a Llama-like config; ``defaults`` gives the
    class defaults of ``num_attention_heads``, ``num_key_value_heads`` and ``vocab_size``
    where a family's published files leave them out (Gemma 3), else they are required
    (``num_key_value_heads``: ``num_attention_heads``)."""
    d = defaults or {}
    layers = f.size("num_hidden_layers", "layers")
    hidden = f.size("hidden_size", "hidden")
    heads = f.size("num_attention_heads", "heads", required="num_attention_heads" not in d,
                   default=d.get("num_attention_heads"))
    kv = f.size("num_key_value_heads", "kv_heads", required=False,
                default=d.get("num_key_value_heads", heads), limit="num_attention_heads")
    hd = f.size("head_dim", "head_dim", required=False, default=head_dim_default)
    vocab = f.size("vocab_size", "vocab", required="vocab_size" not in d,
                   default=d.get("vocab_size"))
    return dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv, head_dim=hd,
                vocab=vocab, norm="rmsnorm", position_embedding="rope", gated_ffn=True)


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


_READERS = {"llama": _read_decoder, "mistral": _read_decoder, "mixtral": _read_decoder,
            "qwen2": _read_decoder, "qwen3": _read_decoder, "qwen3_moe": _read_decoder,
            "smollm3": _read_decoder, "deepseek_v2": _read_deepseek,
            "deepseek_v3": _read_deepseek, "gpt_oss": _read_gpt_oss, "falcon": _read_falcon,
            "mpt": _read_mpt, "bloom": _read_bloom, "gpt_bigcode": _read_gpt_bigcode,
            "starcoder2": _read_starcoder2, "gpt_neox": _read_gpt_neox, "olmo": _read_olmo,
            "olmo2": _read_olmo, "olmo3": _read_olmo, "gemma2": _read_gemma,
            "gemma3_text": _read_gemma, "gemma3": _read_gemma, "phi3": _read_phi3}
#: the field holding a family's longest sequence (default: max_position_embeddings)
_MAX_POSITION_KEYS = {"mpt": ("max_seq_len",),
                      "gpt_bigcode": ("n_positions", "max_position_embeddings"),
                      "generic": hf_generic.ALIASES["max_positions"]}
#: sequence length where a family's config has no maximum: its class default / training length
_SEQ_DEFAULTS = {"falcon": ("2048, FalconConfig's max_position_embeddings default", 2048),
                 "bloom": ("2048, BLOOM's training sequence length (model card)", 2048),
                 "gpt_bigcode": ("1024, GPTBigCodeConfig's n_positions default", 1024),
                 "starcoder2": ("4096, Starcoder2Config's max_position_embeddings default",
                                4096),
                 "gpt_neox": ("2048, GPTNeoXConfig's max_position_embeddings default", 2048),
                 "olmo": ("2048, OlmoConfig's max_position_embeddings default", 2048),
                 "olmo2": ("2048, Olmo2Config's max_position_embeddings default", 2048),
                 "olmo3": ("2048, Olmo3Config's max_position_embeddings default", 2048),
                 "gemma2": ("8192, Gemma2Config's max_position_embeddings default", 8192),
                 "gemma3_text": ("8192 = min(Gemma3TextConfig's max_position_embeddings "
                                 "default 131072, 8192)", 8192),
                 "gemma3": ("8192 = min(Gemma3TextConfig's max_position_embeddings default "
                            "131072, 8192)", 8192),
                 "phi3": ("4096, Phi3Config's max_position_embeddings default", 4096)}


def _family(config: Mapping) -> tuple[str, str, list[str]]:
    """(family, the name it was chosen by, warnings); "generic" for a family not listed,
    chosen by its first architecture, else its model_type, else "" (it names neither)."""
    archs = config.get("architectures")
    mtype = config.get("model_type")
    arch_names = [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
    if archs is not None and not isinstance(archs, list):
        raise _error("architectures", f"architectures must be a list of names, got {_short(archs)}")
    if mtype is not None and not isinstance(mtype, str):
        raise _error("model_type", f"model_type must be a string, got {_short(mtype)}")
    for a in arch_names:
        if a in _BY_ARCHITECTURE:
            return _BY_ARCHITECTURE[a], a, []
    if mtype in _BY_MODEL_TYPE:
        warn = ([f"architectures {', '.join(arch_names)} not recognised; read as model_type "
                 f"{mtype!r}"] if arch_names else [])
        return _BY_MODEL_TYPE[mtype], mtype, warn
    return "generic", arch_names[0] if arch_names else (mtype or ""), []


def _rough_params(spec: dict) -> int:
    """An upper bound on the parameter count, in Python integers (no overflow)."""
    h, L = spec["hidden"], spec["layers"]
    hd = spec.get("head_dim") or max(1, h // spec["heads"])
    attn = 4 * h * spec["heads"] * max(hd, spec.get("v_head_dim") or 0,
                                       (spec.get("head_dim") or 0) + spec.get("qk_rope_head_dim", 0))
    attn += 2 * h * (spec.get("q_lora_rank", 0) + spec.get("kv_lora_rank", 0))
    ffn = 3 * h * max(spec.get("ffn_hidden") or 4 * h,
                      (spec.get("moe_experts", 0) + 1) * (spec.get("moe_ffn_hidden") or 0)
                      + spec.get("moe_shared_ffn_hidden", 0))
    return (L + spec.get("mtp_layers", 0) + 1) * (attn + ffn + 8 * h) + 2 * spec["vocab"] * h


def _build(config: Mapping, seq_len, id) -> tuple[ModelSpec, list[str], _Fields]:
    if not isinstance(config, Mapping):
        raise _error("model_config", f"the config must be a JSON object (dict), got a "
                                     f"{type(config).__name__}")
    fam, chosen_by, warnings = _family(config)
    f = _Fields(config, chosen_by)
    f.get("architectures")
    f.get("model_type")
    f.get("_name_or_path")      # the model's name, carried so the pages can show it
    spec = hf_generic.read(f, chosen_by) if fam == "generic" else _READERS[fam](f, fam)
    warnings.extend(f.warnings)
    if _rough_params(spec) > _MAX_TOTAL_PARAMS:
        raise _error("model_config", f"the {chosen_by} config describes more than "
                                     f"{_MAX_TOTAL_PARAMS:.0e} parameters")
    keys = _MAX_POSITION_KEYS.get(fam, ("max_position_embeddings",))
    key = f.prefix + next((k for k in keys if f.has(k)), keys[0])
    max_pos = f.size(keys, "seq_len", required=False, limit="seq_len")
    if seq_len is not None:
        s = int(v.integer("seq_len", seq_len, maximum=_LIMITS["seq_len"]))
        if max_pos is not None and s > max_pos:
            warnings.append(f"seq_len {s} is beyond the config's {key} {max_pos}: the model "
                            "was not built for it (a longer-context stage or RoPE scaling)")
    else:
        if max_pos is not None:
            s = min(max_pos, DEFAULT_SEQ_CAP)
            warnings.append(f"seq_len {s} = min({key} {max_pos}, {DEFAULT_SEQ_CAP}); give "
                            "seq_len for the training sequence length")
        else:
            why, s = _SEQ_DEFAULTS.get(fam, ("llmcost's default cap", DEFAULT_SEQ_CAP))
            warnings.append(f"seq_len {s}: the config has no {key}; {why}")
    if spec.get("mtp_layers"):
        warnings.append(f"num_nextn_predict_layers {spec['mtp_layers']}: multi-token-prediction "
                        "modules are reported apart (mtp_params), not in params")
    try:
        model = ModelSpec(seq_len=s, id=id or "custom", name=chosen_by or "generic", **spec)
    except v.InputError as e:
        key = f.spec_keys.get(e.param, e.param)
        raise _error(key, f"{str(e)} (from {key})" if key != e.param else str(e)) from None
    return model, warnings, f


def model_from_config(config: Mapping, *, seq_len=None, id=None,
                      overrides: Mapping | None = None) -> tuple[ModelSpec, list[str]]:
    """A :class:`ModelSpec` from a Hugging Face config, with warnings.

    The family is chosen by ``architectures[0]`` (else ``model_type``) from
    :data:`SUPPORTED`; absent fields take the defaults of that family's ``transformers``
    configuration class (see the module notes for what each family's layout adds). A family
    not listed is read generically from the usual fields, with a warning naming every
    assumption (:mod:`llmcost.training.hf_generic`).

    Parameters
    ----------
    config : dict
        A parsed config (:func:`read_config`), or the typed fields of a link
        (:func:`fields_from_query`, nested ones as ``parent.child``).
    seq_len : int, optional
        Training sequence length [tokens]. Default: min(max_position_embeddings, 8192)
        (MPT: ``max_seq_len``, GPTBigCode: ``n_positions``, the Gemma 3 wrapper:
        ``text_config.max_position_embeddings``), with a warning saying so; a family default
        where the config has none (Falcon, BLOOM, GPT-NeoX, OLMo, OLMo 2, OLMo 3: 2048;
        GPTBigCode: 1024; StarCoder2, Phi-3: 4096; Gemma 2, Gemma 3: 8192).
    id : str, optional
        The ModelSpec id. Default "custom".
    overrides : mapping, optional
        ModelSpec sizes replacing the config's (``layers``, ``hidden``, ``heads``,
        ``kv_heads``, ``ffn_hidden``, ``vocab``, ``gated_ffn``; the command line's flags
        beside ``--model-config``), each with a warning naming the field it replaces
        (:func:`llmcost.training.hf_override.apply`).

    Returns
    -------
    model : ModelSpec
        ``name`` is the architecture (or model_type) the family was chosen by ("generic" for
        a config naming neither).
    warnings : list of str
        Choices made for the user (sequence length, MTP modules reported apart, a model_type
        used for an unknown architecture, a vision tower left out, a generic reading and its
        assumptions, the overrides).

    Raises
    ------
    llmcost._validate.InputError
        One line naming the field: an encoder-decoder config (naming its architecture), a
        missing required field (with its aliases), a value of the wrong type or out of range,
        a combination not modelled (e.g. Llama ``attention_bias`` without ``mlp_bias``), an
        override that makes no sense for the config (naming both).

    References
    ----------
    .. [1] See the module references: transformers configuration classes; DeepSeek-V3
       report §2.1-2.2; gpt-oss model card §2; Falcon paper §4; MPT-7B and BLOOM model cards;
       StarCoder, StarCoder2, GPT-NeoX-20B, Pythia, OLMo, OLMo 2, Gemma 2, Gemma 3, Phi-3
       and Phi-4 papers.
    """
    model, warnings, f = _build(config, seq_len, id)
    if overrides:
        model, notes = hf_override.apply(model, overrides, f.spec_keys)
        warnings.extend(notes)
    return model, warnings


def config_label(fields_: Mapping) -> str:
    """The name a page shows for a config's model: its ``_name_or_path`` (the Hub name
    transformers writes), else its architecture, else "config"."""
    name = fields_.get("_name_or_path")
    if isinstance(name, str) and name.strip():
        return name.strip()
    arch = fields_.get("architectures")
    if isinstance(arch, (list, tuple)) and arch:
        return str(arch[0])
    return str(arch or fields_.get("model_type") or "config")


def file_config_fields(config: Mapping, file_name: str) -> dict:
    """:func:`config_fields` of a config read from a file, named by the file when it carries
    no ``_name_or_path`` (so an uploaded ``my-model.json`` is not called "config")."""
    out = config_fields(config)
    if not str(out.get("_name_or_path") or "").strip():
        out["_name_or_path"] = os.path.basename(str(file_name)) or "config"
    return out


def config_fields(config: Mapping) -> dict:
    """The config fields :func:`model_from_config` reads, flat (nested ones as
    ``parent.child``), as a link carries them (``cfg.<field>=value``).

    Parameters
    ----------
    config : dict
        A parsed config.

    Returns
    -------
    fields : dict
        Field name -> value, only fields present in ``config`` and read by its family's
        reader; ``model_from_config(fields)`` gives the same ModelSpec as the config.

    References
    ----------
    .. [1] See :func:`model_from_config`.
    """
    _, _, f = _build(config, 1, None)
    return dict(f.read)


def _parse_text(key: str, text: str, kind: str):
    t = text.strip()
    if t in ("", "None", "null"):
        return None
    if kind == _INT:
        try:
            return int(t)
        except ValueError:
            pass
        try:
            x = float(t)
        except ValueError:
            raise v.InputError(key, f"{key} must be a whole number, got {_short(text)}") from None
        if not (math.isfinite(x) and x.is_integer()):
            raise v.InputError(key, f"{key} must be a whole number, got {_short(text)}")
        return int(x)
    if kind == _NUM:
        try:
            x = float(t)
        except ValueError:
            raise v.InputError(key, f"{key} must be a number, got {_short(text)}") from None
        if not math.isfinite(x):
            raise v.InputError(key, f"{key} must be a finite number, got {_short(text)}")
        return int(x) if x.is_integer() and "." not in t and "e" not in t.lower() else x
    if kind == _BOOL:
        low = t.lower()
        if low in ("true", "1"):
            return True
        if low in ("false", "0"):
            return False
        raise v.InputError(key, f"{key} must be true or false, got {_short(text)}")
    if kind == _STR:
        return t
    if len(t) > _MAX_QUERY_CHARS:
        raise v.InputError(key, f"{key} is {len(t):,} characters; at most {_MAX_QUERY_CHARS:,}")
    if t.startswith("["):
        try:
            items = ast.literal_eval(t)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise v.InputError(key, f"{key} must be a list such as [1, 2] or a,b, got "
                                    f"{_short(text)}") from None
        if not isinstance(items, list):
            raise v.InputError(key, f"{key} must be a list, got {_short(text)}")
    else:
        items = [x.strip() for x in t.split(",")]
    if kind == _INTS:
        try:
            return [_typed(key, int(x) if isinstance(x, str) else x, _INT, key) for x in items]
        except ValueError:
            raise v.InputError(key, f"{key} must list whole numbers, got {_short(text)}") from None
    if not all(isinstance(x, str) for x in items):
        raise v.InputError(key, f"{key} must list names, got {_short(text)}")
    return items


def fields_from_query(mapping: Mapping) -> dict:
    """Typed config fields from a link's ``cfg.<field>`` values (strings).

    Parameters
    ----------
    mapping : mapping
        Query keys to values: strings (a one-element list, as ``urllib.parse.parse_qs``
        gives, is accepted), or already typed values. Keys without the ``cfg.`` prefix are
        ignored. Lists are written ``[a, b]`` (JSON or Python) or ``a,b``; ``None``,
        ``null`` or nothing is an unset field.

    Returns
    -------
    fields : dict
        Field name (without ``cfg.``) -> typed value, for :func:`model_from_config`.

    Raises
    ------
    llmcost._validate.InputError
        Naming the ``cfg.<field>`` key: a field no reader uses (:data:`FIELD_KINDS`), or a
        value not of the field's kind.

    References
    ----------
    .. [1] See :func:`config_fields`.
    """
    out = {}
    for key, value in mapping.items():
        if not isinstance(key, str) or not key.startswith("cfg."):
            continue
        name = key[4:]
        kind = FIELD_KINDS.get(name)
        if kind is None:
            raise v.InputError(key, f"{key}: {name!r} is not a config field llmcost reads "
                                    "(see llmcost.training.hf_config.FIELD_KINDS)")
        if isinstance(value, (list, tuple)) and len(value) == 1 and isinstance(value[0], str):
            value = value[0]        # urllib.parse.parse_qs gives every value as a list
        elif isinstance(value, (list, tuple)) and kind not in (_INTS, _STRS):
            raise v.InputError(key, f"{key} is given {len(value)} times; give it once")
        if isinstance(value, str):
            out[name] = _parse_text(key, value, kind)
        else:
            try:
                out[name] = _typed(key, value, kind, key)
            except v.InputError as e:
                raise v.InputError(key, str(e).removeprefix("model_config: ")) from None
    return out
