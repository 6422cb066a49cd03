import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from sfl_sim import channel
from sfl_sim.channel import REGISTRIES, check_component

TRACES = Path(__file__).parent / "large_scale" / "mobility_traces"

# Built-ins that need parameters to exist, and the client counts they accept.
PARAMS = {("placement", "fixed_distances"): {"distances_m": [50.0, 120.0, 400.0]},
          ("interference", "noise_rise"): {"noise_rise_db": 3.0}, ("interference", "first_tier"): {"activity": 0.5},
          ("harq", "harq"): {"rate": channel.McsTableRate(mapping="bler")},
          ("harq", "none"): {"rate": channel.ShannonRate()},
          ("mobility", "trace"): {"path": str(TRACES / "sample.fcd.xml")}}
COUNTS = {("placement", "fixed_distances"): (3,), ("mobility", "trace"): (1, 4)}
VARIANTS = [("pathloss", "tr38901_uma", {"los": "los"}), ("pathloss", "tr38901_umi", {"los": "nlos"}),
            ("pathloss", "tr38901_uma", {"ut_height_m": 20.0}), ("shadowing", "lognormal", {"sigma_db": "model"}),
            ("shadowing", "correlated", {"sigma_db": 5.0, "decorrelation_m": 20.0}),
            ("rate", "shannon", {"noise_figure_db": 7.0, "max_spectral_efficiency_bps_per_hz": 6.0}),
            ("harq", "harq", {"rate": channel.McsTableRate(mapping="gap"), "mode": "sampled", "max_transmissions": 1}),
            ("harq", "harq", {"rate": channel.McsTableRate(mapping="bler"), "mode": "sampled",
                              "chase_combining": True, "harq_rtt_s": 0.004, "slot_s": 5e-4}),
            ("harq", "harq", {"rate": channel.McsTableRate(table="cqi_table2", mapping="bler"), "max_transmissions": 8,
                              "chase_combining": True})]


def builtins():
    for kind, registry in REGISTRIES.items():
        for name in registry.names():
            yield kind, name, PARAMS.get((kind, name), {})
    yield from VARIANTS


@pytest.mark.slow
@pytest.mark.parametrize("kind, name, params", list(builtins()), ids=lambda x: str(x))
def test_every_builtin_passes_conformance(kind, name, params):
    component = REGISTRIES[kind].create(name, **params)
    report = check_component(kind, component, client_counts=COUNTS.get((kind, name), (1, 4, 25)))
    assert report["kind"] == kind and report["checks"]


def test_registries_cover_every_kind():
    assert set(REGISTRIES) == {"placement", "pathloss", "shadowing", "fading", "rate", "allocation", "mobility",
        "power_control", "interference", "harq", "scheduler", "network", "handover"}
    assert channel.FADING.kind == "fading" and channel.MOBILITY.kind == "mobility"


def test_broken_components_fail_with_a_clear_message():
    class NegativeFading:
        def sample_power_gain(self, n, rng):
            return -rng.exponential(1.0, n)

    with pytest.raises(AssertionError, match=r"fading component .*NegativeFading.*'power gains >= 0'"):
        check_component("fading", NegativeFading())

    class ShrinkingLoss:
        def loss_db(self, distance_m):
            return 200.0 - 10 * np.log10(np.asarray(distance_m, dtype=float))

    with pytest.raises(AssertionError, match="non-decreasing"):
        check_component("pathloss", ShrinkingLoss())

    class GreedyAllocator:
        def allocate_hz(self, total_bandwidth_hz, payload_bits, gain_linear):
            return np.full(np.size(gain_linear), float(total_bandwidth_hz))

    with pytest.raises(AssertionError, match="sum <= band"):
        check_component("allocation", GreedyAllocator())

    class Unseeded:
        def sample_power_gain(self, n, rng):
            return np.random.default_rng().exponential(1.0, n)

    with pytest.raises(AssertionError, match="same seed"):
        check_component("fading", Unseeded())


def test_unknown_kind_raises():
    with pytest.raises(ValueError, match=r"kind must be one of .*pathloss.*antenna"):
        check_component("antenna", object())


def test_component_from_a_file_outside_the_package(tmp_path, monkeypatch):
    (tmp_path / "my_channel_models.py").write_text(textwrap.dedent(
        """
        import numpy as np

        class TwoSlope:
            '''Two-slope path loss: exponent 2 up to breakpoint_m, 4 after.'''

            def __init__(self, breakpoint_m=120.0):
                self.breakpoint_m = breakpoint_m

            def loss_db(self, distance_m):
                d = np.asarray(distance_m, dtype=float)
                pl0 = 40.0
                near = pl0 + 20 * np.log10(d)
                far = pl0 + 20 * np.log10(self.breakpoint_m) + 40 * np.log10(d / self.breakpoint_m)
                return np.where(d <= self.breakpoint_m, near, far)

        class HalfRician:
            def __init__(self, k=2.0):
                self.k = k

            def sample_power_gain(self, n, rng):
                nu, s = np.sqrt(self.k / (self.k + 1)), np.sqrt(0.5 / (self.k + 1))
                return (nu + s * rng.standard_normal(n)) ** 2 + (s * rng.standard_normal(n)) ** 2
        """
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    pathloss = channel.PATHLOSS.create("my_channel_models:TwoSlope", breakpoint_m=80.0)
    assert check_component("pathloss", pathloss)["checks"]
    fading = channel.FADING.create("my_channel_models:HalfRician")
    assert check_component("fading", fading)["checks"]
    monkeypatch.delitem(sys.modules, "my_channel_models", raising=False)


def test_protocol_is_checked_first_and_names_the_missing_method():
    class Misnamed:
        def loss(self, distance_m):
            return distance_m

    with pytest.raises(AssertionError) as info:
        check_component("pathloss", Misnamed())
    message = str(info.value)
    assert "fails check 'protocol PathLoss'" in message
    assert "lacks loss_db(distance_m)" in message


def test_a_backwards_validity_range_fails():
    class Backwards:
        valid_distance_m = (500.0, 50.0)

        def loss_db(self, distance_m):
            return 100.0 + 30.0 * np.log10(np.asarray(distance_m, dtype=float))

    with pytest.raises(AssertionError, match="valid_distance_m is"):
        check_component("pathloss", Backwards())


def test_the_sweep_stays_inside_the_validity_range():
    class NearFieldNonsense:
        """Negative loss below 100 m, but it says so."""

        valid_distance_m = (100.0, float("inf"))

        def loss_db(self, distance_m):
            return 40.0 * np.log10(np.asarray(distance_m, dtype=float) / 50.0)

    report = check_component("pathloss", NearFieldNonsense())
    assert "valid_distance_m is (low_m, high_m) with 0 <= low_m < high_m" in report["checks"]


def test_stateful_component_state_round_trip_is_checked():
    report = check_component("mobility", channel.RandomWaypointMobility(pause_s=2.0))
    assert {"state_dict is plain data", "loaded state continues the trajectory"} <= set(report["checks"])

    class ForgetfulWalker(channel.RandomDirectionMobility):
        def load_state_dict(self, state):  # drops the headings: the continuation differs
            self.reset()

    with pytest.raises(AssertionError, match="loaded state continues the trajectory"):
        check_component("mobility", ForgetfulWalker(speed_m_per_s=10.0))

    class OpaqueState:
        def sample_power_gain(self, n, rng):
            return rng.exponential(1.0, n)

        def state_dict(self):
            return {"rng": np.random.default_rng(0)}

        def load_state_dict(self, state):
            pass

    with pytest.raises(AssertionError, match="state_dict is plain data"):
        check_component("fading", OpaqueState())
