"""Client energy in the report: energy to each target (total and per-client maximum) with paired
ratios over a reference; the per-run quantities (and the cumulative energy curve of the
accuracy-versus-energy figure) are :mod:`sfl_sim.analysis.energy_data`'s, re-exported here.

Definitions (also printed under the rendered tables):

* energy to a target and the per-client maximum: :mod:`sfl_sim.analysis.energy_data`, mean ± std over
  the seeds that reached the target;
* energy ratio: :func:`sfl_sim.analysis.stats.paired_speedup` of the energies, ``E_ref / E_alg`` (above 1:
  the algorithm spent less), with the time table's pairing, edges and interval rule.

Imports neither torch nor the engine (only the run files, through :mod:`sfl_sim.runs.rundir.schema`).
"""
from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import pandas as pd

from sfl_sim.analysis.energy_data import (
    ENERGY_CURVE_COLUMN,
    MaxClientEnergy,
    energy_to_target_per_run,
    has_energy,
    metrics_with_energy,
)
from sfl_sim.analysis.stats import BOOTSTRAP_SEED, DDOF, N_BOOT, describe, paired_speedup
from sfl_sim.analysis.study_data import GROUP_KEYS, StudyData
from sfl_sim.analysis.tables import (
    SPEEDUP_COLUMNS,
    Layout,
    group_sizes,
    in_study_order,
    setting_headers,
    speedup_cell,
    speedup_notes,
    target_text,
    tta_cell,
    wide_rows,
    with_coordinates,
)

__all__ = ["ENERGY_CURVE", "ENERGY_CURVE_COLUMN", "metrics_with_energy", "has_energy",
           "energy_table", "energy_layouts"]

#: The report's accuracy-versus-energy figure kind (:data:`sfl_sim.analysis.figures.EXTRA_CURVES`).
ENERGY_CURVE = "accuracy_vs_energy"
_KEYS = list(GROUP_KEYS)
_QUANTITIES = {"energy_j": "total client energy", "energy_max_j": "most any one client spent"}


def energy_table(
    study: StudyData,
    targets: Sequence[float],
    reference: str | None = None,
    *,
    algorithms: Sequence[str] | None = None,
    n_boot: int = N_BOOT,
    bootstrap_seed: int = BOOTSTRAP_SEED,
) -> pd.DataFrame:
    """Client energy to each target per (setting, algorithm), and paired ratios over a reference.

    Returns
    -------
    pandas.DataFrame
        Columns ``setting``, setting fields, ``algorithm``, ``target``, ``n_runs``, ``reached``,
        ``energy_j_{mean,std}`` and ``energy_max_j_{mean,std}`` (J, over the seeds that reached the
        target), and with a reference, for ``q`` in ``energy_j``, ``energy_max_j``, the
        :class:`sfl_sim.analysis.stats.SpeedUp` fields as ``{q}_ratio``, ``{q}_ratio_low`` ... (the
        names of :data:`sfl_sim.analysis.tables.SPEEDUP_COLUMNS` with ``speedup`` replaced).
    """
    metrics = metrics_with_energy(study)
    max_energy = MaxClientEnergy()
    frames = []
    for target in targets:
        runs = energy_to_target_per_run(study, metrics, target, max_energy)
        stats = describe(runs, _KEYS, list(_QUANTITIES)).reset_index()
        table = group_sizes(study).merge(stats, on=_KEYS, how="left")
        table = table.rename(columns={"energy_j_n": "reached"}).drop(columns=["energy_max_j_n"])
        table.insert(2, "target", float(target))
        if reference is not None:
            ref = runs.loc[runs["algorithm"] == reference, ["setting", "seed", *_QUANTITIES]]
            paired = runs.merge(ref, on=["setting", "seed"], how="left", suffixes=("", "_ref"))
            rows = []
            for (setting, algorithm), g in paired.groupby(_KEYS, sort=False):
                row: list = [setting, algorithm]
                for q in _QUANTITIES:
                    su = paired_speedup(g[f"{q}_ref"].to_numpy(), g[q].to_numpy(), n_boot=n_boot,
                                        seed=bootstrap_seed)
                    row += [su.ratio, su.low, su.high, su.pairs, su.interval, su.seed_min, su.seed_max, su.case,
                            su.boot_edge]
                rows.append(row)
            table = table.merge(pd.DataFrame(rows, columns=[*_KEYS, *_ratio_columns()]), on=_KEYS, how="left")
        frames.append(table)
    table = pd.concat(frames, ignore_index=True)
    table["reached"] = table["reached"].fillna(0).astype(int)
    cols = [*_KEYS, "target", "n_runs", "reached", *[f"{q}_{s}" for q in _QUANTITIES for s in ("mean", "std")]]
    if reference is not None:
        cols += _ratio_columns()
    return with_coordinates(in_study_order(table[cols], study, algorithms or study.algorithms), study)


