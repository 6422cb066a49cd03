"""What a run resolved to, recorded in its directory (``resolved.yaml``) and checked on resume.

A scenario names each component and the parameters the user gave; every other parameter comes
from the component's default, and defaults change with the code (FedVLS's ``suppression_form``
went from the printed to the released form).  :func:`resolve_run` records every component's full
parameters from its parameter model (:func:`sfl_sim.kit.params.parameter_values`: the declared
``Params`` of a shipped component, the model derived from the constructor of a plug-in) — the
same model the registry validates with and the schema shows — so any component is recorded
without a list per component.  With them go the run's
training settings and the versions of the code (sfl-sim, its git commit when run from a checkout,
torch, numpy, Python).

:func:`check_resolution` compares a run's record with today's resolution before the run is
continued (``--resume``) or reused by a study: a differing name or parameter is refused, one line
per field; a differing version is a warning (``strict_versions`` makes it a refusal).  A component
is identified by its registered name and its parameters: the ``class`` the name resolved to is
recorded for information, and a class that moved to another import path (a refactor of the code)
is one warning line, never a refusal, so run directories survive a reorganised package.  A record
is compared in today's shape: what an older one lacks, or a run without one, is for
:func:`sfl_sim.runs.rundir.upgrade.resolved` to supply or say (one warning line each, never a
refusal, ``strict_versions`` or not, but for a run without a record, which ``strict_versions``
refuses).

Energy: the record names the device energy model that charges the run (``energy.device``, with
every parameter, when ``energy.enabled``) and the rest of the ``energy:`` section (``enabled``,
``server_j_per_flop``, ``battery``; ``from_round`` when a resume adopted it, not compared).

Layout of ``resolved.yaml``::

    versions: {sfl_sim, git_commit, git_dirty, torch, numpy, python}
    components:                       # keyed by the run's scenario.yaml field naming the component
      algorithm: {name, class, params}   # class: 'module:QualName' the name resolved to
                                         # + resolved: {concurrency, buffer_size, period_s, refill}
                                         #   for an asynchronous algorithm (a null default made a number)
      model: {name, class, params}       # params: model.params
      data.dataset: ... data.partition: ... clients.selection: ...
      cell.placement: ... (every channel kind) ... training.optimizer: ...
      energy.device: ...                 # only when energy.enabled
    training: {...}                   # the run's merged training settings (but torch_threads, optimizer)
    compression:                      # the paths the run applies (decided when it is built); {} for none
      updates: {field, name, class, params, error_feedback}   # field: where the scenario sets it
    energy: {enabled, server_j_per_flop, battery}   # (from_round: the first round charged, when a
                                      # resume adopted it: sfl_sim.runs.rundir.upgrade.resolved)
    resumes: [{after_round, versions}]   # one entry per resume that trained more rounds
"""
from __future__ import annotations

import functools
import math
import platform
import subprocess
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from sfl_sim.channel.kinds import CELL_KINDS
from sfl_sim.errors import ConfigError, RunDirError
from sfl_sim.kit.checks import one_line
from sfl_sim.kit.params import parameter_values
from sfl_sim.runs.rundir.schema import (
    ENERGY_DEVICE_FIELD,
    ENERGY_FROM_ROUND,
    RESOLVED_ASYNCHRONY,
    RESOLVED_COMPRESSION,
    RESOLVED_ENERGY,
    RESOLVED_FILE,
)

__all__ = ["Resolution", "ResolutionMismatchError", "ResolutionWarning", "code_versions",
           "resolve_run", "parameter_differences", "version_differences", "recorded_fields", "check_resolution",
           "class_differences", "compression_record", "compression_differences", "COMPONENT_FIELDS", "VERSION_KEYS",
           "ENERGY_DEVICE_FIELD"]

#: Scenario fields (of a run's ``scenario.yaml``) naming a component, with the registry kind
#: (:data:`sfl_sim.catalog.KINDS`) that resolves it; the algorithm, model, selector, optimizer,
#: availability, HARQ and the scheduler are resolved separately (their spec is not a plain field, or is recorded
#: only when named).
COMPONENT_FIELDS: dict[str, str] = {
    "data.dataset": "dataset", "data.partition": "partitioner",
    **{kind.field: kind.name for kind in CELL_KINDS},
}

#: The versions a record holds and a resume compares (``git_dirty`` is recorded, not compared).
VERSION_KEYS = ("sfl_sim", "git_commit", "torch", "numpy", "python")

