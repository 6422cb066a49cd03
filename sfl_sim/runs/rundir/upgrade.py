"""Run directories made by older versions of the simulator, read in today's shape.

The simulator gained sections, columns, files and state after runs were already being made with
it, and a run directory is a researcher's evidence: a run made before a change is still reported
beside the runs made since, and still resumed.  This module is the one place that knows what older
run directories lack and what the simulator did then; every reader of a run directory (the
resume, :meth:`sfl_sim.runs.rundir.files.RunDir.plan`; a study's "finished or resumable" check;
:mod:`sfl_sim.analysis`) reads through it, and the rest of the code sees only today's shape
(:mod:`sfl_sim.runs.rundir.schema`).  Per artefact:

``scenario.yaml`` (:func:`scenario`)
    A field the run's scenario lacks was added to the simulator after the run was made, when the
    simulator did what that field's default does: it reads as the default (:func:`default_scenario`,
    from :func:`sfl_sim.config.validate` itself).  The outage policy's old spellings read in today's
    names (``on_outage: retransmit, max_attempts: 1`` dropped at the first outage: ``drop``).  A run
    made before energy accounting (no
    ``energy:``) is charged from its resume on with the ``energy:`` section of the scenario that
    continues it: the ledger only records, so it changes nothing the run computed.
``resolved.yaml`` (:func:`resolved`)
    A run made before the record existed has none, which the resume says in one line; a record
    made before compression existed applied none; a component parameter or training setting the
    record lacks was added later and takes today's value; a record made before energy accounting
    adopts today's energy record from the first round its resume trains (``from_round``), which
    the resume says in one line.
``rounds.csv``, ``metrics.csv``, ``classes.csv``, ``energy.csv``, ``clients.csv``, ``slots.csv`` (:func:`log_rows`)
    Read with :func:`log_rows` and :func:`log_text`. Cells are matched to today's columns by the file's
    own header: a column added after the file was written is empty, or what the run did then where that
    is known (``slots.csv``'s and ``clients.csv``'s ``cell``: 0 in a run without ``cell.network``,
    :func:`log_fill`)
    (``rounds.csv`` gained the host time per round, HARQ, availability, energy and uplink attempt
    columns; ``clients.csv`` the scheduler's grant columns and the channel-in-time columns, speed,
    Doppler and the fading gain at the uploads' starts). A run made before a file existed has none
    (:data:`FILES_ADDED_LATER`: the resume starts ``classes.csv``; an analysis says why it is missing).
``summary.json`` (:func:`summary`)
    A summary made before ``client_updates`` was counted reads it as ``client_rounds`` less the
    dropped client-rounds (``dropped_clients_by_cause``), which is how it is counted; without those
    counts it stays absent (a table shows it as unknown).
``checkpoint.pt`` (:func:`checkpoint`)
    A state the checkpoint lacks is the state of the run as built to continue it, before any
    round: the energy ledger's (it starts from zero), a random stream added later (``harq``: never
    drawn from before), counters added later (zero), and a version-1 cell state (before uplink power
    control and interference) gains the interference stream and noise rise of the cell as built.

Imports neither torch nor the engine (:mod:`sfl_sim.analysis` reads through it); today's defaults
come from the scenario models (:mod:`sfl_sim.config`) and the components' declared parameters,
imported when first needed.
"""
from __future__ import annotations

import copy
import csv
import functools
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from sfl_sim.runs.rundir.schema import (
    CLASSES_FILE,
    CLIENTS_FILE,
    ENERGY_DEVICE_FIELD,
    ENERGY_FILE,
    ENERGY_FROM_ROUND,
    REPORT_README_TITLE,
    RESOLVED_COMPONENTS,
    RESOLVED_COMPRESSION,
    RESOLVED_ENERGY,
    RESOLVED_FILE,
    RESOLVED_TRAINING,
    RUN_STATUSES,
    SCENARIO_SUMMARY_CSV,
    SCENARIO_SUMMARY_CSV_HEADER_START,
    SCENARIO_SUMMARY_MD_TITLE,
    SLOTS_FILE,
    STUDY_STATUS_FILE,
    STUDY_STATUS_HEADER_START,
    SUMMARY_FILE,
    WORK_SHA256,
)

