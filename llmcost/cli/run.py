"""``main``: parse, check the flags, run the subcommand, print its answer or one error line."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

from .check import _check_text
from .common import _with_model_notes
from .compare import _compare_text
from .flags import _check_flags, _check_ranges, _extreme, _named
from .listing import LIST_TEXT_COLUMNS
from .output import _finite, _json_default, _table
from .parser import build_parser
from .predict import _predict_notes
from .review import _review_text


def _print_result(a, result) -> None:
    """Print a command's result: JSON with --json, else its text view."""
    if a.json:
        print(json.dumps(result, default=_json_default))
    elif a.command == "review" and "compared" in result:
        print("\n\n".join(f"scenario {label}\n" + _review_text(r)
                           for label, r in result["scenarios"].items()))
    elif a.command == "review":
        print(_review_text(result))
    elif a.command == "check":
        print(_check_text(result))
    elif a.command == "compare":
        print(_compare_text(result))
    elif a.command == "mfu" and any(f["code"] == "above-peak" for f in result["findings"]):
        # above the peak is no utilization: the text says so, never a figure over 100%
        u = result["effective_utilization"]
        print(_table({**result, "effective_utilization": f"above the peak ({u:.3g} x): "
                                                         "check the figures"}))
    elif a.command == "list":
        import pandas as pd
        df = pd.DataFrame(result["rows"])
        # the text view: the columns that identify a row (--json has every column)
        keep = LIST_TEXT_COLUMNS.get(result["table"])
        if keep:
            df = df[[c for c in keep if c in df]]
        print(df.to_string(index=False))
    else:
        text = _table({k: x for k, x in result.items() if k != "breakdown_s"}) \
            if a.command == "predict" else _table(result)
        print(text + (_predict_notes(result) if a.command == "predict" else ""))


def main(argv=None) -> int:
    parser = build_parser()
    a, typed = None, []
    try:
        a = parser.parse_args(argv)
        typed = _check_flags(parser, a)
        # numpy would print a RuntimeWarning and carry on with inf/nan or a wrapped integer;
        # raised, it becomes the one error line below (valid inputs never trigger these)
        with np.errstate(over="raise", divide="raise", invalid="raise"):
            result = _with_model_notes(a, a.func(a))
        _check_ranges(a, typed)
        _finite(result)
    except ValueError as e:  # InputError included
        msg = _named(" ".join(str(e).split()), e, a, typed)
        if len(msg) > 500:
            msg = msg[:500] + "..."
        print(f"llmcost: error: {msg}", file=sys.stderr)
        return 2
    except FloatingPointError as e:
        print(f"llmcost: error: the inputs take the arithmetic out of range ({e}); check "
              f"{_extreme(a, typed)}", file=sys.stderr)
        return 2
    except (ArithmeticError, MemoryError) as e:   # OverflowError, ZeroDivisionError
        print(f"llmcost: error: a value is too large to compute with ({type(e).__name__}); "
              f"check {_extreme(a, typed)}", file=sys.stderr)
        return 2
    try:
        _print_result(a, result)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader closed the pipe (`llmcost review ... | head`): stop quietly, as Unix
        # tools do, with stdout pointed at devnull so the interpreter's final flush is silent
        # (the recipe of the Python signal module's documentation, "Note on SIGPIPE")
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return 0
