"""Studies: a base scenario × seeds × a grid over any scenario fields, expanded into runs.

A study file (validated like a scenario: unknown key or wrong type → one line before any work)::

    base: fashion_mnist_alpha2          # a scenario file or a shipped scenario's name
    seeds: [0, 1, 2]
    grid:                               # any scenario field; the cartesian product is the study
      data.partition: [{name: quantity, alpha: 2}, {name: dirichlet, beta: 0.1}]
      algorithms: [[{name: scala}], [{name: fedavg}]]
      cell.rate:                        # or named values: label → value (the label names the runs)
        shannon: {name: shannon}
        mcs: {name: mcs_table, table: cqi_table1}
    set:                                # optional: fields fixed for every run of the study
      rounds: 50
    output_dir: runs/studies/my_study   # optional (default runs/studies/<file stem>)

:func:`expand` turns it into :class:`StudyRun` s — one per (grid point, algorithm, seed) — each
with its own run directory named by its coordinates (``partition=dirichlet-beta0.1__alg=scala__
seed=0``: readable, stable across invocations, and made unique with a short hash of the
coordinates where two would read alike; a grid given as ``label: value`` pairs uses the labels).
Every run directory holds the same files as a single run; its ``summary.json`` also records
``coordinates``.  Execution is in
:mod:`sfl_sim.study.execute`.
"""
from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TextIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from sfl_sim.config import (
    Allowed,
    ConfigError,
    apply_override,
    format_validation_error,
    load_scenario_raw,
    read_yaml_file,
    validate,
)

__all__ = ["StudySpec", "StudyRun", "load_study", "expand", "grid_size", "study_from_scenario", "LARGE_GRID_POINTS",
           "PROGRESS_EVERY_S"]


#: What a named grid value's label may be: it becomes part of a run directory's name.
_LABEL = r"[A-Za-z0-9][A-Za-z0-9._+-]*"


