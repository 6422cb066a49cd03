"""The SimPy engine (simulated clock, timing and accounting of every step)."""
from sfl_sim.engine.outcome import DELIVERED, Delivered, Lost, LossReason, Outcome, is_lost
from sfl_sim.engine.simulator import SERVER, Counters, RoundContext, SimSteps, Simulator

__all__ = ["DELIVERED", "SERVER", "Counters", "Delivered", "Lost", "LossReason", "Outcome", "RoundContext",
           "SimSteps", "Simulator", "is_lost"]
