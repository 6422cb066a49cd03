"""Mobility traces: the three readers on hand-written files in their real formats, the ``trace``
mobility, and the one-line refusals of malformed files."""
import gzip
from pathlib import Path

import numpy as np
import pytest

from sfl_sim.channel import MOBILITY, MobilityTraceError, TraceMobility, check_component, read_mobility_trace
from sfl_sim.errors import UserError
from sfl_sim.kit.registry import ComponentValueError

TRACES = Path(__file__).parent / "mobility_traces"
FCD, NS2, BONN = TRACES / "sample.fcd.xml", TRACES / "sample.ns_movements", TRACES / "sample.movements"

# Every waypoint of the sample files, (node, t_s, x_m, y_m), typed from the files (ns-2: from its
# commands by hand: node 0 covers 50 m at 10 m/s by 5 s; node 1 heads north at 6 m/s from 1 s, is
# at y = 20 + 6 * 3 = 38 m when it turns at 4 s, then covers 40 m at 2 m/s by 24 s).
WAYPOINTS = {
    FCD: [("ped0", 0.0, -50.0, 60.0), ("ped0", 1.0, -50.0, 58.80), ("ped0", 2.0, -50.0, 57.60),
          ("veh0", 0.0, 120.50, 40.25), ("veh0", 1.0, 123.10, 40.25), ("veh0", 2.0, 128.30, 40.25),
          ("veh2", 0.0, 200.0, -10.0), ("veh2", 1.0, 200.0, 3.89),
          ("veh10", 1.0, -300.0, -120.0), ("veh10", 2.0, -294.11, -114.11)],
    NS2: [("0", 0.0, 150.0, 93.5), ("0", 5.0, 180.0, 133.5), ("0", 6.0, 180.0, 133.5),
          ("1", 0.0, 10.0, 20.0), ("1", 1.0, 10.0, 20.0), ("1", 4.0, 10.0, 38.0), ("1", 24.0, 50.0, 38.0),
          ("2", 0.0, -40.0, 0.0)],
    BONN: [("0", 0.0, 100.0, 200.0), ("0", 10.0, 150.0, 200.0), ("0", 20.0, 150.0, 260.0),
           ("1", 0.0, -30.5, 12.25), ("1", 4.0, -30.5, 12.25), ("1", 8.0, -10.5, 2.25),
           ("2", 0.0, 0.0, -75.0)],
}
NODES = {FCD: ["ped0", "veh0", "veh2", "veh10"], NS2: ["0", "1", "2"], BONN: ["0", "1", "2"]}


def started(path, n=None, **params):
    model = TraceMobility(path=str(path), **params)
    model.start(np.zeros((n or len(NODES[path]), 2)), np.random.default_rng(0))
    return model


@pytest.mark.parametrize("path", list(WAYPOINTS), ids=lambda p: p.name)
def test_every_waypoint_reads_back_exactly(path):
    trace = read_mobility_trace(path)
    assert trace.node_ids == NODES[path]  # natural id order: veh2 before veh10
    model = started(path)
    for node, t, x, y in WAYPOINTS[path]:
        client = NODES[path].index(node)
        assert model.positions_at(t)[client].tolist() == [x, y], (node, t)


@pytest.mark.parametrize("path, node, t, expected", [
    (FCD, "veh0", 1.5, (125.7, 40.25)),       # halfway from 123.10 to 128.30
    (FCD, "ped0", 0.25, (-50.0, 59.7)),       # a quarter of 60.00 -> 58.80
    (NS2, "0", 2.5, (165.0, 113.5)),          # halfway along (150, 93.5) -> (180, 133.5)
    (NS2, "1", 2.5, (10.0, 29.0)),            # 1.5 s at 6 m/s north of (10, 20)
    (NS2, "1", 14.0, (30.0, 38.0)),           # 10 s at 2 m/s east of (10, 38)
    (BONN, "1", 6.0, (-20.5, 7.25)),          # halfway (-30.5, 12.25) -> (-10.5, 2.25)
])
def test_a_midpoint_interpolated_by_hand(path, node, t, expected):
    pos = started(path).positions_at(t)[NODES[path].index(node)]
    np.testing.assert_allclose(pos, expected, rtol=1e-12)


