"""Model-download compression (``compression.model_download``) and the applied paths in
``resolved.yaml``: bytes by hand count, clients train from the decoded model, identity = none,
one-line refusals, the record of the paths and a resume of a run recorded without them."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms._exec.compressed import CompressionPlan, flat, float_keys, unflat
from sfl_sim.cli import main
from sfl_sim.compression import Identity, Quantize
from sfl_sim.config import load_scenario, validate
from sfl_sim.data import DATASETS
from sfl_sim.errors import ConfigError
from sfl_sim.runs import runner
from tests.helpers import read_rows, small_scenario, tiny_setup, two_client_simulator, write_yaml

Q8 = {"name": "quantize", "bits": 8}


def _plan(**paths) -> CompressionPlan:
    return CompressionPlan.of({p: (c, False) for p, c in paths.items()}, seed=0)


def _round(algo, sim=None):
    sim = sim or two_client_simulator()
    cohort = np.array([0, 1])
    duration = sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    return duration, sim.counters, {k: v.clone() for k, v in algo.global_model().state_dict().items()}


def _decoded(state: dict, codec) -> dict:
    keys = float_keys(state)
    return {**state, **unflat(codec.decode(codec.encode(flat(state, keys))), state, keys)}


def test_download_is_charged_once_per_client_and_decoded_on_each() -> None:
    """The tiny model has 77 float parameters: one 77-entry vector, 8-bit codes, a scale, a header."""
    setup = tiny_setup()
    setup.compression = _plan(model_download=Quantize(8))
    _, counters, _ = _round(ALGORITHMS.get("fedavg")(setup))
    assert counters.by_kind["downlink/model"] == 2 * (77 + 4 + 4)  # one broadcast payload, counted per client
    assert counters.by_kind["uplink/model"] == 2 * 77 * 4  # the update goes uncompressed
    assert counters.by_kind["server/compress_model"] == 5 * 77  # encoded once for the cohort
    assert counters.by_kind["client/decompress_model"] == 2 * 2 * 77


def test_clients_train_from_the_decoded_model() -> None:
    """A round with the download quantized is, bit for bit, an uncompressed round whose global
    model was the decoded one (the clients start from it), plus what the send lost: the server
    keeps its exact w^t and adds the average of w_k - decoded w^t."""
    setup = tiny_setup()
    setup.compression = _plan(model_download=Quantize(8))
    compressed = ALGORITHMS.get("fedavg")(setup)
    start = {k: v.clone() for k, v in compressed.model.state_dict().items()}
    decoded = _decoded(start, Quantize(8))
    reference = ALGORITHMS.get("fedavg")(tiny_setup())
    reference.model.load_state_dict(decoded)
    assert not all(torch.equal(start[k], decoded[k]) for k in start)  # 8 bits lose something
    _, _, got = _round(compressed)
    _, _, want = _round(reference)
    assert all(torch.equal(got[k], want[k] + (start[k] - decoded[k])) for k in got)


def test_an_update_is_the_delta_from_the_decoded_model(monkeypatch) -> None:
    setup = tiny_setup()
    setup.compression = _plan(model_download=Quantize(8), updates=Quantize(8))
    algo = ALGORITHMS.get("fedavg")(setup)
    sent = _decoded({k: v.clone() for k, v in algo.model.state_dict().items()}, Quantize(8))
    deltas, uploaded = {}, {}
    encode = setup.compression.encode

    def spy(path, client, tensor):
        coded = encode(path, client, tensor)
        if path == "updates":
            deltas[client] = coded.decoded.clone()
        return coded

    setup.compression.encode = spy
    aggregate = algo.aggregate

    def keep(cohort, local):
        uploaded.update({k: {n: v.clone() for n, v in local[k].state_dict().items()} for k in cohort.tolist()})
        return aggregate(cohort, local)

    algo.aggregate = keep
    _, counters, _ = _round(algo)
    assert counters.by_kind["downlink/model"] == counters.by_kind["uplink/model"] == 2 * 85
    for k in (0, 1):  # the server rebuilds the decoded model plus the decoded delta
        assert all(torch.equal(uploaded[k][n], sent[n] + v) for n, v in unflat(deltas[k], sent, list(sent)).items())


def test_nobody_delivering_keeps_the_servers_exact_model() -> None:
    """The clients trained from a 2-bit copy; with no upload kept the global model is the server's own."""
    setup = tiny_setup()
    setup.compression = _plan(model_download=Quantize(2))
    algo = ALGORITHMS.get("fedavg")(setup)
    before = {k: v.clone() for k, v in algo.model.state_dict().items()}
    cohort = np.array([0, 1])

    def round_process(ctx):
        gather = ctx.gather

        def nobody(jobs, **kw):
            yield from gather(jobs, **kw)
            return []

        ctx.gather = nobody
        return algo.run_round(ctx, cohort)

    two_client_simulator().run_round(round_process, cohort)
    assert all(torch.equal(before[k], v) for k, v in algo.model.state_dict().items())


