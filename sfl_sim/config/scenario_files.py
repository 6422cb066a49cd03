"""The scenario files shipped inside the package, and what a user's scenario argument means.

The shipped scenarios are package data (``sfl_sim/scenarios/``, with ``paper/`` below it), so
``sfl-sim scenario cellular_100clients.yaml`` works from any directory and from a non-editable
install.  :func:`resolve_scenario` turns what the user typed into a file: a path that exists on
disk wins; otherwise a shipped scenario by its name.  A shipped scenario's *name* is its path
below the scenario folder without ``.yaml`` (``cellular_100clients``, ``paper/cifar10_alpha2``);
its description is the first comment line of the file.
"""
from __future__ import annotations

import difflib
from pathlib import Path

from sfl_sim.config import ConfigError

__all__ = ["SCENARIO_DIR", "ScenarioNotFoundError", "shipped_scenarios", "describe", "listing", "resolve_scenario"]

#: Folder of the shipped scenario files (inside the installed package).
SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"

_SUFFIX = ".yaml"


class ScenarioNotFoundError(ConfigError):
    """The scenario argument is neither an existing file nor a shipped scenario's name."""


def shipped_scenarios() -> dict[str, Path]:
    """Every shipped scenario by name.

    Returns
    -------
    dict of str to pathlib.Path
        Name (path below :data:`SCENARIO_DIR` without ``.yaml``, ``/``-separated, e.g.
        ``"paper/cifar10_alpha2"``) to the file, sorted by name.
    """
    files = SCENARIO_DIR.rglob("*" + _SUFFIX)
    named = {p.relative_to(SCENARIO_DIR).with_suffix("").as_posix(): p for p in files}
    return dict(sorted(named.items()))


def describe(path: Path) -> str:
    """One-line description of a scenario file: its first line, when it is a comment.

    Returns
    -------
    str
        The first line without its ``#`` and surrounding blanks; ``""`` when the file does not
        start with a comment.
    """
    with Path(path).open(encoding="utf-8") as fh:
        first = fh.readline().strip()
    return first.lstrip("#").strip() if first.startswith("#") else ""


def listing() -> str:
    """What ``sfl-sim scenarios`` prints: one line per shipped scenario, name then description."""
    named = shipped_scenarios()
    width = max(map(len, named), default=0)
    lines = [f"{name:<{width}}  {describe(path)}" for name, path in named.items()]
    lines.append(f"(files in {SCENARIO_DIR}; run one with: sfl-sim scenario NAME)")
    return "\n".join(lines)


def _key(text: str) -> str:
    """``text`` as a shipped name: ``/``-separated, no ``.yaml``, no leading ``scenarios/``.

    ``scenarios/`` is dropped because older instructions give the repository-relative path.
    """
    return text.replace("\\", "/").strip("/").removesuffix(_SUFFIX).removeprefix("scenarios/")


def _base(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _candidates(text: str) -> list[str]:
    """Shipped names ``text`` may mean: the name itself, else every name with that file name."""
    key, names = _key(text), shipped_scenarios()
    return [key] if key in names else [name for name in names if _base(name) == key]


def _close_matches(text: str, n: int = 3) -> list[str]:
    """Up to ``n`` shipped names close to ``text`` (difflib), by whole name or by file name."""
    key, names = _key(text), list(shipped_scenarios())
    by_base = {_base(name): name for name in names}
    close = difflib.get_close_matches(key, names, n=n)
    close += [by_base[b] for b in difflib.get_close_matches(_base(key), list(by_base), n=n)]
    return list(dict.fromkeys(close))[:n]


def resolve_scenario(text: str) -> Path:
    """The scenario file the user means by ``text``.

    Parameters
    ----------
    text : str
        A path to a scenario file, or a shipped scenario's name with or without ``.yaml``
        (``cellular_100clients.yaml``, ``cellular_100clients``, ``paper/cifar10_alpha2``, or
        ``cifar10_alpha2`` when only one subfolder has it).

    Returns
    -------
    pathlib.Path
        ``text`` itself when that file exists (a file on disk wins), else the shipped file.

    Raises
    ------
    ScenarioNotFoundError
        One line naming ``text``, the closest shipped names and ``sfl-sim scenarios``.
    """
    path = Path(text).expanduser()
    if path.is_file():
        return path
    found = _candidates(text)
    if len(found) == 1:
        return shipped_scenarios()[found[0]]
    if found:
        raise ScenarioNotFoundError(
            f"scenario {text!r} is ambiguous: it names the shipped scenarios {', '.join(found)}; give one of them")
    close = _close_matches(text)
    hint = f" (closest: {', '.join(close)})" if close else ""
    raise ScenarioNotFoundError(
        f"scenario {text!r} is neither a file nor a shipped scenario{hint}; "
        f"'sfl-sim scenarios' lists the shipped ones")