class StudySpec(BaseModel):
    """A study file, validated (strict types, unknown keys refused).

    Attributes
    ----------
    base : str
        The base scenario: a path, or a shipped scenario's name.
    seeds : list of int
        Root seeds; every grid point runs once per seed (same seed = same cell, partition and
        initial weights across algorithms and settings, so results pair by seed).
    grid : dict of str to list or dict
        Dotted scenario field → the values it takes (a list), or → ``{label: value}`` (named
        values: the label stands for the value in run names, coordinates and reports, which is
        what keeps a grid over whole sections such as ``cell`` readable). The study is the
        cartesian product.
    set : dict of str to Any
        Dotted scenario field → value, applied to every run before the grid.
    output_dir : str, optional
    name : str, optional
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    base: Annotated[str, Field(min_length=1), Allowed("a scenario file or a shipped scenario's name")]
    seeds: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1),
                     Allowed("a non-empty list of distinct integers >= 0")] = Field(default_factory=lambda: [0])
    grid: Annotated[dict[str, Annotated[list[Any], Field(min_length=1)]
                         | Annotated[dict[str, Any], Field(min_length=1)]],
                    Allowed("a mapping of dotted scenario fields to non-empty lists of values "
                            "(or to non-empty mappings of label to value)")] = \
        Field(default_factory=dict)
    set: Annotated[dict[str, Any], Allowed("a mapping of dotted scenario fields to values")] = \
        Field(default_factory=dict)
    output_dir: Annotated[str, Field(min_length=1)] | None = None
    name: Annotated[str, Field(min_length=1)] | None = None

    @field_validator("grid", mode="before")
    @classmethod
    def _each_field_named(cls, grid: Any) -> Any:
        """Name the grid field whose values are refused (the whole grid's type error would not)."""
        if not isinstance(grid, dict):
            return grid  # the type's own error
        for key, values in grid.items():
            if not isinstance(key, str):
                raise PydanticCustomError("label", "{allowed}", {"label": key, "allowed": (
                    "dotted scenario field names as the grid's keys")})
            if not isinstance(values, (list, dict)) or not values:
                raise PydanticCustomError("label", "{allowed}", {"label": values, "allowed": (
                    f"{key} takes a non-empty list of values (or a non-empty mapping of label to value)")})
            bad = [k for k in values if not isinstance(k, str)] if isinstance(values, dict) else []
            if bad:
                raise PydanticCustomError("label", "{allowed}", {"label": bad[0], "allowed": (
                    f"{key} labels of letters, digits and . _ + - (they name run directories)")})
        return grid

    @field_validator("grid")
    @classmethod
    def _labels_name_directories(cls, grid: dict[str, Any]) -> dict[str, Any]:
        for key, values in grid.items():
            if key == "algorithms" and isinstance(values, dict):  # run names use each entry's own label
                raise PydanticCustomError("label", "{allowed}", {"label": values, "allowed": (
                    "algorithms as a list of algorithm lists; name a variant with its entry's label")})
            bad = [k for k in values if not re.fullmatch(_LABEL, k)] if isinstance(values, dict) else []
            if bad:
                raise PydanticCustomError("label", "{allowed}", {"label": bad[0], "allowed": (
                    f"{key} labels of letters, digits and . _ + - (they name run directories)")})
            seen: dict[str, str] = {}
            for label in values if isinstance(values, dict) else ():
                other = seen.setdefault(label.casefold(), label)
                if other != label:  # Fast and fast: one directory on a case-insensitive file system
                    raise PydanticCustomError("label", "{allowed}", {"label": label, "allowed": (
                        f"{key} labels that differ in more than case ({other!r} and {label!r} would name the "
                        f"same run directory on a case-insensitive file system)")})
        return grid

    @model_validator(mode="after")
    def _distinct(self) -> StudySpec:
        if len(set(self.seeds)) != len(self.seeds):
            raise PydanticCustomError("allowed", "{allowed}", {"allowed": "distinct seeds"})
        for key in list(self.grid) + list(self.set):
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", key):
                raise PydanticCustomError("allowed", "{allowed}", {"allowed": f"dotted field names, got {key!r}"})
        for key in ("seed", "output_dir"):
            if key in self.grid or key in self.set:
                raise PydanticCustomError("allowed", "{allowed}",
                                          {"allowed": f"no {key!r} in grid or set (the study decides it)"})
        return self


@dataclass(frozen=True)
class StudyRun:
    """One run of a study.

    Attributes
    ----------
    name : str
        Directory name below the study directory.
    coordinates : dict
        Grid field → value, plus ``algorithm`` (the run label) and ``seed``.
    scenario : dict
        The raw scenario of this run (one algorithm, its seed), already validated once.
    """

    name: str
    coordinates: dict[str, Any]
    scenario: dict[str, Any]

    @property
    def label(self) -> str:
        return str(self.coordinates["algorithm"])


def _resolve_base(base: str, relative_to: Path | None) -> Path:
    from sfl_sim.config.scenario_files import resolve_scenario

    candidate = Path(base)
    if not candidate.is_absolute() and relative_to is not None and (relative_to / candidate).is_file():
        return relative_to / candidate  # a base named relative to the study file
    return resolve_scenario(base)


def load_study(path: str | Path) -> tuple[StudySpec, Path]:
    """Read and validate a study file; returns the spec and the resolved base scenario file.

    Raises
    ------
    ConfigError
        One line naming the study field (prefixed ``study``), the value and what is allowed.
    """
    path = Path(path)
    raw = read_yaml_file(path, "study file")
    try:
        spec = StudySpec.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError("study " + format_validation_error(exc, StudySpec)) from None
    if spec.name is None:
        spec = spec.model_copy(update={"name": path.stem})
    return spec, _resolve_base(spec.base, path.parent)


def study_from_scenario(path: str | Path, seeds: Sequence[int], overrides: dict[str, Any],
                        output_dir: str | None = None) -> tuple[StudySpec, Path]:
    """The study behind ``sfl-sim scenario PATH --seeds 0,1,2``: the scenario's algorithms × seeds."""
    base = Path(path)
    try:
        spec = StudySpec(base=str(base), seeds=list(seeds), set=dict(overrides), output_dir=output_dir,
                         name=base.stem)
    except ValidationError as exc:
        raise ConfigError("--seeds: " + format_validation_error(exc, StudySpec)) from None
    return spec, base


def _number(v: float) -> str:
    return f"{v:g}"


def value_label(value: Any) -> str:
    """A short, filesystem-safe reading of a grid value (``{name: dirichlet, beta: 0.1}`` → ``dirichlet-beta0.1``)."""
    if isinstance(value, bool) or value is None:
        text = str(value).lower()
    elif isinstance(value, (int, float)):
        text = _number(value)
    elif isinstance(value, str):
        text = value
    elif _is_compression_block(value):
        text = "_".join(f"{_PATH_LABELS[path]}-{_compressor_label(spec)}" for path, spec in value.items())
    elif isinstance(value, dict):
        head = [str(value["name"])] if isinstance(value.get("name"), str) else []
        rest = [f"{k}{value_label(v)}" for k, v in value.items() if k not in ("name", "label")]
        text = "-".join(head + rest)
    elif isinstance(value, (list, tuple)):
        text = "+".join(value_label(v) for v in value)
    else:
        text = str(value)
    return re.sub(r"[^A-Za-z0-9._+=-]+", "_", text).strip("._") or "x"


#: Short names of the ``compression:`` paths in run names (``act-q8_upd-q8``).
_PATH_LABELS = {"activations": "act", "gradients": "grad", "updates": "upd", "model_download": "dl"}

#: Short names of the built-in compressors in run names; the parameter written beside them.
_COMPRESSOR_LABELS = {"identity": ("id", None), "quantize": ("q", "bits"), "topk": ("top", "fraction"),
                      "rand_topk": ("rtop", "fraction")}


def _is_compression_block(value: Any) -> bool:
    """A whole ``compression:`` block (a grid over ``compression``): paths to compressors or null."""
    return isinstance(value, dict) and bool(value) and set(value) <= set(_PATH_LABELS) and all(
        spec is None or (isinstance(spec, dict) and isinstance(spec.get("name"), str)) for spec in value.values())


def _compressor_label(spec: dict[str, Any] | None) -> str:
    """``q8``, ``top0.1-ef``, ``q4-stochastic``, ``none``: one path of a compression block, short
    (the block's field names would make ``activationsquantize-bits8-updatesquantize-bits8``)."""
    if spec is None:
        return "none"
    if spec["name"] not in _COMPRESSOR_LABELS:
        return value_label(spec)
    short, main = _COMPRESSOR_LABELS[spec["name"]]
    text = short + (value_label(spec[main]) if main in spec else "")
    for key, v in spec.items():
        if key in ("name", "label", main) or (key == "error_feedback" and v is False):
            continue
        text += "-ef" if key == "error_feedback" and v is True else \
            f"-{v}" if isinstance(v, str) else f"-{key}{value_label(v)}"
    return text


def _key_labels(keys: Sequence[str]) -> dict[str, str]:
    """Grid field → the short name used in run names: its last component, unless two share it."""
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return {k: (short if last.count(short) == 1 else k) for k, short in zip(keys, last, strict=True)}


def _digest(coordinates: dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps(coordinates, sort_keys=True, default=str).encode()).hexdigest()[:8]


#: Grid points from which :func:`expand` says the study's size before checking it, and then
#: how far its checks have come every :data:`PROGRESS_EVERY_S` seconds.
LARGE_GRID_POINTS = 1000
PROGRESS_EVERY_S = 5.0


def grid_size(spec: StudySpec) -> int:
    """The number of grid points of ``spec`` (the product of the grid's value counts; 1 without a grid)."""
    return math.prod(len(values) for values in spec.grid.values())


def expand(spec: StudySpec, base_path: Path, progress: TextIO | None = None) -> list[StudyRun]:
    """Every run of the study, in a stable order (grid points in file order, then algorithms, then seeds).

    Every grid point is checked before any run starts, as each run's build would check it: the
    scenario model, then every component (:class:`sfl_sim.study.validate.PointChecker`: the cell
    built and deployed, the traces read, each component's parameters; each distinct component
    spec once).

    Parameters
    ----------
    spec : StudySpec
    base_path : Path
        The base scenario file.
    progress : text stream, optional
        Where a grid of :data:`LARGE_GRID_POINTS` points or more gets its size first and a line of
        progress every :data:`PROGRESS_EVERY_S` seconds (the CLI passes stderr); None: silent.

    Raises
    ------
    ConfigError
        If the base scenario or any grid point is invalid (the message names the grid point), or
        two runs would share a label at one grid point.
    """
    from sfl_sim.study.validate import PointChecker  # imports the registries (and torch): only when expanding

    base = load_scenario_raw(base_path)
    for key, value in spec.set.items():
        apply_override(base, key.split("."), copy.deepcopy(value))
    keys = list(spec.grid)
    labels = _key_labels([k for k in keys if k != "algorithms"])
    total = grid_size(spec)
    say = progress if progress is not None and total >= LARGE_GRID_POINTS else None
    if say is not None:
        print(f"study: {total:,} grid points x {len(spec.seeds)} seeds; checking every point before any run "
              f"starts", file=say, flush=True)
    checker = PointChecker()
    last_said = time.monotonic()
    runs: list[StudyRun] = []
    for done, named_point in enumerate(itertools.product(*(_grid_values(spec.grid[k]) for k in keys))):
        if say is not None and time.monotonic() - last_said >= PROGRESS_EVERY_S:
            print(f"study: checked {done:,} of {total:,} grid points", file=say, flush=True)
            last_said = time.monotonic()
        point = [value for _, value in named_point]
        where = ", ".join(f"{k}={name if name is not None else _shown(v)}"
                          for k, (name, v) in zip(keys, named_point, strict=True))
        raw = dict(base)
        for key, value in zip(keys, point, strict=True):
            path = key.split(".")
            _copy_along(raw, path)
            apply_override(raw, path, copy.deepcopy(value))
        try:
            cfg = validate(raw)
            checker.check(cfg)  # no run starts on a value its build would refuse
        except ConfigError as exc:
            raise ConfigError(f"study grid point ({where or 'base'}): {exc}") from None
        # a named value's label stands for it (the run's scenario.yaml still holds the value)
        setting = {k: (name if name is not None else v) for k, (name, v) in zip(keys, named_point, strict=True)
                   if k != "algorithms"}
        prefix = [f"{labels[k]}={value_label(v)}" for k, v in setting.items()]
        document = cfg.to_yaml_dict()
        for algo in cfg.algorithms:
            for seed in spec.seeds:
                run_raw = {**document, "algorithms": [algo.as_dict()], "seed": seed}
                coordinates = {**setting, "algorithm": algo.label, "seed": seed}
                name = "__".join(prefix + [f"alg={value_label(algo.label)}", f"seed={seed}"])
                runs.append(StudyRun(name, coordinates, run_raw))
    if say is not None:
        print(f"study: checked all {total:,} grid points", file=say, flush=True)
    return _unique_names(runs)


def _copy_along(raw: dict[str, Any], path: list[str]) -> None:
    """Copy the mappings of ``raw`` along ``path`` (but the last key), so that setting the field
    there leaves the study's base scenario, which every grid point shares, as it was (a deep copy
    of the whole scenario per point was most of a large grid's time)."""
    node = raw
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            return  # apply_override creates, or refuses, what is missing
        node[part] = child = dict(child)
        node = child


def _shown(value: Any, limit: int = 80) -> str:
    """A grid value as JSON, cut to ``limit`` characters (a grid point's name in a one-line error)."""
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _grid_values(values: list[Any] | dict[str, Any]) -> list[tuple[str | None, Any]]:
    """A grid field's values as ``(label, value)``: the label for named values, None for a list's."""
    if isinstance(values, dict):
        return [(str(name), value) for name, value in values.items()]
    return [(None, value) for value in values]


def _unique_names(runs: list[StudyRun]) -> list[StudyRun]:
    """Append a short hash of the coordinates to names that read alike (or are too long)."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.name] = counts.get(run.name, 0) + 1
    out = []
    for run in runs:
        name = run.name
        if counts[name] > 1 or len(name) > 150:
            name = f"{name[:140]}~{_digest(run.coordinates)}"
        out.append(StudyRun(name, run.coordinates, run.scenario))
    names = [r.name for r in out]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ConfigError(f"study: two runs have the same coordinates ({dup}); give the algorithms distinct "
                          f"labels or remove the repeated grid value")
    return out
