"""Reading a run directory in today's shape, without torch: the part of
:class:`~sfl_sim.runs.rundir.files.RunDir` that :mod:`sfl_sim.analysis` uses too.

:class:`RunFiles` owns the paths of one run directory and gives its text files as today's code
expects them, whatever version of the simulator wrote them: the logs in today's columns, the
scenario with the fields added since, and why a file added later is absent.  What older run
directories lack is known in :mod:`sfl_sim.runs.rundir.upgrade` alone; this class is how every
reader reaches it.  :class:`~sfl_sim.runs.rundir.files.RunDir` (the run's own reads and writes,
the checkpoint and the resume) builds on it; the analysis layer, which may not import torch or
the engine, reads through it directly.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from sfl_sim.runs.rundir import upgrade
from sfl_sim.runs.rundir.schema import (
    CLIENTS_COLUMNS,
    CLIENTS_FILE,
    ROUNDS_COLUMNS,
    ROUNDS_FILE,
    SCENARIO_FILE,
    SLOTS_COLUMNS,
    SLOTS_FILE,
)

__all__ = ["RunFiles", "LOG_COLUMNS", "summary_in_todays_shape", "with_sections_added_later", "sections_added_later"]

#: The logs whose columns grew after runs were already being made, with today's columns: read
#: through :meth:`RunFiles.log_text` (a column the file lacks is empty).
LOG_COLUMNS: dict[str, tuple[str, ...]] = {ROUNDS_FILE: tuple(ROUNDS_COLUMNS), CLIENTS_FILE: tuple(CLIENTS_COLUMNS),
                                           SLOTS_FILE: tuple(SLOTS_COLUMNS)}


def summary_in_todays_shape(data: dict[str, Any]) -> dict[str, Any]:
    """A ``summary.json`` mapping as read, in today's shape (:func:`sfl_sim.runs.rundir.upgrade.summary`):
    the one way the analysis reads a summary it has parsed itself."""
    return upgrade.summary(data)


class RunFiles:
    """The files of one run directory, read in today's shape (no torch).

    Parameters
    ----------
    path : Path or str
        The run directory.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def file(self, name: str) -> Path:
        """The path of the run's file ``name`` (a name of :mod:`sfl_sim.runs.rundir.schema`)."""
        return self.path / name

    def text(self, name: str) -> str:
        """The text of the run's file ``name``, line ends as ``\\n``.

        Raises
        ------
        OSError
            If it cannot be read.
        """
        with open(self.file(name), encoding="utf-8", newline="") as fh:
            return fh.read().replace("\r\n", "\n")

    def log_text(self, name: str) -> str | None:
        """The log ``name`` (a key of :data:`LOG_COLUMNS`) as CSV text in today's columns
        (:func:`sfl_sim.runs.rundir.upgrade.log_text`: a column the file lacks is empty, but
        ``slots.csv``'s and ``clients.csv``'s ``cell``, 0 in a run whose ``scenario.yaml`` has no
        ``cell.network``: :func:`sfl_sim.runs.rundir.upgrade.log_fill`); None when the run has no such file."""
        if not self.file(name).is_file():
            return None
        fill = (upgrade.log_fill(name, self._has_network()) if name in upgrade.LOGS_WITH_CELL_ADDED_LATER
                else None)
        return upgrade.log_text(self.text(name), LOG_COLUMNS[name], fill)

    def _has_network(self) -> bool:
        """Whether the run's ``scenario.yaml`` sets ``cell.network`` (True when it cannot be read:
        then nothing is assumed of its cells)."""
        try:
            scenario = yaml.safe_load(self.text(SCENARIO_FILE))
        except (OSError, yaml.YAMLError):
            return True
        cell = scenario.get("cell") if isinstance(scenario, Mapping) else None
        return not isinstance(cell, Mapping) or cell.get("network") is not None

    @staticmethod
    def why_missing(name: str) -> str:
        """Why a run may lack the file ``name`` (:func:`sfl_sim.runs.rundir.upgrade.missing_file`)."""
        return upgrade.missing_file(name)

    @staticmethod
    def scenario_today(raw: Mapping[str, Any], continued_by: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A run's ``scenario.yaml`` as parsed, in today's shape (:func:`sfl_sim.runs.rundir.upgrade.scenario`)."""
        return upgrade.scenario(raw, continued_by)


def sections_added_later() -> dict[str, Any]:
    """The scenario sections added after runs were already being made, at their defaults
    (:func:`sfl_sim.runs.rundir.upgrade.sections_added_later`)."""
    return upgrade.sections_added_later()


def with_sections_added_later(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """``scenario`` with every field of :func:`sections_added_later` it lacks, the parameters a
    default component there leaves unstated included, as the default: a run older than a
    section compares as one that states its default."""
    return upgrade.fill_defaults(scenario, upgrade.sections_added_later())
