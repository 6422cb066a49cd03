"""Compression applied by the algorithms: one codec per path, what crosses the air and what is trained on.

A run's ``compression:`` (scenario block, see :mod:`sfl_sim.config.models`) names a compressor
(:mod:`sfl_sim.compression`) per *path*:

``activations``  split algorithms' uplink activations A_k (the labels Y_k stay exact);
``gradients``    split algorithms' downlink activation gradients G_k (extras such as BESplit-A's
                 teacher logits stay exact);
``updates``      FL algorithms' model update, the delta w_k - w^t of the floating-point state
                 entries (integer buffers such as BatchNorm's counters go as they are);
``model_download`` the model the server broadcasts to the cohort: FL's global model w^t, split
                 learning's client side w_c (its floating-point entries as one vector, encoded
                 once by the server, :func:`send_model`; every client decodes the one payload
                 and trains from the decoded model, which is also the w^t an update is a delta from).

The sender encodes, the engine is charged the payload's :attr:`~sfl_sim.compression.Payload.size_bytes`
(plus, for an update, the integer buffers' bytes), and the receiver trains on the decoded tensor.
Encode FLOPs go to the sender, decode FLOPs to the receiver (each compressor's ``codec_flops``;
with error feedback the sender also decodes, to form the residual, and adds ``2 n`` for adding and
forming it).  ``identity`` is no codec at all: the tensor goes as the uncompressed protocol sends
it, so a run with ``identity`` is the run without compression, bit for bit.

Random draws (stochastic rounding, ``rand_topk``) come from one :class:`torch.Generator` seeded
from the run's seed; its state and the error-feedback residuals are the plan's
:meth:`CompressionPlan.state_dict`, which the algorithm's checkpoint holds, so a resume is exact.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

import torch
from torch import nn

from sfl_sim.compression import Compressor, ErrorFeedback, Identity, Payload, codec_flops
from sfl_sim.config.choices import CompressionPath

__all__ = ["COMPRESSION_PATHS", "PathCodec", "CompressionPlan", "Encoded", "SentModel", "send_model", "float_keys",
           "flat", "unflat"]

#: The paths a ``compression:`` block names, in order (:data:`sfl_sim.config.choices.CompressionPath`).
COMPRESSION_PATHS: tuple[str, ...] = get_args(CompressionPath)


@dataclass(frozen=True)
class Encoded:
    """One tensor sent compressed.

    Attributes
    ----------
    nbytes : int
        Bytes charged on the link: the payload's ``size_bytes``.
    decoded : Tensor
        What the receiver reconstructs and trains on.
    encode_flops, decode_flops : float
        FLOPs of the sender and of the receiver.
    """

    nbytes: int
    decoded: torch.Tensor
    encode_flops: float
    decode_flops: float


class PathCodec:
    """The compressor of one path, with error feedback per client when asked.

    Parameters
    ----------
    compressor : Compressor
    error_feedback : bool
        Carry each client's residual into its next encode (:class:`~sfl_sim.compression.ErrorFeedback`).
    """

    def __init__(self, compressor: Compressor, error_feedback: bool = False) -> None:
        self.compressor = compressor
        self.feedback: ErrorFeedback | None = ErrorFeedback(compressor) if error_feedback else None

    def encode(self, client: int, tensor: torch.Tensor, generator: torch.Generator) -> Encoded:
        """Encode client ``client``'s ``tensor`` (detached); returns bytes, decoded tensor and FLOPs."""
        x = tensor.detach()
        encode, decode = codec_flops(self.compressor, tuple(x.shape))
        if self.feedback is not None:
            payload, decoded = self.feedback.encode(client, x, generator)
            encode += decode + 2.0 * x.numel()
        else:
            payload = self.compressor.encode(x, generator)
            decoded = self.compressor.decode(payload)
        return Encoded(_size(payload), decoded, encode, decode)

    def payload_bytes(self, like: torch.Tensor) -> int:
        """Bytes of the payload of a tensor shaped like ``like``, declared before it exists (the
        round's uplink allocation): those of encoding zeros of its shape, dtype and device with a
        throwaway generator and no residual — the built-ins' payload sizes depend on the shape
        alone (packed codes, k = ceil(fraction n) entries)."""
        probe = torch.zeros_like(like)
        return _size(self.compressor.encode(probe, torch.Generator().manual_seed(0)))

    def state_dict(self) -> dict[str, Any]:
        """The residuals (``{}`` without error feedback)."""
        return {} if self.feedback is None else self.feedback.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        if self.feedback is not None:
            self.feedback.load_state_dict(state)


def _size(payload: Payload) -> int:
    return int(payload.size_bytes)


