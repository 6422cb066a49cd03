"""The SimPy engine (simulated clock, timing and accounting of every step; no torch).

See :mod:`sfl_sim.engine.simulator` for the time model and the modules it is made of.
"""
from sfl_sim.engine.accounting import Busy, BusyKind, Counters, RoundNotes
from sfl_sim.engine.client_state import Battery, Presence, RoundView
from sfl_sim.engine.outcome import DELIVERED, Delivered, LossReason, Lost, Outcome, is_lost
from sfl_sim.engine.simulator import SERVER, RoundContext, Simulator
from sfl_sim.engine.steps import SimSteps
from sfl_sim.engine.stragglers import Deadline, Decision, OverSelection, StragglerRule, WaitAll, decide

__all__ = ["DELIVERED", "SERVER", "Battery", "Busy", "BusyKind", "Counters", "Deadline", "Decision", "Delivered",
           "Lost", "LossReason", "Outcome", "OverSelection", "Presence", "RoundContext", "RoundNotes", "RoundView",
           "SimSteps", "Simulator", "StragglerRule", "WaitAll", "decide", "is_lost"]
