"""Property: any single mutation of a valid scenario either checks clean or is refused in one line.

Mutations: delete a key, give it a value of another type, or push a number to 0, negative, +-inf,
NaN or +-1e308.  The outcome must be exit code 0 with ``--check`` passing, or exit code 2 with one
line on stderr, no traceback and no files written — never an internal error (exit 1).

``SFL_SIM_PROPERTY_EXAMPLES=500 python -m pytest tests/cli/test_bad_input_property.py -s`` runs
more examples and prints the tally.
"""
from __future__ import annotations

import copy
import functools
import math
import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sfl_sim.runs.build as build
import sfl_sim.runs.runner as runner
from sfl_sim.cli import main
from sfl_sim.config import flatten, validate
from tests.helpers import small_scenario, write_yaml

BASE = small_scenario(name="prop", seed=None, eval_every_rounds=None, eval_samples=50, algorithms=["scala", "fedavg"],
                      train=300, test=100)
#: Every field of the resolved scenario (defaults included), as dotted paths.
FIELDS = sorted(k for k in flatten(validate(BASE).to_yaml_dict()) if not k.startswith("algorithms"))
NUMBERS = [0, -1, -1.5, math.inf, -math.inf, math.nan, 1e308, -1e308]
WRONG_TYPES = ["x", [1], {"a": 1}, None, True]
TALLY: Counter = Counter()


def mutate(raw: dict, key: str, action: str, value) -> dict:
    out = copy.deepcopy(raw)
    node, parts = out, key.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if isinstance(child, str):  # a bare component name
            child = {"name": child}
        node[part] = child if isinstance(child, dict) else {}
        node = node[part]
    if action == "delete":
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value
    return out


@functools.lru_cache(maxsize=1)
def _base_dataset():
    return build.load_dataset(validate(BASE))


@pytest.fixture(scope="module", autouse=True)
def cached_dataset():
    """Loading Fashion-MNIST once: a mutation of the data set spec still goes to the real loader."""
    real = build.load_dataset
    base_spec = validate(BASE).data.dataset

    def load(cfg):
        return _base_dataset() if cfg.data.dataset == base_spec else real(cfg)

    runner.load_dataset = load
    yield
    runner.load_dataset = real


@settings(max_examples=int(os.environ.get("SFL_SIM_PROPERTY_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(key=st.sampled_from(FIELDS), action=st.sampled_from(["delete", "number", "type"]),
       number=st.sampled_from(NUMBERS), wrong=st.sampled_from(WRONG_TYPES))
def test_a_mutated_scenario_checks_clean_or_is_refused_in_one_line(tmp_path_factory, capsys, key, action, number,
                                                                   wrong) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    raw = mutate(BASE, key, action, number if action == "number" else wrong)
    path = write_yaml(tmp, raw)
    out = tmp / "out"
    code = main(["scenario", str(path), "--check", "--no-progress", "-o", str(out)])
    captured = capsys.readouterr()
    TALLY["checked clean" if code == 0 else "refused" if code == 2 else "internal error"] += 1
    assert code in (0, 2), (key, action, captured.err)
    assert "Traceback" not in captured.err
    if code == 2:
        assert len(captured.err.strip().splitlines()) == 1, captured.err
    else:
        assert "valid" in captured.out
    assert not out.exists()  # --check writes nothing


def teardown_module() -> None:
    if TALLY:
        print(f"\nmutated scenarios: {dict(TALLY)}")
