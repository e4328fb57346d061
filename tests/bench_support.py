"""The benchmark scripts (benchmarks/*.py) as modules, for the tests that check them."""

import functools
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def benchmark_module(name: str):
    """``benchmarks/<name>.py`` loaded once per test run."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def validate_module():
    return benchmark_module("validate")


@functools.cache
def _whole_runs():
    import io
    buf = io.StringIO()
    res = validate_module().whole_runs(out=buf)
    return res, buf.getvalue()


def whole_runs_table():
    """``validate.whole_runs`` (every published whole run reviewed as published) and what it
    printed, computed once per test run for the tests that read it."""
    res, printed = _whole_runs()
    return res.copy(), printed
