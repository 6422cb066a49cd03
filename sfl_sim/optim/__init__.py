"""Optimizers from ``torch.optim``, per-round learning-rate schedules and their state.

* :mod:`~sfl_sim.optim.settings` — :class:`TrainingSettings`, the run's training settings as data;
* :mod:`~sfl_sim.optim.factory` — optimizers by name (``sgd``, ``adam``, ``adamw``, ``module:Class``);
* :mod:`~sfl_sim.optim.schedule` — :class:`RoundSchedule`, the learning rate of each round;
* :mod:`~sfl_sim.optim.bank` — :class:`OptimizerBank`, an algorithm's optimizers, their state
  semantics (clients fresh each round or persisted, server across rounds) and the clipped step.
"""
from sfl_sim.optim.bank import OptimizerBank
from sfl_sim.optim.factory import OPTIMIZERS, OptimizerMaker, check_optimizer, make_optimizer, optimizer_class
from sfl_sim.optim.schedule import RoundSchedule
from sfl_sim.optim.settings import TrainingSettings, settings_from_config

__all__ = ["OPTIMIZERS", "OptimizerBank", "OptimizerMaker", "RoundSchedule", "TrainingSettings", "check_optimizer",
           "make_optimizer", "optimizer_class", "settings_from_config"]
