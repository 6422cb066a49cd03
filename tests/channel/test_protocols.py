"""Protocols of the channel component kinds and the checks built on them."""
from pathlib import Path

import numpy as np
import pytest

import sfl_sim.channel.protocols
from sfl_sim import channel
from sfl_sim.channel import PROTOCOLS, REGISTRIES
from sfl_sim.channel.protocols import (
    DiscPlacement,
    LosAwarePathLoss,
    LosDecorrelation,
    RangedPathLoss,
    ShadowingDecorrelationSource,
    ShadowingSigmaSource,
    SiteShadowing,
    SiteShadowingUpdate,
    SnrRate,
    Stateful,
)
from sfl_sim.kit.protocols import (
    ComponentProtocolError,
    check_protocol,
    describe_members,
    missing_members,
    protocol_members,
)


def test_every_kind_has_a_protocol_and_a_registry_that_carries_it():
    assert set(PROTOCOLS) == set(REGISTRIES) == {
        "placement", "pathloss", "shadowing", "fading", "rate", "allocation", "mobility",
        "power_control", "interference", "harq", "scheduler", "network", "handover"}
    for kind, registry in REGISTRIES.items():
        assert registry.protocol is PROTOCOLS[kind]


@pytest.mark.parametrize("kind", sorted(PROTOCOLS))
def test_every_builtin_component_satisfies_its_protocol(kind):
    registry = REGISTRIES[kind]
    for name in registry.names():
        cls = registry.get(name)
        required = {"fixed_distances": ([10.0],), "first_tier": (0.5,), "noise_rise": (3.0,),
                    "harq": (channel.McsTableRate(),),
                    "trace": (str(Path(__file__).parent / "large_scale" / "mobility_traces" / "sample.movements"),)}
        obj = cls(*required.get(name, ()))
        assert isinstance(obj, PROTOCOLS[kind]), name
        assert missing_members(obj, PROTOCOLS[kind]) == []


def test_optional_capabilities_of_the_builtins():
    uma, macro = channel.TR38901UMa(), channel.TR36814Macro()
    assert isinstance(uma, LosAwarePathLoss) and isinstance(uma, LosDecorrelation)
    assert isinstance(uma, sfl_sim.channel.protocols.LosSampler)
    assert not isinstance(macro, LosAwarePathLoss) and not isinstance(macro, LosDecorrelation)
    for model in (uma, macro, channel.FreeSpace(), channel.LogDistance()):
        assert isinstance(model, ShadowingSigmaSource) and isinstance(model, ShadowingDecorrelationSource)
        assert isinstance(model, RangedPathLoss)
    assert isinstance(channel.CorrelatedShadowing(), SiteShadowing)
    assert isinstance(channel.CorrelatedShadowing(), SiteShadowingUpdate)
    assert isinstance(channel.ShannonRate(), SnrRate)
    assert isinstance(channel.UniformDiscPlacement(), DiscPlacement)
    assert not isinstance(channel.FixedDistancePlacement([10.0]), DiscPlacement)
    assert isinstance(channel.RandomWaypointMobility(), Stateful)
    assert isinstance(channel.RandomDirectionMobility(), Stateful)
    assert not isinstance(channel.StaticMobility(), Stateful)


def test_protocol_members_lists_methods_and_attributes():
    assert list(protocol_members(PROTOCOLS["pathloss"])) == ["loss_db"]
    assert set(protocol_members(LosAwarePathLoss)) == {"loss_db", "los_probability"}
    assert protocol_members(RangedPathLoss) == {"valid_distance_m": None}
    assert describe_members(PROTOCOLS["rate"]) == "rate_bps(bandwidth_hz, tx_power_w, gain_linear, noise_psd_w_per_hz)"


def test_missing_members_names_what_is_absent_or_not_callable():
    class HalfLos:
        los_probability = 0.5  # not callable

        def loss_db(self, distance_m, los=None):
            return distance_m

    assert missing_members(HalfLos(), LosAwarePathLoss) == ["los_probability"]
    assert missing_members(object(), Stateful) == ["state_dict", "load_state_dict"]


def test_missing_members_of_a_class_skips_data_members():
    class NoRange:
        def loss_db(self, distance_m):
            return distance_m

    assert missing_members(NoRange, RangedPathLoss) == []
    assert missing_members(NoRange(), RangedPathLoss) == ["valid_distance_m"]


def test_check_protocol_error_is_one_line_naming_field_class_member_and_protocol():
    class Wrong:
        def loss(self, distance_m):
            return distance_m

    with pytest.raises(ComponentProtocolError) as info:
        check_protocol(Wrong(), PROTOCOLS["pathloss"], "cell.pathloss")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("cell.pathloss: ")
    assert "Wrong lacks loss_db(distance_m)" in message
    assert "sfl_sim.channel.protocols.PathLoss" in message
    assert isinstance(info.value, TypeError)


def test_check_protocol_returns_a_conforming_component():
    model = channel.TR36814Macro()
    assert check_protocol(model, PROTOCOLS["pathloss"], "cell.pathloss") is model


def test_protocols_are_exported_from_channel_and_the_checks_only_from_simkit():
    assert channel.PROTOCOLS is PROTOCOLS
    assert issubclass(ComponentProtocolError, TypeError)
    for name in ("check_protocol", "missing_members", "ComponentProtocolError", "Registry", "check_params"):
        assert not hasattr(channel, name), name
    assert np.all([isinstance(p, type) for p in PROTOCOLS.values()])