def _ratio_columns(quantity: str | None = None) -> list[str]:
    qs = [quantity] if quantity else list(_QUANTITIES)
    return [f"{q}_{c.replace('speedup', 'ratio')}" for q in qs for c in SPEEDUP_COLUMNS]


def _as_speedup(r, quantity: str) -> SimpleNamespace:
    """A row's ratio of ``quantity`` under the speed-up names :func:`sfl_sim.analysis.tables.speedup_cell` reads."""
    return SimpleNamespace(**{c: getattr(r, f"{quantity}_{c.replace('speedup', 'ratio')}") for c in SPEEDUP_COLUMNS})


def energy_layouts(table: pd.DataFrame, study: StudyData, algorithms: Sequence[str], reference: str | None,
                   notes: Sequence[str] = (), *, n_boot: int = N_BOOT) -> list[Layout]:
    """Per target: total client energy and per-client maximum to it (J), and with a reference the
    energy ratios (``E_ref / E_alg``)."""
    columns = [setting_headers(study)[s] for s in study.settings]
    out = []
    for target, part in table.groupby("target", sort=True):
        t = target_text(target)
        for q, what in _QUANTITIES.items():
            rows = wide_rows(part, study, algorithms, lambda r, q=q: tta_cell(getattr(r, f"{q}_mean"),
                                                                            getattr(r, f"{q}_std"), r.reached,
                                                                            r.n_runs))
            tag = "max" if q == "energy_max_j" else "total"
            source = "rounds.csv client_energy_j" + ("; per client from energy.csv" if tag == "max" else "")
            out.append(Layout(
                f"Client energy to {t} test accuracy, {what} (J)", columns, [(None, rows)],
                [f"cumulative client energy ({source}) "
                 f"at the first evaluation reaching {t}; mean ± std (ddof = {DDOF}) over the seeds that reached it; "
                 "(k/n): k of n seeds reached it.", *notes],
                label=f"tab:energy-{tag}-{t.rstrip('%')}"))
            if reference is not None:
                rows = wide_rows(part, study, algorithms,
                             lambda r, q=q: speedup_cell(_as_speedup(r, q), r.algorithm == reference))
                sub = part.rename(columns={f"{q}_{c.replace('speedup', 'ratio')}": c for c in SPEEDUP_COLUMNS})
                out.append(Layout(
                    f"Energy ratio to {t} over {reference}, {what} ({reference}'s energy / the algorithm's)",
                    columns, [(None, rows)],
                    ["above 1: the algorithm spent less. The pairing, edges and interval are the speed-up's: "
                     "energies in place of times (0 J at round 0 plays the role of t = 0).",
                     *speedup_notes(sub, t, reference, multi_setting=len(study.settings) > 1, n_boot=n_boot),
                     *notes],
                    label=f"tab:energy-ratio-{tag}-{t.rstrip('%')}"))
    return out
