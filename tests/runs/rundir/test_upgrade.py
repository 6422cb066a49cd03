"""Run directories made by older code are read in today's shape, in one place (sfl_sim.runs.rundir.upgrade).

Per artefact: scenario.yaml, resolved.yaml, the per-round logs and checkpoint.pt (counters, random
streams, the cell's state, the energy ledger's); and end to end, a run directory of the old layout
resumes and continues exactly as a straight run.
"""
from __future__ import annotations

import copy
import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from sfl_sim.config import validate
from sfl_sim.runs.resolved import resolve_run
from sfl_sim.runs.rundir import upgrade
from sfl_sim.runs.rundir.schema import CLIENTS_COLUMNS, HOST_TIME_COLUMNS, ROUNDS_COLUMNS
from tests.channel.helpers import small_cell
from tests.helpers import finished_run, read_rows, run_cli, small_scenario, write_yaml

SMALL = small_scenario(algorithms=["fedavg"])
#: The rounds.csv columns added after runs were already being made.
LATER_ROUND_COLUMNS = ("round_host_time_s", "uplink_attempts", "harq_retransmissions", "online_clients",
                       "unavailable_clients", "availability_wait_s", "client_energy_j", "uplink_rb_load",
                       "backhaul_energy_j")


# -- scenario.yaml ---------------------------------------------------------------------------------
def test_sections_added_later_come_from_the_scenario_models_and_the_components() -> None:
    """Their defaults are what the default scenario writes, the default components' parameters
    stated as their classes declare them (what resolved.yaml records): no second copy."""
    cfg = validate({})
    written = cfg.to_yaml_dict()
    later = upgrade.sections_added_later()
    assert later["cell"] == {k: written["cell"][k] for k in ("power_control", "interference", "harq")}
    device = resolve_run(cfg, cfg.algorithms[0].label).record["components"]["energy.device"]
    assert later["energy"] == {**written["energy"], "device": {"name": device["name"], **device["params"]}}
    assert {f.split(".")[0] for f in upgrade.SECTIONS_ADDED_LATER} == set(later)


def test_a_scenario_reads_the_fields_it_lacks_at_their_defaults() -> None:
    today = validate(SMALL).to_yaml_dict()
    today["algorithm"] = today.pop("algorithms")[0]  # a run records its one algorithm under algorithm
    old = copy.deepcopy(today)
    for key in ("power_control", "interference", "harq"):
        del old["cell"][key]
    del old["energy"], old["metrics"]
    old["data"]["partition"] = {"name": "dirichlet", "beta": 0.5}  # named otherwise: keeps its own parameters
    read = upgrade.scenario(old)
    assert read["cell"]["power_control"] == {"name": "fixed"} and read["cell"]["harq"] is None
    assert read["energy"] == upgrade.default_scenario()["energy"] and read["metrics"] == today["metrics"]
    assert read["data"]["partition"] == {"name": "dirichlet", "beta": 0.5}
    assert "algorithms" not in read and "algorithms" not in upgrade.scenario({})
    # made before energy accounting: the scenario that continues it says how it is charged
    battery = {**today["energy"], "battery": {"capacity_min_j": 1.0, "capacity_max_j": 2.0}}
    assert upgrade.scenario(old, continued_by={**today, "energy": battery})["energy"] == battery
    # a scenario that has energy keeps its own
    assert upgrade.scenario(today, continued_by={**today, "energy": battery})["energy"] == today["energy"]


def test_the_outage_policys_old_names_read_as_what_they_did() -> None:
    """``on_outage: retransmit, max_attempts: 1`` (every run's record before the names said what
    happens) dropped at the first outage; ``drop`` with more attempts never used them."""
    today = validate(SMALL).to_yaml_dict()
    assert today["cell"]["outage"]["on_outage"] == "drop" and today["cell"]["outage"]["max_attempts"] == 1
    cases = ((("retransmit", 1), ("drop", 1)), (("drop", 4), ("drop", 1)), (("retransmit", 3), ("retransmit", 3)))
    for old, now in cases:
        made = copy.deepcopy(today)
        made["cell"]["outage"].update(on_outage=old[0], max_attempts=old[1])
        outage = upgrade.scenario(made)["cell"]["outage"]
        assert (outage["on_outage"], outage["max_attempts"]) == now


