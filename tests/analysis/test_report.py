"""write_report: numbers equal a pandas computation from the raw files; files well-formed."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sfl_sim.analysis.figures import CURVES, mean_curve, seed_tails, setting_figure
from sfl_sim.analysis.report import default_output_dir, parse_targets, write_report
from sfl_sim.analysis.stats import km_median
from sfl_sim.analysis.study_data import StudyError, load_study
from tests.analysis.synthetic_runs import PARTITIONS, write_run

ALGOS = ("scala", "fedavg", "splitfed_v1")
SEEDS = (0, 1, 2)
PARTS = {"quantity(alpha=2)": PARTITIONS[0], "dirichlet(beta=0.1)": PARTITIONS[3]}
TARGETS = (0.5, 0.6)


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> tuple[Path, dict[Path, tuple[str, str, int]]]:
    """2 settings × 3 algorithms × 3 seeds; fedavg seed 2 under dirichlet never reaches 0.6."""
    root = tmp_path_factory.mktemp("study")
    coords = {}
    for si, (label, part) in enumerate(PARTS.items()):
        for a in ALGOS:
            for s in SEEDS:
                d = root / f"p{si}" / a / f"seed{s}"
                acc = None
                if a == "fedavg" and s == 2 and part["name"] == "dirichlet":
                    acc = [0.3, 0.45, 0.52, 0.55, 0.58]
                write_run(d, a, s, overrides={"data.partition": part}, setting_index=si, accuracies=acc)
                coords[d] = (label, a, s)
    return root, coords


@pytest.fixture(scope="module")
def report(study, tmp_path_factory) -> tuple[Path, list[Path]]:
    root, _ = study
    out = tmp_path_factory.mktemp("report")
    files = write_report(root, out, reference="fedavg", targets=TARGETS)
    return out, files


def _raw(study) -> pd.DataFrame:
    """Every metrics.csv, read by pandas, with (partition, algorithm, seed) from the test's own map."""
    _, coords = study
    frames = []
    for d, (part, a, s) in coords.items():
        m = pd.read_csv(d / "metrics.csv")
        frames.append(m.assign(partition=part, algorithm=a, seed=s, run=str(d)))
    return pd.concat(frames, ignore_index=True)


def _agg(per_run: pd.DataFrame, col: str) -> pd.DataFrame:
    g = per_run.groupby(["partition", "algorithm"])[col]
    return pd.DataFrame({"mean": g.mean(), "std": g.std(ddof=1), "n": g.count()})


# ----------------------------------------------------------------------------- numbers


@pytest.mark.slow
def test_accuracy_table_equals_pandas_from_raw_files(study, report):
    raw = _raw(study)
    trained = raw[raw["round"] >= 1].sort_values(["run", "round"])
    per_run = trained.groupby(["partition", "algorithm", "seed"]).agg(
        final=("test_accuracy", "last"), best=("test_accuracy", "max")).reset_index()
    got = pd.read_csv(report[0] / "accuracy.csv").set_index(["data.partition", "algorithm"])
    for kind in ("final", "best"):
        want = _agg(per_run, kind)
        for (part, a), row in want.iterrows():
            g = got.loc[(part, a)]
            assert g[f"{kind}_test_accuracy_mean"] == pytest.approx(row["mean"], rel=1e-12)
            assert g[f"{kind}_test_accuracy_std"] == pytest.approx(row["std"], rel=1e-12)
            assert g[f"{kind}_test_accuracy_n"] == row["n"] == 3
    assert len(got) == len(PARTS) * len(ALGOS)


def _tta_per_run(raw: pd.DataFrame, target: float) -> pd.DataFrame:
    hit = raw[raw["test_accuracy"] >= target].sort_values(["run", "round"]).groupby("run").head(1)
    runs = raw.drop_duplicates("run")[["run", "partition", "algorithm", "seed"]]
    return runs.merge(hit.drop(columns=["partition", "algorithm", "seed"]), on="run", how="left")


