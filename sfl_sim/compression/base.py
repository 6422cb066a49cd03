"""What every compressor shares: the payload, the protocol, the registry, and the checks and shape
header each codec's ``encode`` uses.

A codec module (:mod:`~sfl_sim.compression.identity`, :mod:`~sfl_sim.compression.quantize`,
:mod:`~sfl_sim.compression.topk`, :mod:`~sfl_sim.compression.rand_topk`) registers its class in
:data:`COMPRESSORS`; importing :mod:`sfl_sim.compression` imports them all.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

import torch

from sfl_sim.kit.registry import Registry

__all__ = ["Payload", "Compressor", "COMPRESSORS", "build_compressor", "codec_flops", "shape_header",
           "checked_input", "needs_generator"]


# ------------------------------------------------------------------------------------- payload
@dataclass(frozen=True)
class Payload:
    """What a compressor sends: named tensors, nothing else counts.

    Attributes
    ----------
    buffers : dict of str to Tensor
        Every tensor that goes over the air (codes, values, indices, scales, the ``shape`` header).
    dtype : torch.dtype
        The encoded tensor's dtype, which the receiver knows already (the model's); not sent.
    """

    buffers: dict[str, torch.Tensor]
    dtype: torch.dtype = torch.float32
    #: Parameters both ends agree on before any transfer (the compressor's own), not sent.
    agreed: Mapping[str, Any] = field(default_factory=dict)

    @property
    def size_bytes(self) -> int:
        """Bytes on the air: the sum of the buffers' ``nbytes``."""
        return int(sum(b.nbytes for b in self.buffers.values()))

    @property
    def shape(self) -> tuple[int, ...]:
        """The encoded tensor's shape, read from the ``shape`` header."""
        return tuple(int(d) for d in self.buffers["shape"].tolist())


def shape_header(tensor: torch.Tensor) -> torch.Tensor:
    """The shape header every payload carries: one int32 per dimension (a 0-d tensor has none).

    Parameters
    ----------
    tensor : Tensor
        The tensor being encoded.

    Returns
    -------
    Tensor
        ``int32``, ``tensor.shape``.

    Raises
    ------
    ValueError
        If a dimension does not fit an int32 (one line naming the shape).
    """
    if any(d >= 2 ** 31 for d in tensor.shape):
        raise ValueError(f"tensor dimension must be < 2**31, got shape {tuple(tensor.shape)}")
    return torch.tensor(list(tensor.shape), dtype=torch.int32)


def checked_input(tensor: Any) -> torch.Tensor:
    """The tensor a codec may encode, detached: a floating-point tensor of finite values.

    Parameters
    ----------
    tensor : object
        What the caller passed to ``encode``.

    Returns
    -------
    Tensor
        ``tensor.detach()``.

    Raises
    ------
    TypeError
        If it is not a floating-point :class:`torch.Tensor`.
    ValueError
        If it holds NaN or infinite values.
    """
    if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
        raise TypeError(f"tensor: got {type(tensor).__name__}"
                        f"{' of ' + str(tensor.dtype) if isinstance(tensor, torch.Tensor) else ''}; "
                        f"allowed: a floating-point torch.Tensor")
    if tensor.numel() and not bool(torch.isfinite(tensor).all()):
        raise ValueError("tensor: holds NaN or infinite values; allowed: finite values only")
    return tensor.detach()


def needs_generator(name: str, generator: torch.Generator | None) -> torch.Generator:
    """The generator a drawing codec draws from; refuses to fall back on the global RNG.

    Parameters
    ----------
    name : str
        The codec's registered name, for the message.
    generator : torch.Generator or None
        What the caller passed to ``encode``.

    Returns
    -------
    torch.Generator

    Raises
    ------
    ValueError
        If ``generator`` is not a :class:`torch.Generator`.
    """
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator: got {generator!r}; allowed: a seeded torch.Generator "
                         f"(compressor {name!r} draws at random and never from the global RNG)")
    return generator


# ------------------------------------------------------------------------------------ protocol
@runtime_checkable
class Compressor(Protocol):
    """Encodes a tensor into a :class:`Payload` and decodes it back (see :mod:`sfl_sim.compression`)."""

    def encode(self, tensor: torch.Tensor, generator: torch.Generator | None = None) -> Payload:
        """The payload sent for ``tensor``; every draw from ``generator``."""

    def decode(self, payload: Payload) -> torch.Tensor:
        """The tensor the receiver reconstructs (shape and dtype of the encoded one)."""


#: Every compressor by short name.
COMPRESSORS = Registry("compressor", protocol=Compressor)


def build_compressor(spec: Any) -> Compressor:
    """A compressor from ``"name"`` or ``{name: ..., **params}`` (the scenario form)."""
    if isinstance(spec, Mapping):
        params = {k: v for k, v in spec.items() if k != "name"}
        # A missing or non-string name reaches Registry.get, which refuses it in one line.
        return COMPRESSORS.build(cast(str, spec.get("name")), **params)
    return COMPRESSORS.build(spec)


def codec_flops(compressor: Compressor, shape: tuple[int, ...]) -> tuple[float, float]:
    """(encode, decode) FLOPs of ``compressor`` on a tensor of ``shape``: its ``codec_flops``
    method's count, or (0, 0) for a compressor that has none."""
    method = getattr(compressor, "codec_flops", None)
    if method is None:
        return 0.0, 0.0
    encode, decode = method(tuple(int(d) for d in shape))
    return float(encode), float(decode)
