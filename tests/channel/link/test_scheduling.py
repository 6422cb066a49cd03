"""The scheduling policies as pure functions, the resource grid, and their bad input in one line."""
from __future__ import annotations

import numpy as np
import pytest

from sfl_sim.channel import SCHEDULERS, MaxRate, ProportionalFair, ResourceGrid, RoundRobin, check_component
from sfl_sim.channel.link.scheduling import needed_rbs
from sfl_sim.config import ConfigError
from sfl_sim.config.loading import validate


def test_the_grid_of_20_mhz_at_30_khz():
    grid = ResourceGrid(1, 20e6)
    assert (grid.scs_hz, grid.slot_s, grid.n_rb, grid.rb_hz) == (30e3, 0.5e-3, 51, 360e3)
    assert grid.hz_per_rb == 20e6 / 51  # guard bands spread over the RBs
    assert ResourceGrid(0, 20e6).n_rb == 106 and ResourceGrid(2, 100e6).n_rb == 135


@pytest.mark.parametrize(("mu", "bandwidth_hz", "says"), [
    (3, 20e6, "cell.numerology: got 3; allowed: 0, 1, 2"),
    (1, 7e6, "bandwidth_hz: got 7000000.0 at 30000 Hz"),
    (2, 5e6, "bandwidth_hz: got 5000000.0 at 60000 Hz"),
])
def test_a_grid_without_a_row_is_one_line(mu, bandwidth_hz, says):
    with pytest.raises(ValueError, match=says) as info:
        ResourceGrid(mu, bandwidth_hz)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("cell", "says"), [
    ({"numerology": 3}, "cell.numerology: got 3; allowed: 0, 1 or 2"),
    ({"scheduler": "round_robin", "uplink_bandwidth_hz": 7e6},
     "cell.uplink_bandwidth_hz: got 7000000.0; allowed: a channel bandwidth of TS 38.101-1 Table 5.3.2-1 at 30 kHz"),
    ({"scheduler": "round_robin", "downlink": {"mode": "unicast", "bandwidth_hz": 12e6}},
     "cell.downlink.bandwidth_hz: got 12000000.0"),
])
def test_scenario_grid_errors_are_one_line(cell, says):
    with pytest.raises(ConfigError) as info:
        validate({"cell": cell})
    assert str(info.value).startswith(says) and "\n" not in str(info.value)


@pytest.mark.parametrize(("cell", "says"), [
    ({"numerology": 0, "power_control": {"name": "open_loop", "subcarrier_spacing_hz": 60000}},
     "cell.power_control.subcarrier_spacing_hz: got 60000; allowed: 15000 (cell.numerology 0"),
    ({"numerology": 0, "power_control": "open_loop"},  # its default, 30 kHz, is numerology 1's
     "cell.power_control.subcarrier_spacing_hz: got 30000.0; allowed: 15000 (cell.numerology 0"),
    ({"power_control": {"name": "open_loop", "subcarrier_spacing_hz": 15000}},
     "cell.power_control.subcarrier_spacing_hz: got 15000; allowed: 30000 (cell.numerology 1"),
])
def test_one_numerology_for_the_cell(cell, says):
    with pytest.raises(ConfigError) as info:
        validate({"cell": cell})
    assert str(info.value).startswith(says) and "\n" not in str(info.value)


@pytest.mark.parametrize("cell", [
    {"power_control": "open_loop"},
    {"numerology": 0, "power_control": {"name": "open_loop", "subcarrier_spacing_hz": 15e3}},
    {"numerology": 2, "power_control": "fixed"},
])
def test_agreeing_numerologies_pass(cell):
    validate({"cell": cell})  # no error


def test_static_needs_no_grid_row():
    assert validate({"cell": {"uplink_bandwidth_hz": 7e6}}).cell.scheduler.name == "static"


@pytest.mark.parametrize(("name", "params", "says"), [
    ("proportional_fair", {"time_constant_slots": 0.0}, "time_constant_slots: got 0.0"),
    ("round_robin", {"k2_slots": -1}, "k2_slots: got -1"),
    ("max_rate", {"scheduling_request_slots": -2}, "scheduling_request_slots: got -2"),
    ("round_robin", {"fidelity": "tick"}, "fidelity: got 'tick'"),
    # physical ranges (issue 50 item 8): a 1e12-slot request is a 1.5e9 s round, .inf a frozen average
    ("round_robin", {"scheduling_request_slots": 10**12}, "scheduling_request_slots: got 1000000000000; .*<= 640"),
    ("max_rate", {"buffer_status_report_slots": 641}, "buffer_status_report_slots: got 641"),
    ("round_robin", {"k2_slots": 10**6}, "k2_slots: got 1000000"),
    ("proportional_fair", {"time_constant_slots": float("inf")}, "time_constant_slots: got inf; allowed: a finite"),
    ("proportional_fair", {"time_constant_slots": 1e7}, "time_constant_slots: got 10000000.0"),
])
def test_bad_scheduler_parameters_are_one_line(name, params, says):
    with pytest.raises(ValueError, match=says) as info:
        SCHEDULERS.create(name, **params)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["static", "round_robin", "proportional_fair", "max_rate"])