#: Where a component's parameters are written in the scenario when not beside its name.
_PARAMS_AT = {"model": "model.params"}

#: Training fields the record's ``training`` leaves out: host threads (not part of what a run
#: computes) and the optimizer (recorded in full among the components).
_UNRECORDED_TRAINING_FIELDS = ("torch_threads", "optimizer")

_HOW_TO_PROCEED = ("to continue it as it was made, state the recorded value of each field in the scenario; "
                   "to run with today's values, rerun into a new directory (-o)")


class ResolutionWarning(UserWarning):
    """A run is continued under other versions of the code, or without a record to check."""


class ResolutionMismatchError(RunDirError):
    """A run's recorded parameters differ from what today's code resolves its scenario to.

    The message has one line per differing field between a heading and how to proceed (the CLI
    prints them as they are).

    Attributes
    ----------
    fields : list of str
        ``field: made with OLD, now NEW``, one per differing field.
    """

    multiline = True

    def __init__(self, heading: str, fields: list[str]) -> None:
        super().__init__("\n".join([heading, *(f"  {line}" for line in fields), f"  {_HOW_TO_PROCEED}"]))
        self.fields = list(fields)


@dataclass(frozen=True)
class Resolution:
    """Today's resolution of one run of a scenario.

    Attributes
    ----------
    record : dict
        What ``resolved.yaml`` holds (``versions``, ``components``, ``training``).
    algorithm_field : str
        Where the run's algorithm is in the scenario the user gave (``algorithms[i]``), for messages.
    """

    record: dict[str, Any]
    algorithm_field: str


# -- resolving ---------------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """``value`` as YAML-able data: tuples become lists, enums their value, objects their type."""
    if isinstance(value, Enum):
        return _plain(value.value)
    for kind in (bool, int, float, str):  # subclasses (torch's version string, IntEnum) as the plain type
        if isinstance(value, kind):
            return kind(value)
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):  # a numpy scalar
        return _plain(value.item())
    text = repr(value)
    # An object's repr may carry its address, which differs every run: its type says what it was.
    return f"<{type(value).__module__}.{type(value).__qualname__}>" if " at 0x" in text else text


def _class_id(cls: Any) -> str:
    return f"{getattr(cls, '__module__', '?')}:{getattr(cls, '__qualname__', type(cls).__qualname__)}"


def _resolve(registry: Any, name: str, given: Mapping[str, Any], field: str,
             supplied: tuple[str, ...] = ()) -> dict[str, Any]:
    """``{name, class, params}`` of one component; an unresolvable name is the build's one line."""
    from sfl_sim.kit.protocols import ComponentProtocolError
    from sfl_sim.kit.registry import UnknownComponentError

    try:
        cls = registry.get(name)
    except UnknownComponentError as exc:
        raise ConfigError(f"{field}.name: {exc}") from None
    except ComponentProtocolError as exc:
        raise ConfigError(f"{field}: {one_line(exc)}") from None
    params = parameter_values(cls, given, supplied)
    return {"name": name, "class": _class_id(cls), "params": {k: _plain(v) for k, v in params.items()}}


def _git_dir() -> Path | None:
    """The checkout the running ``sfl_sim`` package comes from, or None (an installed copy)."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / ".git").exists() and (root / "pyproject.toml").is_file() else None


@functools.lru_cache(maxsize=1)
def _git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the checkout the code runs from; (None, None) without git or a checkout."""
    root = _git_dir()
    if root is None:
        return None, None
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):  # no git, not a repository, a hung file system
        return None, None
    return (commit or None), bool(status.strip())


def code_versions() -> dict[str, Any]:
    """The versions a run is made with: ``sfl_sim`` (the installed distribution), ``git_commit``
    and ``git_dirty`` (None outside a checkout or without git), ``torch``, ``numpy``, ``python``."""
    import numpy
    import torch

    from sfl_sim.catalog import package_version

    commit, dirty = _git_state()
    return {"sfl_sim": package_version(), "git_commit": commit, "git_dirty": dirty, "torch": str(torch.__version__),
            "numpy": str(numpy.__version__), "python": platform.python_version()}


