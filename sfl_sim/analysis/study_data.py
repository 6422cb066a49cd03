"""Many run directories as tidy tables: discovery, fast loading, and each run's coordinates.

A *study* here is any set of run directories — the output of ``sfl-sim study``, of several
``sfl-sim scenario`` calls, or a hand-picked list. Each run gets coordinates:

``algorithm``
    ``summary.json`` ``label``, else ``scenario.algorithm.label``, else ``.name``, else the
    directory name. Runs sharing a label whose ``algorithm`` blocks differ get the differing
    fields appended (``scala [temperature=2]``), so two variants never merge.
``seed``
    The study coordinate ``seed``, else ``scenario.seed``, else ``summary.seed``.
``setting``
    Everything else that makes runs different experiments. When every run's ``summary.json``
    carries ``coordinates`` (``sfl-sim study`` writes them) and they are consistent with the
    scenarios, the setting is those coordinates less ``seed`` and the algorithm. Otherwise it is
    inferred: the flattened scenario fields (dotted paths) whose values differ between the runs
    given, leaving out :data:`NON_SETTING_FIELDS` (the seed, the algorithm, names, paths, host-only
    knobs); each scenario is read in today's shape (:meth:`sfl_sim.runs.rundir.reader.RunFiles.scenario_today`: a
    field a run lacks has its default), and the default component of a section added later with its
    parameters unstated (``energy.device: {name: dvfs}``) reads as the stated defaults
    (:func:`sfl_sim.runs.rundir.reader.sections_added_later`).
    A varying field inside a component spec whose ``name`` varies too is reported as the whole spec
    (``data.partition=dirichlet(beta=0.1)``), the way a study grid names it.
    ``rounds`` *is* part of the setting: a 150-round and a 500-round run have different final
    accuracies, so they are never averaged as replicates unless asked (``ignore=("rounds",)``).

Runs are grouped by (setting, algorithm) with seeds as replicates, and paired across algorithms
by (setting, seed): same seed, same cell, partition and initial weights.

Loading reads every file once and parses all ``metrics.csv`` (and ``rounds.csv``) files in one
:func:`pandas.read_csv` call, so a thousand runs load in about a second. :func:`read_run_dirs` is
the one reading of run directories in the analysis: :func:`load_study` makes a study of what it
read (:func:`study_of`), :func:`sfl_sim.analysis.runs.load_runs` one run object per directory.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sfl_sim.analysis.readers import (
    RunFormatError,
    check_schema_version,
    empty_clients,
    read_clients,
    read_metrics,
    read_scenario,
    read_summary,
)
from sfl_sim.runs.rundir import reader
from sfl_sim.runs.rundir.schema import (
    HOST_ONLY_FIELDS,
    METRICS_COLUMNS,
    METRICS_FILE,
    ROUNDS_COLUMNS,
    ROUNDS_FILE,
    ROUNDS_NUMERIC_COLUMNS,
    SCENARIO_FILE,
    SUMMARY_FILE,
)

__all__ = [
    "GROUP_KEYS",
    "NON_SETTING_FIELDS",
    "StudyError",
    "StudyData",
    "find_run_dirs",
    "is_run_dir",
    "load_study",
    "RunFiles",
    "read_run_dirs",
    "study_of",
    "Coordinates",
    "run_coordinates",
    "short_field_names",
    "format_value",
]

#: Scenario fields never part of a setting: the seed and the algorithm (coordinates of their own),
#: names, the device a run used, the analysis-only target list, the data set's location, and the
#: host-only fields of :data:`sfl_sim.runs.rundir.schema.HOST_ONLY_FIELDS`. A field is left out with
#: everything below it (``algorithm`` covers ``algorithm.lr``).
NON_SETTING_FIELDS: tuple[str, ...] = (
    "seed",
    "algorithm",
    "algorithms",
    "name",
    "device_used",
    "target_accuracies",
    "data.dataset.data_root",
    *HOST_ONLY_FIELDS,
)

#: The columns runs are grouped by, seeds being replicates: every table's (setting, algorithm).
GROUP_KEYS: tuple[str, str] = ("setting", "algorithm")

_MISSING = object()  # a field absent from one run's scenario


class StudyError(ValueError):
    """The runs given cannot form a study (none found, duplicates, unknown reference, ...)."""


# --------------------------------------------------------------------------------- discovery


def is_run_dir(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a run directory (holds ``summary.json`` and ``metrics.csv``).

    Parameters
    ----------
    path : str or os.PathLike
        Any path.

    Returns
    -------
    bool
    """
    p = Path(path)
    return (p / SUMMARY_FILE).is_file() and (p / METRICS_FILE).is_file()


