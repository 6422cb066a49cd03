"""Each run's client energy, as the report's tables read it: which runs recorded energy, the
cumulative client energy at each evaluation, energy to a target (total and per-client maximum) and
per round.

Definitions (the report's energy table and overhead table both use these):

* a run *recorded energy* when every row of its ``rounds.csv`` has ``client_energy_j`` (a run
  with rounds trained without energy accounting has not: its energy is ``nan`` throughout;
  ``rounds.csv`` is read in today's columns, :func:`sfl_sim.runs.rundir.upgrade.log_text`);
* cumulative client energy at an evaluated round: the sum of ``rounds.csv``'s ``client_energy_j``
  over the rounds up to it (0 at round 0);
* energy to a target: that sum at the first evaluation reaching the target
  (:func:`sfl_sim.analysis.tta.first_reaching`, the time table's definition);
* per-client maximum to a target: the most any one client had spent by then (``energy.csv``
  summed per client over those rounds);
* energy per round: the mean over the run's rounds of ``client_energy_j``.

Imports neither torch nor the engine (only the run files, through :mod:`sfl_sim.runs.rundir`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sfl_sim.analysis.study_data import GROUP_KEYS, StudyData
from sfl_sim.analysis.tta import first_reaching
from sfl_sim.runs.rundir.schema import ENERGY_FILE

__all__ = ["ENERGY_CURVE_COLUMN", "has_energy", "recorded_energy", "metrics_with_energy",
           "MaxClientEnergy", "energy_to_target_per_run", "energy_per_round_per_run"]

#: The cumulative client-energy column :func:`metrics_with_energy` adds to the metrics (J).
ENERGY_CURVE_COLUMN = "client_energy_j"
_KEYS = list(GROUP_KEYS)


def has_energy(study: StudyData) -> bool:
    """Whether any run of ``study`` recorded client energy (a non-empty ``client_energy_j``)."""
    return "client_energy_j" in study.rounds.columns and bool(study.rounds["client_energy_j"].notna().any())


def recorded_energy(study: StudyData) -> pd.Series:
    """Per ``run_id`` of ``study.runs``: whether the run recorded energy in every round of its
    ``rounds.csv`` (False for a run without rounds)."""
    out = pd.Series(False, index=study.runs["run_id"].to_numpy(), dtype=bool)
    if not has_energy(study):
        return out
    r = study.rounds
    full = r.groupby("run_id")["client_energy_j"].apply(lambda s: bool(s.notna().all()) and len(s) > 0)
    out.update(full.astype(bool))
    return out.astype(bool)


def metrics_with_energy(study: StudyData) -> pd.DataFrame:
    """``study.metrics`` with :data:`ENERGY_CURVE_COLUMN`: each evaluated row's cumulative client
    energy (J); ``nan`` for the runs that did not record energy."""
    m = study.metrics.copy()
    if not has_energy(study):
        m[ENERGY_CURVE_COLUMN] = np.nan
        return m
    r = study.rounds[["run_id", "round", "client_energy_j"]].sort_values(["run_id", "round"], kind="stable")
    r = r.assign(cum=r.groupby("run_id")["client_energy_j"].cumsum())
    cum = r.set_index(["run_id", "round"])["cum"]
    keys = pd.MultiIndex.from_arrays([m["run_id"].to_numpy(), m["round"].to_numpy()])
    values = np.array(cum.reindex(keys).to_numpy(dtype=float), copy=True)
    values[m["round"].to_numpy() == 0] = 0.0
    values[~m["run_id"].map(recorded_energy(study)).fillna(False).to_numpy(dtype=bool)] = np.nan
    m[ENERGY_CURVE_COLUMN] = values
    return m


class MaxClientEnergy:
    """The most any one client of a run had spent by each round (from its ``energy.csv``, read once)."""

    def __init__(self) -> None:
        self._curves: dict[str, pd.Series | None] = {}

    def __call__(self, path: str, through_round: int) -> float:
        """The most any one client of the run in ``path`` spent in rounds 1..``through_round`` (J)."""
        if through_round <= 0:
            return 0.0
        if path not in self._curves:
            file = Path(path) / ENERGY_FILE
            curve = None
            if file.is_file():
                e = pd.read_csv(file, usecols=["round", "client", "total_j"]).sort_values("round", kind="stable")
                spent = e.pivot_table(index="round", columns="client", values="total_j", aggfunc="sum")
                curve = spent.fillna(0.0).cumsum().max(axis=1)
            self._curves[path] = curve
        curve = self._curves[path]
        if curve is None:
            return float("nan")
        upto = curve.loc[curve.index <= through_round]
        return float(upto.iloc[-1]) if len(upto) else 0.0


def energy_to_target_per_run(study: StudyData, metrics: pd.DataFrame, target: float,
                             max_energy: MaxClientEnergy | None = None) -> pd.DataFrame:
    """Each run's client energy to ``target``.

    Parameters
    ----------
    study : StudyData
    metrics : pandas.DataFrame
        :func:`metrics_with_energy` of ``study`` (computed once for every target).
    target : float
        Accuracy target (fraction).
    max_energy : MaxClientEnergy, optional
        Also the per-client maximum (reads each run's ``energy.csv``; share one across targets).

    Returns
    -------
    pandas.DataFrame
        ``study.runs[["run_id", "setting", "algorithm", "seed"]]`` plus ``energy_j`` (and
        ``energy_max_j`` with ``max_energy``), J; ``nan`` for a run that did not reach the target
        or did not record energy.
    """
    hit = first_reaching(metrics, target)
    out = study.runs[["run_id", *_KEYS, "seed", "path"]].copy()
    out["energy_j"] = out["run_id"].map(hit[ENERGY_CURVE_COLUMN]).astype(float)
    if max_energy is not None:
        rounds = out["run_id"].map(hit["round"])
        out["energy_max_j"] = [max_energy(p, int(rnd)) if pd.notna(rnd) and pd.notna(e) else np.nan
                               for p, rnd, e in zip(out["path"], rounds, out["energy_j"], strict=True)]
    return out.drop(columns=["path"])


def energy_per_round_per_run(study: StudyData) -> pd.Series:
    """Per ``run_id``: the mean over the run's rounds of ``client_energy_j`` (J per round); ``nan``
    for a run that did not record energy (:func:`recorded_energy`)."""
    if not has_energy(study):
        return pd.Series(np.nan, index=study.runs["run_id"].to_numpy(), dtype=float)
    mean = study.rounds.groupby("run_id")["client_energy_j"].mean()
    out = study.runs["run_id"].map(mean).astype(float)
    out.index = study.runs["run_id"].to_numpy()
    return out.where(recorded_energy(study).reindex(out.index).to_numpy(dtype=bool))
