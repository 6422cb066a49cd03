"""Conformance check: does a component behave like one of its kind?

:func:`check_component` first checks that the component offers the methods of its kind's protocol
(:data:`sfl_sim.channel.kinds.PROTOCOLS`; the message names the missing ones), then runs it on its
own — several client counts, a fixed seed twice, physical-range sweeps — and raises
``AssertionError`` with a message naming the component, the check and the offending values, or
returns a report of the checks that passed.  Use it on a new
component before putting it in a scenario::

    from sfl_sim.channel import check_component
    check_component("pathloss", MyModel(...))

Kinds and what is checked
-------------------------
``placement``   shape (n, 2), finite floats; same seed, same positions; inside ``radius_m`` and
                outside ``min_distance_m`` when the component has them.
``pathloss``    shape and float dtype; positive, finite and non-decreasing over 10 m - 3 km (cut
                to ``valid_distance_m`` when the model states one, which must be
                ``(low_m, high_m)`` with 0 <= low < high); for LOS-aware models, in LOS and in
                NLOS; ``los_probability`` in [0, 1]; ``sample_los`` seeded; model sigma >= 0 and
                decorrelation > 0 when given.
``shadowing``   shape (n,), finite; seeded; site methods (when present) give shape (n,) and
                keep unmoved clients' values.
``fading``      shape (n,), float, >= 0, finite; seeded; mean 1 over 200 000 draws.  A fading in time
                (:class:`~sfl_sim.channel.protocols.TimeVaryingFading`, ``time_varying`` true) is held to
                that protocol instead (the i.i.d. checks run too when it also has
                ``sample_power_gain``): fresh copies started with the same seed and Dopplers (0 to
                400 Hz, some 0) give the same gains (relative 1e-12) at times 0 to 1 s, whatever the
                order and grouping of the queries (all at once, one at a time backwards, shuffled
                chunks); gains shape (k,), float, >= 0, finite, a scalar time broadcast; mean 1 over
                4000 clients (within 6 standard errors of the per-client means, at least 0.02);
                ``coherence_time_s`` shape (n,), > 0, inf where the Doppler is 0; a fresh copy loaded
                with a started one's ``state_dict`` continues its gains.
``rate``        >= 0, finite, 0 at 0 Hz, non-decreasing in gain, broadcasts; non-decreasing in bandwidth,
                or (a link abstraction with ``spectral_efficiency_bps_per_hz`` and ``snr_linear``) SE
                non-decreasing in SINR and rate = b x SE(SINR).
``allocation``  shape (n,), >= 0, sum <= band; deterministic; works without payloads; gets
                ``rate_of`` when it declares it.
``mobility``    shape (n, 2), finite, inside the disc and outside the exclusion circle, moves at
                most ``max_speed_m_per_s * dt`` when given; seeded (on fresh copies).  A
                :class:`~sfl_sim.channel.protocols.TimedMobility` also: ``start`` gives (n, 2) finite
                positions, the same as ``positions_at(0)``; fresh copies started with the same seed
                give the same positions whatever the order of the queries (forwards, backwards, and an
                early time again after a late one); velocities (n, 2) and nominal speeds (n,) finite,
                speeds >= 0; a fresh copy loaded with the ``state_dict`` gives the same positions.
``power_control`` powers >= 0, finite, broadcast over (clients x shares x losses); non-decreasing
                in coupling loss and in bandwidth (a weaker link or a wider share never gets less power);
                ``headroom_rbs``, where the model has it, integers >= 1 non-increasing in coupling loss.
``interference`` on a reference scene (500 m disc, TR 36.814 macro path loss, 8 dB shadowing,
                fixed 0.2 W, 20 MHz): ``deploy`` gives plain data and is seeded; the noise rise is a
                finite float >= 1, seeded.
``harq``        on payloads of 1 kbit to 2 Mbit at 0.1-20 Mbit/s and SINRs of -10 to 40 dB: ``send``
                gives ``time_s``, ``retransmissions``, ``delivered``, ``blocks`` with time finite and
                >= payload / rate and >= the copies' air time, retransmissions >= 0, blocks an
                integer >= 1, transmissions per block <= ``max_transmissions`` (when the component
                states it); same seed, same result, and in ``mode: expected`` no draw at all;
                the probability that a one-slot block arrives is non-decreasing in SINR within
                0.25 (link adaptation resets the error rate to its target at each CQI step) and
                at least 1/2 at 40 dB; ``slot_block`` gives shape (k,), NaN where the rate is 0,
                an error rate in [0, 1] and transmissions in [1, ``max_transmissions``].
``scheduler``   on random needs (30 % empty), rates per RB and averages, 11/51/273 RBs, three turns:
                ``grant_rbs`` gives whole RBs >= 0, at most the grid, none to an empty buffer, the
                same twice; a dynamic one (``dynamic`` true) grants at most each need and exactly
                ``min(n_rb, total need)`` (work-conserving); ``fluid_rbs`` finite, >= 0, within the
                grid, the whole grid for a dynamic one; ``dynamic`` a bool on the class, and for a
                dynamic one ``fidelity`` ``fluid`` or ``slot``, ``fluid_equal_shares`` a bool,
                ``grant_latency_slots()`` an integer in [0, 640].  A method that declares
                ``rates_bps`` / ``headroom_rb`` is asked again with them (concave rates, random
                headrooms): the same checks, and nothing beyond a client's headroom unless every
                client holds ``min(need, headroom)`` (slot) or its headroom (fluid).
any kind        when the component is :class:`~sfl_sim.channel.protocols.Stateful`: ``state_dict()`` is
                plain data (arrays, numbers, strings, None, dicts/lists) that
                ``load_state_dict`` takes back; for mobility, a fresh copy loaded with it continues
                the trajectory bit-identically.
"""
from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence
from typing import Any, get_args

import numpy as np

from sfl_sim.channel.kinds import PROTOCOLS, REGISTRIES
from sfl_sim.channel.link.allocation import accepts_rate_of
from sfl_sim.channel.link.power_control import transmit_power_w
from sfl_sim.channel.link.rate import ShannonRate
from sfl_sim.channel.link.scheduling import MAX_LATENCY_SLOTS, Fidelity, declares, is_dynamic
from sfl_sim.channel.protocols import (
    BoundedSpeedMobility,
    LosAwarePathLoss,
    LosSampler,
    RangedPathLoss,
    Resettable,
    ShadowingDecorrelationSource,
    ShadowingSigmaSource,
    ShadowingSite,
    SiteShadowing,
    SiteShadowingUpdate,
    Stateful,
    TimedMobility,
    TimeVaryingFading,
    UplinkScene,
)
from sfl_sim.channel.units import dbm_to_w
from sfl_sim.kit.protocols import describe_members, missing_members

