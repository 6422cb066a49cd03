"""Split algorithms on edge servers (``server.edge``): the sequential server's one w_s follows its
clients from edge to edge over the backhaul, and the server's codec work runs where the server
steps on the activations (the client's edge, or the cloud for a concatenated step).

The cells are scripted (a static two-cell network: each client stays in the cell it is given); the
radio is the one-cell radio of :mod:`split_protocol_helpers`, the same whatever the cells, so two
runs differ only in what the edges do.  The server part is Linear(18, 3): w_s is 228 bytes.
"""
from __future__ import annotations

import numpy as np
import pytest

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms._exec.compressed import CompressionPlan
from sfl_sim.algorithms.base import state_bytes
from sfl_sim.channel import Cell, EqualAllocation, FixedDistancePlacement, NoShadowing, ShannonRate, TR36814Macro
from sfl_sim.channel.network.protocols import HandoverEvent
from sfl_sim.compression import Quantize
from sfl_sim.engine import RoundContext, Simulator
from sfl_sim.engine.edge import EdgeServers, Migrate
from tests.algorithms.split.split_protocol_helpers import LINEAR_18_3_BYTES, run_round
from tests.helpers import ScriptedCells, tiny_setup

BACKHAUL_BPS = 1e6
LATENCY_S = 0.25
EDGE_FLOPS_PER_S = 1e7


def _sim(cells: list[int] | None, algo, events=None, cloud_flops_per_s: float = 1e7) -> Simulator:
    """len(cells) clients at 100 m, 1e5 FLOP/s each; an edge per cell (None: no edge, one server)."""
    n = 3 if cells is None else len(cells)
    rng = np.random.default_rng(0)
    cell = Cell(FixedDistancePlacement([100.0] * n), TR36814Macro(), NoShadowing(), ShannonRate(), EqualAllocation(),
                n_clients=n, tx_power_w=0.2, noise_psd_dbm_per_hz=-174.0, uplink_bandwidth_hz=1e6,
                placement_rng=rng, shadowing_rng=rng)
    edge = None if cells is None else EdgeServers(EDGE_FLOPS_PER_S, BACKHAUL_BPS, LATENCY_S, Migrate(),
                                                  algo.handover_state_bytes(), 0)
    return Simulator(cell, np.full(n, 1e5), cloud_flops_per_s, edge=edge,
                     network=None if cells is None else ScriptedCells(cells, events))


def _v2(n_clients: int, take_turns: bool = True, local_iterations: int = 2):
    setup = tiny_setup(n_clients=n_clients, samples_per_client=8, batch_size=4 * n_clients,
                       local_iterations=local_iterations)
    return ALGORITHMS.get("splitfed_v2")(setup, sequential_clients=take_turns)


def _round(cells: list[int] | None, take_turns: bool = True, events=None) -> tuple[float, dict]:
    n = 3 if cells is None else len(cells)
    algo = _v2(n, take_turns)
    sim = _sim(cells, algo, events)
    return run_round(sim, algo, list(range(n))), sim.counters.by_kind


def test_w_s_moves_at_each_change_of_edge_in_the_order_and_the_round_waits_for_it() -> None:
    """SplitFedV2, clients taking turns (T = 2 each): the order is client 0's two steps, client 1's,
    client 2's; in cells 0, 1, 0 the one w_s moves twice (0 -> 1, 1 -> 0), each on the critical path."""
    move_s = 8 * LINEAR_18_3_BYTES / BACKHAUL_BPS + LATENCY_S
    assert state_bytes(_v2(3).server_model) == LINEAR_18_3_BYTES
    same, same_kinds = _round([0, 0, 0])
    moved, kinds = _round([0, 1, 0])
    assert moved - same == pytest.approx(2 * move_s, abs=1e-9)
    assert kinds["backhaul/server_model"] == 2 * LINEAR_18_3_BYTES
    assert "backhaul/server_model" not in same_kinds
    # without an edge: no move, no backhaul at all; the edges at the cloud's speed change nothing else
    plain, plain_kinds = _round(None)
    assert plain == pytest.approx(same, abs=1e-9) and not any(k.startswith("backhaul/") for k in plain_kinds)


def test_clients_in_parallel_move_w_s_at_every_change_of_cell_in_the_order() -> None:
    """Clients in parallel (T = 2): the order is (t0, c0), (t0, c1), (t1, c0), (t1, c1), cells 0, 1, 0, 1:
    three moves; a client's round waits for them, so the round is longer by at least one."""
    move_s = 8 * LINEAR_18_3_BYTES / BACKHAUL_BPS + LATENCY_S
    same, _ = _round([0, 0], take_turns=False)
    moved, kinds = _round([0, 1], take_turns=False)
    assert kinds["backhaul/server_model"] == 3 * LINEAR_18_3_BYTES
    assert moved >= same + move_s


def test_sequential_handover_moves_no_state_and_w_s_follows_the_client() -> None:
    """A sequential server's client hands over no server-side state (the one w_s follows the order);
    per_client's copy moves with its client."""
    assert _v2(2).handover_state_bytes() == 0
    assert ALGORITHMS.get("splitfed_v1")(tiny_setup()).handover_state_bytes() == LINEAR_18_3_BYTES
    # both in cell 0; client 1 hands over to cell 1 while it waits for its turn: its migration moves
    # 0 bytes (the latency), then w_s moves 0 -> 1 for its first step
    _, kinds = _round([0, 0], events=[HandoverEvent(0.001, 1, 0, 1, "a3", 0.0)])
    assert kinds["migrations"] == 1 and kinds.get("backhaul/migration", 0) == 0
    assert kinds["backhaul/server_model"] == LINEAR_18_3_BYTES


def _compressed(name: str):
    setup = tiny_setup()
    setup.compression = CompressionPlan.of({"activations": (Quantize(8), False), "gradients": (Quantize(4), False)},
                                           seed=0)
    return ALGORITHMS.get(name)(setup)


def _codec_placement(monkeypatch) -> list:
    """(kind, client) of every server compute of codec work."""
    seen: list = []
    real = RoundContext.compute

    def spy(self, who, flops, what="compute", *, client=None):
        if what in ("decompress_activations", "compress_gradients"):
            seen.append((what, client))
        return real(self, who, flops, what, client=client)

    monkeypatch.setattr(RoundContext, "compute", spy)
    return seen


def test_the_server_codec_work_runs_on_the_clients_edge(monkeypatch) -> None:
    """SplitFedV1 with compressed activations and gradients: the decode and the encode run on the
    client's edge, with its server step, so a cloud a million times slower changes nothing."""
    seen = _codec_placement(monkeypatch)
    times = []
    for cloud_flops_per_s in (1e7, 10.0):
        algo = _compressed("splitfed_v1")
        times.append(run_round(_sim([0, 1], algo, cloud_flops_per_s=cloud_flops_per_s), algo, [0, 1]))
    assert times[0] == times[1]
    assert sorted(seen[:4]) == [("compress_gradients", 0), ("compress_gradients", 1),
                                ("decompress_activations", 0), ("decompress_activations", 1)]


def test_a_concatenated_steps_codec_work_runs_on_the_cloud(monkeypatch) -> None:
    """SCALA steps on the cloud: the activations are decoded there, after the backhaul."""
    seen = _codec_placement(monkeypatch)
    algo = _compressed("scala")
    run_round(_sim([0, 1], algo), algo, [0, 1])
    assert {client for _, client in seen} == {None} and len(seen) == 4
