"""Import names of the layout before the one-package restructure, kept for one release.

Until then the project had four top-level packages (``sfl_sim``, ``channel``, ``simkit``,
``analysis``) and 25 modules at the root of ``sfl_sim``; every module now lives in one package
whose folders are the layers.  Code written against the old names (a plug-in doing
``from sfl_sim.algorithms.splitfed import SplitFedV1``, a scenario naming
``channel.pathloss:LogDistance``) keeps working once ``sfl_sim`` is imported, with one
:class:`FutureWarning` per old name: a finder at the end of :data:`sys.meta_path` answers each
old name with the module that now holds it (the same module object, so ``isinstance`` holds).

The finder goes first on :data:`sys.meta_path` (else ``channel.cell`` would be found again under
the old package's path, as a second copy of the module), but answers an old top-level name only
when nothing on the path provides it: a user's own ``channel.py`` wins, and ``python -c "import
channel"`` fails in an environment where ``sfl_sim`` was never imported.  This module goes in the
next release.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

__all__ = ["OLD_NAMES", "install"]

#: Old module name -> the module that holds its contents now (a tuple: split among several).
#: ``sfl_sim.study`` is left out: the name is now the package of studies (its module is ``.plan``).
OLD_NAMES: dict[str, str | tuple[str, ...]] = {
    'analysis': 'sfl_sim.analysis',
    'analysis.classes': 'sfl_sim.analysis.classes',
    'analysis.comparison': 'sfl_sim.analysis.comparison',
    'analysis.energy': 'sfl_sim.analysis.energy',
    'analysis.energy_data': 'sfl_sim.analysis.energy_data',
    'analysis.figures': 'sfl_sim.analysis.figures',
    'analysis.plots': 'sfl_sim.analysis.plots',
    'analysis.report': 'sfl_sim.analysis.report',
    'analysis.runs': 'sfl_sim.analysis.runs',
    'analysis.schema': 'sfl_sim.runs.rundir.schema',
    'analysis.stats': 'sfl_sim.analysis.stats',
    'analysis.study_data': 'sfl_sim.analysis.study_data',
    'analysis.tables': 'sfl_sim.analysis.tables',
    'analysis.tta': 'sfl_sim.analysis.tta',
    'channel': 'sfl_sim.channel',
    'channel.allocation': 'sfl_sim.channel.link.allocation',
    'channel.bler': 'sfl_sim.channel.link.bler',
    'channel.cell': 'sfl_sim.channel.cell',
    'channel.conformance': 'sfl_sim.channel.conformance',
    'channel.cqi_tables': 'sfl_sim.channel.link.cqi_tables',
    'channel.fading': 'sfl_sim.channel.link.fading',
    'channel.geometry': 'sfl_sim.channel.large_scale.geometry',
    'channel.harq': 'sfl_sim.channel.link.harq',
    'channel.interference': 'sfl_sim.channel.link.interference',
    'channel.kinds': 'sfl_sim.channel.kinds',
    'channel.limits': 'sfl_sim.channel.limits',
    'channel.link_rate': 'sfl_sim.channel.link.link_rate',
    'channel.mobility': 'sfl_sim.channel.large_scale.mobility',
    'channel.outage': 'sfl_sim.channel.link.outage',
    'channel.pathloss': 'sfl_sim.channel.large_scale.pathloss',
    'channel.power_control': 'sfl_sim.channel.link.power_control',
    'channel.protocols': 'sfl_sim.channel.protocols',
    'channel.rate': 'sfl_sim.channel.link.rate',
    'channel.shadowing': 'sfl_sim.channel.large_scale.shadowing',
    'channel.tr38901': 'sfl_sim.channel.large_scale.tr38901',
    'channel.units': 'sfl_sim.channel.units',
    'sfl_sim.algorithms.besplit': 'sfl_sim.algorithms.split.besplit',
    'sfl_sim.algorithms.besplit_terms': 'sfl_sim.algorithms.terms.besplit',
    'sfl_sim.algorithms.compressed': 'sfl_sim.algorithms._exec.compressed',
    'sfl_sim.algorithms.cs_sfl': 'sfl_sim.algorithms.split.cs_sfl',
    'sfl_sim.algorithms.execution': 'sfl_sim.algorithms._exec.execution',
    'sfl_sim.algorithms.fedavg': 'sfl_sim.algorithms.fl.fedavg',
    'sfl_sim.algorithms.fedcbs': 'sfl_sim.algorithms.fl.fedcbs',
    'sfl_sim.algorithms.fedconcat': 'sfl_sim.algorithms.fl.fedconcat',
    'sfl_sim.algorithms.feddecorr': 'sfl_sim.algorithms.fl.feddecorr',
    'sfl_sim.algorithms.feddyn': 'sfl_sim.algorithms.fl.feddyn',
    'sfl_sim.algorithms.fedlc': 'sfl_sim.algorithms.fl.fedlc',
    'sfl_sim.algorithms.fedlogit': 'sfl_sim.algorithms.fl.fedlogit',
    'sfl_sim.algorithms.fedntd': 'sfl_sim.algorithms.fl.fedntd',
    'sfl_sim.algorithms.fedprox': 'sfl_sim.algorithms.fl.fedprox',
    'sfl_sim.algorithms.fedvls': 'sfl_sim.algorithms.fl.fedvls',
    'sfl_sim.algorithms.fl_terms': 'sfl_sim.algorithms.terms.fl',
    'sfl_sim.algorithms.flop_meter': 'sfl_sim.algorithms._exec.flop_meter',
    'sfl_sim.algorithms.losses': 'sfl_sim.algorithms.terms.logit_adjustment',
    'sfl_sim.algorithms.minibatch_sfl': 'sfl_sim.algorithms.split.minibatch_sfl',
    'sfl_sim.algorithms.scala': 'sfl_sim.algorithms.split.scala',
    'sfl_sim.algorithms.scala_pe': 'sfl_sim.algorithms.split.scala_pe',
    'sfl_sim.algorithms.server_modes': 'sfl_sim.algorithms.split.server_modes',
    'sfl_sim.algorithms.sfl_local_loss': 'sfl_sim.algorithms.split.sfl_local_loss',
    'sfl_sim.algorithms.split_base': 'sfl_sim.algorithms.split.base',
    'sfl_sim.algorithms.split_messages': 'sfl_sim.algorithms.split.messages',
    'sfl_sim.algorithms.splitfed': 'sfl_sim.algorithms.split.splitfed',
    'sfl_sim.algorithms.vectorised': 'sfl_sim.algorithms._exec.vectorised',
    'sfl_sim.algorithms.working_copies': 'sfl_sim.algorithms._exec.working_copies',
    'sfl_sim.availability': 'sfl_sim.clients.availability',
    'sfl_sim.availability.base': 'sfl_sim.clients.availability.base',
    'sfl_sim.availability.capability': 'sfl_sim.clients.availability.capability',
    'sfl_sim.availability.conformance': 'sfl_sim.clients.availability.conformance',
    'sfl_sim.availability.models': 'sfl_sim.clients.availability.models',
    'sfl_sim.availability.readers': 'sfl_sim.clients.availability.readers',
    'sfl_sim.availability.schedule': 'sfl_sim.clients.availability.schedule',
    'sfl_sim.build': 'sfl_sim.runs.build',
    'sfl_sim.cell_report': 'sfl_sim.reports.channel',
    'sfl_sim.checkpoint': 'sfl_sim.runs.checkpoint',
    'sfl_sim.choices': 'sfl_sim.config.choices',
    'sfl_sim.component_schema': 'sfl_sim.catalog.component_schema',
    'sfl_sim.energy': 'sfl_sim.clients.energy',
    'sfl_sim.energy.base': 'sfl_sim.clients.energy.base',
    'sfl_sim.energy.conformance': 'sfl_sim.clients.energy.conformance',
    'sfl_sim.energy.ledger': 'sfl_sim.clients.energy.ledger',
    'sfl_sim.energy.models': 'sfl_sim.clients.energy.models',
    'sfl_sim.evaluation': 'sfl_sim.models.evaluation',
    'sfl_sim.host': 'sfl_sim.runs.host',
    'sfl_sim.output_paths': 'sfl_sim.runs.output_paths',
    'sfl_sim.progress': 'sfl_sim.runs.progress',
    'sfl_sim.protocols': ('sfl_sim.data.protocols', 'sfl_sim.clients.protocols', 'sfl_sim.algorithms.protocols'),
    'sfl_sim.resolved': 'sfl_sim.runs.resolved',
    'sfl_sim.run_dir': 'sfl_sim.runs.rundir.files',
    'sfl_sim.run_summary': 'sfl_sim.runs.summary',
    'sfl_sim.runner': 'sfl_sim.runs.runner',
    'sfl_sim.scenario_files': 'sfl_sim.config.scenario_files',
    'sfl_sim.seeding': 'sfl_sim.kit.seeding',
    'sfl_sim.selection': 'sfl_sim.clients.selection',
    'sfl_sim.study_exec': 'sfl_sim.study.execute',
    'sfl_sim.trace_report': 'sfl_sim.reports.traces',
    'sfl_sim.workdir_imports': 'sfl_sim.kit.workdir_imports',
    'simkit': 'sfl_sim.kit',
    'simkit.checks': 'sfl_sim.kit.checks',
    'simkit.conformance': 'sfl_sim.kit.conformance',
    'simkit.params': 'sfl_sim.kit.params',
    'simkit.protocols': 'sfl_sim.kit.protocols',
    'simkit.ranges': 'sfl_sim.kit.ranges',
    'simkit.registry': 'sfl_sim.kit.registry',
}

#: The old top-level packages and their homes.
_OLD_TOP = {"channel": "sfl_sim.channel", "simkit": "sfl_sim.kit", "analysis": "sfl_sim.analysis"}


def _merged(name: str, homes: Sequence[str]) -> types.ModuleType:
    """A module holding the public names of ``homes`` (an old module whose contents were split)."""
    module = types.ModuleType(name, f"Old name of {', '.join(homes)} (see sfl_sim._legacy_imports).")
    for home in homes:
        real = importlib.import_module(home)
        for attr in getattr(real, "__all__", ()):
            setattr(module, attr, getattr(real, attr))
    return module


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, old: str, new: str | tuple[str, ...]) -> None:
        self.old, self.new = old, new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        homes = (self.new,) if isinstance(self.new, str) else self.new
        warnings.warn(f"{self.old} is an old import name of {' and '.join(homes)}; it goes in the next release",
                      FutureWarning, stacklevel=2)
        if isinstance(self.new, str):
            return importlib.import_module(self.new)
        return _merged(self.old, self.new)

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module is the new one, already executed."""


class _LegacyFinder(importlib.abc.MetaPathFinder):
    """Answers the old names (:data:`OLD_NAMES`); an old top-level name only where the path has none."""

    def find_spec(self, fullname: str, path: Any = None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        top = fullname.partition(".")[0]
        if fullname in _OLD_TOP:
            if importlib.machinery.PathFinder.find_spec(fullname) is not None:
                return None  # the user's own module of that name
            new: str | tuple[str, ...] | None = _OLD_TOP[fullname]
        else:
            new = OLD_NAMES.get(fullname)
            if new is None:
                return None
            if top in _OLD_TOP and getattr(sys.modules.get(top), "__name__", None) != _OLD_TOP[top]:
                return None  # the user's own package of that name: not ours to answer
        assert new is not None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(fullname, new))


_FINDER = _LegacyFinder()


def install() -> None:
    """Put the finder first on :data:`sys.meta_path` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
