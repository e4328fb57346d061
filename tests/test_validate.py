"""The shared input checks: whole numbers given as ints take a shorter path than floats, with
the same answers and the same errors."""

import numpy as np
import pytest

from llmcost import _validate as v


@pytest.mark.parametrize("ints", [
    7, np.int64(7), np.array([1, 2, 8]), np.array([[1], [4096]], dtype=np.int32),
    np.array([3, 5], dtype=np.uint8)])
def test_integer_of_ints_equals_integer_of_the_same_floats(ints):
    got = v.integer("tp", ints)
    want = v.integer("tp", np.asarray(ints, dtype=float))
    assert got.dtype == np.int64 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    if isinstance(ints, np.ndarray):
        # a new array: a formula that writes into it leaves the caller's alone
        assert not np.shares_memory(got, ints)


@pytest.mark.parametrize("ints, floats, minimum, maximum", [
    (np.array([1, 0, 2]), np.array([1.0, 0.0, 2.0]), 1, None),         # below the minimum
    (np.array([4, 9]), np.array([4.0, 9.0]), 1, 8),                     # above the maximum
    (2 ** 60, float(2 ** 60), 1, None),                                 # beyond 2**53
    (np.array([2 ** 63 - 1], dtype=np.uint64), np.array([2.0 ** 63]), 1, None),
])
def test_integer_refuses_ints_as_it_refuses_floats(ints, floats, minimum, maximum):
    with pytest.raises(v.InputError) as got:
        v.integer("tp", ints, minimum, maximum)
    with pytest.raises(v.InputError) as want:
        v.integer("tp", floats, minimum, maximum)
    assert got.value.param == "tp"
    assert str(got.value).split(", got")[0] == str(want.value).split(", got")[0]


@pytest.mark.parametrize("value, message", [
    (True, "tp must be a whole number, got True"),
    (np.array([1.0, 2.5]), "tp must be a whole number, got 2.5"),
    (0, "tp must be in [1, 9.0072e+15], got 0"),
])
def test_integer_names_the_parameter_and_the_value(value, message):
    with pytest.raises(v.InputError, match=None) as e:
        v.integer("tp", value)
    assert str(e.value) == message


@pytest.mark.parametrize("names", [
    np.array(["none", "full", "selective"]), np.array([["none"], ["full"]], dtype=object),
    np.array([], dtype=object)])
def test_choices_returns_an_array_of_allowed_names_as_given(names):
    got = v.choices("recompute", names, ("none", "selective", "full"))
    assert got.shape == names.shape and (got == names).all()


@pytest.mark.parametrize("names, first_bad", [
    (np.array(["none", "half", "sometimes"], dtype=object), "'half'"),
    (np.array([["full"], ["FULL"]]), "'FULL'"),
    (np.array(["none", 3], dtype=object), "3"),
])
def test_choices_names_the_first_name_not_allowed(names, first_bad):
    # the name as the user typed it, never numpy's repr (np.str_('FULL'))
    with pytest.raises(v.InputError) as e:
        v.choices("recompute", names, ("none", "selective", "full"))
    assert e.value.param == "recompute" and str(e.value).endswith(f"got {first_bad}")
