import numpy as np
import pytest

from sfl_sim.channel import ALLOCATORS, EqualAllocation


def test_equal_allocation_splits_evenly_and_sums_to_band():
    shares = EqualAllocation().allocate_hz(10e6, None, np.ones(4))
    np.testing.assert_allclose(shares, [2.5e6] * 4)
    assert shares.sum() == pytest.approx(10e6)


def test_equal_allocation_ignores_payload_and_gain_values():
    a = EqualAllocation().allocate_hz(3e6, np.array([1.0, 1e9, 5.0]), np.array([1e-9, 1e-12, 1e-10]))
    np.testing.assert_allclose(a, [1e6, 1e6, 1e6])


def test_equal_allocation_with_no_clients_is_empty():
    assert EqualAllocation().allocate_hz(1e6, None, np.zeros(0)).shape == (0,)


def test_negative_total_bandwidth_raises():
    with pytest.raises(ValueError, match="total_bandwidth_hz"):
        EqualAllocation().allocate_hz(-5.0, None, np.ones(2))


def test_registered_as_equal():
    assert isinstance(ALLOCATORS.create("equal"), EqualAllocation)
