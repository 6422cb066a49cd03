"""Splittable neural-network models and their registry.

Use :func:`build_model` to create a model by registered name (``"alexnet"``) or by
``"package.module:Class"``; the class must subclass :class:`SplittableModel`.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sfl_sim.kit.registry import import_submodules
from sfl_sim.models.alexnet import AlexNet  # importing the module registers "alexnet"
from sfl_sim.models.registry import MODELS
from sfl_sim.models.split import SplittableModel, output_shape, probe_output


def build_model(spec: str, input_shape: Sequence[int], num_classes: int, **params: Any) -> SplittableModel:
    """Create a registered model.

    Parameters
    ----------
    spec : str
        Registered name (see ``MODELS.names()``) or ``"package.module:Class"``.
    input_shape : sequence of int
        Per-sample input shape ``(C, H, W)``.
    num_classes : int
        Number of output classes.
    **params
        Further constructor arguments (e.g. ``conv_channels`` for ``"alexnet"``).

    Returns
    -------
    SplittableModel
        A fresh model on the CPU, in train mode; move it with ``.to(device)``.

    Raises
    ------
    ValueError
        If ``spec`` is unknown (:class:`sfl_sim.kit.registry.UnknownComponentError`), a parameter is
        rejected, or the class does not build a :class:`SplittableModel`.
    """
    model = MODELS.create(spec, input_shape=tuple(input_shape), num_classes=num_classes, **params)
    if not isinstance(model, SplittableModel):
        raise ValueError(
            f"model spec {spec!r} built a {type(model).__name__}; allowed: classes deriving from SplittableModel"
        )
    return model


__all__ = [
    "MODELS",
    "AlexNet",
    "SplittableModel",
    "build_model",
    "output_shape",
    "probe_output",
]


import_submodules(__name__)  # registers every model module of this package