def test_every_builtin_passes_the_conformance_check(name):
    assert check_component("scheduler", SCHEDULERS.create(name))["checks"]


class _Greedy:
    """A broken plug-in: the whole grid to everybody."""

    dynamic = True
    fidelity = "fluid"
    fluid_equal_shares = False

    def grant_latency_slots(self):
        return 0

    def fluid_rbs(self, n_rb, rate_per_rb_bps):
        return np.full(np.size(rate_per_rb_bps), float(n_rb))

    def grant_rbs(self, n_rb, need_rb, rate_per_rb_bps, average_bps, turn):
        return np.where(np.asarray(need_rb) > 0, n_rb + 1, 0)

    def average_bps(self, average_bps, served_bps):
        return average_bps


class _Careless(_Greedy):
    """A broken plug-in: one RB to every client, data or not."""

    def grant_rbs(self, n_rb, need_rb, rate_per_rb_bps, average_bps, turn):
        return np.ones(np.size(need_rb), dtype=int)


class _Negative(_Greedy):
    def grant_rbs(self, n_rb, need_rb, rate_per_rb_bps, average_bps, turn):
        return -np.ones(np.size(need_rb), dtype=int)


class _FalseEqual(MaxRate):
    """A broken plug-in: says its fluid split is n_rb / n each, but gives the band to the best."""

    fluid_equal_shares = True


@pytest.mark.parametrize(("plugin", "says"), [
    (_FalseEqual(), r"fails check 'fluid_rbs n_rb / n each \(fluid_equal_shares\)'"),
    (_Greedy(), "fails check 'grant_rbs within the grid'"),
    (_Careless(), "fails check 'no RBs to an empty buffer'"),
    (_Negative(), "fails check 'grant_rbs >= 0'"),
])
def test_the_conformance_check_catches_a_broken_plugin(plugin, says):
    with pytest.raises(AssertionError, match=says) as info:
        check_component("scheduler", plugin)
    assert "\n" not in str(info.value)


@pytest.mark.slow  # imports the run builder (torch)
def test_a_broken_plugin_is_refused_when_the_run_is_built():
    from sfl_sim.runs.build import build_scheduler

    cfg = validate({"cell": {"scheduler": "tests.channel.link.test_scheduling:_Greedy"}})
    with pytest.raises(ConfigError, match=r"^cell.scheduler: .*scheduler component .* fails check "
                                          r"'grant_rbs within the grid'") as info:
        build_scheduler(cfg)
    assert "\n" not in str(info.value)


def test_round_robin_splits_equally_with_a_rotating_remainder():
    rr = RoundRobin()
    need = np.array([100, 0, 100, 100])
    rates = np.ones(4)
    grants = [rr.grant_rbs(11, need, rates, np.zeros(4), turn).tolist() for turn in range(3)]
    # 11 RBs, three clients with data: 3 each and 2 left, one each to the first two from position turn
    assert grants == [[4, 0, 4, 3], [3, 0, 4, 4], [4, 0, 3, 4]]
    # a capped client's leftover goes to the others
    assert rr.grant_rbs(11, np.array([1, 100, 100]), np.ones(3), np.zeros(3), 0).tolist() == [1, 5, 5]
    # more clients than RBs: one each from the turn's position
    assert rr.grant_rbs(2, np.array([5, 5, 5]), np.ones(3), np.zeros(3), 1).tolist() == [0, 1, 1]
    assert rr.fluid_rbs(51, np.ones(3)).tolist() == [17.0, 17.0, 17.0]


def test_max_rate_and_proportional_fair_order():
    need = np.array([30, 30, 30])
    rates = np.array([1.0, 3.0, 2.0])
    assert MaxRate().grant_rbs(51, need, rates, np.zeros(3), 0).tolist() == [0, 30, 21]
    assert MaxRate().fluid_rbs(51, rates).tolist() == [0.0, 51.0, 0.0]
    # PF: metrics 1/1, 3/6, 2/1 -> client 2, then 0, then 1
    pf = ProportionalFair()
    assert pf.grant_rbs(51, need, rates, np.array([1.0, 6.0, 1.0]), 0).tolist() == [21, 0, 30]
    assert pf.average_bps(np.array([10.0]), np.array([110.0])).tolist() == [pytest.approx(11.0)]