__all__ = ["Upgraded", "fill_defaults", "SECTIONS_ADDED_LATER", "FILES_ADDED_LATER", "CHECKPOINT_FIELDS_ADDED_LATER",
           "STREAMS_ADDED_LATER", "default_scenario", "sections_added_later", "scenario", "resolved",
           "missing_file", "log_rows", "log_text", "LOGS_WITH_CELL_ADDED_LATER", "log_fill", "slots_fill",
           "summary", "checkpoint", "cell_state",
           "made_before_marker", "unbound_work_record"]

T = TypeVar("T")

#: Scenario sections added after runs were already being made (uplink power control,
#: interference, HARQ, energy accounting).  A run made before one of them has no such field and
#: shares a setting with the runs that state its default (:func:`sections_added_later`).
SECTIONS_ADDED_LATER: tuple[str, ...] = ("cell.power_control", "cell.interference", "cell.harq", "energy")

#: Files a run directory gained after runs were already being made, with what a run made before
#: one of them did not record.
FILES_ADDED_LATER: dict[str, str] = {
    RESOLVED_FILE: "the parameters and versions it resolved to",
    CLASSES_FILE: "per-class accuracy",
    ENERGY_FILE: "client energy",
    CLIENTS_FILE: "what the radio did per client and round, and where each client's time went",
}

#: Fields of ``checkpoint.pt`` (:class:`sfl_sim.runs.checkpoint.RunState`) added after runs were
#: already being made: an older checkpoint lacks them and may still be read.
CHECKPOINT_FIELDS_ADDED_LATER: tuple[str, ...] = ("energy",)

#: Random streams of a checkpoint's ``rng`` added after runs were already being made: a run made
#: before one of them never drew from it.
STREAMS_ADDED_LATER: tuple[str, ...] = ("harq",)

#: The cell state version that added uplink power control and interference
#: (:meth:`sfl_sim.channel.Cell.state_dict`); version 1 came before.
_CELL_STATE_WITH_POWER_CONTROL = 2

#: The fields of the default scenario a run's ``scenario.yaml`` holds otherwise: a run records its
#: one algorithm under ``algorithm``, not the scenario's ``algorithms``.
_NOT_IN_A_RUN = ("algorithms",)


@dataclass(frozen=True)
class Upgraded(Generic[T]):
    """An artefact read in today's shape, and what reading it assumed.

    Attributes
    ----------
    value
        The artefact in today's shape.
    notes : tuple of str
        One line each: what the run lacked and how it is read (a resume warns with them).
    """

    value: T
    notes: tuple[str, ...] = ()


# -- scenario.yaml ---------------------------------------------------------------------------------
@functools.cache
def _defaults() -> dict[str, Any]:
    from sfl_sim.config import validate

    written = validate({}).to_yaml_dict()
    return {k: v for k, v in written.items() if k not in _NOT_IN_A_RUN}


def default_scenario() -> dict[str, Any]:
    """Every field of a run's ``scenario.yaml`` that the default scenario sets, at its default
    (``sfl_sim.config.validate({}).to_yaml_dict()``, less ``algorithms``: a run records its one
    algorithm under ``algorithm``).  A copy."""
    return copy.deepcopy(_defaults())


