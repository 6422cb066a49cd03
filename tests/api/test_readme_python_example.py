"""The "From Python" example of the documentation (``docs/guides/python.md``) runs as written.

The code block is executed verbatim in a fresh directory that holds a ``cellular_100clients.yaml``
of its own: a file on disk wins over the shipped scenario of that name (as the guide says), so
the example's scenario is the shipped one cut to a Fashion-MNIST slice and a narrow model, and
its rounds (set by the example itself) take seconds.
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import yaml

from sfl_sim.config.scenario_files import shipped_scenarios
from tests.helpers import doc_blocks

PAGE = "guides/python.md"

SMALL = {"eval_samples": 200,
         "training": {"batch_size": 32, "local_iterations": 1, "torch_threads": 1},
         "model": {"params": {"conv_channels": [4] * 5, "fc_features": [8, 8]}},
         "clients": {"count": 10, "participation": 0.3}}


def _shrink(node: dict, small: dict) -> None:
    for key, value in small.items():
        if isinstance(value, dict):
            _shrink(node.setdefault(key, {}), value)
        else:
            node[key] = value


@pytest.mark.slow
def test_readme_python_example_runs_two_algorithms_and_plots_accuracy_vs_time(tmp_path: Path, monkeypatch) -> None:
    (code,) = doc_blocks(PAGE, "python")
    scenario = yaml.safe_load(shipped_scenarios()["cellular_100clients"].read_text())
    _shrink(scenario, SMALL)
    scenario["data"]["dataset"].update(max_train_samples=1000, max_test_samples=300)
    (tmp_path / "cellular_100clients.yaml").write_text(yaml.safe_dump(scenario))
    monkeypatch.chdir(tmp_path)

    namespace: dict = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, PAGE, "exec"), namespace)

    results = namespace["results"]
    assert [r.label for r in results] == ["scala", "fedavg"]
    for r in results:
        assert r.status == "complete"
        assert r.metrics["round"].tolist() == [0, 2, 4, 6]  # the example's rounds and cadence
        assert r.path == Path("runs/from_python") / r.label and (tmp_path / r.path / "metrics.csv").is_file()
        assert f"{r.label} complete {r.summary['final_test_accuracy']}" in out.getvalue()
    png = tmp_path / "runs" / "from_python" / "accuracy_vs_time.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "runs" / "from_python" / "summary.csv").is_file()  # the CLI's files
