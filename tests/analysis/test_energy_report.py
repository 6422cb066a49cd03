"""Client energy in the report and the plots (sfl_sim.analysis.energy): energy to each target, the
per-client maximum, paired ratios, the energy columns of the overhead table, the
accuracy-versus-energy figure and plot panel."""
from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

from sfl_sim.analysis.energy import energy_layouts, energy_table, has_energy, metrics_with_energy
from sfl_sim.analysis.plots import ENERGY_PLOT_FILE, plot_runs
from sfl_sim.analysis.report import write_report
from sfl_sim.analysis.study_data import load_study
from sfl_sim.analysis.tables import accuracy_table, overhead_layouts, overhead_table, to_markdown, tta_table
from sfl_sim.runs.rundir.schema import ENERGY_FILE, ROUNDS_FILE
from sfl_sim.runs.rundir.upgrade import sections_added_later
from tests.analysis.synthetic_runs import write_run, write_study

# the synthetic runs spend 2 W for each round's duration, client c of 10 a (c + 1) / 55 share of it
WATTS, TOP_SHARE = 2.0, 10 / 55


def _strip_energy(dirs) -> None:
    for d in dirs:
        (d / ENERGY_FILE).unlink()
        with (d / ROUNDS_FILE).open() as fh:
            rows = list(csv.DictReader(fh))
        for r in rows:
            r["client_energy_j"] = ""
        with (d / ROUNDS_FILE).open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


def test_energy_to_target_total_max_and_ratio(tmp_path) -> None:
    write_study(tmp_path / "study")
    study = load_study(tmp_path / "study")
    assert has_energy(study)
    m = metrics_with_energy(study)
    np.testing.assert_allclose(m["client_energy_j"], WATTS * m["sim_time_s"], rtol=1e-12)  # 2 W x the clock
    targets = (0.5, 0.6)
    en = energy_table(study, targets, "fedavg", n_boot=200)
    tta = tta_table(study, targets, "fedavg", n_boot=200)
    merged = en.merge(tta, on=["setting", "algorithm", "target"])
    assert len(merged) == len(en) == len(tta) and (merged["reached_x"] == merged["reached_y"]).all()
    np.testing.assert_allclose(merged["energy_j_mean"], WATTS * merged["tta_s_mean"], rtol=1e-12)
    np.testing.assert_allclose(merged["energy_max_j_mean"], TOP_SHARE * WATTS * merged["tta_s_mean"], rtol=1e-12)
    # energy proportional to time: the energy ratio is the speed-up, with the same pairs and interval
    np.testing.assert_allclose(merged["energy_j_ratio"], merged["speedup"], rtol=1e-12)
    assert (merged["energy_j_ratio_pairs"] == merged["speedup_pairs"]).all()
    text = "\n".join(to_markdown(layout) for layout in energy_layouts(en, study, ("fedavg", "scala"), "fedavg"))
    assert "Client energy to 50% test accuracy, total client energy (J)" in text
    assert "most any one client spent" in text and "1 (reference)" in text


@pytest.mark.slow
def test_report_and_plot_gain_energy_only_when_runs_recorded_it(tmp_path) -> None:
    dirs = write_study(tmp_path / "study", seeds=(0, 1))
    files = write_report(tmp_path / "study", tmp_path / "report", reference="fedavg", targets=(0.5,), n_boot=100)
    names = {p.name for p in files}
    assert {"energy.csv", "energy.md", "energy.tex", "accuracy_vs_energy.png"} <= names
    assert "Client energy to 50%" in (tmp_path / "report" / "README.md").read_text()
    written = plot_runs(dirs[:2], tmp_path / "plots")
    assert written[-1].name == ENERGY_PLOT_FILE and written[-1].is_file()

    _strip_energy(dirs)
    assert not has_energy(load_study(tmp_path / "study"))
    files = write_report(tmp_path / "study", tmp_path / "report2", reference="fedavg", targets=(0.5,), n_boot=100)
    assert not {p.name for p in files} & {"energy.csv", "accuracy_vs_energy.png"}
    assert ENERGY_PLOT_FILE not in {p.name for p in plot_runs(dirs[:2], tmp_path / "plots2")}
    assert metrics_with_energy(load_study(tmp_path / "study"))["client_energy_j"].isna().all()


def test_cumulative_energy_reads_rounds_csv(tmp_path) -> None:
    (d,) = write_study(tmp_path / "s", algorithms=("scala",), seeds=(0,), partitions=[{"name": "iid"}])
    r = pd.read_csv(d / ROUNDS_FILE)
    m = metrics_with_energy(load_study(d)).set_index("round")["client_energy_j"]
    assert m[0] == 0.0
    for rnd in m.index[1:]:
        assert m[rnd] == pytest.approx(r.loc[r["round"] <= rnd, "client_energy_j"].sum())


