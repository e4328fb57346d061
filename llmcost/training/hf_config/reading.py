"""Reading a ``config.json``: bounded, strict JSON (no NaN, no deep nesting, no huge files)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping, NoReturn

from .fields import _error, _short

#: largest config accepted [bytes] (1 MB = 1e6 bytes; real config.json files are < 10 kB)
MAX_CONFIG_BYTES = 1_000_000
#: deepest nesting of objects/lists accepted (real files nest 3 levels)
MAX_DEPTH = 32


# ---------------------------------------------------------------------------- reading JSON

def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"{text} is beyond the float range")
    return x


def _check_tree(value: Any, where: str) -> None:
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


def read_config(text_or_bytes_or_dict: str | bytes | bytearray | memoryview | Mapping[str, Any], *,
                name: str = "config.json") -> dict:
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


def read_config_file(path: str | os.PathLike[str]) -> dict:
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
