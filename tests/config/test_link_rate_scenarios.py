"""The link rate models from a scenario: `--check` builds them, the schema accepts them, a wrong
parameter is one line naming the field, and `sfl-sim list rate` shows them."""
from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from sfl_sim.catalog.component_schema import json_schema
from sfl_sim.cli import main
from tests.catalog.test_component_params import BASE, _raw_with
from tests.helpers import schema_validator

MCS = ("cell.rate={name: mcs_table, table: cqi_table1, mapping: gap, ber_target: 5.0e-5, "
       "overhead_fraction: 0.0}")
RIGHT = [MCS, "cell.rate={name: shannon_gap, ber_target: 5.0e-5}", "cell.rate={name: shannon_gap, gap_db: 3}",
         "cell.rate={name: attenuated_shannon, link: uplink}",
         "cell.rate={name: mcs_table, table: cqi_table2, overhead_fraction: 0.08}",
         "cell.rate={name: mcs_table, table: cqi_table2, mapping: bler, bler_target: 0.1}"]
WRONG = [
    ("cell.rate={name: shannon_gap, ber_target: 0.6}", ["cell.rate.ber_target", "0.6"]),
    ("cell.rate={name: mcs_table, overhead_fraction: 1.0}", ["cell.rate.overhead_fraction", "1.0"]),
    ("cell.rate={name: mcs_table, table: cqi_table9}", ["cell.rate.table", "cqi_table9", "cqi_table1"]),
    ("cell.rate={name: mcs_table, mapping: snr}", ["cell.rate.mapping", "snr", "gap", "bler"]),
    ("cell.rate={name: mcs_table, mapping: bler, bler_target: 1.0}", ["cell.rate.bler_target", "1.0"]),
    ("cell.rate={name: shannon_gap, gap_db: 3, ber_target: 1.0e-5}", ["cell.rate", "gap_db", "ber_target"]),
    ("cell.rate={name: attenuated_shannon, link: sidelink}", ["cell.rate.link", "sidelink"]),
]


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json_schema()


@pytest.mark.slow
@pytest.mark.parametrize("override", RIGHT)
def test_a_link_rate_scenario_checks_and_validates(tmp_path, capsys, schema, override) -> None:
    schema_validator(schema).validate(_raw_with(override))
    code = main(["scenario", str(BASE), "--check", "--no-progress", "-o", str(tmp_path / "out"), "--set", override])
    assert code == 0, capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("override, words", WRONG, ids=[w[0] for w in WRONG])
def test_a_wrong_link_rate_parameter_is_one_line(tmp_path, capsys, schema, override, words) -> None:
    if "gap_db: 3, ber_target" not in override:  # the one cross-field rule lives in the constructor only
        with pytest.raises(jsonschema.ValidationError):
            schema_validator(schema).validate(_raw_with(override))
    code = main(["scenario", str(BASE), "--check", "--no-progress", "-o", str(tmp_path / "out"), "--set", override])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)


def test_list_rate_names_the_link_models(capsys) -> None:
    assert main(["list", "rate"]) == 0
    out = capsys.readouterr().out
    for name in ("shannon", "shannon_gap", "attenuated_shannon", "mcs_table"):
        assert f"  {name} " in out
