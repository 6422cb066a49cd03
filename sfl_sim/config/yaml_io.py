"""Reading scenario YAML: a safe loader with YAML 1.2-style floats that refuses a repeated key.

Every failure of :func:`read_yaml_file` (missing, not text, not UTF-8, not YAML, empty, not a
mapping) is one :class:`~sfl_sim.errors.ConfigError` line naming the file.
"""
from __future__ import annotations

import re
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from sfl_sim.errors import ConfigError
from sfl_sim.kit.checks import one_line

__all__ = ["yaml_load", "read_yaml_file"]


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e9`` as a float and refuses a key given twice in one mapping.

    PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent (``1.0e+9``); a
    scenario author writing ``20e6`` Hz would otherwise get a string.  A repeated key would
    silently replace a whole section (the second ``cell:`` wins), so it is an error.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        self.flatten_mapping(node)  # resolve '<<' merge keys first: they may legitimately repeat keys
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise ConfigError(f"key {key!r} appears twice in one mapping (lines {first_line[key]} and {line}); "
                                  f"allowed: each key once (a repeated section would silently replace the first)")
            first_line[key] = line
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X),
    list("-+0123456789."),
)


def yaml_load(text: str) -> Any:
    """Parse scenario YAML (safe loader, YAML 1.2-style floats, no repeated keys).

    Raises
    ------
    ConfigError
        On a repeated key.
    yaml.YAMLError
        On a syntax error.
    """
    return yaml.load(text, Loader=_Loader)


def read_yaml_file(path: Path, what: str = "scenario file") -> dict[str, Any]:
    """Read a YAML file that must be a non-empty text mapping; every failure is one ConfigError line."""
    if not path.is_file():
        raise ConfigError(f"{what} {str(path)!r} does not exist")
    data = path.read_bytes()
    if b"\x00" in data:
        raise ConfigError(f"{what} {str(path)!r} is not a text file (it holds NUL bytes); allowed: a YAML text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {str(path)!r} is not UTF-8 text (byte {exc.start}); "
                          f"allowed: a YAML text file") from None
    try:
        raw = yaml_load(text)
    except ConfigError as exc:
        raise ConfigError(f"{what} {str(path)!r}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {str(path)!r} is not valid YAML: {one_line(exc)}") from None
    if raw is None:
        raise ConfigError(f"{what} {str(path)!r} is empty; allowed: a YAML mapping (see scenarios/ for examples)")
    if not isinstance(raw, dict):
        raise ConfigError(f"{what} {str(path)!r}: expected a mapping at the top level, got {type(raw).__name__}")
    return raw
