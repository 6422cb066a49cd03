"""Torch random streams of their own, for the work whose place in the event order timing can change.

An algorithm's torch work runs when its simulated events fire: client k's local step when its
compute job ends, a per-client server copy's step when k's activations reach the server.  Drawn
from torch's one global generator, the random draws of that work (dropout masks, any other
in-model randomness) would depend on the order of those events — on the bandwidth, the rate model,
the compute budgets — and a re-timed run (:mod:`sfl_sim.runs.retime`) could not keep the recorded
training.  Here such work draws from a generator of its own, chosen by a *key*:

* a client's own work (its local training in the FL family, its client-side forward and backward
  in the split family) from ``client_work/<unit>/<client>``, where the unit is the round
  (``round<n>``, n counted from 0 by the algorithm): a fresh stream per round and client.  An
  asynchronous algorithm has no rounds; each dispatch draws from a stream of its own, seeded as
  the round of the model version it starts from (so FedBuff with K = C draws what FedAvg draws)
  (:meth:`~sfl_sim.algorithms.base.Algorithm.client_stream`);
* a per-client server copy of the split family (``per_client`` server mode) from
  ``server_copy/<client>``, one stream per client kept across rounds (a client's stream goes on
  where its last step left it).

Each stream is seeded from the seed the model was initialised with (the run's ``model_init``
stream, :func:`~sfl_sim.kit.seeding.torch_seed`) and its name, so the two families of names cannot
meet.  The states of the streams that have drawn go into the checkpoint.  On a GPU the device's
generator is kept per key too.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from sfl_sim.kit.seeding import torch_seed

__all__ = ["TorchStreams"]

#: A stream's key: a client (the server copies) or ``"<unit>/<client>"`` (a client's work).
StreamKey = int | str


class TorchStreams:
    """Torch generator states by key, each seeded from ``root_seed`` and ``<name>/<key>``.

    Parameters
    ----------
    root_seed : int
        The seed every stream is derived from (with its name).
    device : torch.device
        Where the work runs: on a GPU its generator is kept per key too.
    name : str
        The family of streams (``"server_copy"``, ``"client_work"``): the first part of every
        stream's name.
    """

    def __init__(self, root_seed: int, device: torch.device, name: str) -> None:
        self.root_seed = int(root_seed)
        self.name = name
        self.cuda = [device] if device.type == "cuda" else []
        self._states: dict[StreamKey, list[torch.Tensor]] = {}  # key -> its generators' states

    @contextlib.contextmanager
    def of(self, key: StreamKey, seed: StreamKey | None = None) -> Iterator[None]:
        """Torch's generators set to ``key``'s own for the block, the run's restored after it.

        ``seed``: the name (after ``<name>/``) the stream is seeded from the first time, if not
        ``key`` (an asynchronous dispatch's stream is kept under its own key, seeded as a round's)."""
        with torch.random.fork_rng(devices=self.cuda):
            state = self._states.get(key)
            if state is None:
                torch.manual_seed(torch_seed(self.root_seed, f"{self.name}/{key if seed is None else seed}"))
            else:
                torch.set_rng_state(state[0])
                if self.cuda:
                    torch.cuda.set_rng_state(state[1], self.cuda[0])
            yield
            self._states[key] = [torch.get_rng_state(), *(torch.cuda.get_rng_state(d) for d in self.cuda)]

    def forget(self, key: StreamKey | None = None) -> None:
        """Drop ``key``'s state (None: every key's): a stream no work will draw from again."""
        if key is None:
            self._states.clear()
        else:
            self._states.pop(key, None)

    def state_dict(self) -> dict[StreamKey, list[torch.Tensor]]:
        """Each key's generator states (those that have drawn)."""
        return {k: list(v) for k, v in self._states.items()}

    def load_state_dict(self, state: Mapping[Any, Any]) -> None:
        """Restore :meth:`state_dict` (an empty mapping: every stream from its seed)."""
        self._states = {k if isinstance(k, str) else int(k): list(v) for k, v in dict(state).items()}
