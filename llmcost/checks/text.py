"""Bounded reading of a measurement file: the readers see text, never a path or a process."""

from __future__ import annotations

import math

from .. import _validate as v

#: largest file read [bytes]: nccl-tests of every collective at every size is ~100 kB, a
#: training log of a month at one line per step a few tens of MB
MAX_BYTES = 64_000_000
#: longest line kept whole [characters]; a Megatron iteration line is ~400
MAX_LINE_CHARS = 20_000


def as_text(data, param: str) -> str:
    """Text from ``str`` or ``bytes`` (UTF-8), bounded in size, without NUL bytes.

    Parameters
    ----------
    data : str or bytes
        The file's content.
    param : str
        The name the error carries (the CLI flag's dest, e.g. ``"nccl_tests"``).
    """
    if isinstance(data, (bytes, bytearray)):
        if len(data) > MAX_BYTES:
            raise v.InputError(param, f"file of {len(data):,} bytes is larger than the "
                                      f"{MAX_BYTES:,} bytes read")
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise v.InputError(param, f"not UTF-8 text (byte {e.start}): expected the "
                                      "tool's text output") from None
    if not isinstance(data, str):
        raise v.InputError(param, f"expected text, got {type(data).__name__}")
    if len(data) > MAX_BYTES:
        raise v.InputError(param, f"file of {len(data):,} characters is larger than "
                                  f"the {MAX_BYTES:,} read")
    if "\x00" in data:
        line = data.count("\n", 0, data.index("\x00")) + 1
        raise v.InputError(param, f"line {line}: a NUL byte: expected text output, "
                                  "not a binary file")
    return data


def read_file(path: str, param: str) -> str:
    """The text of ``path`` via :func:`as_text`; an unreadable path is an InputError."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as e:
        raise v.InputError(param, f"cannot read {param.replace('_', '-')} file {path!r}: "
                                  f"{e.strerror or e}") from None
    return as_text(data, param)


def lines(text: str):
    """(line number from 1, line) pairs, each line cut to :data:`MAX_LINE_CHARS`."""
    for i, line in enumerate(text.splitlines(), 1):
        yield i, line[:MAX_LINE_CHARS]


def short(s: str, n: int = 60) -> str:
    """A line quoted in an error: at most n characters."""
    s = s.strip()
    return repr(s if len(s) <= n else s[:n] + "...")


def nonnegative_number(tok: str) -> float | None:
    """``tok`` read as a finite number >= 0, else None (text, NaN, infinity or below zero);
    the reader that asked says which line and field was not one."""
    try:
        x = float(tok)
    except ValueError:
        return None
    return x if math.isfinite(x) and x >= 0 else None
