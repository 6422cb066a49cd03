"""The report's "what the radio lost" table: drops by cause, outage, HARQ copies and where a round's
time went, per (setting, algorithm), with a flag where drops shortened the rounds.

Read from each run's ``rounds.csv`` (:attr:`StudyData.rounds`: uplink attempts, failed attempts,
dropped clients, HARQ copies, round durations) and, where the runs wrote one, ``clients.csv``
(:attr:`StudyData.clients`: each client-round's outcome, hence the drops by cause, and the time split).
Every number is a mean over seeds of a per-run quantity:

* ``drop_rate``: dropped client-rounds over client-rounds (``dropped_clients`` / cohort sizes);
* ``drops_<cause>``: the same for one cause (``clients.csv``'s ``outcome``);
* ``outage_rate``: failed uplink attempts over attempts (``(retransmissions + dropped_transmissions) /
  uplink_attempts``, as ``summary.json``'s ``outage_rate``);
* ``harq_per_round``: HARQ copies per round;
* ``round_s``: mean simulated round duration, and the mean client time split
  (:data:`~sfl_sim.runs.rundir.schema.CLIENT_TIME_COLUMNS`) from ``clients.csv``;
* with a network and edge servers (``server.edge``), per round: the handovers of the round's clients,
  the client-seconds they lost (interruptions and migrations), the migrations and the backhaul's
  megabytes (:data:`EDGE_COLUMNS`, ``rounds.csv``), shown where any run has them.

A setting whose runs dropped clients gets a note: a dropped client's payload never reaches the
server, so its round ends without waiting for it — a lossy setting looks faster in simulated time
than the same setting without loss, and trains on fewer clients.

Imports neither torch nor the engine.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from sfl_sim.analysis.study_data import GROUP_KEYS, StudyData
from sfl_sim.analysis.tables import Layout, in_study_order
from sfl_sim.runs.rundir.schema import CLIENT_KEPT, CLIENT_TIME_COLUMNS

__all__ = ["has_radio_losses", "radio_table", "radio_layouts", "DROPS_SHORTEN_ROUNDS", "EDGE_COLUMNS"]

_KEYS = list(GROUP_KEYS)

#: rounds.csv's edge columns the table shows per round where a run has them: column -> (header, scale).
EDGE_COLUMNS: dict[str, tuple[str, float]] = {
    "handovers": ("handovers / round", 1.0), "handover_lost_s": ("handover s / round", 1.0),
    "migrations": ("migrations / round", 1.0), "backhaul_bytes": ("backhaul MB / round", 1e-6)}

#: The note under the table where a setting dropped clients.
DROPS_SHORTEN_ROUNDS = ("dropped clients shorten rounds: a round ends without waiting for a client whose payload "
                        "was lost, so a lossy setting looks faster in simulated time (and trains on fewer clients)")


def _per_run(study: StudyData) -> pd.DataFrame:
    """One row per run with rounds.csv: its drop, outage and HARQ numbers and mean round duration."""
    rounds = study.rounds
    if rounds.empty:
        return pd.DataFrame(columns=["run_id", *_KEYS, "rounds", "drop_rate", "outage_rate", "harq_per_round",
                                     "round_s"])
    rows = []
    cohorts = (study.clients.groupby("run_id").size() if not study.clients.empty else pd.Series(dtype=float))
    for (run_id, setting, algorithm), r in rounds.groupby(["run_id", *_KEYS], sort=False):
        attempts = float(r["uplink_attempts"].sum()) if "uplink_attempts" in r else 0.0
        failed = float(r["retransmissions"].sum() + r["dropped_transmissions"].sum())
        client_rounds = float(cohorts.get(run_id, np.nan))
        rows.append({"run_id": run_id, "setting": setting, "algorithm": algorithm, "rounds": len(r),
                     "dropped": float(r["dropped_clients"].sum()), "client_rounds": client_rounds,
                     "outage_rate": failed / attempts if attempts else np.nan,
                     "harq_per_round": float(r["harq_retransmissions"].mean()),
                     "round_s": float(r["round_sim_time_s"].mean()),
                     **{c: float(r[c].fillna(0).mean()) * scale for c, (_, scale) in EDGE_COLUMNS.items()
                        if c in r}})
    per_run = pd.DataFrame(rows)
    per_run["drop_rate"] = per_run["dropped"] / per_run["client_rounds"]
    return per_run


def _causes(study: StudyData) -> pd.DataFrame:
    """Per run, the share of its client-rounds dropped for each cause (``clients.csv``)."""
    clients = study.clients
    if clients.empty:
        return pd.DataFrame(columns=["run_id"])
    dropped = clients.loc[clients["outcome"] != CLIENT_KEPT]
    counts = dropped.groupby(["run_id", "outcome"]).size().unstack(fill_value=0)
    totals = clients.groupby("run_id").size()
    shares = counts.div(totals.reindex(counts.index), axis=0).reindex(totals.index, fill_value=0.0)
    shares.columns = [f"drops_{c}" for c in shares.columns]
    return shares.reset_index()


def has_radio_losses(study: StudyData) -> bool:
    """Whether any run dropped a client, failed an uplink attempt, sent a HARQ copy or (with edge
    servers) saw a handover or used the backhaul."""
    r = study.rounds
    if r.empty:
        return False
    seen = ["dropped_clients", "retransmissions", "dropped_transmissions", "harq_retransmissions",
            *[c for c in EDGE_COLUMNS if c in r]]
    return bool((r[seen].fillna(0).to_numpy() > 0).any())


def radio_table(study: StudyData, algorithms: Sequence[str] | None = None) -> pd.DataFrame:
    """Drops, outage, HARQ and the round's time split per (setting, algorithm), means over seeds.

    Parameters
    ----------
    study : StudyData
    algorithms : sequence of str, optional
        Row order (default: the study's).

    Returns
    -------
    pandas.DataFrame
        ``setting``, ``algorithm``, ``n_runs``, ``drop_rate``, one ``drops_<cause>`` per cause seen,
        ``outage_rate``, ``harq_per_round``, ``round_s`` and the mean of each
        :data:`~sfl_sim.runs.rundir.schema.CLIENT_TIME_COLUMNS` (NaN without ``clients.csv``).
    """
    per_run = _per_run(study)
    if per_run.empty:
        return pd.DataFrame(columns=[*_KEYS, "n_runs", "drop_rate", "outage_rate", "harq_per_round", "round_s"])
    per_run = per_run.merge(_causes(study), on="run_id", how="left")
    if not study.clients.empty:
        split = study.clients.groupby("run_id")[list(CLIENT_TIME_COLUMNS)].mean().reset_index()
        per_run = per_run.merge(split, on="run_id", how="left")
    values = [c for c in per_run.columns if c not in ("run_id", *_KEYS, "rounds", "dropped", "client_rounds")]
    table = per_run.groupby(_KEYS, sort=False)[values].mean()
    table.insert(0, "n_runs", per_run.groupby(_KEYS, sort=False).size())
    table = table.reset_index()
    order = list(algorithms) if algorithms is not None else list(study.algorithms)
    return in_study_order(table, study, order)


def _pct(x: float) -> str:
    return "-" if not np.isfinite(x) else f"{100 * x:.1f}"


def _sec(x: float) -> str:
    return "-" if not np.isfinite(x) else f"{x:.3g}"


def radio_layouts(table: pd.DataFrame, study: StudyData) -> list[Layout]:
    """One layout: a row per (setting, algorithm), the loss and time columns; the note once.

    Parameters
    ----------
    table : pandas.DataFrame
        :func:`radio_table`.
    study : StudyData
    """
    causes = sorted(c for c in table.columns if c.startswith("drops_"))
    split = [c for c in CLIENT_TIME_COLUMNS if c in table.columns and table[c].notna().any()]
    edge = [c for c in EDGE_COLUMNS if c in table.columns and (table[c].fillna(0) > 0).any()]
    columns: list[tuple[str, ...]] = [
        ("seeds",), ("drop %",), *[(f"drop: {c.removeprefix('drops_')} %",) for c in causes], ("failed attempts %",),
        ("HARQ copies / round",), ("round s",), *[(EDGE_COLUMNS[c][0],) for c in edge], *[(c,) for c in split]]
    groups: list[tuple[str | None, list[tuple[str, list[str]]]]] = []
    for setting in study.settings:
        part = table.loc[table["setting"] == setting]
        if part.empty:
            continue
        rows = []
        for _, r in part.iterrows():
            cells = [str(int(r["n_runs"])), _pct(r["drop_rate"]), *[_pct(r[c]) for c in causes],
                     _pct(r["outage_rate"]), _sec(r["harq_per_round"]), _sec(r["round_s"]),
                     *[_sec(r[c]) for c in edge], *[_sec(r[c]) for c in split]]
            rows.append((str(r["algorithm"]), cells))
        groups.append((setting if len(study.settings) > 1 else None, rows))
    notes = ["Means over seeds of each run's rates (drops: share of client-rounds, in all and by cause; failed "
             "attempts: uplink attempts in outage over attempts; time split: the mean client-round, s, from "
             "clients.csv)."]
    if edge:
        notes.append("With edge servers, per round: the handovers of the round's clients, the client-seconds they "
                     "lost (interruptions and migrations over the backhaul), the migrations and the backhaul's MB "
                     "(rounds.csv).")
    lossy = table.loc[table["drop_rate"].fillna(0) > 0, "setting"].unique().tolist()
    if lossy:
        notes.append(f"{DROPS_SHORTEN_ROUNDS}: {', '.join(map(str, lossy))}.")
    return [Layout("What the radio lost", columns, groups, notes, label="tab:radio")]
