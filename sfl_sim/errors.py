"""The errors a user sees: each is one line that names what is wrong and how to fix it.

The CLI prints them without a traceback (``--debug`` shows it) and exits with code 2 for
:class:`UserError` (nothing was run) and 1 for :class:`RunFailed` (a run stopped).
"""
from __future__ import annotations

from typing import Any


class UserError(Exception):
    """Something the user can fix: bad input, an unusable output directory, a corrupt file."""


class ConfigError(UserError, ValueError):
    """A scenario field is unknown, of the wrong type or out of range (one-line message)."""


class ArgumentError(ConfigError):
    """An argument of a command or of a public API function (not a scenario field) is of the wrong
    type or out of range: one line naming the argument, the value and what is allowed.  A
    :class:`ConfigError`, so code that catches those catches it; the CLI does not call it an
    invalid scenario."""


class RunDirError(UserError):
    """A run directory cannot be written, continued or overwritten as asked."""


class CheckpointError(RunDirError):
    """A ``checkpoint.pt`` cannot be read or does not belong to the run beside it."""


class RunFailed(Exception):
    """A run stopped with an error after it started (a plug-in raised, a payload was malformed).

    Attributes
    ----------
    summary : dict or None
        The run's ``summary.json`` as written with ``status: failed``.
    """

    def __init__(self, message: str, summary: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.summary = summary
