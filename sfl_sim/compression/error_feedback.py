"""Error feedback: each client's compression residual carried into its next encode (as used with
top-k and QSGD for FL updates); its state is plain tensors so a checkpoint holds it."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from sfl_sim.compression.base import Compressor, Payload, checked_input

__all__ = ["ErrorFeedback"]


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
        x = checked_input(tensor)
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