def resolve_run(cfg: Any, label: str, applied: list[str] | None = None) -> Resolution:
    """Today's resolution of the run of ``label`` in the validated scenario ``cfg``.

    ``applied``: the compression paths the built run applies
    (``run.algorithm.setup.compression.codecs``); given, the record holds their
    :func:`compression_record`.  Which paths apply is decided by the built algorithm, so a
    resolution taken before the build (the checks of a resume) leaves the section out and
    :func:`compression_differences` compares it once the run is built.

    Raises
    ------
    ConfigError
        A component name that resolves to no class (the line :func:`sfl_sim.runs.build.build_run` gives).
    """
    from sfl_sim.algorithms import ALGORITHMS
    from sfl_sim.channel import REGISTRIES
    from sfl_sim.clients.availability import AVAILABILITY
    from sfl_sim.clients.energy import ENERGY
    from sfl_sim.clients.selection import SELECTORS
    from sfl_sim.data import DATASETS, PARTITIONERS
    from sfl_sim.models import MODELS
    from sfl_sim.optim import OPTIMIZERS
    from sfl_sim.runs.build import async_resolution, selection_spec, uplink_rate_spec

    spec = cfg.algorithm(label)
    components: dict[str, Any] = {}
    algorithm = _resolve(ALGORITHMS, spec.name, spec.params, "algorithms", ALGORITHMS.supplied)
    asynchrony = async_resolution(cfg, spec)
    if asynchrony is not None:  # a relative default (buffer_size: null) as the number it resolved to
        algorithm[RESOLVED_ASYNCHRONY] = asynchrony
    components["algorithm"] = algorithm
    components["model"] = _resolve(MODELS, cfg.model.name, cfg.model.params, "model", MODELS.supplied)
    registries = {"dataset": DATASETS, "partitioner": PARTITIONERS, **REGISTRIES}
    for field, kind in COMPONENT_FIELDS.items():
        section, name = field.split(".")
        # the uplink rate as built: with the gNB's noise figure where cell.rate gives none
        component = uplink_rate_spec(cfg.cell) if field == "cell.rate" else getattr(getattr(cfg, section), name)
        components[field] = _resolve(registries[kind], component.name, component.params, field)
    selection = selection_spec(cfg, ALGORITHMS.get(spec.name))
    components["clients.selection"] = _resolve(SELECTORS, selection.name, selection.params, "clients.selection")
    availability = cfg.clients.availability
    if availability.name != "always":  # recorded only when named, so older records compare equal
        components["clients.availability"] = _resolve(AVAILABILITY, availability.name, availability.params,
                                                       "clients.availability")
    harq = cfg.cell.harq
    if harq is not None:  # recorded only when named, so older records compare equal
        components["cell.harq"] = _resolve(REGISTRIES["harq"], harq.name, harq.params, "cell.harq",
                                           REGISTRIES["harq"].supplied)
    scheduler = cfg.cell.scheduler
    if scheduler.name != "static":  # recorded only when named, so older records compare equal
        components["cell.scheduler"] = _resolve(REGISTRIES["scheduler"], scheduler.name, scheduler.params,
                                                "cell.scheduler")
    training = cfg.training_for(label)
    optimizer_field = ("algorithm.training.optimizer" if spec.training is not None
                       and "optimizer" in spec.training.model_fields_set else "training.optimizer")
    components[optimizer_field] = _resolve(OPTIMIZERS, training.optimizer.name, training.optimizer.params,
                                           optimizer_field, OPTIMIZERS.supplied)
    energy = cfg.energy
    if energy.enabled:  # with the ledger off no model charges anything
        components[ENERGY_DEVICE_FIELD] = _resolve(ENERGY, energy.device.name, energy.device.params,
                                                   ENERGY_DEVICE_FIELD)
    settings = {k: v for k, v in training.model_dump(mode="json").items() if k not in _UNRECORDED_TRAINING_FIELDS}
    record = {"versions": code_versions(), "components": components, "training": settings,
              RESOLVED_ENERGY: energy.model_dump(mode="json", exclude={"device"})}
    if applied is not None:
        record[RESOLVED_COMPRESSION] = compression_record(cfg, label, applied)
    return Resolution(record, f"algorithms[{cfg.algorithms.index(spec)}]")


def compression_record(cfg: Any, label: str, applied: list[str]) -> dict[str, Any]:
    """``{path: {field, name, class, params, error_feedback}}`` of the compression paths ``applied``
    by the run of ``label`` (``identity`` is never applied: the path goes as it is); ``{}`` for none."""
    from sfl_sim.compression import COMPRESSORS

    given = cfg.compression_for(label)
    out: dict[str, Any] = {}
    for path in applied:
        field, spec = given[path]
        out[path] = {"field": field, **_resolve(COMPRESSORS, spec.name, spec.params, field),
                     "error_feedback": spec.error_feedback}
    return out


