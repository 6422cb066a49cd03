"""The SimPy engine (simulated clock, timing and accounting of every step)."""
from sfl_sim.engine.simulator import SERVER, Counters, RoundContext, Simulator

__all__ = ["SERVER", "Counters", "RoundContext", "Simulator"]
