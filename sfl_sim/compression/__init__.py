"""Tensor compressors: what a payload costs over the air, counted from the bytes really encoded.

A compressor is a swappable component (registry :data:`COMPRESSORS`, ``sfl-sim list compressor``;
a ``package.module:Class`` of one's own works too).  It turns a tensor into a :class:`Payload` of
plain tensors and back:

``encode(tensor, generator=None) -> Payload``
    ``generator`` is the caller's seeded :class:`torch.Generator`; a compressor that draws
    (stochastic rounding, ``rand_topk``) draws only from it and refuses to run without one.
``decode(payload) -> tensor``
    The tensor the receiver trains on, of the encoded tensor's shape and dtype.

:attr:`Payload.size_bytes` is the sum of the ``nbytes`` of the payload's buffers — the k-bit
codes packed into ``uint8`` bytes, indices in the narrowest unsigned integer type that holds the
largest flat index, scales as ``float32`` and the shape header (one ``int32`` per dimension) — so
the size a channel is charged is the size of what was built, never a formula beside it.  The
dtype of the decoded tensor is not sent: both ends know the model's dtype.

Built-ins
---------
``identity``   the tensor itself (lossless).
``quantize``   ``bits``-bit uniform codes over ``[-s, s]``, ``s = max |x|`` per tensor or per
               channel (dimension 1), deterministic or stochastic (unbiased) rounding.
``topk``       the ``ceil(fraction * n)`` entries of largest magnitude, values and flat indices
               (``per_sample``: that share of each index of dimension 0).
``rand_topk``  randomized top-k (Zheng et al., "Reducing Communication for Split Learning by
               Randomized Top-k Sparsification", IJCAI 2023, arXiv:2305.18469): as many entries
               as ``topk``, drawn without replacement, each top-k entry with weight
               ``(1 - alpha) / k`` and each other entry with weight ``alpha / (n - k)``.

:class:`ErrorFeedback` carries each client's compression residual into its next encode (error
feedback, as used with top-k and QSGD for FL updates); its state is plain tensors so a checkpoint
holds it.

:func:`codec_flops` gives the (encode, decode) FLOPs the simulator charges for a tensor shape:
each built-in's ``codec_flops`` method states its count; a compressor of one's own without that
method is charged none.  The algorithms apply compressors per scenario ``compression:``
(:mod:`sfl_sim.algorithms._exec.compressed`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast, runtime_checkable

import torch
from pydantic import Field

from sfl_sim.kit.params import ParamsModel
from sfl_sim.kit.registry import Registry

__all__ = ["Payload", "Compressor", "COMPRESSORS", "Identity", "Quantize", "TopK", "RandTopK", "ErrorFeedback",
           "pack_bits", "unpack_bits", "index_dtype", "build_compressor", "codec_flops"]


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


def _header(tensor: torch.Tensor) -> torch.Tensor:
    """The shape header: one int32 per dimension (a 0-d tensor has none)."""
    if any(d >= 2 ** 31 for d in tensor.shape):
        raise ValueError(f"tensor dimension must be < 2**31, got shape {tuple(tensor.shape)}")
    return torch.tensor(list(tensor.shape), dtype=torch.int32)


def _checked_input(tensor: Any) -> torch.Tensor:
    if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
        raise TypeError(f"tensor: got {type(tensor).__name__}"
                        f"{' of ' + str(tensor.dtype) if isinstance(tensor, torch.Tensor) else ''}; "
                        f"allowed: a floating-point torch.Tensor")
    if tensor.numel() and not bool(torch.isfinite(tensor).all()):
        raise ValueError("tensor: holds NaN or infinite values; allowed: finite values only")
    return tensor.detach()


def _needs_generator(name: str, generator: torch.Generator | None) -> torch.Generator:
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator: got {generator!r}; allowed: a seeded torch.Generator "
                         f"(compressor {name!r} draws at random and never from the global RNG)")
    return generator


# ---------------------------------------------------------------------------- bits and indices
def pack_bits(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack integer codes in ``[0, 2**bits)`` into ``ceil(len * bits / 8)`` bytes, LSB first.

    Parameters
    ----------
    codes : Tensor
        1-d integer tensor.
    bits : int
        Width of each code, 1..16.

    Returns
    -------
    Tensor
        ``uint8``, the codes' bits one after another (code i's bit j is stream bit ``i*bits + j``).
    """
    codes = codes.reshape(-1).to(torch.int64)
    shifts = torch.arange(bits, dtype=torch.int64, device=codes.device)
    stream = ((codes.unsqueeze(1) >> shifts) & 1).reshape(-1).to(torch.uint8)
    pad = (-stream.numel()) % 8
    if pad:
        stream = torch.cat([stream, torch.zeros(pad, dtype=torch.uint8, device=codes.device)])
    weights = (1 << torch.arange(8, dtype=torch.int64, device=codes.device))
    return (stream.reshape(-1, 8).to(torch.int64) * weights).sum(dim=1).to(torch.uint8)


