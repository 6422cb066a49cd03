"""Named, independent random streams derived from one root seed.

Each consumer (client placement, shadowing, compute budgets, data partition, client selection,
minibatch sampling, model initialisation, dropout, evaluation subset) gets its own stream keyed
by a *name*, not by its position in a spawn list, so adding a stream or changing the training
code never shifts the channel draws.
"""
from __future__ import annotations

import zlib

import numpy as np


def stream_seed(root_seed: int, name: str) -> np.random.SeedSequence:
    """The seed sequence of stream ``name`` under ``root_seed`` (stable across versions)."""
    return np.random.SeedSequence([int(root_seed), zlib.crc32(name.encode("utf-8"))])


def stream(root_seed: int, name: str) -> np.random.Generator:
    """A fresh numpy Generator for stream ``name``."""
    return np.random.default_rng(stream_seed(root_seed, name))


def keyed_stream(root_seed: int, name: str, *keys: int) -> np.random.Generator:
    """A fresh numpy Generator for stream ``name`` under ``root_seed`` at ``keys`` (e.g. a round, a
    client and a slot): its draws depend on the keys alone, never on what was drawn before or
    elsewhere, so two runs that make different draws elsewhere still draw the same here (common
    random numbers)."""
    return np.random.default_rng(np.random.SeedSequence(
        [int(root_seed), zlib.crc32(name.encode("utf-8")), *(int(k) for k in keys)]))


def torch_seed(root_seed: int, name: str) -> int:
    """A 63-bit integer seed for torch generators of stream ``name``."""
    return int(stream_seed(root_seed, name).generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
