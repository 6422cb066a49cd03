"""The link process: one uplink transfer, from its first bit to delivered or lost.

:meth:`Link.send` starts one SimPy process per transfer, always; its value is
:data:`~sfl_sim.engine.outcome.DELIVERED` or a :class:`~sfl_sim.engine.outcome.Lost`.  Inside it,
in this order (see :mod:`sfl_sim.engine.simulator` for the model):

1. departure: a client already offline is ``Lost("unavailable")`` at once; one that goes offline
   while its transfer is on the air is ``Lost("unavailable")`` at its offline time (a transfer
   that ends exactly then was delivered);
2. battery: a transfer the client's battery cannot see through ends when the battery empties,
   ``Lost("battery")``;
3. fading: a new draw by coherence block;
4. attempts: each attempt is counted and noted busy; a rate (or SNR) below the outage threshold
   fails, HARQ resends transport blocks of one that is not; a failed attempt is retransmitted on
   a fresh fading draw while the outage policy allows, else dropped, ``Lost("outage")``.  On a
   radio in time every attempt's bits (a HARQ transfer's copies, a failed attempt's payload, at
   most as long as at the threshold rate) are integrated over the channel as it changes, a HARQ
   transfer's round trips waited after its copies.

While an attempt is on the air (a failed one, a HARQ transfer with its round trips, a battery
running out, a transfer through the band) its client is marked transmitting on the radio
(``set_transmitting``: a network radio's uplink interference is the transmissions in flight); the
mark is cleared however the transfer ends, the round's end or a departure interrupting it included.

With a scheduled band (a dynamic ``cell.scheduler``, :mod:`sfl_sim.engine.band`) an attempt's
bits go through the band instead of ``bits / rate`` on the round's share, and the band notes the
busy interval; the outage rule still judges the attempt by the round's share (its rate and SNR),
as without one; a client with no usable rate on the whole band besides (below the lowest MCS on
every RB: :meth:`~sfl_sim.engine.band.base.BandResource.serves`) is in outage too, its attempt taking no
air time, as a zero rate on the share.  HARQ: in the ``fluid`` form the copies' bits go through
the band and the round trips are waited after (:meth:`HarqModel.send`'s time less the copies' air time); in the ``slot``
form the band asks the same :meth:`HarqModel.send` per transport block and resends its copies
itself, and a block HARQ gave up on fails the attempt as an undelivered payload does.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import numpy as np
import simpy

from sfl_sim.channel.link.outage import OutagePolicy
from sfl_sim.channel.protocols import HarqModel
from sfl_sim.config.choices import OnOutage
from sfl_sim.engine.accounting import Counters, RoundNotes
from sfl_sim.engine.band import BandResource, CellBands
from sfl_sim.engine.outcome import DELIVERED, Lost, Outcome
from sfl_sim.engine.radio import Uplink
from sfl_sim.engine.steps import SimSteps, stoppable

__all__ = ["BatteryCheck", "Link"]

#: ``check(client, duration_s, tx_power_w)``: None, or when ``client``'s battery empties during an
#: upload of ``duration_s`` starting now (:class:`sfl_sim.engine.client_state.Battery`).
BatteryCheck = Callable[[int, float, float], "float | None"]


class Link:
    """The uplink transfers of one round.

    Parameters
    ----------
    env : simpy.Environment
    uplink : Uplink
        The round's shares and rates (fading redrawn here, by the coherence rule and per retransmission).
    counters : Counters
        Bytes of every attempt, retransmissions, drops and HARQ copies are counted here.
    notes : RoundNotes
        Each attempt's air time is noted busy; a client whose transfer is lost to outage or battery leaves.
    outage : OutagePolicy or None
        The outage rule (None: no threshold; a zero rate still fails, once).
    harq : HarqModel or None
    harq_rng : numpy.random.Generator
        The ``harq`` stream (HARQ's ``sampled`` mode).
    battery : callable or None
        :data:`BatteryCheck`, asked before each transfer that gets air time.
    offline_s : mapping of int to float
        Cohort clients that go offline in the round, and when.
    band : BandResource or CellBands, optional
        The scheduled band (a dynamic scheduler; one per cell on a network); None: each transfer on its
        share of the round.
    """

    def __init__(self, env: simpy.Environment, uplink: Uplink, counters: Counters, notes: RoundNotes,
                 outage: OutagePolicy | None, harq: HarqModel | None, harq_rng: np.random.Generator,
                 battery: BatteryCheck | None, offline_s: Mapping[int, float],
                 band: BandResource | CellBands | None = None) -> None:
        self._env, self._uplink, self._counters, self._notes = env, uplink, counters, notes
        self._outage, self._harq, self._harq_rng = outage, harq, harq_rng
        self._battery, self._offline_s = battery, offline_s
        self._band = band

    def send(self, client: int, nbytes: int, what: str, block: Hashable = None) -> simpy.Process:
        """Client -> server transfer of ``nbytes`` of kind ``what`` in coherence block ``block``;
        the process's value is ``DELIVERED`` or the ``Lost`` that ended it (``round_over`` when the
        round's end stops it: :func:`~sfl_sim.engine.steps.stoppable`)."""
        return self._env.process(stoppable(self._transfer(client, nbytes, what, block)))

    def _transfer(self, client: int, nbytes: int, what: str, block: Hashable) -> SimSteps[Outcome]:
        """The transfer's attempts; whatever ends it (delivered, lost, the round's end or a departure
        interrupting it), the radio hears that ``client`` stops transmitting."""
        try:
            return (yield from self._attempts(client, nbytes, what, block))
        finally:
            self._uplink.radio.set_transmitting(client, False)

    def _on_air(self, client: int, duration_s: float, leaving: _Departure | None) -> SimSteps[Outcome]:
        """``client`` on the air for ``duration_s`` (:meth:`_air`), marked transmitting meanwhile
        (a network radio's uplink interference: the transmissions in flight)."""
        radio = self._uplink.radio
        radio.set_transmitting(client, True)
        outcome = yield self._air(duration_s, leaving)
        radio.set_transmitting(client, False)
        return outcome

    def _attempts(self, client: int, nbytes: int, what: str, block: Hashable) -> SimSteps[Outcome]:
        env, uplink, notes = self._env, self._uplink, self._notes
        start_s = env.now
        leaving: _Departure | None = None
        if client in self._offline_s:
            left_s = self._offline_s[client] - start_s
            if left_s <= 0:
                return Lost("unavailable")
            leaving = _Departure(env.timeout(left_s, value=Lost("unavailable")), start_s + left_s)
        if self._battery is not None and uplink.rate_bps(client) > 0:
            empty_s = self._battery(client, 8.0 * nbytes / uplink.rate_bps(client), uplink.tx_power_w(client))
            if empty_s is not None:
                # on the air until it empties (no byte counted: nothing was delivered or sent whole)
                if empty_s > start_s:
                    notes.note_busy(client, "uplink", start_s, empty_s - start_s, tx_power_w=uplink.tx_power_w(client))
                notes.note_left(client, max(empty_s, start_s))
                on_air = yield from self._on_air(client, max(0.0, empty_s - start_s), leaving)
                return on_air if isinstance(on_air, Lost) else Lost("battery")
        uplink.enter_block(client, block)
        if self._band is not None:
            return (yield from self._scheduled(client, nbytes, what, leaving))
        policy, harq, counters = self._outage, self._harq, self._counters
        attempt = 1
        while True:
            counters.count_upload(nbytes, what)
            notes.note_attempt(client, nbytes)
            rate = uplink.rate_bps(client)
            # A zero rate (a link abstraction found no usable MCS: out of range) delivers nothing,
            # whatever the policy's thresholds; the policy still decides what follows.
            failed = rate <= 0.0 or (policy is not None and policy.active and bool(
                policy.is_outage(np.array([rate]), np.array([uplink.snr_db(client)]))[0]))
            if not failed and harq is None:
                # bits / rate, or integrated over a radio in time (the channel as it changes)
                uplink.radio.set_transmitting(client, True)  # a network: other cells' interference
                air_s = uplink.air_time_s(client, 8.0 * nbytes)
                notes.note_busy(client, "uplink", env.now, air_s, tx_power_w=uplink.tx_power_w(client))
                return (yield from self._on_air(client, air_s, leaving))
            if policy is None:
                policy = OutagePolicy()  # no policy: one attempt, then the payload is dropped
            if not failed:
                # HARQ: transport blocks resent while they fail; one still failing is an outage.
                assert harq is not None
                sent = harq.send(8.0 * nbytes, rate, uplink.snr_db(client), self._harq_rng)
                counters.count_harq(sent.retransmissions, what)
                notes.note_harq(client, sent.retransmissions)
                # on the air for its copies (sum of N_i blocks of B / n bits); the round trips between
                # copies are waiting, which the energy ledger counts as idle
                air_s = (sent.blocks + sent.retransmissions) * 8.0 * nbytes / (sent.blocks * rate)
                total_s = sent.time_s
                if uplink.in_time:
                    # the copies' bits over the channel as it changes, then the round trips (as the
                    # scheduled band's fluid form: copies first, waits after)
                    copies_bits = (sent.blocks + sent.retransmissions) * 8.0 * nbytes / sent.blocks
                    wait_s = sent.time_s - air_s
                    air_s = uplink.air_time_s(client, copies_bits)
                    total_s = air_s + wait_s
                notes.note_busy(client, "uplink", env.now, air_s, tx_power_w=uplink.tx_power_w(client))
                notes.note_harq_wait(client, env.now + air_s, env.now + total_s)
                # transmitting for the whole HARQ transfer, its round trips included (our choice:
                # one interval per transfer; its copies are spread over it)
                on_air = yield from self._on_air(client, total_s, leaving)
                if isinstance(on_air, Lost) or sent.delivered:
                    return on_air
            else:
                # A failed attempt occupies the air for the payload at its rate (or the threshold
                # rate); at rate 0 with no threshold nothing is granted, so it takes no time.
                attempt_rate = max(rate, policy.min_rate_bps)
                attempt_s = 8.0 * nbytes / attempt_rate if attempt_rate > 0 else 0.0
                if uplink.in_time and rate > 0.0:
                    # on a radio in time: its bits over the channel as it changes, at most as long
                    # as at the threshold rate (our choice: the grant the outage rule allows)
                    attempt_s = uplink.air_time_s(client, 8.0 * nbytes)
                    if policy.min_rate_bps > 0:
                        attempt_s = min(attempt_s, 8.0 * nbytes / policy.min_rate_bps)
                notes.note_busy(client, "uplink", env.now, attempt_s, tx_power_w=uplink.tx_power_w(client))
                on_air = yield from self._on_air(client, attempt_s, leaving)  # a failed attempt is on the air too
                if isinstance(on_air, Lost):
                    return on_air
            action: OnOutage = policy.next_action(np.array([True]), attempt)[0]
            if action == "drop":
                counters.count_dropped_transmission(what)
                notes.note_dropped_transmission(client)
                notes.note_left(client, env.now)
                return Lost("outage")
            counters.count_retransmission(what)
            notes.note_retransmission(client)
            attempt += 1
            uplink.redraw(client)  # a retransmission sees a fresh fading draw

    def _scheduled(self, client: int, nbytes: int, what: str, leaving: _Departure | None) -> SimSteps[Outcome]:
        """The attempts of a transfer through the scheduled band (see the module docstring)."""
        env, uplink, band = self._env, self._uplink, self._band
        assert band is not None
        policy, harq, counters = self._outage, self._harq, self._counters
        notes = self._notes
        attempt = 1
        while True:
            counters.count_upload(nbytes, what)
            notes.note_attempt(client, nbytes)
            rate = uplink.rate_bps(client)
            # no usable rate on the whole band: no grant carries a bit, an outage like a zero rate
            served = rate > 0.0 and band.serves(client)
            failed = not served or (policy is not None and policy.active and bool(
                policy.is_outage(np.array([rate]), np.array([uplink.snr_db(client)]))[0]))
            bits = 8.0 * nbytes
            wait_s = 0.0
            if not failed and harq is not None and not band.resends_blocks:
                sent = harq.send(bits, rate, uplink.snr_db(client), self._harq_rng)
                counters.count_harq(sent.retransmissions, what)
                notes.note_harq(client, sent.retransmissions)
                copies = (sent.blocks + sent.retransmissions) / sent.blocks
                wait_s = sent.time_s - copies * bits / rate  # the round trips between copies
                bits *= copies
                failed = not sent.delivered
            if served:
                on_air = yield from self._through_band(client, bits, leaving)
                resent = band.failed_blocks(client)  # the slot form's HARQ copies, counted as the fluid's
                if resent:
                    counters.count_harq(resent, what)
                    notes.note_harq(client, resent)
                if isinstance(on_air, Lost):
                    return on_air
                # the slot form's HARQ gave up on a block: the payload is lost, as sent.delivered false
                failed = failed or band.gave_up(client)
                if wait_s > 0.0:
                    notes.note_harq_wait(client, env.now, env.now + wait_s)
                    on_air = yield self._air(wait_s, leaving)
                    if isinstance(on_air, Lost):
                        return on_air
            if not failed:
                return DELIVERED
            if policy is None:
                policy = OutagePolicy()  # no policy: one attempt, then the payload is dropped
            action: OnOutage = policy.next_action(np.array([True]), attempt)[0]
            if action == "drop":
                counters.count_dropped_transmission(what)
                notes.note_dropped_transmission(client)
                notes.note_left(client, env.now)
                return Lost("outage")
            counters.count_retransmission(what)
            notes.note_retransmission(client)
            attempt += 1
            uplink.redraw(client)

    def _through_band(self, client: int, bits: float, leaving: _Departure | None) -> SimSteps[Outcome]:
        """``bits`` of ``client`` through the band: ``DELIVERED``, or ``Lost("unavailable")`` when
        the client goes offline first (then the band stops serving it)."""
        band = self._band
        assert band is not None
        radio = self._uplink.radio
        radio.set_transmitting(client, True)  # cleared by _transfer's finally if the round's end stops it
        done = band.put(client, bits)
        if leaving is None:
            outcome = yield done
            radio.set_transmitting(client, False)
            return outcome
        yield done | leaving.event
        radio.set_transmitting(client, False)
        if done.triggered:
            return DELIVERED
        done.cancel()  # the band stops serving it
        return Lost("unavailable")

    def _air(self, duration_s: float, leaving: _Departure | None) -> simpy.Timeout:
        """What a transfer on the air for ``duration_s`` waits on: a timeout whose value is
        ``DELIVERED``, or, when the client goes offline first, its departure, whose value is
        ``Lost("unavailable")`` (one that ends exactly at the offline time was online until then)."""
        env = self._env
        if leaving is None or env.now + duration_s <= leaving.at_s:
            return env.timeout(duration_s, value=DELIVERED)
        return leaving.event


@dataclass(frozen=True)
class _Departure:
    """The timeout that fires when a client goes offline (value ``Lost("unavailable")``), and its
    time: ``now + delay``, the sum SimPy schedules a timeout at (so a transfer's end compares with
    it bit for bit)."""

    event: simpy.Timeout
    at_s: float