# -- resolved.yaml ---------------------------------------------------------------------------------
def test_a_record_is_read_in_todays_shape() -> None:
    today = resolve_run(validate(SMALL), "fedavg").record
    assert upgrade.resolved(None).value is None
    (note,) = upgrade.resolved(None).notes
    assert "has no resolved.yaml" in note and "cannot be checked" in note
    old = copy.deepcopy(today)
    del old["components"]["cell.rate"]["params"]["noise_figure_db"]  # added to the code after the run
    del old["training"]["max_grad_norm"]
    read = upgrade.resolved(old, today).value
    assert read["compression"] == {}  # made before compression existed: it applied none
    assert read["components"]["cell.rate"]["params"] == today["components"]["cell.rate"]["params"]
    assert read["training"] == today["training"] and read["energy"] == today["energy"]
    renamed = copy.deepcopy(old)
    renamed["components"]["cell.rate"]["name"] = "mcs_table"  # another component: nothing filled in
    assert "noise_figure_db" not in upgrade.resolved(renamed, today).value["components"]["cell.rate"]["params"]
    assert upgrade.resolved(old).value["components"] == old["components"]  # no today: nothing to fill from


# -- the per-round logs ----------------------------------------------------------------------------
def test_a_log_is_read_in_todays_columns_by_its_own_header() -> None:
    old_header = [c for c in ROUNDS_COLUMNS if c not in LATER_ROUND_COLUMNS]
    rows = [[str(i) if c != "cohort" else "1 2" for i, c in enumerate(old_header)], []]
    (row,) = upgrade.log_rows(old_header, rows, ROUNDS_COLUMNS)
    cells = dict(zip(ROUNDS_COLUMNS, row, strict=True))
    assert all(cells[c] == "" for c in LATER_ROUND_COLUMNS) and cells["cohort"] == "1 2"
    assert cells["uplink_bytes"] == str(old_header.index("uplink_bytes"))
    text = ",".join(old_header) + "\r\n" + ",".join(rows[0]) + "\r\n"
    read = list(csv.reader(upgrade.log_text(text, ROUNDS_COLUMNS).split("\n")[:-1]))
    assert read == [list(ROUNDS_COLUMNS), row]
    today = ",".join(ROUNDS_COLUMNS) + "\n1,2\n"
    assert upgrade.log_text(today, ROUNDS_COLUMNS) is today


def test_an_older_clients_log_reads_the_grant_columns_empty() -> None:
    grants = ("uplink_granted_rb_mean", "uplink_rb_s", "uplink_transport_blocks", "uplink_scheduled_rate_bps",
              "uplink_sinr_used_db")
    old_header = [c for c in CLIENTS_COLUMNS if c not in grants]
    text = ",".join(old_header) + "\n" + ",".join(str(i) for i in range(len(old_header))) + "\n"
    header, row = list(csv.reader(upgrade.log_text(text, CLIENTS_COLUMNS).split("\n")[:-1]))
    cells = dict(zip(header, row, strict=True))
    assert tuple(header) == CLIENTS_COLUMNS and all(cells[c] == "" for c in grants)
    assert cells["uplink_rate_bps"] == str(old_header.index("uplink_rate_bps"))


def test_an_older_clients_log_reads_the_channel_in_time_columns_empty() -> None:
    later = ("speed_m_per_s", "doppler_hz", "fading_gain_uploads_db")
    old_header = [c for c in CLIENTS_COLUMNS if c not in later]
    text = ",".join(old_header) + "\n" + ",".join(str(i) for i in range(len(old_header))) + "\n"
    header, row = list(csv.reader(upgrade.log_text(text, CLIENTS_COLUMNS).split("\n")[:-1]))
    cells = dict(zip(header, row, strict=True))
    assert tuple(header) == CLIENTS_COLUMNS and all(cells[c] == "" for c in later)
    assert cells["fading_gain_db"] == str(old_header.index("fading_gain_db"))


# -- checkpoint.pt ---------------------------------------------------------------------------------
DEFAULT_CELL = {"cell": {"power_control": {"name": "fixed"}, "interference": {"name": "none"}}}


