"""SCALA-PE: SCALA with ResSFL's two privacy mechanisms (SCALA journal §5.7, Table VI).

The journal adds to SCALA, following ResSFL (Li et al., CVPR 2022):

1. **Bottleneck layers** -- "a pair of Conv2D layers" that compress the feature space at the cut.
   Here the *encoder* ``Conv2d(C → c_b, 3, stride s, padding 1)`` is appended to the client-side
   model, so the activations that cross the air are its output ``(c_b, ⌈h/s⌉, ⌈w/s⌉)`` (fewer
   bytes, counted from the real tensor).  The *decoder* ``Upsample(size=(h, w)) - Conv2d(c_b → C,
   3, padding 1)`` is prepended to the server-side model, restoring the shape the rest of the
   server-side model expects (as in ResSFL, where the bottleneck's second layer is on the server).
   SCALA's server step (concatenation, logit adjustments) is unchanged: it runs on
   ``self.server_model``, which now starts with the decoder.
2. **A simulated inversion model** ``g_φ`` on the client: a shallow convolutional autoencoder
   (:class:`sfl_sim.privacy.InversionModel`, no output squashing) from the uploaded activations
   ``A = h(w_c; X)`` back to ``X``.  The journal's eq. (17) lost its symbols in our copy; we
   implement ResSFL's min-max reading of it.  Each local iteration, after G_k arrives, client k
   updates

   * its feature extractor (client-side model + encoder) on
     ``L_c = L_task(w_c) - α · R(g_φ(h(w_c; X)), X)`` -- the task-loss gradient is G_k from the
     server (SCALA's eq. 15 loss), and ``R`` is the reconstruction error (MSE in the data set's
     normalised units), so the extractor is pushed towards features the inverter reconstructs
     *badly*;
   * the simulated inverter on ``+R(g_φ(A), X)`` (it is trained to reconstruct), one step of the
     client's ``inverter`` optimizer (the scenario's optimizer) at rate ``inverter_lr``, from the
     same (pre-update) activations.

   ``α`` (``alpha``) is a parameter; ``alpha=0`` keeps the inverter training but no regulariser.

Choices where the journal is silent (its numbers were lost; each is a parameter):

* ``bottleneck_channels=8``, ``bottleneck_stride=2``: for VGG-11 at S2 on 1×28×28 the uploaded
  activations go from ``(128, 7, 7)`` to ``(8, 4, 4)`` with the default widths.
* ``inverter_channels=32``: internal channel size of the simulated inverter.
* ``alpha=0.5``; ``inverter_lr=None`` means the run's learning rate.
* The simulated inverter travels with the client-side model: it is broadcast to the cohort with
  it, uploaded with ``w_c,k^T`` and averaged by |D_k| like it (so it is one global module, as
  the client-side model is; its bytes count under kind ``client_model``).
* Compute: the encoder's FLOPs are part of ``client_forward`` (metered on the real forward); the
  regulariser's inverter forward/backward and both SGD updates of the privacy step are metered
  as ``client_privacy`` and charged on the client with ``ctx.compute``; the decoder is part of
  the metered ``server_step``.
* New layers are initialised from ``seed`` (torch's default layer initialisation under a forked
  global RNG), so the SCALA part starts from the scenario's initial weights.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from sfl_sim.algorithms.base import ALGORITHMS, TrainingSetup
from sfl_sim.algorithms.split.messages import ClientStep, Reply
from sfl_sim.algorithms.split.scala import SCALA
from sfl_sim.engine import RoundContext, SimSteps
from sfl_sim.kit.params import Doc, NonNegative, Positive, PositiveInt
from sfl_sim.models import output_shape
from sfl_sim.privacy.inversion import InversionModel


@ALGORITHMS.register("scala_pe")
class SCALAPE(SCALA):
    """SCALA with a client-side bottleneck and a simulated-inversion regulariser (module docstring).

    Parameters
    ----------
    setup : TrainingSetup
        Its client-side part must output ``(C, h, w)`` feature maps (e.g. VGG-11 or AlexNet at a
        conv split point).
    """

    class Params(SCALA.Params):
        """SCALAPE's parameters (what a scenario sets beside ``name``): SCALA's, and these."""

        alpha: Annotated[NonNegative, Doc("Weight α >= 0 of the reconstruction term in the client loss.")] = 0.5
        bottleneck_channels: Annotated[PositiveInt, Doc("Channels c_b of the bottleneck's encoder.")] = 8
        bottleneck_stride: Annotated[PositiveInt, Doc("Stride s of the bottleneck's encoder.")] = 2
        inverter_channels: Annotated[PositiveInt, Doc("Internal channel size of the simulated inverter.")] = 32
        inverter_lr: Annotated[Positive | None, Doc(
            "Fixed rate of the simulated inverter's optimizer (default: the round's learning rate).")] = None
        seed: Annotated[int, Doc("Initialises the bottleneck and the simulated inverter.")] = 0

    params: Params

    def __init__(self, setup: TrainingSetup, **params: Any) -> None:
        super().__init__(setup, **params)
        p = self.params
        image_shape = tuple(setup.train_x.shape[1:])
        base_client, base_server = self.client_model, self.server_model
        cut_shape = output_shape(base_client, image_shape)
        if len(cut_shape) != 3:
            raise ValueError(f"scala_pe needs (C, h, w) activations at the split point, got shape "
                             f"{cut_shape}; use a conv split point (e.g. VGG-11 S2)")
        c, h, w = cut_shape
        device = setup.train_x.device
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(p.seed)
            encoder = nn.Conv2d(c, p.bottleneck_channels, 3, stride=p.bottleneck_stride, padding=1)
            decoder = nn.Sequential(nn.Upsample(size=(h, w), mode="nearest"),
                                    nn.Conv2d(p.bottleneck_channels, c, 3, padding=1))
            act_shape = output_shape(encoder, cut_shape)
            inverter = InversionModel(act_shape, image_shape, channels=p.inverter_channels, sigmoid=False)
        # The clients' activations are now the encoder's: ``activation_shape`` (a dry run of the
        # client model, on first use) is the compressed shape.
        self.client_model = nn.Sequential(base_client, encoder.to(device))
        self.server_model = nn.Sequential(decoder.to(device), base_server)
        self.inverter = inverter.to(device)
        self.full_model = nn.Sequential(self.client_model, self.server_model)
        self._bundle = nn.ModuleDict({"extractor": self.client_model, "inverter": self.inverter})

    # -- state: the simulated inverter besides the full model --------------------------------------
    def extra_state(self) -> dict[str, Any]:
        return {"inverter": self.inverter.state_dict()}

    def load_extra_state(self, state: Mapping[str, Any]) -> None:
        self.inverter.load_state_dict(state["inverter"])

    # -- the delta to SCALA ------------------------------------------------------------------------
    def client_side(self) -> nn.Module:
        """Client-side model (with the encoder) and the simulated inverter travel together."""
        return self._bundle

    def client_forward(self, step: ClientStep) -> torch.Tensor:
        """A_k from the feature extractor (client-side model + encoder) of the bundle."""
        return cast(nn.ModuleDict, step.model)["extractor"](step.x)  # a working copy of the bundle

    def client_on_reply(self, ctx: RoundContext, step: ClientStep, reply: Reply) -> SimSteps[None]:
        """The privacy step (metered as ``client_privacy``), then SCALA's backward of G_k.

        The base backward steps every parameter of the bundle; the inverter's gradients were
        consumed (and cleared) by the privacy step, so only the extractor moves there."""
        yield from self.client_compute(ctx, step, "client_privacy", lambda: self._privacy_step(step))
        yield from super().client_on_reply(ctx, step, reply)

    def _privacy_step(self, step: ClientStep) -> None:
        """Inverter step on +R, and -α·∇R into the extractor's gradient (G_k's is added to it)."""
        bundle = cast(nn.ModuleDict, step.model)  # a working copy of _bundle
        ext_params = list(bundle["extractor"].parameters())
        inv_params = list(bundle["inverter"].parameters())
        # Reconstruction error R of the simulated inverter on this batch's activations.
        err = F.mse_loss(bundle["inverter"](step.activations), step.x)
        inv_grads = torch.autograd.grad(err, inv_params, retain_graph=True)
        if self.params.alpha > 0:
            ext_grads = torch.autograd.grad(-self.params.alpha * err, ext_params, retain_graph=True)
            for p, g in zip(ext_params, ext_grads, strict=True):
                p.grad = g
        for p, g in zip(inv_params, inv_grads, strict=True):
            p.grad = g
        # The simulated inverter is the client's own model: its own optimizer (the scenario's kind),
        # at inverter_lr when given, else at the round's rate.
        self.optimizer_step(self.client_optimizer(step.client, inv_params, name="inverter", lr=self.params.inverter_lr))


__all__ = ["SCALAPE"]
