"""sfl_sim.catalog: every registered component with its summary and parameters; the package version."""
from __future__ import annotations

from importlib import metadata

import pytest

from sfl_sim import catalog
from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.channel import REGISTRIES


def test_every_registry_of_the_project_has_a_kind():
    found = catalog.registries()
    assert list(found) == list(catalog.KINDS)
    for kind, registry in REGISTRIES.items():  # every channel kind, by the channel package's own table
        assert found[kind] is registry
    assert found["algorithm"] is ALGORITHMS


@pytest.mark.parametrize("text, kinds", [
    ("algorithm", ["algorithm"]), ("algorithms", ["algorithm"]), ("Models", ["model"]),
    ("pathloss", ["pathloss"]), ("placements", ["placement"]), ("channel", list(REGISTRIES)),
    (None, list(catalog.KINDS)),
])
def test_kinds_are_accepted_singular_or_plural(text, kinds):
    assert catalog.resolve_kinds(text) == kinds


def test_an_unknown_kind_is_one_line_naming_it_and_the_allowed_kinds():
    with pytest.raises(catalog.UnknownKindError) as info:
        catalog.resolve_kinds("algos")
    message = str(info.value)
    assert "\n" not in message and "'algos'" in message
    assert all(kind in message for kind in catalog.KINDS)


def test_entries_are_every_registered_name_with_its_docstring_line():
    for kind, registry in catalog.registries().items():
        found = catalog.entries(kind)
        assert [e.name for e in found] == registry.names()
        for e in found:
            doc = registry.get(e.name).__doc__
            assert e.summary == (doc.strip().splitlines()[0].strip() if doc else "")


def test_parameters_show_defaults_and_leave_out_what_the_simulator_supplies():
    scala = {e.name: e for e in catalog.entries("algorithm")}["scala"]
    assert "concatenate=True" in scala.params and "label_prior='batch'" in scala.params
    assert not any(p.startswith("setup") for p in scala.params)
    alexnet = {e.name: e for e in catalog.entries("model")}["alexnet"]
    assert not any(p.startswith(("input_shape", "num_classes")) for p in alexnet.params)
    assert "dropout=0.5" in alexnet.params
    quantity = {e.name: e for e in catalog.entries("partitioner")}["quantity"]
    assert quantity.params == ["alpha", "distinct_classes=True"]  # alpha required: no default
    free_space = {e.name: e for e in catalog.entries("pathloss")}["free_space"]
    assert free_space.params == ["carrier_frequency_hz=2e9"]


def test_parameters_of_a_plain_class():
    class Thing:
        """A thing."""

        def __init__(self, a, b=1.5, *rest, c="x", **more):
            pass

    assert catalog.parameters(Thing) == ["a", "b=1.5", "*rest", "c='x'", "**more"]
    assert catalog.parameters(Thing, skip=("a",)) == ["b=1.5", "*rest", "c='x'", "**more"]


def test_listing_shows_every_component_of_the_kinds_asked_for():
    text = catalog.listing("channel")
    for kind, registry in REGISTRIES.items():
        assert f"{kind} ({len(registry.names())})" in text
        for name in registry.names():
            assert f"  {name} " in text
    assert "algorithm (" not in text


def test_package_version_is_the_installed_distribution_version():
    assert catalog.package_version() == metadata.version("sfl-sim")
