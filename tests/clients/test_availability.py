"""sfl_sim.clients.availability: the always / trace / markov models, the three trace readers, bad input."""
from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sfl_sim.catalog import listing
from sfl_sim.clients.availability import (
    AVAILABILITY,
    AlwaysAvailable,
    MarkovAvailability,
    TraceAvailability,
    TraceEndedError,
    TraceError,
    check_availability,
)


def _csv(tmp_path, text, name="trace.csv"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


#: Device 0 online [0,10) and [20,30) (touching [30,35) is joined to the latter), device 1 never
#: (no row), device 2 online [5,40); the trace lasts 40 s.
CSV = "client,start_s,end_s\n0,0,10\n0,20,30\n0,30,35\n2,5,40\n"


def _prepared(model, n, seed=0):
    model.prepare(n, np.random.default_rng(seed))
    return model


# ------------------------------------------------------------------------------------------ csv
def test_csv_by_order_gives_the_intervals_of_the_file(tmp_path):
    model = _prepared(TraceAvailability(_csv(tmp_path, CSV), mapping="order"), 3)
    assert model.online([0, 1, 2], 0.0).tolist() == [True, False, False]
    assert model.online([0, 1, 2], 5.0).tolist() == [True, False, True]
    assert model.online([0, 1, 2], 10.0).tolist() == [False, False, True]  # half-open: off at the end
    assert model.online([0, 1, 2], 34.9).tolist() == [True, False, True]
    # by hand: device 0 leaves at 10, comes back at 20, leaves at 35 (30 joins two intervals)
    assert model.next_change_s(0, 0.0) == 10.0
    assert model.next_change_s(0, 12.0) == 20.0
    assert model.next_change_s(0, 25.0) == 35.0
    assert model.next_change_s(1, 3.0) == math.inf  # a device with no interval is never online
    assert model.next_change_s(2, 0.0) == 5.0


def test_wrap_repeats_the_trace_and_stop_refuses_times_past_its_end(tmp_path):
    path = _csv(tmp_path, CSV)
    wrap = _prepared(TraceAvailability(path, mapping="order"), 3)
    # span 40 s: t=45 is t=5 of the second pass
    assert wrap.online([0, 1, 2], 45.0).tolist() == [True, False, True]
    assert wrap.next_change_s(0, 45.0) == 50.0
    assert wrap.next_change_s(0, 36.0) == 40.0  # offline [35, 40), back online at 40 (= 0 of the next pass)
    assert wrap.next_change_s(0, 40.0) == 50.0  # ... until 50 (= 10)
    # device 2 is online [5,40) and, wrapped, offline [40,45): it leaves at 40 and is back at 45
    assert wrap.next_change_s(2, 30.0) == 40.0
    assert wrap.next_change_s(2, 41.0) == 45.0
    stop = _prepared(TraceAvailability(path, mapping="order", on_end="stop"), 3)
    assert stop.online([2], 39.0).tolist() == [True]
    assert stop.next_change_s(2, 30.0) == 40.0  # the trace's end
    with pytest.raises(TraceEndedError) as info:
        stop.online([0], 40.0)
    message = str(info.value)
    assert "\n" not in message and "trace.csv" in message and "40" in message and "on_end" in message


def test_seeded_mapping_draws_distinct_devices_from_the_injected_generator(tmp_path):
    path = _csv(tmp_path, "client,start_s,end_s\n" + "".join(f"{d},{d},{d + 1}\n" for d in range(20)))
    a = _prepared(TraceAvailability(path), 8, seed=3)
    b = _prepared(TraceAvailability(path), 8, seed=3)
    c = _prepared(TraceAvailability(path), 8, seed=4)
    assert np.array_equal(a.device_of, b.device_of)
    assert len(set(a.device_of.tolist())) == 8  # without repeats: the trace has enough devices
    assert not np.array_equal(a.device_of, c.device_of)
    expected = np.random.default_rng(3).choice(20, size=8, replace=False)
    assert a.device_of.tolist() == expected.tolist()
    # client i sees device device_of[i]: online over [d, d+1)
    for i, d in enumerate(a.device_of):
        assert a.online([i], d + 0.5).tolist() == [True] and a.next_change_s(i, d + 0.5) == d + 1
    more = _prepared(TraceAvailability(path), 50)  # more clients than devices: repeats
    assert more.device_of.size == 50 and more.device_of.max() < 20


def test_order_mapping_needs_a_device_per_client(tmp_path):
    model = TraceAvailability(_csv(tmp_path, CSV), mapping="order")
    with pytest.raises(TraceError) as info:
        model.prepare(4, np.random.default_rng(0))
    assert "\n" not in str(info.value) and "4 clients" in str(info.value) and "3 trace devices" in str(info.value)


@pytest.mark.parametrize("text, words", [
    ("client,start_s,end_s\n0,10,5\n", ["line 2", "end_s", "allowed: end_s >= start_s"]),
    ("client,start_s,end_s\n0,0,10\n0,5,12\n", ["client 0", "overlaps", "disjoint"]),
    ("client,start_s,end_s\nphone,0,10\n", ["line 2", "'phone'", "integer >= 0"]),
    ("client,start_s,end_s\n-1,0,10\n", ["line 2", "'-1'", "integer >= 0"]),
    ("client,start_s,end_s\n0,zero,10\n", ["line 2", "start_s", "'zero'", "number of seconds"]),
    ("client,start_s,end_s\n0,0,inf\n", ["line 2", "end_s", "'inf'", "finite"]),
    ("client,start_s,end_s\n", ["no intervals", "at least one row"]),
    ("", ["line 1", "header", "client,start_s,end_s"]),
    ("device,from,to\n0,0,1\n", ["line 1", "header", "client,start_s,end_s"]),
    ("client,start_s,end_s\n0,0,10,3\n", ["line 2", "4 cells", "allowed: 3"]),
])
def test_bad_csv_is_one_line_naming_the_file_the_line_and_what_is_allowed(tmp_path, text, words):
    path = _csv(tmp_path, text)
    with pytest.raises(TraceError) as info:
        TraceAvailability(path)
    message = str(info.value)
    assert "\n" not in message and path in message
    for word in words:
        assert word in message, (word, message)


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(TraceError) as info:
        TraceAvailability(str(tmp_path / "none.csv"))
    assert "no such file" in str(info.value) and "\n" not in str(info.value)


# ----------------------------------------------------------------------------------------- flash
def _flash(tmp_path, devices):
    path = tmp_path / "user_behavior_tiny.json"
    path.write_text(json.dumps({str(i): {"guid": f"g{i}", "model": "m", "messages": "\n".join(lines)}
                                for i, lines in enumerate(devices)}, indent=4))
    return str(path)


def test_flash_ready_is_locked_on_wifi_and_charging(tmp_path):
    day = "2018-03-06"
    device0 = [f"{day} 08:00:00\twifi", f"{day} 08:00:00\tbattery_charged_on",
               f"{day} 08:10:00\tscreen_lock",            # ready from 08:10
               f"{day} 08:40:00\t55%",
               f"{day} 09:00:00\tscreen_unlock",          # until 09:00
               f"{day} 09:30:00\tscreen_lock",            # ready again 09:30
               f"{day} 10:00:00\t4g",                     # off wifi: until 10:00
               f"{day} 12:00:00\tscreen_on"]              # the device's trace ends at 12:00
    device1 = [f"{day} 07:00:00\twifi", f"{day} 07:00:00\tscreen_lock", f"{day} 07:30:00\tbattery_charged_on",
               f"{day} 11:00:00\tbattery_charged_off"]   # ready 07:30 - 11:00; its trace: 07:00 - 11:00
    model = _prepared(TraceAvailability(_flash(tmp_path, [device0, device1]), format="flash",
                                        mapping="order"), 2)
    h = 3600.0  # time 0 is midnight of the first day in the file
    assert model.online([0, 1], 8 * h).tolist() == [False, True]  # device 0 not yet locked
    assert model.online([0, 1], 8.5 * h).tolist() == [True, True]
    assert model.online([0, 1], 9.25 * h).tolist() == [False, True]
    assert model.online([0], 9.75 * h).tolist() == [True]
    assert model.next_change_s(0, 8 * h) == 8 * h + 600
    assert model.next_change_s(0, 8.5 * h) == 9 * h
    assert model.next_change_s(0, 9.75 * h) == 10 * h
    assert model.next_change_s(1, 10 * h) == 11 * h
    # device 0's trace spans 08:00 - 12:00 (4 h) and wraps over it: 12:20 is 08:20 again
    assert model.online([0], 12 * h + 1200).tolist() == [True]
    assert model.next_change_s(0, 10.5 * h) == 12 * h + 600
    # device 1 wraps over 07:00 - 11:00: at 11:00 it is 07:00 again (locked, on wifi, not charging)
    assert model.online([1], 11.25 * h).tolist() == [False]
    assert model.next_change_s(1, 11.25 * h) == 11.5 * h


def test_flash_an_open_ready_period_at_the_end_is_dropped_as_flash_does(tmp_path):
    day = "2018-03-06"
    device = [f"{day} 01:00:00\twifi", f"{day} 01:00:00\tbattery_charged_on", f"{day} 02:00:00\tscreen_lock"]
    ready = [f"{day} 01:00:00\twifi", f"{day} 01:00:00\tbattery_charged_on", f"{day} 01:00:00\tscreen_lock",
             f"{day} 03:00:00\tscreen_unlock"]
    model = _prepared(TraceAvailability(_flash(tmp_path, [device, ready]), format="flash", mapping="order"), 2)
    assert model.online([0], 1.5 * 3600).tolist() == [False]
    assert model.next_change_s(0, 0.0) == math.inf
    # that device alone is a trace in which nobody is ever online: refused
    with pytest.raises(TraceError, match="no device is ever online"):
        TraceAvailability(_flash(tmp_path, [device]), format="flash")


@pytest.mark.parametrize("devices, words", [
    ([["2018-03-06 01:00:00\tflying", "2018-03-06 02:00:00\twifi"]], ["key '0' message 1", "'flying'", "screen_lock"]),
    ([["yesterday\twifi", "2018-03-06 02:00:00\twifi"]], ["key '0' message 1", "YYYY-mm-dd HH:MM:SS"]),
    ([["2018-03-06 01:00:00\twifi"]], ["key '0'", "at least two messages"]),
])
def test_bad_flash_is_one_line(tmp_path, devices, words):
    path = _flash(tmp_path, devices)
    with pytest.raises(TraceError) as info:
        TraceAvailability(path, format="flash")
    assert "\n" not in str(info.value) and path in str(info.value)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


@pytest.mark.parametrize("content, words", [("{}", ["empty object", "non-empty"]), ("[1, 2]", ["list"]),
                                            ("{not json", ["not JSON"]),
                                            ('{"7": {"guid": 1}}', ["key '7'", "'messages' string"])])
def test_bad_flash_files_are_one_line(tmp_path, content, words):
    path = tmp_path / "f.json"
    path.write_text(content)
    with pytest.raises(TraceError) as info:
        TraceAvailability(str(path), format="flash")
    assert "\n" not in str(info.value)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


# -------------------------------------------------------------------------------------- fedscale
def _pickle(tmp_path, data, name="client_behave_trace"):
    path = tmp_path / name
    path.write_bytes(pickle.dumps(data))
    return str(path)


FEDSCALE = {
    # FedScale's format (docs: client_behave_trace): extra keys are ignored
    12: {"duration": 100, "inactive": [30, 80], "finish_time": 100, "active": [10, 60], "model": "SM-G9"},
    3: {"duration": 50, "inactive": [50], "finish_time": 50, "active": [0], "model": "x"},
    40: {"duration": 10, "inactive": [], "finish_time": 10, "active": [], "model": "x"},
}


def test_fedscale_clients_by_id_with_their_own_finish_time(tmp_path):
    model = _prepared(TraceAvailability(_pickle(tmp_path, FEDSCALE), format="fedscale", mapping="order"), 3)
    # order is by client id: 3, 12, 40
    assert model.online([0, 1, 2], 20.0).tolist() == [True, True, False]
    assert model.next_change_s(1, 20.0) == 30.0
    assert model.next_change_s(1, 30.0) == 60.0
    assert model.next_change_s(1, 85.0) == 110.0  # wraps at finish_time 100: back online at 100 + 10
    assert model.next_change_s(0, 20.0) == math.inf  # online over its whole span: never changes
    assert model.next_change_s(2, 5.0) == math.inf  # no interval: never online
    assert model.online([1], 125.0).tolist() == [True]


class _Crafted:
    """Unpickling this would call os.system and create a file."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        import os
        return (os.system, (f"touch {self.target}",))


def test_a_crafted_pickle_is_refused_without_running_anything(tmp_path):
    target = tmp_path / "pwned"
    path = _pickle(tmp_path, {1: {"active": [0], "inactive": [1], "finish_time": 2, "x": _Crafted(target)}})
    with pytest.raises(TraceError) as info:
        TraceAvailability(path, format="fedscale")
    message = str(info.value)
    assert "\n" not in message and path in message and "refuses global" in message and "system" in message
    assert "plain data" in message
    assert not target.exists()
    # the same bytes through the standard unpickler do run it: the test's pickle is a real threat
    with open(path, "rb") as f:
        pickle.load(f)
    assert target.exists()


@pytest.mark.parametrize("data, words", [
    ({}, ["empty dict"]),
    ([1, 2], ["list", "client id"]),
    ({1: {"active": [0, 5], "inactive": [3], "finish_time": 9}}, ["key 1", "lengths 2 and 1"]),
    ({1: {"active": [5], "inactive": [3], "finish_time": 9}}, ["key 1 interval 0", "inactive got 3 < active 5"]),
    ({1: {"active": [0, 2], "inactive": [3, 4], "finish_time": 9}}, ["key 1", "overlaps", "disjoint"]),
    ({1: {"active": ["soon"], "inactive": [3], "finish_time": 9}}, ["key 1 active[0]", "'soon'"]),
    ({1: {"active": [0], "inactive": [30], "finish_time": 9}}, ["key 1 interval 0", "finish_time 9"]),
    ({1: {"active": [0], "inactive": [3]}}, ["key 1", "'finish_time'"]),
    ({1.5: {"active": [0], "inactive": [3], "finish_time": 9}}, ["key 1.5", "float", "integer (64 bits) or a string"]),
])
def test_bad_fedscale_is_one_line(tmp_path, data, words):
    path = _pickle(tmp_path, data)
    with pytest.raises(TraceError) as info:
        TraceAvailability(path, format="fedscale")
    assert "\n" not in str(info.value) and path in str(info.value)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_a_file_that_is_not_a_pickle_is_one_line(tmp_path):
    path = tmp_path / "t.pkl"
    path.write_bytes(b"client,start_s\n")
    with pytest.raises(TraceError) as info:
        TraceAvailability(str(path), format="fedscale")
    assert "\n" not in str(info.value) and "not a readable pickle" in str(info.value)


# ---------------------------------------------------------------------------------------- markov
def _online_fraction(model, n, horizon_s):
    """Time-average online fraction over [0, horizon_s], walking each client's changes."""
    total = 0.0
    for c in range(n):
        t, on = 0.0, bool(model.online([c], 0.0)[0])
        while t < horizon_s:
            nxt = min(model.next_change_s(c, t), horizon_s)
            total += (nxt - t) if on else 0.0
            t, on = nxt, not on
    return total / (n * horizon_s)


@pytest.mark.slow
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), mean_on_s=st.floats(10, 5000), mean_off_s=st.floats(10, 5000))
def test_markov_long_run_online_fraction_is_on_over_on_plus_off(seed, mean_on_s, mean_off_s):
    n, cycles = 20, 200
    model = _prepared(MarkovAvailability(mean_on_s, mean_off_s), n, seed)
    fraction = _online_fraction(model, n, cycles * (mean_on_s + mean_off_s))
    expected = mean_on_s / (mean_on_s + mean_off_s)
    # Alternating renewal with exponential on (mean a) and off (mean b) periods: over m cycles the
    # fraction's variance is about 2 a^2 b^2 / (m (a+b)^4) (delta method on sum(on)/sum(on+off));
    # m = n * cycles = 4000 independent cycles here; 5 standard deviations, plus a little for the
    # finite horizon's cut cycle.
    sd = math.sqrt(2.0) * mean_on_s * mean_off_s / ((mean_on_s + mean_off_s) ** 2 * math.sqrt(n * cycles))
    assert abs(fraction - expected) <= 5 * sd + 1.0 / cycles, (fraction, expected, sd)


