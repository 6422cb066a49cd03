"""A numerical fingerprint of a trained state that holds on any x86-64 host, and the distance
between two of them.

A sha256 of trained weights holds on one CPU and torch build only: MKL, oneDNN and ATen pick
their kernels (AVX2, AVX-512, the split of a reduction among threads) by host, and each rounds
differently.  The fingerprint keeps what is host-independent exact and summarises every float
tensor by a few numbers that a change of kernels moves by a tiny amount and a change of the
training (one step, one batch, the learning rate) moves by much more:

* a float tensor (or numpy array): dtype and shape exactly, its float64 sum, its float64 sum of
  squares and its values at ``POSITIONS`` fixed flat positions (first, last, evenly between);
* an integer or bool tensor: dtype, shape and the sha256 of its bytes, compared exactly;
* a Python or numpy float: its value;
* an int, bool, str or None: its value and type, compared exactly.

Leaves are named by their path in the state (``model/0.weight``, ``records/2/last_round``,
``last_finished[1]``).  :func:`leaf_errors` turns two fingerprints into one relative error per
float leaf (see :func:`float_error`); :func:`state_problems` lists what differs beyond a tolerance.
"""
from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np
import torch

#: Values kept per float tensor besides its sum and sum of squares.
POSITIONS = 4

#: Smallest scale a float leaf is measured against, so an all-zero leaf compares as
#: "must stay (almost) zero" instead of dividing by zero.
SCALE_FLOOR = 1e-12

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def positions(n: int) -> list[int]:
    """The flat positions kept of a tensor of ``n`` elements: first, last and evenly between."""
    if n <= 0:
        return []
    return sorted({round(i * (n - 1) / (POSITIONS - 1)) for i in range(POSITIONS)})


def _tensor_entry(t: torch.Tensor) -> dict[str, Any]:
    t = t.detach().cpu().contiguous()
    entry: dict[str, Any] = {"dtype": str(t.dtype), "shape": list(t.shape)}
    flat = t.reshape(-1)
    if t.dtype in _FLOAT_DTYPES:
        values = flat.to(torch.float64).numpy()
        entry.update(sum=float(values.sum()), sum_sq=float(np.dot(values, values)),
                     at=[float(values[i]) for i in positions(len(values))])
    else:
        entry["sha256"] = hashlib.sha256(flat.view(torch.uint8).numpy().tobytes()).hexdigest()
    return entry


def fingerprint(state: Any) -> dict[str, dict[str, Any]]:
    """Path -> entry for every leaf of ``state`` (a state dict: nested dicts, lists, tensors,
    arrays and scalars), in walk order.

    Raises
    ------
    TypeError
        A leaf of another type, or two leaves with the same path.
    """
    out: dict[str, dict[str, Any]] = {}
    _walk(state, "", out)
    return out


def _walk(obj: Any, path: str, out: dict[str, dict[str, Any]]) -> None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            _walk(value, f"{path}/{key}" if path else str(key), out)
        return
    if isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            _walk(value, f"{path}[{i}]", out)
        return
    if path in out:
        raise TypeError(f"two leaves of the state are both named {path!r}")
    if isinstance(obj, torch.Tensor):
        out[path] = _tensor_entry(obj)
    elif isinstance(obj, np.ndarray):  # as the tensor it converts to (a state may switch)
        out[path] = _tensor_entry(torch.from_numpy(np.ascontiguousarray(obj)))
    elif isinstance(obj, (float, np.floating)):
        out[path] = {"float": float(obj)}
    elif obj is None or isinstance(obj, (bool, int, str, np.integer, np.bool_)):
        value = obj.item() if isinstance(obj, (np.integer, np.bool_)) else obj
        out[path] = {"type": type(value).__name__, "value": value}
    else:
        raise TypeError(f"cannot fingerprint a {type(obj).__name__} at {path!r} of a state")


def float_error(got: dict[str, Any], want: dict[str, Any]) -> float:
    """The relative error between two entries of one float leaf (same dtype and shape).

    For a tensor of n elements with scale s = max(rms(got), rms(want), SCALE_FLOOR), the largest of
    |sum difference| / (sqrt(n) s), |sum-of-squares difference| / (n s^2) and the largest difference
    at the kept positions / s.  Independent rounding errors of size e s per element give about e in
    each term; a change of the training moves many elements the same way and gives more.  For a
    scalar: |difference| / max(|got|, |want|, SCALE_FLOOR).  A non-finite number (a diverged
    run) must be the same non-finite number: error 0 if it is, infinite if not.
    """
    g_values, w_values = _numbers(got), _numbers(want)
    if not all(map(math.isfinite, g_values + w_values)):
        same = all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(g_values, w_values, strict=True))
        return 0.0 if same and len(g_values) == len(w_values) else math.inf
    if "float" in want:
        return abs(got["float"] - want["float"]) / max(abs(got["float"]), abs(want["float"]), SCALE_FLOOR)
    n = math.prod(want["shape"])
    if n == 0:
        return 0.0
    scale = max(math.sqrt(got["sum_sq"] / n), math.sqrt(want["sum_sq"] / n), SCALE_FLOOR)
    at = max((abs(g - w) for g, w in zip(got["at"], want["at"], strict=True)), default=0.0)
    return max(abs(got["sum"] - want["sum"]) / (math.sqrt(n) * scale),
               abs(got["sum_sq"] - want["sum_sq"]) / (n * scale * scale),
               at / scale)


def _numbers(entry: dict[str, Any]) -> list[float]:
    if "float" in entry:
        return [entry["float"]]
    return [entry["sum"], entry["sum_sq"], *entry["at"]]


def _shape_of(entry: dict[str, Any]) -> tuple[Any, ...]:
    """What of an entry must match exactly: everything but the float summaries."""
    return tuple(sorted((k, repr(v)) for k, v in entry.items() if k not in ("sum", "sum_sq", "at", "float")))


def leaf_errors(got: dict[str, dict[str, Any]], want: dict[str, dict[str, Any]]) -> tuple[list[str], dict[str, float]]:
    """Exact mismatches (missing or extra leaves, another dtype, shape, integer content or value)
    and the :func:`float_error` of every float leaf."""
    exact: list[str] = []
    errors: dict[str, float] = {}
    for path in want.keys() - got.keys():
        exact.append(f"{path}: missing (want {want[path]})")
    for path in got.keys() - want.keys():
        exact.append(f"{path}: unexpected leaf {got[path]}")
    for path in want.keys() & got.keys():
        g, w = got[path], want[path]
        if _shape_of(g) != _shape_of(w) or ("float" in g) != ("float" in w):
            exact.append(f"{path}: got {g}, want {w}")
        elif "float" in w or "sum" in w:
            errors[path] = float_error(g, w)
    return sorted(exact), errors


def state_distance(got: dict[str, dict[str, Any]], want: dict[str, dict[str, Any]]) -> float:
    """The largest float error of two fingerprints (infinite if they differ in an exact part)."""
    exact, errors = leaf_errors(got, want)
    return math.inf if exact else max(errors.values(), default=0.0)


def state_problems(got: dict[str, dict[str, Any]], want: dict[str, dict[str, Any]], rtol: float) -> list[str]:
    """One line per leaf that differs exactly or by a float error above ``rtol`` (empty: they match)."""
    exact, errors = leaf_errors(got, want)
    return exact + [f"{path}: relative error {err:.3g} > {rtol:g} (got {got[path]}, want {want[path]})"
                    for path, err in sorted(errors.items()) if err > rtol]
