"""Device capability traces: the CSV and FedScale readers, the client mapping, traced link rates in
the engine, one-line bad input."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.clients.availability import TraceError
from sfl_sim.clients.availability.capability import client_capability, read_capability
from sfl_sim.engine import Simulator


def _file(tmp_path, text, name="cap.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_reader_and_order_mapping(tmp_path) -> None:
    trace = read_capability(_file(tmp_path, "client,compute_flops_per_s,downlink_bps,uplink_bps\n"
                                            "0,1e9,,5e6\n1,2e9,3e7,\n"), "csv")
    assert trace.devices == ["0", "1"] and trace.compute_flops_per_s.tolist() == [1e9, 2e9]
    assert trace.uplink_bps[0] == 5e6 and math.isnan(trace.uplink_bps[1])
    assert math.isnan(trace.downlink_bps[0]) and trace.downlink_bps[1] == 3e7
    got = client_capability(trace, 2, "order", np.random.default_rng(0))
    assert got.compute_flops_per_s.tolist() == [1e9, 2e9]
    seeded = client_capability(trace, 5, "seeded", np.random.default_rng(0))
    assert set(seeded.device_of.tolist()) <= {0, 1} and len(seeded.compute_flops_per_s) == 5


def test_ms_per_sample_becomes_flops_per_s(tmp_path) -> None:
    path = tmp_path / "cap.pkl"
    path.write_bytes(pickle.dumps({3: {"computation": 40.0, "communication": 250.0}}))
    trace = read_capability(path, "fedscale")
    # 2e6 forward FLOPs per sample in 40 ms: 5e7 FLOP/s; 250 kbit/s both ways
    got = client_capability(trace, 1, "order", np.random.default_rng(0), forward_flops_per_sample=2e6)
    assert got.compute_flops_per_s.tolist() == [5e7]
    assert got.uplink_bps.tolist() == [250e3] and got.downlink_bps.tolist() == [250e3]


@pytest.mark.parametrize("text, words", [
    ("client,flops\n0,1e9\n", ["line 1", "client,compute_flops_per_s"]),
    ("client,compute_flops_per_s\n0,1e9\n0,2e9\n", ["line 3", "client 0 again"]),
    ("client,compute_flops_per_s\n0,0\n", ["line 2", "compute_flops_per_s got '0'", "[1, 1e+21] FLOP/s"]),
    ("client,compute_flops_per_s,uplink_bps\n0,1e9,fast\n", ["line 2", "uplink_bps got 'fast'"]),
    ("client,compute_flops_per_s\nx,1e9\n", ["line 2", "client got 'x'"]),
    ("client,compute_flops_per_s\n", ["no devices"]),
])
def test_bad_csv_is_one_line(tmp_path, text, words) -> None:
    with pytest.raises(TraceError) as info:
        read_capability(_file(tmp_path, text), "csv")
    line = str(info.value)
    assert "\n" not in line and all(w in line for w in words), line


def test_bad_fedscale_and_mapping_are_one_line(tmp_path) -> None:
    path = tmp_path / "cap.pkl"
    path.write_bytes(pickle.dumps({1: {"computation": 5.0}}))
    with pytest.raises(TraceError, match="'communication'"):
        read_capability(path, "fedscale")
    path.write_bytes(pickle.dumps(np.float64(1.0)))  # a global (numpy's scalar): refused, nothing loaded
    with pytest.raises(TraceError, match="refuses global"):
        read_capability(path, "fedscale")
    trace = read_capability(_file(tmp_path, "client,compute_flops_per_s\n0,1e9\n"), "csv")
    with pytest.raises(TraceError, match="mapping 'order' got 3 clients for 1 devices"):
        client_capability(trace, 3, "order", np.random.default_rng(0))


def test_traced_rates_replace_the_channels_in_the_engine() -> None:
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([100.0, 300.0]), TR36814Macro(), NoShadowing(), ShannonRate(),
                EqualAllocation(), n_clients=2, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0,
                uplink_bandwidth_hz=1e6, downlink_bandwidth_hz=1e6, server_tx_power_w=10.0,
                placement_rng=rng, shadowing_rng=rng)
    sim = Simulator(cell, np.ones(2), 1.0, downlink_mode="broadcast", uplink_bps=np.array([8000.0, np.nan]),
                    downlink_bps=np.array([np.nan, 4000.0]))
    seen = {}

    def round_process(ctx):
        channel_up = ctx.uplink_rate_bps(1)
        start = ctx.now_s
        yield ctx.broadcast(1000, "model")  # 8000 bits at min(channel, 4000 bit/s) = 2 s
        seen["broadcast_s"] = ctx.now_s - start
        start = ctx.now_s
        yield ctx.upload(0, 1000, "x")  # 8000 bits at the traced 8000 bit/s: 1 s
        seen["upload_s"] = ctx.now_s - start
        start = ctx.now_s
        yield ctx.download(1, 500, "y")  # 4000 bits at the traced 4000 bit/s: 1 s
        seen["download_s"] = ctx.now_s - start
        seen["channel_up"] = channel_up

    sim.run_round(round_process, [0, 1])
    assert seen["broadcast_s"] == 2.0 and seen["upload_s"] == 1.0 and seen["download_s"] == 1.0
    assert seen["channel_up"] > 8000.0  # client 1 keeps the channel's (much faster) rate
