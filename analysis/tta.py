"""Time-to-accuracy and per-run summary tables.

All times here are *simulated* seconds (``sim_time_s``) unless a column name
says ``host_time_s``; the two clocks are never combined.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from .runs import Run
from .schema import best_trained_accuracy

__all__ = [
    "DEFAULT_TARGETS",
    "time_to_accuracy_s",
    "first_reaching",
    "tta_column_name",
    "summary_table",
    "best_test_accuracy",
]

#: Default accuracy targets (fractions 0..1) for :func:`summary_table`.
DEFAULT_TARGETS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9)

_REQUIRED = ("sim_time_s", "test_accuracy")


def _check_columns(metrics: pd.DataFrame, columns: Iterable[str], where: str) -> None:
    missing = [c for c in columns if c not in metrics.columns]
    if missing:
        raise KeyError(f"{where}: metrics is missing column(s) {missing}")


def time_to_accuracy_s(metrics: pd.DataFrame, target_accuracy: float) -> float:
    """Simulated time at which a run first reaches a test-accuracy target.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Per-round metrics with at least ``sim_time_s`` and ``test_accuracy``
        (accuracy as a fraction 0..1), one row per evaluated round.
    target_accuracy : float
        Target test accuracy as a fraction in [0, 1]. A row counts as
        reaching it when ``test_accuracy >= target_accuracy``.

    Returns
    -------
    float
        ``sim_time_s`` of the first evaluated row (in round order, else row
        order) that reaches the target; ``nan`` if no row does.

    Raises
    ------
    ValueError
        If ``target_accuracy`` is not a finite number in [0, 1] (e.g. a
        percentage such as 70 was passed).
    KeyError
        If a required column is missing.
    """
    target = _check_target(target_accuracy)
    _check_columns(metrics, _REQUIRED, "time_to_accuracy_s")
    if "round" in metrics.columns:
        metrics = metrics.sort_values("round", kind="stable")
    acc = metrics["test_accuracy"].to_numpy(dtype=float)
    hit = np.flatnonzero(acc >= target)  # nan compares False
    if hit.size == 0:
        return float("nan")
    return float(metrics["sim_time_s"].to_numpy(dtype=float)[hit[0]])


def _check_target(target_accuracy: float) -> float:
    target = float(target_accuracy)
    if not math.isfinite(target) or not 0.0 <= target <= 1.0:
        raise ValueError(
            f"target_accuracy must be a fraction in [0, 1], got {target_accuracy!r}"
        )
    return target


def first_reaching(metrics: pd.DataFrame, target_accuracy: float, by: str = "run_id") -> pd.DataFrame:
    """Each run's first evaluated row that reaches a target: :func:`time_to_accuracy_s` for many runs.

    Same definition as :func:`time_to_accuracy_s` (the first row in round order with
    ``test_accuracy >= target``), computed for every group of a stacked metrics frame at once.

    Parameters
    ----------
    metrics : pandas.DataFrame
        Stacked per-round metrics of many runs (e.g. :attr:`analysis.study_data.StudyData.metrics`)
        with ``by``, ``round``, ``sim_time_s`` and ``test_accuracy``.
    target_accuracy : float
        Target as a fraction in [0, 1].
    by : str, optional
        The column naming the run (default ``"run_id"``).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``by`` (sorted), one row per run that reaches the target: all columns of that
        row, so ``["sim_time_s"]`` is the time to accuracy and the cumulative byte and FLOP
        columns are the cost of getting there. Runs that never reach it are absent.

    Raises
    ------
    ValueError
        If the target is not a fraction in [0, 1].
    KeyError
        If a required column is missing.
    """
    target = _check_target(target_accuracy)
    _check_columns(metrics, (by, "round", *_REQUIRED), "first_reaching")
    hit = metrics.loc[metrics["test_accuracy"].to_numpy(dtype=float) >= target]  # nan: False
    hit = hit.sort_values([by, "round"], kind="stable")
    return hit.drop_duplicates(by, keep="first").set_index(by)


def tta_column_name(target_accuracy: float) -> str:
    """Column name for a time-to-accuracy target, e.g. ``tta_0.70_s``.

    Parameters
    ----------
    target_accuracy : float
        Target as a fraction 0..1.

    Returns
    -------
    str
        ``f"tta_{target:.2f}_s"``; three decimals when two would round the
        target (e.g. ``tta_0.755_s``).
    """
    t = float(target_accuracy)
    text = f"{t:.2f}"
    if float(text) != t:
        text = f"{t:.3f}".rstrip("0")
    return f"tta_{text}_s"


def _last(metrics: pd.DataFrame, column: str) -> float:
    values = metrics[column].dropna()
    return float(values.iloc[-1]) if len(values) else float("nan")


def _rounds(run: Run) -> int:
    """Rounds completed: ``summary["rounds_completed"]`` else the last metrics round."""
    value = run.summary.get("rounds_completed")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return int(value)
    if "round" not in run.metrics.columns:
        return 0
    rounds = run.metrics["round"].dropna()
    return int(rounds.iloc[-1]) if len(rounds) else 0


def best_test_accuracy(metrics: pd.DataFrame) -> float:
    """Best test accuracy over the trained rounds of one run's metrics, ``nan`` without a trained row.

    Parameters
    ----------
    metrics : pandas.DataFrame
        One run's ``metrics.csv`` rows (``round``, ``test_accuracy``), in file order.

    Returns
    -------
    float
        :func:`analysis.schema.best_trained_accuracy` (:data:`analysis.schema.BEST_ACCURACY_DEFINITION`).
    """
    best = best_trained_accuracy(metrics["round"], metrics["test_accuracy"])
    return float("nan") if best is None else best[0]


def summary_table(
    runs: Sequence[Run], targets: Sequence[float] = DEFAULT_TARGETS
) -> pd.DataFrame:
    """One-row-per-run comparison table.

    Values come from ``metrics.csv`` (the last evaluated row for cumulative
    quantities), so they reflect what has been written even while a run's
    ``status`` is still ``"running"``.

    Parameters
    ----------
    runs : sequence of Run
        Runs loaded with :func:`analysis.load_run` / :func:`analysis.load_runs`.
    targets : sequence of float, optional
        Accuracy targets (fractions 0..1) for time-to-accuracy columns.

    Returns
    -------
    pandas.DataFrame
        Columns, in order: ``label``, ``algorithm``, ``status``, ``rounds``
        (``summary["rounds_completed"]``, else the last evaluated round), ``final_test_accuracy``,
        ``best_test_accuracy`` (over trained rounds, round >= 1), ``final_sim_time_s``, ``host_time_s``,
        ``uplink_bytes``, ``downlink_bytes``, ``client_flops``,
        ``server_flops`` (totals at the last evaluated row), then one
        ``tta_<target>_s`` column per target (simulated seconds, ``nan``
        when not reached). Empty metrics give ``nan`` values.
    """
    targets = tuple(float(t) for t in targets)
    tta_cols = [tta_column_name(t) for t in targets]
    if len(set(tta_cols)) != len(tta_cols):
        raise ValueError(f"duplicate targets in {targets}")
    base_cols = [
        "label",
        "algorithm",
        "status",
        "rounds",
        "final_test_accuracy",
        "best_test_accuracy",
        "final_sim_time_s",
        "host_time_s",
        "uplink_bytes",
        "downlink_bytes",
        "client_flops",
        "server_flops",
    ]
    rows = []
    for run in runs:
        m = run.metrics
        _check_columns(m, _REQUIRED, f"run {run.label!r} ({run.path})")
        row = {
            "label": run.label,
            "algorithm": run.algorithm,
            "status": str(run.summary.get("status", "")),
            "rounds": _rounds(run),
            "final_test_accuracy": _last(m, "test_accuracy"),
            "best_test_accuracy": best_test_accuracy(m),
            "final_sim_time_s": _last(m, "sim_time_s"),
            "host_time_s": _last(m, "host_time_s"),
            "uplink_bytes": _last(m, "uplink_bytes"),
            "downlink_bytes": _last(m, "downlink_bytes"),
            "client_flops": _last(m, "client_flops"),
            "server_flops": _last(m, "server_flops"),
        }
        for t, col in zip(targets, tta_cols):
            row[col] = time_to_accuracy_s(m, t)
        rows.append(row)
    return pd.DataFrame(rows, columns=base_cols + tta_cols)
