"""Fixtures of every test; the plain helpers they build on are in :mod:`tests.helpers`."""
from __future__ import annotations

import pytest
import torch

from sfl_sim.algorithms import TrainingSetup
from tests.helpers import tiny_setup, torch_threads_from_env


def pytest_configure(config) -> None:
    torch_threads_from_env()  # a bad value stops the run with one line, before any test


@pytest.fixture(autouse=True, scope="session")
def _torch_threads_from_env():
    threads = torch_threads_from_env()
    if threads is not None:
        torch.set_num_threads(threads)
    yield


@pytest.fixture
def setup2() -> TrainingSetup:
    return tiny_setup()