def _version_1(state: dict) -> dict:
    """A cell state as a cell before uplink power control and interference saved it."""
    old = {k: v for k, v in state.items() if k not in ("interference_rng", "noise_rise")}
    old["version"] = 1
    old["component_types"] = {k: v for k, v in state["component_types"].items()
                              if k not in ("power_control", "interference")}
    return old


def test_a_version_1_cell_state_loads_into_a_default_cell_only() -> None:
    from sfl_sim.channel import NoiseRise

    a = small_cell()
    old = _version_1(a.state_dict())
    b = small_cell()
    b.load_state_dict(upgrade.cell_state(old, b.state_dict(), DEFAULT_CELL))
    assert b.noise_rise_linear == 1.0 and b.positions_m.tolist() == a.positions_m.tolist()
    a.move(1.0, np.random.default_rng(0))
    b.move(1.0, np.random.default_rng(0))
    assert b.positions_m.tolist() == a.positions_m.tolist()
    noisy = small_cell(interference=NoiseRise(3.0))
    other = {"cell": {**DEFAULT_CELL["cell"], "interference": {"name": "noise_rise", "noise_rise_db": 3.0}}}
    assert upgrade.cell_state(old, noisy.state_dict(), other) is old  # left to the cell, which refuses it
    with pytest.raises(ValueError, match="version must be 2, got 1"):
        noisy.load_state_dict(upgrade.cell_state(old, noisy.state_dict(), other))
    state = a.state_dict()
    assert upgrade.cell_state(state, b.state_dict(), DEFAULT_CELL) is state  # today's: as it is


def test_a_checkpoint_lacking_state_added_later_takes_the_run_as_built() -> None:
    fresh_cell = small_cell().state_dict()
    fresh = {"counters": {"uplink_bytes": 0, "retransmissions": 0}, "cell": fresh_cell,
             "rng": {"selection": "fresh", "harq": "harq as built", "torch_cuda": "fresh"},
             "energy": {"spent_j": [0.0], "remaining_j": [5.0]}}
    saved = {"round": 2, "counters": {"uplink_bytes": 10}, "cell": _version_1(small_cell().state_dict()),
             "rng": {"selection": "saved"}}
    read = upgrade.checkpoint(saved, fresh, DEFAULT_CELL)
    assert read["energy"] == fresh["energy"]  # a ledger that starts from zero
    assert read["rng"] == {"selection": "saved", "harq": "harq as built"}  # only the streams added later
    assert read["counters"] == {"uplink_bytes": 10, "retransmissions": 0}
    assert read["cell"]["version"] == 2 and read["cell"]["noise_rise"] == fresh_cell["noise_rise"]
    older_ledger = upgrade.checkpoint({**saved, "energy": {"spent_j": [3.0]}}, fresh, DEFAULT_CELL)
    assert older_ledger["energy"] == {"spent_j": [3.0], "remaining_j": [5.0]}  # before batteries
    no_ledger = upgrade.checkpoint({**saved, "energy": {}}, fresh, DEFAULT_CELL)
    assert no_ledger["energy"] == {}


def test_a_component_saved_under_the_module_it_lived_in_then_reads_as_todays() -> None:
    fresh = small_cell().state_dict()
    today = fresh["component_types"]["pathloss"]
    moved = copy.deepcopy(fresh)
    moved["component_types"]["pathloss"] = "sfl_sim.channel.old_place." + today.rpartition(".")[2]
    assert upgrade.cell_state(moved, fresh, DEFAULT_CELL)["component_types"] == fresh["component_types"]
    other = copy.deepcopy(fresh)
    other["component_types"]["pathloss"] = "my.Other"  # another class: left for the cell to refuse
    assert upgrade.cell_state(other, fresh, DEFAULT_CELL)["component_types"]["pathloss"] == "my.Other"
    cell = small_cell()
    with pytest.raises(ValueError, match="other components"):
        cell.load_state_dict(moved)  # the cell itself compares exactly; the upgrade renames
    cell.load_state_dict(upgrade.cell_state(moved, fresh, DEFAULT_CELL))