def test_markov_diurnal_brings_clients_online_near_the_peak_hour():
    n = 200
    model = _prepared(MarkovAvailability(1800.0, 3600.0, diurnal_amplitude=0.9, peak_hour=20.0), n, 1)
    days = 3
    near_peak = far = 0
    for day in range(days):
        near_peak += int(model.online(np.arange(n), day * 86400 + 21 * 3600).sum())
        far += int(model.online(np.arange(n), day * 86400 + 9 * 3600).sum())
    # on-rate at the peak (1.9/b) against 12 h off it (0.1/b): many more online in the evening
    assert near_peak > 1.5 * far, (near_peak, far)


def test_markov_is_seeded_and_independent_of_the_order_clients_are_asked():
    a = _prepared(MarkovAvailability(100.0, 300.0, diurnal_amplitude=0.3), 6, seed=9)
    b = _prepared(MarkovAvailability(100.0, 300.0, diurnal_amplitude=0.3), 6, seed=9)
    late = a.online(np.arange(6), 5000.0)
    for t in (10.0, 2000.0, 5000.0):
        b.online(np.arange(6)[::-1], t)
    assert np.array_equal(late, b.online(np.arange(6), 5000.0))
    assert [a.next_change_s(c, 123.0) for c in range(6)] == [b.next_change_s(c, 123.0) for c in range(6)]


