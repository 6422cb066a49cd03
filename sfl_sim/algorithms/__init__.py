"""Training algorithms, registered in :data:`ALGORITHMS`.

One algorithm per module; every module of this package is imported on first use, so a new file
with ``@ALGORITHMS.register("name")`` is all a new built-in needs.
"""
from channel.registry import import_submodules
from sfl_sim.algorithms.base import ALGORITHMS, Algorithm, TrainingSetup, proportional_batch_sizes, weighted_average

import_submodules(__name__)

__all__ = ["ALGORITHMS", "Algorithm", "TrainingSetup", "proportional_batch_sizes", "weighted_average"]
