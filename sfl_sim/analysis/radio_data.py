"""What the radio did and where the time went, per client, as the report's figures read it: the mean
round-time breakdown of the per-client record, and each client's energy over its run.

* **Per-client record**: :attr:`StudyData.clients <sfl_sim.analysis.study_data.StudyData.clients>`, every
  run's ``clients.csv`` (:data:`~sfl_sim.runs.rundir.schema.CLIENTS_COLUMNS`) as
  :func:`sfl_sim.analysis.readers.read_clients` reads it, one row per (round, cohort client).
* **Round-time breakdown** (:func:`time_breakdown`): per run, the mean over its client-rounds of each
  part of a client's span (:data:`~sfl_sim.runs.rundir.schema.CLIENT_TIME_COLUMNS`, which add up to
  ``span_s``), then the mean over seeds; the parts of a bar add up to the mean span.
* **The uplink rate a client got** (:func:`with_uplink_rate_got`): under a dynamic scheduler the
  scheduled rate (``uplink_scheduled_rate_bps``: the bits sent on its grants over its time in the
  band), else the rate on its static share (``uplink_rate_bps``), so runs of either compare.
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
    ENERGY_FILE,
)

__all__ = ["UPLINK_RATE_GOT", "time_breakdown", "with_uplink_rate_got", "client_energy", "energy_fairness"]

#: The derived column of :func:`with_uplink_rate_got`, bit/s.
UPLINK_RATE_GOT = "uplink_rate_got_bps"

_KEYS = list(GROUP_KEYS)
_RUN_KEYS = ["run_id", *_KEYS, "seed"]


def with_uplink_rate_got(clients: pd.DataFrame) -> pd.DataFrame:
    """``clients`` with :data:`UPLINK_RATE_GOT`: the rate a client's upload got in the round.

    Under a dynamic scheduler ``clients.csv``'s ``uplink_rate_bps`` is the rate on the round's
    static share (what the outage rule judges), not what the band gave; the scheduled rate
    ``uplink_scheduled_rate_bps`` is, and it is empty under the static split. So the column is the
    scheduled rate where there is one, else the share's rate.
    """
    scheduled = clients.get("uplink_scheduled_rate_bps")
    got = clients["uplink_rate_bps"] if scheduled is None else scheduled.where(scheduled.notna(),
                                                                                 clients["uplink_rate_bps"])
    return clients.assign(**{UPLINK_RATE_GOT: got})


def time_breakdown(clients: pd.DataFrame) -> pd.DataFrame:
    """Where a client's time in a round went, per (setting, algorithm).

    Parameters
    ----------
    clients : pandas.DataFrame
        :attr:`StudyData.clients <sfl_sim.analysis.study_data.StudyData.clients>` (or any frame with
        ``run_id``, ``setting``, ``algorithm`` and the time columns).

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
