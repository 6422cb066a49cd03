"""A downlink without a usable rate never fails a run (issue 36, item 4): the clients in downlink
outage leave their rounds, ``downlink_outage`` in rounds.csv and clients.csv, and ``--check``
says how many there are."""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from sfl_sim.cli import main
from tests.helpers import small_scenario, write_yaml


def _scenario(server_tx_power_w: float) -> dict:
    # Six clients, mcs_table (no rate below CQI 1): at 30 mW clients 1, 2, 4 and 5 have no downlink
    # rate on a sixth of the 20 MHz band (nor on the whole band), 0 and 3 have one (measured at the
    # link budget's defaults: rates on the RBs, TS 38.306's overhead, the CQI chosen on the transport block).
    return {**small_scenario(algorithms=["fedavg", "splitfed_v1"], rounds=2, clients=6, participation=1.0),
            "cell": {"rate": {"name": "mcs_table"},
                     "downlink": {"mode": "unicast", "server_tx_power_w": server_tx_power_w}}}


@pytest.mark.slow
def test_check_says_how_many_clients_are_in_downlink_outage(tmp_path: Path, capsys) -> None:
    path = write_yaml(tmp_path, _scenario(0.03))
    assert main(["scenario", str(path), "-o", str(tmp_path / "out"), "--check"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("downlink (unicast): 4 of 6 clients in downlink outage")


@pytest.mark.slow
def test_a_run_with_clients_in_downlink_outage_completes_and_records_why(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, _scenario(0.03))
    assert main(["scenario", str(path), "-o", str(tmp_path / "out"), "--no-progress"]) == 0
    for label in ("fedavg", "splitfed_v1"):
        rounds = pd.read_csv(tmp_path / "out" / label / "rounds.csv", keep_default_na=False)
        clients = pd.read_csv(tmp_path / "out" / label / "clients.csv", keep_default_na=False)
        for dropped in rounds["dropped"]:
            assert sorted(dropped.split()) == ["1:downlink_outage", "2:downlink_outage", "4:downlink_outage",
                                               "5:downlink_outage"]
        out = clients.set_index(["round", "client"])["outcome"]
        assert {out[(r, k)] for r in (1, 2) for k in (1, 2, 4, 5)} == {"downlink_outage"}
        assert {out[(r, k)] for r in (1, 2) for k in (0, 3)} == {"kept"}
