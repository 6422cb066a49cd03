"""SCALA-PE: a round runs, uploads fewer activation bytes than SCALA, meters the privacy step;
the model-inversion attacker (sfl_sim.privacy.inversion) learns to reconstruct."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from sfl_sim.algorithms import ALGORITHMS, TrainingSetup
from sfl_sim.algorithms.split.scala import SCALA
from sfl_sim.algorithms.split.scala_pe import SCALAPE
from sfl_sim.models.vgg import VGG11
from sfl_sim.privacy.inversion import InversionModel, evaluate_attack, train_attacker
from tests.algorithms.split.split_protocol_helpers import round_counts, simulator

CHANNELS = (4, 8, 8, 8, 8, 8, 8, 8)
NORM = {"mean": (0.5,), "std": (0.2,)}  # targets x*0.2+0.5, mostly inside [0, 1]


def small_vgg_setup(seed: int = 0, n_per_client: int = 16) -> TrainingSetup:
    """Two clients, 1x16x16 smooth random images (4x4 noise, upsampled), narrow VGG-11 split at S2
    -> (8, 4, 4) activations."""
    gen = torch.Generator().manual_seed(seed)
    n = 2 * n_per_client
    x = torch.nn.functional.interpolate(torch.randn(n, 1, 4, 4, generator=gen), size=(16, 16), mode="bilinear")
    x = (x - x.mean()) / x.std()
    y = torch.randint(0, 3, (n,), generator=gen)
    torch.manual_seed(seed)
    model = VGG11((1, 16, 16), 3, conv_channels=CHANNELS, fc_features=(16, 16))
    return TrainingSetup(model=model, split_point="S2", train_x=x, train_y=y,
                         client_indices=[torch.arange(0, n_per_client), torch.arange(n_per_client, n)],
                         num_classes=3, batch_size=8, local_iterations=2, learning_rate=0.05,
                         device=torch.device("cpu"), minibatch_rng=np.random.default_rng(seed))


def test_registered_and_shapes() -> None:
    setup = small_vgg_setup()
    algo = ALGORITHMS.get("scala_pe")(setup)
    assert isinstance(algo, SCALAPE)
    assert algo.activation_shape == (8, 2, 2)  # (8, 4, 4) compressed to 8 channels, stride 2
    x = setup.train_x[:3]
    assert algo.client_model(x).shape == (3, 8, 2, 2)
    assert algo.global_model()(x).shape == (3, 3)
    # The SCALA part starts from the scenario's initial weights.
    ref = SCALA(small_vgg_setup())
    for a, b in zip(ref.client_model.parameters(), algo.client_model[0].parameters(), strict=True):
        assert torch.equal(a, b)


def test_round_uploads_fewer_activation_bytes_than_scala() -> None:
    counts = {}
    for name, cls, kw in (("scala", SCALA, {}), ("scala_pe", SCALAPE, {"bottleneck_channels": 2})):
        algo = cls(small_vgg_setup(), **kw)
        before = copy.deepcopy(algo.state_dict())
        counts[name] = round_counts(simulator(), algo, [0, 1])
        changed = any(not torch.equal(v, before["model"][k]) for k, v in algo.state_dict()["model"].items()
                      if torch.is_floating_point(v))
        assert changed
    pe, sc = counts["scala_pe"]["by_kind"], counts["scala"]["by_kind"]
    # B = 8 samples per iteration, T = 2: (8, 4, 4) float32 for SCALA, (2, 2, 2) for SCALA-PE.
    assert sc["uplink/activations"] == 2 * 8 * 8 * 4 * 4 * 4
    assert pe["uplink/activations"] == 2 * 8 * 2 * 2 * 2 * 4
    assert pe["client/client_privacy"] > 0
    assert pe["client/client_forward"] > sc["client/client_forward"]  # the encoder is metered
    assert pe["uplink/labels"] == sc["uplink/labels"]


def test_simulated_inverter_is_trained_and_regulariser_changes_extractor() -> None:
    a0 = SCALAPE(small_vgg_setup(), alpha=0.0)
    a1 = SCALAPE(small_vgg_setup(), alpha=5.0)
    inv0 = copy.deepcopy(a0.inverter.state_dict())
    for algo in (a0, a1):
        round_counts(simulator(), algo, [0, 1])
    assert any(not torch.equal(v, inv0[k]) for k, v in a0.inverter.state_dict().items())
    # Same data and G_k path; only the -alpha R term differs.
    assert any(not torch.allclose(p, q) for p, q in zip(a0.client_model.parameters(), a1.client_model.parameters(),
                                                        strict=True))


def test_state_round_trip() -> None:
    algo = SCALAPE(small_vgg_setup())
    round_counts(simulator(), algo, [0, 1])
    other = SCALAPE(small_vgg_setup(seed=1), seed=3)
    other.load_state_dict(algo.state_dict())
    x = algo.setup.train_x[:4]
    algo.global_model().eval(), other.global_model().eval()
    assert torch.equal(algo.global_model()(x), other.global_model()(x))
    assert torch.equal(algo.inverter(algo.client_model(x)), other.inverter(other.client_model(x)))


def test_bad_input() -> None:
    for kw in ({"alpha": -1.0}, {"bottleneck_channels": 0}, {"bottleneck_stride": 1.5}, {"inverter_lr": 0.0}):
        with pytest.raises(ValueError):
            SCALAPE(small_vgg_setup(), **kw)


@pytest.mark.slow
def test_attacker_beats_untrained_and_is_seeded() -> None:
    setup = small_vgg_setup(n_per_client=64)
    client = SCALA(setup).client_model
    aux, test = setup.train_x[:96], setup.train_x[96:]
    attacker = train_attacker(client, aux, **NORM, channels=8, epochs=60, batch_size=32, lr=5e-3, seed=0)
    untrained = InversionModel((8, 4, 4), (1, 16, 16), channels=8, generator=torch.Generator().manual_seed(0))
    trained_scores = evaluate_attack(client, attacker, test, **NORM)
    untrained_scores = evaluate_attack(client, untrained, test, **NORM)
    assert trained_scores["mse"] < 0.8 * untrained_scores["mse"]
    assert trained_scores["psnr"] > untrained_scores["psnr"]
    again = train_attacker(client, aux, **NORM, channels=8, epochs=60, batch_size=32, lr=5e-3, seed=0)
    assert evaluate_attack(client, again, test, **NORM) == trained_scores
