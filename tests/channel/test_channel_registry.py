import ast
import pathlib
import sys
import textwrap

import pytest

import channel
from channel import PATHLOSS, PLACEMENTS, Registry, UnknownComponentError


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


def test_channel_imports_only_numpy_scipy_and_stdlib():
    allowed = {"numpy", "scipy", "channel"} | set(sys.stdlib_module_names)
    package_dir = pathlib.Path(channel.__file__).parent
    for path in package_dir.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = [node.module.split(".")[0]]
            else:
                continue
            assert set(roots) <= allowed, f"{path.name} imports {roots}"


def test_entry_point_registers_a_component(monkeypatch):
    """A third-party package registers through the entry-point group sfl_sim.<kind>."""
    from importlib import metadata

    from channel import registry as registry_module

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
