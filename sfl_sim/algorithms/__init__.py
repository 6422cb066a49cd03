"""Training algorithms, registered in :data:`ALGORITHMS`.

One algorithm per module; every module of this package is imported on first use, so a new file
with ``@ALGORITHMS.register("name")`` is all a new built-in needs.
"""
from sfl_sim.algorithms.base import ALGORITHMS, Algorithm, TrainingSetup, proportional_batch_sizes, weighted_average
from sfl_sim.algorithms.conformance import ConformanceError, check_algorithm
from sfl_sim.algorithms.split.base import SplitFedBase
from sfl_sim.algorithms.split.messages import ClientActivations, ClientStep, Reply
from sfl_sim.algorithms.split.server_modes import ConcatenatedServer, PerClientServer, SequentialServer, ServerMode
from sfl_sim.kit.registry import import_submodules

import_submodules(__name__)

__all__ = ["ALGORITHMS", "Algorithm", "ClientActivations", "ClientStep", "ConcatenatedServer", "ConformanceError",
           "PerClientServer", "Reply", "SequentialServer", "ServerMode", "SplitFedBase", "TrainingSetup",
           "check_algorithm", "proportional_batch_sizes", "weighted_average"]
