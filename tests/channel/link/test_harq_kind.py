"""HARQ as a component kind: the registry (none, harq), typed parameters, the protocol and the
conformance check, which passes the built-ins and catches broken plug-ins."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sfl_sim.channel import (
    CHANNEL_KINDS,
    HARQ,
    PROTOCOLS,
    REGISTRIES,
    Harq,
    HarqSend,
    McsTableRate,
    NoHarq,
    ShannonRate,
    check_component,
)
from sfl_sim.channel.protocols import HarqModel
from sfl_sim.kit.registry import ComponentParameterError, ComponentValueError


def test_harq_is_a_kind_of_the_channel_table_held_by_the_engine_not_the_cell():
    kind = next(k for k in CHANNEL_KINDS if k.name == "harq")
    assert kind.registry is HARQ and REGISTRIES["harq"] is HARQ and PROTOCOLS["harq"] is HarqModel
    assert (kind.field, kind.cell_argument, kind.implied_name) == ("cell.harq", None, "harq")
    assert HARQ.names() == ["harq", "none"] and HARQ.supplied == ("rate",)
    assert HARQ.get("harq") is Harq and HARQ.get("none") is NoHarq


def test_registry_builds_with_the_rate_model_first_and_checks_typed_parameters():
    rate = McsTableRate(mapping="bler")
    h = HARQ.build("harq", rate, mode="sampled", max_transmissions=2, harq_rtt_s=0.004, chase_combining=True)
    assert isinstance(h, Harq) and h.rate is rate and (h.params.mode, h.params.max_transmissions) == ("sampled", 2)
    for params, words in [({"max_transmissions": 0}, ["max_transmissions", "0", "an integer >= 1 and <= 64"]),
                          ({"max_transmissions": 2.5}, ["max_transmissions", "2.5"]),
                          ({"mode": "average"}, ["mode", "average", "expected, sampled"]),
                          ({"harq_rtt_s": -1.0}, ["harq_rtt_s", "-1"]),
                          ({"chase_combining": 1}, ["chase_combining", "true or false"])]:
        with pytest.raises(ComponentValueError) as info:
            HARQ.build("harq", rate, **params)
        assert all(w in str(info.value) for w in words), (params, str(info.value))
        assert "\n" not in str(info.value)
    with pytest.raises(ComponentParameterError, match="unknown 'max_transmission' .*did you mean 'max_transmissions'"):
        HARQ.build("harq", rate, max_transmission=4)
    with pytest.raises(ValueError, match="rate: HARQ needs an MCS rate model"):
        HARQ.build("harq", ShannonRate())


def test_no_harq_sends_once_at_the_link_rate():
    h = HARQ.build("none", ShannonRate())
    assert h.send(8e5, 2e6, -3.0) == HarqSend(0.4, 0.0, True, 1)
    first, mean = h.slot_block([0.0, 1e6], [10.0, 10.0])
    assert np.isnan(first[0]) and np.isnan(mean[0]) and (first[1], mean[1]) == (0.0, 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("name, params", [
    ("none", {}), ("harq", {}), ("harq", {"mode": "sampled"}), ("harq", {"mode": "sampled", "max_transmissions": 1}),
    ("harq", {"chase_combining": True, "max_transmissions": 8, "harq_rtt_s": 0.0, "slot_s": 1.25e-4}),
])
@pytest.mark.parametrize("mapping", ["gap", "bler"])
def test_builtins_pass_conformance(name, params, mapping):
    report = check_component("harq", HARQ.build(name, McsTableRate(mapping=mapping), **params))
    assert "time >= payload / rate" in report["checks"] and "same seed, same result" in report["checks"]
    assert "delivery probability non-decreasing in SINR (within 0.25)" in report["checks"]


class _Good:
    """A minimal correct plug-in: each block fails with probability p(SINR), at most 3 copies."""

    max_transmissions = 3

    def __init__(self, rate=None):
        self.rate = rate

    def _p(self, sinr_db):
        return 1.0 / (1.0 + math.exp(sinr_db - 5.0))

    def send(self, payload_bits, rate_bps, sinr_db, rng=None):
        n = max(1, math.ceil(payload_bits / max(rate_bps * 1e-3, 24.0)))
        fails = rng.random((n, self.max_transmissions)) < self._p(sinr_db)
        copies = np.minimum(np.argmin(fails, axis=1) + 1, self.max_transmissions)
        copies[fails.all(axis=1)] = self.max_transmissions
        extra = float(copies.sum() - n)
        return HarqSend((n + extra) * payload_bits / (n * rate_bps) + (copies.max() - 1) * 8e-3, extra,
                        not bool(fails.all(axis=1).any()), n)

    def slot_block(self, rate_bps, sinr_db):
        r, s = np.asarray(rate_bps, float), np.asarray(sinr_db, float)
        p = 1.0 / (1.0 + np.exp(s - 5.0))
        mean = (1 - p ** self.max_transmissions) / (1 - p)
        return np.where(r > 0, p, np.nan), np.where(r > 0, mean, np.nan)


def test_a_correct_plug_in_passes():
    assert check_component("harq", _Good())["kind"] == "harq"


def test_conformance_catches_broken_plug_ins():
    class ForgetsTheCopies(_Good):  # times one copy per block whatever was resent
        def send(self, payload_bits, rate_bps, sinr_db, rng=None):
            sent = super().send(payload_bits, rate_bps, sinr_db, rng)
            return HarqSend(payload_bits / rate_bps, sent.retransmissions, sent.delivered, sent.blocks)

    with pytest.raises(AssertionError, match=r"harq component .*ForgetsTheCopies.*'time >= the copies' air time'"):
        check_component("harq", ForgetsTheCopies())

    class Unseeded(_Good):  # draws from its own generator, not the harq stream
        def send(self, payload_bits, rate_bps, sinr_db, rng=None):
            return super().send(payload_bits, rate_bps, sinr_db, np.random.default_rng())

    with pytest.raises(AssertionError, match="'same seed, same result'"):
        check_component("harq", Unseeded())

    class Inverted(_Good):  # the error rate rises with the SINR
        def _p(self, sinr_db):
            return 1.0 / (1.0 + math.exp(5.0 - sinr_db))

    with pytest.raises(AssertionError, match="'delivery probability non-decreasing in SINR"):
        check_component("harq", Inverted())

    class TooManyCopies(_Good):  # counts more retransmissions than max_transmissions allows
        def send(self, payload_bits, rate_bps, sinr_db, rng=None):
            sent = super().send(payload_bits, rate_bps, sinr_db, rng)
            extra = sent.retransmissions + 5 * sent.blocks
            return HarqSend(sent.time_s + 5 * payload_bits / rate_bps, extra, sent.delivered, sent.blocks)

    with pytest.raises(AssertionError, match="'transmissions per block <= max_transmissions'"):
        check_component("harq", TooManyCopies())

    class NoReport:
        def send(self, payload_bits, rate_bps, sinr_db, rng=None):
            return HarqSend(payload_bits / rate_bps, 0.0, True, 1)

    with pytest.raises(AssertionError, match=r"protocol HarqModel.*slot_block"):
        check_component("harq", NoReport())


def test_expected_mode_draws_nothing():
    h = Harq(McsTableRate(mapping="bler"))
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    assert h.send(1e6, 1e7, 12.0, rng) == h.send(1e6, 1e7, 12.0, None)
    assert rng.bit_generator.state == state


def test_the_parameter_schema_of_harq_is_typed():
    from sfl_sim.kit.params import params_schema

    props = params_schema(Harq, HARQ.supplied)["properties"]
    assert "rate" not in props  # the engine's, not a scenario key
    assert (props["max_transmissions"]["type"], props["max_transmissions"]["minimum"],
            props["max_transmissions"]["maximum"]) == ("integer", 1, 64)
    assert props["mode"]["enum"] == ["expected", "sampled"] and props["chase_combining"]["type"] == "boolean"
    assert (props["harq_rtt_s"]["minimum"], props["harq_rtt_s"]["maximum"]) == (0.0, 1.0)
