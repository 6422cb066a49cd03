"""The headline study (studies/paper_headline.yaml) plans and validates; its table's statistics."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import sfl_sim

ROOT = Path(__file__).resolve().parents[2]


def _headline():
    spec = importlib.util.spec_from_file_location("headline", ROOT / "bench" / "headline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_headline_study_plans_twelve_paper_scale_runs(tmp_path) -> None:
    plan = sfl_sim.plan_study(ROOT / "studies" / "paper_headline.yaml", output_dir=tmp_path / "out")
    assert sorted((r.coordinates["algorithm"], r.coordinates["seed"]) for r in plan.runs) == sorted(
        (a, s) for a in ("scala", "feddyn", "fedavg", "fedprox") for s in (0, 1, 2))
    assert not any(r.done for r in plan.runs)
    assert "cellular_100clients_paper" in str(plan.base)


def test_summarise_gives_final_best_and_the_mean_of_the_last_ten() -> None:
    headline = _headline()
    evals = [(5 * i, a) for i, a in enumerate([0.1, 0.9, 0.5] + [0.6] * 9 + [0.7], start=1)]
    s = headline.summarise(evals)
    assert s["final"] == 0.7 and s["best"] == 0.9 and s["round"] == 65
    assert s["last_mean"] == pytest.approx((0.6 * 9 + 0.7) / 10)
    with pytest.raises(ValueError, match="evals: got none"):
        headline.summarise([])
