"""Asynchronous runs end to end: the run directory's rows, the FedBuff = FedAvg anchor through the
runner, the evaluation grid, and a resumed run equal to the straight one."""
from __future__ import annotations

import pytest

from tests.helpers import finished_run, read_rows, run_cli, small_scenario, write_yaml

pytestmark = pytest.mark.slow

ANCHOR = {"name": "fedbuff", "buffer_size": 3, "staleness_scaling": "none", "refill": "on_use"}


def test_fedbuff_with_k_equal_to_the_cohort_reproduces_fedavgs_rows(tmp_path, capsys):
    _, out = finished_run(tmp_path, capsys, small_scenario(rounds=3, algorithms=["fedavg", ANCHOR]))
    sync = read_rows(out / "fedavg" / "metrics.csv", host_time=False)
    buff = read_rows(out / "fedbuff" / "metrics.csv", host_time=False)
    assert buff == sync  # accuracy, loss, clock, bytes and FLOPs, to the last digit
    rounds = read_rows(out / "fedbuff" / "rounds.csv", host_time=False)
    assert [r["cohort"] for r in rounds] == [r["cohort"] for r in read_rows(out / "fedavg" / "rounds.csv")]
    staleness = read_rows(out / "fedbuff" / "staleness.csv")
    assert len(staleness) == 9 and {r["staleness"] for r in staleness} == {"0"}
    assert not (out / "fedavg" / "staleness.csv").exists()
    # clients.csv: the same clients per round, the same radio and the same own time (a group's spans end
    # at each client's arrival, a synchronous round's at the round's end: the waits differ)
    same = ("round", "client", "outcome", "sinr_db", "cqi", "uplink_rate_bps", "downlink_rate_bps", "compute_s",
            "uplink_air_s")
    per = {name: sorted(tuple(r[c] for c in same) for r in read_rows(out / name / "clients.csv"))
           for name in ("fedavg", "fedbuff")}
    assert len(per["fedbuff"]) == 9 and per["fedbuff"] == per["fedavg"]


def test_fedasync_rows_and_the_evaluation_grid(tmp_path, capsys):
    data = small_scenario(rounds=6, algorithms=[{"name": "fedasync", "concurrency": 3}])
    data["eval_every_sim_s"] = 0.05
    _, out = finished_run(tmp_path, capsys, data)
    metrics = read_rows(out / "fedasync" / "metrics.csv")
    rounds = read_rows(out / "fedasync" / "rounds.csv")
    assert [int(r["round"]) for r in rounds] == [1, 2, 3, 4, 5, 6]
    times = [float(r["sim_time_s"]) for r in metrics]
    grid = [t for t in times[1:-1]]
    assert all(abs(t / 0.05 - round(t / 0.05)) < 1e-9 for t in grid) and grid == sorted(grid)
    assert float(metrics[-1]["sim_time_s"]) == float(rounds[-1]["sim_time_s"])  # the last aggregation
    staleness = read_rows(out / "fedasync" / "staleness.csv")
    assert [int(r["round"]) for r in staleness] == [1, 2, 3, 4, 5, 6]  # K = 1: one update each
    assert all(int(r["staleness"]) == int(r["round"]) - 1 - int(r["start_version"]) for r in staleness)
    assert any(int(r["staleness"]) > 0 for r in staleness)


@pytest.mark.parametrize("grid", [None, 0.05])
def test_a_resumed_asynchronous_run_equals_the_straight_one(tmp_path, capsys, grid):
    spec = {"name": "fedbuff", "concurrency": 3, "buffer_size": 2}
    straight = small_scenario(rounds=5, eval_every_rounds=2, algorithms=[spec])
    if grid is not None:
        straight["eval_every_sim_s"] = grid
    (tmp_path / "a").mkdir()
    _, out_straight = finished_run(tmp_path / "a", capsys, straight)
    (tmp_path / "b").mkdir()
    first = dict(straight, rounds=3)
    path = write_yaml(tmp_path / "b", first)
    out = tmp_path / "b" / "out"
    assert run_cli(capsys, str(path), "-o", str(out))[0] == 0
    path = write_yaml(tmp_path / "b", straight)
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume")
    assert code == 0, err
    for name in ("rounds.csv", "staleness.csv", "clients.csv"):
        assert read_rows(out / "fedbuff" / name, host_time=False) == \
            read_rows(out_straight / "fedbuff" / name, host_time=False), name
    for name in ("metrics.csv", "classes.csv"):  # one row more: the shorter run evaluated its last round, 3
        resumed = read_rows(out / "fedbuff" / name, host_time=False)
        want = read_rows(out_straight / "fedbuff" / name, host_time=False)
        extra = [r for r in resumed if r not in want]
        assert [r["round"] for r in extra] == ["3"], name
        assert [r for r in resumed if r not in extra] == want, name


