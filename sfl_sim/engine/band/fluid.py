"""The fluid form of the scheduled band: processor sharing, re-shared when a transfer starts or ends.

At each change the band takes the bits sent since the last one off each buffer, asks
:meth:`~sfl_sim.channel.protocols.Scheduler.fluid_rbs` (:meth:`FluidBand._fluid_split`), and
schedules one wake-up at the next finish time ``min_k left_k / r_k``; the transfers finishing then
(ties within 1e-12 relative) end there exactly, so finish times are the piecewise sums of a hand
calculation.  The changes of one instant (a cohort starting its uploads together, a finish and the
next upload) are re-shared once, after the instant's other events; the buffers, rates and powers
are arrays with a row per client, and each client's rates on ``n_rb / n`` RBs (``n = 1 ..`` the
cohort size) are tabled once per fading draw, so a change costs a few array operations.  The energy
ledger gets one busy interval per transfer at the mean power it sent with (energy over duration).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import simpy

from sfl_sim.channel.link.scheduling import ResourceGrid
from sfl_sim.channel.protocols import Scheduler
from sfl_sim.engine.band.base import BandResource, FadingOf, Grants, HeadroomOf, LinkAt, NoteBusy

__all__ = ["FluidBand"]

# Finish times within this relative distance of the earliest end together.
_TIE_RTOL = 1e-12
# SimPy's priority of the re-share: after every ordinary event of the same instant.
_LATE = simpy.events.EventPriority(simpy.events.NORMAL + 1)


class _AfterTheInstant(simpy.Event):
    """An event processed after every other event of the current simulated instant (an ordinary
    event has priority NORMAL; this one, already triggered, is scheduled at ``_LATE``), so that
    the band re-shares once for all the changes of an instant."""

    def __init__(self, env: simpy.Environment, callback: Callable[[simpy.Event], None]) -> None:
        super().__init__(env)
        self._ok, self._value = True, None  # triggered as SimPy's own Timeout is, then scheduled
        self.callbacks.append(callback)
        env.schedule(self, _LATE)


class FluidBand(BandResource):
    """The fluid form (see the module docstring).

    Parameters
    ----------
    env, policy, grid, link_at, fading, note_busy, latency_s
        As :class:`~sfl_sim.engine.band.base.BandResource`.
    ladder : int
        The RB counts ``n_rb / n``, ``n = 1 .. ladder``, tabled per fading draw (the cohort size).
    headroom : HeadroomOf or None
        As :class:`~sfl_sim.engine.band.base.BandResource`.
    """

    def __init__(self, env: simpy.Environment, policy: Scheduler, grid: ResourceGrid, link_at: LinkAt,
                 fading: FadingOf, note_busy: NoteBusy, latency_s: float, ladder: int = 1,
                 headroom: HeadroomOf | None = None, refresh_s: float | None = None) -> None:
        rungs = max(int(ladder), 1)
        # a radio in time: the rates are re-read (the fading at the clock's time) at least this often
        self._refresh_s = None if refresh_s is None or not math.isfinite(refresh_s) or refresh_s <= 0 \
            else float(refresh_s)
        super().__init__(env, policy, grid, link_at, fading, note_busy, latency_s,
                         grid.n_rb / np.arange(1, rungs + 1, dtype=float), headroom)
        # the record of the grants, per row: [RB-s, granted s, bits, SINR dB x s] and their rates of change
        self._f_book = np.zeros((4, 0))
        self._f_book_speed = np.zeros((4, 0))
        self._seen: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # recent untabled links
        # per row: [bits left (inf off the air), energy so far (J)], their rates of change
        # [-rate, power] (0 off the air), and [-1, 1] on the air ([0, 0] off it)
        self._f_state = np.zeros((2, 0))
        self._f_speed = np.zeros((2, 0))
        self._f_on = np.zeros((2, 0))
        self._f_scratch = np.zeros((2, 0))
        self._f_finish = np.zeros(0)
        self._n_on = 0
        # a policy whose fluid split is always n_rb / n: its rates are a column of the tables
        self._equal_shares = bool(policy.fluid_equal_shares)
        self._fresh: list[int] = []  # clients on the air since the last re-share (their fading to table)
        self._grow(rungs)
        self._resharing: simpy.Event | None = None
        self._since_s = env.now
        self._rbs_on_air = 0.0  # the RBs granted since the last re-share
        self._wake: simpy.Event | None = None
        self._finishing: list[int] = []
        self._paused: dict[int, float] = {}  # client without a link -> its bits left, kept off the air

    # -- the policy's call (one place) -------------------------------------------------------------
    def _fluid_split(self, rows: np.ndarray) -> np.ndarray:
        """The policy's RBs for the clients of ``rows`` (all with data): ``fluid_rbs`` of their rate
        per RB on the whole band (their rates on every tabled RB count, ``self._tab[:, 0, rows]``,
        are at hand), and the optional inputs the policy declares (``rates_bps`` on ``1 .. n_rb``
        RBs made concave, ``headroom_rb``)."""
        extra = {}
        if self._fluid_kw:
            ids = np.array([self._client[r] for r in rows.tolist()], dtype=np.int64)
            extra = self._policy_inputs(self._fluid_kw, ids, rows, self._tab_fading[rows])
        return np.asarray(self._policy.fluid_rbs(self._n_rb, self._tab[0, 0, rows] / self._n_rb, **extra),
                          dtype=float)

    def _headroom_binds(self, n: int) -> bool:
        """Whether a client on the air has less headroom than its equal share ``n_rb / n`` (then
        the equal-shares policy is asked for its split)."""
        if self._headroom_of is None or "headroom_rb" not in self._fluid_kw:
            return False
        rows = np.flatnonzero(self._f_on[1])
        caps = self._headroom(np.array([self._client[r] for r in rows.tolist()], dtype=np.int64), rows)
        return caps is not None and int(caps.min()) * n < self._n_rb

    # -- the base's hooks --------------------------------------------------------------------------
    def _rb_s_so_far(self) -> float:
        # read without advancing the buffers: a reading mid-round leaves the arithmetic untouched
        return self._used_rb_s + self._rbs_on_air * (self._env.now - self._since_s)

    def _granted(self, client: int, in_band_s: float) -> Grants:
        row = self._row.get(client)
        if row is None:
            return Grants(0.0, in_band_s, 0.0, 0.0, None, 0.0)
        book = self._f_book[:, row] + self._f_book_speed[:, row] * (self._env.now - self._since_s)
        return Grants(float(book[0]), in_band_s, float(book[1]), float(book[2]), None, float(book[3]))

    def _arrive(self, client: int, bits: float) -> None:
        if self._closed or client not in self._done:
            return
        self._advance()
        row = self._row_of(client)
        self._f_state[0, row] = float(bits)
        self._f_on[0, row], self._f_on[1, row] = -1.0, 1.0
        self._n_on += 1
        self._fresh.append(client)
        if client in self._unlinked:  # it starts without a link: off the air until it has one
            self._pause(row)
        self._reshare_soon()

    def _pause(self, row: int) -> None:
        """Take ``row``'s transfer off the air (its client has no link), its bits kept."""
        client = self._client[row]
        self._paused[client] = float(self._f_state[0, row])
        self._f_state[0, row] = np.inf
        self._f_on[:, row] = self._f_speed[:, row] = self._f_book_speed[:, row] = 0.0
        self._n_on -= 1

    def _relinked(self, client: int, row: int) -> None:
        # a network: a link lost takes the transfer off the air, a link back puts it on again, and
        # either way its rates are read again (the serving cell's coupling loss now)
        self._seen.clear()
        if self._closed or client not in self._done or not math.isfinite(self._f_state[0, row]) \
                and client not in self._paused:
            return  # no transfer of it here, or one still in its grant latency (_arrive decides)
        self._advance()
        linked = client not in self._unlinked
        if linked and client in self._paused:
            self._f_state[0, row] = self._paused.pop(client)
            self._f_on[0, row], self._f_on[1, row] = -1.0, 1.0
            self._n_on += 1
        elif not linked and client not in self._paused:
            self._pause(row)
        if linked:
            self._fresh.append(client)
        self._reshare_soon()

    def _drop(self, client: int) -> None:
        self._paused.pop(client, None)

    def withdraw(self, client: int) -> None:
        """Stop serving ``client`` (it went offline): the bits sent until now come off first."""
        if client in self._done:
            self._advance()
        super().withdraw(client)

    def _changed(self) -> None:
        self._reshare_soon()

    def _stop(self) -> None:
        self._advance()
        self._paused.clear()
        self._fresh.clear()
        self._rbs_on_air = 0.0
        self._wake = None

    def _energy_j(self, client: int) -> float:
        row = self._row.get(client)
        energy = 0.0
        if row is not None:
            energy = float(self._f_state[1, row])
            if self._f_on[1, row]:
                self._n_on -= 1
            self._f_state[0, row], self._f_state[1, row] = np.inf, 0.0
            self._f_on[:, row] = self._f_speed[:, row] = 0.0
            self._f_book_speed[:, row] = 0.0
        return energy

    def _grow_rows(self, extra: int) -> None:
        self._f_book = np.concatenate((self._f_book, np.zeros((4, extra))), axis=1)
        self._f_book_speed = np.concatenate((self._f_book_speed, np.zeros((4, extra))), axis=1)
        self._f_state = np.concatenate((self._f_state, np.vstack((np.full(extra, np.inf), np.zeros(extra)))), axis=1)
        for name in ("_f_speed", "_f_on", "_f_scratch"):
            setattr(self, name, np.concatenate((getattr(self, name), np.zeros((2, extra))), axis=1))
        self._f_finish = np.concatenate((self._f_finish, np.zeros(extra)))

    # -- the record of the grants (read by grants(), never by the scheduling) ----------------------
    def _remember(self, ids: np.ndarray, rbs: np.ndarray, fading: np.ndarray, snr_db: np.ndarray) -> None:
        """Keep the SINRs of the last two untabled link calls, so that the record reads them rather
        than asking the cell again."""
        self._seen.append((ids, np.asarray(rbs, dtype=float), np.asarray(fading, dtype=float),
                           np.asarray(snr_db, dtype=float)))
        del self._seen[:-2]

    def _sinr_db(self, ids: np.ndarray, rbs: np.ndarray, fading: np.ndarray) -> np.ndarray:
        """The SINR (dB) of each client on ``rbs`` RBs at ``fading``: from the tables, a recent
        link call, or the cell (the same number each way)."""
        out = np.full(ids.size, np.nan)
        if ids.size:
            rows = np.array([self._row[k] for k in ids.tolist()], dtype=np.int64)
            col = self._step_order[np.minimum(np.searchsorted(self._sorted_steps, rbs), self._steps.size - 1)]
            hit = (self._steps[col] == rbs) & (self._tab_fading[rows] == fading)
            out[hit] = self._tab_snr[col[hit], rows[hit]]
        for seen_ids, seen_rbs, seen_fading, seen_snr in reversed(self._seen):
            todo = np.flatnonzero(np.isnan(out)).tolist()
            if not todo:
                break
            where = {k: i for i, k in enumerate(seen_ids.tolist())}
            for i in todo:
                p = where.get(int(ids[i]))
                if p is not None and seen_rbs[p] == rbs[i] and seen_fading[p] == fading[i]:
                    out[i] = seen_snr[p]
        todo_at = np.flatnonzero(np.isnan(out))
        if todo_at.size:
            _, snr_db, _ = self._link_at(ids[todo_at], rbs[todo_at] * self._grid.hz_per_rb, fading[todo_at])
            out[todo_at] = snr_db
        return out

    # -- the sharing -------------------------------------------------------------------------------
    def _advance(self) -> None:
        """Take the bits sent since the last change off each buffer."""
        dt = self._env.now - self._since_s
        self._since_s = self._env.now
        if dt <= 0:
            return
        self._used_rb_s += self._rbs_on_air * dt
        self._f_book += self._f_book_speed * dt
        # bits left -= rate dt and energy += power dt, in two operations (rows off the air stand still)
        np.add(self._f_state, np.multiply(self._f_speed, dt, out=self._f_scratch), out=self._f_state)

    def _reshare_soon(self) -> None:
        """Re-share once the instant's other events are done (one re-share for all its changes)."""
        self._wake = None
        if self._resharing is None and not self._closed:
            self._resharing = _AfterTheInstant(self._env, self._reshare)

    def _reshare(self, _event: simpy.Event | None = None) -> None:
        """New shares for the clients with data, and the wake-up at the next finish."""
        self._resharing = None
        self._wake = None
        if self._n_on == 0 or self._closed:
            self._rbs_on_air = 0.0
            return
        if self._refresh_s is not None:  # the channel moved: every client on the air is read again
            self._fresh.extend(self._client[r] for r in np.flatnonzero(self._f_on[1]).tolist())
        if self._fresh:  # table the newcomers' rates for their fading draws, in one call
            fresh = np.array(list(dict.fromkeys(self._fresh)), dtype=np.int64)
            self._fresh.clear()
            self._table(fresh, np.array([self._row[k] for k in fresh.tolist()], dtype=np.int64),
                        self._fading(fresh))
        n, finish_s = self._n_on, self._f_finish
        if self._equal_shares and n <= self._steps.size and not self._headroom_binds(n):
            # n_rb / n each: column n - 1 of the tables; a row off the air has inf bits left
            np.multiply(self._tab[n - 1], self._f_on, out=self._f_speed)
            np.multiply(self._f_state[0], self._tab_inv[n - 1], out=finish_s)
            self._rbs_on_air = float(self._n_rb)  # n_rb / n to each of the n with data
            on = self._f_on[1] > 0
            self._f_book_speed[0] = np.where(on, self._n_rb / n, 0.0)
            self._f_book_speed[1] = on
            self._f_book_speed[2] = np.where(on, self._tab[n - 1, 0], 0.0)
            self._f_book_speed[3] = np.where(on, self._tab_snr[n - 1], 0.0)
        else:
            rows = np.flatnonzero(self._f_on[1])
            ids = np.array([self._client[r] for r in rows.tolist()], dtype=np.int64)
            rbs = self._fluid_split(rows)
            rate, power = self._links(ids, rbs, self._tab_fading[rows])
            self._rbs_on_air = float(rbs.sum())
            self._f_speed.fill(0.0)
            self._f_speed[0, rows], self._f_speed[1, rows] = -rate, power
            live = rbs > 0
            self._f_book_speed.fill(0.0)
            self._f_book_speed[0, rows], self._f_book_speed[1, rows], self._f_book_speed[2, rows] = rbs, live, rate
            self._f_book_speed[3, rows] = np.where(live, self._sinr_db(ids, rbs, self._tab_fading[rows]), 0.0)
            finish_s.fill(np.inf)
            with np.errstate(divide="ignore"):
                finish_s[rows] = self._f_state[0, rows] / rate
        first = float(finish_s[finish_s.argmin()])
        if not math.isfinite(first):
            stuck = [self._client[r] for r in np.flatnonzero(self._f_on[1]).tolist()]
            raise RuntimeError(f"scheduler {self._policy!r}: clients {stuck} have data and rate 0 on their resource "
                               f"blocks; no transfer can end")
        ties = (finish_s <= first * (1.0 + _TIE_RTOL)).nonzero()[0]
        self._finishing = [self._client[r] for r in ties.tolist()]
        if self._refresh_s is not None and self._refresh_s < first:  # re-read the channel before anyone ends
            first, self._finishing = self._refresh_s, []
        wake = self._env.timeout(first)
        self._wake = wake
        wake.callbacks.append(self._woken)

    def _woken(self, event: simpy.Event) -> None:
        if event is not self._wake:  # a later change re-planned
            return
        self._advance()
        for k in self._finishing:  # the ties end together, and the rest is re-shared at once
            self._finish(k)
        self._reshare()