def test_needed_rbs_rounds_up_and_ignores_empty_or_dead_clients():
    assert needed_rbs(np.array([0.0, 180.0, 181.0, 50.0]), np.array([1e3, 360e3, 360e3, 0.0]), 0.5e-3).tolist() == \
        [0, 1, 2, 0]


def test_power_control_counts_the_granted_rbs():
    from sfl_sim.channel.link.resource_grid import share_resource_blocks

    for mu, bandwidth_hz in ((0, 20e6), (1, 20e6), (1, 100e6), (2, 40e6)):
        grid = ResourceGrid(mu, bandwidth_hz)
        m = np.arange(1, grid.n_rb + 1)
        assert share_resource_blocks(m * grid.hz_per_rb, grid.scs_hz, bandwidth_hz).tolist() == m.tolist()


class _PlainSlot:
    """A scheduler of one's own, a plain class (no ``params``), stating the slot form: the whole
    grid, in a slot, to the clients with data in index order (each up to its need)."""

    dynamic = True
    fidelity = "slot"
    fluid_equal_shares = False

    def grant_latency_slots(self):
        return 0

    def fluid_rbs(self, n_rb, rate_per_rb_bps):
        out = np.zeros(np.size(rate_per_rb_bps))
        out[:1] = n_rb
        return out

    def grant_rbs(self, n_rb, need_rb, rate_per_rb_bps, average_bps, turn):
        need = np.asarray(need_rb, dtype=np.int64)
        grant = np.zeros(need.shape, dtype=np.int64)
        left = int(n_rb)
        for k in range(need.size):
            grant[k] = min(int(need[k]), left)
            left -= int(grant[k])
        return grant

    def average_bps(self, average_bps, served_bps):
        return average_bps


class _NoFidelity(_PlainSlot):
    """A plug-in that does not say when the engine should ask it."""

    fidelity = None


def test_a_plain_class_stating_the_slot_form_runs_slot():
    import simpy

    from sfl_sim.engine.band import open_band

    grid = ResourceGrid(1, 20e6)
    link_at = lambda ids, hz, fading: (np.asarray(hz, dtype=float), np.zeros(ids.size), np.ones(ids.size))  # noqa: E731
    env = simpy.Environment()
    band = open_band(env, _PlainSlot(), grid, link_at, lambda ids: np.ones(ids.size), lambda *a: None)
    done = band.put(0, 2.5 * 20e6 * grid.slot_s)  # two and a half slots of the whole grid at 1 bit/s/Hz
    env.run(done)
    assert env.now == pytest.approx(3 * grid.slot_s)  # slot form: the end of the third slot (fluid: 2.5 slots)


@pytest.mark.parametrize(("plugin", "says"), [
    (_NoFidelity(), r"fails check 'fidelity one of fluid, slot': got None"),
])
def test_the_conformance_check_reads_what_the_band_reads(plugin, says):
    with pytest.raises(AssertionError, match=says):
        check_component("scheduler", plugin)


@pytest.mark.slow  # imports the run builder (torch)
@pytest.mark.parametrize(("name", "says"), [
    ("_PlainSlot", None),
    ("_NoFidelity", r"^cell.scheduler: .*fails check 'fidelity one of fluid, slot'"),
    ("_Bare", r"^cell.scheduler: .*_Bare lacks grant_latency_slots\(\); .*Scheduler requires attribute dynamic, "
              r"attribute fidelity, attribute fluid_equal_shares, grant_latency_slots\(\)"),
    ("_NoAttributes", r"^cell.scheduler: .*_NoAttributes lacks attribute fidelity, attribute fluid_equal_shares;"),
])
def test_what_the_band_reads_is_checked_when_the_run_is_built(name, says):
    from sfl_sim.runs.build import build_scheduler

    cfg = validate({"cell": {"scheduler": f"tests.channel.link.test_scheduling:{name}"}})
    if says is None:
        built = build_scheduler(cfg)
        assert isinstance(built, _PlainSlot) and built.fidelity == "slot"
        return
    with pytest.raises(ConfigError, match=says) as info:
        build_scheduler(cfg)
    assert "\n" not in str(info.value)


