"""Fixtures of the sfl_sim tests; the plain helpers they build on are in :mod:`tests.sfl_sim.helpers`."""
from __future__ import annotations

import pytest

from sfl_sim.algorithms import TrainingSetup
from tests.sfl_sim.helpers import tiny_setup


@pytest.fixture
def setup2() -> TrainingSetup:
    return tiny_setup()
