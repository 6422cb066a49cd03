"""Training algorithms, registered in :data:`ALGORITHMS` (``scala``, ``ca_sfl``, ``lla_sfl``, ``fedavg``)."""
from sfl_sim.algorithms.base import ALGORITHMS, Algorithm, TrainingSetup, proportional_batch_sizes, weighted_average
from sfl_sim.algorithms import fedavg, scala  # noqa: F401  (registers the built-ins)

__all__ = ["ALGORITHMS", "Algorithm", "TrainingSetup", "proportional_batch_sizes", "weighted_average"]
