"""Hostile and broken trace files: every one refused in one bounded line, fast, naming the file and
the line or key, the value and what is allowed (issue 35, items 3-7)."""
from __future__ import annotations

import json
import pickle
import time

import numpy as np
import pytest

from sfl_sim.clients.availability import files as trace_files
from sfl_sim.clients.availability.capability import client_capability, read_capability
from sfl_sim.clients.availability.files import TraceError, shown
from sfl_sim.clients.availability.readers import read_trace


def _refused(path, fmt="csv", kind="availability", seconds=2.0) -> str:
    """The one line refusing ``path``, checked to come fast, bounded and one line."""
    start = time.perf_counter()
    with pytest.raises(TraceError) as info:
        read_trace(path, fmt) if kind == "availability" else read_capability(path, fmt)
    assert time.perf_counter() - start < seconds
    line = str(info.value)
    assert "\n" not in line and str(path) in line and "allowed:" in line and len(line) < 600 + len(str(path)), line
    return line


def _doubling_list(levels: int = 60) -> list:
    """A list holding the one below it twice, ``levels`` deep: a few hundred bytes pickled, 2**60
    items walked."""
    out: list = []
    for _ in range(levels):
        out = [out, out]
    return out


# -- pickles -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["availability", "capability"])
@pytest.mark.parametrize("data", [
    {1: _doubling_list()},
    {1: {"active": _doubling_list(), "inactive": _doubling_list(), "finish_time": 1,
         "computation": _doubling_list(), "communication": 1.0}},
    {10**5000: {"active": [0], "inactive": [1], "finish_time": 2}},
    {"x" * 300_000: {"active": [0], "inactive": [1], "finish_time": 2}},
    {1: {"active": [10**5000], "inactive": [10**5000], "finish_time": 2, "computation": 10**5000,
         "communication": 1.0}},
])
def test_a_small_malicious_pickle_is_refused_at_once_with_a_short_line(tmp_path, data, kind) -> None:
    path = tmp_path / "p.pkl"
    path.write_bytes(pickle.dumps(data))
    _refused(path, "fedscale", kind)


def test_shared_lists_are_refused_before_the_walk_grows(tmp_path) -> None:
    shared = list(range(1000))
    path = tmp_path / "p.pkl"
    path.write_bytes(pickle.dumps({i: {"active": shared, "inactive": shared, "finish_time": 1e6}
                                   for i in range(5000)}))
    assert "containers are shared" in _refused(path, "fedscale")


def test_a_tuple_that_would_hash_for_ever_is_refused_before_loading(tmp_path) -> None:
    # a dict whose key is a tuple holding the tuple below it twice, 60 levels deep (hand-written
    # opcodes: building it in Python to pickle it would hash it)
    path = tmp_path / "p.pkl"
    path.write_bytes(b"\x80\x02}q\x00)q\x01" + b"h\x01h\x01\x86q\x01" * 60 + b"K\x01s.")
    assert "a tuple" in _refused(path, "fedscale")


def test_a_file_over_the_size_cap_is_refused_before_reading(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(trace_files, "MAX_FILE_BYTES", 100)
    path = tmp_path / "t.csv"
    path.write_text("client,start_s,end_s\n" + "0,0,1\n" * 50)
    assert "at most 100 bytes" in _refused(path)


# -- CSV -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("content, words", [
    (b"client,start_s,end_s\n\xb2,0,10\n", ["line 2", "not UTF-8"]),
    ("client,start_s,end_s\n²,0,10\n".encode(), ["line 2", "client got '²'", "integer >= 0"]),
    (b"\x89PNG\r\n\x1a\n\x00\x00", ["line 1", "not UTF-8"]),
    (("client,start_s,end_s\n0,0,1\n0,2," + "9" * 300_000 + "\n").encode(), ["line 3", "field larger"]),
    (b"client,start_s,end_s\n0,0,10\n3000000,0,10\n", ["line 3", "client got 3000000", "ids below"]),
    (b"client,start_s,end_s\n1000000000,0,10\n", ["line 2", "client got 1000000000"]),
    (b"client,start_s,end_s\n0,0,0\n1,5,5\n", ["no device is ever online", "end_s = start_s"]),
    (b"client,start_s,end_s\n0,0,1e300\n", ["line 2", "end_s got '1e300'", "[0, 1e+10] s"]),
])
def test_bad_csv_bytes_are_one_line(tmp_path, content, words) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(content)
    line = _refused(path)
    assert all(w in line for w in words), line