def unpack_bits(packed: torch.Tensor, bits: int, count: int) -> torch.Tensor:
    """The ``count`` codes of width ``bits`` that :func:`pack_bits` packed, as int64."""
    device = packed.device
    stream = ((packed.to(torch.int64).unsqueeze(1) >> torch.arange(8, dtype=torch.int64, device=device)) & 1)
    stream = stream.reshape(-1)[: count * bits].reshape(count, bits)
    return (stream << torch.arange(bits, dtype=torch.int64, device=device)).sum(dim=1)


def index_dtype(numel: int) -> torch.dtype:
    """The narrowest unsigned integer dtype holding every flat index of ``numel`` entries."""
    largest = max(int(numel) - 1, 0)
    for dtype, limit in ((torch.uint8, 2 ** 8), (torch.uint16, 2 ** 16), (torch.uint32, 2 ** 32)):
        if largest < limit:
            return dtype
    return torch.int64


# ------------------------------------------------------------------------------------ protocol
@runtime_checkable
class Compressor(Protocol):
    """Encodes a tensor into a :class:`Payload` and decodes it back (see the module docstring)."""

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


# ----------------------------------------------------------------------------------- built-ins
@COMPRESSORS.register("identity")
class Identity:
    """No compression: the tensor as it is (values in their dtype plus the shape header).

    In a scenario's ``compression:`` block it means no codec at all: the path is sent exactly as
    without compression (no header; :mod:`sfl_sim.algorithms._exec.compressed`)."""

    class Params(ParamsModel):
        pass

    def encode(self, tensor: torch.Tensor, generator: torch.Generator | None = None) -> Payload:
        x = _checked_input(tensor)
        return Payload({"values": x.contiguous().clone(), "shape": _header(x)}, x.dtype)

    def decode(self, payload: Payload) -> torch.Tensor:
        return payload.buffers["values"].reshape(payload.shape).clone()

    def codec_flops(self, shape: tuple[int, ...]) -> tuple[float, float]:
        """(encode, decode) FLOPs for a tensor of ``shape``: none, nothing is computed."""
        return 0.0, 0.0

    def __repr__(self) -> str:
        return "Identity()"


