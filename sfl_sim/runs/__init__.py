"""One run's life: build its parts, drive it round by round, checkpoint and resume it, and its
directory (:mod:`sfl_sim.runs.rundir`).
"""