def test_a_byte_order_mark_and_sparse_ids_near_the_rows_are_read(tmp_path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes("\ufeffclient,start_s,end_s\n0,0,10\n500,0,10\n".encode())
    devices = read_trace(path, "csv")
    assert len(devices) == 501 and devices[1].starts_s.size == 0  # ids without a row: never online


# -- FLASH -----------------------------------------------------------------------------------------
def _flash(tmp_path, messages: list[str]) -> object:
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"d": {"guid": "g", "model": "m", "messages": "\n".join(messages)}}))
    return path


@pytest.mark.parametrize("messages, words", [
    (["2018-03-06 09:00:00\twifi", "2018-03-06 08:00:00\tscreen_lock"], ["message 2", "before", "time order"]),
    (["0001-01-01 00:00:00\twifi", "9999-12-31 00:00:00\tscreen_lock"], ["message 2", "[0, 1e+10] s"]),
    (["2018-03-06 08:00:00\twifi", "2018-03-06 09:00:00\t" + "x" * 300_000], ["message 2", "state got"]),
    (["2018-03-06 08:00:00\twifi", "2018-03-06 09:00:00\tscreen_lock"], ["no device is ever online"]),
])
def test_bad_flash_messages_are_one_line(tmp_path, messages, words) -> None:
    line = _refused(_flash(tmp_path, messages), "flash")
    assert all(w in line for w in words), line


def test_deeply_nested_or_binary_json_is_one_line(tmp_path) -> None:
    path = tmp_path / "f.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert "nested deeper" in _refused(path, "flash")
    path.write_bytes(b"\x89PNG\r\n")
    assert "not UTF-8" in _refused(path, "flash")
    path.write_text('{"d": ' + "1" * 5000 + "}")  # an integer of more digits than Python converts
    assert "not JSON" in _refused(path, "flash")


# -- capability ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, words", [
    ("client,compute_flops_per_s\n0,1e-300\n", ["compute_flops_per_s got '1e-300'", "[1, 1e+21] FLOP/s"]),
    ("client,compute_flops_per_s,uplink_bps\n0,1e9,1e-300\n", ["uplink_bps got '1e-300'", "bit/s"]),
    ("client,compute_flops_per_s,downlink_bps\n0,1e9,1e300\n", ["downlink_bps got '1e300'", "bit/s"]),
    ("client,compute_flops_per_s\n²,1e9\n", ["client got '²'"]),
])
def test_capability_values_keep_the_scenarios_ranges(tmp_path, text, words) -> None:
    path = tmp_path / "c.csv"
    path.write_text(text)
    line = _refused(path, "csv", "capability")
    assert all(w in line for w in words), line


def test_a_speed_converted_from_ms_per_sample_keeps_the_range(tmp_path) -> None:
    path = tmp_path / "c.pkl"
    path.write_bytes(pickle.dumps({7: {"computation": 1e-6, "communication": 100.0}}))
    trace = read_capability(path, "fedscale")
    with pytest.raises(TraceError) as info:  # 1e18 FLOPs per sample in 1 ns: 1e27 FLOP/s
        client_capability(trace, 1, "order", np.random.default_rng(0), forward_flops_per_sample=1e18)
    assert "key 7" in str(info.value) and "[1, 1e+21] FLOP/s" in str(info.value)
    path.write_bytes(pickle.dumps({7: {"computation": 1e-300, "communication": 1e-300}}))
    assert "computation got 1e-300" in _refused(path, "fedscale", "capability")


def test_shown_is_bounded_whatever_it_is_given() -> None:
    assert len(shown(_doubling_list())) <= 60 and len(shown("x" * 10**6)) <= 60
    assert shown(10**5000) == "<an integer of 16610 bits>" and shown(1.5) == "1.5"