class _Bare:
    """A plug-in written to the protocol as it was: grants only."""

    dynamic = True

    def fluid_rbs(self, n_rb, rate_per_rb_bps):
        return np.full(np.size(rate_per_rb_bps), n_rb / max(np.size(rate_per_rb_bps), 1))

    def grant_rbs(self, n_rb, need_rb, rate_per_rb_bps, average_bps, turn):
        return np.zeros(np.size(need_rb), dtype=np.int64)

    def average_bps(self, average_bps, served_bps):
        return average_bps


class _NoAttributes(_Bare):
    """The protocol's methods, but not its attributes."""

    def grant_latency_slots(self):
        return 0


@pytest.mark.slow  # imports the run builder (torch)
def test_the_scheduler_is_built_once_per_setting_and_reused(monkeypatch):
    from sfl_sim.runs import build

    made = []
    real = build.component

    def counting(registry, spec, field, *args, **kwargs):
        made.append(field)
        return real(registry, spec, field, *args, **kwargs)

    monkeypatch.setattr(build, "component", counting)
    monkeypatch.setattr(build, "_SCHEDULERS_BUILT", {})
    cfg = validate({"cell": {"scheduler": {"name": "proportional_fair", "fidelity": "slot"}}})
    first = build.build_scheduler(cfg)
    assert build.build_scheduler(cfg) is first and build.build_scheduler(validate(
        {"cell": {"scheduler": {"name": "proportional_fair", "fidelity": "slot"}}})) is first
    assert made == ["cell.scheduler"]  # one build (and one conformance check) for the three asks
    other = build.build_scheduler(validate({"cell": {"scheduler": "round_robin"}}))
    assert other is not first and made == ["cell.scheduler"] * 2


def _full_search(metric, lo, hi, count):
    """The count best of ``metric`` over every row's ``[lo, hi)`` on the whole matrix (the search
    before the window): ties the lower column first, then the lower row."""
    cols = np.arange(metric.shape[1])
    room = np.maximum(hi - lo, 0)
    if count <= 0:
        return np.zeros(lo.shape, dtype=np.int64)
    if room.sum() <= count:
        return room
    values = np.where((cols >= lo[:, None]) & (cols < hi[:, None]), metric, -np.inf)
    threshold = np.sort(values.ravel())[::-1][count - 1]
    take = (values > threshold).sum(axis=1)
    order = [(m, k) for m in range(values.shape[1]) for k in range(values.shape[0]) if values[k, m] == threshold]
    for _, k in order[:count - int(take.sum())]:
        take[k] += 1
    return take


def test_the_best_entries_found_on_a_window_are_those_of_the_whole_matrix():
    from sfl_sim.channel.link import scheduling

    rng = np.random.default_rng(7)
    for trial in range(400):
        k, n = int(rng.integers(1, 40)), int(rng.integers(1, 60))
        if trial % 3 == 0:  # few values: many ties, rows non-increasing
            metric = -np.sort(rng.integers(0, 4, (k, n)), axis=1).astype(float)
        elif trial % 3 == 1:  # rows in no order (the window does not rely on it), an inf here and there
            metric = rng.normal(size=(k, n))
            metric[rng.random((k, n)) < 0.02] = np.inf
        else:  # concave rates' marginals over averages: the slot form's usual metric
            metric = np.sort(rng.exponential(size=(k, n)), axis=1)[:, ::-1] / rng.uniform(0.1, 10, (k, 1))
        hi = rng.integers(0, n + 1, k)
        lo = np.zeros(k, dtype=np.int64) if trial % 2 else np.minimum(rng.integers(0, 3, k), hi)
        count = int(rng.integers(0, n + 5))
        assert scheduling._take_best(metric, lo, hi, count).tolist() == _full_search(metric, lo, hi, count).tolist()


def test_proportional_fair_searches_only_the_first_columns_when_rbs_are_spread(monkeypatch):
    # 100 clients with concave rates (a fixed power spread over 1 .. 51 RBs): each takes an RB or
    # few, and the search for the 51 best marginal metrics runs on the first four columns, not 51
    from sfl_sim.channel.link import scheduling

    widths = []
    best_of = scheduling._best_of
    monkeypatch.setattr(scheduling, "_best_of", lambda values, count: widths.append(values.shape) or best_of(
        values, count))
    rng = np.random.default_rng(3)
    snr = rng.uniform(1.0, 1e3, 100)[:, None]  # on one RB
    m = np.arange(1, 52)
    rates = m * np.log2(1.0 + snr / m)
    grant = ProportionalFair(fidelity="slot").grant_rbs(51, np.full(100, 51), rates[:, -1] / 51,
                                                        rng.uniform(1.0, 2.0, 100), 0, rates_bps=rates)
    assert grant.sum() == 51
    assert widths == [(100, 4)]