def test_before_the_first_and_after_the_last_waypoint_a_node_holds():
    model = started(FCD)
    assert model.positions_at(0.5)[3].tolist() == [-300.0, -120.0]  # veh10 enters at 1 s
    assert model.positions_at(7.0)[2].tolist() == [200.0, 3.89]  # veh2 left after 1 s
    assert model.velocities_at(7.0)[2].tolist() == [0.0, 0.0]
    ns2 = started(NS2)
    assert ns2.positions_at(100.0).tolist() == [[180.0, 133.5], [50.0, 38.0], [-40.0, 0.0]]


def test_velocities_and_nominal_speeds():
    ns2 = started(NS2)
    np.testing.assert_allclose(ns2.velocities_at(1.0), [[6.0, 8.0], [0.0, 6.0], [0.0, 0.0]])
    np.testing.assert_allclose(ns2.velocities_at(5.0), [[0.0, 0.0], [2.0, 0.0], [0.0, 0.0]])
    bonn = started(BONN)
    # node 0: 50 m + 60 m in 20 s; node 1: sqrt(20^2 + 10^2) m in 8 s; node 2: one waypoint
    np.testing.assert_allclose(bonn.nominal_speed_m_per_s(), [5.5, np.hypot(20.0, 10.0) / 8.0, 0.0])


def test_origin_time_offset_and_explicit_nodes():
    model = started(FCD, 2, nodes=["veh10", "ped0"], origin_m=[-300.0, -100.0], time_offset_s=1.0)
    assert model.positions_at(0.0).tolist() == [[0.0, -20.0], [250.0, 158.8]]
    bonn = started(BONN, 1, nodes=[2])  # ids given as numbers name the same nodes
    assert bonn.positions_at(3.0).tolist() == [[0.0, -75.0]]


def test_start_ignores_the_placement_and_draws_nothing():
    model = TraceMobility(path=str(BONN))
    rng = np.random.default_rng(3)
    before = rng.bit_generator.state
    first = model.start(np.full((3, 2), 42.0), rng)
    assert first.tolist() == [[100.0, 200.0], [-30.5, 12.25], [0.0, -75.0]]
    assert rng.bit_generator.state == before


def test_a_cell_pulls_positions_into_its_annulus():
    model = TraceMobility(path=str(BONN))
    pos = model.start(np.zeros((3, 2)), None, radius_m=150.0, min_distance_m=10.0)
    np.testing.assert_allclose(np.hypot(*pos.T), [150.0, np.hypot(30.5, 12.25), 75.0])
    np.testing.assert_allclose(pos[0], np.array([100.0, 200.0]) * 150.0 / np.hypot(100.0, 200.0))


def test_step_form_replays_on_its_own_clock():
    model = MOBILITY.create("trace", path=str(NS2))
    rng = np.random.default_rng(0)
    a = model.step(np.zeros((3, 2)), 2.5, rng, radius_m=1000.0, min_distance_m=1.0)
    b = model.step(a, 2.5, rng, radius_m=1000.0, min_distance_m=1.0)
    assert a.tolist() == [[165.0, 113.5], [10.0, 29.0], [-40.0, 0.0]]
    assert b[0].tolist() == [180.0, 133.5]
    saved = model.state_dict()
    again = MOBILITY.create("trace", path=str(NS2))
    again.load_state_dict(saved)
    np.testing.assert_array_equal(again.step(b, 1.0, rng), model.step(b, 1.0, rng))


@pytest.mark.parametrize("path", list(WAYPOINTS), ids=lambda p: p.name)
def test_conformance(path):
    report = check_component("mobility", TraceMobility(path=str(path)), client_counts=(1, 3))
    assert "same seed, same positions in any query order" in report["checks"]


def test_a_held_out_gzipped_trace_is_read(tmp_path):
    path = tmp_path / "held_out.movements.gz"
    with gzip.open(path, "wt") as f:
        f.write("0.0 1.0 2.0 3.0 4.0 6.0\n5.0 7.0 8.0\n")
    model = TraceMobility(path=str(path))
    model.start(np.zeros((2, 2)), None)
    assert model.positions_at(3.0).tolist() == [[4.0, 6.0], [7.0, 8.0]]
    assert model.positions_at(1.5).tolist() == [[2.5, 4.0], [7.0, 8.0]]


# ----------------------------------------------------------------------------------- refusals
def one_line_error(path, match, **params):
    with pytest.raises(MobilityTraceError) as info:
        TraceMobility(path=str(path), **params)
    message = str(info.value)
    assert "\n" not in message and str(path) in message, message
    assert isinstance(info.value, UserError) and isinstance(info.value, ValueError)
    assert match in message, message
    return message


FCD_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<fcd-export>\n'


