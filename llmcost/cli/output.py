"""The text view of a result (a readable table) and the checks and encoding of its JSON."""

from __future__ import annotations

import math

import numpy as np

from .. import _validate as v
from .ladder import _ladder_table
from .plan import _plan_table


def _fmt(x) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{x:,}"
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if x == 0:
            return "0"
        if abs(x) >= 1e6 or abs(x) < 1e-3:
            return f"{x:.4g}"
        return f"{x:,.4g}" if abs(x) >= 1 else f"{x:.4g}"
    return str(x)


def _table(result: dict) -> str:
    if "layouts" in result and isinstance(result["layouts"], list) and "evaluated" in result:
        return _plan_table(result)
    if "rungs" in result:
        return _ladder_table(result)
    lines = []
    width = max(len(k) for k in result)
    for k, x in result.items():
        if isinstance(x, dict):
            lines.append(f"{k}:")
            w2 = max(len(str(kk)) for kk in x) if x else 0
            for kk, xx in x.items():
                if isinstance(xx, dict):
                    # one level deeper (storage's by_mode and tiers): key=value, formatted
                    shown = ", ".join(f"{k3}={_fmt(x3)}" for k3, x3 in xx.items())
                elif isinstance(xx, list):
                    shown = ", ".join(_fmt(e) for e in xx)
                else:
                    shown = _fmt(xx)
                lines.append(f"  {str(kk):<{w2}}  {shown}")
        elif isinstance(x, list):
            lines.append(f"{k}:" + ("" if x else " none"))
            for item in x:
                if isinstance(item, dict) and "message" in item:
                    lines.append(f"  [{item['level']}] {item['message']}")
                else:
                    lines.append(f"  {item}")
        else:
            lines.append(f"{k:<{width}}  {_fmt(x)}")
    return "\n".join(lines)


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def _finite(obj, where="result"):
    """Refuse to print NaN/inf as a result: they mean a bug or inputs out of range, not an
    answer. The error names the result key, so the user knows which figure blew up."""
    if isinstance(obj, dict):
        for key, val in obj.items():
            _finite(val, key)
    elif isinstance(obj, (list, tuple)):
        for val in obj:
            _finite(val, where)
    elif isinstance(obj, (float, np.floating)) and not math.isfinite(obj):
        raise v.InputError("result", f"the inputs give a non-finite {where} ({float(obj)}); "
                                     "check their ranges")