__all__ = ["REGISTRIES", "check_component", "conformance_problem", "is_time_varying"]


_RADIUS_M = 500.0
_MIN_DISTANCE_M = 10.0
_N0_W_PER_HZ = float(dbm_to_w(-174.0))


class _Report:
    def __init__(self, kind: str, component: Any) -> None:
        self.kind, self.component, self.passed = kind, component, []  # type: ignore[var-annotated]

    def check(self, ok: Any, name: str, detail: str = "") -> None:
        if not bool(ok):
            raise AssertionError(
                f"{self.kind} component {self.component!r} fails check '{name}'" + (f": {detail}" if detail else "")
            )
        if name not in self.passed:
            self.passed.append(name)

    def result(self) -> dict[str, Any]:
        return {"kind": self.kind, "component": repr(self.component), "checks": list(self.passed)}


def check_component(
    kind: str, component: Any, rng_seed: int = 0, client_counts: Sequence[int] = (1, 4, 25), *,
    thorough: bool = True,
) -> dict[str, Any]:
    """Run ``component`` as a ``kind`` and check shapes, seeding and physical ranges.

    Parameters
    ----------
    kind : str
        One of ``placement, pathloss, shadowing, fading, rate, allocation, mobility, power_control,
        interference, harq, scheduler, network, handover``.
    component : object
        An instance (e.g. ``PATHLOSS.create("tr38901_uma")``; a HARQ model is built with its rate
        model, ``HARQ.build("harq", McsTableRate(mapping="bler"))``).
    rng_seed : int, default 0
        Seed of the generators the checks use.
    client_counts : sequence of int, default (1, 4, 25)
        Client counts to run with (a placement with a fixed count needs exactly that count).
    thorough : bool, default True
        False leaves out the one check that takes seconds: HARQ's sampled delivery probability
        over SINR (64 draws at each of 26 SINRs); a run's build checks without it.

    Returns
    -------
    dict
        ``kind``, ``component`` (its repr) and ``checks`` (names of the checks that passed).

    Raises
    ------
    AssertionError
        On the first failing check, naming the component, the check and the values.
    ValueError
        If ``kind`` is unknown.
    """
    if kind not in _CHECKS:
        raise ValueError(f"kind must be one of {', '.join(sorted(_CHECKS))}, got {kind!r}")
    report = _Report(kind, component)
    protocol = PROTOCOLS[kind]
    missing = missing_members(component, protocol)
    # a fading in time is held to its own protocol below
    report.check(not missing or (kind == "fading" and is_time_varying(component)), f"protocol {protocol.__name__}",
                 f"lacks {describe_members(protocol, missing)}; a {kind} component needs {describe_members(protocol)}")
    counts = [int(n) for n in client_counts]
    if kind == "fading" and is_time_varying(component):
        missing = missing_members(component, TimeVaryingFading)
        report.check(not missing, "protocol TimeVaryingFading",
                     f"lacks {describe_members(TimeVaryingFading, missing)}; a fading in time needs "
                     f"{describe_members(TimeVaryingFading)}")
        _check_time_varying_fading(report, component, int(rng_seed), counts)
        if not missing_members(component, protocol):
            _check_fading(report, component, int(rng_seed), counts)
    elif kind == "harq":
        _check_harq(report, component, int(rng_seed), counts, thorough)
    else:
        _CHECKS[kind](report, component, int(rng_seed), counts)
    if isinstance(component, Stateful):
        _check_state(report, kind, component, int(rng_seed), [int(n) for n in client_counts])
    return report.result()


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _float_array(report: _Report, value: Any, shape: tuple, what: str) -> np.ndarray:
    arr = np.asarray(value)
    report.check(arr.shape == shape, f"{what} shape", f"expected {shape}, got {arr.shape}")
    report.check(np.issubdtype(arr.dtype, np.floating), f"{what} dtype", f"expected floats, got {arr.dtype}")
    report.check(np.all(np.isfinite(arr)), f"{what} finite", f"got {arr!r}")
    return arr.astype(float)


def _positions(n: int, seed: int) -> np.ndarray:
    rng = _rng(seed)
    r = np.sqrt(rng.random(n) * (_RADIUS_M**2 - _MIN_DISTANCE_M**2) + _MIN_DISTANCE_M**2)
    a = rng.uniform(0, 2 * np.pi, n)
    return np.column_stack((r * np.cos(a), r * np.sin(a)))


