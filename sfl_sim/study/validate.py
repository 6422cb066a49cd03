"""A study's grid points checked as their runs' builds would check them, before any run starts.

:func:`sfl_sim.study.plan.expand` validates each grid point's scenario model; a
:class:`PointChecker` then makes the checks a run's build (:mod:`sfl_sim.runs.build`) makes
before training that need neither the data set nor the model: the cell with every channel
component, HARQ and the outage rule (built and deployed, so a constructor's or a deployment's
refusal shows, e.g. an inter-site distance that puts the neighbours on top of the cell), the
availability model (prepared: a trace file is read), the capability trace, the device energy
model, the compressors, the parameters of the algorithm, model, data set, partitioner, client
selector and optimizer against their parameter models, and an algorithm's client counts
(``concurrency``, ``buffer_size``, ``trigger_clients``) against the point's clients
(:func:`sfl_sim.runs.build.check_cohort_limits`).

A grid multiplies a few distinct settings of each component, so each distinct component spec
is checked once (keyed by its JSON): a 64,000-point grid over ``cell.rate`` and ``energy``
builds each rate and energy model once, not 64,000 times.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sfl_sim.config import ComponentSpec, Scenario
from sfl_sim.errors import ConfigError
from sfl_sim.kit.checks import one_line

__all__ = ["PointChecker"]


def _key(*parts: Any) -> str:
    return json.dumps(parts, sort_keys=True, default=str)


def _dump(spec: Any) -> Any:
    return None if spec is None else spec.model_dump(mode="json")


class PointChecker:
    """The build checks of many grid points, each distinct component spec checked once.

    Examples
    --------
    >>> checker = PointChecker()            # doctest: +SKIP
    >>> for cfg in points: checker.check(cfg)  # ConfigError for the first refused component
    """

    def __init__(self) -> None:
        self._passed: set[str] = set()

    def _once(self, key: str, check: Callable[..., Any], *args: Any) -> None:
        if key not in self._passed:
            check(*args)
            self._passed.add(key)  # only a passed check is kept: a refused one raises every time

    def check(self, cfg: Scenario) -> None:
        """Every check of :mod:`sfl_sim.runs.build` short of loading data and training, for each
        algorithm of the validated scenario ``cfg``.

        Raises
        ------
        ConfigError
            One line naming the scenario field, the value and what is allowed.
        """
        from sfl_sim.algorithms import ALGORITHMS
        from sfl_sim.clients.energy import ENERGY
        from sfl_sim.clients.selection import SELECTORS
        from sfl_sim.data import DATASETS, PARTITIONERS
        from sfl_sim.models import MODELS
        from sfl_sim.optim import OPTIMIZERS
        from sfl_sim.runs import build

        seed, count = cfg.seed, cfg.clients.count
        self._once(_key("cell", _dump(cfg.cell), count, seed), _check_cell, cfg)
        self._once(_key("availability", _dump(cfg.clients.availability), count, seed), build.build_availability, cfg)
        capability = cfg.clients.capability
        if capability is not None:
            self._once(_key("capability", capability.path, capability.format), _check_capability, cfg)
        if cfg.energy.enabled:
            self._once(_key("energy", _dump(cfg.energy.device)), build.component, ENERGY, cfg.energy.device,
                       "energy.device")
        for field, registry, spec in (("data.dataset", DATASETS, cfg.data.dataset),
                                      ("data.partition", PARTITIONERS, cfg.data.partition),
                                      ("model", MODELS, cfg.model)):
            self._once(_key(field, _dump(spec)), _check_params, registry, spec, field)
        for index, algo in enumerate(cfg.algorithms):
            field = f"algorithms[{index}]"
            self._once(_key("algorithm", _dump(algo)), _check_params, ALGORITHMS, algo, field)
            # concurrency, buffer_size and trigger_clients against this point's clients
            self._once(_key("cohort", _dump(algo), field, count, cfg.clients.participation,
                            build.selected_per_round(cfg)), build.check_cohort_limits, cfg, algo, field)
            selection = build.selection_spec(cfg, ALGORITHMS.get(algo.name))  # the name passed above
            self._once(_key("selection", _dump(selection)), _check_params, SELECTORS, selection, "clients.selection")
            optimizer = cfg.training_for(algo.label).optimizer
            self._once(_key("optimizer", _dump(optimizer)), _check_params, OPTIMIZERS, optimizer, "training.optimizer")
            given = cfg.compression_for(algo.label)
            self._once(_key("compression", {p: None if e is None else [e[0], _dump(e[1])] for p, e in given.items()}),
                       build.build_compressors, given)


def _check_cell(cfg: Scenario) -> None:
    from sfl_sim.runs import build

    cell = build.build_cell(cfg)
    build.build_harq(cfg, cell)
    build.build_scheduler(cfg)
    build.build_outage(cfg)


def _check_capability(cfg: Scenario) -> None:
    from sfl_sim.clients.availability.capability import read_capability

    spec = cfg.clients.capability
    assert spec is not None
    try:
        read_capability(spec.path, spec.format)
    except ValueError as exc:  # TraceError: the line names the file
        raise ConfigError(f"clients.capability: {one_line(exc)}") from None


def _check_params(registry: Any, spec: ComponentSpec, field: str) -> None:
    """``spec``'s name resolves and its parameters pass the class's parameter model, in the
    words :func:`sfl_sim.runs.build.component` uses (the class is not built: a data set or a
    model would load data or allocate weights)."""
    from sfl_sim.kit.protocols import ComponentProtocolError
    from sfl_sim.kit.registry import ComponentParameterError, ComponentValueError, UnknownComponentError

    try:
        registry.check_values(spec.name, registry.get(spec.name), spec.params)
    except UnknownComponentError as exc:
        raise ConfigError(f"{field}.name: {exc}") from None
    except ComponentValueError as exc:
        raise ConfigError(f"{field}.{exc.detail}, for {spec.name}") from None
    except (ComponentParameterError, ComponentProtocolError) as exc:
        raise ConfigError(f"{field}: {one_line(exc)}") from None