@dataclass
class CompressionPlan:
    """A run's codecs by path (None: that path goes uncompressed) and their random stream.

    Attributes
    ----------
    codecs : dict of str to PathCodec
        Only the compressed paths; ``identity`` never appears (see the module docstring).
    generator : torch.Generator
        The stream of every compressor draw (seeded by the build from the run's seed).
    """

    codecs: dict[str, PathCodec] = field(default_factory=dict)
    generator: torch.Generator = field(default_factory=torch.Generator)

    @classmethod
    def of(cls, compressors: Mapping[str, tuple[Compressor, bool]], seed: int) -> CompressionPlan:
        """The plan of ``{path: (compressor, error_feedback)}`` with its stream seeded by ``seed``;
        ``identity`` compressors are left out (the path is sent as it is)."""
        codecs = {path: PathCodec(c, fb) for path, (c, fb) in compressors.items() if not isinstance(c, Identity)}
        return cls(codecs, torch.Generator().manual_seed(int(seed)))

    def codec(self, path: str) -> PathCodec | None:
        """The codec of ``path``, or None when it goes uncompressed."""
        return self.codecs.get(path)

    def encode(self, path: str, client: int, tensor: torch.Tensor) -> Encoded:
        """Encode client ``client``'s ``tensor`` on ``path`` (which must have a codec)."""
        return self.codecs[path].encode(client, tensor, self.generator)

    def __bool__(self) -> bool:
        return bool(self.codecs)

    def state_dict(self) -> dict[str, Any]:
        """The stream's state and each path's residuals: plain tensors and dicts."""
        return {"generator": self.generator.get_state(),
                "paths": {path: codec.state_dict() for path, codec in self.codecs.items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` exactly."""
        self.generator.set_state(state["generator"])
        for path, codec in self.codecs.items():
            codec.load_state_dict(state["paths"][path])


def float_keys(state: Mapping[str, torch.Tensor]) -> list[str]:
    """The keys of ``state``'s floating-point entries: what an update or a download compresses
    (integer buffers, e.g. BatchNorm's counters, go as they are)."""
    return [key for key, v in state.items() if torch.is_floating_point(v)]


def flat(state: Mapping[str, torch.Tensor], keys: list[str]) -> torch.Tensor:
    """``state[key]`` for ``keys``, flattened and concatenated into one vector."""
    return torch.cat([state[key].reshape(-1) for key in keys]) if keys else torch.zeros(0)


def unflat(vector: torch.Tensor, like: Mapping[str, torch.Tensor], keys: list[str]) -> dict[str, torch.Tensor]:
    """:func:`flat` undone: ``vector`` cut into ``like``'s entries of ``keys`` (shape and dtype)."""
    out, start = {}, 0
    for key in keys:
        n = like[key].numel()
        out[key] = vector[start:start + n].reshape(like[key].shape).to(like[key].dtype)
        start += n
    return out


@dataclass(frozen=True)
class SentModel:
    """A model broadcast through ``model_download`` (:func:`send_model`).

    Attributes
    ----------
    exact : dict of str to Tensor
        The server's state before the send (a copy): restored when no client delivers.
    lost : dict of str to Tensor
        What the send lost, exact minus decoded, per floating-point entry: added back to the
        aggregate (:meth:`keep_exact`).
    nbytes : int
        Bytes of the broadcast: the payload plus the integer entries as they are.
    encode_flops, decode_flops : float
        FLOPs of the server (once) and of each receiving client.
    """

    exact: dict[str, torch.Tensor]
    lost: dict[str, torch.Tensor]
    nbytes: int
    encode_flops: float
    decode_flops: float

    def keep_exact(self, module: nn.Module) -> None:
        """After the aggregation of models trained from the decoded copy: add :attr:`lost` to
        ``module``'s floating-point entries, so the server's model is its exact w^t plus what the
        round moved (w^t + avg(w_k - decoded w^t) for an average).  Without it the decoded copy
        would become the server's model and every round would round away the updates smaller
        than half a quantization step: the model could not move."""
        state = module.state_dict()
        module.load_state_dict({**state, **{key: state[key] + lost for key, lost in self.lost.items()}})


def send_model(plan: CompressionPlan, module: nn.Module, sender: int) -> SentModel:
    """Encode ``module``'s floating-point state entries (one vector) on ``model_download`` and
    load the decoded values into ``module``: from now on it is the model the clients receive,
    until the server's aggregate takes back its exact values (:meth:`SentModel.keep_exact`).

    The whole model is sent, not a delta from a client's last copy: a client sampled now may
    have missed many rounds.  ``sender`` is the encoder's id (the server's; no error feedback on
    this path, so it keys nothing)."""
    state = module.state_dict()
    floats = float_keys(state)
    coded = plan.encode("model_download", sender, flat(state, floats))
    exact = {key: v.clone() for key, v in state.items()}
    decoded = unflat(coded.decoded, state, floats)
    lost = {key: exact[key] - decoded[key] for key in floats}
    module.load_state_dict({**state, **decoded})
    as_is = sum(v.numel() * v.element_size() for key, v in state.items() if key not in floats)
    return SentModel(exact, lost, coded.nbytes + int(as_is), coded.encode_flops, coded.decode_flops)
