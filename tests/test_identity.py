"""benchmarks/identity.py, the check that a refactoring changes no output: it must see every
kind of change (a number moved, a label changed, a key gone or new) and nothing else."""

from bench_support import benchmark_module

identity = benchmark_module("identity")


def test_flatten_keeps_every_number_and_label_under_its_path():
    got = identity.flatten({"a": [1, 2.5, True], "b": {"c": "x", "d": None},
                            "e": float("nan")}, "r", {})
    assert got == {"r/a/0": 1.0, "r/a/1": 2.5, "r/a/2": 1, "r/b/c": "x", "r/e": "nan"}


def test_compare_reports_each_kind_of_change_and_the_largest_relative_difference():
    before = {"k/x": 100.0, "k/y": 1.0, "k/label": "TP8", "k/gone": 3.0}
    after = {"k/x": 100.0 * (1 + 3e-9), "k/y": 1.0, "k/label": "TP4", "k/new": 4.0}
    n, worst, diffs = identity.compare(before, after, rtol=1e-9)
    assert n == 2
    assert abs(worst - 3e-9) < 1e-12
    assert len(diffs) == 4
    kinds = sorted(d.split(":")[0].split(" ")[0] for d in diffs)
    assert kinds == ["differs", "differs", "gone", "new"]


def test_compare_passes_what_differs_within_the_tolerance():
    n, worst, diffs = identity.compare({"k": 1.0}, {"k": 1.0 + 1e-12}, rtol=1e-9)
    assert (n, diffs) == (1, []) and worst < 1e-11