@pytest.mark.parametrize("name", ["fedavg", "fedprox", "scala", "splitfed_v2"])
def test_identity_download_is_no_compression_bit_for_bit(name: str) -> None:
    plain = _round(ALGORITHMS.get(name)(tiny_setup()))
    setup = tiny_setup()
    setup.compression = _plan(model_download=Identity())
    assert not setup.compression
    identity = _round(ALGORITHMS.get(name)(setup))
    assert plain[0] == identity[0] and plain[1].as_dict() == identity[1].as_dict()
    assert all(torch.equal(plain[2][k], identity[2][k]) for k in plain[2])


# ------------------------------------------------------------------------------ split learning
def test_split_client_side_download_is_charged_and_trained_from() -> None:
    """SCALA's broadcast of w_c: one 8-bit payload per client, decoded on each; the round equals,
    bit for bit, an uncompressed round whose w_c was the decoded one, plus what the send lost."""
    setup = tiny_setup(local_iterations=2)
    setup.compression = _plan(model_download=Quantize(8))
    compressed = ALGORITHMS.get("scala")(setup)
    side = {k: v.clone() for k, v in compressed.client_side().state_dict().items()}
    n = sum(v.numel() for v in side.values())
    reference = ALGORITHMS.get("scala")(tiny_setup(local_iterations=2))
    reference.client_side().load_state_dict(_decoded(side, Quantize(8)))
    _, counters, got = _round(compressed)
    _, plain, want = _round(reference)
    decoded = _decoded(side, Quantize(8))
    got_side, want_side = compressed.client_side().state_dict(), reference.client_side().state_dict()
    assert all(torch.equal(got_side[k], want_side[k] + (side[k] - decoded[k])) for k in side)
    server = [k for k in got if not k.startswith("blocks.0.")]  # the tiny model's client side is blocks.0
    assert len(server) == len(got) - len(side) and all(torch.equal(got[k], want[k]) for k in server)
    assert counters.by_kind["downlink/client_model"] == 2 * (n + 4 + 4)
    assert counters.by_kind["server/compress_model"] == 5 * n
    assert counters.by_kind["client/decompress_model"] == 2 * 2 * n
    assert counters.by_kind["uplink/client_model"] == plain.by_kind["uplink/client_model"]
    assert compressed._sent_side is None  # nothing of the round is kept


