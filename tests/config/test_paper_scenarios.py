"""Every shipped scenario passes schema validation; the paper sets match their file names and papers.

Schema validation only (sfl_sim.config.load_scenario): no data set is needed.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from sfl_sim.config import load_scenario, validate

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
ALL_FILES = sorted(SCENARIOS.rglob("*.yaml"))
NAME = re.compile(r"^(?P<data>cifar10|cifar100|cinic10|fashion_mnist)(?P<resnet>_resnet18)?_"
                  r"(?P<skew>alpha|beta)(?P<value>[0-9.]+)$")
#: The SCALA papers' set (<data set>[_resnet18]_<skew>); the other papers' files are named after their table.
PAPER_FILES = sorted(p for p in (SCENARIOS / "paper").glob("*.yaml") if NAME.match(p.stem))
TABLE_FILES = sorted(p for p in (SCENARIOS / "paper").glob("*.yaml") if not NAME.match(p.stem))
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


# -- the other papers' tables ------------------------------------------------------------------------
def test_the_other_papers_tables_are_there() -> None:
    assert {p.stem for p in TABLE_FILES} == {"fedvls_table1_mnist", "fedvls_table1_fashion_mnist",
                                             "besplit_table3_fashion_mnist"}


@pytest.mark.parametrize("path", TABLE_FILES, ids=lambda p: p.stem)
def test_a_table_file_names_itself_lists_its_differences_and_the_papers_numbers(path) -> None:
    text = path.read_text()
    cfg = load_scenario(path)
    assert cfg.name == path.stem and cfg.output_dir == f"runs/paper/{path.stem}"
    header = text.split("\nname:")[0]
    assert "differs from the paper" in header and "Table" in header
    assert text.splitlines()[0].startswith("# ") and len(text.splitlines()[0]) < 130  # `sfl-sim scenarios`


@pytest.mark.parametrize("data", ["mnist", "fashion_mnist"])
def test_fedvls_table1_has_the_papers_training(data) -> None:
    cfg = load_scenario(SCENARIOS / "paper" / f"fedvls_table1_{data}.yaml")
    t = cfg.training
    assert (cfg.clients.count, cfg.clients.participation, cfg.rounds) == (10, 1.0, 50)
    assert (t.batch_size, t.local_epochs, t.local_iterations, t.learning_rate) == (64, 5, None, 0.01)
    assert t.optimizer.as_dict() == {"name": "sgd", "momentum": 0.9, "dampening": 0.0, "nesterov": False,
                                     "weight_decay": 1e-5}
    assert t.client_optimizer_state == "persist" and t.lr_schedule.name == "constant"
    assert cfg.data.dataset.name == data
    assert cfg.data.partition.as_dict() == {"name": "dirichlet_over_clients", "beta": 0.05, "cap_at_mean": True,
                                            "min_samples_per_client": 10}
    assert cfg.model.name == "mlp" and cfg.model.params == {"hidden_features": [200, 200]}
    algos = {a.name: a.params for a in cfg.algorithms}
    assert algos["fedvls"] == {"lam": 0.1} and algos["fedlc"] == {"tau": 0.5} and algos["fedavg"] == {}
    assert algos["fedprox"] == {"mu": 0.01} and algos["fedntd"] == {"beta": 0.1}
    assert all(a.training is None for a in cfg.algorithms)  # one training for the whole table


def test_besplit_table3_has_the_papers_setting() -> None:
    cfg = load_scenario(SCENARIOS / "paper" / "besplit_table3_fashion_mnist.yaml")
    t = cfg.training
    assert (cfg.clients.count, cfg.clients.participation, cfg.rounds) == (100, 0.4, 300)
    assert (t.batch_size, t.learning_rate, t.optimizer.name, t.optimizer.params["momentum"]) == (32, 1e-4, "sgd", 0.0)
    assert cfg.data.partition.as_dict() == {"name": "dirichlet_over_clients", "beta": 1.0, "cap_at_mean": False,
                                            "min_samples_per_client": 10}
    assert (cfg.model.name, cfg.model.split_point) == ("resnet18", "B1")
    assert [a.name for a in cfg.algorithms] == ["besplit_g", "besplit_a", "splitfed_v1"]
