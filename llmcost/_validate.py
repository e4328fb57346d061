"""Input checks shared by every model function.

Each check takes the parameter's *name* so the error a user sees says which input is wrong,
what it was and what is allowed. Checks accept scalars or numpy arrays; for an array the
message quotes the first offending element. They return float (or int) numpy arrays so the
formulas that follow can broadcast without further conversion.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np


class InputError(ValueError):
    """A ValueError that names the offending parameter (``.param``) for CLIs and apps."""

    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param


def _first_bad(arr: np.ndarray, bad: np.ndarray):
    value = arr[bad].flat[0] if arr.ndim else arr.item()
    if isinstance(value, (float, np.floating)) and float(value).is_integer() and np.isfinite(value):
        return int(value)
    return value.item() if hasattr(value, "item") else value


def as_float(name: str, value) -> np.ndarray:
    """Convert to a float array, rejecting non-numbers, NaN and infinities."""
    if isinstance(value, (str, bytes)) or value is None:
        raise InputError(name, f"{name} must be a number, got {value!r}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(name, f"{name} must be a number, got {value!r}") from None
    except OverflowError:
        # a Python int beyond float's range (~1.8e308): quote its size, not its 400 digits
        digits = len(str(abs(value))) if isinstance(value, int) else None
        got = f"a {digits}-digit number" if digits else "a number beyond 1.8e308"
        raise InputError(name, f"{name} must be a finite number, got {got}") from None
    bad = ~np.isfinite(arr)
    if bad.any():
        raise InputError(name, f"{name} must be a finite number, got {_first_bad(arr, bad)}")
    return arr


def in_range(name: str, value, low=None, high=None, *, low_inclusive=True,
             high_inclusive=True) -> np.ndarray:
    """Check ``low <= value <= high`` (ends inclusive or not) and return a float array."""
    arr = as_float(name, value)
    bad = np.zeros(arr.shape, dtype=bool)
    if low is not None:
        bad |= (arr < low) if low_inclusive else (arr <= low)
    if high is not None:
        bad |= (arr > high) if high_inclusive else (arr >= high)
    if bad.any():
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        span = ("[" if low_inclusive and low is not None else "(") + f"{lo}, {hi}" + (
            "]" if high_inclusive and high is not None else ")")
        raise InputError(name, f"{name} must be in {span}, got {_first_bad(arr, bad)}")
    return arr


def check_fields(group, check, names: Iterable[str], **options) -> None:
    """Check the named fields of a frozen dataclass ``group`` with ``check`` (e.g.
    :func:`positive`, given ``options``) and store the checked arrays in their place: the
    ``__post_init__`` of a group whose inputs are checked once, at construction."""
    for name in names:
        object.__setattr__(group, name, check(name, getattr(group, name), **options))


def checked(check, **named) -> tuple:
    """The arguments ``named`` each passed through ``check`` (e.g. :func:`positive`) under
    its own name, in the order given: an entry point's checks in one statement, the first
    bad argument named in the error."""
    return tuple(check(name, value) for name, value in named.items())


def positive(name: str, value) -> np.ndarray:
    """Finite and > 0."""
    return in_range(name, value, 0, None, low_inclusive=False)


def nonnegative(name: str, value) -> np.ndarray:
    """Finite and >= 0."""
    return in_range(name, value, 0, None)


def fraction(name: str, value, *, allow_zero=False, allow_one=True) -> np.ndarray:
    """A share in (0, 1] by default; ends adjustable."""
    return in_range(name, value, 0, 1, low_inclusive=allow_zero, high_inclusive=allow_one)


#: largest whole number a float holds exactly (2**53); above it "whole" means nothing and
#: the int64 cast overflows soon after (2**63)
MAX_INTEGER = 2 ** 53


def integer(name: str, value, minimum: int = 1, maximum: int | None = None) -> np.ndarray:
    """Whole numbers in [``minimum``, ``maximum``] (given as int or float; ``maximum`` at
    most 2**53), returned as an int64 array."""
    if isinstance(value, (bool, np.bool_)):
        raise InputError(name, f"{name} must be a whole number, got {value!r}")
    top = MAX_INTEGER if maximum is None else maximum
    if isinstance(value, (int, np.integer, np.ndarray)) and np.asarray(value).dtype.kind in "iu":
        # already whole (the arrays a Layout keeps): only the range is left to check; out of
        # it, the float path below words the error
        ints = np.array(value, dtype=np.int64)
        if not ((ints < minimum) | (ints > top)).any():
            return ints
    arr = in_range(name, value, minimum, top)
    frac = arr != np.round(arr)
    if frac.any():
        raise InputError(name, f"{name} must be a whole number, got {_first_bad(arr, frac)}")
    return arr.astype(np.int64)


def _first_remainder(value, by):
    """First (value, by) pair with value % by != 0, or None."""
    val, div = np.asarray(value), np.asarray(by)
    shape = np.broadcast(val, div).shape
    bad = np.broadcast_to(val % div != 0, shape)
    if not bad.any():
        return None
    return int(np.broadcast_to(val, shape)[bad].flat[0]), int(np.broadcast_to(div, shape)[bad].flat[0])


def divides(name: str, value, target_name: str, target) -> None:
    """Require ``target % value == 0`` elementwise (e.g. TP divides the head count)."""
    bad = _first_remainder(target, value)
    if bad:
        raise InputError(name, f"{name} must divide {target_name} ({bad[0]}), got {name}={bad[1]}")


def multiple_of(name: str, value, of_name: str, of) -> None:
    """Require ``value % of == 0`` elementwise (e.g. gpus a multiple of tp x pp x cp)."""
    bad = _first_remainder(value, of)
    if bad:
        raise InputError(name, f"{name} must be a multiple of {of_name} ({bad[1]}), got {name}={bad[0]}")


def choice(name: str, value, allowed: Iterable[str]) -> str:
    """One of a fixed set of named variants."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise InputError(name, f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def choices(name: str, value, allowed: Iterable[str]) -> np.ndarray:
    """Named variants given as one name or an array of names (for vectorized layouts)."""
    allowed = tuple(allowed)
    if isinstance(value, str):
        choice(name, value, allowed)
        return np.asarray(value)
    arr = np.asarray(value)
    if arr.dtype.kind not in "UO":
        raise InputError(name, f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    try:
        # a set of the names present: about five times faster than np.isin on object arrays
        if set(arr.ravel().tolist()) <= set(allowed):
            return arr
    except TypeError:       # unhashable elements: np.isin below names the first
        pass
    bad = ~np.isin(arr, allowed)
    if bad.any():
        raise InputError(name, f"{name} must be one of {', '.join(map(repr, allowed))}, "
                               f"got {_first_bad(arr, bad)!r}")
    return arr


def boolean(name: str, value) -> np.ndarray:
    """True/False (or arrays of them); numbers other than 0/1 are refused."""
    arr = np.asarray(value)
    if arr.dtype == bool:
        return arr
    if arr.dtype.kind in "iuf" and np.isin(arr, (0, 1)).all():
        return arr.astype(bool)
    raise InputError(name, f"{name} must be true or false, got {value!r}")


def result(value):
    """Return a 0-d array as a numpy scalar so scalar inputs give scalar outputs."""
    arr = np.asarray(value)
    return arr[()] if arr.ndim == 0 else arr