# -------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("algorithms, block, message", [
    (["splitfed_v3"], {"model_download": Q8}, "compression.model_download: got 'quantize', which splitfed_v3 "
                                              "cannot apply: SplitFedV3 sends its client side its own way"),
    (["sfl_local_loss"], {"model_download": Q8}, "compression.model_download: got 'quantize', which "
                                                 "sfl_local_loss cannot apply"),
    (["fedconcat"], {"model_download": Q8}, "compression.model_download: got 'quantize', which fedconcat cannot "
                                            "apply: FedConcat has no model_download path to compress"),
    (["fedavg"], {"model_download": {"name": "quantize", "bits": 0}},
     "compression.model_download.bits: got 0; allowed: an integer >= 1 and <= 16"),
])
def test_refusals_are_one_line_before_any_work(tmp_path: Path, capsys, algorithms: list, block: dict,
                                               message: str) -> None:
    path = write_yaml(tmp_path, {**small_scenario(algorithms=algorithms), "compression": block})
    assert main(["scenario", str(path), "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


def test_error_feedback_on_the_download_is_one_line() -> None:
    with pytest.raises(ConfigError) as err:
        validate({"compression": {"model_download": {**Q8, "error_feedback": True}}})
    assert str(err.value).startswith("compression.model_download.error_feedback: got True; allowed: false")
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------------------------------- record
def _record(run_dir: Path) -> dict:
    return yaml.safe_load((run_dir / "resolved.yaml").read_text())


@pytest.mark.slow
@pytest.mark.integration
def test_resolved_yaml_records_the_applied_paths_and_an_old_record_resumes(tmp_path: Path, capsys) -> None:
    data = {**small_scenario(rounds=2, train=300, test=100, algorithms=[
        "scala", {"name": "fedavg", "compression": {"updates": Q8}}, "fedavg"]),
        "compression": {"activations": Q8, "model_download": {"name": "quantize", "bits": 4}}}
    data["algorithms"][2]["label"] = "fedavg_plain"
    data["algorithms"][2]["compression"] = {"activations": None, "model_download": None}
    data["output_dir"] = str(tmp_path / "runs")
    assert main(["scenario", str(write_yaml(tmp_path, data)), "--no-progress"]) == 0
    runs = tmp_path / "runs"
    scala, fedavg, plain = (_record(runs / label)["compression"] for label in ("scala", "fedavg", "fedavg_plain"))
    assert list(scala) == ["activations", "model_download"]
    assert scala["activations"]["field"] == "compression.activations"
    assert scala["activations"]["class"] == "sfl_sim.compression:Quantize"
    assert scala["activations"]["params"]["bits"] == 8 and scala["activations"]["error_feedback"] is False
    assert list(fedavg) == ["updates", "model_download"]
    assert fedavg["updates"]["field"] == "algorithms[1].compression.updates"
    assert fedavg["model_download"]["params"]["bits"] == 4
    assert plain == {}

    # A run made before compression existed has no compression key: it applied none, and resumes.
    old = small_scenario(rounds=2, train=300, test=100, algorithms=["fedavg"])
    old["output_dir"] = str(tmp_path / "old")
    path = write_yaml(tmp_path, old, "old.yaml")
    assert main(["scenario", str(path), "--no-progress"]) == 0
    record_path = tmp_path / "old" / "fedavg" / "resolved.yaml"
    record = yaml.safe_load(record_path.read_text())
    assert record.pop("compression") == {}
    record_path.write_text(yaml.safe_dump(record, sort_keys=False))
    full = read_rows(tmp_path / "old" / "fedavg" / "metrics.csv", host_time=False)
    old["rounds"] = 3
    write_yaml(tmp_path, old, "old.yaml")
    assert main(["scenario", str(path), "--resume", "--no-progress"]) == 0
    rows = read_rows(tmp_path / "old" / "fedavg" / "metrics.csv", host_time=False)
    assert rows[:len(full)] == full and len(rows) == len(full) + 1


@pytest.mark.slow
def test_a_record_with_other_paths_is_refused(tmp_path: Path) -> None:
    """The check a resume makes once the run is built: the recorded paths against the applied ones."""
    from sfl_sim.runs.resolved import compression_differences, compression_record
    from sfl_sim.runs.rundir.files import RunDir

    cfg = load_scenario(write_yaml(tmp_path, {**small_scenario(train=300, test=100),
                                              "compression": {"model_download": Q8}}))
    dataset = DATASETS.create("fashion_mnist", max_train_samples=300, max_test_samples=100).load()
    run = runner.build_run(cfg, cfg.algorithms[0], dataset)
    applied = list(run.algorithm.setup.compression.codecs)
    assert applied == ["model_download"]
    today = compression_record(cfg, run.label, applied)
    assert compression_differences({}, {"compression": {}}) == []
    (line,) = compression_differences({"versions": {}}, {"compression": today})
    assert line.startswith("compression.model_download: made with '<none>', now {'field': "
                           "'compression.model_download', 'name': 'quantize'")
    files = RunDir(tmp_path / "run")
    files.write_resolved({"components": {}, "compression": {}})
    with pytest.raises(runner.ResolutionMismatchError) as err:
        runner._check_compression(files, today)
    assert "compression.model_download: made with '<none>'" in str(err.value)
    files.write_resolved(copy.deepcopy({"components": {}, "compression": today}))
    runner._check_compression(files, today)


@pytest.mark.parametrize("name", ["fedavg", "scala"])
def test_the_stacked_steps_start_from_the_decoded_model_too(name: str) -> None:
    """``execution: vectorised`` keeps the download (its steps run on the same decoded copies):
    the same bytes, FLOPs and clock as the loop, the weights within float rounding."""
    got = {}
    for execution in ("loop", "vectorised"):
        setup = tiny_setup()
        setup.execution = execution
        setup.compression = _plan(model_download=Quantize(4))
        algo = ALGORITHMS.get(name)(setup)
        assert algo.execution == execution
        duration, counters, state = _round(algo)
        got[execution] = (duration, counters.as_dict(), state)
    assert got["loop"][0] == got["vectorised"][0] and got["loop"][1] == got["vectorised"][1]
    for k, v in got["loop"][2].items():
        torch.testing.assert_close(got["vectorised"][2][k], v, rtol=1e-5, atol=1e-6)
