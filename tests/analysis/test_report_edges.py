"""The report at its edges: targets met at t = 0, few pairs, incomplete runs, and paper-ready figures.

Every speed-up test parses the Markdown speed-up tables back and checks them against tta.csv
(pairs, value, interval, edge case) and the LaTeX against the Markdown, and runs with numpy
warnings turned into errors.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.text import Text

from sfl_sim.analysis.figures import CURVES, MIN_FONT_PT, setting_figure
from sfl_sim.analysis.report import write_report
from sfl_sim.analysis.study_data import load_study
from sfl_sim.analysis.tables import latex_escape
from sfl_sim.cli import main
from tests.analysis.synthetic_runs import write_run

TARGET = 0.5
# evaluations at rounds 2, 4, 6, 8, 10 (and round 0): accuracy lists reaching 0.5 at a chosen round
REACH_AT = {2: [0.55, 0.6, 0.65, 0.7, 0.7], 4: [0.3, 0.55, 0.6, 0.65, 0.7], 6: [0.3, 0.4, 0.55, 0.6, 0.7],
            8: [0.3, 0.4, 0.45, 0.55, 0.6], None: [0.2, 0.3, 0.35, 0.4, 0.45]}


def _run(root: Path, algorithm: str, seed: int, reach: int | None | str, **kw) -> Path:
    """A run reaching TARGET at round ``reach`` (``"start"``: at round 0, t = 0; None: never)."""
    if reach == "start":
        return write_run(root / algorithm / f"seed{seed}", algorithm, seed, round0_accuracy=0.6,
                         accuracies=REACH_AT[2], **kw)
    return write_run(root / algorithm / f"seed{seed}", algorithm, seed, accuracies=REACH_AT[reach], **kw)


def _report(root: Path, out: Path, **kw) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy (or other) warning reaches the terminal
        write_report(root, out, reference="fedavg", targets=(TARGET,), figures=False, **kw)
    return out


def _md_speedups(md: str) -> dict[tuple[str, str, str], str]:
    """{(target text, setting header, algorithm): cell} of every speed-up table in tta.md."""
    cells = {}
    for block in re.split(r"\n(?=\*\*)", md):
        m = re.match(r"\*\*Speed-up to (\S+) over", block)
        if not m:
            continue
        rows = [ln for ln in block.splitlines() if ln.startswith("|")]
        head = [c.strip() for c in rows[0].strip("|").split("|")]
        for row in rows[2:]:
            parts = [c.strip() for c in row.strip("|").split("|")]
            for header, cell in zip(head[1:], parts[1:], strict=True):
                cells[(m.group(1), header, parts[0])] = cell
    return cells


def _num(text: str) -> float:
    return math.inf if text == "∞" else float(text)


def _check_agree(out: Path, reference: str = "fedavg") -> pd.DataFrame:
    """tta.csv, tta.md and tta.tex say the same about every speed-up; returns the CSV."""
    csv = pd.read_csv(out / "tta.csv")
    md = (out / "tta.md").read_text()
    tex = (out / "tta.tex").read_text()
    cells = _md_speedups(md)
    settings = list(dict.fromkeys(csv["setting"]))
    headers = list(dict.fromkeys(h for _, h, _ in cells))
    assert len(headers) == len(settings)
    header_of = dict(zip(settings, headers, strict=True))
    in_csv = {(f"{100 * r.target:.4g}%", header_of[r.setting], r.algorithm) for r in csv.itertuples(index=False)}
    assert in_csv <= set(cells)
    assert all(cells[k] == "–" for k in set(cells) - in_csv)  # no run of that algorithm there
    for r in csv.itertuples(index=False):
        cell = cells[(f"{100 * r.target:.4g}%", header_of[r.setting], r.algorithm)]
        assert latex_escape(cell) in tex, cell
        pairs = int(r.speedup_pairs)
        if pairs == 0:
            assert cell == "– (0 pairs)" and math.isnan(r.speedup), cell
            continue
        if r.algorithm == reference:
            assert cell == "1 (reference)" and r.speedup == 1.0, cell
            continue
        value = re.match(r"(∞|\d+\.\d\d)×?", cell)
        assert value and _num(value.group(1)) == pytest.approx(r.speedup, abs=0.005), (cell, r.speedup)
        words = {"both_at_start": "both at start", "algorithm_at_start": "only the algorithm at start",
                 "reference_at_start": "only the reference at start"}
        if r.speedup_case in words:
            assert f"({words[r.speedup_case]}, {pairs} pair" in cell, cell
            continue
        assert r.speedup_case == "ratio"
        if r.speedup_interval == "bootstrap":
            m = re.search(r"\[(∞|[\d.]+), (∞|[\d.]+)\](†?) \((\d+)\)$", cell)
            assert m, cell
            assert _num(m.group(1)) == pytest.approx(r.speedup_low, abs=0.005)
            assert _num(m.group(2)) == pytest.approx(r.speedup_high, abs=0.005)
            assert int(m.group(4)) == pairs and (m.group(3) == "†") == (r.speedup_boot_edge > 0)
            if r.speedup_boot_edge > 0:
                assert f"{r.algorithm}: {int(r.speedup_boot_edge)}" in md
        elif r.speedup_interval == "seed_range":
            m = re.search(r"\(seed range (∞|[\d.]+)–(∞|[\d.]+), (\d+) pairs; not a CI\)$", cell)
            assert m and int(m.group(3)) == pairs, cell
            assert _num(m.group(1)) == pytest.approx(r.speedup_seed_min, abs=0.005)
            assert _num(m.group(2)) == pytest.approx(r.speedup_seed_max, abs=0.005)
            assert math.isnan(r.speedup_low) and math.isnan(r.speedup_high)
        else:
            assert r.speedup_interval == "none" and cell.endswith("(1 pair, no interval)"), cell
    return csv.set_index("algorithm")


# ----------------------------------------------------------------------------- t = 0


def test_target_met_at_start_by_both_sides_is_a_speedup_of_one(tmp_path):
    for s in range(5):
        _run(tmp_path / "s", "fedavg", s, "start")
        _run(tmp_path / "s", "scala", s, "start")
    got = _check_agree(_report(tmp_path / "s", tmp_path / "out"))
    assert got.loc["scala", "speedup"] == 1.0 and got.loc["scala", "speedup_case"] == "both_at_start"
    assert got.loc["scala", "speedup_pairs"] == 5 and got.loc["fedavg", "speedup_pairs"] == 5
    assert got.loc["fedavg", "speedup"] == 1.0  # the reference too (the issue: "– (0 pairs)")
    assert (got["tta_s_mean"] == 0).all()


@pytest.mark.slow
def test_cli_prints_no_numpy_warning_at_the_edges(tmp_path, capsys):
    """The issue's terminal: `sfl-sim report` over runs at t = 0 printed numpy's "invalid value
    encountered in scalar divide". Warnings are errors here, and stderr stays empty."""
    for s in range(5):
        _run(tmp_path / "s", "fedavg", s, "start" if s < 3 else 4)
        _run(tmp_path / "s", "scala", s, "start" if s < 3 else 2)
        _run(tmp_path / "s", "fedlc", s, "start")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["report", str(tmp_path / "s"), "--reference", "fedavg", "--targets", "0.5",
                     "-o", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == ""
    _check_agree(tmp_path / "out")


@pytest.mark.slow
def test_target_met_at_start_by_one_side_only_is_inf_or_zero(tmp_path):
    for s in range(5):
        _run(tmp_path / "s", "fedavg", s, 4)
        _run(tmp_path / "s", "scala", s, "start")      # only the algorithm: inf
        _run(tmp_path / "s", "fedlc", s, 2, round0=True)  # an ordinary ratio beside them
    got = _check_agree(_report(tmp_path / "s", tmp_path / "out"))
    assert got.loc["scala", "speedup"] == math.inf and got.loc["scala", "speedup_case"] == "algorithm_at_start"
    assert "∞ (only the algorithm at start, 5 pairs)" in (tmp_path / "out" / "tta.md").read_text()
    assert r"$\infty$" in (tmp_path / "out" / "tta.tex").read_text()
    # the reference alone at t = 0: a speed-up of 0
    for s in range(5):
        _run(tmp_path / "r", "fedavg", s, "start")
        _run(tmp_path / "r", "scala", s, 4)
    got = _check_agree(_report(tmp_path / "r", tmp_path / "out_r"))
    assert got.loc["scala", "speedup"] == 0.0 and got.loc["scala", "speedup_case"] == "reference_at_start"


def test_some_seeds_at_start_keep_a_defined_ci_and_count_the_edge_resamples(tmp_path):
    """3 of 5 seeds meet the target at t = 0 on both sides: about (3/5)^5 of the resamples are 0/0;
    they count as 1 (both at start), the CI is defined, the count is in the CSV and the notes."""
    for s in range(5):
        reach = "start" if s in (0, 3, 4) else None
        _run(tmp_path / "s", "fedavg", s, reach if reach else 8)
        _run(tmp_path / "s", "scala", s, reach if reach else 4)
    got = _check_agree(_report(tmp_path / "s", tmp_path / "out"))
    row = got.loc["scala"]
    assert row["speedup_interval"] == "bootstrap" and row["speedup_case"] == "ratio"
    assert math.isfinite(row["speedup_low"]) and math.isfinite(row["speedup_high"])
    assert row["speedup_low"] == 1.0  # the 0/0 resamples are in the interval, as 1
    assert 600 < row["speedup_boot_edge"] < 950  # (3/5)^5 = 7.8 % of 10 000
    assert "†" in (tmp_path / "out" / "tta.md").read_text()


def test_a_seed_at_start_on_the_algorithm_side_gives_an_infinite_per_seed_ratio(tmp_path):
    for s in range(3):
        _run(tmp_path / "s", "fedavg", s, 4)
        _run(tmp_path / "s", "scala", s, "start" if s == 0 else 2)
    got = _check_agree(_report(tmp_path / "s", tmp_path / "out"))
    assert got.loc["scala", "speedup_seed_max"] == math.inf and math.isfinite(got.loc["scala", "speedup"])
    assert "–∞, 3 pairs; not a CI)" in (tmp_path / "out" / "tta.md").read_text()


# ----------------------------------------------------------------------------- number of pairs


@pytest.mark.parametrize("n_pairs, interval", [(1, "none"), (2, "seed_range"), (3, "seed_range"),
                                                (4, "seed_range"), (5, "bootstrap"), (10, "bootstrap")])
def test_interval_by_number_of_pairs(tmp_path, n_pairs, interval):
    for s in range(n_pairs):
        _run(tmp_path / "s", "fedavg", s, (4, 6, 8)[s % 3])
        _run(tmp_path / "s", "scala", s, (2, 4)[s % 2])
    _run(tmp_path / "s", "fedavg", 99, None)  # a seed the reference never reaches: no pair
    _run(tmp_path / "s", "scala", 99, 2)
    got = _check_agree(_report(tmp_path / "s", tmp_path / "out"))
    row = got.loc["scala"]
    assert row["speedup_pairs"] == n_pairs and row["speedup_interval"] == interval
    csv = pd.read_csv(tmp_path / "out" / "tta.csv").set_index("algorithm")
    assert csv.loc["scala", "n_runs"] == n_pairs + 1 and csv.loc["fedavg", "reached"] == n_pairs


def test_reference_never_reaching_is_zero_pairs_everywhere(tmp_path):
    for s in range(5):
        _run(tmp_path / "s", "fedavg", s, None)
        _run(tmp_path / "s", "scala", s, 2)
    got = _check_agree(_report(tmp_path / "s", tmp_path / "out"))
    assert (got["speedup_pairs"] == 0).all() and got["speedup"].isna().all()


# ----------------------------------------------------------------------------- incomplete runs


def test_included_incomplete_runs_are_said_in_readme_and_notes(tmp_path):
    for s in range(3):
        _run(tmp_path / "s", "fedavg", s, 6)
        _run(tmp_path / "s", "scala", s, 2, status="running" if s == 2 else "complete",
             rounds_run=4 if s == 2 else None)
    out = _report(tmp_path / "s", tmp_path / "out", include_incomplete=True)
    got = _check_agree(out)
    assert got.loc["scala", "n_runs"] == 3 and got.loc["scala", "speedup_pairs"] == 3
    readme = (out / "README.md").read_text()
    assert "1 of them did not complete and are included (--include-incomplete" in readme
    assert "## Included although not complete (--include-incomplete)" in readme
    assert re.search(r"scala/seed2` \(status: running, last evaluated round 4 of 10\)", readme)
    for name in ("accuracy.md", "tta.md", "overhead.md"):
        assert "1 run(s) not complete, included (--include-incomplete)" in (out / name).read_text()
    # left out by default, and said so
    out = _report(tmp_path / "s", tmp_path / "out2")
    got = _check_agree(out)
    assert got.loc["scala", "n_runs"] == 2 and got.loc["scala", "speedup_pairs"] == 2
    readme = (out / "README.md").read_text()
    assert "included" not in readme.split("## Definitions")[0] and "## Left out (not complete)" in readme


@pytest.mark.slow
def test_a_left_out_run_of_another_rounds_does_not_rename_the_setting(tmp_path):
    root = tmp_path / "study"
    for s in range(3):
        _run(root, "fedavg", s, 4)
        _run(root, "scala", s, 2)
    # a killed run of a 60-round scenario, 4 rounds in
    write_run(root / "killed" / "scala", "scala", 7, overrides={"rounds": 60}, status="running", rounds_run=4)
    out = root / "report"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_report(root, out, reference="fedavg", targets=(TARGET,))
    _check_agree(out)
    acc = pd.read_csv(out / "accuracy.csv")
    assert set(acc["setting"]) == {"synthetic"} and "rounds" not in acc.columns
    assert (out / "figures" / "synthetic" / "accuracy_vs_time.png").is_file()
    assert not list((out / "figures").glob("rounds*"))
    runs = pd.read_csv(out / "runs.csv")
    assert set(runs["setting"]) == {"synthetic"} and runs["in_report"].sum() == 6
    killed = runs.loc[~runs["in_report"]].iloc[0]
    assert killed["status"] == "running" and killed["rounds_planned"] == 60
    md = (out / "tta.md").read_text()
    assert "rounds=" not in md and "1 run(s) not complete, left out" in md
    # included, it is another setting: then rounds is rightly a setting field
    write_report(root, tmp_path / "inc", reference="fedavg", targets=(TARGET,), figures=False,
                 include_incomplete=True)
    acc = pd.read_csv(tmp_path / "inc" / "accuracy.csv")
    assert set(acc["setting"]) == {"rounds=10", "rounds=60"}
    _check_agree(tmp_path / "inc")


# ----------------------------------------------------------------------------- figures


ENDS = {"scala": [30, 24, 30, 27, 20], "fedavg": [30, 14, 22, 18, 26], "splitfed_v1": [25, 30, 16, 30, 21]}


@pytest.fixture(scope="module")
def study15(tmp_path_factory) -> Path:
    """3 algorithms × 5 seeds of 30 planned rounds; rounds last 1-2x their mean (evaluation times
    differ by seed) and each seed stops after its own number of rounds (end times differ)."""
    root = tmp_path_factory.mktemp("study15")
    for a, ends in ENDS.items():
        for s, end in enumerate(ends):
            write_run(root / a / f"seed{s}", a, s, overrides={"rounds": 30, "eval_every_rounds": 2},
                      duration_jitter=1.0, rounds_run=end)
    return root


def _display_points(artist) -> np.ndarray:
    if isinstance(artist, matplotlib.lines.Line2D):
        return artist.get_transform().transform(np.asarray(artist.get_xydata(), float))
    return np.vstack([artist.get_transform().transform(p.vertices) for p in artist.get_paths()])


@pytest.mark.parametrize("width_in", [6.4, 3.5])
@pytest.mark.parametrize("seed_lines", [False, True])
@pytest.mark.parametrize("kind", list(CURVES))
def test_figure_shows_every_seed_and_the_legend_hides_nothing(study15, kind, seed_lines, width_in):
    st = load_study(study15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = setting_figure(st, st.settings[0], kind, targets=(0.6, 0.7), width_in=width_in,
                             seed_lines=seed_lines, algorithms=("fedavg", "scala", "splitfed_v1"))
        fig.canvas.draw()
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    x_col, x_scale, _ = CURVES[kind]
    lo, hi = ax.get_xlim()
    last = st.metrics.sort_values("round").groupby("run_id").tail(1)
    assert len(last) == 15
    for x, y in zip(last[x_col] / x_scale, last["test_accuracy"], strict=True):
        assert lo <= x <= hi  # every seed's last evaluation is inside the plotted range
        assert ax.get_ylim()[0] <= 100 * y <= ax.get_ylim()[1]
    # the last evaluations are drawn (○), in % like the tables
    drawn = np.vstack([ln.get_xydata() for ln in ax.lines if ln.get_marker() == "o"])
    want = np.column_stack([last[x_col] / x_scale, 100 * last["test_accuracy"]])
    assert sorted(map(tuple, np.round(drawn, 9))) == sorted(map(tuple, np.round(want, 9)))
    assert "%" in ax.get_ylabel()
    # the legend overlaps no curve's points, no band, and not the axes at all
    legend = fig.legends[0].get_window_extent(renderer)
    artists = [*ax.lines, *ax.collections]
    assert artists
    for artist in artists:
        pts = _display_points(artist)
        inside = ((pts[:, 0] >= legend.x0) & (pts[:, 0] <= legend.x1)
                  & (pts[:, 1] >= legend.y0) & (pts[:, 1] <= legend.y1))
        assert not inside.any(), artist
    assert not legend.overlaps(ax.get_window_extent(renderer))
    assert legend.x0 >= 0 and legend.x1 <= fig.bbox.width and legend.y0 >= 0
    # targets: distinct styles, each labelled on the plot
    target_lines = [ln for ln in ax.lines if ln.get_xydata().shape[0] == 2 and ln.get_color() == "0.3"]
    assert len({str(ln.get_linestyle()) for ln in target_lines}) == 2
    assert sorted(t.get_text() for t in ax.texts) == ["60%", "70%"]
    # every text at least 7 pt, at one-column width too
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert min(t.get_fontsize() for t in texts) >= MIN_FONT_PT
    assert fig.get_size_inches()[0] == pytest.approx(width_in)


def test_mean_line_stops_where_a_seed_ends_and_the_rest_run_on_dashed(study15):
    st = load_study(study15)
    fig = setting_figure(st, st.settings[0], algorithms=("fedavg",))
    lines = [ln for ln in fig.axes[0].lines if ln.get_marker() != "o"]
    mean, tails = lines[0], lines[1:]
    assert mean.get_linestyle() == "-" and tails and all(t.get_linestyle() == "--" for t in tails)
    assert all(t.get_linewidth() < mean.get_linewidth() for t in tails)
    fedavg = st.metrics.loc[st.metrics["algorithm"] == "fedavg"]
    ends = sorted(g["sim_time_s"].max() for _, g in fedavg.groupby("run_id"))
    assert max(mean.get_xdata()) == pytest.approx(ends[0])  # the mean ends with the first seed to end
    assert len(tails) == sum(e > ends[0] for e in ends)


@pytest.mark.slow
def test_cli_figure_options_and_their_errors(study15, tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", str(study15), "-o", str(out), "--figure-width", "3.5", "--seed-lines", "--smooth", "3",
                 "--targets", "0.6"]) == 0
    readme = (out / "README.md").read_text()
    assert "every seed is also drawn as a thin line" in readme and "rolling mean over 3 evaluations" in readme
    from PIL import Image
    with Image.open(out / "figures" / "synthetic" / "accuracy_vs_time.png") as im:
        assert im.size[0] == 700  # 3.5 in at 200 dpi
    capsys.readouterr()
    for argv, message in ((["--figure-width", "1"], "figure width must be 3 to 12 in"),
                          (["--smooth", "-2"], "smooth must be a whole number")):
        assert main(["report", str(study15), "-o", str(out), *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