@pytest.mark.slow
def test_overhead_table_energy_per_round_and_to_target(tmp_path) -> None:
    dirs = write_study(tmp_path / "study", seeds=(0, 1, 2))
    study = load_study(tmp_path / "study")
    targets = (0.5, 0.6)
    ovh = overhead_table(study, targets)
    # per round: each run's mean of rounds.csv client_energy_j, then mean ± std over seeds (by hand)
    by_run = {}
    for d in dirs:
        r = pd.read_csv(d / ROUNDS_FILE)
        part, alg = d.parent.parent.name, d.parent.name.split("=")[1]
        by_run.setdefault((part, alg), []).append(r["client_energy_j"].mean())
    per_round = ovh[ovh["basis"] == "per_round"]
    assert len(per_round) == len(by_run)
    got = sorted(zip(per_round["client_energy_j_mean"], per_round["client_energy_j_std"], strict=True))
    want = sorted((np.mean(v), np.std(v, ddof=1)) for v in by_run.values())
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert (per_round["client_energy_j_n"] == 3).all()
    # to a target: the energy table's total energy, the same seeds
    en = energy_table(study, targets).set_index(["setting", "algorithm", "target"])
    to_target = ovh[ovh["basis"] == "to_target"].set_index(["setting", "algorithm", "target"])
    np.testing.assert_allclose(to_target["client_energy_j_mean"], en.loc[to_target.index, "energy_j_mean"],
                               rtol=1e-15)
    assert (to_target["client_energy_j_n"] == en.loc[to_target.index, "reached"]).all()
    assert (to_target["client_energy_j_n"] == to_target["n"]).all()
    text = "\n".join(to_markdown(layout) for layout in overhead_layouts(ovh, accuracy_table(study), study,
                                                                         study.algorithms))
    assert text.count("Client energy (J)") == 1 + len(targets)
    assert "(m): only m of the seeds counted recorded energy" in text


def test_overhead_energy_over_runs_with_and_without_energy(tmp_path) -> None:
    dirs = write_study(tmp_path / "study", algorithms=("scala",), seeds=(0, 1, 2), partitions=[{"name": "iid"}])
    _strip_energy(dirs[:1])  # a run made before energy accounting, beside two that recorded it
    study = load_study(tmp_path / "study")
    ovh = overhead_table(study, (0.5,))
    row = ovh[ovh["basis"] == "per_round"].iloc[0]
    assert (row["n"], row["client_energy_j_n"]) == (3, 2)
    want = [pd.read_csv(d / ROUNDS_FILE)["client_energy_j"].mean() for d in dirs[1:]]
    assert row["client_energy_j_mean"] == pytest.approx(np.mean(want), rel=1e-12)
    md = to_markdown(overhead_layouts(ovh, accuracy_table(study), study, study.algorithms)[0])
    assert f" ({2})" in md.splitlines()[4]

    _strip_energy(dirs[1:])  # no run recorded energy: no energy column, the CSV's is empty
    study = load_study(tmp_path / "study")
    ovh = overhead_table(study, (0.5,))
    assert ovh["client_energy_j_mean"].isna().all() and (ovh["client_energy_j_n"] == 0).all()
    md = "\n".join(map(to_markdown, overhead_layouts(ovh, accuracy_table(study), study, study.algorithms)))
    assert "Client energy" not in md


def test_report_overhead_csv_has_the_energy_columns(tmp_path) -> None:
    write_study(tmp_path / "study", seeds=(0, 1))
    write_report(tmp_path / "study", tmp_path / "report", targets=(0.5,), figures=False)
    ovh = pd.read_csv(tmp_path / "report" / "overhead.csv")
    assert {"client_energy_j_mean", "client_energy_j_std", "client_energy_j_n"} <= set(ovh.columns)
    assert ovh["client_energy_j_mean"].notna().all()
    assert "Client energy (J)" in (tmp_path / "report" / "overhead.md").read_text()


def test_report_over_runs_made_before_and_after_energy_existed(tmp_path) -> None:
    """One setting: the run made before energy accounting (no energy: section, no energy files)
    joins the runs made since with the default section; the energy columns count the two that
    recorded energy."""
    default = sections_added_later()["energy"]
    dirs = [write_run(tmp_path / "study" / f"seed{s}", "scala", s, overrides={"energy": default} if s else None)
            for s in (0, 1, 2)]
    _strip_energy(dirs[:1])
    write_report(tmp_path / "study", tmp_path / "report", targets=(0.5,), figures=False)
    runs = pd.read_csv(tmp_path / "report" / "runs.csv")
    assert runs["setting"].nunique() == 1 and runs["in_report"].all()
    ovh = pd.read_csv(tmp_path / "report" / "overhead.csv")
    assert (ovh["n"] == 3).all() and (ovh["client_energy_j_n"] == 2).all()
    en = pd.read_csv(tmp_path / "report" / "energy.csv")
    assert (en["n_runs"] == 3).all() and (en["reached"] == 2).all()
    assert "Client energy (J)" in (tmp_path / "report" / "overhead.md").read_text()
