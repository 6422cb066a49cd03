"""Time to accuracy and best accuracy of runs' metrics.

All times here are *simulated* seconds (``sim_time_s``) unless a column name
says ``host_time_s``; the two clocks are never combined.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from sfl_sim.runs.rundir.schema import best_trained_accuracy, first_time_reaching_s

__all__ = [
    "DEFAULT_TARGETS",
    "time_to_accuracy_s",
    "check_target",
    "first_reaching",
    "tta_column_name",
    "best_test_accuracy",
]

#: Default accuracy targets (fractions 0..1) of :func:`sfl_sim.analysis.comparison.summary_table` and the report.
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
        order) that reaches the target (:func:`sfl_sim.runs.rundir.schema.first_time_reaching_s`);
        ``nan`` if no row does.

    Raises
    ------
    ValueError
        If ``target_accuracy`` is not a finite number in [0, 1] (e.g. a
        percentage such as 70 was passed).
    KeyError
        If a required column is missing.
    """
    target = check_target(target_accuracy)
    _check_columns(metrics, _REQUIRED, "time_to_accuracy_s")
    times = metrics["sim_time_s"].to_numpy(dtype=float)
    rounds = metrics["round"].to_numpy(dtype=float) if "round" in metrics.columns else np.zeros(len(times))
    t = first_time_reaching_s(rounds, times, metrics["test_accuracy"].to_numpy(dtype=float), target)
    return float("nan") if t is None else t


def check_target(target_accuracy: float) -> float:
    """A target accuracy as a float, refused unless it is a fraction in [0, 1].

    Raises
    ------
    ValueError
        Naming the value (e.g. a percentage such as 70 was passed).
    """
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
        Stacked per-round metrics of many runs (e.g. :attr:`sfl_sim.analysis.study_data.StudyData.metrics`)
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
    target = check_target(target_accuracy)
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


def best_test_accuracy(metrics: pd.DataFrame) -> float:
    """Best test accuracy over the trained rounds of one run's metrics, ``nan`` without a trained row.

    Parameters
    ----------
    metrics : pandas.DataFrame
        One run's ``metrics.csv`` rows (``round``, ``test_accuracy``), in file order.

    Returns
    -------
    float
        :func:`sfl_sim.runs.rundir.schema.best_trained_accuracy`
        (:data:`sfl_sim.runs.rundir.schema.BEST_ACCURACY_DEFINITION`).
    """
    best = best_trained_accuracy(metrics["round"], metrics["test_accuracy"])
    return float("nan") if best is None else best[0]
