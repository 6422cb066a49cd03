"""The channel in time in ``sfl-sim channel``: a time-varying fading's Doppler line and its envelope's
autocorrelation against the model's (``fading_autocorrelation.png``), a timed mobility's line."""
import io

import numpy as np
import pytest
from scipy.special import j0

from sfl_sim.channel.large_scale.pathloss import SPEED_OF_LIGHT_M_PER_S
from sfl_sim.config import validate
from sfl_sim.reports.channel import channel_report
from sfl_sim.reports.channel_time import AUTOCORRELATION_FILE, fading_autocorrelation
from sfl_sim.runs.build import build_cell

#: The estimate's tolerance against the model, absolute on Re R / R(0).  Our choice: the sum of
#: sinusoids' own time average is a 2M-point quadrature of Clarke's integral (exact to ~1e-3 over
#: these lags) and the segments' finite length adds ~1 / (f_D x segment) = 1 / (3 x 10) in the
#: worst single client.  Measured here: 0.008 for jakes (8 clients x 2 segments), 0.008 for
#: gauss_markov (8 clients x 13 segments; 0.024 with 3).
TOLERANCE = 0.03


def cfg(**cell):
    return validate({"seed": 3, "clients": {"count": 8, "participation": 0.5}, "cell": cell})


def test_a_jakes_cell_reports_its_doppler_and_its_autocorrelation_is_j0(tmp_path):
    out = io.StringIO()
    channel_report(cfg(fading={"name": "jakes", "speed_m_per_s": 3.0}), tmp_path, stream=out, rounds=4)
    assert (tmp_path / AUTOCORRELATION_FILE).stat().st_size > 10_000
    fd = 3.0 * 2.0e9 / SPEED_OF_LIGHT_M_PER_S  # the TR 36.814 macro has no carrier: the cell's 2 GHz
    coherence_ms = 0.242 / fd * 1e3  # J0 = 1/2 at 2 pi f_D tau = 1.52 (fading_time.HALF_CORRELATION_ARG)
    lines = out.getvalue().splitlines()
    line = next(x for x in lines if x.startswith("fading jakes in time"))
    assert f"Doppler f_D min/median/max {fd:.3g}/{fd:.3g}/{fd:.3g} Hz" in line
    assert "speed 3 m/s for every client (fading speed_m_per_s: drop-based)" in line
    assert f"coherence time min/median/max {coherence_ms:.3g}/{coherence_ms:.3g}/{coherence_ms:.3g} ms" in line
    # the rule that integrates its transfers (a smooth fading: Gauss-Legendre panels, not held steps)
    assert line.endswith("transfers integrated by Gauss-Legendre panels of min(0.2 x coherence, 20 ms), 2 nodes each")
    assert any(x.startswith(f"  {AUTOCORRELATION_FILE}: envelope autocorrelation over 8 clients") for x in lines)
    assert not any(x.startswith("mobility") for x in lines)  # static clients: no timed mobility
    data = fading_autocorrelation(build_cell(cfg(fading={"name": "jakes", "speed_m_per_s": 3.0})), 4.0)
    assert data is not None and data.fading == "JakesFading"
    np.testing.assert_allclose(data.model, j0(2 * np.pi * fd * data.lag_s), rtol=0, atol=1e-12)
    assert data.lag_s[-1] == pytest.approx(3.0 / fd)  # three Doppler periods
    assert data.max_deviation() <= TOLERANCE
    assert data.empirical[0] == 1.0 and data.empirical.min() < -0.3  # J0's first trough, -0.40, is seen


def test_gauss_markov_against_rho_to_the_k_and_a_timed_mobility_line(tmp_path):
    cell = build_cell(cfg(fading={"name": "gauss_markov", "update_interval_s": 1e-3},
                          mobility={"name": "gauss_markov", "mean_speed_m_per_s": 10.0}))
    data = fading_autocorrelation(cell, 16.0)  # 13 segments: an AR(1)'s estimate scatters more
    assert cell.radio.transfer_rule == "held steps of min(0.1 x coherence, 10 ms)"
    assert build_cell(cfg(mobility={"name": "gauss_markov", "mean_speed_m_per_s": 10.0})).radio.transfer_rule \
        .startswith("pieces of constant rate")
    fd = 10.0 * 2.0e9 / SPEED_OF_LIGHT_M_PER_S
    rho = j0(2 * np.pi * fd * 1e-3)
    np.testing.assert_allclose(data.lag_s / 1e-3, np.round(data.lag_s / 1e-3), atol=1e-9)  # on the AR grid
    np.testing.assert_allclose(data.model, rho ** np.round(data.lag_s / 1e-3), rtol=1e-12)
    assert data.max_deviation() <= TOLERANCE
    out = io.StringIO()
    channel_report(cfg(mobility={"name": "gauss_markov", "mean_speed_m_per_s": 10.0}), tmp_path, stream=out,
                   rounds=2)
    lines = out.getvalue().splitlines()
    assert any(x.startswith("mobility gauss_markov (timed): nominal speed min/median/max 10/10/10 m/s") for x in lines)
    assert not (tmp_path / AUTOCORRELATION_FILE).exists() and not any(x.startswith("fading") for x in lines)


def test_a_block_fading_has_no_figure_and_a_stale_one_goes(tmp_path):
    (tmp_path / "a").mkdir()
    channel_report(cfg(fading={"name": "jakes", "speed_m_per_s": 3.0}), tmp_path / "a", stream=io.StringIO(), rounds=1)
    assert (tmp_path / "a" / AUTOCORRELATION_FILE).exists()
    out = io.StringIO()
    channel_report(cfg(fading={"name": "rayleigh"}), tmp_path / "a", stream=out, rounds=1)
    assert not (tmp_path / "a" / AUTOCORRELATION_FILE).exists()
    assert "in time" not in out.getvalue()
    assert fading_autocorrelation(build_cell(cfg(fading={"name": "rayleigh"})), 1.0) is None
