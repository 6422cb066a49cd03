"""``checkpoint.pt``: what a run needs to continue, as data only.

A checkpoint holds tensors, numbers, strings, None and plain containers — never an object — and
is read with ``torch.load(weights_only=True)``, so a crafted file cannot run code.  Numpy arrays
(the cell's state, selector histories) are stored as tensors behind a ``{"__ndarray__": ...}``
marker and come back as the same numpy arrays, bit for bit.

Layout (``format`` 2): ``{"format": 2}`` and the fields of :class:`RunState`::

    {"format": 2, "round": int, "sim_time_s": float, "host_time_s": float,
     "counters": {...}, "algorithm": {...}, "rng": {...}, "cell": {...},
     "flops_per_sample": {...}, "selector": {...}, "energy": {...}}

A checkpoint written by older code may lack fields and state added since
(:data:`sfl_sim.runs.rundir.upgrade.CHECKPOINT_FIELDS_ADDED_LATER`): :func:`read` accepts it as it
is, and the resume reads it in today's layout (:meth:`sfl_sim.runs.rundir.files.RunDirPlan.state`).
"""
from __future__ import annotations

import os
import pickle
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sfl_sim.errors import CheckpointError
from sfl_sim.runs.rundir.upgrade import CHECKPOINT_FIELDS_ADDED_LATER

FORMAT = 2
_ARRAY = "__ndarray__"


@dataclass
class RunState:
    """Where a run stands after an evaluated round: everything it needs to continue, as data.

    Attributes
    ----------
    round : int
        The last round trained (and evaluated).
    sim_time_s : float
        The simulated clock at its end.
    host_time_s : float
        Host seconds the run had spent by then (``host_time_s`` of its ``metrics.csv`` row).
    counters : dict
        The engine's cumulative counters (:meth:`sfl_sim.engine.Counters.as_dict`).
    algorithm : dict
        The algorithm's ``state_dict()``.
    rng : dict
        The states of the random streams the run draws from (selection, fading, mobility,
        minibatch, torch).
    cell : dict
        The cell's ``state_dict()`` (positions, LOS, shadowing as they are now).
    flops_per_sample : dict
        The algorithm's measured FLOPs per sample by step kind (its meter's ``state_dict()``).
    selector : dict
        The client selector's ``state_dict()``.
    energy : dict
        The energy ledger's ``state_dict()`` (empty without a ledger).
    """

    round: int
    sim_time_s: float
    host_time_s: float
    counters: dict[str, Any]
    algorithm: dict[str, Any]
    rng: dict[str, Any]
    cell: dict[str, Any]
    flops_per_sample: dict[str, float]
    selector: dict[str, Any]
    energy: dict[str, Any] = field(default_factory=dict)

    def to_checkpoint(self) -> dict[str, Any]:
        """The checkpoint's mapping (every field under its name, ``format`` added by :func:`save`)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_checkpoint(cls, data: Mapping[str, Any]) -> RunState:
        """The state in a checkpoint's mapping (as :func:`read` checked it; ``format`` ignored)."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


#: The keys of a checkpoint file.
KEYS = ("format", *(f.name for f in fields(RunState)))
#: The keys a checkpoint must have to be read (older checkpoints lack those added since).
REQUIRED_KEYS = tuple(k for k in KEYS if k not in CHECKPOINT_FIELDS_ADDED_LATER)


def to_plain(obj: Any) -> Any:
    """Replace numpy arrays and scalars inside ``obj`` by tensors / Python numbers (recursively).

    Raises
    ------
    TypeError
        On anything that is not a tensor, number, string, bool, None, numpy array or a
        dict/list/tuple of those (the message names where it was found).
    """
    return _convert(obj, "checkpoint")


def _convert(obj: Any, where: str) -> Any:
    if obj is None or isinstance(obj, (bool, int, float, str, torch.Tensor)):
        return obj
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            raise TypeError(f"{where}: numpy array of Python objects cannot be checkpointed")
        return {_ARRAY: torch.from_numpy(np.ascontiguousarray(obj).copy())}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: _convert(v, f"{where}[{k!r}]") for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        out = [_convert(v, f"{where}[{i}]") for i, v in enumerate(obj)]
        return out if isinstance(obj, list) else tuple(out)
    raise TypeError(f"{where}: a {type(obj).__name__} cannot be checkpointed; state must be tensors, numbers, "
                    f"strings and plain containers")


def from_plain(obj: Any) -> Any:
    """Inverse of :func:`to_plain`: marked tensors back to numpy arrays."""
    if isinstance(obj, dict):
        if set(obj) == {_ARRAY}:
            return obj[_ARRAY].numpy()
        return {k: from_plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [from_plain(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(from_plain(v) for v in obj)
    return obj


def save(path: Path, state: RunState) -> None:
    """Write ``state`` atomically to ``path``.

    The file is written beside ``path`` and renamed over it, so a kill while saving leaves the
    previous checkpoint intact.
    """
    payload = to_plain({"format": FORMAT, **state.to_checkpoint()})
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def load(path: Path) -> RunState:
    """The :class:`RunState` of a checkpoint in today's layout (:func:`read`).

    Raises
    ------
    CheckpointError
    """
    return RunState.from_checkpoint(read(path))


def read(path: Path) -> dict[str, Any]:
    """Read a checkpoint with ``weights_only=True`` onto the CPU and check its layout.

    Tensors stay on the CPU (``load_state_dict`` copies them to the run's device; numpy arrays
    and torch's RNG state must be CPU tensors anyway).

    Returns
    -------
    dict
        Its mapping (numpy arrays restored), in the layout it was saved in.

    Raises
    ------
    CheckpointError
        If the file is truncated, not a checkpoint, from another format, or holds anything but
        data (the message names the file and how to recover).
    """
    recover = (f"the rows in metrics.csv are kept; rerun into a new directory (-o) to start over, "
               f"or delete {path.parent} to reuse the name")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CheckpointError(f"{path}: refused (it holds more than data: {first[:160]}); {recover}") from None
    except (RuntimeError, EOFError, OSError, zipfile.BadZipFile, ValueError, KeyError) as exc:
        raise CheckpointError(f"{path}: cannot be read ({type(exc).__name__}: truncated or not a checkpoint); "
                              f"{recover}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or any(k not in data for k in REQUIRED_KEYS):
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise CheckpointError(f"{path}: not an sfl-sim checkpoint of format {FORMAT} (got {got!r}); {recover}")
    if not isinstance(data["round"], int) or data["round"] < 0:
        raise CheckpointError(f"{path}: round {data['round']!r} is not a round number; {recover}")
    out: dict[str, Any] = from_plain(data)
    return out