@pytest.mark.parametrize("body, match", [
    ('<timestep time="0.00">\n<vehicle id="v" x="1.0"/>\n</timestep>\n</fcd-export>\n',
     "line 4: <vehicle id='v'> has no y attribute"),
    ('<timestep time="0.00">\n<vehicle id="v" x="abc" y="1"/>\n</timestep>\n</fcd-export>\n',
     "line 4 <vehicle id='v'>: x got 'abc'; allowed: a finite decimal number"),
    ('<timestep time="0.00">\n<vehicle id="v" x="NaN" y="1"/>\n</timestep>\n</fcd-export>\n', "x got 'NaN'"),
    ('<timestep time="0.00">\n<vehicle id="v" x="1e999" y="1"/>\n</timestep>\n</fcd-export>\n', "x got '1e999'"),
    ('<timestep time="1.00">\n<vehicle id="v" x="1" y="1"/>\n</timestep>\n'
     '<timestep time="0.50">\n<vehicle id="v" x="1" y="1"/>\n</timestep>\n</fcd-export>\n',
     "line 6: <timestep> time 0.5 s after time 1 s"),
    ('<timestep time="-1">\n</timestep>\n</fcd-export>\n', "time got '-1'; allowed: a finite number of seconds >= 0"),
    ('<timestep>\n</timestep>\n</fcd-export>\n', "<timestep> has no time attribute"),
    ('<timestep time="0">\n<vehicle x="1" y="1"/>\n</timestep>\n</fcd-export>\n', "<vehicle> has no id"),
    ('<timestep time="0">\n<vehicle id="v" x="1" y="1"/>\n<vehicle id="v" x="2" y="1"/>\n</timestep>\n'
     '</fcd-export>\n', "line 5: <vehicle id='v'> twice at time 0 s"),
    ('<timestep time="0">\n<vehicle id="v" x="1" y="1"/>\n<person id="v" x="2" y="1"/>\n</timestep>\n'
     '</fcd-export>\n', "id 'v' is a <person> and a <vehicle>"),
    ('<timestep time="0">\n<bus id="v" x="1" y="1"/>\n</timestep>\n</fcd-export>\n',
     "line 4: element <bus> inside <timestep>; allowed: <vehicle>, <person>, <container> there"),
    ('<timestep time="0">\n<vehicle id="v" x="1" y="1">\n</timestep>\n</fcd-export>\n', "line 5: not well-formed XML"),
    ('</fcd-export>\n', "no node has a waypoint"),
])
def test_malformed_fcd_is_refused_in_one_line(tmp_path, body, match):
    path = tmp_path / "bad.fcd.xml"
    path.write_text(FCD_HEAD + body)
    one_line_error(path, match)


def test_a_doctype_is_refused_before_any_entity(tmp_path):
    path = tmp_path / "laughs.xml"
    path.write_text('<?xml version="1.0"?>\n<!DOCTYPE fcd-export [\n<!ENTITY a "aaaaaaaaaa">\n'
                    '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n]>\n<fcd-export>&b;</fcd-export>\n')
    one_line_error(path, "line 2: a DOCTYPE declaration; allowed: plain XML without a DOCTYPE")


def test_an_undeclared_entity_is_broken_xml(tmp_path):
    path = tmp_path / "entity.xml"
    path.write_text(FCD_HEAD + '<timestep time="&t;"/>\n</fcd-export>\n')
    one_line_error(path, "line 3: not well-formed XML (undefined entity)")


NS2_START = '$node_(0) set X_ 1.0\n$node_(0) set Y_ 2.0\n'


@pytest.mark.parametrize("text, match", [
    (NS2_START + '$ns_ at 1.0 "$node_(7) setdest 5.0 5.0 1.0"\n',
     "line 3: setdest for node 7, which has no start position (unknown node)"),
    (NS2_START + '$ns_ at 2.0 "$node_(0) setdest 5.0 5.0 1.0"\n$ns_ at 1.0 "$node_(0) setdest 1.0 1.0 1.0"\n',
     "line 4: node 0 at time 1 s after time 2 s"),
    (NS2_START + '$ns_ at 1.0 "$node_(0) setdest five 5.0 1.0"\n', "line 3: x got 'five'"),
    (NS2_START + '$ns_ at 1.0 "$node_(0) setdest 5.0 nan 1.0"\n', "line 3: y got 'nan'"),
    (NS2_START + '$ns_ at 1.0 "$node_(0) setdest 5.0 5.0 -1.0"\n', "line 3: speed got '-1.0'; allowed: a speed >= 0"),
    (NS2_START + 'exec rm -rf /\n', "line 3: 'exec rm -rf /' is not an ns-2 movement command"),
    ('$node_(0) set X_ 1.0\n', "line 1: node 0 has no Y_ position"),
    (NS2_START + '$node_(0) set X_ 3.0\n', "line 3: node 0 sets X_ a second time"),
    ('# nothing\n', "no node has a waypoint"),
])
def test_malformed_ns2_is_refused_in_one_line(tmp_path, text, match):
    path = tmp_path / "bad.ns_movements"
    path.write_text(text)
    one_line_error(path, match)


