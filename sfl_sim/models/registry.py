"""Registry of splittable models.

Models register here under a short name (``@MODELS.register("alexnet")``); a scenario names a
model by that name or by ``"package.module:Class"``.  The registry lives in its own module so that
model files can import it without importing each other (and without a cycle through
``sfl_sim.models.__init__``).
"""
from __future__ import annotations

from sfl_sim.kit.registry import Registry

MODELS = Registry("model", supplied=("input_shape", "num_classes"))

__all__ = ["MODELS"]
