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

Modules
-------
:mod:`~sfl_sim.compression.base`            the payload, the protocol, the registry and what every codec's
                                            ``encode`` uses (input checks, the shape header)
:mod:`~sfl_sim.compression.identity`,
:mod:`~sfl_sim.compression.quantize`,
:mod:`~sfl_sim.compression.topk`,
:mod:`~sfl_sim.compression.rand_topk`       one codec each (importing this package registers them all)
:mod:`~sfl_sim.compression.sparse`          what the two sparsifiers share
:mod:`~sfl_sim.compression.error_feedback`  :class:`ErrorFeedback`
:mod:`~sfl_sim.compression.conformance`     :func:`~sfl_sim.compression.conformance.check_compressor`
"""
from __future__ import annotations

# importing each codec's module registers it in COMPRESSORS
from sfl_sim.compression.base import COMPRESSORS, Compressor, Payload, build_compressor, codec_flops
from sfl_sim.compression.error_feedback import ErrorFeedback
from sfl_sim.compression.identity import Identity
from sfl_sim.compression.quantize import Quantize, pack_bits, unpack_bits
from sfl_sim.compression.rand_topk import RandTopK
from sfl_sim.compression.sparse import index_dtype
from sfl_sim.compression.topk import TopK

__all__ = ["Payload", "Compressor", "COMPRESSORS", "Identity", "Quantize", "TopK", "RandTopK", "ErrorFeedback",
           "pack_bits", "unpack_bits", "index_dtype", "build_compressor", "codec_flops"]
