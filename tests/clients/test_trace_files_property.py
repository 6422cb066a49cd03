"""Property: any trace file (CSV, FLASH JSON, FedScale pickle) is read or refused in one line.

Hypothesis writes files near the formats (right headers and keys with odd values, wrong ones,
garbage) and every reader must either return devices with finite numbers or raise a
:class:`~sfl_sim.clients.availability.files.TraceError` (a ``UserError``) of one bounded line that
names the file — never another exception (an internal error).

``SFL_SIM_PROPERTY_EXAMPLES=500 python -m pytest tests/clients/test_trace_files_property.py`` runs
more examples.
"""
from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sfl_sim.clients.availability.capability import read_capability
from sfl_sim.clients.availability.files import TraceError
from sfl_sim.clients.availability.readers import read_trace

pytestmark = pytest.mark.slow  # hypothesis runs dozens of files per test
EXAMPLES = int(os.environ.get("SFL_SIM_PROPERTY_EXAMPLES", "20"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

NUMBERS = st.one_of(st.integers(-10, 10**12), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0, 1e-300, 1e300, 3_000_000, 10**9]))
CELLS = st.one_of(NUMBERS.map(str), st.text(max_size=8), st.sampled_from(["²", "", " ", "nan", "-inf", "1e999"]))
HEADERS = st.sampled_from(["client,start_s,end_s", "client,compute_flops_per_s",
                           "client,compute_flops_per_s,uplink_bps",
                           "client,compute_flops_per_s,uplink_bps,downlink_bps", "a,b,c", ""])
CSV_TEXT = st.builds(lambda header, rows: "\n".join([header, *(",".join(r) for r in rows)]) + "\n",
                     HEADERS, st.lists(st.lists(CELLS, min_size=1, max_size=4), max_size=6))
STAMPS = st.one_of(st.sampled_from(["2018-03-06 08:00:00", "2018-03-06 09:30:00", "2018-03-05 23:59:59",
                                    "0001-01-01 00:00:00", "9999-12-31 23:59:59", "not a time"]), st.text(max_size=6))
STATES = st.sampled_from(["wifi", "screen_on", "screen_off", "screen_lock", "screen_unlock", "battery_low", "x", ""])
MESSAGES = st.lists(st.tuples(STAMPS, STATES).map("\t".join), max_size=6).map("\n".join)
FLASH = st.dictionaries(st.text(max_size=4), st.one_of(
    st.fixed_dictionaries({"guid": st.text(max_size=4), "messages": MESSAGES}),
    st.fixed_dictionaries({"messages": st.one_of(NUMBERS, st.none())}),
    NUMBERS), max_size=4)
VALUES = st.one_of(NUMBERS, st.none(), st.text(max_size=4), st.lists(NUMBERS, max_size=4))
FEDSCALE_ENTRY = st.one_of(
    st.fixed_dictionaries({"active": st.lists(NUMBERS, max_size=4), "inactive": st.lists(NUMBERS, max_size=4),
                           "finish_time": NUMBERS}),
    st.fixed_dictionaries({"computation": NUMBERS, "communication": NUMBERS}),
    st.dictionaries(st.text(max_size=6), VALUES, max_size=3), VALUES)
FEDSCALE = st.one_of(st.dictionaries(st.one_of(st.integers(-5, 10**7), st.text(max_size=4)), FEDSCALE_ENTRY,
                                     max_size=4), VALUES)


def _outcome(path, reader) -> None:
    """Read ``path``: devices with finite numbers, or one line naming the file."""
    try:
        got = reader(path)
    except TraceError as exc:
        line = str(exc)
        assert "\n" not in line and str(path) in line and len(line) < 800 + len(str(path)), line
        return
    for device in got if isinstance(got, list) else [got]:
        for value in vars(device).values():
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                assert not np.isinf(value).any(), (path, device)


@SETTINGS
@given(text=CSV_TEXT)
def test_any_csv_is_read_or_refused_in_one_line(tmp_path, text) -> None:
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    _outcome(path, lambda p: read_trace(p, "csv"))
    _outcome(path, lambda p: read_capability(p, "csv"))


@SETTINGS
@given(data=FLASH)
def test_any_flash_json_is_read_or_refused_in_one_line(tmp_path, data) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    _outcome(path, lambda p: read_trace(p, "flash"))


@SETTINGS
@given(data=FEDSCALE)
def test_any_fedscale_pickle_is_read_or_refused_in_one_line(tmp_path, data) -> None:
    path = tmp_path / "client_trace"
    path.write_bytes(pickle.dumps(data))
    _outcome(path, lambda p: read_trace(p, "fedscale"))
    _outcome(path, lambda p: read_capability(p, "fedscale"))