@pytest.mark.slow
def test_tta_and_speedup_equal_pandas_from_raw_files(study, report):
    raw = _raw(study)
    got = pd.read_csv(report[0] / "tta.csv").set_index(["data.partition", "algorithm", "target"])
    for target in TARGETS:
        per_run = _tta_per_run(raw, target)
        want = _agg(per_run, "sim_time_s")
        for (part, a), row in want.iterrows():
            g = got.loc[(part, a, target)]
            assert g["reached"] == row["n"] and g["n_runs"] == 3
            assert g["tta_s_mean"] == pytest.approx(row["mean"], rel=1e-12)
            if row["n"] > 1:
                assert g["tta_s_std"] == pytest.approx(row["std"], rel=1e-12)
            # speed-up over fedavg: ratio of mean times over seeds where both reached
            ref = per_run[(per_run["partition"] == part) & (per_run["algorithm"] == "fedavg")]
            mine = per_run[(per_run["partition"] == part) & (per_run["algorithm"] == a)]
            pair = ref.merge(mine, on="seed", suffixes=("_ref", "")).dropna(subset=["sim_time_s_ref", "sim_time_s"])
            assert g["speedup_pairs"] == len(pair)
            assert g["speedup"] == pytest.approx(pair["sim_time_s_ref"].mean() / pair["sim_time_s"].mean(), rel=1e-12)
            # 3 seeds: below 5 pairs, the per-seed ratios' range instead of a CI (a ratio of sums lies in it)
            ratios = pair["sim_time_s_ref"] / pair["sim_time_s"]
            assert g["speedup_interval"] == ("seed_range" if len(pair) >= 2 else "none")
            assert np.isnan(g["speedup_low"]) and np.isnan(g["speedup_high"])
            assert g["speedup_seed_min"] == pytest.approx(ratios.min())
            assert g["speedup_seed_max"] == pytest.approx(ratios.max())
            assert g["speedup_seed_min"] <= g["speedup"] * (1 + 1e-12)
            assert g["speedup"] <= g["speedup_seed_max"] * (1 + 1e-12)
            if a == "fedavg":
                assert g["speedup"] == g["speedup_seed_min"] == g["speedup_seed_max"] == 1.0
    # the seed that never reached 0.6 is counted, not averaged; the median counts it as censored
    assert got.loc[("dirichlet(beta=0.1)", "fedavg", 0.6), "reached"] == 2
    per_run = _tta_per_run(raw, 0.6)
    g = per_run[(per_run["partition"] == "dirichlet(beta=0.1)") & (per_run["algorithm"] == "fedavg")]
    last = raw.groupby("run")["sim_time_s"].max()
    want = km_median(g["sim_time_s"].dropna(), g.loc[g["sim_time_s"].isna(), "run"].map(last))
    assert got.loc[("dirichlet(beta=0.1)", "fedavg", 0.6), "tta_s_km_median"] == pytest.approx(want, rel=1e-12)
    assert got.loc[("dirichlet(beta=0.1)", "fedavg", 0.6), "tta_s_km_median"] == max(g["sim_time_s"].dropna())
    assert got.loc[("dirichlet(beta=0.1)", "scala", 0.6), "speedup_pairs"] == 2


@pytest.mark.slow
def test_overhead_equals_pandas_from_raw_files(study, report):
    _, coords = study
    cols = ["uplink_bytes", "downlink_bytes", "client_flops", "server_flops"]
    per_round = []
    for d, (part, a, s) in coords.items():
        r = pd.read_csv(d / "rounds.csv")
        per_round.append({"partition": part, "algorithm": a, "seed": s, **r[cols].mean().to_dict()})
    per_round = pd.DataFrame(per_round)
    got = pd.read_csv(report[0] / "overhead.csv")
    got_round = got[got["basis"] == "per_round"].set_index(["data.partition", "algorithm"])
    for c in cols:
        want = _agg(per_round, c)
        for key, row in want.iterrows():
            assert got_round.loc[key, f"{c}_mean"] == pytest.approx(row["mean"], rel=1e-12)
            assert got_round.loc[key, f"{c}_std"] == pytest.approx(row["std"], rel=1e-12, abs=1e-6)
    raw = _raw(study)
    got_t = got[got["basis"] == "to_target"].set_index(["data.partition", "algorithm", "target"])
    for target in TARGETS:
        per_run = _tta_per_run(raw, target)
        for c in cols:
            want = _agg(per_run, c)
            for (part, a), row in want.iterrows():
                g = got_t.loc[(part, a, target)]
                assert g["n"] == row["n"]
                assert g[f"{c}_mean"] == pytest.approx(row["mean"], rel=1e-12)


def test_per_round_overhead_without_rounds_csv_uses_cumulative_over_rounds(tmp_path):
    d = write_run(tmp_path / "a", "scala", 0, with_rounds_csv=False)
    write_report(tmp_path, tmp_path / "out", targets=(0.5,), figures=False)
    m = pd.read_csv(d / "metrics.csv").iloc[-1]
    got = pd.read_csv(tmp_path / "out" / "overhead.csv").iloc[0]
    assert got["basis"] == "per_round"
    assert got["uplink_bytes_mean"] == pytest.approx(m["uplink_bytes"] / m["round"])


