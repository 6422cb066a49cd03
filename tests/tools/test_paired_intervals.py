"""tools/paired_intervals.py: Student-t intervals of a small study, against hand calculations."""
import importlib.util
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

from sfl_sim.analysis import load_study
from tests.analysis.synthetic_runs import write_run

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("paired_intervals", ROOT / "tools" / "paired_intervals.py")
assert _spec is not None and _spec.loader is not None
tool = importlib.util.module_from_spec(_spec)
sys.modules["paired_intervals"] = tool  # dataclasses look the module up by name
_spec.loader.exec_module(tool)

#: t(0.975, 2) from the closed form of Student's t with 2 degrees of freedom, whose CDF is
#: F(t) = 1/2 + t / (2 sqrt(2 + t^2)): F = 0.975 gives t / sqrt(2 + t^2) = 0.95, t = 4.3027.
T_975_DF2 = math.sqrt(2 * 0.95**2 / (1 - 0.95**2))


def test_mean_interval_is_the_student_t_interval() -> None:
    got = tool.mean_interval([1.0, 2.0, 3.0])  # mean 2, s = 1, n = 3
    half = T_975_DF2 * 1.0 / math.sqrt(3)
    assert got.estimate == 2.0 and got.n == 3
    assert got.low == pytest.approx(2.0 - half, abs=1e-3) and got.high == pytest.approx(2.0 + half, abs=1e-3)
    assert tool.mean_interval([5.0, math.nan]).n == 1 and math.isnan(tool.mean_interval([5.0]).low)
    assert tool.mean_interval([]).text() == "–"


def test_ratio_interval_is_the_log_t_interval_taken_back() -> None:
    got = tool.ratio_interval([2.0, 2.0, 2.0])
    assert (got.estimate, got.low, got.high, got.n) == pytest.approx((2.0, 2.0, 2.0, 3))
    got = tool.ratio_interval([1.0, math.e, math.e ** 2])  # logs 0, 1, 2: mean 1, s = 1
    half = T_975_DF2 / math.sqrt(3)
    assert got.estimate == pytest.approx(math.e)
    assert math.log(got.low) == pytest.approx(1 - half, abs=1e-3)
    assert math.log(got.high) == pytest.approx(1 + half, abs=1e-3)
    assert tool.ratio_interval([0.0, -1.0, math.inf]).n == 0  # no positive finite ratio


def _study(tmp_path: Path) -> Path:
    for q in (0.1, 0.5):
        for a in ("fedavg", "scala"):
            for s in range(3):
                write_run(tmp_path / "study" / f"q{q}" / a / f"seed{s}", a, s,
                          overrides={"clients.participation": q}, setting_index=int(q > 0.2))
    return tmp_path / "study"


@pytest.mark.slow
def test_the_study_numbers_equal_a_hand_calculation(tmp_path) -> None:
    root = _study(tmp_path)
    times = tool.times_to_target(load_study(root), 0.5)
    # by hand: each run's first metrics row at or above the target
    for row in times.itertuples():
        q = "0.1" if "0.1" in row.setting else "0.5"
        m = pd.read_csv(root / f"q{q}" / row.algorithm / f"seed{row.seed}" / "metrics.csv")
        hit = m[m["test_accuracy"] >= 0.5]
        assert row.tta_s == (hit["sim_time_s"].iloc[0] if len(hit) else pytest.approx(math.nan, nan_ok=True))
    settings = list(dict.fromkeys(times["setting"]))
    ref, other = settings[0], settings[1]
    t = times.set_index(["setting", "algorithm", "seed"])["tta_s"]
    lines = tool.report(times, ref, "fedavg")
    effect = tool.ratio_interval([t[ref, "scala", s] / t[other, "scala", s] for s in range(3)])
    assert any(line.startswith("    scala: ") and f"{other} {effect.text(suffix='x')}" in line for line in lines)
    change = tool.ratio_interval([(t[other, "fedavg", s] / t[other, "scala", s])
                                  / (t[ref, "fedavg", s] / t[ref, "scala", s]) for s in range(3)])
    assert f"    scala change: {other} {change.text(suffix='x')}" in lines
    with pytest.raises(SystemExit, match=r"--reference-setting: 'nope' is not a setting of the study; allowed: "):
        tool.report(times, "nope")
    with pytest.raises(SystemExit, match=r"--reference-algorithm: 'fedprox' is not an algorithm"):
        tool.report(times, ref, "fedprox")
