"""Let a scenario's ``module:Class`` import a file from the directory ``sfl-sim`` runs in.

``python -m pkg`` and ``python -c`` put the working directory first on ``sys.path``; a console
script (``sfl-sim``, installed by pip) puts its own ``bin/`` directory there instead, so without
this a user's ``my_channel.py`` next to their scenario would need ``PYTHONPATH=.``.
"""
from __future__ import annotations

import os
import sys

__all__ = ["import_from_working_directory"]


def import_from_working_directory() -> None:
    """Put the working directory first on ``sys.path`` unless it is there already, as ``python -m`` does.

    Like ``python -m``, a file in the working directory then shadows an installed module of the
    same name.  Python's own opt-out is honoured: with ``-P`` or ``PYTHONSAFEPATH`` set, nothing
    is added.
    """
    if getattr(sys.flags, "safe_path", False):
        return
    cwd = os.getcwd()
    on_path = {os.path.realpath(p or os.curdir) for p in sys.path}  # "" means the working directory
    if os.path.realpath(cwd) not in on_path:
        sys.path.insert(0, cwd)