@COMPRESSORS.register("quantize")
class Quantize:
    """Uniform ``bits``-bit quantization over ``[-s, s]``, ``s = max |x|``; packed codes plus scales.

    Code ``q`` in ``[0, 2**bits - 1]`` stands for ``-s + q * step`` with ``step = 2 s / (2**bits - 1)``,
    so ``±s`` are exact (and an all-zero tensor, whose ``s`` is 0).  0 itself is not a level: the
    ``2**bits`` levels lie symmetric about 0, so an entry near 0 decodes to ``±step / 2`` (``±s / 3``
    at 2 bits, which is why 2-bit deterministic updates push every weight by a third of the largest
    change and FedAvg diverges with them).  Deterministic rounding takes the nearest level (error at most
    ``step / 2 = s / (2**bits - 1)``); stochastic rounding takes the level above with probability
    equal to the distance from the level below, in steps (unbiased, error below ``step``).

    Parameters
    ----------
    bits : int
        Bits per code, 1..16.
    rounding : {"deterministic", "stochastic"}
        Nearest level, or unbiased random rounding (draws from the ``generator`` given to encode).
    scale : {"per_tensor", "per_channel"}
        One ``float32`` scale ``s``, or one per index of dimension 1 (channels of an activation
        ``(B, C, ...)``; a tensor of fewer than two dimensions has one scale either way).
    """

    class Params(ParamsModel):
        bits: int = Field(8, ge=1, le=16, description="Bits per code, 1..16.")
        rounding: Literal["deterministic", "stochastic"] = Field(
            "deterministic", description="Nearest level, or unbiased random rounding.")
        scale: Literal["per_tensor", "per_channel"] = Field(
            "per_tensor", description="One float32 scale, or one per channel (dimension 1).")

    def __init__(self, bits: int = 8, rounding: str = "deterministic", scale: str = "per_tensor") -> None:
        p = Quantize.Params.check(bits=bits, rounding=rounding, scale=scale)
        self.bits, self.rounding, self.scale = p.bits, p.rounding, p.scale

    def _scales(self, x: torch.Tensor) -> torch.Tensor:
        """``s`` as float32, rounded up so that ``|x| <= s`` holds for a float64 ``x`` too: shape
        (1,) per tensor, (C,) per channel."""
        if self.scale == "per_channel" and x.dim() >= 2:
            s = x.abs().transpose(0, 1).reshape(x.shape[1], -1).amax(dim=1) if x.numel() \
                else torch.zeros(x.shape[1], dtype=x.dtype, device=x.device)
        else:
            s = x.abs().amax().reshape(1) if x.numel() else torch.zeros(1, dtype=x.dtype, device=x.device)
        s32 = s.to(torch.float32)
        return torch.where(s32.to(s.dtype) < s, torch.nextafter(s32, torch.full_like(s32, math.inf)), s32)

    @staticmethod
    def _broadcast(s: torch.Tensor, x_shape: tuple[int, ...], per_channel: bool) -> torch.Tensor:
        if per_channel and len(x_shape) >= 2:
            return s.reshape([1, s.numel()] + [1] * (len(x_shape) - 2))
        return s.reshape([1] * len(x_shape)) if x_shape else s.reshape(())

    def encode(self, tensor: torch.Tensor, generator: torch.Generator | None = None) -> Payload:
        x = _checked_input(tensor)
        top = 2 ** self.bits - 1
        s = self._scales(x)
        # float64 arithmetic: the code of a value is not perturbed by float32 rounding of x/step.
        sb = self._broadcast(s, tuple(x.shape), self.scale == "per_channel").to(torch.float64)
        step = 2.0 * sb / top
        t = (x.to(torch.float64) + sb) / torch.where(step > 0, step, torch.ones_like(step))
        if self.rounding == "stochastic":
            gen = _needs_generator("quantize", generator)
            low = torch.floor(t)
            u = torch.rand(t.shape, generator=gen, dtype=torch.float64, device=gen.device).to(t.device)
            q = low + (u < (t - low)).to(torch.float64)
        else:
            q = torch.floor(t + 0.5)
        q = q.clamp(0, top).to(torch.int64)
        return Payload({"codes": pack_bits(q, self.bits), "scales": s, "shape": _header(x)}, x.dtype,
                       {"bits": self.bits, "scale": self.scale})

    def decode(self, payload: Payload) -> torch.Tensor:
        shape = payload.shape
        count = math.prod(shape)
        bits = int(payload.agreed["bits"])
        top = 2 ** bits - 1
        q = unpack_bits(payload.buffers["codes"], bits, count).reshape(shape).to(torch.float64)
        sb = self._broadcast(payload.buffers["scales"], shape, payload.agreed["scale"] == "per_channel")
        sb = sb.to(torch.float64)
        return (-sb + q * (2.0 * sb / top)).to(payload.dtype)

    def codec_flops(self, shape: tuple[int, ...]) -> tuple[float, float]:
        """(encode, decode) FLOPs for a tensor of ``shape`` of ``n`` entries: encode ``5 n`` (the
        magnitude and the running maximum for the scale, shift, divide by the step, round) plus
        ``n`` for stochastic rounding's comparison with the draw; decode ``2 n`` (multiply by the
        step, shift back).  Bit packing is integer work and not counted."""
        n = float(math.prod(shape))
        return (6.0 if self.rounding == "stochastic" else 5.0) * n, 2.0 * n

    def __repr__(self) -> str:
        return f"Quantize(bits={self.bits}, rounding={self.rounding!r}, scale={self.scale!r})"


def _kept(numel: int, fraction: float) -> int:
    """Entries a sparsifier keeps: ``ceil(fraction * numel)`` (at least one of a non-empty tensor)."""
    # The product is rounded first so that 0.3 * 10 = 3.0000000000000004 keeps 3, not 4.
    return min(numel, math.ceil(round(fraction * numel, 9)))


def _rows(shape: tuple[int, ...], per_sample: bool) -> int:
    """How many rows a sparsifier selects in: the batch (dimension 0) per sample, else one."""
    return shape[0] if per_sample and len(shape) >= 2 else 1


def _magnitude_order(rows: torch.Tensor) -> torch.Tensor:
    """Each row's flat indices by decreasing magnitude; a stable sort ranks ties by index, so the
    choice is the same on every host."""
    return torch.sort(-rows.abs(), dim=1, stable=True).indices


def _sparse_payload(x: torch.Tensor, rows: torch.Tensor, idx: torch.Tensor, per_sample: bool) -> Payload:
    idx = torch.sort(idx, dim=1).values  # sorted indices: the payload does not reveal the ranking
    return Payload({"values": rows.gather(1, idx).reshape(-1).contiguous().clone(),
                    "indices": idx.reshape(-1).to(index_dtype(rows.shape[1])), "shape": _header(x)},
                   x.dtype, {"per_sample": per_sample})


