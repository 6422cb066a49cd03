"""The GPU path: CUDA equals CPU, a round never waits for the device, runs share a GPU.

Every test here needs a CUDA device and is skipped without one (``torch.cuda.is_available()``);
the ones on the real default scenario also need its data set (Fashion-MNIST) and are skipped
without it.  Run just these with ``python -m pytest -m cuda``.

* a few rounds of the default scenario (and of the papers' full-scale one) on ``cuda`` give the
  CPU's accuracy and loss within float tolerance, and exactly its simulated clock, bytes and FLOPs
  (those depend on shapes, FLOP counts and the cell, never on float values);
* a round of each algorithm of the default scenario, and of the split baselines, in the loop and
  vectorised, runs under ``torch.cuda.set_sync_debug_mode("error")``: no ``.item()``, host copy or
  other device sync on the hot path; the evaluation syncs once;
* the vectorised cohort equals the loop on the GPU as on the CPU;
* two study workers share the GPU and each reports its peak GPU memory.

Both sides are compared in full float32: TF32 (cuDNN convolutions use it by default on Ampere
and later) is switched off for the comparisons.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.config import load_scenario, validate
from sfl_sim.config.scenario_files import resolve_scenario
from sfl_sim.data import DatasetNotFoundError
from sfl_sim.runs.build import build_run
from sfl_sim.runs.runner import evaluate, run_one

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (none here)")]

#: Algorithms whose rounds must be free of host syncs: the default scenario's and the SFL baselines.
SYNC_FREE = ["scala", "fedavg", "ca_sfl", "lla_sfl", "minibatch_sfl", "splitfed_v1", "splitfed_v2", "splitfed_v3"]


@pytest.fixture(autouse=True)
def _full_float32():
    old = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


def _run(name: str, device: str, out: Path, algorithm: str, rounds: int = 3, eval_samples: int = 500):
    """A few evaluated rounds of a shipped scenario on ``device``: (summary, metrics rows, weights)."""
    overrides = ["model.params.dropout=0.0"]  # CUDA draws other dropout masks than the CPU
    cfg = load_scenario(resolve_scenario(name), overrides,
                        {"device": device, "rounds": rounds, "eval_every_rounds": 1, "eval_samples": eval_samples,
                         "output_dir": str(out), "algorithms": [{"name": algorithm}]})
    try:
        run = build_run(cfg, cfg.algorithms[0])
    except DatasetNotFoundError as exc:
        pytest.skip(f"data set not installed: {exc}")
    summary = run_one(run, out / device, progress=False)
    rows = (out / device / "metrics.csv").read_text().splitlines()
    header = rows[0].split(",")
    metrics = [dict(zip(header, map(float, r.split(",")), strict=True)) for r in rows[1:]]
    state = {k: v.detach().cpu() for k, v in run.algorithm.global_model().state_dict().items()}
    return summary, metrics, state


@pytest.mark.parametrize("algorithm", ["scala", "fedavg"])
@pytest.mark.parametrize("scenario,rounds,samples", [("cellular_100clients", 3, 500),
                                                     ("cellular_100clients_paper", 2, 1000)])
def test_a_scenario_on_cuda_equals_cpu(tmp_path, scenario, rounds, samples, algorithm):
    cpu = _run(scenario, "cpu", tmp_path, algorithm, rounds, samples)
    gpu = _run(scenario, "cuda", tmp_path, algorithm, rounds, samples)
    assert gpu[0]["device"].startswith("cuda")
    for a, b in zip(cpu[1], gpu[1], strict=True):
        # The engine's side depends on no float value: exactly equal.
        for key in ("round", "sim_time_s", "uplink_bytes", "downlink_bytes", "client_flops", "server_flops"):
            assert b[key] == a[key], key
        assert b["test_accuracy"] == pytest.approx(a["test_accuracy"], abs=0.01)
        assert b["test_loss"] == pytest.approx(a["test_loss"], rel=1e-3)
    for key, value in cpu[2].items():
        torch.testing.assert_close(gpu[2][key], value, rtol=1e-3, atol=1e-4, msg=lambda m, key=key: f"{key}: {m}")


# -- a round without host syncs ----------------------------------------------------------------------
def _cuda_case(name: str, execution: str, device: str = "cuda"):
    """The golden runs' tiny setup (dropout 0 so every algorithm can be vectorised) on the GPU."""
    from tests.algorithms.exec.test_vectorised import _setup_without_dropout

    setup = _setup_without_dropout()
    dev = torch.device(device)
    setup.model = setup.model.to(dev)
    setup.train_x, setup.train_y = setup.train_x.to(dev), setup.train_y.to(dev)
    setup.client_indices = [ix.to(dev) for ix in setup.client_indices]
    setup.device = dev
    setup.execution = execution
    torch.manual_seed(2)
    algo = ALGORITHMS.get(name)(setup)
    if execution == "vectorised" and algo.vectorise_refusal() is not None:
        pytest.skip(f"{name}: {algo.vectorise_refusal()}")
    _ = setup.client_label_counts  # built once at build time (build_run's selector.prepare)
    return algo