def compression_differences(made: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """``compression.PATH: made with OLD, now NEW`` for each compression path whose record differs
    between a run's ``resolved.yaml`` (in today's shape) and today's build; ``{}``: none applied."""
    old, new = made.get(RESOLVED_COMPRESSION) or {}, now.get(RESOLVED_COMPRESSION) or {}
    return [f"compression.{path}: made with {_plain(old.get(path, '<none>'))!r}, now "
            f"{_plain(new.get(path, '<none>'))!r}"
            for path in dict.fromkeys([*old, *new]) if not _same(_identity(old.get(path)), _identity(new.get(path)))]


def _identity(entry: Any) -> Any:
    """A record entry without its ``class`` (recorded for information: a name and its parameters
    identify a component)."""
    return {k: v for k, v in entry.items() if k != "class"} if isinstance(entry, Mapping) else entry


# -- comparing -----------------------------------------------------------------------------------
def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return _plain(a) == _plain(b)


def _display(key: str, algorithm_field: str) -> str:
    """A record key as the scenario field a user writes (``algorithm`` → ``algorithms[i]``)."""
    return algorithm_field + key[len("algorithm"):] if key == "algorithm" or key.startswith("algorithm.") else key


def parameter_differences(made: Mapping[str, Any], now: Mapping[str, Any],
                          algorithm_field: str = "algorithm") -> list[str]:
    """``field: made with OLD, now NEW`` for every resolved value that differs between two records.

    Compared: each component's name and every parameter the run recorded (what identifies it; its
    class path is for information, :func:`class_differences`), the training settings and the
    ``energy:`` section it recorded.  ``made`` is in today's shape
    (:func:`sfl_sim.runs.rundir.upgrade.resolved` gives an older record the parameters and settings
    added since, at today's values).
    """
    out: list[str] = []

    def differ(field: str, old: Any, new: Any) -> None:
        if not _same(old, new):
            out.append(f"{field}: made with {old!r}, now {new!r}")

    old_c, new_c = made.get("components") or {}, now.get("components") or {}
    for key in list(dict.fromkeys([*old_c, *new_c])):
        field = _display(key, algorithm_field)
        old, new = old_c.get(key), new_c.get(key)
        if old is None or new is None:
            differ(f"{field}.name", (old or {}).get("name", "<absent>"), (new or {}).get("name", "<absent>"))
            continue
        differ(f"{field}.name", old.get("name"), new.get("name"))
        params_at = _display(_PARAMS_AT.get(key, key), algorithm_field)
        old_p, new_p = old.get("params") or {}, new.get("params") or {}
        for name in old_p:
            differ(f"{params_at}.{name}", old_p[name], new_p.get(name, "<absent>"))
        old_r, new_r = old.get(RESOLVED_ASYNCHRONY) or {}, new.get(RESOLVED_ASYNCHRONY) or {}
        for name in old_r:  # what a relative default resolved to (an older record has none)
            differ(f"{params_at}.{name} (resolved)", old_r[name], new_r.get(name, "<absent>"))
    old_t, new_t = made.get("training") or {}, now.get("training") or {}
    for name in old_t:
        differ(f"training.{name}", old_t[name], new_t.get(name, "<absent>"))
    old_e, new_e = made.get(RESOLVED_ENERGY) or {}, now.get(RESOLVED_ENERGY) or {}
    for name in old_e:
        if name != ENERGY_FROM_ROUND:
            differ(f"energy.{name}", old_e[name], new_e.get(name, "<absent>"))
    return out


def class_differences(made: Mapping[str, Any], now: Mapping[str, Any],
                      algorithm_field: str = "algorithm") -> list[str]:
    """``field: OLD -> NEW`` for each component whose registered name now resolves to a class at
    another import path (the code moved it); the name and parameters identify the component, so
    this is no reason to refuse a resume, only to say so."""
    entries = [(_display(key, algorithm_field), old, (now.get("components") or {}).get(key))
               for key, old in (made.get("components") or {}).items()]
    entries += [(f"compression.{path}", old, (now.get(RESOLVED_COMPRESSION) or {}).get(path))
                for path, old in (made.get(RESOLVED_COMPRESSION) or {}).items()]
    return [f"{field}: {old['class']} -> {new['class']}" for field, old, new in entries
            if isinstance(old, Mapping) and isinstance(new, Mapping) and old.get("name") == new.get("name")
            and old.get("class") and new.get("class") and old["class"] != new["class"]]


def version_differences(made: Mapping[str, Any], now: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(name, made with, now)`` for each version in :data:`VERSION_KEYS` known on both sides that differs."""
    old, new = made.get("versions") or {}, now.get("versions") or {}
    return [(k, old[k], new[k]) for k in VERSION_KEYS
            if old.get(k) is not None and new.get(k) is not None and old[k] != new[k]]


def recorded_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record's resolved values as flattened ``scenario.yaml`` fields (``algorithm.lam``,
    ``model.params.conv_channels``, ``clients.selection.name``...): what the run used where its
    scenario left a field out, so a resume that states such a value explicitly is no change."""
    out: dict[str, Any] = {}
    for key, entry in (record.get("components") or {}).items():
        if not isinstance(entry, Mapping):
            continue
        if key not in _PARAMS_AT:
            out[f"{key}.name"] = entry.get("name")
        for name, value in (entry.get("params") or {}).items():
            out[f"{_PARAMS_AT.get(key, key)}.{name}"] = value
    return out


_VERSION_NAMES = {"sfl_sim": "sfl-sim", "git_commit": "git commit"}


def _versions_text(changes: list[tuple[str, Any, Any]], side: int) -> str:
    """``torch 2.3.0, numpy 1.26.4``: one side (1 made with, 2 now) of :func:`version_differences`."""
    return ", ".join(f"{_VERSION_NAMES.get(c[0], c[0])} {c[side]}" for c in changes)


def check_resolution(run_dir: Path, record: Mapping[str, Any] | None, today: Resolution,
                     strict_versions: bool = False, notes: Sequence[str] = ()) -> None:
    """Refuse, or warn about, continuing the run of ``run_dir`` with today's code.

    Parameters
    ----------
    run_dir : Path
    record : mapping or None
        The run's ``resolved.yaml`` in today's shape (:meth:`sfl_sim.runs.rundir.files.RunDir.read_resolved`);
        None for a run without one.
    today : Resolution
        :func:`resolve_run` of the scenario asked for now.
    strict_versions : bool
        Refuse a version difference (and a run without a record) instead of warning.
    notes : sequence of str
        What reading the record assumed (:attr:`sfl_sim.runs.rundir.upgrade.Upgraded.notes`), one
        warning line each after the record passed the comparison, ``strict_versions`` or not.

    Raises
    ------
    ResolutionMismatchError
        One line per differing name or parameter (:func:`parameter_differences`) and how to proceed.
    RunDirError
        A version difference (or no record) with ``strict_versions``.

    Warns
    -----
    ResolutionWarning
        One line: the versions it was made with and today's; one line when component classes moved
        to other import paths (:func:`class_differences`); one line per note.
    """
    if record is None:
        if strict_versions:
            raise RunDirError(f"--strict-versions: {run_dir} has no {RESOLVED_FILE}, so neither its versions nor its "
                              f"defaults can be checked; rerun into a new directory (-o), or continue it without "
                              f"--strict-versions")
        for note in notes:
            warnings.warn(f"{run_dir} {note}", ResolutionWarning, stacklevel=2)
        return
    fields = parameter_differences(record, today.record, today.algorithm_field)
    if fields:
        raise ResolutionMismatchError(f"{run_dir} was made with other parameters than this code resolves its "
                                      f"scenario to ({RESOLVED_FILE}):", fields)
    for note in notes:
        warnings.warn(f"{run_dir} {note}", ResolutionWarning, stacklevel=2)
    moved = class_differences(record, today.record, today.algorithm_field)
    if moved:
        warnings.warn(f"{run_dir}: {len(moved)} component class{'es' if len(moved) > 1 else ''} moved since the run "
                      f"was made ({moved[0]}{', ...' if len(moved) > 1 else ''}); components are identified by "
                      f"their registered name and parameters, which match", ResolutionWarning, stacklevel=2)
    changes = version_differences(record, today.record)
    if not changes:
        return
    made, now = _versions_text(changes, 1), _versions_text(changes, 2)
    if strict_versions:
        raise RunDirError(f"--strict-versions: {run_dir} was made with {made}, this is {now}; rerun into a new "
                          f"directory (-o), or continue it without --strict-versions")
    warnings.warn(f"{run_dir} was made with {made}, this is {now}; its numbers may differ in the last bits "
                  f"(--strict-versions refuses this)", ResolutionWarning, stacklevel=2)