@pytest.mark.parametrize("text, match", [
    ("0.0 1.0 2.0 5.0 3.0\n", "line 1: 5 numbers; allowed: 't x y' triples"),
    ("0.0 1.0 2.0\n3.0 1.0 x\n", "line 2 waypoint 1: y got 'x'"),
    ("0.0 1.0 inf\n", "line 1 waypoint 1: y got 'inf'"),
    ("5.0 1.0 2.0 4.0 1.0 2.0\n", "line 1 waypoint 2: node '0' at time 4 s after time 5 s"),
    ("0.0 1.0 2.0\n\n0.0 1.0 2.0\n", "line 2: a blank line"),
    ("", "no node has a waypoint"),
])
def test_malformed_bonnmotion_is_refused_in_one_line(tmp_path, text, match):
    path = tmp_path / "bad.movements"
    path.write_text(text)
    one_line_error(path, match)


def test_unreadable_unknown_and_too_few_nodes(tmp_path):
    one_line_error(tmp_path / "missing.movements", "no such file")
    one_line_error(tmp_path / "trace.csv", "format 'auto' cannot tell the format from the name")
    raw = tmp_path / "latin.movements"
    raw.write_bytes(b"0.0 1.0 2.0 \xe9\n")
    one_line_error(raw, "line 1: byte 0xe9 is not UTF-8 text")
    broken = tmp_path / "broken.movements.gz"
    broken.write_bytes(b"\x1f\x8b not really gzip")
    one_line_error(broken, "cannot be read")
    one_line_error(FCD, "nodes lists 'veh7', which the trace does not have; allowed: its nodes ped0, veh0",
                   nodes=["veh0", "veh7"])
    one_line_error(FCD, "nodes lists 'veh0' twice", nodes=["veh0", "veh0"])
    with pytest.raises(MobilityTraceError, match="4 nodes for 5 clients; allowed: a trace with at least as many"):
        TraceMobility(path=str(FCD)).start(np.zeros((5, 2)), None)
    with pytest.raises(MobilityTraceError, match="nodes lists 2 nodes for 3 clients"):
        TraceMobility(path=str(FCD), nodes=["veh0", "ped0"]).start(np.zeros((3, 2)), None)


def test_a_format_the_file_does_not_have_is_refused_in_one_line():
    with pytest.raises(MobilityTraceError, match=r"line 1: .* is not an ns-2 movement command"):
        TraceMobility(path=str(FCD), format="ns2")
    with pytest.raises(ComponentValueError, match="format"):
        MOBILITY.create("trace", path=str(FCD), format="gpx")


def test_positions_before_start_are_refused():
    with pytest.raises(ValueError, match="before start"):
        TraceMobility(path=str(BONN)).positions_at(0.0)


def test_all_clients_at_once_equals_each_node_on_its_own():
    """The lookup of every client at one time (a binary search run for all at once) gives each
    node's own answer bit for bit: jumps (a time twice), single waypoints, before and after."""
    from sfl_sim.channel.large_scale.mobility_traces import NodeTrack, _Lookup

    rng = np.random.default_rng(0)
    tracks = []
    for i in range(30):
        times = np.cumsum(rng.uniform(0.0, 1.5, int(rng.integers(1, 40))))
        times = np.sort(np.concatenate([times, times[::5]]))
        tracks.append(NodeTrack(str(i), times, rng.uniform(-100, 100, (times.size, 2))))
    lookup = _Lookup(tracks)
    queries = np.concatenate([[0.0, 100.0], rng.uniform(0, 40, 100), np.concatenate([t.times_s for t in tracks])])
    for u in queries:
        np.testing.assert_array_equal(lookup.positions_at(u), [t.position_at(u) for t in tracks])
        np.testing.assert_array_equal(lookup.velocities_at(u), [t.velocity_at(u) for t in tracks])
