"""Physical ranges of channel parameters, defined once.

A value outside its :class:`~sfl_sim.kit.ranges.Range` describes no radio link that exists (a 1e-300 Hz band, a
1e308 W transmitter, a 1e300 m cell) and would turn into an infinite SNR, a zero upload time or an
overflow somewhere downstream.  The components of :mod:`sfl_sim.channel` check their parameters against
these constants, and scenario validation (``sfl_sim.config``) imports the same constants, so the
two never disagree::

    from sfl_sim.channel.limits import UPLINK_BANDWIDTH_HZ
    UPLINK_BANDWIDTH_HZ.check("cell.uplink_bandwidth_hz", 20e6)   # -> 20000000.0

The ranges are deliberately wide (orders of magnitude around every real system): they exist to
stop nonsense, not to enforce typical values.  Each constant carries a one-line reason.
"""
from __future__ import annotations

from sfl_sim.kit.ranges import Range

__all__ = [
    "BANDWIDTH_HZ",
    "UPLINK_BANDWIDTH_HZ",
    "DOWNLINK_BANDWIDTH_HZ",
    "CLIENT_TX_POWER_W",
    "SERVER_TX_POWER_W",
    "NOISE_PSD_DBM_PER_HZ",
    "NOISE_FIGURE_DB",
    "CELL_RADIUS_M",
    "MIN_DISTANCE_M",
    "CLIENT_DISTANCE_M",
    "CARRIER_FREQUENCY_HZ",
    "PATHLOSS_EXPONENT",
    "SPEED_M_PER_S",
    "SHADOWING_SIGMA_DB",
    "DECORRELATION_M",
    "RICIAN_K_FACTOR_DB",
    "NAKAGAMI_M",
    "FADING_SINUSOIDS",
    "FADING_UPDATE_INTERVAL_S",
    "SPECTRAL_EFFICIENCY_BPS_PER_HZ",
    "SNR_GAP_DB",
    "BER_TARGET",
    "SHANNON_ATTENUATION",
    "SINR_MIN_DB",
    "OVERHEAD_FRACTION",
    "BLER_TARGET",
    "CODE_BLOCK_BITS",
    "HARQ_RTT_S",
    "MAX_TRANSMISSIONS",
    "SLOT_S",
    "CLIENT_MAX_POWER_DBM",
    "NOMINAL_RX_POWER_DBM",
    "SUBCARRIER_SPACING_HZ",
    "NOISE_RISE_DB",
    "ACTIVITY",
    "RB_LOAD",
    "INTER_SITE_DISTANCE_M",
    "SIMULATED_INTERVAL_S",
    "ALL_RANGES",
]


# The bounds below are chosen so that every real system lies well inside and the arithmetic of
# the cell (p g / (b N0), 10^(-PL/10), log2) stays finite at every corner of the box.

