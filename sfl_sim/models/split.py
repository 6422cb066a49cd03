"""Models expressed as an ordered list of blocks that can be cut between a client and a server.

Split federated learning runs the first blocks of a model on the client and the rest on the
server.  :class:`SplittableModel` stores the model as ``blocks`` (the forward pass is their
composition) and names the admissible cuts in ``split_points``, so every algorithm and the FLOP
counter can obtain the two parts in the same way.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import nn


class SplittableModel(nn.Module):
    """A model made of ordered blocks, with named points at which it can be split.

    Parameters
    ----------
    blocks : iterable of nn.Module
        The blocks in forward order; ``forward(x)`` applies them one after another.
    split_points : dict of str to int
        Maps a split-point name (e.g. ``"S2"``) to the number of leading blocks that stay on the
        client.  Each value must lie in ``1 .. len(blocks) - 1`` so that both parts hold at least
        one block.  The dict order is the order used in error messages.
    default_split_point : str
        The split point used when a scenario names none; must be a key of ``split_points``.
    name : str
        Short model name, used in error messages (e.g. ``"alexnet"``).
    input_shape : tuple of int, optional
        Per-sample input shape ``(C, H, W)``; needed by :meth:`activation_shape`.

    Attributes
    ----------
    blocks : nn.ModuleList
    split_points : dict of str to int
    default_split_point : str
    name : str
    input_shape : tuple of int or None

    Raises
    ------
    ValueError
        If ``blocks`` is empty, a split point is out of range or ``default_split_point`` is not one
        of ``split_points``.
    """

    def __init__(
        self,
        blocks: Iterable[nn.Module],
        split_points: dict[str, int],
        default_split_point: str,
        name: str,
        input_shape: tuple[int, ...] | None = None,
    ) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        n_blocks = len(self.blocks)
        if n_blocks < 2:
            raise ValueError(f"blocks must hold at least 2 modules to be splittable, got {n_blocks}")
        if not split_points:
            raise ValueError("split_points must name at least one split point, got {}")
        for point, n_client in split_points.items():
            if isinstance(n_client, bool) or not isinstance(n_client, int) or not 1 <= n_client <= n_blocks - 1:
                raise ValueError(
                    f"split_points[{point!r}] = {n_client!r} is invalid for {name}; "
                    f"allowed: an int in 1..{n_blocks - 1} (number of client blocks)"
                )
        self.split_points: dict[str, int] = dict(split_points)
        if default_split_point not in self.split_points:
            raise ValueError(
                f"default_split_point {default_split_point!r} does not exist for {name}; "
                f"allowed: {', '.join(self.split_points)}"
            )
        self.default_split_point = default_split_point
        self.name = name
        self.input_shape = tuple(input_shape) if input_shape is not None else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply all blocks in order.

        Parameters
        ----------
        x : torch.Tensor
            Input batch, shape ``(B, *input_shape)``.

        Returns
        -------
        torch.Tensor
            Model output (logits for classifiers), shape ``(B, num_classes)``.
        """
        for block in self.blocks:
            x = block(x)
        return x

    def _client_blocks(self, point: str) -> int:
        if point not in self.split_points:
            raise ValueError(
                f"split point {point!r} does not exist for {self.name}; "
                f"allowed: {', '.join(self.split_points)}"
            )
        return self.split_points[point]

    def split(self, point: str) -> tuple[nn.Sequential, nn.Sequential]:
        """Cut the model at ``point`` into a client part and a server part.

        The parts hold the *same* module objects as this model, so training them trains this
        model; callers that need independent copies (one client model per device, say) must
        ``copy.deepcopy`` the parts or the model.

        Parameters
        ----------
        point : str
            A key of ``split_points``.

        Returns
        -------
        client_part : nn.Sequential
            The first ``split_points[point]`` blocks; maps ``(B, *input_shape)`` to the smashed
            activations, shape ``(B, *activation_shape(point))``.
        server_part : nn.Sequential
            The remaining blocks; maps the activations to the output, shape ``(B, num_classes)``.

        Raises
        ------
        ValueError
            If ``point`` is not a split point of this model (the message lists the allowed ones).
        """
        n_client = self._client_blocks(point)
        return nn.Sequential(*self.blocks[:n_client]), nn.Sequential(*self.blocks[n_client:])

    def activation_shape(self, point: str) -> tuple[int, ...]:
        """Per-sample shape of the activations the client sends at ``point`` (the smashed data).

        Found by a dry run of the client part on one zero sample, so it is right for any block
        structure; the run happens in eval mode without autograd and changes no state.

        Parameters
        ----------
        point : str
            A key of ``split_points``.

        Returns
        -------
        tuple of int
            Activation shape without the batch dimension, e.g. ``(64, 7, 7)``.

        Raises
        ------
        ValueError
            If ``point`` is unknown or the model was built without ``input_shape``.
        """
        n_client = self._client_blocks(point)
        if self.input_shape is None:
            raise ValueError(f"input_shape is None for {self.name}; allowed: a per-sample shape tuple")
        return output_shape(nn.Sequential(*self.blocks[:n_client]), self.input_shape)


def probe_output(module: nn.Module, input_shape: Sequence[int]) -> torch.Tensor:
    """Output of ``module`` for one zero sample: the dry run behind every activation shape.

    Runs in eval mode without autograd on the device and dtype of the module's first parameter
    (CPU float32 without parameters), and restores every submodule's train/eval flag, so it
    touches no BatchNorm running statistics and draws no dropout randomness.

    Parameters
    ----------
    module : nn.Module
        Maps ``(B, *input_shape)`` to some output.
    input_shape : sequence of int
        Per-sample input shape, e.g. ``(1, 28, 28)``.

    Returns
    -------
    torch.Tensor
        The output for a batch of one, shape ``(1, *output_shape)``.
    """
    ref = next(module.parameters(), None)
    device = ref.device if ref is not None else torch.device("cpu")
    dtype = ref.dtype if ref is not None else torch.float32
    modes = [(m, m.training) for m in module.modules()]
    try:
        module.eval()
        with torch.no_grad():
            return module(torch.zeros((1, *input_shape), device=device, dtype=dtype))
    finally:
        for submodule, mode in modes:
            submodule.training = mode


def output_shape(module: nn.Module, input_shape: Sequence[int]) -> tuple[int, ...]:
    """Per-sample output shape of ``module`` for per-sample inputs of ``input_shape`` (a dry
    run by :func:`probe_output`; no state changes)."""
    return tuple(probe_output(module, input_shape).shape[1:])