@pytest.mark.parametrize("params, words", [
    ({"mean_on_s": 0, "mean_off_s": 10}, ["mean_on_s", "0"]),
    ({"mean_on_s": 10, "mean_off_s": 10, "diurnal_amplitude": 1.0}, ["diurnal_amplitude", "< 1"]),
    ({"mean_on_s": 10, "mean_off_s": 10, "peak_hour": 24}, ["peak_hour", "< 24"]),
])
def test_markov_bad_parameters_are_one_line(params, words):
    with pytest.raises(ValueError) as info:
        MarkovAvailability(**params)
    assert "\n" not in str(info.value)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_trace_parameters_are_checked():
    with pytest.raises(ValueError) as info:
        TraceAvailability("x.csv", format="parquet")
    assert "\n" not in str(info.value) and "format" in str(info.value) and "fedscale" in str(info.value)


# ----------------------------------------------------------------------------- kind & conformance
def test_the_kind_is_registered_and_listed():
    assert AVAILABILITY.names() == ["always", "markov", "trace"]
    text = listing("availability")
    assert "always" in text and "markov" in text and "mean_on_s" in text and "on_end='wrap'" in text


def test_every_built_in_passes_the_conformance_check(tmp_path):
    assert "state flips at the change" in check_availability(AlwaysAvailable())
    check_availability(MarkovAvailability(500.0, 900.0, diurnal_amplitude=0.5))
    check_availability(TraceAvailability(_csv(tmp_path, CSV)), times_s=(0.0, 4.0, 10.0, 33.0, 95.0))
    check_availability(TraceAvailability(_csv(tmp_path, CSV), on_end="stop"), times_s=(0.0, 4.0, 10.0, 33.0))
    check_availability(TraceAvailability(_pickle(tmp_path, FEDSCALE), format="fedscale"),
                       times_s=(0.0, 20.0, 85.0, 130.0))


def test_the_conformance_check_catches_a_wrong_next_change():
    class Liar(AlwaysAvailable):
        def next_change_s(self, client, t_s):
            return t_s + 1.0  # claims a flip that never happens

    with pytest.raises(AssertionError) as info:
        check_availability(Liar())
    assert "state flips at the change" in str(info.value)


def test_the_conformance_check_catches_answers_that_depend_on_earlier_questions():
    class Drifting(AlwaysAvailable):
        """Online until it has been asked three times: a resumed run would see other states."""

        asked = 0

        def online(self, clients, t_s):
            self.asked += 1
            return np.full(len(np.atleast_1d(clients)), self.asked < 3, dtype=bool)

    with pytest.raises(AssertionError) as info:
        check_availability(Drifting(), counts=(1,), times_s=(0.0, 1.0))
    assert "answers independent of earlier questions" in str(info.value)
