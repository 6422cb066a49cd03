"""The host defaults: threads from the free cores, the evaluation batch, the GC freeze."""
from __future__ import annotations

import gc
import multiprocessing
import sys
import time

import pytest
import torch
import yaml

from sfl_sim.config import validate
from sfl_sim.runs import host
from sfl_sim.runs.build import build_run
from sfl_sim.runs.runner import evaluate, run_one

TINY = {
    "rounds": 2, "eval_every_rounds": 1, "eval_samples": 64, "device": "cpu",
    "clients": {"count": 6, "participation": 0.5},
    "training": {"batch_size": 12, "local_iterations": 1},
    "model": {"name": "alexnet", "split_point": "S2",
              "params": {"conv_channels": [2, 2, 2, 2, 2], "fc_features": [4, 4]}},
    "algorithms": [{"name": "fedavg"}],
}


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_free_cores_is_between_one_and_the_affinity_set():
    assert 1 <= host.free_cores(sample_s=0.05) <= host.affinity_cores()


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="samples /proc/stat")
def test_free_cores_does_not_count_the_caller_as_busy():
    """A caller that keeps a core busy itself does not see that core as taken by others."""
    import threading

    quiet = host._busy_cores_of_others(0.3)
    done = threading.Event()

    def burn():  # the caller's own work, in one of its threads
        while not done.is_set():
            pass

    worker = threading.Thread(target=burn)
    worker.start()
    try:
        busy = host._busy_cores_of_others(0.3)
    finally:
        done.set()
        worker.join()
    assert quiet is not None and busy is not None
    assert busy < quiet + 0.6  # counting itself would add about one core


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="samples /proc/stat")
def test_a_process_spinning_beside_us_is_seen_as_busy():
    before = host._busy_cores_of_others(0.3)
    spinner = multiprocessing.get_context("fork").Process(target=_spin, args=(1.5,))
    spinner.start()
    try:
        time.sleep(0.2)
        during = host._busy_cores_of_others(0.5)
    finally:
        spinner.join()
    assert during is not None and before is not None
    assert during > 0.6  # the spinner's core (whatever else the machine does)


def test_default_threads_are_measured_once_per_process():
    assert host.default_torch_threads() == host.default_torch_threads()


@pytest.mark.slow
def test_a_run_without_torch_threads_uses_the_default_and_a_given_share(monkeypatch):
    monkeypatch.setattr(host, "default_torch_threads", lambda: 1)
    before = torch.get_num_threads()
    try:
        build_run(validate(TINY), validate(TINY).algorithms[0])
        assert torch.get_num_threads() == 1
        build_run(validate(TINY), validate(TINY).algorithms[0], threads=2)  # a study worker's share
        assert torch.get_num_threads() == 2
        cfg = validate({**TINY, "training": {**TINY["training"], "torch_threads": 1}})
        build_run(cfg, cfg.algorithms[0], threads=2)  # the scenario's own count wins
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_eval_batch_auto_is_per_device_and_a_number_is_kept():
    assert host.eval_batch_size("auto", torch.device("cpu")) == host.EVAL_BATCH_SIZE["cpu"]
    assert host.eval_batch_size("auto", "cuda:0") == host.EVAL_BATCH_SIZE["cuda"]
    assert host.eval_batch_size("auto", "mps") == 1000
    assert host.eval_batch_size(77, "cpu") == 77
    assert validate({}).eval_batch_size == "auto"


def test_evaluation_batch_changes_the_loss_only_by_summation_order():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 5))
    x, y = torch.randn(1000, 3, 4), torch.randint(0, 5, (1000,))
    scores = {b: evaluate(model, x, y, b) for b in (1, 7, 250, 1000, 5000)}
    accs = {acc for acc, _ in scores.values()}
    assert len(accs) == 1
    losses = [loss for _, loss in scores.values()]
    assert max(losses) - min(losses) <= 1e-6 * abs(losses[0])
    assert model.training  # put back in training mode


@pytest.mark.slow
def test_a_resumed_run_takes_the_threads_it_was_made_with(tmp_path, monkeypatch):
    cfg = validate({**TINY, "rounds": 1})
    before = torch.get_num_threads()
    try:
        run = build_run(cfg, cfg.algorithms[0], threads=1)
        run_one(run, tmp_path / "r", progress=False)
        assert yaml.safe_load((tmp_path / "r" / "scenario.yaml").read_text())["torch_threads_used"] == 1
        more = validate({**TINY, "rounds": 2})
        run = build_run(more, more.algorithms[0], threads=2)  # another load, another default
        assert torch.get_num_threads() == 2
        run_one(run, tmp_path / "r", resume=True, progress=False)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_long_lived_objects_are_frozen_after_the_first_round_and_thawed_at_the_end():
    if not hasattr(gc, "freeze"):
        pytest.skip("gc.freeze needs Python 3.7+")
    keep = host.LongLivedObjects()
    frozen_before = gc.get_freeze_count()
    keep.after_round()
    assert gc.get_freeze_count() > frozen_before
    count = gc.get_freeze_count()
    keep.after_round()  # once only
    assert gc.get_freeze_count() == count
    keep.end()
    assert gc.get_freeze_count() == 0


def test_load_average_is_the_three_load_figures_or_says_it_has_none(monkeypatch):
    import os

    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 1.25, 2.0))
    assert host.load_average() == "0.50 1.25 2.00"

    def no_load_average():
        raise OSError("not on this platform")

    monkeypatch.setattr(os, "getloadavg", no_load_average)
    assert host.load_average() == "n/a"