def test_an_algorithm_state_without_client_streams_continues_at_the_checkpoints_round() -> None:
    """Made before each client's work drew from its own stream: the next round must draw from its
    own round's streams (rounds_run = the checkpoint's round), not again from round 0's."""
    fresh = {"counters": {}, "cell": small_cell().state_dict(), "rng": {}, "energy": {},
             "algorithm": {"model": "built", "client_work": {"rounds_run": 0, "streams": {}}}}
    saved = {"round": 3, "counters": {}, "cell": small_cell().state_dict(), "rng": {}, "energy": {},
             "algorithm": {"model": "saved"}}
    read = upgrade.checkpoint(saved, fresh, DEFAULT_CELL)
    assert read["algorithm"] == {"model": "saved", "client_work": {"rounds_run": 3, "streams": {}}}
    today = {**saved, "algorithm": {"model": "saved", "client_work": {"rounds_run": 3, "streams": {"k": 1}}}}
    assert upgrade.checkpoint(today, fresh, DEFAULT_CELL)["algorithm"] == today["algorithm"]
    no_streams = {**fresh, "algorithm": {"model": "built"}}  # an algorithm that keeps none: nothing added
    assert upgrade.checkpoint(saved, no_streams, DEFAULT_CELL)["algorithm"] == {"model": "saved"}


@pytest.mark.parametrize("kind, name, text, record, mine", [
    ("run", "metrics.csv", '{"schema_version": 3, "status": "complete"}', None, True),
    ("run", "metrics.csv", '{"schema_version": "3", "status": "complete"}', None, False),
    ("run", "metrics.csv", '{"a": 1}', None, False),
    ("scenario", "summary.csv", "label,algorithm,seed,status,evaluated\n", None, True),
    ("scenario", "summary.csv", "my,own,table\n", None, False),
    ("scenario", "summary.md", "# Runs\n\n|", None, True),
    ("scenario", "summary.md", "# My notes\n", None, False),
    ("study", "runs.csv", "name,status,seed\n", None, True),
    ("study", "runs.csv", "run,state\n", None, False),
    ("study", "study.yaml", "base: /x.yaml\n", "base: /x.yaml\n", True),
    ("study", "study.yaml", "base: x.yaml  # mine\n", "base: /x.yaml\n", False),
    ("report", "runs.csv", "# sfl-sim report\n", None, True),
    ("report", "runs.csv", "# My report\n", None, False),
])
def test_what_an_sfl_sim_older_than_the_marker_wrote_is_recognised(tmp_path, kind, name, text, record, mine) -> None:
    """Each kind's own file, by what it holds (a run by its summary.json, a report by its README);
    a user's file of the same name is not sfl-sim's."""
    (tmp_path / name).write_text("whatever")
    holder = {"run": "summary.json", "report": "README.md"}.get(kind, name)
    (tmp_path / holder).write_text(text)
    assert upgrade.made_before_marker(kind, tmp_path / name, record) is mine


