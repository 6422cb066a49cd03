"""Every optimizer of one algorithm, what outlives them, and the step that uses them.

State semantics (documented in the README's ``training:`` section):

* **client optimizers** (``client(k, params, name)``) live for one round: the first call of a
  round creates one over the parameters given (whatever working model client k has this round)
  and later calls of the round return it.  At the round's end it is dropped — with
  ``client_optimizer_state: persist`` its state is first kept as a plain state dict and loaded
  into client k's optimizer of that name the next round it takes part.  Nothing is tied to a
  model object's identity: an optimizer is always built over the parameters handed in.
* **server optimizers** (``server(params, name)``) persist across rounds.  When the parameters
  handed in are not the ones an existing server optimizer holds (the algorithm rebuilt or
  replaced its server model), a new optimizer is built over them and the old one's state is
  loaded into it.
* the **learning rate** of every optimizer is the round's rate from :class:`RoundSchedule` (or a
  fixed ``lr`` a caller passes for an optimizer of its own, e.g. SCALA-PE's inverter).

:meth:`OptimizerBank.state_dict` holds only state that carries information — per-parameter
buffers (momentum, Adam moments), a schedule's position, persisted client states — so an
algorithm with plain SGD at a constant rate has none and its checkpoint holds no optimizer
state.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

from sfl_sim.optim.factory import OptimizerMaker
from sfl_sim.optim.schedule import RoundSchedule
from sfl_sim.optim.settings import TrainingSettings

__all__ = ["OptimizerBank"]

_TORCH_ZERO_GRAD = torch.optim.Optimizer.zero_grad


class _Slot:
    """One live optimizer and the parameters it was built over."""

    def __init__(self, optimizer: torch.optim.Optimizer, params: list[torch.nn.Parameter]) -> None:
        self.optimizer = optimizer
        self.params = params

    def holds(self, params: list[torch.nn.Parameter]) -> bool:
        """Whether ``params`` are exactly the tensors (same objects, same order) it steps."""
        return len(params) == len(self.params) and all(a is b for a, b in zip(params, self.params, strict=True))

    def set_lr(self, lr: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = lr


def _carries_state(state: Mapping[str, Any]) -> bool:
    """Whether an optimizer state dict holds per-parameter state (SGD without momentum holds none)."""
    return bool(state.get("state"))


class OptimizerBank:
    """The optimizers of one algorithm (see module docstring).

    Parameters
    ----------
    settings : TrainingSettings
    base_lr : float
        ``training.learning_rate``, the first round's rate.
    """

    def __init__(self, settings: TrainingSettings, base_lr: float) -> None:
        self.settings = settings
        self.schedule = RoundSchedule(base_lr, settings.lr_schedule, settings.lr_schedule_params)
        self._server: dict[str, _Slot] = {}
        self._server_loaded: dict[str, dict[str, Any]] = {}  # from a checkpoint, until first used
        self._clients: dict[tuple[int, str], _Slot] = {}
        self._kept: dict[int, dict[str, dict[str, Any]]] = {}  # persist: client -> name -> state
        # Every client builds its optimizers anew each round: resolve and check the class once.
        self._make = OptimizerMaker(settings)

    @property
    def lr(self) -> float:
        """The current round's learning rate."""
        return self.schedule.lr

    @property
    def persist_clients(self) -> bool:
        return self.settings.client_optimizer_state == "persist"

    # -- rounds ------------------------------------------------------------------------------------
    def begin_round(self) -> None:
        """Start a round: no client optimizer carries over (with ``persist`` their state was kept)."""
        self._close_clients()

    def end_round(self) -> None:
        """End a round: close the clients' optimizers (keeping their state with ``persist``) and
        move the schedule to the next round's rate."""
        self._close_clients()
        self.schedule.step()

    def _close_clients(self) -> None:
        if self.persist_clients:
            for (k, name), slot in self._clients.items():
                state = slot.optimizer.state_dict()
                if _carries_state(state):
                    self._kept.setdefault(k, {})[name] = state
        self._clients = {}

    # -- optimizers --------------------------------------------------------------------------------
    def client(self, client: int, params: Iterable[torch.nn.Parameter], name: str = "model",
               lr: float | None = None) -> torch.optim.Optimizer:
        """Client ``client``'s optimizer ``name`` of this round over ``params`` (see module docstring).

        Parameters
        ----------
        client : int
        params : iterable of Parameter
            What the optimizer steps (e.g. the client's working copy's parameters).
        name : str
            Which of the client's optimizers (a client may train several models, e.g. BESplit-A's
            client model and auxiliary model).
        lr : float, optional
            A fixed rate instead of the round's.
        """
        params = list(params)
        key = (client, name)
        slot = self._clients.get(key)
        if slot is None or not slot.holds(params):
            state: dict[str, Any] | None
            if slot is not None:  # other tensors under the same name within a round: carry the state over
                state = slot.optimizer.state_dict()
            else:
                state = self._kept.get(client, {}).get(name) if self.persist_clients else None
            slot = self._clients[key] = self._new_slot(params, state)
        slot.set_lr(self.lr if lr is None else lr)
        return slot.optimizer

    def server(self, params: Iterable[torch.nn.Parameter], name: str = "model",
               lr: float | None = None) -> torch.optim.Optimizer:
        """The server's optimizer ``name`` over ``params``; it persists across rounds.

        Parameters
        ----------
        params : iterable of Parameter
            The server-side model's parameters.
        name : str
            Which of the server's optimizers.
        lr : float, optional
            A fixed rate instead of the round's.
        """
        params = list(params)
        slot = self._server.get(name)
        if slot is None or not slot.holds(params):
            state = slot.optimizer.state_dict() if slot is not None else self._server_loaded.pop(name, None)
            slot = self._server[name] = self._new_slot(params, state)
        slot.set_lr(self.lr if lr is None else lr)
        return slot.optimizer

    def _new_slot(self, params: list[torch.nn.Parameter], state: Mapping[str, Any] | None) -> _Slot:
        optimizer = self._make(params, self.lr)
        if state is not None and _carries_state(state):
            optimizer.load_state_dict(dict(state))
        return _Slot(optimizer, params)

    def step(self, optimizer: torch.optim.Optimizer) -> None:
        """Clip (``max_grad_norm``), step and clear the gradients of every parameter ``optimizer`` holds.

        Parameters without a gradient are left alone (as by torch's optimizers)."""
        if self.settings.max_grad_norm is not None:
            grads = [p for g in optimizer.param_groups for p in g["params"] if p.grad is not None]
            if grads:
                torch.nn.utils.clip_grad_norm_(grads, self.settings.max_grad_norm)
        optimizer.step()
        if type(optimizer).zero_grad is _TORCH_ZERO_GRAD:
            # What zero_grad(set_to_none=True) does, without its profiler context (a third of an
            # SGD step's host time on a small client model); a class with its own zero_grad gets it.
            for group in optimizer.param_groups:
                for p in group["params"]:
                    p.grad = None
        else:
            optimizer.zero_grad(set_to_none=True)

    # -- state -------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The state that carries information (module docstring); ``{}`` when there is none."""
        out: dict[str, Any] = {}
        schedule = self.schedule.state_dict()
        if schedule:
            out["schedule"] = schedule
        server = dict(self._server_loaded)
        server.update({name: slot.optimizer.state_dict() for name, slot in self._server.items()})
        server = {name: s for name, s in server.items() if _carries_state(s)}
        if server:
            out["server"] = server
        if self.persist_clients:
            kept = {k: dict(v) for k, v in self._kept.items()}
            for (k, name), slot in self._clients.items():  # open only when asked mid-round
                live = slot.optimizer.state_dict()
                if _carries_state(live):
                    kept.setdefault(k, {})[name] = live
            if kept:
                out["clients"] = {k: kept[k] for k in sorted(kept)}
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`; server states are loaded into the server optimizers when
        they are first asked for (their parameters are not known before)."""
        self.schedule.load_state_dict(state.get("schedule", {}))
        self._server = {}
        self._server_loaded = {str(name): s for name, s in state.get("server", {}).items()}
        self._clients = {}
        self._kept = {int(k): {str(n): s for n, s in v.items()} for k, v in state.get("clients", {}).items()}
