"""A griffe extension for the API reference: the code's docstrings are numpy style with Sphinx roles.

mkdocstrings renders docstrings as Markdown, where ``:class:`sfl_sim.api.RunResult``` would show
its role and backticks verbatim; this turns every ``:role:`target``` into the code span
`` `target` `` (``~a.b.C`` into `` `C` ``), which is how the rest of the text names code.
"""
from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|obj|exc|const|ref|term):`(~?)([^`<]+?)(?:\s*<([^>]+)>)?`")


def plain_roles(text: str) -> str:
    """``text`` with each Sphinx cross-reference role replaced by a Markdown code span."""
    def code(match: re.Match[str]) -> str:
        short, target = match.group(1), match.group(2).strip()
        return f"`{target.rsplit('.', 1)[-1] if short else target}`"
    return ROLE.sub(code, text)


class RstRoles(Extension):
    """Rewrite the roles of every loaded object's docstring (see the module docstring)."""

    def on_object(self, *, obj: Object, **kwargs: Any) -> None:  # noqa: D102 - griffe's hook
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)
