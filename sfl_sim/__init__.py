"""sfl-sim: a wireless-network co-simulator for split federated learning.

From Python (the ``sfl-sim`` command is a layer over the same functions, :mod:`sfl_sim.api`)::

    import sfl_sim

    results = sfl_sim.run("cellular_100clients", overrides={"rounds": 5}, output_dir="runs/try")
    results[0].metrics.plot(x="sim_time_s", y="test_accuracy")

The public names below are imported when first used (PEP 562), so ``import sfl_sim`` is cheap
and loads neither torch nor pandas; :func:`run` and the others import what they need.
"""
from __future__ import annotations

import importlib
from typing import Any

# public name -> submodule that defines it
_EXPORTS = {
    "load_scenario": "api",
    "check": "api",
    "run": "api",
    "retime": "api",
    "plan_study": "api",
    "run_study": "api",
    "report": "api",
    "plot": "api",
    "channel_report": "api",
    "trace_report": "api",
    "RunResult": "api",
    "PlannedRun": "api",
    "Plan": "api",
    "Report": "api",
    "ChannelReport": "api",
    "Scenario": "config",
    "UserError": "errors",
    "ConfigError": "errors",
    "RunDirError": "errors",
    "CheckpointError": "errors",
    "RunFailed": "errors",
    "ScenarioNotFoundError": "scenario_files",
    "DatasetNotFoundError": "data.datasets",
}

__all__ = ["__version__", *_EXPORTS]

# The import names of the layout before the one-package restructure answer for one release.
from sfl_sim._legacy_imports import install as _install_legacy_imports  # noqa: E402

_install_legacy_imports()


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from sfl_sim.catalog import package_version  # the installed distribution's, i.e. pyproject's

        value: Any = package_version()
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    else:
        raise AttributeError(f"module 'sfl_sim' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
