"""What the radio did and where the time went, per client, as the report's figures read it: each run's
``clients.csv`` stacked, the mean round-time breakdown, and each client's energy over its run.

* **Per-client record** (:func:`read_clients`): ``clients.csv`` (:data:`~sfl_sim.runs.rundir.schema.CLIENTS_COLUMNS`)
  of every run that wrote one, one row per (round, cohort client), kept and dropped clients alike.
* **Round-time breakdown** (:func:`time_breakdown`): per run, the mean over its client-rounds of each
  part of a client's span (:data:`~sfl_sim.runs.rundir.schema.CLIENT_TIME_COLUMNS`, which add up to
  ``span_s``), then the mean over seeds; the parts of a bar add up to the mean span.
* **Per-client energy** (:func:`client_energy`): ``energy.csv``'s ``total_j`` summed per client over
  the run, and Jain's index of those sums per run (:func:`sfl_sim.analysis.stats.jain_index`).

Imports neither torch nor the engine (only the run files, through :mod:`sfl_sim.runs.rundir`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from sfl_sim.analysis.stats import jain_index
from sfl_sim.analysis.study_data import GROUP_KEYS, StudyData
from sfl_sim.runs.rundir.schema import (
    CLIENT_SPAN_COLUMN,
    CLIENT_TIME_COLUMNS,
    CLIENTS_COLUMNS,
    CLIENTS_FILE,
    CLIENTS_NUMERIC_COLUMNS,
    ENERGY_FILE,
)

__all__ = ["read_clients", "time_breakdown", "client_energy", "energy_fairness"]

_KEYS = list(GROUP_KEYS)
_RUN_KEYS = ["run_id", *_KEYS, "seed"]


def read_clients(study: StudyData) -> pd.DataFrame:
    """Every run's ``clients.csv``, stacked.

    Returns
    -------
    pandas.DataFrame
        ``run_id``, ``setting``, ``algorithm``, ``seed``, then
        :data:`~sfl_sim.runs.rundir.schema.CLIENTS_COLUMNS` (numeric ones as floats, ``outcome`` as
        text). Runs without the file (:data:`sfl_sim.runs.rundir.upgrade.FILES_ADDED_LATER`, or
        ``metrics.client_record`` off) have no rows.

    Raises
    ------
    ValueError
        A ``clients.csv`` without a column of the schema, in one line naming the file and the column.
    """
    frames = []
    for run in study.runs[[*_RUN_KEYS, "path"]].itertuples(index=False):
        file = Path(run.path) / CLIENTS_FILE
        if not file.is_file():
            continue
        df = pd.read_csv(file)
        missing = [c for c in CLIENTS_COLUMNS if c not in df.columns]
        if missing:
            raise ValueError(f"{file}: no column {missing[0]!r}; a {CLIENTS_FILE} has {', '.join(CLIENTS_COLUMNS)}")
        df = df[list(CLIENTS_COLUMNS)].astype({c: float for c in CLIENTS_NUMERIC_COLUMNS})
        frames.append(df.assign(run_id=run.run_id, setting=run.setting, algorithm=run.algorithm, seed=run.seed))
    columns = [*_RUN_KEYS, *CLIENTS_COLUMNS]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=object if c in (*_KEYS, "outcome") else float) for c in columns})
    return pd.concat(frames, ignore_index=True)[columns]


def time_breakdown(clients: pd.DataFrame) -> pd.DataFrame:
    """Where a client's time in a round went, per (setting, algorithm).

    Parameters
    ----------
    clients : pandas.DataFrame
        :func:`read_clients`.

    Returns
    -------
    pandas.DataFrame
        One row per (setting, algorithm) with client rows: ``n_runs`` (seeds), ``client_rounds``, then
        per part of :data:`~sfl_sim.runs.rundir.schema.CLIENT_TIME_COLUMNS` and ``span_s`` the mean
        over seeds of each run's mean over its client-rounds, s (the parts add up to ``span_s``).
    """
    parts = [*CLIENT_TIME_COLUMNS, CLIENT_SPAN_COLUMN]
    if clients.empty:
        return pd.DataFrame(columns=[*_KEYS, "n_runs", "client_rounds", *parts])
    per_run = clients.groupby(["run_id", *_KEYS], sort=False)[parts].mean().reset_index()
    table = per_run.groupby(_KEYS, sort=False)[parts].mean()
    table.insert(0, "n_runs", per_run.groupby(_KEYS, sort=False).size())
    table.insert(1, "client_rounds", clients.groupby(_KEYS, sort=False).size())
    return table.reset_index()


def client_energy(study: StudyData) -> pd.DataFrame:
    """Each client's energy over its run: ``energy.csv``'s ``total_j`` summed over the rounds.

    Returns
    -------
    pandas.DataFrame
        ``run_id``, ``setting``, ``algorithm``, ``seed``, ``client``, ``energy_j`` (J); the clients a
        run charged (those in some cohort); no rows for runs without ``energy.csv``.
    """
    frames = []
    for run in study.runs[[*_RUN_KEYS, "path"]].itertuples(index=False):
        file = Path(run.path) / ENERGY_FILE
        if not file.is_file():
            continue
        e = pd.read_csv(file, usecols=["client", "total_j"])
        per = e.groupby("client", sort=True)["total_j"].sum().rename("energy_j").reset_index()
        frames.append(per.assign(run_id=run.run_id, setting=run.setting, algorithm=run.algorithm, seed=run.seed))
    columns = [*_RUN_KEYS, "client", "energy_j"]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=object if c in _KEYS else float) for c in columns})
    return pd.concat(frames, ignore_index=True)[columns]


def energy_fairness(energy: pd.DataFrame) -> pd.DataFrame:
    """Jain's fairness index of the clients' energy, per run and then over seeds.

    Parameters
    ----------
    energy : pandas.DataFrame
        :func:`client_energy`.

    Returns
    -------
    pandas.DataFrame
        One row per (setting, algorithm): ``n_runs``, ``jain_mean``, ``jain_min``, ``jain_max`` (over
        the seeds' indices; 1: every client spent the same, 1/n: one client spent it all).
    """
    cols = [*_KEYS, "n_runs", "jain_mean", "jain_min", "jain_max"]
    if energy.empty:
        return pd.DataFrame(columns=cols)
    per_run = energy.groupby(["run_id", *_KEYS], sort=False)["energy_j"].apply(jain_index).rename("jain")
    g = per_run.reset_index().groupby(_KEYS, sort=False)["jain"]
    out = pd.DataFrame({"n_runs": g.size(), "jain_mean": g.mean(), "jain_min": g.min(), "jain_max": g.max()})
    return out.reset_index()[cols]