#: Any bandwidth, Hz.
BANDWIDTH_HZ = Range(
    1.0, 1e12, "1 Hz is narrower than any radio channel; 1 THz exceeds all allocated radio spectrum", "Hz"
)
#: The uplink band shared by the clients of one phase, Hz.
UPLINK_BANDWIDTH_HZ = BANDWIDTH_HZ
#: The downlink band, Hz.
DOWNLINK_BANDWIDTH_HZ = BANDWIDTH_HZ
#: Transmit power of one client, W.
CLIENT_TX_POWER_W = Range(
    1e-9, 1e4,
    "1 nW (-60 dBm) is below any transmitter; 10 kW exceeds the largest terminal amplifiers "
    "(a handset sends 0.2 W)", "W",
)
#: Transmit power of the server (base station), W.
SERVER_TX_POWER_W = Range(
    1e-9, 1e6, "1 nW is below any transmitter; 1 MW exceeds the largest broadcast transmitters "
    "(a macro base station sends 20-80 W)", "W",
)
#: Receiver noise power spectral density, dBm/Hz.
NOISE_PSD_DBM_PER_HZ = Range(
    -250.0, -50.0,
    "thermal noise is -174 dBm/Hz at 290 K and -199 dBm/Hz at 1 K; -50 dBm/Hz is a noise figure "
    "of 124 dB, no receiver", "dBm/Hz",
)
#: Receiver noise figure, dB.
NOISE_FIGURE_DB = Range(0.0, 100.0, "a noise figure is >= 0 dB by definition; 100 dB is no receiver", "dB")
#: Cell radius, m.
CELL_RADIUS_M = Range(
    0.0, 1e5, "> 0; 100 km is the largest terrestrial cell (LTE PRACH format 3 reaches ~100 km)", "m",
    low_open=True,
)
#: Exclusion radius around the base station, m.
MIN_DISTANCE_M = Range(0.0, 1e5, ">= 0 and no larger than the largest cell (100 km)", "m")
#: Distance of a client from the base station, m.
CLIENT_DISTANCE_M = Range(
    0.0, 1e5, "> 0 (path loss is undefined at 0) and inside the largest cell (100 km)", "m", low_open=True
)
#: Carrier frequency of a generic path-loss model, Hz.
CARRIER_FREQUENCY_HZ = Range(1e6, 1e12, "1 MHz to 1 THz spans every radio-access band", "Hz")
#: Exponent of a log-distance path loss.
PATHLOSS_EXPONENT = Range(
    0.0, 10.0, "> 0; measured exponents lie between 1.6 (corridors) and 6.5 (inside buildings)", low_open=True
)
#: Client speed, m/s.
SPEED_M_PER_S = Range(
    0.0, 1e3, ">= 0; 1 km/s is faster than any vehicle that carries a radio client (airliners: 250 m/s)", "m/s"
)
#: Shadowing standard deviation, dB.
SHADOWING_SIGMA_DB = Range(
    0.0, 50.0, ">= 0; measured shadowing is 3-12 dB, 50 dB leaves room for stress tests", "dB"
)
#: Shadowing (or LOS-state) decorrelation distance, m.
DECORRELATION_M = Range(0.0, 1e5, "> 0 and no larger than the largest cell (100 km)", "m", low_open=True)
#: Rician K factor, dB.
RICIAN_K_FACTOR_DB = Range(
    -100.0, 100.0, "-100 dB is Rayleigh, +100 dB no fading, to any precision that matters", "dB"
)
#: Nakagami shape m.
NAKAGAMI_M = Range(0.5, 1e6, "m >= 0.5 by definition; beyond 1e6 the gain is 1 within 0.1 %")
#: Sinusoids of a sum-of-sinusoids (Clarke/Jakes) fading generator.  Our choice: Zheng & Xiao
#: (IEEE Trans. Commun. 51(6), 2003, abstract) report good convergence of the fourth-order
#: statistics from 8; below 4 the gain is far from Rayleigh, above 1024 only the cost grows.
FADING_SINUSOIDS = Range(4.0, 1024.0, "our choice: from 4 (far from Rayleigh below; 8 already converges well, "
                         "Zheng & Xiao 2003) to 1024 (more only costs time)")
#: Grid step of a time-correlated fading process that is updated on a grid (Gauss-Markov), s.
#: Our choice: 1 us is below the shortest slot :data:`SLOT_S` allows (1/32 ms); above 10 s
#: consecutive values of a moving client's fading are uncorrelated (a walker at 3.5 GHz has a
#: coherence time of tens of ms).
FADING_UPDATE_INTERVAL_S = Range(
    1e-6, 10.0, "our choice: 1 us is below the shortest NR slot (1/32 ms); beyond 10 s the steps of a moving "
    "client's fading are uncorrelated", "s",
)
#: Cap on the spectral efficiency of a rate model, bit/s/Hz.
SPECTRAL_EFFICIENCY_BPS_PER_HZ = Range(
    0.0, 100.0, "> 0; 100 bit/s/Hz exceeds any modulation and MIMO layering (NR peak ~ 60)", "bit/s/Hz",
    low_open=True,
)

#: SNR gap of a link abstraction to Shannon capacity, dB.
SNR_GAP_DB = Range(
    0.0, 30.0, "a gap below 0 dB would beat Shannon capacity; at 30 dB no coded link is worth modelling", "dB"
)
#: Bit-error-rate target of the SNR-gap model Gamma = -ln(5 BER) / 1.5.
BER_TARGET = Range(
    0.0, 0.0446,
    "> 0; above exp(-1.5)/5 = 0.0446 the gap -ln(5 BER)/1.5 falls below 0 dB and the model beats Shannon "
    "capacity (and turns negative from 0.2)", low_open=True,
)
#: Attenuation factor alpha of an attenuated Shannon bound.
SHANNON_ATTENUATION = Range(0.0, 1.0, "> 0 and <= 1: a fraction of Shannon capacity", low_open=True)
#: Lowest SINR at which a link abstraction still carries data, dB.
SINR_MIN_DB = Range(-50.0, 50.0, "-50 dB is below any coded link (QPSK 1/8 needs about -10 dB); 50 dB above any", "dB")
#: Fraction of the resource elements spent on control and reference signals.
OVERHEAD_FRACTION = Range(
    0.0, 0.9, "TS 38.306 uses 0.08-0.18; at 1 no data would flow, and above 0.9 hardly any"
)

