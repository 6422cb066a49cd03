import sys
import textwrap

import pytest

import sfl_sim.kit.protocols
import sfl_sim.kit.registry
from sfl_sim import channel
from sfl_sim.channel import PATHLOSS, PLACEMENTS
from sfl_sim.kit.registry import Registry, UnknownComponentError


def test_unknown_name_lists_known_names_and_suggests_close_match():
    with pytest.raises(UnknownComponentError) as info:
        PATHLOSS.get("tr36814_marco")
    message = str(info.value)
    assert "tr36814_macro" in message
    assert "did you mean 'tr36814_macro'" in message
    assert "known names" in message


def test_unknown_component_error_is_a_value_error():
    with pytest.raises(ValueError):
        PLACEMENTS.get("hexagonal")


def test_module_class_spec_loads_class_outside_package(tmp_path, monkeypatch):
    (tmp_path / "my_pathloss_model.py").write_text(textwrap.dedent(
        """
        import numpy as np

        class FreeSpace:
            def __init__(self, exponent=2.0):
                self.exponent = exponent

            def loss_db(self, distance_m):
                return 10 * self.exponent * np.log10(np.asarray(distance_m, dtype=float))
        """
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    model = PATHLOSS.create("my_pathloss_model:FreeSpace", exponent=3.0)
    assert type(model).__name__ == "FreeSpace"
    assert model.loss_db(10.0) == pytest.approx(30.0)
    monkeypatch.delitem(sys.modules, "my_pathloss_model", raising=False)


def test_create_with_bad_parameter_name_raises_value_error():
    with pytest.raises(ValueError, match="sigma"):
        channel.SHADOWING.create("lognormal", sigma=3.0)


def test_each_kind_has_its_own_registry():
    kinds = {r.kind for r in (channel.PLACEMENTS, channel.PATHLOSS, channel.SHADOWING, channel.RATES,
                              channel.ALLOCATORS)}
    assert kinds == {"placement", "pathloss", "shadowing", "rate", "allocation"}
    assert all(isinstance(r, Registry) for r in (channel.PLACEMENTS, channel.RATES))


def test_entry_point_registers_a_component(monkeypatch):
    """A third-party package registers through the entry-point group sfl_sim.<kind>."""
    from importlib import metadata

    from sfl_sim.kit import registry as registry_module

    class ThirdPartyPathLoss:
        def loss_db(self, distance_m):
            return distance_m

    ep = metadata.EntryPoint(name="third_party", value="x:y", group="sfl_sim.pathloss_ep_test")
    monkeypatch.setattr(metadata.EntryPoint, "load", lambda self: ThirdPartyPathLoss)
    monkeypatch.setattr(registry_module.metadata, "entry_points",
                        lambda group: [ep] if group == "sfl_sim.pathloss_ep_test" else [])
    reg = registry_module.Registry("pathloss_ep_test")
    assert "third_party" in reg.names()
    assert reg.get("third_party") is ThirdPartyPathLoss


# ---------------------------------------------------------------------- a component must be a class
@pytest.mark.parametrize("spec, what", [("os:system", "a function"), ("os:path", "a module"),
                                        ("math:pi", "a float object")])
def test_module_spec_naming_anything_but_a_class_is_refused(spec, what):
    with pytest.raises(UnknownComponentError) as info:
        PATHLOSS.get(spec)
    message = str(info.value)
    assert f"pathloss {spec!r} is {what}, not a class" in message
    assert "loss_db(distance_m)" in message
    assert "\n" not in message


def test_module_spec_naming_a_class_without_the_protocol_is_refused_before_construction(tmp_path, monkeypatch):
    (tmp_path / "my_not_a_pathloss.py").write_text(textwrap.dedent(
        """
        CONSTRUCTED = []

        class Harmful:
            def __init__(self, **kwargs):
                CONSTRUCTED.append(kwargs)
        """
    ))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(sfl_sim.kit.protocols.ComponentProtocolError, match="Harmful lacks loss_db"):
        PATHLOSS.build("my_not_a_pathloss:Harmful", cmd="rm -rf /")
    import my_not_a_pathloss

    assert my_not_a_pathloss.CONSTRUCTED == []
    monkeypatch.delitem(sys.modules, "my_not_a_pathloss", raising=False)


def test_register_refuses_a_function():
    reg = Registry("pathloss_fn_test")
    with pytest.raises(TypeError, match="only classes"):
        reg.register("f")(lambda: None)


def test_every_builtin_of_every_channel_registry_is_a_class():
    import inspect

    for registry in channel.REGISTRIES.values():
        for name in registry.names():
            assert inspect.isclass(registry.get(name)), (registry.kind, name)


def test_entry_point_naming_a_function_is_refused(monkeypatch):
    from importlib import metadata

    from sfl_sim.kit import registry as registry_module

    def factory():
        return None

    ep = metadata.EntryPoint(name="factory", value="x:y", group="sfl_sim.pathloss_ep_fn")
    monkeypatch.setattr(metadata.EntryPoint, "load", lambda self: factory)
    monkeypatch.setattr(registry_module.metadata, "entry_points",
                        lambda group: [ep] if group == "sfl_sim.pathloss_ep_fn" else [])
    reg = registry_module.Registry("pathloss_ep_fn")
    with pytest.raises(UnknownComponentError, match="'factory' is a function, not a class"):
        reg.get("factory")


def test_registry_without_protocol_accepts_any_class():
    reg = Registry("thing_test")
    reg.register("dict")(dict)
    assert reg.protocol is None
    assert reg.build("dict", a=1) == {"a": 1}


def test_build_checks_the_built_instance_against_the_protocol():
    reg = Registry("pathloss_inst_test", protocol=channel.PROTOCOLS["pathloss"])

    @reg.register("hollow")
    class Hollow:
        def __init__(self):
            self.loss_db = None  # shadows the method: the instance offers no loss_db

        def loss_db(self, distance_m):  # noqa: F811  (the class looks fine)
            return distance_m

    with pytest.raises(sfl_sim.kit.protocols.ComponentProtocolError, match="Hollow lacks loss_db"):
        reg.build("hollow")


# ---------------------------------------------------------------------- parameter checks
def test_misspelt_parameter_lists_accepted_ones_with_did_you_mean():
    with pytest.raises(sfl_sim.kit.registry.ComponentParameterError) as info:
        PATHLOSS.build("log_distance", exponnt=2.0)
    message = str(info.value)
    assert message.startswith("pathloss 'log_distance' rejected parameters: unknown 'exponnt' "
                              "(did you mean 'exponent'?); accepted: exponent, reference_distance_m")
    assert info.value.unknown == ["exponnt"]
    assert "carrier_frequency_hz" in info.value.accepted
    assert "\n" not in message


def test_check_params_runs_before_the_constructor():
    calls = []

    class Model:
        def __init__(self, alpha=1.0):
            calls.append(alpha)

    with pytest.raises(sfl_sim.kit.registry.ComponentParameterError,
                       match="unknown 'alfa' \\(did you mean 'alpha'\\?\\)"):
        sfl_sim.kit.registry.check_params(Model, {"alfa": 2.0}, "algorithm", "my:Model")
    assert calls == []
    sfl_sim.kit.registry.check_params(Model, {"alpha": 2.0}, "algorithm")


def test_check_params_accepts_any_name_with_kwargs_constructor():
    class Open:
        def __init__(self, a, **kwargs):
            pass

    sfl_sim.kit.registry.check_params(Open, {"a": 1, "anything": 2}, "model")


def test_check_params_reports_missing_required_and_counts_positional_args():
    class Needs:
        def __init__(self, input_shape, num_classes, width=4):
            pass

    with pytest.raises(sfl_sim.kit.registry.ComponentParameterError, match="missing required parameter 'num_classes'"):
        sfl_sim.kit.registry.check_params(Needs, {"width": 2}, "model", "needs", args=((1, 28, 28),))
    sfl_sim.kit.registry.check_params(Needs, {"width": 2}, "model", "needs", args=((1, 28, 28), 10))


def test_check_params_unknown_name_without_close_match_has_no_hint():
    with pytest.raises(sfl_sim.kit.registry.ComponentParameterError) as info:
        sfl_sim.kit.registry.check_params(channel.TR36814Macro, {"zzz": 1}, "pathloss", "tr36814_macro")
    assert "did you mean" not in str(info.value)
    assert "accepted: none" in str(info.value)


def test_component_parameter_error_is_a_value_error():
    with pytest.raises(ValueError):
        PLACEMENTS.create("uniform_disc", radius=3.0)
