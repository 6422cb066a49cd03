import numpy as np
import pytest

from sfl_sim.channel import OutagePolicy


def test_rate_threshold():
    policy = OutagePolicy(min_rate_bps=1e6)
    np.testing.assert_array_equal(policy.is_outage([0.5e6, 1e6, 2e6]), [True, False, False])
    assert policy.active


def test_snr_threshold_and_rate_threshold_combine():
    policy = OutagePolicy(min_rate_bps=1e5, min_snr_db=0.0)
    out = policy.is_outage([1e6, 1e6, 1e4], snr_db=[-3.0, 5.0, 5.0])
    np.testing.assert_array_equal(out, [True, False, True])


def test_snr_threshold_needs_snr():
    with pytest.raises(ValueError, match="snr_db"):
        OutagePolicy(min_snr_db=3.0).is_outage([1e6])


def test_default_policy_never_fails():
    policy = OutagePolicy()
    assert not policy.active
    assert not policy.is_outage([0.0, 1.0]).any()


def test_next_action_retransmits_until_attempts_run_out():
    policy = OutagePolicy(min_rate_bps=1.0, max_attempts=3, on_outage="retransmit")
    outage = np.array([True, False])
    assert list(policy.next_action(outage, attempt=1)) == ["retransmit", "deliver"]
    assert list(policy.next_action(outage, attempt=2)) == ["retransmit", "deliver"]
    assert list(policy.next_action(outage, attempt=3)) == ["drop", "deliver"]


def test_drop_policy_drops_at_once():
    policy = OutagePolicy(min_rate_bps=1.0, on_outage="drop")
    assert list(policy.next_action([True], attempt=1)) == ["drop"]


def test_the_default_policy_is_named_for_what_it_does():
    """One attempt and ``drop``: the default drops a payload at its first outage, and says so."""
    policy = OutagePolicy(min_rate_bps=1.0)
    assert (policy.on_outage, policy.max_attempts) == ("drop", 1)
    assert list(policy.next_action([True], attempt=1)) == ["drop"]


@pytest.mark.parametrize("kwargs, match", [
    ({"on_outage": "retransmit"},
     r"^on_outage: got 'retransmit' .*allowed: drop .*or retransmit with max_attempts >= 2"),
    ({"on_outage": "retransmit", "max_attempts": 1}, r"^on_outage: got 'retransmit'"),
    ({"max_attempts": 3}, r"^max_attempts: got 3 .*allowed: 1 with on_outage: drop.*or on_outage: retransmit"),
    ({"on_outage": "drop", "max_attempts": 5}, r"^max_attempts: got 5"),
])
def test_a_name_that_says_something_else_than_what_happens_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OutagePolicy(min_rate_bps=1.0, **kwargs)


@pytest.mark.parametrize("kwargs, match", [({"min_rate_bps": -1.0}, r"min_rate_bps.*-1"),
                                           ({"max_attempts": 0}, r"max_attempts.*0"),
                                           ({"on_outage": "ignore"}, r"on_outage.*drop, retransmit.*ignore"),
                                           ({"min_snr_db": float("nan")}, "min_snr_db")])
def test_bad_parameters_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OutagePolicy(**kwargs)


def test_negative_rate_raises():
    with pytest.raises(ValueError, match="rate_bps"):
        OutagePolicy(min_rate_bps=1.0).is_outage([-1.0])