#: Block-error-rate target of a BLER-based CQI choice.
BLER_TARGET = Range(
    0.0, 0.99, "> 0 (no CQI has BLER 0 everywhere) and at most 0.99 (a target near 1 lets every CQI pass)",
    low_open=True,
)
#: Size of an LDPC code block, bits.
CODE_BLOCK_BITS = Range(
    24.0, 8448.0, "NR code blocks carry 24 bits (the smallest transport block) to 8448 (LDPC base graph 1)", "bit"
)
#: HARQ round-trip time, s.
HARQ_RTT_S = Range(0.0, 1.0, ">= 0; LTE and NR round trips are a few ms, 1 s is no HARQ", "s")
#: Transmissions of one HARQ transport block in all (1: no retransmission).
MAX_TRANSMISSIONS = Range(
    1.0, 64.0, "1 is no retransmission; NR and LTE configure a handful (4 is usual), 64 is far beyond any"
)
#: Slot (transmission time interval) duration, s.
SLOT_S = Range(
    1e-3 / 32, 1e-2, "NR slots last 1 ms / 2^mu (mu = 0..5, 1/32 ms at 480 kHz); 10 ms is a whole radio frame", "s"
)
#: Maximum transmit power P_CMAX of a terminal, dBm.
CLIENT_MAX_POWER_DBM = Range(
    -40.0, 40.0, "TS 38.101-1 power classes span 23-31 dBm (class 3: 23 dBm); -40 dBm is below any terminal, "
    "40 dBm (10 W) above any", "dBm",
)
#: Target received power per resource block P0 of uplink power control, dBm.
NOMINAL_RX_POWER_DBM = Range(-202.0, 24.0, "the range of TS 38.331 p0-NominalWithGrant", "dBm")
#: NR subcarrier spacing, Hz.
SUBCARRIER_SPACING_HZ = Range(15e3, 240e3, "15 to 240 kHz: the NR numerologies of TS 38.211 Table 4.2-1", "Hz")
#: Noise rise (interference over thermal) at a receiver, dB.
NOISE_RISE_DB = Range(0.0, 60.0, ">= 0 (interference adds to noise); 60 dB leaves no usable link", "dB")
#: Probability that an interfering client transmits.
ACTIVITY = Range(0.0, 1.0, "a probability, in [0, 1]")
#: Fraction of a cell's resource blocks in use (its load).
RB_LOAD = Range(0.0, 1.0, "a fraction of the resource blocks, in [0, 1]")
#: Distance between neighbouring base stations, m.
INTER_SITE_DISTANCE_M = Range(
    0.0, 2e5, "> 0; TR 38.901 Table 7.2-1 uses 200 m (UMi) and 500 m (UMa), 200 km spans the largest cells",
    "m", low_open=True,
)

#: A recurring interval of simulated time (an asynchronous server's aggregation period
#: ``period_s``, the evaluation grid ``eval_every_sim_s``), s.  Our choice: at least the NR
#: subframe of 1 ms (TS 38.211 clause 4.3.2: 2^mu slots per 1 ms subframe, as
#: :class:`~sfl_sim.channel.link.scheduling.ResourceGrid` reads it), the unit an uplink is scheduled
#: in: nothing a server could aggregate arrives faster, and a shorter period only adds empty ticks
#: (1e-300 s never ended: it is below a float clock's resolution, so time stops advancing).
SIMULATED_INTERVAL_S = Range(1e-3, float("inf"), "at least the 1 ms NR subframe: a shorter interval only adds "
                             "empty ticks, and below the clock's resolution the run never ends", "s")

#: Every range by name (for documentation and for validators that walk them).
ALL_RANGES = {
    name: value for name, value in dict(globals()).items() if isinstance(value, Range) and name.isupper()
}
