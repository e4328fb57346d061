"""A config.json model with some of its sizes replaced: the command line's architecture flags
given beside ``--model-config`` (what-if variants of a team's own model).

Each size replaces the one the config gave, with a note naming the config field; a size that
cannot stand for the config's field is refused naming both:

- ``kv_heads`` of a multi-head-latent-attention model (DeepSeek-V2/V3): MLA has no key/value
  heads, its ``kv_lora_rank`` compresses keys and values of every head;
- ``ffn_hidden`` of a mixture-of-experts model: its routed experts, shared experts and dense
  layers have widths of their own (``moe_intermediate_size``, ``intermediate_size``), which
  one number cannot replace;
- ``layers`` of a model whose layers alternate sliding-window and full attention: which of
  the new layers would be windowed is not in the config.

The head width follows ``hidden / heads`` where the config derived it so (no ``head_dim``
field), and the key/value heads follow the heads where the config had as many (no
``num_key_value_heads``): a replaced size changes what the config derived from it, as it
would in the config itself.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .. import _validate as v
from .arch import ModelSpec

#: the sizes that can be replaced (ModelSpec fields) and the config field each names when
#: the family's reader recorded no other (hf_config._Fields.spec_keys)
CONFIG_FIELD = {"layers": "num_hidden_layers", "hidden": "hidden_size",
                "heads": "num_attention_heads", "kv_heads": "num_key_value_heads",
                "ffn_hidden": "intermediate_size", "vocab": "vocab_size",
                "gated_ffn": "hidden_act"}


def _refuse(name: str, value: Any, field: str, old: Any, why: str) -> v.InputError:
    return v.InputError(name, f"{name} {value} cannot replace the config's {field} {old}: {why}")


def _check(model: ModelSpec, name: str, value: Any, field: str) -> None:
    """Refuse a replacement that cannot stand for the config's field (module notes)."""
    old = getattr(model, name)
    if name == "kv_heads" and model.attention == "mla":
        raise v.InputError(name, f"{name} {value} cannot apply to the config's multi-head "
                                 f"latent attention (kv_lora_rank {model.kv_lora_rank}): it has "
                                 "no key/value heads; change kv_lora_rank in the config")
    if name == "ffn_hidden" and model.is_moe:
        raise _refuse(name, value, field, old,
                      f"an MoE model's {model.moe_experts} experts ({model.moe_ffn_hidden} "
                      "wide), shared experts and dense layers have widths of their own; "
                      "change them in the config")
    if name == "layers" and 0 < model.window_layers < model.layers:
        raise _refuse(name, value, field, old,
                      f"{model.window_layers} of its {old} layers use sliding-window "
                      "attention (layer_types, sliding_window) and which of the new ones "
                      "would is not known; change the config")


def apply(model: ModelSpec, overrides: Mapping, spec_keys: Mapping[str, str] | None = None
          ) -> tuple[ModelSpec, list[str]]:
    """The model with the given sizes in place of the config's, and a note for each.

    Parameters
    ----------
    model : ModelSpec
        The model read from a config (:func:`llmcost.training.hf_config.model_from_config`).
    overrides : mapping
        ModelSpec field -> value, for fields of :data:`CONFIG_FIELD`: ``layers``, ``hidden``
        [-], ``heads``, ``kv_heads``, ``ffn_hidden`` [-], ``vocab`` [tokens], ``gated_ffn``
        (bool); None values are skipped.
    spec_keys : mapping, optional
        ModelSpec field -> the config field it was read from, to name it in the notes.

    Returns
    -------
    model : ModelSpec
        The model with the replacements (and what the config derived from them).
    notes : list of str
        One per replacement, "<field> <value> replaces the config's <config field> <old>",
        and the parameter count before and after [-].

    Raises
    ------
    llmcost._validate.InputError
        Named by the replaced field: a field that cannot be replaced, a replacement that
        cannot stand for the config's field (naming both), or a combination the model
        refuses (e.g. key/value heads not dividing the heads).

    References
    ----------
    .. [1] See the module notes.
    """
    keys = dict(spec_keys or {})
    given = {k: x for k, x in overrides.items() if x is not None}
    for name in given:
        if name not in CONFIG_FIELD:
            raise v.InputError(name, f"{name} is not a size of a config model that can be "
                                     f"replaced ({', '.join(CONFIG_FIELD)})")
    if not given:
        return model, []
    changes, notes = {}, []
    for name, value in given.items():
        field = keys.get(name, CONFIG_FIELD[name])
        _check(model, name, value, field)
        old = getattr(model, name)
        if name == "gated_ffn":
            value = bool(value)
            notes.append("gated_ffn: the config's FFN is gated already (3 matrices)" if old == value
                         else f"gated_ffn {value}: FFN of {3 if value else 2} matrices, where the "
                              f"config's {field} gives {3 if old else 2}")
        else:
            notes.append(f"{name} {value} replaces the config's {field} {old}")
        changes[name] = value
    if "layers" in changes and model.window_layers == model.layers:
        changes["window_layers"] = changes["layers"]        # windows on every layer still
    if {"hidden", "heads"} & set(changes) and model.attention == "gqa":
        if "head_dim" not in keys:
            changes.update(head_dim=None, v_head_dim=None)   # hidden / heads again
        if "kv_heads" not in keys and "kv_heads" not in changes and \
                model.kv_heads == model.heads:
            changes["kv_heads"] = None                       # as many as the heads again
    try:
        new = replace(model, **changes)
    except v.InputError as e:
        name = e.param if e.param in given else next(iter(given))
        named = list(given) + ([e.param] if e.param in CONFIG_FIELD and e.param not in given
                               else [])
        fields = ", ".join(f"{keys.get(k, CONFIG_FIELD[k])} {getattr(model, k)}" for k in named)
        raise v.InputError(name, f"{e} (replacing the config's {fields})") from None
    if new.head_dim != model.head_dim:
        notes.append(f"head_dim {new.head_dim} = hidden / heads, as the config derived it "
                     f"({model.head_dim} before)")
    if new.kv_heads != model.kv_heads and "kv_heads" not in given:
        notes.append(f"kv_heads {new.kv_heads} = heads, as the config had ({model.kv_heads} "
                     "before)")
    notes.append(f"parameters {new.params:,} with these sizes ({model.params:,} as the config "
                 "gives them)")
    return new, notes