def find_run_dirs(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Run directories at or below the given paths.

    A run directory is a directory holding ``summary.json`` and ``metrics.csv``; the search does
    not descend into one. Hidden directories (``.name``) are skipped; symbolic links are followed
    once (a link loop is not walked twice).

    Parameters
    ----------
    paths : path or iterable of paths
        Run directories, scenario output directories (run directories below), study directories,
        or any folder holding those, at any depth.

    Returns
    -------
    list of pathlib.Path
        The run directories: for each given path in order, those found below it sorted by path;
        a directory reached twice is listed once.

    Raises
    ------
    FileNotFoundError
        If a given path does not exist.
    NotADirectoryError
        If a given path is a file.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found: list[Path] = []
    seen_runs: set[str] = set()
    visited: set[str] = set()

    def walk(d: Path) -> None:
        real = os.path.realpath(d)
        if real in visited:
            return
        visited.add(real)
        if is_run_dir(d):
            if real not in seen_runs:
                seen_runs.add(real)
                found.append(d)
            return
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except PermissionError:
            return
        for e in entries:
            if not e.name.startswith(".") and e.is_dir():
                walk(Path(e.path))

    for p in paths:
        p = Path(p)
        if not p.exists():
            raise FileNotFoundError(f"{p} does not exist")
        if not p.is_dir():
            raise NotADirectoryError(f"{p} is not a directory")
        walk(p)
    return found


# --------------------------------------------------------------------------------- values


def _canon(value: Any) -> Any:
    """A hashable, order-independent key for a YAML value (dicts compared by content; 1, 1.0 and
    True kept apart)."""
    if value is _MISSING:
        return "\x00missing"
    if value is None or isinstance(value, (str, int, float, bool)):
        return (type(value).__name__, value)
    return json.dumps(value, sort_keys=True, default=str)


def _fmt_scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower() if value is not None else "null"
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e6:
            return str(int(value))
        short = format(value, ".6g")
        return short if float(short) == value else repr(value)
    return str(value)


def format_value(value: Any) -> str:
    """Short, readable text of a coordinate value.

    A component spec ``{name: dirichlet, beta: 0.1}`` reads ``dirichlet(beta=0.1)``; other
    mappings ``{k=v, ...}``; lists ``[a, b]``; floats without trailing noise (``1e+09``).

    Parameters
    ----------
    value : Any
        A YAML value (scalar, list, mapping).

    Returns
    -------
    str
    """
    if value is _MISSING:
        return "-"
    if isinstance(value, Mapping):
        items = [f"{k}={format_value(v)}" for k, v in value.items() if k != "name"]
        if "name" in value:
            return f"{value['name']}({', '.join(items)})" if items else str(value["name"])
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return _fmt_scalar(value)


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted path -> leaf value (lists and empty mappings are leaves)."""
    out: dict[str, Any] = {}
    for k, v in data.items():
        path = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(_flatten(v, path + "."))
        else:
            out[path] = v
    return out


def _lookup(data: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(data, Mapping) or part not in data:
            return _MISSING
        data = data[part]
    return data


def _excluded(path: str, excluded: frozenset[str] | Sequence[str]) -> bool:
    """Whether ``path`` or one of its ancestors (``a`` for ``a.b``) is in ``excluded``."""
    if path in excluded:
        return True
    i = path.find(".")
    while i != -1:
        if path[:i] in excluded:
            return True
        i = path.find(".", i + 1)
    return False


def _natural_key(value: Any) -> tuple:
    """Sort key: missing first, then numbers by value, then text with numbers compared as numbers
    (``alpha=2`` before ``alpha=10``)."""
    if value is _MISSING or value is None:
        return (0, 0.0, ())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (1, float(value), ())
    parts = re.split(r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?)", format_value(value))
    return (2, 0.0, tuple((0, float(x), "") if i % 2 else (1, 0.0, x) for i, x in enumerate(parts) if x))


# --------------------------------------------------------------------------------- coordinates


def _varying(flat: Sequence[Mapping[str, Any]]) -> list[str]:
    """Paths (in first-appearance order) whose values are not the same in every run."""
    order: dict[str, None] = {}
    for f in flat:
        order.update(dict.fromkeys(f))
    return [p for p in order if len({_canon(f.get(p, _MISSING)) for f in flat}) > 1]


def _collapse(paths: Sequence[str], scenarios: Sequence[Mapping[str, Any]]) -> list[str]:
    """Replace a varying leaf by its nearest enclosing component spec whose ``name`` varies."""
    varying = set(paths)
    out: dict[str, None] = {}
    for p in paths:
        parts = p.split(".")
        target = p
        for i in range(len(parts) - 1, 0, -1):
            anc = ".".join(parts[:i])
            if f"{anc}.name" in varying and any(
                isinstance(_lookup(s, anc), Mapping) for s in scenarios
            ):
                target = anc
                break
        out[target] = None
    return list(out)


def _with_sections_added_later(scenario: Mapping[str, Any]) -> Mapping[str, Any]:
    """``scenario`` with every field of :func:`sfl_sim.runs.rundir.reader.sections_added_later` it
    lacks, the parameters a default component there leaves unstated included, as the default."""
    return reader.with_sections_added_later(scenario)


def _spec_view(value: Any, spec_path: str, varying: Sequence[str]) -> Any:
    """A collapsed spec shown as its name plus the sub-fields that vary among the runs (less those
    at their :func:`~sfl_sim.runs.rundir.reader.sections_added_later` default, when the spec is that
    default component: ``device=dvfs``, not its nine default parameters)."""
    if not isinstance(value, Mapping):
        return value
    keep = {p[len(spec_path) + 1:].split(".")[0] for p in varying if p.startswith(spec_path + ".")}
    keep.add("name")
    default = _lookup(reader.sections_added_later(), spec_path)
    if not isinstance(default, Mapping) or default.get("name") != value.get("name"):
        default = {}
    return {k: v for k, v in value.items() if k in keep and (k == "name" or k not in default or v != default[k])}


@dataclass(frozen=True)
class Coordinates:
    """Where each run of a set sits: its setting, algorithm and seed.

    Attributes
    ----------
    fields : tuple of str
        The dotted setting fields, in scenario order (or the study's coordinate order); empty
        when every run has the same setting.
    values : list of dict
        Per run, ``{field: display text}`` (:func:`format_value`; ``"-"`` where a run lacks it).
    algorithms : list of str
        Per run, the algorithm coordinate.
    seeds : list
        Per run, the seed (an int; None when no file names one).
    sort_keys : list of tuple
        Per run, a key that orders settings naturally (numbers by value, ``alpha=2`` before
        ``alpha=10``).
    """

    fields: tuple[str, ...]
    values: list[dict[str, str]]
    algorithms: list[str]
    seeds: list[Any]
    sort_keys: list[tuple]


def run_coordinates(
    scenarios: Sequence[Mapping[str, Any]],
    summaries: Sequence[Mapping[str, Any]],
    names: Sequence[str] | None = None,
    ignore: Sequence[str] = (),
    basis: Sequence[bool] | None = None,
) -> Coordinates:
    """Setting, algorithm and seed of each of a set of runs.

    Parameters
    ----------
    scenarios : sequence of mapping
        Each run's ``scenario.yaml`` (as :func:`load_study` reads it, in today's shape).
    summaries : sequence of mapping
        Each run's ``summary.json`` (same order).
    names : sequence of str, optional
        Fallback algorithm names (e.g. the directory names).
    ignore : sequence of str, optional
        Extra dotted fields to leave out of the setting (and everything below them), e.g.
        ``("rounds",)`` to pool runs of different lengths.
    basis : sequence of bool, optional
        Per run, whether it defines the coordinates (default: every run). The setting fields and
        the algorithm variants are those that differ among the basis runs; the other runs get
        their values on those fields, so a run outside the basis (an incomplete run the report
        leaves out) never renames the settings of the runs that remain. No basis run: every run.

    Returns
    -------
    Coordinates
        The setting comes from the summaries' ``coordinates`` when every basis run has them and
        they cover every scenario field that varies; otherwise it is inferred from the scenarios
        (see the module docstring).
    """
    n = len(scenarios)
    scenarios = [_with_sections_added_later(s) for s in scenarios]
    names = list(names) if names is not None else [""] * n
    base = [i for i in range(n) if basis is None or basis[i]] or list(range(n))
    excluded = frozenset(NON_SETTING_FIELDS) | frozenset(ignore)
    flat = [
        {p: v for p, v in _flatten(s).items() if not _excluded(p, excluded)} for s in scenarios
    ]
    varying = _varying([flat[i] for i in base])
    inferred = _collapse(varying, [scenarios[i] for i in base])

    fields = inferred
    raw: list[dict[str, Any]] = [
        {f: _spec_view(_lookup(s, f), f, varying) for f in inferred} for s in scenarios
    ]
    coords: list[Any] = [s.get("coordinates") for s in summaries]
    if n and all(isinstance(coords[i], Mapping) for i in base):
        keys: dict[str, None] = {}
        for i in base:
            keys.update(dict.fromkeys(k for k in coords[i] if not _excluded(k, excluded)))
        study_fields = list(keys)
        # trust the study's own coordinates only if they account for every field that varies
        covered = all(
            any(f == k or f.startswith(k + ".") or k.startswith(f + ".") for k in study_fields)
            for f in inferred
        )
        if covered:
            fields = study_fields
            raw = [{f: c.get(f, _MISSING) for f in fields} if isinstance(c, Mapping)
                   else {f: _lookup(s, f) for f in fields} for c, s in zip(coords, scenarios, strict=True)]

    seeds: list[Any] = []
    for s, summ, c in zip(scenarios, summaries, coords, strict=True):
        seed = c.get("seed") if isinstance(c, Mapping) and "seed" in c else s.get("seed", summ.get("seed"))
        seeds.append(int(seed) if isinstance(seed, (int, float)) and not isinstance(seed, bool) else seed)
    return Coordinates(
        fields=tuple(fields),
        values=[{f: format_value(v) for f, v in r.items()} for r in raw],
        algorithms=_algorithms(scenarios, summaries, names, set(base)),
        seeds=seeds,
        sort_keys=[tuple(_natural_key(r[f]) for f in fields) for r in raw],
    )


def _algorithms(
    scenarios: Sequence[Mapping[str, Any]], summaries: Sequence[Mapping[str, Any]], names: Sequence[str],
    base: set[int] | None = None,
) -> list[str]:
    labels = []
    for s, summ, name in zip(scenarios, summaries, names, strict=True):
        algorithm = s.get("algorithm")
        declared: Mapping[str, Any] = algorithm if isinstance(algorithm, Mapping) else {}
        label = summ.get("label") or declared.get("label") or declared.get("name") or name
        labels.append(str(label))
    out = list(labels)
    for label in dict.fromkeys(labels):
        idx = [i for i, lab in enumerate(labels) if lab == label]
        if len(idx) < 2:
            continue
        specs = {}
        for i in idx:
            spec = scenarios[i].get("algorithm")
            spec = dict(spec) if isinstance(spec, Mapping) else {}
            spec.pop("label", None)
            specs[i] = _flatten(spec)
        # variants are told apart by what differs among the basis runs (see run_coordinates)
        ref = [i for i in idx if base is None or i in base] or idx
        diff = _varying([specs[i] for i in ref])
        if diff:
            for i in idx:
                extra = ", ".join(f"{p}={format_value(specs[i].get(p, _MISSING))}" for p in diff)
                out[i] = f"{label} [{extra}]"
    return out


def short_field_names(fields: Sequence[str]) -> dict[str, str]:
    """Shortest dotted suffix of each field that is unique among ``fields``.

    Parameters
    ----------
    fields : sequence of str
        Dotted field names, e.g. ``("data.partition", "clients.participation")``.

    Returns
    -------
    dict
        ``{field: short name}``, e.g. ``{"data.partition": "partition", ...}``.
    """
    out = {}
    for f in fields:
        parts = f.split(".")
        for k in range(1, len(parts) + 1):
            cand = ".".join(parts[-k:])
            if sum(1 for g in fields if g == cand or g.endswith("." + cand)) == 1:
                out[f] = cand
                break
        else:
            out[f] = f
    return out


# --------------------------------------------------------------------------------- loading


@dataclass(frozen=True)
class StudyData:
    """All runs of a study as tidy tables.

    Attributes
    ----------
    runs : pandas.DataFrame
        One row per run, indexed by nothing special, columns: ``run_id`` (0..n-1), ``path``,
        ``setting`` (readable label, e.g. ``"partition=dirichlet(beta=0.1)"``), ``algorithm``,
        ``seed``, ``label``, ``status``, ``evaluated``, ``rounds_planned``, ``client_updates``
        (summary.json's; NaN where it has none), ``n_cells`` (summary.json's: the cells of a run
        with ``cell.network``; NaN without one), then one column per setting field (dotted name,
        display text).
    metrics : pandas.DataFrame
        Every run's ``metrics.csv`` stacked: ``run_id``, ``setting``, ``algorithm``, ``seed``,
        then :data:`~sfl_sim.runs.rundir.schema.METRICS_COLUMNS`; sorted by ``run_id`` then ``round``.
        A round-0 row (the initial model, at ``sim_time_s`` 0) is kept when present.
    rounds : pandas.DataFrame
        Every ``rounds.csv`` stacked (numeric columns only): ``run_id``, ``setting``,
        ``algorithm``, ``seed``, then :data:`~sfl_sim.runs.rundir.schema.ROUNDS_NUMERIC_COLUMNS`. Runs
        without the file have no rows.
    setting_fields : tuple of str
        The dotted scenario fields that define a setting (empty when all runs share one).
    settings : tuple of str
        Setting labels in display order (natural order of the coordinate values).
    algorithms : tuple of str
        Algorithm labels, sorted.
    targets : tuple of float
        The ``target_accuracies`` common to every run's scenario (the report's default targets).
    clients : pandas.DataFrame
        Every ``clients.csv`` stacked (:func:`sfl_sim.analysis.readers.read_clients`): ``run_id``,
        ``setting``, ``algorithm``, ``seed``, then :data:`~sfl_sim.runs.rundir.schema.CLIENTS_COLUMNS`;
        sorted by ``run_id``, ``round``, then cohort order.  Runs without the file have no rows.
    """

    runs: pd.DataFrame
    metrics: pd.DataFrame
    rounds: pd.DataFrame
    setting_fields: tuple[str, ...]
    settings: tuple[str, ...]
    algorithms: tuple[str, ...]
    targets: tuple[float, ...] = ()
    clients: pd.DataFrame = field(default_factory=lambda: _stacked_clients([]))

    def setting_values(self, setting: str) -> dict[str, str]:
        """``{field: display value}`` of one setting label."""
        row = self.runs.loc[self.runs["setting"] == setting].iloc[0]
        return {f: row[f] for f in self.setting_fields}

    def select(self, run_ids: Iterable[int]) -> StudyData:
        """The same study restricted to some runs (orders of settings and algorithms kept).

        Parameters
        ----------
        run_ids : iterable of int
            ``run_id`` values to keep.

        Returns
        -------
        StudyData
        """
        keep = set(int(i) for i in run_ids)
        runs = self.runs.loc[self.runs["run_id"].isin(keep)].reset_index(drop=True)
        present_s, present_a = set(runs["setting"]), set(runs["algorithm"])
        return StudyData(
            runs=runs,
            metrics=self.metrics.loc[self.metrics["run_id"].isin(keep)].reset_index(drop=True),
            rounds=self.rounds.loc[self.rounds["run_id"].isin(keep)].reset_index(drop=True),
            clients=self.clients.loc[self.clients["run_id"].isin(keep)].reset_index(drop=True),
            setting_fields=self.setting_fields,
            settings=tuple(s for s in self.settings if s in present_s),
            algorithms=tuple(a for a in self.algorithms if a in present_a),
            targets=self.targets,
        )


def _stack_csv(
    texts: Sequence[str | None],
    columns: Sequence[str],
    usecols: Sequence[str],
    slow: Callable[[int], pd.DataFrame],
) -> pd.DataFrame:
    """Parse many CSV texts with the same header in one read_csv call.

    Each file's rows are prefixed with its index (``run_id``); files whose header is not exactly
    ``columns`` are read one by one by ``slow(i)`` (which validates and reorders).
    """
    header = ",".join(columns)
    parts: list[str] = []
    extra: list[pd.DataFrame] = []
    for i, text in enumerate(texts):
        if text is None:
            continue
        head, _, body = text.partition("\n")
        if head.strip() != header:
            frame = slow(i)
            frame.insert(0, "run_id", i)
            extra.append(frame[["run_id", *usecols]])
            continue
        body = body.rstrip()
        if body:
            parts.append(f"{i}," + body.replace("\n", f"\n{i},") + "\n")
    names = ["run_id", *columns]
    if parts:
        frame = pd.read_csv(
            io.StringIO("".join(parts)),
            header=None,
            names=names,
            usecols=["run_id", *usecols],
            skip_blank_lines=True,
        )[["run_id", *usecols]]
    else:
        frame = pd.DataFrame({c: pd.Series(dtype="float64") for c in ["run_id", *usecols]})
    if extra:
        frame = pd.concat([frame, *extra], ignore_index=True)
    return frame


def _read_rounds_slow(path: Path) -> pd.DataFrame:
    try:
        df = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
        raise RunFormatError(f"{path}: cannot parse CSV: {exc}") from exc
    for c in ROUNDS_NUMERIC_COLUMNS:
        df[c] = pd.to_numeric(df[c], errors="coerce") if c in df.columns else np.nan
    return df[list(ROUNDS_NUMERIC_COLUMNS)]


@dataclass(frozen=True)
class RunFiles:
    """What a set of run directories holds, each file read once (:func:`read_run_dirs`).

    The one reading of run directories: :func:`load_study` makes a study of it, and
    :func:`sfl_sim.analysis.runs.load_runs` one :class:`~sfl_sim.analysis.runs.Run` per directory.

    Attributes
    ----------
    dirs : tuple of pathlib.Path
        The run directories as given; a run's position here is its ``run_id``.
    summaries : tuple of dict
        Each run's ``summary.json`` (unknown keys kept).
    scenarios : tuple of dict
        Each run's ``scenario.yaml``.
    metrics : pandas.DataFrame
        Every ``metrics.csv`` stacked: ``run_id``, then :data:`~sfl_sim.runs.rundir.schema.METRICS_COLUMNS`;
        sorted by ``run_id`` then ``round``.
    rounds : pandas.DataFrame
        Every ``rounds.csv`` stacked (numeric columns only): ``run_id``, then
        :data:`~sfl_sim.runs.rundir.schema.ROUNDS_NUMERIC_COLUMNS`; sorted likewise. Runs without the
        file (or all, when it was not asked for) have no rows.
    clients : pandas.DataFrame
        Every ``clients.csv`` stacked: ``run_id``, then :data:`~sfl_sim.runs.rundir.schema.CLIENTS_COLUMNS`
        (:func:`sfl_sim.analysis.readers.read_clients`); runs without the file (or all, when it was
        not asked for) have no rows.
    """

    dirs: tuple[Path, ...]
    summaries: tuple[dict[str, Any], ...]
    scenarios: tuple[dict[str, Any], ...]
    metrics: pd.DataFrame
    rounds: pd.DataFrame
    clients: pd.DataFrame = field(default_factory=lambda: _stacked_clients([]))


def _stacked_clients(frames: Sequence[tuple[int, pd.DataFrame]]) -> pd.DataFrame:
    """``(run_id, clients frame)`` pairs as one frame with ``run_id`` first."""
    parts = [frame.assign(run_id=i) for i, frame in frames if len(frame)]
    if not parts:
        return empty_clients().assign(run_id=pd.Series(dtype="int64"))[["run_id", *empty_clients().columns]]
    stacked = pd.concat(parts, ignore_index=True)
    return stacked[["run_id", *(c for c in stacked.columns if c != "run_id")]]


def read_run_dirs(dirs: Iterable[str | os.PathLike[str]], *, rounds: bool = True, clients: bool = True) -> RunFiles:
    """Read run directories, each one exactly as given (:func:`find_run_dirs` finds them below a folder).

    Every ``metrics.csv`` (and ``rounds.csv``) is parsed in one :func:`pandas.read_csv` call; a
    file that call cannot take is read on its own (:func:`sfl_sim.analysis.readers.read_metrics`),
    so an error names it.

    Parameters
    ----------
    dirs : iterable of path
        Run directories, in the order their ``run_id`` numbers them.
    rounds : bool, optional
        Also read ``rounds.csv`` (default); without it :attr:`RunFiles.rounds` has no rows.
    clients : bool, optional
        Also read ``clients.csv`` (default); without it :attr:`RunFiles.clients` has no rows.

    Returns
    -------
    RunFiles

    Raises
    ------
    FileNotFoundError
        If a directory does not exist, or lacks ``summary.json``, ``scenario.yaml`` or
        ``metrics.csv`` (the message names the directory and the file).
    RunFormatError
        If a summary has an unsupported ``schema_version``, or a file cannot be parsed or does
        not match the schema (the message names the file).
    """
    run_dirs = [Path(d) for d in dirs]
    summaries, scenarios, metric_texts, round_texts = [], [], [], []
    for d in run_dirs:
        if not d.is_dir():
            raise FileNotFoundError(f"run dir {d} does not exist or is not a directory")
        for name in (SUMMARY_FILE, SCENARIO_FILE, METRICS_FILE):
            if not (d / name).is_file():
                raise FileNotFoundError(f"run dir {d} is missing {name}")
        summary = read_summary(d / SUMMARY_FILE)
        check_schema_version(d, summary, d / SUMMARY_FILE)
        summaries.append(summary)
        scenarios.append(reader.RunFiles.scenario_today(read_scenario(d / SCENARIO_FILE)))
        metric_texts.append(reader.RunFiles(d).text(METRICS_FILE))
        round_texts.append(reader.RunFiles(d).log_text(ROUNDS_FILE) if rounds else None)

    def slow_metrics(i: int) -> pd.DataFrame:
        return read_metrics(run_dirs[i] / METRICS_FILE)

    try:
        metrics = _stack_csv(metric_texts, METRICS_COLUMNS, METRICS_COLUMNS, slow_metrics)
        bad = [c for c in METRICS_COLUMNS if not pd.api.types.is_numeric_dtype(metrics[c])]
    except (pd.errors.ParserError, ValueError):
        bad = ["?"]
    if bad:  # find and name the offending file (the per-file reader gives the precise error)
        for i in range(len(run_dirs)):
            slow_metrics(i)
        raise RunFormatError(f"cannot parse {METRICS_FILE} files under {run_dirs[0].parent}")
    if metrics["round"].notna().all():
        metrics["round"] = metrics["round"].astype("int64")
    metrics = metrics.astype({"run_id": "int64"}).sort_values(["run_id", "round"], kind="stable")
    metrics = metrics.reset_index(drop=True)

    def slow_rounds(i: int) -> pd.DataFrame:
        return _read_rounds_slow(run_dirs[i] / ROUNDS_FILE)

    try:
        rounds_frame = _stack_csv(round_texts, ROUNDS_COLUMNS, ROUNDS_NUMERIC_COLUMNS, slow_rounds)
    except (pd.errors.ParserError, ValueError) as exc:
        raise RunFormatError(f"cannot parse the {ROUNDS_FILE} files: {exc}") from exc
    rounds_frame = rounds_frame.astype({"run_id": "int64"}).sort_values(["run_id", "round"], kind="stable")
    clients_frame = _stacked_clients([(i, read_clients(d)) for i, d in enumerate(run_dirs)] if clients else [])
    return RunFiles(tuple(run_dirs), tuple(summaries), tuple(scenarios), metrics, rounds_frame.reset_index(drop=True),
                    clients_frame)


def load_study(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    ignore: Sequence[str] = (),
    basis_statuses: Collection[str] | None = None,
    unique: bool = True,
) -> StudyData:
    """Load every run directory at or below ``paths`` into tidy tables.

    Parameters
    ----------
    paths : path or iterable of paths
        Run, scenario-output or study directories (see :func:`find_run_dirs`).
    ignore : sequence of str, optional
        Dotted scenario fields to leave out of the setting (see :func:`run_coordinates`).
    basis_statuses : collection of str, optional
        ``summary.json`` statuses of the runs that define the coordinates (default: all runs),
        e.g. ``("complete",)`` when the others will be left out: every run is loaded, but the
        setting fields and algorithm variants are those that differ among the basis runs, and
        only they must be unique by (setting, algorithm, seed). Without any such run: all runs.
    unique : bool, optional
        Refuse two runs of the same (setting, algorithm, seed) (default), which a table would
        count as two seeds; False keeps both (a plot draws a copied run beside its original).

    Returns
    -------
    StudyData

    Raises
    ------
    StudyError
        If no run directory is found, or two runs share (setting, algorithm, seed) — the message
        names both directories.
    FileNotFoundError, RunFormatError
        As :func:`read_run_dirs`.
    """
    dirs = find_run_dirs(paths)
    if not dirs:
        shown = [str(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
        raise StudyError(f"no run directories (with {SUMMARY_FILE} and {METRICS_FILE}) under {', '.join(shown)}")
    return study_of(read_run_dirs(dirs), ignore=ignore, basis_statuses=basis_statuses, unique=unique)


def study_of(
    files: RunFiles,
    *,
    ignore: Sequence[str] = (),
    basis_statuses: Collection[str] | None = None,
    unique: bool = True,
) -> StudyData:
    """The study of runs already read (:func:`read_run_dirs`): each run's coordinates, its tables.

    Parameters
    ----------
    files : RunFiles
    ignore, basis_statuses, unique
        As :func:`load_study`.

    Returns
    -------
    StudyData

    Raises
    ------
    StudyError
        If ``unique`` and two runs share (setting, algorithm, seed).
    """
    dirs, summaries, scenarios = files.dirs, files.summaries, files.scenarios
    basis = None
    if basis_statuses is not None:
        basis = [str(s.get("status", "")) in basis_statuses for s in summaries]
        basis = basis if any(basis) else None
    coords = run_coordinates(scenarios, summaries, names=[d.name for d in dirs], ignore=ignore, basis=basis)
    fields, values, algorithms, seeds = coords.fields, coords.values, coords.algorithms, coords.seeds
    short = short_field_names(fields)
    if fields:
        settings = [", ".join(f"{short[f]}={v[f]}" for f in fields) for v in values]
    else:
        common = {str(s.get("name", "")) for i, s in enumerate(scenarios) if basis is None or basis[i]}
        settings = [common.pop() if len(common) == 1 and "" not in common else "all runs"] * len(dirs)

    runs = pd.DataFrame(
        {
            "run_id": np.arange(len(dirs)),
            "path": [str(d) for d in dirs],
            "setting": settings,
            "algorithm": algorithms,
            "seed": pd.array(seeds, dtype="object"),
            "label": [str(s.get("label", d.name)) for s, d in zip(summaries, dirs, strict=True)],
            "status": [str(s.get("status", "")) for s in summaries],
            "evaluated": [str(s.get("evaluated", "")) for s in summaries],
            # a study's re-timed runs, and those whose re-timing was refused (sfl_sim.study.execute)
            "made_by": [f"re-timed from {s['retimed_from']}" if s.get("retimed_from") else
                        f"trained, re-timing refused: {s['retime_refused']}" if s.get("retime_refused") else "trained"
                        for s in summaries],
            "rounds_planned": [s.get("rounds_planned", sc.get("rounds")) for s, sc in zip(summaries, scenarios,
                                                                                          strict=True)],
            # the client updates the server used (summary.json; NaN where the run records none)
            "client_updates": [float(s["client_updates"]) if isinstance(s.get("client_updates"), (int, float))
                               else np.nan for s in summaries],
            # a network's cell count (summary.json writes it only with cell.network)
            "n_cells": [float(s["n_cells"]) if isinstance(s.get("n_cells"), int) else np.nan for s in summaries],
            **{f: [v[f] for v in values] for f in fields},
        }
    )
    if all(isinstance(s, int) for s in seeds):
        runs["seed"] = runs["seed"].astype("int64")
    if unique:
        _check_unique(runs if basis is None else runs.loc[basis])

    keys = runs[["run_id", "setting", "algorithm", "seed"]]
    metrics = keys.merge(files.metrics, on="run_id", how="right")
    rounds = keys.merge(files.rounds, on="run_id", how="right")
    clients = keys.merge(files.clients, on="run_id", how="right")

    targets = _common_targets(scenarios)
    order = sorted(range(len(dirs)), key=lambda i: coords.sort_keys[i])
    ordered_settings = tuple(dict.fromkeys(settings[i] for i in order))
    return StudyData(
        runs=runs,
        metrics=metrics,
        rounds=rounds,
        clients=clients,
        setting_fields=tuple(fields),
        settings=ordered_settings,
        algorithms=tuple(sorted(set(algorithms))),
        targets=targets,
    )


def _common_targets(scenarios: Sequence[Mapping[str, Any]]) -> tuple[float, ...]:
    """The ``target_accuracies`` every scenario lists, in the first scenario's order."""
    lists = []
    for s in scenarios:
        t = s.get("target_accuracies")
        lists.append([float(x) for x in t if isinstance(x, (int, float))] if isinstance(t, list) else [])
    if not lists:
        return ()
    common = set(lists[0]).intersection(*map(set, lists[1:]))
    return tuple(dict.fromkeys(x for x in lists[0] if x in common))


def _check_unique(runs: pd.DataFrame) -> None:
    key = runs[["setting", "algorithm", "seed"]].astype(str)
    dup = key.duplicated(keep=False)
    if dup.any():
        first = runs.loc[dup].iloc[0]
        same = runs.loc[
            (runs["setting"] == first["setting"])
            & (runs["algorithm"] == first["algorithm"])
            & (runs["seed"].astype(str) == str(first["seed"]))
        ]
        raise StudyError(
            f"runs {' and '.join(same['path'])} have the same setting ({first['setting']}), "
            f"algorithm ({first['algorithm']}) and seed ({first['seed']}); they differ only in "
            f"fields left out of the setting — pass one of them"
        )
