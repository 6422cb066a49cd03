"""Server modes are strategies chosen by name (the YAML parameter) or passed as instances."""
from __future__ import annotations

import pytest

from sfl_sim.algorithms.split.server_modes import ConcatenatedServer, PerClientServer, SequentialServer, server_mode
from sfl_sim.algorithms.split.sfl_local_loss import SFLLocalLoss
from tests.helpers import tiny_setup


@pytest.mark.parametrize("name, cls", [("concatenated", ConcatenatedServer), ("per_client", PerClientServer),
                                       ("sequential", SequentialServer)])
def test_names_give_their_strategy(name: str, cls: type) -> None:
    mode = server_mode(name)
    assert isinstance(mode, cls) and mode.name == name
    assert server_mode(mode) is mode


def test_unknown_name_lists_the_allowed_ones() -> None:
    with pytest.raises(ValueError,
                       match="server_mode: got 'pairs'; allowed: one of concatenated, per_client, sequential"):
        server_mode("pairs")


@pytest.mark.parametrize("name", ["per_client", "sequential"])
def test_sfl_local_loss_keeps_its_parameter(name: str) -> None:
    assert SFLLocalLoss(tiny_setup(), server_mode=name).server_mode.name == name
