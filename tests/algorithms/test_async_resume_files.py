"""A killed asynchronous run, resumed, leaves every file equal to the uninterrupted run's (issue 50 item 6:
``summary.json`` counted the replayed aggregations twice)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sfl_sim.cli import main
from sfl_sim.config import load_scenario
from sfl_sim.runs import runner
from sfl_sim.runs.rundir.schema import HOST_TIME_COLUMNS
from tests.helpers import read_rows, small_scenario, write_yaml

pytestmark = pytest.mark.slow

#: What differs between a resumed run and a straight one by right: host time (and the resume's record, the
#: output directory: :func:`_files`).
_HOST_TIME_FIELDS = ("host_time_s",)


def _files(run_dir: Path) -> dict[str, object]:
    """Every file of ``run_dir`` as comparable data, host times and the resume record left out."""
    out: dict[str, object] = {}
    for path in sorted(run_dir.iterdir()):
        if path.suffix == ".csv":
            out[path.name] = read_rows(path, host_time=False)
        elif path.name == "summary.json":
            out[path.name] = {k: v for k, v in json.loads(path.read_text()).items() if k not in _HOST_TIME_FIELDS}
        elif path.suffix == ".yaml":
            data = yaml.safe_load(path.read_text())
            data.pop("resumes", None)  # resolved.yaml: which code trained the rounds after a resume
            data.pop("output_dir", None)  # scenario.yaml: the two runs' own directories
            out[path.name] = data
        else:
            out[path.name] = "present"  # checkpoint.pt: its state is what the other files show
    assert set(HOST_TIME_COLUMNS) == {"host_time_s", "round_host_time_s"}
    return out


@pytest.mark.parametrize(("spec", "grid_s"), [({"name": "fedbuff", "concurrency": 3, "buffer_size": 2}, None),
                                              ({"name": "fedasync", "concurrency": 3}, None),
                                              ({"name": "fedasync", "concurrency": 3}, 0.001)],
                         ids=["fedbuff", "fedasync", "fedasync-grid"])
def test_a_killed_and_resumed_asynchronous_run_writes_the_straight_runs_files(tmp_path, capsys, spec, grid_s):
    data = small_scenario(rounds=5, eval_every_rounds=2, algorithms=[spec])
    if grid_s is not None:
        data["eval_every_sim_s"] = grid_s
    path = write_yaml(tmp_path, data)
    assert main(["scenario", str(path), "-o", str(tmp_path / "straight"), "--no-progress"]) == 0

    cfg = load_scenario(path, extra={"output_dir": str(tmp_path / "cut")})

    def kill(rnd: int, info: dict) -> None:
        if rnd == 3:  # after aggregation 3's rows, with the checkpoint at 2 (or at the grid time before it)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.run_one(runner.build_run(cfg, cfg.algorithms[0]), tmp_path / "cut" / spec["name"],
                       progress=False, on_round=kill)
    capsys.readouterr()
    assert main(["scenario", str(path), "-o", str(tmp_path / "cut"), "--resume", "--no-progress"]) == 0, \
        capsys.readouterr().err
    straight = _files(tmp_path / "straight" / spec["name"])
    resumed = _files(tmp_path / "cut" / spec["name"])
    assert resumed.keys() == straight.keys()
    for name in straight:
        assert resumed[name] == straight[name], name