def _sparse_decode(payload: Payload) -> torch.Tensor:
    shape = payload.shape
    n_rows = _rows(shape, bool(payload.agreed["per_sample"]))
    values = payload.buffers["values"].to(payload.dtype)
    out = torch.zeros(n_rows, math.prod(shape) // n_rows if n_rows else 0, dtype=payload.dtype,
                      device=values.device)
    idx = payload.buffers["indices"].to(torch.int64).reshape(n_rows, -1) if n_rows else \
        torch.zeros(0, 0, dtype=torch.int64)
    out.scatter_(1, idx.to(values.device), values.reshape(idx.shape))
    return out.reshape(shape)


def _sparse_flops(shape: tuple[int, ...], per_sample: bool, extra_per_entry: float) -> tuple[float, float]:
    """(encode, decode) FLOPs of a sparsifier on ``shape``: the magnitudes (``n``), a comparison
    sort of each row of ``m`` entries (``n ceil(log2 m)`` comparisons) and ``extra_per_entry n``;
    decode scatters the kept values (no arithmetic: 0)."""
    n = math.prod(shape)
    rows = _rows(shape, per_sample)
    m = n // rows if rows else 0
    return float(n) * (1.0 + math.ceil(math.log2(m)) if m > 1 else 1.0) + extra_per_entry * n, 0.0