@pytest.mark.parametrize("execution", ["loop", "vectorised"])
@pytest.mark.parametrize("name", SYNC_FREE)
def test_a_round_never_syncs_with_the_device(name, execution):
    from tests.algorithms.test_golden_runs import _simulator

    algo = _cuda_case(name, execution)
    sim = _simulator("plain")
    cohorts = [np.array(c, dtype=np.int64) for c in ([0, 1, 2], [0, 1, 3], [1, 2, 3])]
    sim.run_round(lambda ctx: algo.run_round(ctx, cohorts[0]), cohorts[0])  # warm-up: FLOP metering, copies
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for cohort in cohorts[1:]:
            sim.run_round(lambda ctx, c=cohort: algo.run_round(ctx, c), cohort)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()


def test_evaluation_syncs_once():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 5)).cuda()
    x, y = torch.randn(1000, 3, 4, device="cuda"), torch.randint(0, 5, (1000,), device="cuda")
    evaluate(model, x, y, 100)  # warm-up
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            evaluate(model, x, y, 100)  # ten batches
        finally:
            torch.cuda.set_sync_debug_mode(0)
    syncs = [w for w in caught if "synchroniz" in str(w.message)]
    assert len(syncs) == 1, [str(w.message) for w in syncs]


@pytest.mark.parametrize("name", ["fedavg", "scala", "splitfed_v1"])
def test_vectorised_equals_the_loop_on_the_gpu(name):
    from tests.algorithms.test_golden_runs import _digest, _simulator  # noqa: F401

    results = {}
    for execution in ("loop", "vectorised"):
        algo = _cuda_case(name, execution)
        sim = _simulator("lossy")
        torch.manual_seed(3)
        for cohort in ([0, 1, 2], [0, 1, 3], [3, 2, 1, 0]):
            c = np.array(cohort, dtype=np.int64)
            sim.run_round(lambda ctx, algo=algo, c=c: algo.run_round(ctx, c), c)
        results[execution] = ({k: v.cpu() for k, v in algo.global_model().state_dict().items()},
                              sim.counters.as_dict(), sim.now_s)
    loop, vec = results["loop"], results["vectorised"]
    assert vec[1] == loop[1] and vec[2] == loop[2]
    for key, value in loop[0].items():
        torch.testing.assert_close(vec[0][key], value, rtol=1e-4, atol=1e-5)


def test_two_study_workers_share_the_gpu(tmp_path):
    from sfl_sim.study.execute import run_study
    from sfl_sim.study.plan import StudySpec, expand

    base = {"rounds": 2, "eval_every_rounds": 2, "eval_samples": 200, "device": "cuda",
            "training": {"batch_size": 32, "local_iterations": 2},
            "data": {"dataset": {"name": "fashion_mnist", "max_train_samples": 2000, "max_test_samples": 200}},
            "clients": {"count": 10, "participation": 0.3},
            "model": {"name": "alexnet", "split_point": "S2",
                      "params": {"conv_channels": [8, 8, 8, 8, 8], "fc_features": [16, 16]}}}
    try:
        validate(base)
        from sfl_sim.runs.build import load_dataset

        load_dataset(validate(base))
    except DatasetNotFoundError as exc:
        pytest.skip(f"data set not installed: {exc}")
    import yaml

    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base))
    runs = expand(StudySpec(base="base.yaml", seeds=[0, 1], set={"algorithms": [{"name": "scala"}]}),
                  tmp_path / "base.yaml")
    results = run_study(runs, tmp_path / "out", workers=2, progress=False)
    assert all(r["status"] == "complete" for r in results.values()), results
    assert all(r["gpu_peak_bytes"] > 0 for r in results.values())
