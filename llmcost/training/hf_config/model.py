"""A ModelSpec from a config: the family chosen by name, its reader, the sequence length and
the overrides; the fields read, as a link carries them."""

from __future__ import annotations

import os
from typing import Mapping

from ... import _validate as v
from .. import hf_generic, hf_override
from ..arch import ModelSpec
from .dense import _read_decoder, _read_gemma, _read_olmo, _read_phi3
from .fields import _BY_ARCHITECTURE, _BY_MODEL_TYPE, _LIMITS, _MAX_TOTAL_PARAMS, _error, _Fields, _short
from .gpt_style import _read_bloom, _read_falcon, _read_gpt_bigcode, _read_gpt_neox, _read_mpt, _read_starcoder2
from .moe import _read_deepseek, _read_gpt_oss

#: sequence length read when ``seq_len`` is not given: min(max_position_embeddings, this)
DEFAULT_SEQ_CAP = 8192


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


def _build(config: Mapping, seq_len: int | None, id: str | None) -> tuple[ModelSpec, list[str], _Fields]:
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


def model_from_config(config: Mapping, *, seq_len: int | None = None, id: str | None = None,
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
