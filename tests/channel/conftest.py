"""Fixtures of the channel tests; the plain helpers they use are in :mod:`tests.channel.helpers`."""
from __future__ import annotations

from collections.abc import Callable

import pytest

from sfl_sim.channel import Cell
from tests.channel.helpers import small_cell


@pytest.fixture
def make_cell() -> Callable[..., Cell]:
    """:func:`tests.channel.helpers.small_cell`: ``make_cell(placement, pathloss, ..., **cell_keywords)``."""
    return small_cell
