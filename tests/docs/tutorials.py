"""The runnable code of the documentation's tutorials: which blocks run, and running them.

A tutorial marks each block the tests run with an HTML comment on the line before its fence (the
site does not show it):

- ``<!-- test: run -->``: a ``bash`` block runs in ``bash -e``, a ``python`` block in a fresh
  interpreter;
- ``<!-- test: file NAME -->``: the block is written to ``NAME`` (a user's file: a module, a study);
- ``<!-- test: needs EXTRA -->``, anywhere on the page: the tutorial needs the optional extra
  ``EXTRA`` of ``pyproject.toml`` (:data:`EXTRA_MODULES`); without it the test is skipped, saying
  how to install it, so the README's install (``.[test]``) passes the suite and CI (which installs
  every extra) runs it.

The blocks of one tutorial run in order in one directory, as a reader would type them.

A ``text`` block right after a run block shows what that block printed, as a reader sees it
(:func:`shown_outputs`).  The tests check that the real run still prints its lines, spacing and
the digits of numbers aside (:func:`checked_lines`): column widths follow the numbers, and host
seconds always differ; a line ``...`` marks rows left out, and a reader's own path is not checked.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import ROOT

TUTORIALS = ROOT / "docs" / "tutorials"

_BLOCK = re.compile(r"(?:<!-- test: (?P<what>run|file (?P<name>[\w./-]+)) -->\n)?"
                    r"```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^```[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    lang: str
    code: str
    action: str | None  # "run", "file" or None (shown, not run)
    file_name: str | None = None


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page`` in order, with what the tests do with it."""
    found = []
    for m in _BLOCK.finditer(page.read_text()):
        action = None if m["what"] is None else ("run" if m["what"] == "run" else "file")
        found.append(Block(m["lang"], m["code"], action, m["name"]))
    return found


def shown_outputs(page: Path) -> list[tuple[int, str]]:
    """The outputs ``page`` shows: per ``text`` block right after a run block, the run block's
    number among the page's run blocks (its index in :func:`run_tutorial`'s outputs) and the text."""
    shown, runs = [], -1
    found = blocks(page)
    for before, block in zip([None, *found], found, strict=False):
        if block.action == "run":
            runs += 1
        elif block.lang == "text" and before is not None and before.action == "run":
            shown.append((runs, block.code))
    return shown


#: A line of a shown output standing for rows left out.
ELISION = "..."
#: Parts of a shown line that are the reader's own, so it is not checked: an absolute path (shown
#: as under ``/home/you/`` or ``/path/to/``) and a Python object's address.
READERS_OWN = ("/home/you/", "/path/to/", " at 0x")


def shape(line: str) -> str:
    """``line`` as checked: its runs of blanks made one space (column widths follow the numbers)
    and its runs of digits made one ``0`` (numbers may vary; host seconds always do)."""
    return re.sub(r"\d+", "0", " ".join(line.split()))


def checked_lines(text: str) -> list[str]:
    """The lines of a shown output the run must still print, in :func:`shape`'s form: all but blank
    ones, :data:`ELISION` and those with a part in :data:`READERS_OWN`."""
    return [shape(line) for line in text.splitlines()
            if line.strip() and line.strip() != ELISION and not any(part in line for part in READERS_OWN)]


#: An optional extra of ``pyproject.toml`` -> the module whose presence says it is installed.
EXTRA_MODULES = {"ray": "ray", "sionna": "sionna", "docs": "mkdocs"}

_NEEDS = re.compile(r"<!-- test: needs (?P<extra>[\w-]+) -->")


def needed_extras(page: Path) -> list[str]:
    """The optional extras ``page`` declares it needs (``<!-- test: needs EXTRA -->``).

    Raises
    ------
    AssertionError
        If it names an extra :data:`EXTRA_MODULES` does not know.
    """
    extras = [m["extra"] for m in _NEEDS.finditer(page.read_text())]
    unknown = sorted(set(extras) - set(EXTRA_MODULES))
    assert not unknown, f"{page.name}: needs {unknown}; known extras: {sorted(EXTRA_MODULES)}"
    return extras


def missing_extras(page: Path) -> list[str]:
    """The extras ``page`` needs that this environment lacks."""
    return [e for e in needed_extras(page) if importlib.util.find_spec(EXTRA_MODULES[e]) is None]


def tutorial_pages() -> list[Path]:
    """Every tutorial page (the index is none)."""
    return sorted(p for p in TUTORIALS.glob("*.md") if p.name != "index.md")


def environment() -> dict[str, str]:
    """A reader's shell: this interpreter's ``sfl-sim`` and ``python`` first on ``PATH``, this checkout
    on ``PYTHONPATH`` (so subprocesses import it, not wherever the environment points)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = str(ROOT)
    return env


def run_tutorial(page: Path, workdir: Path, timeout_s: float = 600) -> list[str]:
    """Run ``page``'s marked blocks in ``workdir``; the output of each run block, in order.

    Raises
    ------
    AssertionError
        Naming the block and its output when one exits non-zero.
    """
    outputs = []
    env = environment()
    for i, block in enumerate(blocks(page)):
        if block.action == "file":
            assert block.file_name is not None
            (workdir / block.file_name).write_text(block.code)
        elif block.action == "run":
            if block.lang == "bash":
                command = ["bash", "-e", "-c", block.code]
            elif block.lang == "python":
                command = [sys.executable, "-c", block.code]
            else:
                raise AssertionError(f"{page.name}: block {i} is marked to run but is {block.lang!r}")
            done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                                  timeout=timeout_s, check=False)
            assert done.returncode == 0, (f"{page.name}, block {i} ({block.lang}) exited {done.returncode}:\n"
                                          f"{block.code}\n--- stdout ---\n{done.stdout[-3000:]}\n"
                                          f"--- stderr ---\n{done.stderr[-3000:]}")
            outputs.append(done.stdout)
    return outputs
