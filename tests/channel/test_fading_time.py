"""Time-correlated fading (``jakes``, ``gauss_markov``, ``rician_jakes``): statistics, Doppler,
order independence, state round trip.

Statistical tests compare an estimate over many independent clients with its expected value and
allow ``Z`` standard errors, the standard error measured from the same samples.  ``Z = 4`` is a
two-sided normal coverage of 99.994 % per comparison; with the about 70 comparisons below a correct
model passes all with probability >= 99.5 % (Bonferroni) for a random seed, and the seeds are
fixed, so each test is exact and repeatable.  A wrong correlation is off by many standard errors
(J0 at 1.2 times the Doppler: up to 26; rho^(1.2 k): about 5 at k = 31).
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
from scipy.special import j0

from sfl_sim.channel import FADING
from sfl_sim.channel.conformance import check_component
from sfl_sim.channel.link.fading_time import (
    HALF_CORRELATION_ARG,
    GaussMarkovFading,
    JakesFading,
    RicianJakesFading,
    doppler_hz,
)
from sfl_sim.channel.protocols import TimeVaryingFading

Z = 4.0  # standard errors allowed (see the module docstring)
N_CLIENTS = 4000


def _started(component, n, fd, seed=0):
    component.start(n, np.full(n, fd) if np.ndim(fd) == 0 else fd, np.random.default_rng(seed))
    return component


def _correlation(h0: np.ndarray, h1: np.ndarray) -> tuple[complex, float]:
    """E[h(t) h*(t + tau)] over clients and its standard error (of the real part)."""
    prod = h0 * np.conj(h1)
    return complex(prod.mean()), float(prod.real.std(ddof=1) / np.sqrt(prod.size))


def test_doppler_by_hand():
    # f_D = v f_c / c: 3 km/h = 0.8333 m/s -> 0.8333 * 3.5e9 / 299792458 = 9.7290 Hz; 120 km/h -> 389.158 Hz
    assert doppler_hz(3 / 3.6, 3.5e9) == pytest.approx(9.7290, abs=1e-4)
    assert doppler_hz(120 / 3.6, 3.5e9) == pytest.approx(389.158, abs=1e-3)
    assert np.array_equal(doppler_hz(np.array([0.0, 1.0]), 299_792_458.0), [0.0, 1.0])  # c exact
    with pytest.raises(ValueError, match=r"speed_m_per_s: got -1.0"):
        doppler_hz(-1.0, 3.5e9)
    with pytest.raises(ValueError, match=r"carrier_hz: got 0.0"):
        doppler_hz(1.0, 0.0)


@pytest.mark.parametrize("cls", [JakesFading, GaussMarkovFading, RicianJakesFading])
def test_protocol_and_registry(cls):
    comp = cls()
    assert isinstance(comp, TimeVaryingFading) and cls.time_varying is True
    assert type(FADING.create({JakesFading: "jakes", GaussMarkovFading: "gauss_markov",
                               RicianJakesFading: "rician_jakes"}[cls])) is cls


@pytest.mark.parametrize("n_sinusoids", [8, 16, 32])
def test_jakes_autocorrelation_is_j0(n_sinusoids):
    """The complex envelope's autocorrelation over clients matches J0(2 pi f_D tau) at lags up to
    past the second zero of J0, within Z standard errors (imaginary part 0 likewise)."""
    fd = 100.0
    comp = _started(JakesFading(n_sinusoids=n_sinusoids), N_CLIENTS, fd, seed=1)
    ids = np.arange(N_CLIENTS)
    t0 = 0.731
    h0 = comp.envelope_at(ids, t0)
    assert abs(np.mean(np.abs(h0) ** 2) - 1.0) < Z * np.std(np.abs(h0) ** 2) / np.sqrt(N_CLIENTS)
    for x in (0.5, 1.5, 2.405, 3.8, 5.52, 7.0):  # 2 pi f_D tau
        tau = x / (2 * np.pi * fd)
        r, se = _correlation(h0, comp.envelope_at(ids, t0 + tau))
        assert abs(r.real - j0(x)) <= Z * se, (x, r, j0(x), se)
        assert abs(r.imag) <= Z * se * 1.5, (x, r)


def test_jakes_envelope_is_rayleigh():
    """P(|h|^2 > 1) = e^-1 for Rayleigh fading (binomial standard error)."""
    comp = _started(JakesFading(n_sinusoids=16), 20_000, 50.0, seed=2)
    g = comp.power_gain_at(np.arange(20_000), 1.3)
    p, p0 = np.mean(g > 1.0), np.exp(-1.0)
    assert abs(p - p0) <= Z * np.sqrt(p0 * (1 - p0) / g.size)


def test_gauss_markov_autocorrelation_is_rho_to_the_k():
    """E[h[i] h*[i+k]] = rho^k, rho = J0(2 pi f_D dt), at lags inside a block, across one and
    across many blocks (of 32 steps); the gain is constant within a step."""
    fd, dt = 50.0, 1e-3
    comp = _started(GaussMarkovFading(update_interval_s=dt), N_CLIENTS, fd, seed=3)
    rho = j0(2 * np.pi * fd * dt)
    ids = np.arange(N_CLIENTS)
    i0 = 200
    h0 = comp.envelope_at(ids, (i0 + 0.25) * dt)
    assert np.array_equal(h0, comp.envelope_at(ids, (i0 + 0.9) * dt))  # piecewise constant
    assert abs(np.mean(np.abs(h0) ** 2) - 1.0) < Z * np.std(np.abs(h0) ** 2) / np.sqrt(N_CLIENTS)
    for k in (1, 5, 31, 33, 100, 1000):
        r, se = _correlation(h0, comp.envelope_at(ids, (i0 + k + 0.5) * dt))
        assert abs(r.real - rho**k) <= Z * se, (k, r, rho**k, se)
        assert abs(r.imag) <= Z * se * 1.5, (k, r)


def test_gauss_markov_innovations_are_standard_complex_normal():
    """The one-step innovation (h[i+1] - rho h[i]) / sqrt(1 - rho^2) has E|w|^2 = 1 and is
    uncorrelated with h[i] (within Z standard errors): the conditional draw inside a block keeps
    the innovations i.i.d. CN(0, 1)."""
    fd, dt = 200.0, 1e-3
    comp = _started(GaussMarkovFading(update_interval_s=dt), N_CLIENTS, fd, seed=4)
    rho = j0(2 * np.pi * fd * dt)
    ids = np.arange(N_CLIENTS)
    for i in (0, 17, 31, 32, 63):  # inside, at the end of and across block boundaries
        h0, h1 = comp.envelope_at(ids, i * dt), comp.envelope_at(ids, (i + 1) * dt)
        w = (h1 - rho * h0) / np.sqrt(1 - rho**2)
        p = np.abs(w) ** 2
        assert abs(p.mean() - 1.0) <= Z * p.std(ddof=1) / np.sqrt(p.size), (i, p.mean())
        r, se = _correlation(w, h0)
        assert abs(r.real) <= Z * se and abs(r.imag) <= Z * se * 1.5, (i, r)


def test_rician_line_of_sight_power_fraction():
    """The line of sight carries K/(K+1) of the power: the moment estimate sqrt(2 E[g]^2 - E[g^2])
    of the LOS power (exact for a Rician gain g = |h|^2, plus 3/(4M) sigma^4 from the finite sum of
    sinusoids) over 20 batches of 1000 clients, within Z batch standard errors (t, 19 dof: 99.9 %)."""
    k_db, m = 6.0, 16
    comp = _started(RicianJakesFading(k_factor_db=k_db, n_sinusoids=m), 20_000, 150.0, seed=5)
    k = 10 ** (k_db / 10)
    nu2, sigma2 = k / (k + 1), 1 / (k + 1)
    g = comp.power_gain_at(np.arange(20_000), 2.2).reshape(20, 1000)
    est = np.sqrt(2 * g.mean(axis=1) ** 2 - (g**2).mean(axis=1))
    expected = np.sqrt(nu2**2 + 3 / (4 * m) * sigma2**2)
    se = est.std(ddof=1) / np.sqrt(est.size)
    assert abs(est.mean() - expected) <= Z * se, (est.mean(), expected, se)
    assert abs(g.mean() - 1.0) <= Z * g.std() / np.sqrt(g.size)


@pytest.mark.parametrize("name", ["jakes", "gauss_markov", "rician_jakes"])
def test_a_query_does_not_depend_on_what_was_asked_before(name):
    n = 6
    fd = np.array([0.0, 5.0, 40.0, 120.0, 389.0, 1000.0])
    times = np.array([0.0, 0.0004, 0.0313, 0.032, 0.5, 2.0, 30.0, 0.25])
    ids, t = np.repeat(np.arange(n), times.size), np.tile(times, n)
    ref = _started(FADING.create(name), n, fd).power_gain_at(ids, t)
    singles = _started(FADING.create(name), n, fd)
    back = np.array([singles.power_gain_at(ids[i:i + 1], t[i:i + 1])[0] for i in range(ids.size)][::-1])[::-1]
    assert np.array_equal(back, ref)
    late_first = _started(FADING.create(name), n, fd)
    late_first.power_gain_at(np.arange(n), 100.0)  # the cache runs ahead
    order = np.random.default_rng(9).permutation(ids.size)
    shuffled = np.empty_like(ref)
    shuffled[order] = late_first.power_gain_at(ids[order], t[order])  # repeats of a client at many times
    assert np.array_equal(shuffled, ref)
    other_seed = _started(FADING.create(name), n, fd, seed=1).power_gain_at(ids, t)
    assert not np.any(other_seed == ref)  # the seed, not the query, decides


@pytest.mark.parametrize("name", ["jakes", "gauss_markov", "rician_jakes"])
def test_state_round_trip_continues_the_gains(name):
    n, fd = 5, np.array([0.0, 10.0, 100.0, 300.0, 50.0])
    a = _started(FADING.create(name), n, fd, seed=7)
    a.power_gain_at(np.arange(n), 1.234)
    state = a.state_dict()
    b = FADING.create(name)
    b.load_state_dict(copy.deepcopy(state))
    for t in (1.2345, 5.0, 0.01):  # later, much later, and earlier than the saved point
        assert np.array_equal(a.power_gain_at(np.arange(n), t), b.power_gain_at(np.arange(n), t))
    assert all(np.asarray(v).dtype.kind in "bifc" for v in state.values())  # no uint64: any checkpoint holds it
    empty = a.power_gain_at(np.zeros(0, dtype=int), np.zeros(0))
    assert empty.shape == (0,)
    fresh = FADING.create(name)
    assert fresh.state_dict() == {"started": False}
    fresh.load_state_dict({"started": False})
    with pytest.raises(ValueError, match="call start"):
        fresh.power_gain_at([0], 0.0)
    bad = dict(state)
    bad["doppler_hz"] = np.zeros(n + 1)
    with pytest.raises(ValueError, match="must have shape"):
        FADING.create(name).load_state_dict(bad)


def test_static_client_and_coherence_times():
    comp = _started(JakesFading(), 3, np.array([0.0, 9.729, 389.158]))
    g = comp.power_gain_at(np.zeros(4, dtype=int), np.array([0.0, 1.0, 10.0, 1e4]))
    assert np.all(g == g[0])  # f_D = 0: frozen
    tc = comp.coherence_time_s(np.arange(3))
    assert tc[0] == np.inf
    assert tc[1:] == pytest.approx(HALF_CORRELATION_ARG / (2 * np.pi * np.array([9.729, 389.158])))
    assert j0(HALF_CORRELATION_ARG) == pytest.approx(0.5, abs=1e-12)
    gm = _started(GaussMarkovFading(update_interval_s=1e-3), 3, np.array([0.0, 10.0, 1000.0]))
    rho = j0(2 * np.pi * 10.0 * 1e-3)
    tc = gm.coherence_time_s(np.arange(3))
    assert tc[0] == np.inf and tc[2] == 1e-3  # rho <= 1/2: one step
    assert rho ** (tc[1] / 1e-3) == pytest.approx(0.5)


def test_bad_queries_get_one_line():
    comp = _started(GaussMarkovFading(), 3, 10.0)
    with pytest.raises(ValueError, match=r"client_ids: got 3; allowed: ids in \[0, 2\]"):
        comp.power_gain_at([0, 3], 0.0)
    with pytest.raises(ValueError, match=r"t_s: got -1.0; allowed: finite times >= 0"):
        comp.power_gain_at([0], -1.0)
    with pytest.raises(ValueError, match="doppler_hz"):
        GaussMarkovFading().start(2, np.array([1.0, -1.0]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="update_interval_s"):
        FADING.create("gauss_markov", update_interval_s=0.0)
    with pytest.raises(ValueError, match="n_sinusoids"):
        FADING.create("jakes", n_sinusoids=2)


@pytest.mark.parametrize("name", ["jakes", "gauss_markov", "rician_jakes"])
def test_conformance(name):
    checks = check_component("fading", FADING.create(name), client_counts=(1, 4))["checks"]
    assert {"protocol TimeVaryingFading", "same gains in any query order", "same seed, same gains (fresh copies)",
            "mean power gain 1", "loaded state continues the gains"} <= set(checks)


def test_conformance_refuses_a_fading_that_remembers_the_query_order():
    class Drifting:
        """Gains that depend on how many queries came before: not a function of (seed, id, t)."""

        time_varying = True

        def start(self, n_clients, doppler_hz, rng):
            self.calls = 0
            self.base = rng.exponential(1.0, n_clients)

        def power_gain_at(self, client_ids, t_s):
            self.calls += 1
            return self.base[np.asarray(client_ids)] * (1.0 + 1e-3 * self.calls)

        def coherence_time_s(self, client_ids):
            return np.full(len(client_ids), np.inf)

        def state_dict(self):
            return {}

        def load_state_dict(self, state):
            pass

    with pytest.raises(AssertionError, match=r"fails check 'same gains in any query order'"):
        check_component("fading", Drifting())


GUIDE, SECTION = "guides/channel-models.md", "A fading that evolves in time"


def test_the_guides_own_ar1_fading_plugs_in(tmp_path, monkeypatch):
    """The user's AR(1) of the guide, copied from the page into a module of its own, is found by
    the registry as ``my_fading:MyAR1Fading``, passes the conformance check, and its
    autocorrelation is rho^k (Z standard errors, as above)."""
    from tests.helpers import doc_blocks

    (code,) = doc_blocks(GUIDE, "python", heading=SECTION)
    (command,) = doc_blocks(GUIDE, "bash", heading=SECTION)
    assert "check_component('fading', MyAR1Fading())" in command and "my_fading" in command
    (tmp_path / "my_fading.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "my_fading", raising=False)
    fading = FADING.create("my_fading:MyAR1Fading", update_interval_s=1e-3)
    checks = check_component("fading", fading)["checks"]
    assert {"protocol TimeVaryingFading", "same gains in any query order", "loaded state continues the gains"} \
        <= set(checks)
    n, fd, dt = 2000, 50.0, 1e-3
    fading.start(n, np.full(n, fd), np.random.default_rng(11))
    rho, ids = j0(2 * np.pi * fd * dt), np.arange(n)
    h0 = np.sqrt(fading.power_gain_at(ids, 0.0))  # |h|: correlate the power gains instead
    g0 = h0**2
    for k in (1, 20, 100):
        g1 = fading.power_gain_at(ids, k * dt)
        # for a complex Gaussian h, E[|h0|^2 |h1|^2] - 1 = |E h0 h1*|^2 = rho^(2k)
        prod = g0 * g1
        se = prod.std(ddof=1) / np.sqrt(n)
        assert abs(prod.mean() - 1.0 - rho ** (2 * k)) <= Z * se, (k, prod.mean(), rho ** (2 * k))
    monkeypatch.delitem(__import__("sys").modules, "my_fading", raising=False)


class _OnlyInTime:
    """A fading that evolves in time and has no per-block draw (no sample_power_gain)."""

    time_varying = True

    def start(self, n_clients, doppler_hz, rng):
        self.n = n_clients

    def power_gain_at(self, client_ids, t_s):
        return np.ones(np.asarray(client_ids).shape)

    def coherence_time_s(self, client_ids):
        return np.full(np.asarray(client_ids).shape, np.inf)

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass


class _Neither:
    def gain(self):
        return 1.0


def test_the_fading_registry_takes_a_fading_in_time_without_a_per_block_draw() -> None:
    from sfl_sim.channel.link.fading import FADING
    from sfl_sim.kit.protocols import ComponentProtocolError

    assert FADING.get(f"{__name__}:_OnlyInTime") is _OnlyInTime
    with pytest.raises(ComponentProtocolError) as err:
        FADING.get(f"{__name__}:_Neither")
    message = str(err.value)
    assert "\n" not in message and "sample_power_gain" in message and "power_gain_at" in message


@pytest.mark.parametrize("n_sinusoids", [4, 16, 37])
def test_jakes_sums_both_quadratures_at_once_as_each_alone(n_sinusoids):
    """One gather and cosine for both quadratures (one client by a slice) gives each quadrature's
    sum as its own (k, M) array does, bit for bit, for one client and many."""
    n = 50
    rng = np.random.default_rng(3)
    fading = _started(JakesFading(n_sinusoids=n_sinusoids), n, rng.uniform(0.0, 1000.0, n))
    ids = rng.integers(0, n, 400)
    t = rng.uniform(0.0, 500.0, 400)

    def alone(k, tk):
        xc = np.cos(fading._omega_c[k] * tk[:, None] + fading._phase_c[k]).sum(axis=1)
        xs = np.cos(fading._omega_s[k] * tk[:, None] + fading._phase_s[k]).sum(axis=1)
        return (xc * xc + xs * xs) / n_sinusoids

    assert np.array_equal(fading.power_gain_unchecked(ids, t), alone(ids, t))
    one = [fading.power_gain_unchecked(ids[i:i + 1], t[i:i + 1])[0] for i in range(ids.size)]
    assert np.array_equal(np.array(one), alone(ids, t))