def test_async_sfl_runs_through_the_runner(tmp_path, capsys):
    spec = {"name": "async_sfl", "concurrency": 3, "buffer_size": 2, "activation_buffer": 2}
    _, out = finished_run(tmp_path, capsys, small_scenario(rounds=3, algorithms=[spec]))
    rounds = read_rows(out / "async_sfl" / "rounds.csv")
    assert [len(r["cohort"].split()) for r in rounds] == [2, 2, 2]
    assert len(read_rows(out / "async_sfl" / "staleness.csv")) == 6
    assert float(read_rows(out / "async_sfl" / "metrics.csv")[-1]["test_accuracy"]) >= 0.0


def test_the_staleness_file_is_read_through_the_schema(tmp_path):
    from sfl_sim.analysis.readers import RunFormatError, read_staleness
    good = tmp_path / "staleness.csv"
    good.write_text("round,client,dispatch,start_version,staleness,dispatched_s,arrived_s\n2,7,3,0,1,0.5,1.25\n")
    assert read_staleness(good)["staleness"].tolist() == [1]
    bad = tmp_path / "bad.csv"
    bad.write_text("round,client\n1,2\n")
    with pytest.raises(RunFormatError, match="expected round,client,dispatch"):
        read_staleness(bad)


@pytest.mark.parametrize(("algorithm", "extra", "message"), [
    ({"name": "fedavg"}, {"eval_every_sim_s": 5.0}, "eval_every_sim_s: got 5.0; allowed: null with the synchronous"),
    ({"name": "fedbuff", "buffer_size": 4}, {},
     "algorithms[0].buffer_size: got 4; allowed: at most the concurrency (3"),
    # intervals below the 1 ms subframe (issue 50 item 12: 1e-300 s never ended)
    ({"name": "fedbuff", "buffer_size": 2, "period_s": 1e-300}, {},
     "algorithms[0].period_s: got 1e-300; allowed: null or a finite number >= 0.001"),
    ({"name": "fedbuff", "buffer_size": 2}, {"eval_every_sim_s": 1e-300}, "eval_every_sim_s: got 1e-300; allowed"),
    ({"name": "fedbuff", "buffer_size": 2}, {"eval_every_sim_s": 0.0009}, "eval_every_sim_s: got 0.0009; allowed"),
    ({"name": "fedasync"}, {"stragglers": {"policy": "deadline", "deadline_s": 1.0}},
     "stragglers.policy: got 'deadline'; allowed: wait_all with the asynchronous"),
])
def test_bad_asynchronous_settings_stop_the_check_in_one_line(tmp_path, capsys, algorithm, extra, message):
    data = {**small_scenario(algorithms=[algorithm]), **extra}
    code, err = run_cli(capsys, str(write_yaml(tmp_path, data)), "-o", str(tmp_path / "out"), "--check")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_the_asynchronous_runner_charges_the_rrc_tail_at_the_runs_end_as_the_synchronous_one(tmp_path, capsys):
    """FedBuff with K = the cohort and refill on use runs FedAvg's rounds; with the RRC tail on, each
    client's energy over the run is FedAvg's: the tails still running at the last aggregation are
    charged up to the run's end (the asynchronous runner charged none).  Rows differ by design (a
    dispatch group charges each client up to its arrival, so the tail after it moves to a later row),
    the per-client sums do not."""
    data = small_scenario(rounds=3, algorithms=["fedavg", ANCHOR])
    data["energy"] = {"device": {"name": "dvfs", "rrc_tail": True}}
    _, out = finished_run(tmp_path, capsys, data)

    def per_client_j(name):
        totals: dict[str, float] = {}
        for r in read_rows(out / name / "energy.csv"):
            totals[r["client"]] = totals.get(r["client"], 0.0) + float(r["total_j"])
        return totals

    sync, buff = per_client_j("fedavg"), per_client_j("fedbuff")
    assert sync.keys() == buff.keys() and len(sync) == 6
    assert all(buff[k] == pytest.approx(sync[k], rel=1e-12) for k in sync)
    tails = [r for r in read_rows(out / "fedbuff" / "energy.csv") if r["round"] == "3" and float(r["compute_j"]) == 0]
    assert tails  # the run-end rows, with only idle_j
