"""The bookkeeping shared by the conformance checks of every component kind: a check that fails
raises one line naming the kind, the component, the check and why."""
from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, TypeVar

__all__ = ["ConformanceReport"]

_T = TypeVar("_T")


class ConformanceReport:
    """The checks one component passed so far; subclasses name their kind and error class.

    Attributes
    ----------
    kind : str
        The component kind in the message (``"algorithm"``, ``"compressor"``).
    error : type
        The exception a failed check raises (an :class:`AssertionError` subclass of the kind's module).
    name : str
        The component's name in the message.
    passed : list of str
        The checks passed, in order.
    """

    kind: ClassVar[str] = "component"
    error: ClassVar[type[AssertionError]] = AssertionError

    def __init__(self, name: str) -> None:
        self.name = name
        self.passed: list[str] = []

    def check(self, ok: object, check: str, detail: str = "") -> None:
        """Fail ``check`` (one line, with ``detail``) unless ``ok`` is true; else record it passed."""
        if not bool(ok):
            raise self.error(f"{self.kind} {self.name} fails check '{check}'" + (f": {detail}" if detail else ""))
        if check not in self.passed:
            self.passed.append(check)

    def attempt(self, check: str, fn: Callable[[], _T]) -> _T:
        """Run ``fn``; an exception fails ``check`` with its type and first line."""
        try:
            result = fn()
        except self.error:
            raise
        except Exception as exc:  # noqa: BLE001  (any failure of user code is the finding)
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise self.error(f"{self.kind} {self.name} fails check '{check}': {type(exc).__name__}: {first}") from exc
        self.check(True, check)
        return result