# ---------------------------------------------------------------------- per kind
def _check_placement(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    for n in counts:
        pos = _float_array(report, comp.sample_positions_m(n, _rng(seed)), (n, 2), "positions_m")
        again = np.asarray(comp.sample_positions_m(n, _rng(seed)), dtype=float)
        report.check(np.array_equal(pos, again), "same seed, same positions")
        d = np.hypot(pos[:, 0], pos[:, 1])
        radius = getattr(comp, "radius_m", None)
        if radius is not None and n:
            report.check(d.max() <= radius * (1 + 1e-9), "inside radius_m", f"max distance {d.max():g} > {radius:g}")
        r0 = getattr(comp, "min_distance_m", None)
        if r0 is not None and n:
            report.check(d.min() >= r0 * (1 - 1e-9), "outside min_distance_m", f"min distance {d.min():g} < {r0:g}")


def _check_pathloss(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    los_aware = isinstance(comp, LosAwarePathLoss)
    low_m, high_m = 10.0, 3000.0
    if isinstance(comp, RangedPathLoss):
        rng_m = comp.valid_distance_m
        try:
            valid_low, valid_high = (float(v) for v in rng_m)
            ok = 0.0 <= valid_low < valid_high
        except (TypeError, ValueError):
            ok = False
        report.check(ok, "valid_distance_m is (low_m, high_m) with 0 <= low_m < high_m", f"got {rng_m!r}")
        low_m, high_m = max(low_m, valid_low), min(high_m, valid_high)
        if low_m >= high_m:  # a range outside 10 m - 3 km: sweep the range itself
            low_m, high_m = valid_low, valid_high if np.isfinite(valid_high) else valid_low * 300.0
    sweep = np.logspace(np.log10(low_m), np.log10(high_m), 60)
    states = [np.ones(sweep.size, bool), np.zeros(sweep.size, bool)] if los_aware else [None]
    for los in states:
        label = "" if los is None else (" (LOS)" if los[0] else " (NLOS)")
        pl = comp.loss_db(sweep) if los is None else comp.loss_db(sweep, los=los)
        pl = _float_array(report, pl, sweep.shape, "loss_db")
        report.check(np.all(pl > 0), "loss positive over 10 m - 3 km" + label,
                     f"min {pl.min():g} dB over {low_m:g} - {high_m:g} m")
        report.check(np.all(np.diff(pl) >= -1e-9), "loss non-decreasing with distance" + label,
                     f"decreases at {sweep[1:][np.diff(pl) < -1e-9][:3]} m")
    for n in counts:
        d = np.hypot(*_positions(n, seed).T)
        if los_aware:
            p = _float_array(report, comp.los_probability(d), (n,), "los_probability")
            report.check(np.all((p >= 0) & (p <= 1)), "los_probability in [0, 1]", f"got {p!r}")
            samples = isinstance(comp, LosSampler)
            los = np.asarray(comp.sample_los(d, _rng(seed))) if samples else p > 0.5
            if samples:
                report.check(los.shape == (n,) and los.dtype == bool, "sample_los shape and dtype",
                             f"got {los.shape} {los.dtype}")
                report.check(np.array_equal(los, comp.sample_los(d, _rng(seed))), "same seed, same LOS state")
            pl = comp.loss_db(d, los=los)
        else:
            los = None
            pl = comp.loss_db(d)
        _float_array(report, pl, (n,), "loss_db")
        for method, strict, protocol in (("shadowing_sigma_db", False, ShadowingSigmaSource),
                                         ("shadowing_decorrelation_m", True, ShadowingDecorrelationSource)):
            if isinstance(comp, protocol):
                v = np.broadcast_to(np.asarray(getattr(comp, method)(los), dtype=float), (n,))
                ok = bool(np.all(v > 0)) if strict else bool(np.all(v >= 0))
                report.check(ok and np.all(np.isfinite(v)), f"{method} in range", f"got {v!r}")


def _site(n: int, seed: int) -> ShadowingSite:
    pos = _positions(n, seed)
    los = _rng(seed + 1).random(n) < 0.5
    return ShadowingSite(
        positions_m=pos, distance_m=np.hypot(*pos.T), los=los,
        model_sigma_db=np.where(los, 4.0, 6.0), model_decorrelation_m=np.where(los, 37.0, 50.0),
    )


def _check_shadowing(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    site_aware = isinstance(comp, SiteShadowing)
    for n in counts:
        if site_aware:
            site = _site(n, seed)
            c1 = copy.deepcopy(comp)
            v, state = c1.sample_site_db(site, _rng(seed))
            v = _float_array(report, v, (n,), "sample_site_db")
            v2, _ = copy.deepcopy(comp).sample_site_db(site, _rng(seed))
            report.check(np.array_equal(v, np.asarray(v2, dtype=float)), "same seed, same shadowing")
            if isinstance(comp, SiteShadowingUpdate):
                # Move half the clients by 5 m; the others must keep their values.
                pos = np.array(site.positions_m)
                pos[::2] *= 1.0 + 5.0 / np.hypot(*pos[::2].T)[:, None]
                new = ShadowingSite(pos, np.hypot(*pos.T), site.los, site.model_sigma_db, site.model_decorrelation_m)
                u, _ = c1.update_site_db(state, site, new, _rng(seed + 2))
                u = _float_array(report, u, (n,), "update_site_db")
                report.check(np.allclose(u[1::2], v[1::2], atol=1e-6), "unmoved clients keep their shadowing",
                             f"before {v[1::2]!r}, after {u[1::2]!r}")
        else:
            v = _float_array(report, comp.sample_db(n, _rng(seed)), (n,), "sample_db")
            report.check(np.array_equal(v, np.asarray(comp.sample_db(n, _rng(seed)), dtype=float)),
                         "same seed, same shadowing")


def _check_fading(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    for n in counts:
        g = _float_array(report, comp.sample_power_gain(n, _rng(seed)), (n,), "sample_power_gain")
        report.check(np.all(g >= 0), "power gains >= 0", f"got {g!r}")
        report.check(np.array_equal(g, np.asarray(comp.sample_power_gain(n, _rng(seed)), dtype=float)),
                     "same seed, same gains")
    big = np.asarray(comp.sample_power_gain(200_000, _rng(seed)), dtype=float)
    report.check(np.all(big >= 0) and np.all(np.isfinite(big)), "power gains >= 0")
    tol = max(0.02, 6.0 * big.std() / np.sqrt(big.size))
    report.check(abs(big.mean() - 1.0) <= tol, "mean power gain 1", f"mean {big.mean():.4f}, allowed 1 +- {tol:.3f}")


def is_time_varying(component: Any) -> bool:
    """Whether a fading component says it is a process in time (``time_varying`` is True)."""
    return getattr(component, "time_varying", False) is True


#: Query times of the time-varying fading checks, s: a grid point, within a step, across steps and
#: coherence times of 0-400 Hz Dopplers, up to 1 s (a model that steps on a grid walks 1000 steps).
_FADING_TIMES_S = np.array([0.0, 1e-4, 1e-3, 0.0125, 0.1, 0.5, 1.0])
#: Clients and times of the mean-power check of a fading in time.
_FADING_MEAN_CLIENTS, _FADING_MEAN_TIMES_S = 4000, np.array([0.0, 0.05])
#: Relative tolerance of "the same gains": bit-identical is the aim; 1e-12 lets a model sum in a
#: shape-dependent order.
_SAME_RTOL = 1e-12


def _fading_doppler_hz(n: int, seed: int) -> np.ndarray:
    """0 to 400 Hz (120 km/h at 3.5 GHz is 389 Hz), every fifth client 0 (static)."""
    fd = _rng(seed + 1).uniform(0.0, 400.0, n)
    fd[::5] = 0.0
    return fd


def _started_fading(comp: Any, n: int, seed: int) -> Any:
    fresh = copy.deepcopy(comp)
    fresh.start(n, _fading_doppler_hz(n, seed), _rng(seed))
    return fresh


def _check_time_varying_fading(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    times = _FADING_TIMES_S
    for n in counts:
        ids = np.repeat(np.arange(n), times.size)
        t = np.tile(times, n)
        a = _started_fading(comp, n, seed)
        g = _float_array(report, a.power_gain_at(ids, t), (ids.size,), "power_gain_at")
        report.check(np.all(g >= 0), "power gains >= 0", f"got {g!r}")
        again = np.asarray(_started_fading(comp, n, seed).power_gain_at(ids, t), dtype=float)
        report.check(np.allclose(g, again, rtol=_SAME_RTOL, atol=0.0), "same seed, same gains (fresh copies)",
                     f"{g[:4]!r} vs {again[:4]!r}")
        # the same queries in other orders and groupings, on fresh copies
        b = _started_fading(comp, n, seed)
        back = np.empty_like(g)
        order = np.arange(ids.size)[::-1]
        if ids.size <= 256:  # one at a time, latest first
            for i in order:
                back[i] = np.asarray(b.power_gain_at(ids[i:i + 1], t[i:i + 1]), dtype=float)[0]
        else:
            back[order] = np.asarray(b.power_gain_at(ids[order], t[order]), dtype=float)
        c = _started_fading(comp, n, seed)
        shuffled = np.empty_like(g)
        perm = _rng(seed + 2).permutation(ids.size)
        for chunk in np.array_split(perm, min(7, max(1, ids.size))):
            shuffled[chunk] = np.asarray(c.power_gain_at(ids[chunk], t[chunk]), dtype=float)
        for other, how in ((back, "one at a time, latest first"), (shuffled, "shuffled chunks")):
            report.check(np.allclose(g, other, rtol=_SAME_RTOL, atol=0.0), "same gains in any query order",
                         f"{how}: {other[:4]!r}, all at once: {g[:4]!r}")
        scalar = _float_array(report, a.power_gain_at(np.arange(n), float(times[4])), (n,), "power_gain_at (scalar t)")
        report.check(np.allclose(scalar, g[4::times.size], rtol=_SAME_RTOL, atol=0.0), "a scalar time is broadcast")
        coh = np.asarray(a.coherence_time_s(np.arange(n)))
        report.check(coh.shape == (n,) and np.issubdtype(coh.dtype, np.floating), "coherence_time_s shape",
                     f"expected ({n},) floats, got {coh.shape} {coh.dtype}")
        fd = _fading_doppler_hz(n, seed)
        report.check(np.all(coh[fd == 0] == np.inf) and np.all(coh > 0), "coherence time > 0, inf at f_D = 0",
                     f"got {coh!r} for Dopplers {fd!r}")
    n = _FADING_MEAN_CLIENTS
    big = _started_fading(comp, n, seed)
    k = _FADING_MEAN_TIMES_S.size
    g = np.asarray(big.power_gain_at(np.repeat(np.arange(n), k), np.tile(_FADING_MEAN_TIMES_S, n)), dtype=float)
    report.check(g.shape == (n * k,) and np.all(np.isfinite(g)) and np.all(g >= 0), "power gains >= 0")
    per_client = g.reshape(n, k).mean(axis=1)  # clients are independent, times of one client need not be
    tol = max(0.02, 6.0 * per_client.std() / np.sqrt(n))
    report.check(abs(per_client.mean() - 1.0) <= tol, "mean power gain 1",
                 f"mean {per_client.mean():.4f} over {n} clients, allowed 1 +- {tol:.3f}")


def _check_rate(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    bands = np.array([0.0, 1e3, 1e5, 1e6, 1e7, 1e8])
    gains = np.logspace(-16, -6, 11)
    grid = np.asarray(comp.rate_bps(bands[:, None], 0.2, gains[None, :], _N0_W_PER_HZ))
    grid = _float_array(report, grid, (bands.size, gains.size), "rate_bps (broadcast)")
    report.check(np.all(grid >= 0), "rates >= 0", f"min {grid.min():g}")
    report.check(np.all(grid[0] == 0), "rate 0 on 0 Hz", f"got {grid[0]!r}")
    if hasattr(comp, "spectral_efficiency_bps_per_hz") and hasattr(comp, "snr_linear"):
        # A link abstraction with an SINR floor or CQI steps can lose rate on a wider share at the
        # same power (the SINR drops below a step); what must hold is monotonicity in SINR and
        # rate = b x SE(SINR).
        sinr = 10.0 ** np.linspace(-4.0, 5.0, 181)
        se = _float_array(report, comp.spectral_efficiency_bps_per_hz(sinr), sinr.shape,
                          "spectral_efficiency_bps_per_hz")
        report.check(np.all(se >= 0) and np.all(np.diff(se) >= -1e-12),
                     "spectral efficiency >= 0, non-decreasing in SINR")
        snr = np.asarray(comp.snr_linear(bands[1:, None], 0.2, gains[None, :], _N0_W_PER_HZ), dtype=float)
        # a model whose SE depends on the share too (mcs_table's transport-block rule) is given it
        takes_band = "bandwidth_hz" in inspect.signature(comp.spectral_efficiency_bps_per_hz).parameters
        se_on = comp.spectral_efficiency_bps_per_hz(snr, bands[1:, None]) if takes_band else \
            comp.spectral_efficiency_bps_per_hz(snr)
        expect = bands[1:, None] * np.asarray(se_on, dtype=float)
        report.check(np.allclose(grid[1:], expect, rtol=1e-12, atol=0.0), "rate = bandwidth x SE(SINR)")
    else:
        report.check(np.all(np.diff(grid, axis=0) >= -1e-9 * grid[1:]), "rate non-decreasing in bandwidth")
    report.check(np.all(np.diff(grid, axis=1) >= -1e-9 * grid[:, 1:]), "rate non-decreasing in gain")
    rng = _rng(seed)
    for n in counts:
        r = comp.rate_bps(rng.uniform(1e5, 1e7, n), rng.uniform(0.1, 1.0, n), rng.uniform(1e-13, 1e-8, n), _N0_W_PER_HZ)
        _float_array(report, r, (n,), "rate_bps")


def _check_allocation(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    band = 20e6
    rate = ShannonRate()
    wants = accepts_rate_of(comp)
    rng = _rng(seed)
    for n in counts:
        payload = rng.uniform(1e5, 1e7, n)
        gains = 10.0 ** rng.uniform(-13, -8, n)

        def rate_of(b: np.ndarray, gains: np.ndarray = gains) -> np.ndarray:
            return rate.rate_bps(b, 0.2, gains, _N0_W_PER_HZ)

        kwargs = {"rate_of": rate_of} if wants else {}
        for pay in (payload, None):
            a = _float_array(report, comp.allocate_hz(band, pay, gains, **kwargs), (n,), "allocate_hz")
            report.check(np.all(a >= 0), "shares >= 0", f"got {a!r}")
            report.check(a.sum() <= band * (1 + 1e-9), "shares sum <= band", f"sum {a.sum():g} > {band:g}")
            again = np.asarray(comp.allocate_hz(band, pay, gains, **kwargs), dtype=float)
            report.check(np.array_equal(a, again), "same inputs, same shares")
    empty = np.asarray(comp.allocate_hz(band, np.zeros(0), np.zeros(0), **({"rate_of": lambda b: b} if wants else {})))
    report.check(empty.shape == (0,), "no clients, no shares", f"got shape {empty.shape}")


def _is_plain(value: Any) -> bool:
    if value is None or type(value) in (bool, int, float, str):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype != object
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_is_plain(v) for v in value)
    return False


def _check_state(report: _Report, kind: str, comp: Any, seed: int, counts: list[int]) -> None:
    if kind == "fading" and is_time_varying(comp):  # its state exists once started
        _check_time_varying_state(report, comp, seed, counts)
        return
    fresh = copy.deepcopy(comp)
    state = fresh.state_dict()
    report.check(_is_plain(state), "state_dict is plain data",
                 f"got {state!r}; use numpy arrays, Python numbers, strings, None and dicts/lists only")
    copy.deepcopy(comp).load_state_dict(copy.deepcopy(state))
    report.check(True, "load_state_dict takes its own state_dict")
    if kind != "mobility":
        return
    n = max(counts)
    a, rng_a, pos = copy.deepcopy(comp), _rng(seed), _positions(n, seed)
    for dt in (1.0, 30.0, 300.0):
        pos = a.step(pos, dt, rng_a, radius_m=_RADIUS_M, min_distance_m=_MIN_DISTANCE_M)
    saved = a.state_dict()
    report.check(_is_plain(saved), "state_dict is plain data", f"got {saved!r}")
    b, rng_b = copy.deepcopy(comp), _rng(seed + 1)
    b.load_state_dict(copy.deepcopy(saved))
    rng_b.bit_generator.state = rng_a.bit_generator.state
    pa = pb = pos
    for dt in (5.0, 60.0, 600.0):
        pa = np.asarray(a.step(pa, dt, rng_a, radius_m=_RADIUS_M, min_distance_m=_MIN_DISTANCE_M))
        pb = np.asarray(b.step(pb, dt, rng_b, radius_m=_RADIUS_M, min_distance_m=_MIN_DISTANCE_M))
        report.check(np.array_equal(pa, pb), "loaded state continues the trajectory",
                     f"after {dt:g} s: {pa[:2]!r} vs {pb[:2]!r}")


def _check_time_varying_state(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    """A fading in time: the state of a started copy is plain data, and a fresh (never started)
    copy loaded with it gives the same gains at later times."""
    n, times = max(counts), _FADING_TIMES_S
    if n > 0:
        a = _started_fading(comp, n, seed)
        a.power_gain_at(np.repeat(np.arange(n), 3), np.tile(times[:3], n))
        saved = a.state_dict()
        report.check(_is_plain(saved), "state_dict is plain data", f"got {saved!r}")
        b = copy.deepcopy(comp)
        b.load_state_dict(copy.deepcopy(saved))
        ids, t = np.repeat(np.arange(n), times.size - 3), np.tile(times[3:], n)
        ga, gb = (np.asarray(x.power_gain_at(ids, t), dtype=float) for x in (a, b))
        report.check(np.allclose(ga, gb, rtol=_SAME_RTOL, atol=0.0), "loaded state continues the gains",
                     f"{ga[:4]!r} vs {gb[:4]!r}")


def _check_mobility(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    vmax = comp.max_speed_m_per_s if isinstance(comp, BoundedSpeedMobility) else None
    for n in counts:
        runs = []
        for _ in range(2):
            m = copy.deepcopy(comp)
            if isinstance(m, Resettable):
                m.reset()
            rng = _rng(seed)
            pos = _positions(n, seed)
            trail = []
            for dt in (0.0, 0.5, 10.0, 100.0, 5000.0):
                new = m.step(pos, dt, rng, radius_m=_RADIUS_M, min_distance_m=_MIN_DISTANCE_M)
                new = _float_array(report, new, (n, 2), "step")
                d = np.hypot(*new.T)
                report.check(np.all(d <= _RADIUS_M * (1 + 1e-9)), "stays inside the disc", f"max {d.max():g} m")
                report.check(np.all(d >= _MIN_DISTANCE_M * (1 - 1e-9)), "stays outside min_distance_m",
                             f"min {d.min():g} m")
                if vmax is not None:
                    moved = np.hypot(*(new - pos).T)
                    report.check(np.all(moved <= vmax * dt * (1 + 1e-9) + 1e-9), "moves at most max_speed * dt",
                                 f"moved {moved.max():g} m in {dt:g} s at <= {vmax:g} m/s")
                trail.append(new)
                pos = new
            runs.append(np.stack(trail))
        report.check(np.array_equal(runs[0], runs[1]), "same seed, same trajectory")
    if isinstance(comp, TimedMobility):
        _check_timed_mobility(report, comp, seed, counts)


#: Query times of the timed check, s: a grid time, times inside steps, and one late enough (1500 s)
#: that a model stepping in blocks of 256 steps of 1 s has dropped the first block from its cache.
_TIMED_QUERIES_S = (0.0, 0.3, 1.7, 12.5, 100.0, 1500.25)


def _check_timed_mobility(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    for n in counts:
        copies = []
        for _ in range(3):
            m = copy.deepcopy(comp)
            if isinstance(m, Resettable):
                m.reset()
            first = m.start(_positions(n, seed), _rng(seed), radius_m=_RADIUS_M, min_distance_m=_MIN_DISTANCE_M)
            copies.append((m, _float_array(report, first, (n, 2), "start")))
        (a, first), (b, _), (c, _) = copies
        forward = [_float_array(report, a.positions_at(t), (n, 2), "positions_at") for t in _TIMED_QUERIES_S]
        report.check(np.array_equal(forward[0], first), "start gives the positions at t = 0")
        backward = [np.asarray(b.positions_at(t), dtype=float) for t in reversed(_TIMED_QUERIES_S)][::-1]
        for t, x, y in zip(_TIMED_QUERIES_S, forward, backward, strict=True):
            report.check(np.array_equal(x, y), "same seed, same positions in any query order",
                         f"at {t:g} s: {x[:2]!r} forwards vs {y[:2]!r} backwards")
        again = np.asarray(a.positions_at(_TIMED_QUERIES_S[1]), dtype=float)
        report.check(np.array_equal(again, forward[1]), "an early time again after a late one",
                     f"at {_TIMED_QUERIES_S[1]:g} s: {forward[1][:2]!r} then {again[:2]!r}")
        for t in _TIMED_QUERIES_S:
            _float_array(report, a.velocities_at(t), (n, 2), "velocities_at")
        speed = _float_array(report, a.nominal_speed_m_per_s(), (n,), "nominal_speed_m_per_s")
        report.check(np.all(speed >= 0), "nominal speeds >= 0", f"min {speed.min():g} m/s")
        if isinstance(comp, Stateful):
            saved = a.state_dict()
            report.check(_is_plain(saved), "state_dict is plain data", f"got {saved!r}")
            c.load_state_dict(copy.deepcopy(saved))
            loaded = [np.asarray(c.positions_at(t), dtype=float) for t in _TIMED_QUERIES_S]
            report.check(all(np.array_equal(x, y) for x, y in zip(forward, loaded, strict=True)),
                         "a loaded state gives the same positions")


def _check_power_control(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    bands = np.array([0.0, 1.8e5, 1e6, 5e6, 2e7])
    losses = np.linspace(60.0, 160.0, 21)
    for channel_hz in (2e7, 1.5e7 + 1.0):  # a channel of the TS 38.101-1 grid, and one the grid lacks
        grid = transmit_power_w(comp, 0.2, bands[:, None], losses[None, :], channel_hz)
        grid = _float_array(report, grid, (bands.size, losses.size), "tx_power_w (broadcast)")
        report.check(np.all(grid >= 0), "powers >= 0", f"min {grid.min():g}")
        report.check(np.all(np.diff(grid, axis=1) >= -1e-12 * grid[:, 1:]), "power non-decreasing in coupling loss")
        report.check(np.all(np.diff(grid, axis=0) >= -1e-12 * grid[1:]), "power non-decreasing in bandwidth")
    rng = _rng(seed)
    for n in counts:
        p = transmit_power_w(comp, rng.uniform(0.1, 1.0, n), rng.uniform(1e5, 1e7, n), rng.uniform(60.0, 160.0, n),
                             2e7)
        _float_array(report, p, (n,), "tx_power_w")
    if callable(getattr(comp, "headroom_rbs", None)):  # HeadroomPowerControl: RBs, integers >= 1
        caps = np.asarray(comp.headroom_rbs(losses))
        report.check(caps.shape == losses.shape, "headroom_rbs shape", f"expected {losses.shape}, got {caps.shape}")
        report.check(np.issubdtype(caps.dtype, np.integer) and bool(np.all(caps >= 1)), "headroom_rbs integers >= 1",
                     f"got {caps!r}")
        report.check(bool(np.all(np.diff(caps) <= 0)), "headroom_rbs non-increasing in coupling loss", f"got {caps!r}")


def _interference_scene(n: int) -> UplinkScene:
    from sfl_sim.channel.large_scale.geometry import UniformDiscPlacement
    from sfl_sim.channel.large_scale.pathloss import TR36814Macro
    from sfl_sim.channel.large_scale.shadowing import LogNormalShadowing
    from sfl_sim.channel.link.power_control import FixedPower

    return UplinkScene(placement=UniformDiscPlacement(_RADIUS_M, 35.0), pathloss=TR36814Macro(),
                       shadowing=LogNormalShadowing(8.0), power_control=FixedPower(), n_clients=n,
                       tx_power_w=np.full(n, 0.2), uplink_bandwidth_hz=20e6, noise_floor_w_per_hz=_N0_W_PER_HZ,
                       radius_m=_RADIUS_M)


def _check_interference(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    for n in counts:
        scene = _interference_scene(n)
        draws = []
        for _ in range(2):
            rng = _rng(seed)
            layout = comp.deploy(scene, rng)
            report.check(_is_plain(layout), "deploy gives plain data", f"got a {type(layout).__name__}")
            draws.append((layout, [comp.noise_rise_linear(scene, layout, rng) for _ in range(3)]))
        for rise in draws[0][1]:
            report.check(isinstance(rise, (float, int, np.floating)) and not isinstance(rise, bool),
                         "noise rise is a number", f"got {rise!r}")
            report.check(np.isfinite(rise) and rise >= 1.0, "noise rise finite and >= 1", f"got {rise!r}")
        report.check(draws[0][1] == draws[1][1], "same seed, same noise rise", f"{draws[0][1]} vs {draws[1][1]}")


def _check_harq(report: _Report, comp: Any, seed: int, counts: list[int], thorough: bool = True) -> None:
    big_m = getattr(comp, "max_transmissions", None)
    expected = getattr(comp, "mode", None) == "expected"
    sinrs_db = np.arange(-10.0, 41.0, 2.0)
    for bits in (1e3, 1e5, 2e6):
        for rate in (1e5, 1e6, 2e7):
            for sinr in sinrs_db[::5]:
                rng = _rng(seed)
                before = rng.bit_generator.state
                sent = comp.send(bits, rate, float(sinr), rng)
                where = f"{bits:g} bits at {rate:g} bit/s, {sinr:g} dB"
                report.check(all(hasattr(sent, a) for a in ("time_s", "retransmissions", "delivered", "blocks")),
                             "send gives time_s, retransmissions, delivered, blocks", f"got {sent!r}")
                t, extra, blocks = float(sent.time_s), float(sent.retransmissions), sent.blocks
                report.check(isinstance(blocks, (int, np.integer)) and not isinstance(blocks, bool) and blocks >= 1,
                             "blocks an integer >= 1", f"got {blocks!r} ({where})")
                report.check(np.isfinite(extra) and extra >= 0, "retransmissions finite and >= 0",
                             f"got {extra!r} ({where})")
                report.check(np.isfinite(t) and t >= bits / rate * (1 - 1e-9), "time >= payload / rate",
                             f"got {t!r} s < {bits / rate:g} s ({where})")
                air_s = (blocks + extra) * bits / (blocks * rate)
                report.check(t >= air_s * (1 - 1e-9), "time >= the copies' air time",
                             f"got {t!r} s < {air_s:g} s for {blocks + extra:g} copies ({where})")
                if big_m is not None:
                    report.check(1.0 + extra / blocks <= big_m * (1 + 1e-9), "transmissions per block <= "
                                 "max_transmissions", f"{1.0 + extra / blocks:g} > {big_m} ({where})")
                again = comp.send(bits, rate, float(sinr), _rng(seed))
                report.check((again.time_s, again.retransmissions, again.delivered, again.blocks)
                             == (sent.time_s, sent.retransmissions, sent.delivered, sent.blocks),
                             "same seed, same result", f"{sent!r} vs {again!r} ({where})")
                if expected:
                    report.check(rng.bit_generator.state == before, "mode expected draws nothing", f"({where})")
    if thorough or expected:
        draws = 1 if expected else 64
        rng = _rng(seed)
        arrives = np.array([np.mean([bool(comp.send(1e3, 1e6, float(s), rng).delivered) for _ in range(draws)])
                            for s in sinrs_db])
        dips = np.maximum.accumulate(arrives) - arrives
        report.check(dips.max() <= 0.25, "delivery probability non-decreasing in SINR (within 0.25)",
                     f"{dict(zip(sinrs_db.tolist(), arrives.tolist(), strict=True))} "
                     f"(a one-slot block, 1 kbit at 1 Mbit/s)")
        report.check(arrives[-1] >= 0.5, "a 40 dB link delivers", f"delivered {arrives[-1]:g} of the time")
    rates = np.array([0.0, 1e5, 1e6, 2e7, 1e6])
    sinrs = np.array([10.0, 0.0, 10.0, 25.0, 40.0])
    first, mean = (np.asarray(a, dtype=float) for a in comp.slot_block(rates, sinrs))
    report.check(first.shape == mean.shape == rates.shape, "slot_block shape (k,)",
                 f"got {first.shape}, {mean.shape}")
    report.check(np.isnan(first[0]) and np.isnan(mean[0]), "slot_block NaN where the rate is 0",
                 f"got {first[0]!r}, {mean[0]!r}")
    ok = ~np.isnan(first[1:]) & ~np.isnan(mean[1:])
    hi = float(big_m) if big_m is not None else np.inf
    report.check(np.all(ok) and np.all((first[1:] >= 0) & (first[1:] <= 1)), "slot_block error rate in [0, 1]",
                 f"got {first!r}")
    report.check(np.all(ok) and np.all((mean[1:] >= 1 - 1e-12) & (mean[1:] <= hi * (1 + 1e-9))),
                 "slot_block transmissions in [1, max_transmissions]", f"got {mean!r}")


def _check_scheduler(report: _Report, comp: Any, seed: int, counts: list[int]) -> None:
    """Grants on random buffers, rates and averages over a few grid sizes (11, 51, 273 RBs)."""
    rng = _rng(seed)
    dynamic = is_dynamic(comp)
    # what the engine's band reads besides the grants (the Scheduler protocol's members)
    on_class = getattr(type(comp), "dynamic", None)
    report.check(isinstance(on_class, (bool, np.bool_)), "dynamic a class attribute, a bool",
                 f"got {on_class!r} on the class")
    if dynamic:
        report.check(getattr(comp, "fidelity", None) in get_args(Fidelity), "fidelity one of "
                     + ", ".join(get_args(Fidelity)), f"got {getattr(comp, 'fidelity', None)!r}")
        report.check(isinstance(getattr(comp, "fluid_equal_shares", None), (bool, np.bool_)),
                     "fluid_equal_shares a bool", f"got {getattr(comp, 'fluid_equal_shares', None)!r}")
        latency = comp.grant_latency_slots()
        report.check(isinstance(latency, (int, np.integer)) and not isinstance(latency, bool)
                     and 0 <= latency <= MAX_LATENCY_SLOTS,
                     f"grant_latency_slots() an integer in [0, {MAX_LATENCY_SLOTS}]", f"got {latency!r}")
    # the optional inputs (the Scheduler protocol), given to the methods that declare them
    grant_kw = [name for name in ("rates_bps", "headroom_rb") if declares(comp.grant_rbs, name)]
    fluid_kw = [name for name in ("rates_bps", "headroom_rb") if declares(comp.fluid_rbs, name)]
    for n in counts:
        for n_rb in (11, 51, 273):
            rates = rng.uniform(1e4, 1e6, n)
            need = rng.integers(0, 2 * n_rb // max(n, 1) + 2, n)
            need[rng.random(n) < 0.3] = 0  # empty buffers
            average = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(1e5, 1e7, n))
            # concave rates on 1 .. n_rb RBs (a power spread over more RBs, Shannon) and headrooms
            snr = rng.uniform(0.1, 3.0 * n_rb, n)[:, None]
            counts_rb = np.arange(1, n_rb + 1, dtype=float)
            table = rates[:, None] * counts_rb * np.log2(1.0 + snr / counts_rb) / np.log2(1.0 + snr)
            headroom = rng.integers(1, n_rb + 1, n)
            headroom[rng.random(n) < 0.3] = n_rb
            extra = {"rates_bps": table.copy(), "headroom_rb": headroom.copy()}
            for turn in (0, 1, 7):
                grant = np.asarray(comp.grant_rbs(n_rb, need.copy(), rates.copy(), average.copy(), turn))
                if grant_kw:
                    with_inputs = np.asarray(comp.grant_rbs(n_rb, need.copy(), rates.copy(), average.copy(), turn,
                                                            **{k: extra[k] for k in grant_kw}))
                    _check_grant(report, comp, with_inputs, n, n_rb, need, turn, dynamic)
                    if dynamic and "headroom_rb" in grant_kw:
                        held = np.minimum(need, headroom)
                        report.check(not np.any(with_inputs > held) or bool(np.all(with_inputs >= held)),
                                     "grant_rbs beyond the headroom only when every client holds min(need, headroom)",
                                     f"grants {with_inputs!r}, needs {need!r}, headroom {headroom!r}")
                _check_grant(report, comp, grant, n, n_rb, need, turn, dynamic)
                again = np.asarray(comp.grant_rbs(n_rb, need.copy(), rates.copy(), average.copy(), turn))
                report.check(np.array_equal(grant, again), "grant_rbs deterministic")
            active = rates[need > 0]
            if fluid_kw:
                on = need > 0
                given = {"rates_bps": table[on].copy(), "headroom_rb": headroom[on].copy()}
                share = np.asarray(comp.fluid_rbs(n_rb, active.copy(), **{k: given[k] for k in fluid_kw}), dtype=float)
                _check_fluid(report, comp, share, active, n_rb, dynamic)
                if dynamic and "headroom_rb" in fluid_kw and active.size:
                    held = headroom[on]
                    report.check(not np.any(share > held + 1e-9) or bool(np.all(share >= held - 1e-9)),
                                 "fluid_rbs beyond the headroom only when every client holds its headroom",
                                 f"shares {share!r}, headroom {held!r}")
            share = np.asarray(comp.fluid_rbs(n_rb, active.copy()), dtype=float)
            _check_fluid(report, comp, share, active, n_rb, dynamic)
            if dynamic and getattr(comp, "fluid_equal_shares", False) is True and active.size:
                report.check(bool(np.all(share == n_rb / active.size)), "fluid_rbs n_rb / n each (fluid_equal_shares)",
                             f"got {share!r} for n = {active.size}")
                if "headroom_rb" in fluid_kw:  # the promise holds where no headroom is below n_rb / n
                    roomy = np.full(active.size, n_rb)
                    wide = np.asarray(comp.fluid_rbs(n_rb, active.copy(), headroom_rb=roomy), dtype=float)
                    report.check(bool(np.all(wide == n_rb / active.size)),
                                 "fluid_rbs n_rb / n each with room (fluid_equal_shares)", f"got {wide!r}")


def _check_grant(report: _Report, comp: Any, grant: np.ndarray, n: int, n_rb: int, need: np.ndarray, turn: int,
                 dynamic: bool) -> None:
    """One slot's grants against the Scheduler protocol."""
    report.check(grant.shape == (n,), "grant_rbs shape", f"expected {(n,)}, got {grant.shape}")
    report.check(np.all(grant == np.round(grant)), "grant_rbs whole RBs", f"got {grant!r}")
    report.check(np.all(grant >= 0), "grant_rbs >= 0", f"got {grant!r}")
    report.check(grant.sum() <= n_rb, "grant_rbs within the grid",
                 f"{grant.sum():g} RBs granted of {n_rb} (n={n}, turn={turn})")
    report.check(np.all(grant[need == 0] == 0), "no RBs to an empty buffer",
                 f"grants {grant[need == 0]!r} to clients with need 0")
    if dynamic:
        report.check(np.all(grant <= need), "grant_rbs at most the need", f"grants {grant!r} for needs {need!r}")
        report.check(grant.sum() == min(n_rb, int(need.sum())), "grant_rbs work-conserving",
                     f"{grant.sum():g} RBs granted, {min(n_rb, int(need.sum()))} could be used")


def _check_fluid(report: _Report, comp: Any, share: np.ndarray, active: np.ndarray, n_rb: int, dynamic: bool) -> None:
    """A fluid split against the Scheduler protocol."""
    report.check(share.shape == active.shape, "fluid_rbs shape", f"expected {active.shape}, got {share.shape}")
    report.check(np.all(np.isfinite(share) & (share >= 0)), "fluid_rbs finite and >= 0", f"got {share!r}")
    report.check(share.sum() <= n_rb * (1 + 1e-9), "fluid_rbs within the grid", f"{share.sum():g} of {n_rb}")
    if dynamic and active.size:
        report.check(share.sum() >= n_rb * (1 - 1e-9), "fluid_rbs work-conserving",
                     f"{share.sum():g} of {n_rb} RBs shared")


def _check_network(report: _Report, layout: Any, seed: int, counts: Sequence[int]) -> None:
    """A layout drops clients over itself and gives finite, non-negative wrap-around distances."""
    for n in counts:
        positions, site = layout.drop_uniform(n, np.random.default_rng(seed))
        report.check(np.shape(positions) == (n, 2) and np.shape(site) == (n,), "drop_uniform shapes",
                     f"for {n} clients got {np.shape(positions)} and {np.shape(site)}")
        again = layout.drop_uniform(n, np.random.default_rng(seed))[0]
        report.check(np.array_equal(positions, again), "drop_uniform seeded", "two equal generators gave two drops")
        d = np.asarray(layout.wraparound_distances_m(positions), dtype=float)
        report.check(d.shape == (n, int(layout.n_sites)) and bool(np.all(np.isfinite(d) & (d >= 0))),
                     "wraparound_distances_m finite, >= 0", f"got shape {d.shape}")


def _check_handover(report: _Report, rule: Any, seed: int, counts: Sequence[int]) -> None:
    """The scripted checks of :func:`sfl_sim.channel.network.conformance.check_handover`."""
    from sfl_sim.channel.network.conformance import HandoverConformanceError, check_handover

    try:
        check_handover(rule)
        problem = ""
    except HandoverConformanceError as exc:
        problem = str(exc)
    report.check(not problem, "check_handover", problem)


_CHECKS = {
    "placement": _check_placement,
    "pathloss": _check_pathloss,
    "shadowing": _check_shadowing,
    "fading": _check_fading,
    "rate": _check_rate,
    "allocation": _check_allocation,
    "mobility": _check_mobility,
    "power_control": _check_power_control,
    "interference": _check_interference,
    "harq": _check_harq,
    "scheduler": _check_scheduler,
    "network": _check_network,
    "handover": _check_handover,
}


#: Components already checked in this process, by (kind, type, repr, client count): the parts of a
#: scenario's runs are built once per algorithm with the same parameters, and checked once.
_PASSED: set[tuple[str, type, str, int]] = set()


def conformance_problem(kind: str, component: Any, n_clients: int) -> str | None:
    """Why ``component`` is not a ``kind`` (:func:`check_component`'s first failing check, one
    line), or None when it passes; what a run checks of every component it builds (without the
    sweep that takes seconds: ``thorough=False``; a component whose type and repr passed before,
    with the same count, is not checked again).

    Parameters
    ----------
    kind : str
        As for :func:`check_component`.
    component : object
    n_clients : int
        The run's client count, the only count the checks use (a placement may fix it).

    Returns
    -------
    str or None
    """
    key = (kind, type(component), repr(component), int(n_clients))
    if key in _PASSED:
        return None
    try:
        check_component(kind, component, client_counts=(int(n_clients),), thorough=False)
    except AssertionError as exc:
        return " ".join(str(exc).split())
    _PASSED.add(key)
    return None
