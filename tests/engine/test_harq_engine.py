"""HARQ in the engine: the upload path takes Harq's time and counts its copies; a payload HARQ cannot
deliver is an outage the policy handles; the scenario's cell.harq (a component of kind harq: the old
form without name, none, one's own module:Class); rounds.csv harq_retransmissions."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import yaml

from sfl_sim.channel import FixedDistancePlacement, Harq, McsTableRate, OutagePolicy
from sfl_sim.cli import main
from sfl_sim.engine import DELIVERED, Counters, Lost, Simulator
from tests.channel.helpers import small_cell
from tests.helpers import schema_validator

NBYTES = 60_000


def _sim(rate, harq, outage=None, seed=0):
    cell = small_cell(FixedDistancePlacement([150.0, 350.0]), rate=rate, n_clients=2, tx_power_w=0.01)
    return Simulator(cell, np.ones(2), 1.0, outage=outage, harq=harq, harq_rng=np.random.default_rng(seed))


def _upload(sim, client):
    out = {}

    def round_process(ctx):
        start = ctx.now_s
        out["rate"], out["snr_db"] = ctx.uplink_rate_bps(client), ctx.uplink_snr_db(client)
        out["result"] = yield ctx.upload(client, NBYTES, "payload")
        out["duration"] = ctx.now_s - start

    sim.run_round(round_process, np.array([0, 1]))
    return out


@pytest.mark.parametrize("mode", ["expected", "sampled"])
def test_upload_takes_harqs_time_and_counts_its_copies(mode):
    rate = McsTableRate(mapping="bler")
    harq = Harq(rate, mode=mode, max_transmissions=4, chase_combining=True)
    sim = _sim(rate, harq, seed=5)
    out = _upload(sim, 1)
    want = harq.send(8.0 * NBYTES, out["rate"], out["snr_db"], np.random.default_rng(5))
    assert out["result"] == DELIVERED and want.delivered
    assert out["duration"] == pytest.approx(want.time_s, rel=1e-12)
    assert sim.counters.harq_retransmissions == want.retransmissions
    assert sim.counters.uplink_bytes == NBYTES and sim.counters.retransmissions == 0


def test_a_block_failing_after_the_last_copy_is_an_outage_for_the_policy():
    # bler_target 0.99 lets the link pick a CQI whose blocks mostly fail; one copy each: the payload is lost.
    rate = McsTableRate(mapping="bler", bler_target=0.99)
    harq = Harq(rate, max_transmissions=1)
    probe = _upload(_sim(rate, None), 1)
    lost = harq.send(8.0 * NBYTES, probe["rate"], probe["snr_db"])
    assert not lost.delivered  # the setting the test needs
    sim = _sim(rate, harq, outage=OutagePolicy(max_attempts=3, on_outage="retransmit"))
    out = _upload(sim, 1)
    assert out["result"] == Lost("outage")
    assert out["duration"] == pytest.approx(3 * lost.time_s)  # same fading: each attempt is the same HARQ transfer
    assert sim.counters.retransmissions == 2 and sim.counters.dropped_transmissions == 1
    assert sim.counters.uplink_bytes == 3 * NBYTES
    sim = _sim(rate, harq)  # no policy: one attempt, then the payload is dropped
    assert _upload(sim, 1)["result"] == Lost("outage") and sim.counters.dropped_transmissions == 1


def test_counters_record_every_counter():
    # (a checkpoint from before the counter reads it as 0: sfl_sim.runs.rundir.upgrade.checkpoint)
    c = Counters()
    assert c.as_dict()["harq_retransmissions"] == 0.0  # every counter, 0 included
    c.harq_retransmissions = 2.5
    assert Counters.from_dict(c.as_dict()).harq_retransmissions == 2.5


@pytest.mark.slow
def test_scenario_harq_runs_and_rounds_csv_counts_it(tmp_path: Path) -> None:
    from tests.runs.test_end_to_end import SMALL

    cell = {"rate": {"name": "mcs_table", "mapping": "bler"}, "client_tx_power_w": 0.005,
            "harq": {"mode": "sampled", "max_transmissions": 4, "harq_rtt_s": 0.008, "chase_combining": True}}
    data = {**SMALL, "rounds": 2, "algorithms": [{"name": "fedavg"}], "cell": {**SMALL.get("cell", {}), **cell}}
    path = tmp_path / "h.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["scenario", str(path), "-o", str(tmp_path / "o"), "--no-progress"]) == 0
    with (tmp_path / "o" / "fedavg" / "rounds.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 and all(float(r["harq_retransmissions"]) >= 0 for r in rows)
    assert all(float(r["harq_retransmissions"]).is_integer() for r in rows)  # sampled: whole copies


@pytest.mark.slow
@pytest.mark.parametrize("override, words", [
    ("cell.harq={max_transmissions: 0}", ["cell.harq.max_transmissions", "0"]),
    ("cell.harq={mode: average}", ["cell.harq.mode", "average", "expected"]),
    ("cell.harq={harq_rtt_s: -1}", ["cell.harq.harq_rtt_s", "-1"]),
    ("cell.harq={chase_combining: 1}", ["cell.harq.chase_combining"]),
    ("cell.harq={mode: sampled}", ["cell.harq", "rate", "mcs_table"]),  # the default rate is shannon
])
def test_bad_harq_input_is_one_line(tmp_path, capsys, override, words) -> None:
    from tests.catalog.test_component_params import BASE

    code = main(["scenario", str(BASE), "--check", "--no-progress", "-o", str(tmp_path / "out"), "--set", override])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)


@pytest.mark.slow
def test_a_harq_scenario_checks(tmp_path, capsys) -> None:
    from tests.catalog.test_component_params import BASE

    code = main(["scenario", str(BASE), "--check", "--no-progress", "-o", str(tmp_path / "out"),
                 "--set", "cell.rate={name: mcs_table, mapping: bler, bler_target: 0.1}",
                 "--set", "cell.harq={mode: expected, max_transmissions: 4, harq_rtt_s: 0.008}"])
    assert code == 0, capsys.readouterr().err


@pytest.mark.slow
def test_the_json_schema_knows_cell_harq() -> None:
    import jsonschema

    from sfl_sim.catalog.component_schema import json_schema
    from tests.catalog.test_component_params import _raw_with

    schema = json_schema()
    validator = schema_validator(schema)
    validator.validate(_raw_with("cell.harq={mode: sampled, max_transmissions: 2, chase_combining: true}"))
    for bad in ("cell.harq={max_transmissions: 0}", "cell.harq={mode: average}", "cell.harq={slot: 1}"):
        with pytest.raises(jsonschema.ValidationError):
            schema_validator(schema).validate(_raw_with(bad))


# -- cell.harq as a component kind ------------------------------------------------------------------
def _cfg(*overrides):
    from sfl_sim.config import apply_override, parse_override, validate
    from tests.catalog.test_component_params import _raw_with

    raw = _raw_with(overrides[0]) if overrides else _raw_with("rounds=40")
    for o in overrides[1:]:
        keys, value = parse_override(o)
        apply_override(raw, keys, value)
    return validate(raw)


MCS = "cell.rate={name: mcs_table, mapping: bler}"


def test_the_old_cell_harq_form_names_the_builtin_and_builds_the_same() -> None:
    from sfl_sim.runs.build import build_cell, build_harq

    old = _cfg(MCS, "cell.harq={mode: sampled, max_transmissions: 2, chase_combining: true}")
    new = _cfg(MCS, "cell.harq={name: harq, mode: sampled, max_transmissions: 2, chase_combining: true}")
    assert old.cell.harq == new.cell.harq and old.cell.harq is not None and old.cell.harq.name == "harq"
    built = build_harq(old, build_cell(old))
    assert isinstance(built, Harq) and repr(built) == repr(build_harq(new, build_cell(new)))
    assert (built.params.mode, built.params.max_transmissions, built.params.chase_combining) == ("sampled", 2, True)
    assert isinstance(build_harq(_cfg(MCS, "cell.harq=harq"), build_cell(old)), Harq)  # a bare name


def test_no_harq_absent_null_or_none_is_the_engines_plain_path() -> None:
    from sfl_sim.runs.build import build_cell, build_harq
    from sfl_sim.runs.resolved import resolve_run

    absent = _cfg()
    assert absent.cell.harq is None
    assert absent.to_yaml_dict()["cell"]["harq"] is None  # the scenario.yaml of a run without HARQ stays as it was
    for cfg in (absent, _cfg("cell.harq=none"), _cfg("cell.harq={name: none}"), _cfg("cell.harq=null")):
        assert build_harq(cfg, build_cell(cfg)) is None
    assert "cell.harq" not in resolve_run(absent, "scala").record["components"]  # older records compare equal
    named = resolve_run(_cfg(MCS, "cell.harq={max_transmissions: 2}"), "scala").record["components"]["cell.harq"]
    assert named["name"] == "harq" and named["class"] == "sfl_sim.channel.link.harq:Harq"
    assert named["params"] == {"mode": "expected", "max_transmissions": 2, "harq_rtt_s": 0.008,
                               "chase_combining": False, "slot_s": None}  # the rate is the engine's, not recorded;
    # slot_s null: the cell's numerology's slot, which the run passes


@pytest.mark.slow
@pytest.mark.parametrize("override, words", [
    ("cell.harq={name: harq, max_transmissions: 65}", ["cell.harq.max_transmissions", "65", "<= 64", "for harq"]),
    ("cell.harq={name: hark}", ["cell.harq.name", "'hark'", "did you mean 'harq'"]),
    ("cell.harq={name: none, mode: sampled}", ["cell.harq", "unknown 'mode'"]),
    ("cell.harq={name: 'no_such_module:Harq'}", ["cell.harq.name", "cannot import module 'no_such_module'"]),
    ("cell.harq=[1]", ["cell.harq", "a mapping with a string 'name'"]),
])
def test_bad_harq_component_is_one_line(tmp_path, capsys, override, words) -> None:
    from tests.catalog.test_component_params import BASE

    code = main(["scenario", str(BASE), "--check", "--no-progress", "-o", str(tmp_path / "out"), "--set", MCS,
                 "--set", override])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)


def test_list_harq(capsys) -> None:
    assert main(["list", "harq"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("harq (2) -- scenario: cell.harq.name")
    assert "  harq  Uplink HARQ over an ``mcs_table`` rate" in out and "  none  No HARQ" in out
    assert "parameters: mode='expected', max_transmissions=4, harq_rtt_s=0.008, chase_combining=False, " \
           "slot_s=None" in out  # the engine's rate argument is not a scenario key


PLUGIN = '''
import numpy as np
from sfl_sim.channel.protocols import HarqSend


class OneExtraCopy:
    """Every transport block is sent twice (a plug-in of the harq kind)."""

    def __init__(self, rate, rtt_s: float = 0.01):
        self.rate, self.rtt_s = rate, rtt_s

    def send(self, payload_bits, rate_bps, sinr_db, rng=None):
        return HarqSend(2 * payload_bits / rate_bps + self.rtt_s, 1.0, True, 1)

    def slot_block(self, rate_bps, sinr_db):
        r = np.asarray(rate_bps, float)
        return np.where(r > 0, 1.0, np.nan), np.where(r > 0, 2.0, np.nan)
'''


def test_a_harq_of_ones_own_runs_in_the_engine(tmp_path, monkeypatch) -> None:
    from sfl_sim.channel import check_component
    from sfl_sim.runs.build import build_cell, build_harq

    (tmp_path / "my_harq.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = _cfg("cell.harq={name: 'my_harq:OneExtraCopy', rtt_s: 0.02}")  # any rate model: the plug-in decides
    harq = build_harq(cfg, build_cell(cfg))
    assert type(harq).__name__ == "OneExtraCopy" and harq.rtt_s == 0.02
    check_component("harq", harq)
    sim = _sim(McsTableRate(mapping="bler"), harq)
    out = _upload(sim, 0)
    assert out["result"] is DELIVERED
    assert out["duration"] == pytest.approx(2 * 8.0 * NBYTES / out["rate"] + 0.02, rel=1e-12)
    assert sim.counters.harq_retransmissions == 1.0


# -- the slot is the cell's numerology's (issue 51 item 4) ------------------------------------------
@pytest.mark.parametrize("mu, slot_s", [(0, 1e-3), (1, 0.5e-3), (2, 0.25e-3)])
def test_a_run_passes_the_cells_slot_to_harq(mu, slot_s) -> None:
    """1 ms / 2^mu (TS 38.211 clause 4.3.2): a transport block is one slot of the cell's numerology."""
    from sfl_sim.runs.build import build_cell, build_harq

    cfg = _cfg(MCS, "cell.harq={max_transmissions: 2}", f"cell.numerology={mu}",
               "cell.power_control={name: fixed}")
    harq = build_harq(cfg, build_cell(cfg))
    assert isinstance(harq, Harq) and harq.slot_s == slot_s
    # 1e6 bit/s carry 1000 bits per ms: a 1e4-bit payload is 10 ms of slots
    assert harq.blocks(1e4, 1e6) == round(1e-2 / slot_s)
    given = _cfg(MCS, f"cell.harq={{slot_s: {slot_s}}}", f"cell.numerology={mu}")
    assert build_harq(given, build_cell(given)).slot_s == slot_s  # type: ignore[union-attr]


def test_a_slot_that_is_not_the_numerologys_is_refused_in_one_line() -> None:
    from sfl_sim.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        _cfg(MCS, "cell.harq={slot_s: 0.001}", "cell.numerology=1")
    msg = str(info.value)
    assert "\n" not in msg and "cell.harq.slot_s" in msg and "0.001" in msg and "0.0005" in msg, msg