def test_the_upgrade_imports_neither_torch_nor_the_engine() -> None:
    code = ("import sys; from sfl_sim.runs.rundir import upgrade; upgrade.sections_added_later(); "
            "upgrade.scenario({}); bad = [m for m in sys.modules if m in ('torch', 'simpy') "
            "or m.startswith(('sfl_sim.engine', 'sfl_sim.algorithms'))]; assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_made_before_is_said_in_one_module() -> None:
    """Which older shapes exist and how they are read is known in one place."""
    root = Path(upgrade.__file__).resolve().parents[3]
    assert (root / "sfl_sim").is_dir()
    said = sorted({p.relative_to(root).as_posix() for p in (root / "sfl_sim").rglob("*.py")
                   if "made before" in p.read_text()})
    assert said == ["sfl_sim/runs/rundir/upgrade.py"], said


# -- end to end ------------------------------------------------------------------------------------
def _make_old(run_dir: Path) -> None:
    """Strip from a run directory what a run made before power control, interference, HARQ,
    compression, energy accounting and per-class accuracy lacked."""
    scenario = yaml.safe_load((run_dir / "scenario.yaml").read_text())
    for key in ("power_control", "interference", "harq"):
        del scenario["cell"][key]
    del scenario["energy"], scenario["metrics"]
    scenario["cell"]["outage"].update(on_outage="retransmit", max_attempts=1)  # the outage policy's old name
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    record = yaml.safe_load((run_dir / "resolved.yaml").read_text())
    del record["energy"], record["compression"], record["components"]["energy.device"]
    del record["components"]["cell.rate"]["params"]["noise_figure_db"]
    (run_dir / "resolved.yaml").write_text(yaml.safe_dump(record, sort_keys=False))
    with (run_dir / "rounds.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    old_columns = [c for c in ROUNDS_COLUMNS if c not in LATER_ROUND_COLUMNS]
    with (run_dir / "rounds.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(old_columns)
        writer.writerows([r[c] for c in old_columns] for r in rows)
    (run_dir / "classes.csv").unlink()
    (run_dir / "energy.csv").unlink()
    state = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    del state["energy"], state["rng"]["harq"]
    state["counters"] = {k: v for k, v in state["counters"].items()
                         if k not in ("retransmissions", "dropped_transmissions", "dropped_clients")}
    cell = state["cell"]
    state["cell"] = {**{k: v for k, v in cell.items() if k not in ("interference_rng", "noise_rise")}, "version": 1,
                     "component_types": {k: v for k, v in cell["component_types"].items()
                                         if k not in ("power_control", "interference")}}
    torch.save(state, run_dir / "checkpoint.pt")


@pytest.mark.slow
def test_a_run_directory_of_the_old_layout_resumes_as_a_straight_run(tmp_path, capsys) -> None:
    path, out = finished_run(tmp_path, capsys, SMALL)
    run_dir = out / "fedavg"
    _make_old(run_dir)
    code, err = run_cli(capsys, str(path), "-o", str(out), "--resume", "--rounds", "4")
    assert code == 0, err
    warning = [line for line in err.splitlines() if "warning" in line]
    assert len(warning) == 1 and "made before energy accounting" in warning[0], err
    straight = write_yaml(tmp_path, {**SMALL, "rounds": 4}, "four.yaml")
    assert run_cli(capsys, str(straight), "-o", str(tmp_path / "straight"))[0] == 0
    other = tmp_path / "straight" / "fedavg"
    assert read_rows(run_dir / "metrics.csv", host_time=False) == read_rows(other / "metrics.csv", host_time=False)
    resumed, made = read_rows(run_dir / "rounds.csv"), read_rows(other / "rounds.csv")
    unrecorded = set(LATER_ROUND_COLUMNS) | set(HOST_TIME_COLUMNS)
    assert [{k: v for k, v in r.items() if k not in unrecorded} for r in resumed] == \
        [{k: v for k, v in r.items() if k not in unrecorded} for r in made]
    assert [r["client_energy_j"] for r in resumed[:2]] == ["", ""]  # rounds trained without the ledger
    assert [r[c] for r in resumed[2:] for c in unrecorded - set(HOST_TIME_COLUMNS)] == \
        [r[c] for r in made[2:] for c in unrecorded - set(HOST_TIME_COLUMNS)]
    energy = read_rows(run_dir / "energy.csv")
    assert energy and {r["round"] for r in energy} == {"3", "4"}
    assert [r["round"] for r in read_rows(run_dir / "classes.csv")] == ["3", "4"]
    record = yaml.safe_load((run_dir / "resolved.yaml").read_text())
    assert record["energy"]["from_round"] == 3 and record["compression"] == {}


# -- slots.csv's cell column -----------------------------------------------------------------------
OLD_SLOTS = "round,slot,time_s,client,rbs,tb_bits,failed\n1,0,0.0,3,10,1200,0\n2,4,0.002,1,20,2400,1\n"


def test_an_older_slots_log_reads_its_cell_as_what_the_run_did() -> None:
    from sfl_sim.runs.rundir.schema import SLOTS_COLUMNS

    one_cell = list(csv.reader(upgrade.log_text(OLD_SLOTS, SLOTS_COLUMNS, upgrade.slots_fill(False)).splitlines()))
    assert one_cell[0] == list(SLOTS_COLUMNS) and SLOTS_COLUMNS[-1] == "cell"
    assert one_cell[1:] == [["1", "0", "0.0", "3", "10", "1200", "0", "0"],
                            ["2", "4", "0.002", "1", "20", "2400", "1", "0"]]
    # a network run's rows made before the column do not say which cell granted them: empty, not 0
    network = list(csv.reader(upgrade.log_text(OLD_SLOTS, SLOTS_COLUMNS, upgrade.slots_fill(True)).splitlines()))
    assert [r[-1] for r in network[1:]] == ["", ""] and [r[:-1] for r in network[1:]] == [r[:-1] for r in one_cell[1:]]
    # the fill is for a column the file lacks, never for an empty cell of a column it has
    today = ",".join(SLOTS_COLUMNS) + "\n1,0,0.0,3,10,1200,0,\n"
    assert upgrade.log_rows(*_split(today), SLOTS_COLUMNS, {"cell": "0"})[0][-1] == ""


def _split(text: str) -> tuple[list[str], list[list[str]]]:
    header, *rows = list(csv.reader(text.splitlines()))
    return header, rows


@pytest.mark.parametrize("network", [False, True], ids=["one_cell", "network"])
def test_a_resume_appends_slots_onto_an_older_layout_in_todays_columns(tmp_path, network: bool) -> None:
    from sfl_sim.runs.rundir.files import RunDir
    from sfl_sim.runs.rundir.schema import SLOTS_COLUMNS, SLOTS_FILE

    files = RunDir(tmp_path)
    (tmp_path / SLOTS_FILE).write_text(OLD_SLOTS)  # written before the cell column; round 2 after the checkpoint
    files.start_logs(num_classes=2, keep_through_round=1, slots=True, network=network)
    files.append_slots([{"round": 2, "slot": 4, "time_s": 0.002, "client": 1, "rbs": 20, "tb_bits": 2400,
                         "failed": 1, "cell": 5}])
    header, *rows = list(csv.reader((tmp_path / SLOTS_FILE).read_text().splitlines()))
    assert header == list(SLOTS_COLUMNS)  # the header upgraded: no row misaligned under it
    assert rows == [["1", "0", "0.0", "3", "10", "1200", "0", "0" if not network else ""],
                    ["2", "4", "0.002", "1", "20", "2400", "1", "5"]]


@pytest.mark.parametrize("network", [False, True], ids=["one_cell", "network"])
def test_a_resume_keeps_older_clients_rows_with_their_cell_as_the_run_had_it(tmp_path, network: bool) -> None:
    """clients.csv kept on a resume, written before its cell column: 0 without a network, empty with one."""
    from sfl_sim.runs.rundir.files import RunDir
    from sfl_sim.runs.rundir.schema import CLIENTS_COLUMNS, CLIENTS_FILE

    old = [c for c in CLIENTS_COLUMNS if c != "cell"]
    rows = [[str(r) if c == "round" else "kept" if c == "outcome" else "1" for c in old] for r in (1, 2)]
    (tmp_path / CLIENTS_FILE).write_text("\n".join(",".join(r) for r in [old, *rows]) + "\n")
    RunDir(tmp_path).start_logs(num_classes=2, keep_through_round=1, clients=True, network=network)
    header, *kept = list(csv.reader((tmp_path / CLIENTS_FILE).read_text().splitlines()))
    assert header == list(CLIENTS_COLUMNS) and len(kept) == 1  # round 2 came after the checkpoint
    assert dict(zip(header, kept[0], strict=True))["cell"] == ("" if network else "0")


def test_an_edge_run_made_before_the_backhauls_energy_resumes_at_the_continuing_rate() -> None:
    """``server.edge`` without ``backhaul_j_per_bit`` (an edge run made before the backhaul's energy
    was charged): its resume charges the continuing scenario's rate from then on; read alone, today's
    default.  Runs without an edge gain nothing."""
    today = validate({**SMALL, "server": {"edge": {"backhaul_bps": 1e8}}}).to_yaml_dict()
    today["algorithm"] = today.pop("algorithms")[0]
    old = copy.deepcopy(today)
    del old["server"]["edge"]["backhaul_j_per_bit"]
    assert upgrade.scenario(old)["server"]["edge"] == today["server"]["edge"]
    later = copy.deepcopy(today)
    later["server"]["edge"]["backhaul_j_per_bit"] = 1e-6
    assert upgrade.scenario(old, continued_by=later)["server"]["edge"]["backhaul_j_per_bit"] == 1e-6
    assert upgrade.scenario(today, continued_by=later)["server"]["edge"]["backhaul_j_per_bit"] == 2.7e-5
    plain = validate(SMALL).to_yaml_dict()
    plain["algorithm"] = plain.pop("algorithms")[0]
    assert "edge" not in upgrade.scenario(plain)["server"]
