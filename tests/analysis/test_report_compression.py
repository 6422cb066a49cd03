"""A study over ``compression:``: one column per level in the tables, one figure per algorithm
with one line per compression level (grouped by the rest of the setting)."""
from __future__ import annotations

import pytest

from sfl_sim.analysis.report import compression_levels, write_report
from sfl_sim.analysis.study_data import load_study
from tests.analysis.synthetic_runs import write_run

LEVELS = (None, {"name": "quantize", "bits": 8}, {"name": "topk", "fraction": 0.1})


def _study(root, partitions=("quantity",)):
    for partition in partitions:
        for i, level in enumerate(LEVELS):
            for algo in ("scala", "splitfed_v1"):
                for seed in (0, 1):
                    write_run(root / f"{partition}_{i}" / algo / f"s{seed}", algo, seed, setting_index=i,
                              overrides={"compression.activations": level, "data.partition.name": partition})


def test_levels_are_the_settings_that_differ_in_compression_only(tmp_path):
    _study(tmp_path / "study", partitions=("quantity", "dirichlet"))
    study = load_study(tmp_path / "study")
    groups = compression_levels(study)
    assert sorted(rest for rest, _ in groups) == ["partition=dirichlet", "partition=quantity"]
    for _, levels in groups:
        assert [label for _, label in levels] == ["activations=null", "activations=quantize(bits=8)",
                                                  "activations=topk(fraction=0.1)"]


@pytest.mark.slow
def test_report_has_a_column_per_level_and_a_figure_per_algorithm(tmp_path):
    _study(tmp_path / "study")
    out = tmp_path / "report"
    files = write_report(tmp_path / "study", out, targets=(0.5,))
    names = {p.relative_to(out).as_posix() for p in files}
    for algo in ("scala", "splitfed_v1"):
        assert f"figures/compression_{algo}/accuracy_vs_uplink.png" in names
        assert f"figures/compression_{algo}/accuracy_vs_time.pdf" in names
    header = (out / "accuracy.md").read_text().split("\n")[4]
    assert "activations=quantize(bits=8)" in header and "activations=topk(fraction=0.1)" in header
    assert "compression_scala/accuracy_vs_uplink.png" in (out / "README.md").read_text()


def test_no_compression_field_no_level_figures(tmp_path):
    for seed in (0, 1):
        write_run(tmp_path / "s" / "scala" / f"s{seed}", "scala", seed)
    assert compression_levels(load_study(tmp_path / "s")) == []