def fill_defaults(given: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` with the keys of ``defaults`` it lacks, recursively; a component named other than
    the default keeps its own parameters (another class, other defaults)."""
    out = dict(given)
    for key, default in defaults.items():
        if key not in out:
            out[key] = copy.deepcopy(default)
        elif isinstance(default, Mapping) and isinstance(out[key], Mapping):
            if "name" in default and out[key].get("name") != default["name"]:
                continue
            out[key] = fill_defaults(out[key], default)
    return out


def scenario(raw: Mapping[str, Any], continued_by: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A run's ``scenario.yaml`` in today's shape.

    Parameters
    ----------
    raw : mapping
        The file as read.
    continued_by : mapping, optional
        The scenario that continues the run (a resume's, as the run would record it).

    Returns
    -------
    dict
        ``raw`` with every field of :func:`default_scenario` it lacks at its default (the run was
        made before the field existed, when the simulator did what the default does); without
        ``energy:`` (made before energy accounting), ``continued_by``'s ``energy:`` when given: the
        rounds it trains from then on are charged with it.  Its ``cell.outage`` in today's names
        (:func:`_outage_as_named_today`: ``on_outage: retransmit, max_attempts: 1``, every run's
        record before the names said what happens, reads ``on_outage: drop``).
    """
    out = fill_defaults(raw, _defaults())
    _outage_as_named_today(out)
    if RESOLVED_ENERGY not in raw and continued_by is not None and RESOLVED_ENERGY in continued_by:
        out[RESOLVED_ENERGY] = copy.deepcopy(continued_by[RESOLVED_ENERGY])
    _edge_energy_from(out, continued_by)
    return out


def _edge_energy_from(out: dict[str, Any], continued_by: Mapping[str, Any] | None) -> None:
    """An edge run made before the backhaul's energy was charged (``server.edge`` without
    ``backhaul_j_per_bit``) is charged from its resume on at the continuing scenario's rate (as a
    run made before energy accounting: the ledger only records, it changes nothing the run
    computed); read alone, at today's default (its ``rounds.csv`` has no energy column to show)."""
    edge = (out.get("server") or {}).get("edge")
    if not isinstance(edge, Mapping) or EDGE_BACKHAUL_J_PER_BIT in edge:
        return
    given = ((continued_by or {}).get("server") or {}).get("edge")
    if isinstance(given, Mapping) and EDGE_BACKHAUL_J_PER_BIT in given:
        rate = given[EDGE_BACKHAUL_J_PER_BIT]
    else:
        rate = _edge_defaults()[EDGE_BACKHAUL_J_PER_BIT]
    out["server"] = {**out["server"], "edge": {**edge, EDGE_BACKHAUL_J_PER_BIT: rate}}


#: The ``server.edge`` field added after edge runs were already being made.
EDGE_BACKHAUL_J_PER_BIT = "backhaul_j_per_bit"


@functools.cache
def _edge_defaults() -> dict[str, Any]:
    """``server.edge``'s fields at their defaults (the section is null by default)."""
    from sfl_sim.config import validate

    return dict(validate({"server": {"edge": {}}}).to_yaml_dict()["server"]["edge"])


def _outage_as_named_today(scenario: dict[str, Any]) -> None:
    """Rename, in place, what a run's ``cell.outage`` did under the names it was written with.

    Before the outage policy's names said what happens, ``on_outage: retransmit`` was the default
    and with ``max_attempts: 1`` (the default too: every run made then records the pair) dropped
    the payload at its first outage; ``on_outage: drop`` dropped it at once whatever
    ``max_attempts`` said.  Both read as today's ``on_outage: drop, max_attempts: 1``
    (:func:`sfl_sim.channel.link.outage.outage_rule_problem` refuses the old spellings).
    """
    cell = scenario.get("cell")
    outage = cell.get("outage") if isinstance(cell, Mapping) else None
    if not isinstance(outage, dict):
        return
    on_outage, attempts = outage.get("on_outage"), outage.get("max_attempts")
    if (on_outage == "retransmit" and attempts == 1) or (on_outage == "drop" and attempts != 1):
        outage.update(on_outage="drop", max_attempts=1)


def _component_registries() -> dict[str, Any]:
    """The registry of each component field of :data:`SECTIONS_ADDED_LATER`."""
    from sfl_sim.channel import CHANNEL_KINDS, REGISTRIES
    from sfl_sim.clients.energy import ENERGY

    return {**{kind.field: REGISTRIES[kind.name] for kind in CHANNEL_KINDS}, ENERGY_DEVICE_FIELD: ENERGY}


def _declared_defaults(registry: Any, name: str) -> dict[str, Any]:
    """The default parameters of the component ``name`` as its class declares them."""
    from sfl_sim.kit.params import params_model

    model = params_model(registry.get(name), tuple(getattr(registry, "supplied", ())))
    if model is None:
        return {}
    return {field: info.get_default(call_default_factory=True)
            for field, info in model.model_fields.items() if not info.is_required()}


def _stated(value: Any, path: str, registries: Mapping[str, Any]) -> Any:
    """``value`` with every default component in it (a mapping with ``name`` at a component field)
    given its class's default parameters where it leaves them unstated."""
    if not isinstance(value, Mapping):
        return copy.deepcopy(value)
    out = {k: _stated(v, f"{path}.{k}", registries) for k, v in value.items()}
    if path in registries and isinstance(value.get("name"), str):
        out = {"name": value["name"], **_declared_defaults(registries[path], value["name"]),
               **{k: v for k, v in out.items() if k != "name"}}
    return out


@functools.cache
def _sections_added_later() -> dict[str, Any]:
    registries = _component_registries()
    out: dict[str, Any] = {}
    for field in SECTIONS_ADDED_LATER:
        *parents, name = field.split(".")
        node, default = out, _defaults()
        for part in parents:
            node, default = node.setdefault(part, {}), default[part]
        node[name] = _stated(default[name], field, registries)
    return out


def sections_added_later() -> dict[str, Any]:
    """The defaults of :data:`SECTIONS_ADDED_LATER`, nested like ``scenario.yaml``
    (``{"cell": {"power_control": ..., "interference": ..., "harq": None}, "energy": {...}}``):
    the default scenario's values (:func:`default_scenario`) with the parameters of each default
    component stated as its class declares them (``energy.device``'s ``dvfs``: what the shipped
    scenarios write).  A copy."""
    return copy.deepcopy(_sections_added_later())


# -- resolved.yaml ---------------------------------------------------------------------------------
def resolved(raw: Mapping[str, Any] | None, today: Mapping[str, Any] | None = None,
             from_round: int = 1) -> Upgraded[dict[str, Any] | None]:
    """A run's ``resolved.yaml`` record in today's shape.

    Parameters
    ----------
    raw : mapping or None
        The record as read; None when the run has none.
    today : mapping, optional
        What today's code resolves the run's scenario to (:attr:`sfl_sim.runs.resolved.Resolution.record`).
    from_round : int
        The first round the run trains from now on (the resume's), from which an energy record
        adopted from ``today`` applies.

    Returns
    -------
    Upgraded
        None for a run made before the record existed, with a note that its defaults and versions
        cannot be checked.  Otherwise a copy of the record with ``compression: {}`` when it has none
        (made before compression existed: it applied none) and, given ``today``: each parameter of
        a component named as today and each training setting it lacks at today's value (added to
        the code later, when the simulator did what its default does); and, without ``energy``
        (made before energy accounting), today's energy record (its ``energy.device`` component
        too) with ``from_round``, and a note saying so when today's names a device.
    """
    if raw is None:
        return Upgraded(None, (f"has no {RESOLVED_FILE} (made before it was recorded): its component defaults and "
                               f"versions cannot be checked against this code",))
    record = copy.deepcopy(dict(raw))
    record.setdefault(RESOLVED_COMPRESSION, {})
    if today is None:
        return Upgraded(record)
    components, now = record.setdefault(RESOLVED_COMPONENTS, {}), today.get(RESOLVED_COMPONENTS) or {}
    for key, entry in components.items():
        current = now.get(key)
        if isinstance(entry, dict) and isinstance(current, Mapping) and entry.get("name") == current.get("name"):
            entry["params"] = {**copy.deepcopy(dict(current.get("params") or {})), **(entry.get("params") or {})}
    if RESOLVED_TRAINING in record:
        record[RESOLVED_TRAINING] = {**copy.deepcopy(dict(today.get(RESOLVED_TRAINING) or {})),
                                     **(record[RESOLVED_TRAINING] or {})}
    notes: tuple[str, ...] = ()
    if RESOLVED_ENERGY not in record and RESOLVED_ENERGY in today:
        device = now.get(ENERGY_DEVICE_FIELD)
        if device is not None:
            components[ENERGY_DEVICE_FIELD] = copy.deepcopy(device)
            notes = (f"was made before energy accounting ({RESOLVED_FILE} has no energy): its rounds so far have "
                     f"no energy rows; rounds it trains from now on are charged with energy.device "
                     f"{device['name']!r}",)
        record[RESOLVED_ENERGY] = {**copy.deepcopy(today[RESOLVED_ENERGY]), ENERGY_FROM_ROUND: from_round}
    return Upgraded(record, notes)


# -- the per-round logs ----------------------------------------------------------------------------
def missing_file(name: str) -> str:
    """Why a run directory may lack ``name`` (one of :data:`FILES_ADDED_LATER`), for a message."""
    return f"runs made before {name} existed have none: {FILES_ADDED_LATER[name]} went unrecorded"


def log_rows(header: Sequence[str], rows: Iterable[Sequence[str]], columns: Sequence[str],
             fill: Mapping[str, str] | None = None) -> list[list[str]]:
    """The rows of a per-round log written under ``header`` as rows of today's ``columns``.

    Each cell is matched by its column's name in the file's own header: a column the file lacks
    (added after it was written) is ``fill``'s value for it where ``fill`` knows what the run did
    then (:func:`log_fill`), else empty; a column today's lacks is left out.  Blank lines are
    skipped.
    """
    where = {c: i for i, c in enumerate(header)}
    fill = fill or {}
    return [[row[where[c]] if c in where and where[c] < len(row) else ("" if c in where else fill.get(c, ""))
             for c in columns] for row in rows if row]


def log_text(text: str, columns: Sequence[str], fill: Mapping[str, str] | None = None) -> str:
    """A per-round log's text (header first) with today's header ``columns`` (:func:`log_rows`, with
    ``fill``; lines end in ``\\n``); a file already written under ``columns`` is returned as it is."""
    head = text.partition("\n")[0].rstrip("\r")
    if head == ",".join(columns):
        return text
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None) or []
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(log_rows(header, reader, columns, fill))
    return out.getvalue()


#: The per-round logs that gained a ``cell`` column after runs were already being made
#: (:func:`log_fill` says what a file written before it recorded).
LOGS_WITH_CELL_ADDED_LATER: tuple[str, ...] = (SLOTS_FILE, CLIENTS_FILE)


def log_fill(name: str, has_network: bool) -> dict[str, str]:
    """What the log ``name`` written before a column added later did record (:func:`log_rows`'s ``fill``).

    ``slots.csv``'s and ``clients.csv``'s ``cell`` (:data:`LOGS_WITH_CELL_ADDED_LATER`): a run
    without ``cell.network`` has one cell, so each grant and each client-round was cell 0; a network
    run's rows made before the column do not say which cell granted them or served the client (empty:
    unknown, never a guess).  Any other log: nothing (a column it lacks reads empty).
    """
    return {"cell": "0"} if name in LOGS_WITH_CELL_ADDED_LATER and not has_network else {}


def slots_fill(has_network: bool) -> dict[str, str]:
    """What a ``slots.csv`` written before its ``cell`` column did record: :func:`log_fill` of it."""
    return log_fill(SLOTS_FILE, has_network)


# -- checkpoint.pt ---------------------------------------------------------------------------------
def cell_state(saved: Any, fresh: Mapping[str, Any], scenario: Mapping[str, Any]) -> Any:
    """A cell state (:meth:`sfl_sim.channel.Cell.state_dict`) saved by an older cell, in today's layout.

    Parameters
    ----------
    saved : Any
        The state as saved.
    fresh : mapping
        The ``state_dict()`` of the cell as built to continue the run, before it loads anything.
    scenario : mapping
        The run's scenario (today's shape), which says its power control and interference.

    Returns
    -------
    Any
        A version-1 state (saved before uplink power control and interference, when clients sent
        at full power without interference) as the next version, for a cell whose power control and
        interference are the defaults (``fixed``, ``none``): the interference stream as built (the
        default model never draws from it), the noise rise as built (1) and the two components'
        types added.  A component type saved under the module its class lived in then (a refactor
        has moved it since) named as ``fresh`` names it: a class is the same where its name is.
        Anything else as it is (the cell checks it, and refuses a version-1 state).
    """
    return _components_where_they_live(_cell_version_2(saved, fresh, scenario), fresh)


def _components_where_they_live(state: Any, fresh: Mapping[str, Any]) -> Any:
    """``state`` with each component type whose class name (its last dotted part) is ``fresh``'s
    named as ``fresh`` names it (``module.Class`` today)."""
    types, today = (state.get("component_types"), fresh.get("component_types")) if isinstance(state, Mapping) \
        else (None, None)
    if not isinstance(types, Mapping) or not isinstance(today, Mapping):
        return state
    moved = {k: today[k] for k, v in types.items()
             if isinstance(v, str) and isinstance(today.get(k), str) and v != today[k]
             and v.rpartition(".")[2] == today[k].rpartition(".")[2]}
    return {**state, "component_types": {**types, **moved}} if moved else state


def _cell_version_2(saved: Any, fresh: Mapping[str, Any], scenario: Mapping[str, Any]) -> Any:
    """A version-1 cell state as version 2 (:func:`cell_state`); anything else as it is."""
    if not isinstance(saved, Mapping) or saved.get("version") != 1 or "interference_rng" in saved:
        return saved
    cell, default = scenario.get("cell") or {}, _defaults()["cell"]
    added = ("power_control", "interference")
    if any(not isinstance(cell.get(k), Mapping) or cell[k].get("name") != default[k]["name"] for k in added):
        return saved
    upgraded = dict(saved, version=_CELL_STATE_WITH_POWER_CONTROL, interference_rng=fresh["interference_rng"],
                    noise_rise=fresh["noise_rise"])
    types = saved.get("component_types")
    if isinstance(types, Mapping):
        upgraded["component_types"] = {**types, **{k: fresh["component_types"][k] for k in added}}
    return upgraded


def checkpoint(saved: Mapping[str, Any], fresh: Mapping[str, Any], scenario: Mapping[str, Any]) -> dict[str, Any]:
    """A checkpoint's mapping (as :func:`sfl_sim.runs.checkpoint.read` gives it) in today's layout.

    Parameters
    ----------
    saved : mapping
        The checkpoint as read.
    fresh : mapping
        The run as built to continue it, before it loads anything, in the checkpoint's layout:
        at least ``counters`` (all zero), ``rng`` (its streams' first states), ``cell`` (the cell's
        ``state_dict()``) and ``energy`` (the energy ledger's, ``{}`` without one); ``algorithm``, its
        ``state_dict()``, where a rule needs it.
    scenario : mapping
        The run's scenario (today's shape).

    Returns
    -------
    dict
        ``saved`` with each of :data:`CHECKPOINT_FIELDS_ADDED_LATER` it lacks as ``fresh`` has it
        (an energy ledger that starts from zero) and an energy state's entries added later as in
        ``fresh``; each of :data:`STREAMS_ADDED_LATER` it lacks at its first state (it was never
        drawn from); each counter it lacks at zero; the cell's state through :func:`cell_state`;
        an algorithm state without the clients' own streams (``client_work``, where ``fresh``'s
        ``algorithm`` has them: made before each client's work drew from its own stream) at the
        checkpoint's round with no stream drawn — so the next round draws from its own streams,
        not again from round 0's.
    """
    out = dict(saved)
    for name in CHECKPOINT_FIELDS_ADDED_LATER:
        if name not in out:
            out[name] = fresh[name]
    if out["energy"] and fresh["energy"]:
        out["energy"] = {**fresh["energy"], **out["energy"]}
    rng = dict(out["rng"])
    for name in STREAMS_ADDED_LATER:
        if name not in rng and name in fresh["rng"]:
            rng[name] = fresh["rng"][name]
    out["rng"] = rng
    out["counters"] = {**fresh["counters"], **out["counters"]}
    out["cell"] = cell_state(out["cell"], fresh["cell"], scenario)
    algorithm, built = out.get("algorithm"), fresh.get("algorithm")
    if (isinstance(algorithm, Mapping) and isinstance(built, Mapping) and "client_work" in built
            and "client_work" not in algorithm):
        out["algorithm"] = {**algorithm, "client_work": {"rounds_run": int(out["round"]), "streams": {}}}
    return out


# -- summary.json ----------------------------------------------------------------------------------
def summary(data: dict[str, Any]) -> dict[str, Any]:
    """A run's ``summary.json`` mapping in today's shape: ``client_updates``, when absent, is
    ``client_rounds`` less the client-rounds of ``dropped_clients_by_cause`` (both recorded since
    before it was); left absent when the summary lacks them.  A copy when anything is added."""
    rounds, by_cause = data.get("client_rounds"), data.get("dropped_clients_by_cause")
    if ("client_updates" in data or not isinstance(rounds, int) or isinstance(rounds, bool)
            or not isinstance(by_cause, dict) or not all(isinstance(n, int) for n in by_cause.values())):
        return data
    return {**data, "client_updates": rounds - sum(by_cause.values())}


# -- directories made before the marker (.sfl-sim.json) --------------------------------------------
def _first_line(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8") as fh:
            return fh.readline().rstrip("\n")
    except (OSError, UnicodeDecodeError):
        return None


def made_before_marker(kind: str, file: Path, record: str | None = None) -> bool:
    """Whether ``file``, in a directory without a marker (:mod:`sfl_sim.runs.rundir.marker`), is one
    an sfl-sim older than the marker wrote as a ``kind`` directory's — so sfl-sim may rewrite it.

    What each kind of directory wrote, recognised by what it holds:

    * ``run``: the directory's ``summary.json`` is a mapping with an integer ``schema_version`` and
      a run status (what every run writes at its first evaluation, before its first checkpoint);
    * ``scenario``: ``summary.csv`` starts with its header, ``summary.md`` with its title;
    * ``study``: ``runs.csv`` starts with its header; ``study.yaml`` is identical to ``record``
      (the study's record as it would be written: rewriting it changes nothing);
    * ``report``: the folder's ``README.md`` starts with the report's title;
    * ``plots``, ``cell_report``, ``trace_report``: nothing (their figures cannot be told from a
      user's own, and the command remakes them in seconds: an older folder's files are refused,
      never overwritten).

    Parameters
    ----------
    kind : str
        ``run``, ``scenario``, ``study`` or ``report``.
    file : Path
        A file sfl-sim would write that exists.
    record : str, optional
        A study's ``study.yaml`` as it would be written.
    """
    if kind == "run":
        try:
            data = json.loads((file.parent / SUMMARY_FILE).read_text())
        except (OSError, ValueError, UnicodeDecodeError):
            return False
        return (isinstance(data, dict) and isinstance(data.get("schema_version"), int)
                and data.get("status") in RUN_STATUSES)
    if kind == "scenario":
        first = _first_line(file)
        if file.name == SCENARIO_SUMMARY_CSV:
            return first is not None and first.startswith(SCENARIO_SUMMARY_CSV_HEADER_START)
        return first == SCENARIO_SUMMARY_MD_TITLE
    if kind == "study":
        if file.name == STUDY_STATUS_FILE:
            first = _first_line(file)
            return first is not None and first.startswith(STUDY_STATUS_HEADER_START)
        try:
            return record is not None and file.read_text(encoding="utf-8") == record
        except (OSError, UnicodeDecodeError):
            return False
    if kind == "report":
        return _first_line(file.parent / "README.md") == REPORT_README_TITLE
    if kind in ("plots", "cell_report", "trace_report"):
        return False
    raise ValueError(f"kind: got {kind!r}; allowed: run, scenario, study, report, plots, cell_report, trace_report")


# -- work.jsonl.gz ---------------------------------------------------------------------------------
def unbound_work_record(summary: Mapping[str, Any]) -> str | None:
    """None when a complete run's ``summary.json`` binds its work record (its
    :data:`~sfl_sim.runs.rundir.schema.WORK_SHA256`); else what a reader says of a run made before
    records were bound: its record can be checked against the run's counts only."""
    if summary.get(WORK_SHA256) is not None:
        return None
    return f"no {WORK_SHA256} (made before sfl-sim bound work records to their runs)"