def test_round0_row_counts_for_tta_not_for_best(tmp_path):
    write_run(tmp_path / "a", "scala", 0, accuracies=[0.05, 0.06, 0.07, 0.08, 0.09])  # initial 0.1 is the max
    write_report(tmp_path, tmp_path / "out", targets=(0.1,), figures=False)
    acc = pd.read_csv(tmp_path / "out" / "accuracy.csv").iloc[0]
    assert acc["best_test_accuracy_mean"] == pytest.approx(0.09)
    assert pd.read_csv(tmp_path / "out" / "tta.csv").iloc[0]["tta_s_mean"] == 0.0


def test_final_last_k_and_best_accuracy_each_labelled_final_first(tmp_path):
    # an oscillating run: best 0.9 (one lucky evaluation), final 0.5, the last five 0.5-0.9
    accuracies = [0.2, 0.3, 0.9, 0.4, 0.8, 0.5, 0.6, 0.5]
    write_run(tmp_path / "a", "scala", 0, accuracies=accuracies, overrides={"rounds": 16})  # 8 evaluations
    write_report(tmp_path, tmp_path / "out", targets=(0.5,), figures=False)
    acc = pd.read_csv(tmp_path / "out" / "accuracy.csv").iloc[0]
    assert acc["final_test_accuracy_mean"] == pytest.approx(0.5)
    assert acc["last_k_test_accuracy_mean"] == pytest.approx(np.mean(accuracies[-5:]))
    assert acc["best_test_accuracy_mean"] == pytest.approx(0.9)
    md = (tmp_path / "out" / "accuracy.md").read_text()
    titles = [line.strip("*") for line in md.splitlines() if line.startswith("**") and "accuracy" in line]
    assert [t.split(" (%)")[0] for t in titles] == [
        "Final test accuracy", "Mean test accuracy over the last 5 evaluations", "Best test accuracy"], titles
    assert "papers' max accuracy" not in md and "favours a method whose accuracy oscillates" in md
    overhead = (tmp_path / "out" / "overhead.md").read_text()
    assert "Acc.: final test accuracy" in overhead and "| 50.00" in overhead
    runs = pd.read_csv(tmp_path / "out" / "runs.csv").iloc[0]
    assert runs["last_k_test_accuracy"] == pytest.approx(np.mean(accuracies[-5:]))


# ----------------------------------------------------------------------------- files


