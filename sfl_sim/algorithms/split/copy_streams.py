"""Each per-client server copy's own torch random stream (its dropout), so that the order in which
the server meets the clients changes when a copy steps, never what it learns.

With one copy of w_s per client (``per_client`` server mode: SplitFedV1, V3, CS-SFL, LLA-SFL,
SFL with local loss, BESplit), the server steps client k's copy when k's activations arrive: in
the order the link delivers them.  Drawn from torch's one global generator, each copy's dropout
masks would then depend on that order (on the bandwidth, the rate model, the compute budgets), and
a re-timed run (:mod:`sfl_sim.runs.retime`) could not keep the recorded training.  Here each copy
draws from a generator of its own, seeded from the seed the model was initialised with and the
client's id, kept across rounds (a client's stream goes on where its last step left it) and in
the checkpoint.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from sfl_sim.kit.seeding import torch_seed

__all__ = ["CopyStreams"]


class CopyStreams:
    """The per-client torch generator states of the server copies.

    Parameters
    ----------
    root_seed : int
        The seed every client's stream is derived from (with the client's id).
    device : torch.device
        Where the copies run: on a GPU its generator is kept per client too.
    """

    def __init__(self, root_seed: int, device: torch.device) -> None:
        self.root_seed = int(root_seed)
        self.cuda = [device] if device.type == "cuda" else []
        self._states: dict[int, list[torch.Tensor]] = {}  # client -> its generators' states

    @contextlib.contextmanager
    def of(self, client: int) -> Iterator[None]:
        """Torch's generators set to ``client``'s own for the block, the run's restored after it."""
        with torch.random.fork_rng(devices=self.cuda):
            state = self._states.get(client)
            if state is None:
                torch.manual_seed(torch_seed(self.root_seed, f"server_copy/{client}"))
            else:
                torch.set_rng_state(state[0])
                if self.cuda:
                    torch.cuda.set_rng_state(state[1], self.cuda[0])
            yield
            self._states[client] = [torch.get_rng_state(), *(torch.cuda.get_rng_state(d) for d in self.cuda)]

    def state_dict(self) -> dict[int, list[torch.Tensor]]:
        """Each client's generator states (those that have drawn)."""
        return {k: list(v) for k, v in self._states.items()}

    def load_state_dict(self, state: Mapping[Any, Any]) -> None:
        """Restore :meth:`state_dict` (an empty mapping: every stream from its seed)."""
        self._states = {int(k): list(v) for k, v in dict(state).items()}
