"""One round's links as the cell gives them: band shares, rates, SNRs and powers (no scheduling).

:class:`Uplink` holds the cohort's uplink shares and rates for the round, allocated from the
large-scale gains, the round's fading draw and the payloads the algorithm declares, and applies
the coherence rule (a new fading draw per block) that the link process asks for
(:mod:`sfl_sim.engine.link`).  :class:`Downlink` holds the round's unicast and broadcast rates.
Traced rates (``uplink_bps`` / ``downlink_bps`` of a device trace) replace the cell's where given.

Both ask only the cell's radio state (:class:`~sfl_sim.channel.radio_state.RadioState`) for links.
When the radio is in time (a time-varying fading, a timed mobility), they advance it to the clock
(``clock``, the engine's ``env.now``) whenever they ask: a time-varying fading's gains are those at
that time (no draw from the run's ``fading`` stream, so every fidelity and re-timing sees the same
channel), and :meth:`Uplink.air_time_s`, :meth:`Downlink.air_time_s` and
:meth:`Downlink.broadcast_time_s` integrate a transfer's bits over the channel as it changes
(:meth:`RadioState.transfer_ends_s <sfl_sim.channel.radio_state.RadioState.transfer_ends_s>`);
the transfers of a cohort that start together are computed at once (:class:`_Transfers`).
Otherwise nothing depends on the clock and everything is as the round's draw gives it.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

import numpy as np

from sfl_sim.channel.cell import Cell
from sfl_sim.channel.link.outage import OutagePolicy
from sfl_sim.channel.link.power_control import headroom_rbs
from sfl_sim.channel.radio_state import RadioState
from sfl_sim.config.choices import Coherence, DownlinkMode

__all__ = ["Downlink", "Uplink"]


class Uplink:
    """The cohort's uplink in one round.

    Parameters
    ----------
    cell : Cell
    cohort : ndarray of int, shape (k,)
    coherence : {"per_round", "per_iteration", "per_transmission"}
        Coherence block of the fading (see "Small-scale fading and outage" in
        :mod:`sfl_sim.engine.simulator`).
    fading_rng : numpy.random.Generator
        The run's fading stream; the round's draw is taken here, redraws later.
    traced_bps : mapping of int to float
        Clients whose uplink rate a device trace fixes, bit/s (no fading redraw for them).
    clock : callable, optional
        The simulated time now, s (the engine's ``env.now``); None: 0 (a radio not in time never asks).
    """

    def __init__(self, cell: Cell, cohort: np.ndarray, coherence: Coherence, fading_rng: np.random.Generator,
                 traced_bps: Mapping[int, float], clock: Callable[[], float] | None = None) -> None:
        self._cell, self._cohort, self._coherence = cell, cohort, coherence
        self._rng, self._traced = fading_rng, traced_bps
        self._radio = radio = cell.radio
        self._clock = (lambda: 0.0) if clock is None else clock
        self._in_time, self._time_varying = radio.in_time, radio.time_varying
        if self._time_varying:
            self._round_fading = radio.fading_at(cohort, self._now())
        else:
            self._round_fading = cell.sample_fading(cohort, fading_rng)
        self._block: dict[int, Hashable] = {}  # per_iteration: the block each client's rate belongs to
        # a time-varying fading: the start links and ends of transfers, kept (see _Transfers)
        self._transfers = _Transfers(radio, "uplink", [k for k in cohort.tolist() if k not in traced_bps]) \
            if self._time_varying else None
        self.allocate(None)

    def allocate(self, payload_bits: Mapping[int, float] | None) -> None:
        """(Re)allocate the band among the cohort, for ``payload_bits`` (client -> bits) or, with
        None, for no declared payload (:meth:`sfl_sim.engine.RoundContext.allocate_uplink`)."""
        ids = self._cohort.tolist()
        payload = None if payload_bits is None else np.array([float(payload_bits[k]) for k in ids])
        link = self._radio.links(self._cohort, self._now(), payload_bits=payload, fading=self._round_fading)
        self._fading_gain = dict(zip(ids, self._round_fading.tolist(), strict=True))
        self._share_hz = dict(zip(ids, link.bandwidth_hz.tolist(), strict=True))
        self._rate_bps = dict(zip(ids, link.rate_bps.tolist(), strict=True))
        self._snr_db = dict(zip(ids, link.snr_db.tolist(), strict=True))
        self._tx_power_w = dict(zip(ids, link.tx_power_w.tolist(), strict=True))
        now = self._now() if self._in_time else 0.0
        self._rate_at_s: dict[int, float] = dict.fromkeys(ids, now)  # when each rate was evaluated
        for k in ids:
            if k in self._traced:
                self._rate_bps[k] = self._traced[k]

    @property
    def in_time(self) -> bool:
        """True when the radio depends on time (a transfer's air time is integrated over it)."""
        return self._in_time

    @property
    def radio(self) -> RadioState:
        """The cell's radio state (the engine tells it which clients transmit)."""
        return self._radio

    def refresh_s(self) -> float | None:
        """How often a fluid band re-shares while the channel changes in time: the cohort's
        shortest rate step (:meth:`~sfl_sim.channel.radio_state.RadioState.step_s`), s; None when
        the radio does not depend on time (the shares change only when a transfer starts or ends)."""
        return _refresh_s(self._radio, self._cohort)

    def share_hz(self, client: int) -> float:
        """Bandwidth allocated to ``client``, Hz."""
        return self._share_hz[client]

    def rate_bps(self, client: int) -> float:
        """Rate of ``client`` now (after its latest fading draw), bit/s."""
        return self._rate_bps[client]

    def snr_db(self, client: int) -> float:
        """SNR of ``client`` now, dB."""
        return self._snr_db[client]

    def tx_power_w(self, client: int) -> float:
        """Transmit power of ``client`` on its share (the cell's power control), W."""
        return self._tx_power_w[client]

    def fading_gain(self, client: int) -> float:
        """The fading power gain ``client``'s rate was last computed with (linear)."""
        return self._fading_gain[client]

    def enter_block(self, client: int, block: Hashable) -> None:
        """A transfer of ``client`` in coherence block ``block`` starts: a new fading draw for every
        transfer (``per_transmission``) or when the block differs from its last one (``per_iteration``).

        A radio in time: the rate is that at the transfer's start (the time-varying fading's gain
        then, whatever the coherence choice: the component's own coherence time rules)."""
        if self._in_time:
            if self._time_varying:
                self.redraw(client)  # the gain at the start, no draw
            elif self._coherence == "per_transmission" or (
                    self._coherence == "per_iteration" and block is not None
                    and self._block.get(client, block) != block):
                self.redraw(client)
            else:
                self._evaluate(client, self._fading_gain[client])
        elif self._coherence == "per_transmission" or (
                self._coherence == "per_iteration" and block is not None and self._block.get(client, block) != block):
            self.redraw(client)
        if block is not None:
            self._block[client] = block

    def redraw(self, client: int) -> None:
        """New fading draw for ``client`` on the share it holds (none for a traced rate)."""
        if client in self._traced:
            return
        if self._time_varying:  # no draw: the gain at the time it is asked
            self._start_now(client)
            return
        fading = self._cell.sample_fading([client], self._rng)
        if self._in_time:
            self._evaluate(client, float(fading[0]))
            return
        self._fading_gain[client] = float(fading[0])
        link = self._cell.uplink_link_at_bandwidth([client], [self._share_hz[client]], fading_gain=fading)
        self._rate_bps[client] = float(link.rate_bps[0])
        self._snr_db[client] = float(link.snr_db[0])

    def air_time_s(self, client: int, bits: float) -> float:
        """How long ``bits`` of ``client`` starting now take on its share, s: ``bits / rate`` (the
        rate now), or, for a radio in time, integrated over the channel as it changes."""
        if not self._in_time or client in self._traced:
            return bits / self._rate_bps[client]
        now = self._now()
        if not self._time_varying:
            # the rate kept is the one at the transfer's start when it was evaluated now (a retry
            # after a wait keeps an older one: the state evaluates the start again)
            start = self._rate_bps[client] if self._rate_at_s.get(client) == now else None
            end_s = self._radio.transfer_end_s(client, bits, now, self._share_hz[client],
                                               fading_gain=self._fading_gain[client], start_rate_bps=start)
            return max(0.0, end_s - now)
        assert self._transfers is not None
        end_s = self._transfers.end(client, bits, now, self._share_hz, self._rate_bps[client])
        return max(0.0, end_s - now)

    def _start_now(self, client: int) -> None:
        """A time-varying fading: ``client``'s gain and link now on its share (:class:`_Transfers`)."""
        assert self._transfers is not None
        start = self._transfers.start(client, self._now(), self._share_hz)
        self._fading_gain[client], self._rate_bps[client], self._snr_db[client], self._tx_power_w[client] = start

    def _now(self) -> float:
        """The clock now; the radio state advanced to it when it is in time."""
        now = float(self._clock())
        if self._in_time:
            self._radio.advance_to(now)
        return now

    def _evaluate(self, client: int, gain: float) -> None:
        """``client``'s rate now on its share with fading ``gain`` (a radio in time): the numbers of
        :meth:`RadioState.links`, one link at a time (:meth:`RadioState.uplink_of`)."""
        self._fading_gain[client] = gain
        if client in self._traced:
            return
        now = self._now()
        rate, snr_db, power = self._radio.uplink_of(client, now, self._share_hz[client], gain)
        self._rate_bps[client], self._snr_db[client], self._tx_power_w[client] = rate, snr_db, power
        self._rate_at_s[client] = now

    def fading_of(self, clients: np.ndarray) -> np.ndarray:
        """The clients' fading power gains now (their latest draw by the coherence rule): what a
        scheduled band sees (:mod:`sfl_sim.engine.band`), in either fidelity; a time-varying
        fading's gains at the clock's time."""
        if self._time_varying:
            return self._radio.fading_at(clients, self._now())
        return np.array([self._fading_gain[k] for k in clients.tolist()])

    def headroom_rbs(self, clients: np.ndarray) -> np.ndarray | None:
        """The clients' power headroom in resource blocks (the power control's ``headroom_rbs`` at
        their coupling loss now: the radio state's, to each client's serving cell on a network and at
        its position now under a timed mobility; the single cell's large-scale state otherwise), or
        None when the power control sets no limit."""
        power_control = self._cell.power_control
        if getattr(power_control, "headroom_rbs", None) is None:
            return None  # no limit: nothing to look up
        return headroom_rbs(power_control, self._radio.coupling_loss_db(clients, self._now()))

    def link_at(self, clients: np.ndarray, bandwidth_hz: np.ndarray,
                fading_gain: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rate (bit/s), SNR (dB) and transmit power (W) of the clients on these bandwidths with
        these fading gains (the power control sees the bandwidth: a grant's resource blocks).

        The cell's :meth:`~sfl_sim.channel.Cell.uplink_link_at_bandwidth`, for links rather than
        clients: a client may appear more than once (its table of RB counts, in one call).
        """
        link = self._radio.links(clients, self._now(), bandwidth_hz, fading=fading_gain)
        return link.rate_bps, link.snr_db, link.tx_power_w


class Downlink:
    """The cohort's downlink in one round: one fading draw per round.

    A client with no usable rate (the downlink rate model finds no MCS at its SINR: on its share
    with ``unicast``, on the whole band with ``broadcast``) is in downlink outage.  On a radio in
    time a transfer's bits are integrated over the channel as it changes (:meth:`air_time_s`,
    :meth:`broadcast_time_s`); the outage is judged at the round's start.  The outage
    policy decides: with ``retransmit`` each further attempt sees a fresh fading draw of that
    client, up to ``max_attempts`` in all (a failed attempt at rate 0 takes no air time, as on
    the uplink, so the attempts are drawn here, at the round's start); a client still without a
    rate is in :attr:`outage`, and payloads for it are dropped (``downlink_outage``).  The
    policy's rate and SNR thresholds are the uplink's; the downlink fails only at rate 0.

    Parameters
    ----------
    cell : Cell
    cohort : ndarray of int, shape (k,)
    mode : {"ideal", "broadcast", "unicast"}
        ``ideal`` draws nothing and has no rates.
    fading_rng : numpy.random.Generator
    traced_bps : mapping of int to float
        Clients whose downlink rate a device trace fixes, bit/s (a broadcast goes at the slowest
        of the channel's rate and the cohort's traced rates).
    outage : OutagePolicy, optional
        How many attempts a client in downlink outage gets (None: one).
    clock : callable, optional
        The simulated time now, s (as :class:`Uplink`'s).

    Attributes
    ----------
    unicast_bps : dict of int to float
        Each client's rate on its share, bit/s (0 for a client in outage).
    broadcast_bps : float
        Rate of a broadcast: the slowest receiver's that has a usable rate, bit/s (0 when none has).
    outage : set of int
        Clients in downlink outage this round.
    attempts : dict of int to int
        Attempts each client's downlink took (1 unless it was retransmitted).
    """

    def __init__(self, cell: Cell, cohort: np.ndarray, mode: DownlinkMode, fading_rng: np.random.Generator,
                 traced_bps: Mapping[int, float], outage: OutagePolicy | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        self._cell = cell
        self._radio = radio = cell.radio
        self._cohort = cohort
        self._clock = (lambda: 0.0) if clock is None else clock
        self._fading: dict[int, float] = {}
        self._share_hz: dict[int, float] = {}
        self._traced = traced_bps
        self._transfers: _Transfers | None = None
        self.unicast_bps: dict[int, float] = {}
        self.broadcast_bps = 0.0
        self.outage: set[int] = set()
        self.attempts: dict[int, int] = {}
        if mode == "ideal":
            return
        ids = cohort.tolist()
        start_s = self._now()
        if radio.time_varying:
            self._transfers = _Transfers(radio, "downlink", [k for k in ids if k not in traced_bps])
        # a time-varying fading: the gains at the round's start; attempt i (a retransmission) sees
        # the gains i - 1 of the client's steps later (our choice: a tenth of its coherence time
        # each, so the channel has changed; a frozen one stays in outage)
        fading = radio.fading_at(cohort, start_s) if radio.time_varying else cell.sample_fading(cohort, fading_rng)
        self._fading = dict(zip(ids, fading.tolist(), strict=True))
        link = cell.downlink_link(cohort, fading_gain=fading)
        self.unicast_bps = dict(zip(ids, link.rate_bps.tolist(), strict=True))
        whole: dict[int, float] = {}
        if mode == "broadcast":
            whole = dict(zip(ids, cell.broadcast_link(cohort, fading_gain=fading).rate_bps.tolist(), strict=True))
        usable = whole if mode == "broadcast" else self.unicast_bps
        traced = {k: traced_bps[k] for k in ids if k in traced_bps}
        max_attempts = 1 if outage is None else outage.max_attempts
        shares = self._share_hz = dict(zip(ids, link.bandwidth_hz.tolist(), strict=True))
        for k in ids:
            self.attempts[k] = 1
            while usable[k] <= 0.0 and k not in traced and self.attempts[k] < max_attempts:
                self.attempts[k] += 1
                redraw = (radio.fading_at([k], start_s + (self.attempts[k] - 1) * radio.step_of(k))
                          if radio.time_varying else cell.sample_fading([k], fading_rng))
                self._fading[k] = float(redraw[0])
                if mode == "broadcast":
                    whole[k] = float(cell.broadcast_link([k], fading_gain=redraw).rate_bps[0])
                else:
                    self.unicast_bps[k] = float(cell.downlink_link_at_bandwidth([k], [shares[k]], redraw).rate_bps[0])
        self.unicast_bps.update(traced)
        self.outage = {k for k in ids if usable[k] <= 0.0 and k not in traced}
        if mode == "broadcast":
            decodable = [whole[k] for k in ids if k not in self.outage]
            self.broadcast_bps = min([*decodable, *traced.values()]) if decodable or traced else 0.0

    def air_time_s(self, client: int, bits: float) -> float:
        """How long a unicast of ``bits`` to ``client`` starting now takes on its share, s: ``bits /
        rate`` (the round's rate), or, for a radio in time, integrated over the channel as it
        changes from now (as :meth:`Uplink.air_time_s`; with a time-varying fading the gain at
        each step, otherwise the round's draw).  Not for a client in :attr:`outage`."""
        rate = self.unicast_bps[client]
        if not self._radio.in_time or client in self._traced:
            return bits / rate
        now = self._now()
        if self._transfers is None:
            end_s = self._radio.transfer_end_s(client, bits, now, self._share_hz[client], "downlink",
                                               fading_gain=self._fading[client])
        else:
            start_bps = self._transfers.start(client, now, self._share_hz)[1]
            end_s = self._transfers.end(client, bits, now, self._share_hz, start_bps)
        return max(0.0, end_s - now)

    def broadcast_time_s(self, receivers: list[int], bits: float) -> float:
        """How long one broadcast of ``bits`` to ``receivers`` (none in :attr:`outage`) starting
        now takes, s: ``bits /`` :attr:`broadcast_bps`, or, for a radio in time, integrated over
        the channel as it changes (:meth:`RadioState.broadcast_end_s
        <sfl_sim.channel.radio_state.RadioState.broadcast_end_s>`: at each step the slowest
        receiver's rate then, at most the traced receivers' rates)."""
        if not self._radio.in_time:
            return bits / self.broadcast_bps
        now = self._now()
        ids = [k for k in receivers if k not in self._traced]
        cap = min((self._traced[k] for k in receivers if k in self._traced), default=np.inf)
        gains = None if self._radio.time_varying else [self._fading[k] for k in ids]
        return max(0.0, self._radio.broadcast_end_s(ids, bits, now, gains, cap) - now)

    def refresh_s(self) -> float | None:
        """As :meth:`Uplink.refresh_s`, for the downlink's fluid band."""
        return _refresh_s(self._radio, self._cohort)

    def fading_of(self, clients: np.ndarray) -> np.ndarray:
        """The clients' downlink fading of the round (drawn once per round, or the last redraw of a
        client the outage policy retransmitted to); a time-varying fading's gains at the clock's time."""
        if self._radio.time_varying:
            return self._radio.fading_at(clients, self._now())
        return np.array([self._fading[k] for k in clients.tolist()])

    def link_at(self, clients: np.ndarray, bandwidth_hz: np.ndarray,
                fading_gain: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rate (bit/s), SNR (dB) and power (W) of the server's links to the clients on these
        bandwidths: its power spread flat over the downlink band (a sub-band ``b`` carries ``P b / B``;
        the downlink's own rate model), as :meth:`~sfl_sim.channel.Cell.downlink_link_at_bandwidth`); a client
        may appear more than once."""
        link = self._radio.links(clients, self._now(), bandwidth_hz, fading=fading_gain, direction="downlink")
        return link.rate_bps, link.snr_db, link.tx_power_w

    def _now(self) -> float:
        """The clock now; the radio state advanced to it when it is in time."""
        now = float(self._clock())
        if self._radio.in_time:
            self._radio.advance_to(now)
        return now


def _refresh_s(radio: RadioState, cohort: np.ndarray) -> float | None:
    """The shortest rate step of ``cohort`` on a radio in time, s; None when it does not depend on time."""
    if not radio.in_time or cohort.size == 0:
        return None
    return float(np.min(radio.step_s(cohort)))


class _Transfers:
    """A time-varying fading's start links and transfer ends of one direction, kept by (client, time).

    Every number is what :meth:`RadioState.links` and :meth:`RadioState.transfer_ends_s` give for
    that client, time, share and payload: the batches below change only how many are computed in
    one call (the links are element-wise, each transfer's bits summed along its own steps).

    - Starts: a round's cohort starts its transfers together (every client's step ends at once);
      when a second client asks at an instant, every client is computed at once and the others
      find theirs kept.
    - Ends: likewise, the second transfer at an instant computes every client's that started then
      (with the same payload).  After such a batch, each client's link at its end is computed at
      once too: a client often sends again as soon as its transfer ends (labels after
      activations), and would otherwise be computed alone.  A link kept for a later time holds
      only while the large-scale state it was computed on does.
    - Follow-ups: a client that sent ``b2`` bits at the instant its ``b1``-bit transfer ended
      (labels after activations) is expected to again: after a batch, the ends of those
      follow-ups are computed at once too (each at its own start, the batch's end), and kept
      (without a network of cells only: there the rates depend on who transmits then).
    - Expected starts: such a follow-up's start link that could not be kept ahead (its time past
      a grid update of the large-scale state, or its transfer ended alone) is remembered, and
      computed with the next start link computed for the state then (without a network of
      cells only), instead of alone when asked.
    """

    def __init__(self, radio: RadioState, direction: str, clients: list[int]) -> None:
        self._radio, self._direction, self._clients = radio, direction, clients
        # (client, t) -> snapshot, share, gain, rate, SNR, power
        self._starts: dict[tuple[int, float], tuple[Any, float, float, float, float, float]] = {}
        # (client, t) -> snapshot, bits, share, end
        self._ends: dict[tuple[int, float], tuple[Any, float, float, float]] = {}
        self._start_asked: tuple[float, int] = (-1.0, -1)  # the latest instant a start was computed at, by whom
        self._end_asked: tuple[float, int] = (-1.0, -1)
        self._last: dict[int, tuple[float, float]] = {}  # client -> its latest transfer's (end, bits)
        self._follow: dict[tuple[int, float], float] = {}  # (client, bits) -> the bits sent at that end
        # (client, t): a follow-up expected to start at t, its link not kept yet (a client may have
        # two: a batch's speculative end, at an instant it did not start at, besides its own)
        self._expected: set[tuple[int, float]] = set()

    def start(self, client: int, now: float, share_hz: Mapping[int, float]) -> tuple[float, float, float, float]:
        """``client``'s fading gain, rate (bit/s), SNR (dB) and power (W) at ``now`` on its share."""
        snapshot = self._radio.large_scale.snapshot
        hit = self._starts.get((client, now))
        if hit is None or hit[0] is not snapshot or hit[1] != share_hz[client]:
            batch = [client]
            if self._start_asked[0] == now and self._start_asked[1] != client:
                batch += [k for k in self._clients if k != client and not self._has_start(k, now, share_hz, snapshot)]
            self._start_asked = (now, client)
            times = [now] * len(batch)
            self._add_expected(batch, times, now, share_hz, snapshot)
            self._compute_starts(batch, np.array(times), share_hz)
            hit = self._starts[(client, now)]
        return hit[2], hit[3], hit[4], hit[5]

    def end(self, client: int, bits: float, now: float, share_hz: Mapping[int, float], start_rate_bps: float) -> float:
        """When ``bits`` of ``client`` starting at ``now`` on its share are through, s."""
        last = self._last.get(client)
        if last is not None and last[0] == now:  # sent at the instant its previous transfer ended
            self._follow[(client, last[1])] = bits
        end_s = self._end(client, bits, now, share_hz, start_rate_bps)
        self._last[client] = (now + (end_s - now), bits)  # where the engine's timeout lands
        return end_s

    def _end(self, client: int, bits: float, now: float, share_hz: Mapping[int, float],
             start_rate_bps: float) -> float:
        snapshot = self._radio.large_scale.snapshot
        hit = self._ends.get((client, now))
        if hit is not None and hit[0] is snapshot and hit[1] == bits and hit[2] == share_hz[client]:
            return hit[3]
        if start_rate_bps > 0.0 and bits <= start_rate_bps * self._radio.first_span_of(client):
            # through within its first span: what transfer_ends_s gives, in Python floats
            end_s = now + bits / start_rate_bps
            self._ends[(client, now)] = (snapshot, bits, share_hz[client], end_s)
            self._expect(client, bits, now + (end_s - now))
            return end_s
        batch, rates = [client], [start_rate_bps]
        if self._end_asked[0] == now and self._end_asked[1] != client:
            for k in self._clients:
                start = self._starts.get((k, now))
                if k != client and start is not None and start[0] is snapshot and start[1] == share_hz[k] and not (
                        (k, now) in self._ends and self._ends[(k, now)][0] is snapshot):
                    batch.append(k)
                    rates.append(start[3])
        self._end_asked = (now, client)
        if len(batch) == 1:  # alone: the state's path for one transfer (the same end, no batch set-up)
            end_s = self._radio.transfer_end_s(client, bits, now, share_hz[client], self._direction,
                                               start_rate_bps=start_rate_bps)
            self._ends[(client, now)] = (snapshot, bits, share_hz[client], end_s)
            self._expect(client, bits, now + (end_s - now))
            self._prune(now)
            return end_s
        ids = np.array(batch)
        shares = np.array([share_hz[k] for k in batch], dtype=float)
        ends = self._radio.transfer_ends_s(ids, bits, now, shares, self._direction, start_rate_bps=np.array(rates))
        for k, b, e in zip(batch, shares.tolist(), ends.tolist(), strict=True):
            self._ends[(k, now)] = (snapshot, bits, b, e)
        if len(batch) > 1:
            # each client's link when its transfer ends (the clock's sum now + (end - now), where
            # the engine's timeout lands), while the large-scale state holds
            at = now + (ends - now)
            later = (at > now) & self._radio.holds_until(at)
            if np.any(later):
                ahead = [batch[i] for i in np.flatnonzero(later).tolist()]
                times = at[later].tolist()
                self._add_expected(ahead, times, now, share_hz, snapshot)
                self._compute_starts(ahead, np.array(times), share_hz)
                if self._radio.network is None:
                    self._follow_ups([batch[i] for i in np.flatnonzero(later).tolist()], bits, at[later], share_hz)
            for i in np.flatnonzero(~later & (at > now)).tolist():  # past a grid update: computed then
                self._expect(batch[i], bits, float(at[i]))
        self._prune(now)
        return self._ends[(client, now)][3]

    def _follow_ups(self, clients: list[int], bits: float, at: np.ndarray, share_hz: Mapping[int, float]) -> None:
        """The ends of the transfers ``clients`` are expected to start when their ``bits``-bit
        transfers end (at ``at``, their start links kept), all at once, kept as :meth:`end`
        would keep them."""
        radio = self._radio
        snapshot = radio.large_scale.snapshot
        rows: list[tuple[int, float, float, float, float]] = []  # client, start, bits, share, start rate
        for k, t in zip(clients, at.tolist(), strict=True):
            follow = self._follow.get((k, bits))
            start = self._starts.get((k, t))
            if follow is None or start is None or (k, t) in self._ends:
                continue
            rows.append((k, t, follow, start[1], start[3]))
        if len(rows) < 2:  # one alone is computed when asked
            return
        ids = np.array([r[0] for r in rows])
        ends = radio.transfer_ends_s(ids, np.array([r[2] for r in rows]), np.array([r[1] for r in rows]),
                                     np.array([r[3] for r in rows]), self._direction,
                                     start_rate_bps=np.array([r[4] for r in rows]))
        for (k, t, b, share, _), e in zip(rows, ends.tolist(), strict=True):
            self._ends[(k, t)] = (snapshot, b, share, e)

    def _expect(self, client: int, bits: float, end_s: float) -> None:
        """Remember ``client``'s start at ``end_s``, when its ``bits``-bit transfer ends, if it has
        sent at such an end before (a follow-up; not with a network of cells: there a start link
        depends on who transmits when it is computed)."""
        if (client, bits) in self._follow and self._radio.network is None:
            self._expected.add((client, end_s))

    def _add_expected(self, batch: list[int], times: list[float], now: float, share_hz: Mapping[int, float],
                      snapshot: Any) -> None:
        """Add to a batch of start links (``batch`` at ``times``, computed at ``now``) the expected
        starts whose links are not kept yet and that the large-scale state holds until; forget the
        expected starts that are past or computed here."""
        expected = self._expected
        if not expected:
            return
        asked = set(zip(batch, times, strict=True))
        due = [(k, t) for k, t in expected if t >= now and (k, t) not in asked
               and not self._has_start(k, t, share_hz, snapshot)]
        expected.clear()
        if not due:
            return
        holds = self._radio.holds_until(np.array([t for _, t in due])).tolist()
        for (k, t), ok in zip(due, holds, strict=True):
            if ok:
                batch.append(k)
                times.append(t)
            else:  # past the next grid update: with a start computed after it
                expected.add((k, t))

    def _has_start(self, client: int, now: float, share_hz: Mapping[int, float], snapshot: Any) -> bool:
        start = self._starts.get((client, now))
        return start is not None and start[0] is snapshot and start[1] == share_hz[client]

    def _compute_starts(self, batch: list[int], times: np.ndarray, share_hz: Mapping[int, float]) -> None:
        radio = self._radio
        ids = np.array(batch)
        shares = np.array([share_hz[k] for k in batch], dtype=float)
        gains, rate, snr_db, power = radio.start_links(ids, times, shares, self._direction)
        snapshot = radio.large_scale.snapshot
        for k, t, b, g, r, q, p in zip(batch, times.tolist(), shares.tolist(), gains.tolist(), rate.tolist(),
                                       snr_db.tolist(), power.tolist(), strict=True):
            self._starts[(k, t)] = (snapshot, b, g, r, q, p)

    def _prune(self, now: float) -> None:
        """Forget what was kept for times before ``now`` (the clock only moves forward)."""
        if len(self._starts) + len(self._ends) > 8 * len(self._clients) + 64:
            self._starts = {key: v for key, v in self._starts.items() if key[1] >= now}
            self._ends = {key: v for key, v in self._ends.items() if key[1] >= now}
