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
