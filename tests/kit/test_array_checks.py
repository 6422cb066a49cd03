"""check_array and check_finite: their quick path (two reductions) accepts and refuses exactly what
the elementwise rule does, with the same one-line message."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sfl_sim.channel.checks import check_finite
from sfl_sim.kit.checks import check_array

VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e-300, -1e-300]))
ARRAYS = hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4), elements=VALUES)
MINIMA = st.sampled_from([0.0, -1.0, 1.0, -math.inf])


def _elementwise_bad(arr: np.ndarray, minimum: float, strict: bool) -> bool:
    return bool(np.any(~np.isfinite(arr) | ((arr <= minimum) if strict else (arr < minimum))))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(arr=ARRAYS, minimum=MINIMA, strict=st.booleans())
def test_check_array_refuses_exactly_the_elementwise_rule(arr, minimum, strict) -> None:
    if _elementwise_bad(arr, minimum, strict):
        with pytest.raises(ValueError, match=r"^x: got .*; allowed: finite numbers"):
            check_array("x", arr, minimum=minimum, strict=strict)
    else:
        got = check_array("x", arr, minimum=minimum, strict=strict)
        assert got.shape == arr.shape and np.array_equal(got, arr)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(arr=ARRAYS, minimum=st.one_of(st.none(), MINIMA))
def test_check_finite_refuses_exactly_the_elementwise_rule(arr, minimum) -> None:
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(arr) if minimum is None else ~(np.isfinite(arr) & (arr >= minimum))
    if np.any(bad):
        with pytest.raises(ValueError, match="^rate R gave a rate_bps that is not finite"):
            check_finite(arr, "rate R", "rate_bps", minimum=minimum)
    else:
        check_finite(arr, "rate R", "rate_bps", minimum=minimum)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(arr=ARRAYS, data=st.data())
def test_check_finite_checks_only_where_asked(arr, data) -> None:
    where = data.draw(hnp.arrays(np.bool_, arr.shape))
    if np.any(~np.isfinite(arr) & where):
        with pytest.raises(ValueError, match="^the link budget gave a SNR"):
            check_finite(arr, "the link budget", "SNR (linear)", where=where)
    else:
        check_finite(arr, "the link budget", "SNR (linear)", where=where)


def test_the_message_names_the_first_bad_value() -> None:
    with pytest.raises(ValueError, match=r"client index 2\)$"):
        check_finite(np.array([1.0, 2.0, math.nan, math.inf]), "rate R", "rate_bps")
    with pytest.raises(ValueError) as info:
        check_array("bandwidth_hz", np.array([1.0, -2.0, math.nan]), minimum=0.0)
    assert "-2" in str(info.value) and "\n" not in str(info.value)
