"""Config fields from a link: ``cfg.<field>=value`` strings typed by each field's kind."""

from __future__ import annotations

import ast
import math
from typing import Any, Mapping

from ... import _validate as v
from .fields import _BOOL, _INT, _INTS, _NUM, _STR, _STRS, FIELD_KINDS, _short, _typed

#: longest list value accepted from a link (a per-layer list of a 1,000-layer model fits)
_MAX_QUERY_CHARS = 40_000


def _parse_text(key: str, text: str, kind: str) -> Any:
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
