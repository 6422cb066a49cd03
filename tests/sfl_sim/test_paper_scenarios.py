"""Every shipped scenario passes schema validation; the paper set matches its file names.

Schema validation only (sfl_sim.config.load_scenario): no data set is needed.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from sfl_sim.config import load_scenario, validate

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
ALL_FILES = sorted(SCENARIOS.rglob("*.yaml"))
PAPER_FILES = sorted((SCENARIOS / "paper").glob("*.yaml"))
NAME = re.compile(r"^(?P<data>cifar10|cifar100|cinic10|fashion_mnist)(?P<resnet>_resnet18)?_"
                  r"(?P<skew>alpha|beta)(?P<value>[0-9.]+)$")
ROUNDS = {"cifar10": 500, "cifar100": 1000, "cinic10": 500, "fashion_mnist": 500}
SKEWS = ("alpha2", "alpha4", "beta0.05", "beta0.1")


def test_the_paper_set_is_complete():
    stems = {p.stem for p in PAPER_FILES}
    expected = {f"{d}_{s}" for d in ROUNDS for s in SKEWS} | {f"cifar10_resnet18_{s}" for s in SKEWS}
    assert stems == expected


@pytest.mark.parametrize("path", ALL_FILES, ids=lambda p: str(p.relative_to(SCENARIOS)))
def test_every_scenario_file_validates(path):
    cfg = load_scenario(path)
    assert cfg.algorithms


@pytest.mark.parametrize("path", PAPER_FILES, ids=lambda p: p.stem)
def test_paper_scenario_matches_its_name(path):
    match = NAME.match(path.stem)
    assert match, f"{path.name}: expected <data set>[_resnet18]_<alpha|beta><value>.yaml"
    cfg = load_scenario(path)
    data = match["data"]
    assert cfg.name == path.stem
    assert cfg.output_dir == f"runs/paper/{path.stem}"
    assert cfg.rounds == ROUNDS[data]
    assert cfg.data.dataset.name == data
    assert cfg.data.dataset.params.get("data_root") is None
    partition = cfg.data.partition.as_dict()
    if match["skew"] == "alpha":
        assert partition == {"name": "quantity", "alpha": int(match["value"])}
    else:
        assert partition == {"name": "dirichlet", "beta": float(match["value"])}
    # The papers' common settings.
    assert cfg.clients.count == 100 and cfg.clients.participation == 0.1
    # SCALA's training: B = 320 by eq. (3), T = 5, plain SGD at 0.01 (the defaults of every training field).
    assert cfg.training == validate({}).training
    assert (cfg.training.batch_size, cfg.training.local_iterations, cfg.training.learning_rate) == (320, 5, 0.01)
    assert cfg.device == "auto" and cfg.eval_samples is None
    assert cfg.model.name == ("resnet18" if match["resnet"] else "alexnet")
    assert cfg.model.split_point == "S2" and cfg.model.params == {}
    assert cfg.algorithms[0].as_dict() == {"name": "scala"}


def test_paper_scenarios_of_one_model_list_the_same_algorithms():
    lists = {}
    for path in PAPER_FILES:
        model = "resnet18" if "_resnet18_" in path.stem else "alexnet"
        names = [a.name for a in load_scenario(path).algorithms]
        assert len(set(names)) == len(names), path.name
        lists.setdefault(model, set()).add(tuple(names))
    assert all(len(v) == 1 for v in lists.values()), lists
