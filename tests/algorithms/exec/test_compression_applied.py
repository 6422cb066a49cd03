"""Compression applied by the algorithms: the ``compression:`` block, bytes charged by hand count,
training on decoded tensors, one-line refusals, identity = none, error feedback through a resume."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from sfl_sim.algorithms import ALGORITHMS
from sfl_sim.algorithms._exec.compressed import CompressionPlan
from sfl_sim.catalog.component_schema import json_schema
from sfl_sim.cli import main
from sfl_sim.compression import Identity, Quantize, TopK
from sfl_sim.config import load_scenario, validate
from sfl_sim.data import DATASETS
from sfl_sim.errors import ConfigError
from sfl_sim.runs import runner
from tests.helpers import doc_blocks, read_rows, small_scenario, tiny_setup, two_client_simulator, write_yaml

Q8 = {"name": "quantize", "bits": 8}


# ------------------------------------------------------------------------------------- config
def test_top_level_block_applies_to_every_algorithm_and_an_entry_wins() -> None:
    cfg = validate({"compression": {"activations": Q8, "gradients": {"name": "topk", "fraction": 0.5}},
                    "algorithms": [{"name": "scala"},
                                   {"name": "splitfed_v1", "compression": {"gradients": None}},
                                   {"name": "fedavg", "compression": {"activations": None, "gradients": None,
                                                                      "updates": {"name": "topk",
                                                                                  "error_feedback": True}}}]})
    scala, v1, fedavg = (cfg.compression_for(label) for label in ("scala", "splitfed_v1", "fedavg"))
    assert scala["activations"][0] == "compression.activations" and scala["activations"][1].params == {"bits": 8}
    assert scala["gradients"][1].name == "topk" and scala["updates"] is None
    assert v1["activations"][1].name == "quantize" and v1["gradients"] is None
    assert fedavg["activations"] is None and fedavg["updates"][0] == "algorithms[2].compression.updates"
    assert fedavg["updates"][1].error_feedback is True and fedavg["updates"][1].params == {}
    # What the scenario wrote goes back out, and reads the same again.
    again = validate(cfg.to_yaml_dict())
    assert again.to_yaml_dict() == cfg.to_yaml_dict()
    assert again.to_yaml_dict()["algorithms"][1] == {"name": "splitfed_v1", "compression": {"gradients": None}}


def test_no_block_writes_no_key() -> None:
    data = validate({}).to_yaml_dict()
    assert "compression" not in data and "compression" not in data["algorithms"][0]


def test_set_override_and_schema(tmp_path: Path) -> None:
    path = write_yaml(tmp_path, {"compression": {"activations": Q8}})
    cfg = load_scenario(path, ["compression.activations.bits=4", "compression.updates=quantize"])
    assert cfg.compression.activations.params == {"bits": 4} and cfg.compression.updates.name == "quantize"
    schema = json_schema()
    assert "compression" in schema["properties"]
    assert set(schema["$defs"]["Compression"]["properties"]) == {"activations", "gradients", "updates",
                                                                  "model_download"}
    scala = next(s for s in schema["$defs"]["AlgorithmSpec"]["oneOf"] if s.get("title") == "scala")
    assert "compression" in scala["properties"]


@pytest.mark.parametrize("block, message", [
    ({"activations": {**Q8, "error_feedback": True}}, "compression.activations.error_feedback: got True; allowed: "
                                                      "false"),
    ({"activation": Q8}, "compression.activation: unknown key"),
    ({"updates": {"name": "topk", "error_feedback": "yes"}}, "compression.updates.error_feedback: got 'yes'"),
])
def test_bad_blocks_are_one_line(block: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate({"compression": block})
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize("algorithms, block, message", [
    (["scala"], {"activations": {"name": "quantize", "bits": 17}},
     "compression.activations.bits: got 17; allowed: an integer >= 1 and <= 16"),
    (["scala"], {"activations": {"name": "quantize", "bits": 0}},
     "compression.activations.bits: got 0; allowed: an integer >= 1 and <= 16"),
    (["fedavg"], {"updates": {"name": "topk", "fraction": 0}}, "compression.updates.fraction: got 0; allowed:"),
    (["fedavg"], {"updates": {"name": "rand_topk", "fraction": 1.5}}, "compression.updates.fraction: got 1.5;"),
    (["fedavg"], {"activations": Q8}, "compression.activations: got 'quantize', which fedavg cannot apply: "
                                      "FedAvg has no activations path to compress; allowed: a path fedavg has"),
    (["fedavg"], {"activations": Q8, "gradients": Q8}, "compression.activations: got 'quantize', which fedavg "
                                                       "cannot apply"),
    (["scala"], {"updates": Q8}, "compression.updates: got 'quantize', which scala cannot apply: SCALA has no "
                                 "updates path"),
    (["sfl_local_loss"], {"gradients": Q8}, "compression.gradients: got 'quantize', which sfl_local_loss cannot "
                                            "apply: SFLLocalLoss sends no activation gradients back"),
    (["fedconcat"], {"updates": Q8}, "compression.updates: got 'quantize', which fedconcat cannot apply"),
    (["scala"], {"activations": {"name": "nope"}}, "compression.activations.name: unknown compressor 'nope'"),
])
def test_refusals_name_the_field_before_any_work(tmp_path: Path, capsys, algorithms: list, block: dict,
                                                 message: str) -> None:
    data = {**small_scenario(algorithms=algorithms), "compression": block}
    path = write_yaml(tmp_path, data)
    assert main(["scenario", str(path), "--check"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_a_top_level_path_applies_where_the_algorithm_has_it(tmp_path: Path) -> None:
    data = {**small_scenario(algorithms=["scala", "fedavg", "sfl_local_loss"], train=300, test=100),
            "compression": {"activations": Q8, "gradients": {"name": "topk"}, "updates": {"name": "quantize"}}}
    cfg = load_scenario(write_yaml(tmp_path, data))
    dataset = DATASETS.create("fashion_mnist", max_train_samples=300, max_test_samples=100).load()
    paths = {spec.label: sorted(runner.build_run(cfg, spec, dataset).setup.compression.codecs)
             for spec in cfg.algorithms}
    assert paths == {"scala": ["activations", "gradients"], "fedavg": ["updates"],
                     "sfl_local_loss": ["activations"]}


def test_the_readme_block_is_a_valid_scenario() -> None:
    (text,) = doc_blocks("concepts/compression.md", "yaml")
    cfg = validate(yaml.safe_load(text))
    assert cfg.compression_for("scala")["activations"][1].params == {"bits": 8}
    assert cfg.compression_for("fedavg")["updates"][1].error_feedback is True
    assert cfg.compression_for("fedavg")["activations"] is None


def test_an_entry_refusal_names_the_entry(tmp_path: Path, capsys) -> None:
    data = small_scenario(algorithms=["scala", {"name": "fedavg", "compression": {"gradients": Q8}}])
    assert main(["scenario", str(write_yaml(tmp_path, data)), "--check"]) == 2
    assert "algorithms[1].compression.gradients: got 'quantize', which fedavg cannot apply" in capsys.readouterr().err


def test_vectorised_is_refused_with_compression(tmp_path: Path, capsys) -> None:
    data = {**small_scenario(algorithms=["scala"]), "execution": "vectorised", "compression": {"activations": Q8}}
    assert main(["scenario", str(write_yaml(tmp_path, data)), "--check"]) == 2
    assert "compression.activations is set" in capsys.readouterr().err


# ------------------------------------------------------------------------------- split learning
def _plan(**paths) -> CompressionPlan:
    return CompressionPlan.of({p: (c, False) for p, c in paths.items()}, seed=0)


def _declared(monkeypatch) -> list:
    """Every payload an algorithm declares to the uplink allocation (``ctx.allocate_uplink``)."""
    from sfl_sim.engine import RoundContext

    seen: list = []
    real = RoundContext.allocate_uplink

    def spy(self, payload_bits):
        if payload_bits is not None:
            seen.append(dict(payload_bits))
        return real(self, payload_bits)

    monkeypatch.setattr(RoundContext, "allocate_uplink", spy)
    return seen


def test_split_round_charges_the_payload_and_trains_on_decoded_tensors(monkeypatch) -> None:
    """SplitFedV1, two clients, B_k = 4, T = 1: A_k is (4, 2, 3, 3) = 72 entries."""
    declared = _declared(monkeypatch)
    setup = tiny_setup()
    setup.compression = _plan(activations=Quantize(8), gradients=Quantize(4))
    algo = ALGORITHMS.get("splitfed_v1")(setup)
    sent, received, grads, backpropagated = {}, {}, {}, {}
    forward, on_acts, backward = algo.client_forward, algo.server_on_activations, algo.client_backward

    def client_forward(step):
        a = forward(step)
        sent[step.client] = a.detach().clone()
        return a

    def server_on_activations(server, upload, want_reply):
        received[upload.client] = upload.activations.detach().clone()
        reply = on_acts(server, upload, want_reply)
        grads[upload.client] = reply.activation_grad.clone()
        return reply

    def client_backward(step, reply):
        backpropagated[step.client] = reply.activation_grad.clone()
        return backward(step, reply)

    algo.client_forward, algo.server_on_activations, algo.client_backward = \
        client_forward, server_on_activations, client_backward
    sim = two_client_simulator()
    cohort = np.array([0, 1])
    sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    kinds = sim.counters.by_kind
    # 72 codes of 8 bits = 72 bytes, one float32 scale, a 4-dimension int32 header: 92 bytes a client
    assert kinds["uplink/activations"] == 2 * (72 + 4 + 16)
    assert kinds["uplink/labels"] == 2 * 4 * 8  # exact, int64
    assert declared == [{0: 8 * (92 + 32), 1: 8 * (92 + 32)}]  # what payload-aware allocators see
    # 72 codes of 4 bits = 36 bytes + scale + header
    assert kinds["downlink/activation_gradients"] == 2 * (36 + 4 + 16)
    q8, q4 = Quantize(8), Quantize(4)
    for k in (0, 1):
        assert torch.equal(received[k], q8.decode(q8.encode(sent[k])))
        assert not torch.equal(received[k], sent[k])
        assert torch.equal(backpropagated[k], q4.decode(q4.encode(grads[k])))
    n = 72
    assert kinds["client/compress_activations"] == 2 * 5 * n and kinds["server/decompress_activations"] == 2 * 2 * n
    assert kinds["server/compress_gradients"] == 2 * 5 * n and kinds["client/decompress_gradients"] == 2 * 2 * n


def _one_round(name: str, plan: CompressionPlan) -> tuple:
    setup = tiny_setup(local_iterations=2)
    setup.compression = plan
    algo = ALGORITHMS.get(name)(setup)
    sim = two_client_simulator()
    cohort = np.array([0, 1])
    duration = sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    return duration, sim.counters.as_dict(), {k: v.clone() for k, v in algo.global_model().state_dict().items()}


@pytest.mark.parametrize("name, path", [("scala", "activations"), ("splitfed_v2", "gradients"),
                                        ("fedavg", "updates")])
def test_identity_is_no_compression_bit_for_bit(name: str, path: str) -> None:
    plain = _one_round(name, CompressionPlan())
    identity = _one_round(name, _plan(**{path: Identity()}))
    assert not _plan(**{path: Identity()})  # identity is no codec
    assert plain[0] == identity[0] and plain[1] == identity[1]
    assert all(torch.equal(plain[2][k], identity[2][k]) for k in plain[2])


# --------------------------------------------------------------------------------------- updates
def test_fedavg_update_is_charged_as_its_payload_and_rebuilt_from_it(monkeypatch) -> None:
    """The tiny model has 77 float parameters: the delta is one 77-entry vector."""
    declared = _declared(monkeypatch)
    setup = tiny_setup()
    setup.compression = _plan(updates=Quantize(8))
    algo = ALGORITHMS.get("fedavg")(setup)
    glob = {k: v.clone() for k, v in algo.model.state_dict().items()}
    decoded, deltas = {}, {}
    encode = setup.compression.encode

    def spy(path, client, tensor):
        deltas[client] = tensor.clone()
        coded = encode(path, client, tensor)
        decoded[client] = coded.decoded.clone()
        return coded

    setup.compression.encode = spy
    uploaded = {}
    aggregate = algo.aggregate

    def keep(cohort, local):
        uploaded.update({k: {n: v.clone() for n, v in local[k].state_dict().items()} for k in cohort.tolist()})
        return aggregate(cohort, local)

    algo.aggregate = keep
    sim = two_client_simulator()
    cohort = np.array([0, 1])
    sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    assert sim.counters.by_kind["uplink/model"] == 2 * (77 + 4 + 4)  # 77 codes of 8 bits, a scale, a 1-d header
    assert declared == [{0: 8 * 85, 1: 8 * 85}]
    q8 = Quantize(8)
    for k in (0, 1):
        assert deltas[k].numel() == 77
        assert torch.equal(decoded[k], q8.decode(q8.encode(deltas[k])))
        start = 0
        for name, g in glob.items():
            n = g.numel()
            assert torch.equal(uploaded[k][name], g + decoded[k][start:start + n].reshape(g.shape))
            start += n
    assert sim.counters.by_kind["client/compress_update"] == 2 * 5 * 77
    assert sim.counters.by_kind["server/decompress_update"] == 2 * 2 * 77


def test_fedavg_topk_update_keeps_a_tenth_and_feeds_back_the_rest() -> None:
    setup = tiny_setup()
    setup.compression = CompressionPlan.of({"updates": (TopK(0.1), True)}, seed=0)
    algo = ALGORITHMS.get("fedavg")(setup)
    sim = two_client_simulator()
    cohort = np.array([0, 1])
    sim.run_round(lambda ctx: algo.run_round(ctx, cohort), cohort)
    # ceil(7.7) = 8 float32 values, 8 uint8 indices, a 1-d header
    assert sim.counters.by_kind["uplink/model"] == 2 * (8 * 4 + 8 + 4)
    feedback = setup.compression.codec("updates").feedback
    for k in (0, 1):
        residual = feedback.residual(k)
        assert residual.numel() == 77 and int((residual != 0).sum()) >= 77 - 8
    assert "compression" in algo.state_dict()


# ---------------------------------------------------------------------------------------- resume
@pytest.mark.slow
@pytest.mark.integration
def test_a_resumed_run_with_error_feedback_and_random_draws_is_exact(tmp_path: Path, capsys) -> None:
    data = small_scenario(rounds=3, train=300, test=100, algorithms=[
        {"name": "fedavg", "compression": {"updates": {"name": "rand_topk", "fraction": 0.2, "error_feedback": True}}},
        {"name": "scala", "compression": {"activations": {"name": "quantize", "bits": 2,
                                                          "rounding": "stochastic"}}}])
    data["output_dir"] = str(tmp_path / "full")
    path = write_yaml(tmp_path, data)
    assert main(["scenario", str(path), "--no-progress"]) == 0
    cfg = load_scenario(path, extra={"output_dir": str(tmp_path / "cut")})
    dataset = DATASETS.create("fashion_mnist", max_train_samples=300, max_test_samples=100).load()

    def interrupt(rnd: int, info: dict) -> None:
        if rnd == 2:
            raise KeyboardInterrupt

    for spec in cfg.algorithms:
        with pytest.raises(KeyboardInterrupt):
            runner.run_one(runner.build_run(cfg, spec, dataset), tmp_path / "cut" / spec.label, progress=False,
                           on_round=interrupt)
        state = torch.load(tmp_path / "cut" / spec.label / "checkpoint.pt", weights_only=True)
        kept = state["algorithm"]["compression"]
        assert kept["generator"].dtype == torch.uint8
        if spec.label == "fedavg":  # both clients of each round so far have a residual
            assert len(kept["paths"]["updates"]["residuals"]) >= 3
    capsys.readouterr()
    assert main(["scenario", str(path), "-o", str(tmp_path / "cut"), "--resume", "--no-progress"]) == 0
    for label in ("fedavg", "scala"):
        for name in ("metrics.csv", "rounds.csv"):
            assert (read_rows(tmp_path / "cut" / label / name, host_time=False)
                    == read_rows(tmp_path / "full" / label / name, host_time=False)), (label, name)
