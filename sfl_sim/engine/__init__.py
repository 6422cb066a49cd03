"""The SimPy engine (simulated clock, timing and accounting of every step)."""
from sfl_sim.engine.outcome import DELIVERED, Delivered, LossReason, Lost, Outcome, is_lost
from sfl_sim.engine.simulator import SERVER, Busy, Counters, RoundContext, SimSteps, Simulator

__all__ = ["DELIVERED", "SERVER", "Busy", "Counters", "Delivered", "Lost", "LossReason", "Outcome", "RoundContext",
           "SimSteps", "Simulator", "is_lost"]