def test_report_layout(report):
    out, files = report
    names = {p.relative_to(out).as_posix() for p in files}
    assert files[0] == out / "README.md"
    for stem in ("settings", "accuracy", "tta", "overhead"):
        assert {f"{stem}.csv", f"{stem}.md", f"{stem}.tex"} <= names
    assert {"runs.csv", "figures.tex"} <= names
    settings = pd.read_csv(out / "settings.csv")
    assert sorted(settings["data.partition"]) == sorted(PARTS) and (settings["runs"] == len(ALGOS) * 3).all()
    for a in ALGOS:  # one figure per algorithm with one line per setting
        assert f"figures/across_settings/{a}/accuracy_vs_time.png" in names
    for slug in ("partition=quantity_alpha=2", "partition=dirichlet_beta=0.1"):
        for kind in CURVES:
            assert {f"figures/{slug}/{kind}.png", f"figures/{slug}/{kind}.pdf"} <= names
            assert (out / "figures" / slug / f"{kind}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert (out / "figures" / slug / f"{kind}.pdf").read_bytes()[:5] == b"%PDF-"
    assert all(p.is_file() for p in files)
    readme = (out / "README.md").read_text()
    assert "ddof = 1" in readme and "bootstrap" in readme
    assert "**Final** accuracy: the last evaluation" in readme and "max accuracy" not in readme
    assert "figures/partition=quantity_alpha=2/accuracy_vs_time.png" in readme
    assert "Kaplan–Meier median" in readme and "### Settings" in readme
    tex = (out / "figures.tex").read_text()
    assert tex.count("\\begin{figure}") == tex.count("\\caption{") == sum(n.endswith(".pdf") for n in names)


@pytest.mark.slow
def test_report_is_reproducible(study, tmp_path):
    root, _ = study
    a = write_report(root, tmp_path / "a", reference="fedavg", targets=TARGETS)
    b = write_report(root, tmp_path / "b", reference="fedavg", targets=TARGETS)
    for fa, fb in zip(a, b, strict=True):
        if fa.suffix in (".csv", ".md", ".tex", ".pdf") and fa.name != "runs.csv":
            assert fa.read_bytes() == fb.read_bytes(), fa.name


def _md_tables(text: str) -> list[list[str]]:
    tables, cur = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            tables.append(cur)
            cur = []
    return tables + ([cur] if cur else [])


def test_markdown_is_well_formed(report):
    out, _ = report
    for name in ("accuracy.md", "tta.md", "overhead.md", "README.md"):
        tables = _md_tables((out / name).read_text())
        assert tables, name
        for t in tables:
            widths = {len(re.split(r"(?<!\\)\|", line)) for line in t}
            assert len(widths) == 1, (name, t[0])
            assert re.fullmatch(r"\|(-{3}:?\|)+", t[1]), t[1]
            assert len(t) >= 3


def _tabulars(tex: str) -> list[str]:
    return re.findall(r"\\begin\{tabular\}.*?\\end\{tabular\}", tex, flags=re.S)


def test_latex_is_well_formed(report):
    out, _ = report
    for name in ("accuracy.tex", "tta.tex", "overhead.tex"):
        tex = (out / name).read_text()
        assert tex.count(r"\begin{table}") == tex.count(r"\end{table}") == len(_tabulars(tex)) > 0
        body = re.sub(r"\\[{}%&_#$]", "", tex)
        assert body.count("{") == body.count("}"), name
        for line in tex.splitlines():
            if not line.startswith("%"):
                assert not re.search(r"(?<!\\)[%_#]", line), (name, line)  # escaped specials
        for tab in _tabulars(tex):
            spec = re.match(r"\\begin\{tabular\}\{([lrc]+)\}", tab).group(1)
            assert r"\toprule" in tab and r"\midrule" in tab and r"\bottomrule" in tab
            rows = [ln for ln in tab.splitlines() if ln.endswith(r"\\")]
            for row in rows:
                cells = re.split(r"(?<!\\)&", row)
                spans = sum(int(k) - 1 for k in re.findall(r"\\multicolumn\{(\d+)\}", row))
                assert len(cells) + spans == len(spec), (name, row)


def test_latex_escapes_labels(tmp_path):
    for s in (0, 1):
        write_run(tmp_path / f"a{s}", "scala", s, label="my_algo & 100%")
    out = tmp_path / "out"
    write_report(tmp_path, out, targets=(0.5,), figures=False)
    tex = (out / "accuracy.tex").read_text()
    assert r"my\_algo \& 100\%" in tex
    md = (out / "accuracy.md").read_text()
    assert "my_algo & 100%" in md


# ----------------------------------------------------------------------------- figures


def test_mean_curve_is_linear_and_only_where_every_seed_runs():
    a = (np.array([0.0, 10.0, 20.0]), np.array([0.1, 0.5, 0.7]))
    b = (np.array([0.0, 15.0, 25.0]), np.array([0.1, 0.3, 0.9]))
    c = mean_curve([a, b], "minmax").set_index("x")
    assert c.index[0] == 0.0 and c.index[-1] == 20.0  # to the earliest last evaluation: no survivorship jump
    assert {0.0, 10.0, 15.0, 20.0} <= set(c.index)  # every evaluation point inside is on the grid
    assert (c["n"] == 2).all()
    # both seeds interpolated linearly: at 10, b is 0.1 + (0.3 - 0.1) * 10 / 15
    b10 = 0.1 + 0.2 * 10 / 15
    assert c.loc[10.0, "mean"] == pytest.approx((0.5 + b10) / 2)
    assert (c.loc[10.0, "low"], c.loc[10.0, "high"]) == pytest.approx((b10, 0.5))
    s = mean_curve([a, b], "std").set_index("x")
    assert s.loc[10.0, "high"] - s.loc[10.0, "mean"] == pytest.approx(np.std([0.5, b10], ddof=1))
    # b runs on alone after 20: drawn apart, from its interpolated value at 20 to its last point
    (tx, ty), = seed_tails([a, b])
    assert tx.tolist() == [20.0, 25.0] and ty == pytest.approx([0.1 + 0.2 + 0.6 * 5 / 10, 0.9])
    one = mean_curve([a], "std")
    assert one["low"].isna().all() and one.set_index("x").loc[[0.0, 10.0, 20.0], "mean"].tolist() == [0.1, 0.5, 0.7]
    assert seed_tails([a]) == []
    with pytest.raises(ValueError, match="band"):
        mean_curve([a], "iqr")


def test_ci_band_needs_enough_seeds_and_holds_the_mean():
    runs = [(np.array([0.0, 10.0]), np.array([0.1, 0.1 * k])) for k in range(1, 7)]
    c = mean_curve(runs, "ci", n_boot=500)
    assert (c["low"] <= c["mean"] + 1e-12).all() and (c["mean"] <= c["high"] + 1e-12).all()
    assert c["high"].iloc[-1] > c["low"].iloc[-1]
    assert mean_curve(runs, "ci", n_boot=500).equals(c)  # same seed, same band
    assert mean_curve(runs[:3], "ci", n_boot=500)["low"].isna().all()  # too few seeds for a CI


def test_log_x_leaves_out_the_initial_evaluation():
    a = (np.array([0.0, 1.0, 100.0]), np.array([0.1, 0.2, 0.5]))
    c = mean_curve([a], log_x=True)
    assert c["x"].min() == 1.0 and c["x"].max() == 100.0


def test_mean_curve_has_no_sawtooth_when_seeds_evaluate_at_different_times():
    """Two seeds on the same straight line, evaluated at interleaved times: a step-wise ("last
    evaluation") mean would alternate between them (a sawtooth band); linear interpolation gives
    std 0 wherever both run."""
    a = (np.arange(0.0, 31.0, 10.0), np.arange(0.0, 31.0, 10.0) / 100)
    b = (np.arange(5.0, 36.0, 10.0), np.arange(5.0, 36.0, 10.0) / 100)
    c = mean_curve([a, b], "std")
    both = c[c["n"] == 2]
    assert len(both) > 100 and np.allclose(both["high"] - both["mean"], 0.0, atol=1e-12)
    assert np.allclose(c["mean"], c["x"] / 100)


def test_mean_curve_smooths_only_when_asked():
    x = np.arange(0.0, 10.0)
    y = np.array([0.0, 1.0] * 5)
    assert mean_curve([(x, y)]).set_index("x").loc[x, "mean"].tolist() == y.tolist()
    smooth = mean_curve([(x, y)], smooth=3).set_index("x").loc[x[1:-1], "mean"]
    assert np.allclose(smooth, [1 / 3, 2 / 3] * 4)
    with pytest.raises(ValueError, match="smooth"):
        mean_curve([(x, y)], smooth=-1)


def test_figure_legend_has_one_unique_entry_per_algorithm(study):
    root, _ = study
    st = load_study(root)
    fig = setting_figure(st, st.settings[0], "accuracy_vs_time", targets=TARGETS)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(labels) == len(set(labels)) == len(ALGOS)
    assert sorted(labels) == sorted(f"{a} (3 seeds)" for a in ALGOS)
    # targets are labelled on the plot, not in the legend
    assert {t.get_text() for t in fig.axes[0].texts} == {"50%", "60%"}
    assert fig.axes[0].get_title() == st.settings[0]


# ----------------------------------------------------------------------------- options, errors


def test_incomplete_runs_are_left_out_and_listed(tmp_path):
    write_run(tmp_path / "a", "scala", 0)
    write_run(tmp_path / "b", "scala", 1, status="running")
    out = tmp_path / "out"
    write_report(tmp_path, out, targets=(0.5,), figures=False)
    assert pd.read_csv(out / "accuracy.csv").iloc[0]["n_runs"] == 1
    runs = pd.read_csv(out / "runs.csv")
    assert list(runs["in_report"]) == [True, False]
    assert "Left out" in (out / "README.md").read_text()
    write_report(tmp_path, out, targets=(0.5,), figures=False, include_incomplete=True)
    assert pd.read_csv(out / "accuracy.csv").iloc[0]["n_runs"] == 2


def test_unknown_reference_and_bad_band(study, tmp_path):
    root, _ = study
    with pytest.raises(StudyError, match="unknown reference 'fedprox'; algorithms: fedavg, scala, splitfed_v1"):
        write_report(root, tmp_path, reference="fedprox")
    with pytest.raises(ValueError, match="band"):
        write_report(root, tmp_path, band="iqr")


def test_parse_targets_and_default_output_dir(tmp_path):
    assert parse_targets("0.6, 0.7,0.6") == (0.6, 0.7)
    with pytest.raises(ValueError, match="fraction"):
        parse_targets("70")
    with pytest.raises(ValueError, match="not a number"):
        parse_targets("0.6,x")
    assert default_output_dir([tmp_path / "s"]) == tmp_path / "s" / "report"
    assert default_output_dir([tmp_path / "s" / "a", tmp_path / "s" / "b"], "plots") == tmp_path / "s" / "plots"


def test_default_targets_come_from_the_scenarios(study, tmp_path):
    root, _ = study
    write_report(root, tmp_path, figures=False)
    assert sorted(pd.read_csv(tmp_path / "tta.csv")["target"].unique()) == [0.5, 0.6, 0.7]


# ----------------------------------------------------------------------------- scale


@pytest.mark.slow
def test_report_on_1000_runs(tmp_path):
    """1000 synthetic run dirs (5 algorithms × 10 settings × 20 seeds): the whole report, figures too.
    Not a timed test; the time is printed (pytest -s) for the record."""
    parts = PARTITIONS[:2]
    participations = (0.1, 0.2, 0.3, 0.5, 1.0)
    algos = ("scala", "fedavg", "splitfed_v1", "fedprox", "fedlc")
    for pi, part in enumerate(parts):
        for q in participations:
            for a in algos:
                for s in range(20):
                    write_run(tmp_path / "study" / f"p{pi}_q{q}" / a / f"seed{s}", a, s,
                              overrides={"data.partition": part, "clients.participation": q}, setting_index=pi)
    t0 = time.perf_counter()
    st = load_study(tmp_path / "study")
    t1 = time.perf_counter()
    files = write_report(tmp_path / "study", tmp_path / "report", reference="fedavg", targets=(0.5, 0.6))
    t2 = time.perf_counter()
    print(f"\n1000 runs: load {t1 - t0:.2f} s; full report {t2 - t1:.2f} s ({len(files)} files)")
    assert len(st.runs) == 1000 and len(st.settings) == 10
    assert st.setting_fields == ("data.partition.alpha", "clients.participation")
    acc = pd.read_csv(tmp_path / "report" / "accuracy.csv")
    assert len(acc) == 50 and (acc["n_runs"] == 20).all()
    pngs = [p for p in files if p.suffix == ".png"]
    across = [p for p in pngs if "across_settings" in p.parts]
    sweep = [p for p in pngs if "sweep" in p.parts]
    radio = [p for p in pngs if "radio" in p.parts]
    assert len(pngs) - len(across) - len(sweep) - len(radio) == 30  # per setting: accuracy vs time, uplink, energy
    assert len(across) == 15  # per algorithm, the 10 settings overlaid: the same three kinds
    assert len(sweep) == 14  # participation and alpha are numeric grid fields
    assert [p.name for p in radio] == ["client_energy_cdf.png"]  # the runs have energy.csv, no clients.csv
    summary = json.loads((tmp_path / "study" / "p0_q0.1" / "scala" / "seed0" / "summary.json").read_text())
    assert summary["schema_version"] == 1


def test_speedup_cells_when_the_reference_never_reaches(tmp_path):
    for s in (0, 1):
        write_run(tmp_path / f"s{s}" / "fedavg", "fedavg", s, accuracies=[0.2, 0.3, 0.35, 0.4, 0.4])
        write_run(tmp_path / f"s{s}" / "scala", "scala", s)
    write_report(tmp_path, tmp_path / "out", reference="fedavg", targets=(0.5,), figures=False)
    md = (tmp_path / "out" / "tta.md").read_text()
    assert "| fedavg | – (0 pairs) |" in md and "| scala | – (0 pairs) |" in md
    assert "| fedavg | – (0/2) |" in md


@pytest.mark.slow
def test_target_lines_only_when_targets_are_asked_for(study, tmp_path, monkeypatch):
    import sfl_sim.analysis.report_figures as report_module  # where the report draws its per-setting figures

    seen = []
    real = report_module.setting_figure

    def spy(*args, **kwargs):
        seen.append(tuple(kwargs["targets"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(report_module, "setting_figure", spy)
    root, _ = study
    write_report(root, tmp_path / "a")
    assert set(seen) == {()}
    seen.clear()
    write_report(root, tmp_path / "b", targets=(0.6,))
    assert set(seen) == {(0.6,)}


@pytest.mark.slow
def test_log_x_figure_labels_1_2_5_ticks_only(study):
    from matplotlib.ticker import NullFormatter

    st = load_study(study[0])
    ax = setting_figure(st, st.settings[0], log_x=True).axes[0]
    assert ax.get_xscale() == "log" and isinstance(ax.xaxis.get_minor_formatter(), NullFormatter)
    assert min(ax.lines[0].get_xdata()) > 0  # the round-0 evaluation is left out