def _as_rows(x: torch.Tensor, per_sample: bool) -> torch.Tensor:
    n_rows = _rows(tuple(x.shape), per_sample)
    return x.reshape(n_rows, x.numel() // n_rows if n_rows else 0)


_FRACTION = Field(0.1, gt=0, le=1, allow_inf_nan=False,
                  description="Share of the entries kept, in (0, 1]; ceil(fraction * n) entries.")
_PER_SAMPLE = Field(False, description="Select in each sample (row of dimension 0) rather than over the "
                                       "whole tensor.")


@COMPRESSORS.register("topk")
class TopK:
    """Top-k sparsification: the ``ceil(fraction * n)`` largest-magnitude entries, values plus indices.

    Parameters
    ----------
    fraction : float
        Share of the entries kept, in (0, 1].  Ties in magnitude go to the lower flat index.
    per_sample : bool
        Keep ``ceil(fraction * m)`` entries of each sample (each index of dimension 0, ``m``
        entries each; indices are within the sample) instead of over the whole tensor.  A tensor
        of fewer than two dimensions is one sample either way.
    """

    class Params(ParamsModel):
        fraction: float = _FRACTION
        per_sample: bool = _PER_SAMPLE

    def __init__(self, fraction: float = 0.1, per_sample: bool = False) -> None:
        p = TopK.Params.check(fraction=fraction, per_sample=per_sample)
        self.fraction, self.per_sample = p.fraction, p.per_sample

    def encode(self, tensor: torch.Tensor, generator: torch.Generator | None = None) -> Payload:
        x = _checked_input(tensor)
        rows = _as_rows(x, self.per_sample)
        k = _kept(rows.shape[1], self.fraction)
        return _sparse_payload(x, rows, _magnitude_order(rows)[:, :k], self.per_sample)

    def decode(self, payload: Payload) -> torch.Tensor:
        return _sparse_decode(payload)

    def codec_flops(self, shape: tuple[int, ...]) -> tuple[float, float]:
        """(encode, decode) FLOPs on ``shape`` (``n`` entries in rows of ``m``): encode
        ``n (1 + ceil(log2 m))`` (magnitudes, comparison sort), decode 0 (a scatter)."""
        return _sparse_flops(shape, self.per_sample, 0.0)

    def __repr__(self) -> str:
        return f"TopK(fraction={self.fraction}, per_sample={self.per_sample})"


@COMPRESSORS.register("rand_topk")
class RandTopK:
    """Randomized top-k (arXiv:2305.18469): k entries drawn, the top-k likely, the others sometimes.

    The ``k = ceil(fraction * n)`` kept entries are drawn without replacement with weight
    ``(1 - alpha) / k`` for each of the k largest-magnitude entries and ``alpha / (n - k)`` for
    every other one (Zheng et al. 2023; the weights of their ``torch.multinomial`` form), so
    ``alpha`` is the chance that the first draw is a non-top-k entry; ``alpha = 0`` is
    :class:`TopK`.  The paper draws per sample (``per_sample: true``, each row of a batch of
    cut-layer activations) and uses plain top-k at inference; this class sparsifies whatever it
    is given (the caller decides what and when).

    Parameters
    ----------
    fraction : float
        Share of the entries kept, in (0, 1].
    alpha : float
        Total weight of the non-top-k entries, in [0, 1).
    per_sample : bool
        Draw ``ceil(fraction * m)`` entries in each sample (index of dimension 0) instead of over
        the whole tensor.
    """

    class Params(ParamsModel):
        fraction: float = _FRACTION
        alpha: float = Field(0.1, ge=0, lt=1, allow_inf_nan=False,
                             description="Total selection weight of the non-top-k entries, in [0, 1).")
        per_sample: bool = _PER_SAMPLE

    def __init__(self, fraction: float = 0.1, alpha: float = 0.1, per_sample: bool = False) -> None:
        p = RandTopK.Params.check(fraction=fraction, alpha=alpha, per_sample=per_sample)
        self.fraction, self.alpha, self.per_sample = p.fraction, p.alpha, p.per_sample

    def encode(self, tensor: torch.Tensor, generator: torch.Generator | None = None) -> Payload:
        gen = _needs_generator("rand_topk", generator)
        x = _checked_input(tensor)
        rows = _as_rows(x, self.per_sample)
        n_rows, m = rows.shape
        k = _kept(m, self.fraction)
        order = _magnitude_order(rows)
        if k in (0, m) or n_rows == 0:
            return _sparse_payload(x, rows, order[:, :k], self.per_sample)
        order_at_gen = order.to(gen.device)
        weights = torch.full((n_rows, m), self.alpha / (m - k), dtype=torch.float64, device=gen.device)
        weights.scatter_(1, order_at_gen[:, :k], (1.0 - self.alpha) / k)
        chosen = torch.multinomial(weights, k, replacement=False, generator=gen).to(x.device)
        return _sparse_payload(x, rows, chosen, self.per_sample)

    def decode(self, payload: Payload) -> torch.Tensor:
        return _sparse_decode(payload)

    def codec_flops(self, shape: tuple[int, ...]) -> tuple[float, float]:
        """(encode, decode) FLOPs on ``shape`` (``n`` entries in rows of ``m``): encode
        ``n (1 + ceil(log2 m)) + 2 n`` (magnitudes, comparison sort, the selection weights and
        their running sum for the draw), decode 0 (a scatter)."""
        return _sparse_flops(shape, self.per_sample, 2.0)

    def __repr__(self) -> str:
        return f"RandTopK(fraction={self.fraction}, alpha={self.alpha}, per_sample={self.per_sample})"


# ------------------------------------------------------------------------------ error feedback
class ErrorFeedback:
    """Error feedback: each client's residual ``x - decode(encode(x))`` is added to its next input.

    With a residual carried, the sum of everything decoded for a client differs from the sum of
    its inputs by only the last residual, so no information is lost for good (Seide et al. 2014;
    Karimireddy et al. 2019).

    Parameters
    ----------
    compressor : Compressor
        The compressor whose loss is fed back.
    """

    def __init__(self, compressor: Compressor) -> None:
        self.compressor = compressor
        self._residual: dict[int, torch.Tensor] = {}

    def residual(self, client: int) -> torch.Tensor | None:
        """Client ``client``'s current residual, or None before its first encode."""
        return self._residual.get(int(client))

    def encode(self, client: int, tensor: torch.Tensor,
               generator: torch.Generator | None = None) -> tuple[Payload, torch.Tensor]:
        """Encode ``tensor`` plus the client's residual; returns the payload and its decoded tensor.

        Raises
        ------
        ValueError
            If ``tensor``'s shape differs from the residual's (one line naming both shapes).
        """
        key = int(client)
        x = _checked_input(tensor)
        carried = self._residual.get(key)
        if carried is not None and carried.shape != x.shape:
            raise ValueError(f"tensor: shape {tuple(x.shape)} of client {key} differs from its residual's "
                             f"{tuple(carried.shape)}; allowed: the same shape every time")
        corrected = x if carried is None else x + carried
        payload = self.compressor.encode(corrected, generator)
        decoded = self.compressor.decode(payload)
        self._residual[key] = (corrected - decoded).detach().clone()
        return payload, decoded

    def state_dict(self) -> dict[str, Any]:
        """``{"residuals": {client: tensor}}``: plain tensors (``torch.load(weights_only=True)``)."""
        return {"residuals": {k: v.clone() for k, v in sorted(self._residual.items())}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` exactly."""
        residuals = state["residuals"]
        self._residual = {int(k): torch.as_tensor(v).clone() for k, v in residuals.items()}
