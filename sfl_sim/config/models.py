"""The scenario's models: every section, the component specs and the whole :class:`Scenario`.

A scenario validates into a frozen :class:`Scenario` (pydantic v2 models, strict types, unknown
keys forbidden) *before any work starts*; code reads it by attribute: ``cfg.cell.downlink.mode``.

Swappable parts (dataset, partitioner, model, algorithm, channel components) are open
:class:`ComponentSpec` s: a ``name`` (a registered short name or ``package.module:Class``) and the
component's own parameters beside it.  Their parameters are checked when the component is built,
which also happens before training (see :mod:`sfl_sim.runs.runner`).

``sfl-sim schema`` prints :func:`sfl_sim.catalog.component_schema.json_schema`, so editors complete and
check scenario YAML.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    StrictBool,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from sfl_sim.channel.kinds import CHANNEL_KINDS
from sfl_sim.channel.limits import NOISE_FIGURE_DB, SIMULATED_INTERVAL_S
from sfl_sim.channel.link.downlink import GNB_NOISE_FIGURE_DB
from sfl_sim.channel.link.harq import HARQ
from sfl_sim.channel.link.outage import outage_rule_problem
from sfl_sim.channel.link.power_control import POWER_CONTROL
from sfl_sim.channel.link.resource_grid import DEFAULT_NUMEROLOGY, N_RB_FR1, slot_duration_s
from sfl_sim.channel.link.scheduling import SCHEDULERS, ResourceGrid, is_dynamic
from sfl_sim.clients.energy.models import BACKHAUL_J_PER_BIT, SERVER_J_PER_FLOP
from sfl_sim.clients.limits import BATTERY_CAPACITY_J
from sfl_sim.config.choices import (
    Coherence,
    CompressionPath,
    DeviceName,
    DownlinkMode,
    ExecutionMode,
    OnOutage,
    OutOfRange,
    StragglerPolicy,
)
from sfl_sim.config.errors import CrossFieldError, format_validation_error
from sfl_sim.config.fields import (
    Allowed,
    BandwidthHz,
    ClientPowerW,
    ComputeFlopsPerS,
    Fraction,
    Integer,
    NoisePsdDbmPerHz,
    Number,
    OneOf,
    PositiveFloat,
    PositiveInt,
    Section,
    ServerPowerW,
)
from sfl_sim.config.training import Training, TrainingOverride, merge_training, override_dict
from sfl_sim.kit.params import params_model

__all__ = ["ComponentSpec", "CompressorSpec", "Compression", "COMPRESSION_PATHS", "merge_compression",
           "AlgorithmSpec", "Data", "ModelSection", "Capability", "Clients", "Stragglers", "Edge", "Server", "Metrics",
           "Outage", "HarqSpec", "Downlink", "CellSection", "Battery", "EnergySection", "Scenario"]


#: The HARQ model a ``cell.harq`` mapping without ``name`` names (:data:`sfl_sim.channel.CHANNEL_KINDS`).
HARQ_IMPLIED_NAME = next(k.implied_name for k in CHANNEL_KINDS if k.name == "harq")


class ComponentSpec(BaseModel):
    """A swappable component: ``name`` plus the component's own parameters (any keys).

    A bare string is read as ``{"name": string}``.  The parameters are checked by the component
    itself when the runner builds it (before any work).

    Attributes
    ----------
    name : str
        A registered short name or ``package.module:Class``.
    params : dict
        Everything beside ``name`` (and an algorithm's ``label``).
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    name: Annotated[str, Field(min_length=1), Allowed("a non-empty string")]

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value: Any) -> Any:
        return cls._spec_mapping(value)

    @staticmethod
    def _spec_mapping(value: Any) -> Any:
        """``value`` as ``{"name": ..., **params}``: a bare name becomes one; else the one-line refusal."""
        if isinstance(value, str):
            return {"name": value}
        if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
            raise PydanticCustomError("component", "{allowed}",
                                      {"allowed": "a mapping with a string 'name' and parameters (or a bare name)"})
        return value

    @property
    def params(self) -> dict[str, Any]:
        """The component's parameters: every key but ``name`` and ``label``."""
        return {k: v for k, v in (self.model_extra or {}).items() if k != "label"}

    def as_dict(self) -> dict[str, Any]:
        """``{"name": ..., **params}`` (with ``label`` when set), as written in YAML."""
        return {"name": self.name, **(self.model_extra or {})}

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # Editors must accept the bare-name shorthand too.
        mapping = handler(schema)
        return {"anyOf": [{"type": "string", "minLength": 1, "description": "a registered name or module:Class"},
                          mapping]}


class CompressorSpec(ComponentSpec):
    """A compressor of one ``compression:`` path: ``name`` (``identity``, ``quantize``, ``topk``,
    ``rand_topk`` or ``package.module:Class``) and its parameters, checked when the run is built,
    plus ``error_feedback`` (``updates`` only), which is not the compressor's."""

    error_feedback: Annotated[StrictBool, Allowed(
        "true or false (carry each client's compression residual into its next update; updates only)")] = False

    def as_dict(self) -> dict[str, Any]:
        """``{"name": ..., **params}`` with ``error_feedback`` when true."""
        data = super().as_dict()
        if self.error_feedback:
            data["error_feedback"] = True
        return data

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if not self.error_feedback:
            data.pop("error_feedback", None)
        return data


class Compression(Section):
    """``compression:``: a compressor per path, none by default (the tensors go as they are).

    ``activations`` are split learning's uplink activations (labels stay exact), ``gradients``
    its downlink activation gradients, ``updates`` an FL client's model update (the delta from
    the global model), ``model_download`` the global model an FL server broadcasts to the cohort
    (the clients train from the decoded model).  Allowed at the top level (every algorithm) and in an algorithm's entry,
    whose paths win (``null`` there turns a shared path off for that algorithm).  When the run is
    built (:func:`sfl_sim.runs.build.applied_compression`) a top-level path applies to the algorithms
    that have it; an algorithm refuses a path of its own block that it lacks, and a top-level
    block none of whose paths it has.
    """

    activations: CompressorSpec | None = None
    gradients: CompressorSpec | None = None
    updates: CompressorSpec | None = None
    model_download: CompressorSpec | None = None

    @model_validator(mode="after")
    def _feedback_on_updates(self) -> Compression:
        for path in ("activations", "gradients"):
            spec = getattr(self, path)
            if spec is not None and spec.error_feedback:
                raise CrossFieldError(f"{path}.error_feedback", True, "false (a client's activations and their "
                                      "gradients change samples and shape every iteration; error feedback "
                                      "applies to updates)", relative=True)
        if self.model_download is not None and self.model_download.error_feedback:
            raise CrossFieldError("model_download.error_feedback", True, "false (each round sends the global model "
                                  "itself, not an increment whose error could be carried into the next; error "
                                  "feedback applies to updates)", relative=True)
        return self

    def as_dict(self) -> dict[str, Any]:
        """The paths this block sets, as written in YAML."""
        return {path: None if getattr(self, path) is None else getattr(self, path).as_dict()
                for path in COMPRESSION_PATHS if path in self.model_fields_set}


#: The paths of a ``compression:`` block, in order.
COMPRESSION_PATHS: tuple[str, ...] = get_args(CompressionPath)


def merge_compression(shared: Compression | None, own: Compression | None) -> dict[str, str | None]:
    """Where each path's compressor of one run comes from: ``"own"`` (the algorithm's block sets
    it), ``"shared"`` (the top-level block does) or None (no compression on that path)."""
    out: dict[str, str | None] = {}
    for path in COMPRESSION_PATHS:
        if own is not None and path in own.model_fields_set:
            out[path] = "own" if getattr(own, path) is not None else None
        elif shared is not None and getattr(shared, path) is not None:
            out[path] = "shared"
        else:
            out[path] = None
    return out


_LABEL_RULE = "a non-empty name without '/', '\\\\', NUL, and not '.' or '..' (it names the run directory)"

class AlgorithmSpec(ComponentSpec):
    """An algorithm: a component spec with an optional ``label`` naming its run directory and an
    optional ``training:`` block overriding the shared training settings for this run (neither
    is passed to the algorithm's constructor)."""

    training: TrainingOverride | None = None
    compression: Compression | None = None

    @model_validator(mode="after")
    def _check_label(self) -> AlgorithmSpec:
        label = (self.model_extra or {}).get("label")
        if label is None:
            return self
        if not isinstance(label, str) or not label.strip() or label in (".", "..") or \
                any(c in label for c in "/\\\x00"):
            raise PydanticCustomError("label", "{allowed}", {"allowed": _LABEL_RULE, "label": label})
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        # Only what the scenario wrote: no 'training: null' for runs without an override (their
        # resolved scenario.yaml stays as it was), and only the overridden training fields.
        data = handler(self)
        data.pop("training", None)
        if self.training is not None:
            data["training"] = override_dict(self.training)
        data.pop("compression", None)
        if self.compression is not None:
            data["compression"] = self.compression.as_dict()
        return data

    @property
    def label(self) -> str:
        """The run-directory name: ``label``, else ``name`` with ``:`` and ``/`` made safe."""
        label = (self.model_extra or {}).get("label")
        if label is not None:
            return label
        return self.name.replace(":", "_").replace("/", "_").replace("\\", "_")

    def as_dict(self) -> dict[str, Any]:
        """``{"name": ..., **params}`` with ``label`` and the ``training`` override when set."""
        data = super().as_dict()
        if self.training is not None:
            data["training"] = override_dict(self.training)
        if self.compression is not None:
            data["compression"] = self.compression.as_dict()
        return data


def _default(name: str, **params: Any) -> Any:
    return Field(default_factory=lambda: ComponentSpec(name=name, **params))


class Data(Section):
    """``data:``: the data set and how it is split among the clients."""

    dataset: ComponentSpec = _default("fashion_mnist")
    partition: ComponentSpec = _default("quantity", alpha=2)


class ModelSection(Section):
    """``model:``: the network and where it is cut."""

    name: str = "alexnet"
    split_point: str = "S2"
    params: dict[str, Any] = Field(default_factory=dict)


class Capability(Section):
    """``clients.capability:``: per-client compute speed (and link throughput) from a device trace
    (:mod:`sfl_sim.clients.availability.capability`) instead of the uniform draw."""

    path: Annotated[str, Field(min_length=1), Allowed("the path of a device capability file")]
    format: Annotated[Literal["csv", "fedscale"], OneOf(Literal["csv", "fedscale"])] = "csv"
    mapping: Annotated[Literal["seeded", "order"], OneOf(Literal["seeded", "order"])] = "seeded"
    links: Annotated[bool, Allowed("true or false (the trace's bit/s replace the channel's rates)")] = True


class Clients(Section):
    """``clients:``: how many, how many per round, how fast, when online."""

    count: Annotated[int, Integer(1, 10_000_000)] = 100
    participation: Fraction = 0.1
    selection: ComponentSpec | None = None
    compute_flops_per_s_min: ComputeFlopsPerS = 1.0e9
    compute_flops_per_s_max: ComputeFlopsPerS = 1.0e10
    availability: ComponentSpec = _default("always")
    capability: Capability | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        # The defaults are left out, so the scenario.yaml of a run without traces stays as it was
        # (a missing field reads as its default everywhere a scenario is compared).
        data = handler(self)
        if self.availability.name == "always" and not self.availability.params:
            data.pop("availability", None)
        if self.capability is None:
            data.pop("capability", None)
        return data


class Stragglers(Section):
    """``stragglers:``: how the server waits for clients."""

    policy: Annotated[StragglerPolicy, OneOf(StragglerPolicy)] = "wait_all"
    deadline_s: PositiveFloat | None = None
    over_selection_fraction: PositiveFloat = 0.25


class Edge(Section):
    """``server.edge:``: an edge server per cell joined to the cloud by a backhaul
    (:mod:`sfl_sim.engine.edge`); absent or null: the one server of ``server.compute_flops_per_s``.

    Each cell's edge runs the server-side work of the clients it serves (one job at a time, like the
    one server); ``server.compute_flops_per_s`` becomes the cloud's, which aggregates.  A transfer of
    N bytes over the backhaul (a migration edge -> edge, a cell's aggregate to the cloud and the
    global model back) takes ``8 N / backhaul_bps + backhaul_latency_s`` and costs
    ``8 N x backhaul_j_per_bit`` joules (with the energy ledger on).  The defaults are our choice (an
    edge as fast as the default server, a 1 Gbit/s link with 5 ms one way), not measured values, but
    ``backhaul_j_per_bit``: Aslan et al. 2018's 0.06 kWh/GB for 2015
    (:data:`sfl_sim.clients.energy.models.BACKHAUL_J_PER_BIT`, its source and conversion).
    """

    compute_flops_per_s: ComputeFlopsPerS = 1.0e12
    backhaul_bps: Annotated[float, Number(1.0e3, 1.0e12, unit="bit/s",
                                          why="our choice: from a slow microwave hop to a 1 Tbit/s fibre")] = 1.0e9
    backhaul_latency_s: Annotated[float, Number(0.0, 1.0, unit="s, one way",
                                                why="our choice: above 1 s is a unit slip")] = 0.005
    backhaul_j_per_bit: Annotated[float, Number(
        0.0, 1.0e-2, unit="J/bit",
        why="our choice: 0 charges nothing; 1e-2 J/bit (22 kWh/GB) lies above the 2000 value that halving "
            "Aslan et al.'s 0.06 kWh/GB of 2015 every 2 years back gives (11 kWh/GB): more is a unit slip")] = \
        BACKHAUL_J_PER_BIT
    on_handover: ComponentSpec = _default("migrate")


class Server(Section):
    """``server:``: the server's compute (the cloud's with ``edge``), and the optional edge servers."""

    compute_flops_per_s: ComputeFlopsPerS = 1.0e12
    edge: Edge | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        # without an edge the section dumps as before (a run's scenario.yaml, compared on resume)
        data = handler(self)
        if self.edge is None:
            data.pop("edge", None)
        return data


class Metrics(Section):
    """``metrics:``: optional records beyond the run's own evaluation.

    They change what the run directory records, never what the run trains (a resume may switch
    them: rows from then on record them or not).  ``local_vacant_class_accuracy`` costs host time
    at every evaluated round, so it is off unless a run reports it; ``client_record`` costs little
    (``bench/client_record.py``) and is on.  ``slot_trace`` writes ``slots.csv``, one row per
    uplink grant of a slot-form scheduler (nothing otherwise), and is off.
    """

    local_vacant_class_accuracy: Annotated[bool, Allowed(
        "true or false (FedVLS's accuracy of the round's local models on their vacant classes, in classes.csv; "
        "it scores every aggregated local model at each evaluated round)")] = False
    client_record: Annotated[bool, Allowed(
        "true or false (clients.csv: per round and cohort client, what the radio did and where its time "
        "went)")] = True
    slot_trace: Annotated[bool, Allowed(
        "true or false (slots.csv: every uplink grant of every slot, with a slot-form cell.scheduler; "
        "one row per grant, so large for long runs)")] = False


class Outage(Section):
    """``cell.outage:``: when a transfer fails and what happens then (:class:`sfl_sim.channel.OutagePolicy`):
    ``drop`` (the default) drops the payload at its first outage; ``retransmit`` sends it again on a
    fresh fading draw, ``max_attempts`` (>= 2) attempts in all."""

    min_rate_bps: Annotated[float, Number(0), Allowed("a number >= 0 (0 and no min_snr_db: no outage)")] = 0.0
    min_snr_db: Annotated[float, Number(-100.0, 100.0, unit="dB")] | None = None
    max_attempts: Annotated[int, Integer(1, 1000),
                            Allowed("an integer in [1, 1000] (attempts in all: 1 with drop, >= 2 with retransmit)")] = 1
    on_outage: Annotated[OnOutage, OneOf(OnOutage)] = "drop"

    @model_validator(mode="after")
    def _names_say_what_happens(self) -> Outage:
        problem = outage_rule_problem(self.on_outage, self.max_attempts)
        if problem is not None:
            field, allowed = problem
            raise CrossFieldError(field, getattr(self, field), allowed, relative=True)
        return self


class HarqSpec(ComponentSpec):
    """``cell.harq:``: the HARQ model of uplink transport blocks, a component of kind ``harq``
    (:mod:`sfl_sim.channel.link.harq`); absent, null or ``none``: no HARQ.

    A mapping without ``name`` names the built-in ``harq`` (``{mode: sampled, max_transmissions:
    4}``: the form this section had before HARQ was a component kind).  The built-in needs
    ``cell.rate: mcs_table`` (the BLER is per CQI); its parameters are checked when the run is built.
    """

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value: Any) -> Any:
        if isinstance(value, dict) and "name" not in value:
            value = {"name": HARQ_IMPLIED_NAME, **value}
        return ComponentSpec._spec_mapping(value)


class Downlink(Section):
    """``cell.downlink:``: whether and how server-to-client transfers take time, and the downlink's
    own rate model (:mod:`sfl_sim.channel.link.downlink`).

    ``rate`` absent: the uplink's model (``cell.rate``) with the downlink's own values of the
    parameters it declares (``link: downlink``, TS 38.306's ``overhead_fraction`` 0.14, and
    ``ue_noise_figure_db`` when given).  A client with no usable downlink rate is in downlink
    outage: ``cell.outage`` decides (retransmit on a fresh fading draw, or drop,
    ``downlink_outage`` in rounds.csv and clients.csv).
    """

    mode: Annotated[DownlinkMode, OneOf(DownlinkMode)] = "ideal"
    server_tx_power_w: ServerPowerW = 10.0
    bandwidth_hz: BandwidthHz = 20.0e6
    rate: ComponentSpec | None = None
    ue_noise_figure_db: Annotated[float, Number.of_range(NOISE_FIGURE_DB)] | None = None


class CellSection(Section):
    """``cell:``: the radio components and the link budget.

    ``numerology`` (``mu``) sets the resource grid a dynamic ``scheduler`` hands out: subcarrier
    spacing ``15 * 2^mu`` kHz, slot ``1 ms / 2^mu``, and the resource blocks of
    ``uplink_bandwidth_hz`` and ``downlink.bandwidth_hz`` from TS 38.101-1 Table 5.3.2-1
    (:class:`sfl_sim.channel.link.scheduling.ResourceGrid`); ``static`` (the default) keeps
    ``allocation``'s per-round split and uses no grid.  A cell has one numerology: a power control
    that takes a ``subcarrier_spacing_hz`` (``open_loop``) must use ``15 * 2^mu`` kHz, given or by
    its default (a spacing that disagrees is refused, not silently re-derived).

    ``gnb_noise_figure_db`` is the base station receiver's noise figure: the uplink rate model's
    ``noise_figure_db`` when ``cell.rate`` gives none (default 5 dB, 5G-LENA's ``NrPhy``
    ``NoiseFigure``; :data:`sfl_sim.channel.link.downlink.GNB_NOISE_FIGURE_DB`).  The downlink's
    receiver keeps it unless ``downlink.ue_noise_figure_db`` says otherwise.
    """

    placement: ComponentSpec = _default("uniform_disc", radius_m=500.0, min_distance_m=35.0)
    pathloss: ComponentSpec = _default("tr36814_macro")
    shadowing: ComponentSpec = _default("none")
    rate: ComponentSpec = _default("shannon")
    allocation: ComponentSpec = _default("equal")
    fading: ComponentSpec = _default("none")
    coherence: Annotated[Coherence, OneOf(Coherence)] = "per_round"
    out_of_range: Annotated[OutOfRange, Allowed("one of warn, error (clients outside the path-loss model's "
                                                "distance range)")] = "warn"
    mobility: ComponentSpec = _default("static")
    power_control: ComponentSpec = _default("fixed")
    interference: ComponentSpec = _default("none")
    outage: Outage = Field(default_factory=Outage)
    harq: HarqSpec | None = None
    scheduler: ComponentSpec = _default("static")
    numerology: Annotated[int, Integer(0, 2), Allowed(
        "0, 1 or 2 (subcarrier spacing 15 * 2^mu kHz with a column in TS 38.101-1 Table 5.3.2-1, FR1)")] = \
        DEFAULT_NUMEROLOGY
    client_tx_power_w: ClientPowerW = 0.2
    uplink_bandwidth_hz: BandwidthHz = 20.0e6
    noise_psd_dbm_per_hz: NoisePsdDbmPerHz = -174.0
    gnb_noise_figure_db: Annotated[float, Number.of_range(NOISE_FIGURE_DB)] = GNB_NOISE_FIGURE_DB
    downlink: Downlink = Field(default_factory=Downlink)
    network: ComponentSpec | None = None
    handover: ComponentSpec = _default("a3")

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        # without a network the section dumps as before (a run's scenario.yaml, compared on resume)
        data = handler(self)
        if self.network is None:
            data.pop("network", None)
            data.pop("handover", None)
        return data

    @model_validator(mode="after")
    def _network_parts(self) -> CellSection:
        """``cell.handover`` needs a network; a network drops its own clients and carries its own
        interference (a dynamic scheduler runs one band per cell: :mod:`sfl_sim.engine.band.cells`)."""
        if self.network is None:
            # the default written out (a scenario.yaml of a run) is accepted; another rule is refused
            if self.handover != CellSection.model_fields["handover"].get_default(call_default_factory=True):
                raise CrossFieldError("handover", self.handover.name, "left out without cell.network (one cell "
                                      "has no handover)", relative=True)
            return self
        # a placement other than the default is refused (the network drops the clients over its
        # hexagons); the default written out, as the shipped scenarios do, is accepted and unused
        if self.placement != CellSection.model_fields["placement"].get_default(call_default_factory=True):
            raise CrossFieldError("placement", self.placement.name, "left out (or the default uniform_disc) with "
                                  "cell.network (the network drops the clients over its hexagons)", relative=True)
        if self.interference.name != "none":
            raise CrossFieldError("interference", self.interference.name, "none with cell.network (the other "
                                  "cells' transmissions are the interference)", relative=True)
        return self

    @model_validator(mode="after")
    def _grid_has_rows(self) -> CellSection:
        """A dynamic scheduler needs each timed direction's bandwidth in the RB table."""
        if not _dynamic_scheduler(self.scheduler.name):
            return self
        bands = [("uplink_bandwidth_hz", self.uplink_bandwidth_hz)]
        if self.downlink.mode == "unicast":
            bands.append(("downlink.bandwidth_hz", self.downlink.bandwidth_hz))
        for field, bandwidth_hz in bands:
            try:
                ResourceGrid(self.numerology, bandwidth_hz)
            except ValueError:
                scs_hz = 15e3 * 2 ** self.numerology
                rows = ", ".join(f"{mhz}e6" for mhz in N_RB_FR1[scs_hz])
                raise CrossFieldError(field, bandwidth_hz, f"a channel bandwidth of TS 38.101-1 Table 5.3.2-1 "
                                      f"at {scs_hz / 1e3:g} kHz (cell.numerology {self.numerology}) when "
                                      f"cell.scheduler is {self.scheduler.name}: {rows}", relative=True) from None
        return self

    @model_validator(mode="after")
    def _one_numerology(self) -> CellSection:
        """A power control's subcarrier spacing (given, or its default) is ``cell.numerology``'s:
        one cell, one resource grid (RBs counted at 60 kHz on a 15 kHz grid are not physical)."""
        spacing_hz = _power_control_spacing_hz(self.power_control)
        grid_hz = 15e3 * 2 ** self.numerology
        if spacing_hz is None or spacing_hz == grid_hz:
            return self
        given = "subcarrier_spacing_hz" in self.power_control.params
        raise CrossFieldError("power_control.subcarrier_spacing_hz",
                              self.power_control.params.get("subcarrier_spacing_hz", spacing_hz),
                              f"{grid_hz:g} (cell.numerology {self.numerology}: 15 * 2^mu kHz; a cell has one "
                              f"numerology{'' if given else ', and this is the power control default'}; set both "
                              f"to agree)", relative=True)

    @model_validator(mode="after")
    def _one_slot(self) -> CellSection:
        """A HARQ slot given in the scenario is ``cell.numerology``'s, ``1 ms / 2^mu`` (TS 38.211
        clause 4.3.2): one cell, one numerology (left out, the run passes the cell's)."""
        given = None if self.harq is None else _harq_slot_s(self.harq)
        slot_s = slot_duration_s(self.numerology)
        if given is None or abs(given - slot_s) <= 1e-12 * slot_s:
            return self
        raise CrossFieldError("harq.slot_s", given, f"{slot_s:g} (cell.numerology {self.numerology}: 1 ms / 2^mu; a "
                              f"cell has one numerology; leave slot_s out to take the cell's)", relative=True)


def _harq_slot_s(spec: ComponentSpec) -> float | None:
    """The ``slot_s`` a scenario gives its HARQ model, or None when it gives none, the model takes
    none, its name is unknown (refused when the run is built) or the value is not a number (refused
    by the component's own parameter check)."""
    value = spec.params.get("slot_s")
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        model = params_model(HARQ.get(spec.name), HARQ.supplied)
    except (ValueError, TypeError):
        return None
    return None if model is None or "slot_s" not in model.model_fields else float(value)


def _power_control_spacing_hz(spec: ComponentSpec) -> float | None:
    """The subcarrier spacing ``spec``'s power control uses (given or its default), or None when it
    takes none (``fixed``), its name is unknown (refused when the run is built) or the value is not
    a number (refused by the component's own parameter check)."""
    try:
        model = params_model(POWER_CONTROL.get(spec.name))
    except ValueError:
        return None
    field = None if model is None else model.model_fields.get("subcarrier_spacing_hz")
    if field is None:
        return None
    value = spec.params.get("subcarrier_spacing_hz", field.default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _dynamic_scheduler(name: str) -> bool:
    """Whether ``cell.scheduler`` names a dynamic scheduler (an unknown name, or a class lacking a
    member of the protocol, a TypeError, is refused when the run is built, in one line)."""
    try:
        return is_dynamic(SCHEDULERS.get(name))
    except (ValueError, TypeError):
        return False


JoulesPerFlop = Annotated[float, Number(0, 1.0, unit="J/FLOP")]
BatteryJoules = Annotated[float, Number.of_range(BATTERY_CAPACITY_J)]


class Battery(Section):
    """``energy.battery:``: each client's battery capacity, drawn once per run (stream ``battery``)
    uniformly in ``[capacity_min_j, capacity_max_j]``; equal bounds give every client the same."""

    capacity_min_j: BatteryJoules = 5_000.0
    capacity_max_j: BatteryJoules = 20_000.0


class EnergySection(Section):
    """``energy:``: the clients' device energy model, the server's J/FLOP and optional batteries
    (:mod:`sfl_sim.clients.energy`).  The ledger only records (``energy.csv``, ``client_energy_j``);
    batteries, when set, also decide who can be selected and who drops out."""

    enabled: Annotated[bool, Allowed("true or false (write energy.csv and the energy columns)")] = True
    device: ComponentSpec = _default("dvfs")
    server_j_per_flop: JoulesPerFlop = SERVER_J_PER_FLOP
    battery: Battery | None = None


class Scenario(Section):
    """A whole scenario (see ``scenarios/cellular_100clients.yaml`` for every field with a comment)."""

    name: str = "scenario"
    seed: Annotated[int, Field(ge=0, lt=2**63), Allowed("an integer >= 0 (below 2**63)")] = 0
    rounds: PositiveInt = 40
    max_sim_time_s: Annotated[float, Number(0, low_open=True, unit="simulated s")] | None = None
    eval_every_rounds: PositiveInt = 1
    eval_every_sim_s: Annotated[float, Number.of_range(SIMULATED_INTERVAL_S)] | None = None
    eval_samples: PositiveInt | None = None
    eval_batch_size: Annotated[PositiveInt | Literal["auto"],
                               Allowed("an integer >= 1, or auto (the default for the run's device)")] = "auto"
    target_accuracies: list[Annotated[Fraction, Allowed("a fraction in (0, 1]")]] = \
        Field(default_factory=lambda: [0.5, 0.6, 0.7, 0.8])
    device: Annotated[DeviceName, OneOf(DeviceName)] = "auto"
    execution: Annotated[ExecutionMode, OneOf(ExecutionMode)] = "auto"
    output_dir: Annotated[str, Field(min_length=1), Allowed("a non-empty path")] = "runs/scenario"
    algorithms: Annotated[list[AlgorithmSpec], Field(min_length=1), Allowed("a non-empty list of component specs")] = \
        Field(default_factory=lambda: [AlgorithmSpec(name="scala")])
    training: Training = Field(default_factory=Training)
    data: Data = Field(default_factory=Data)
    model: ModelSection = Field(default_factory=ModelSection)
    clients: Clients = Field(default_factory=Clients)
    stragglers: Stragglers = Field(default_factory=Stragglers)
    server: Server = Field(default_factory=Server)
    cell: CellSection = Field(default_factory=CellSection)
    metrics: Metrics = Field(default_factory=Metrics)
    energy: EnergySection = Field(default_factory=EnergySection)
    compression: Compression | None = None

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        # A scenario without compression writes no compression key (its scenario.yaml stays as it
        # was); one with it writes the paths it sets.
        data = handler(self)
        data.pop("compression", None)
        if self.eval_every_sim_s is None:  # unset: scenario.yaml stays as it was before the field
            data.pop("eval_every_sim_s", None)
        if self.compression is not None:
            data["compression"] = self.compression.as_dict()
        return data

    @model_validator(mode="after")
    def _cross_fields(self) -> Scenario:
        c = self.clients
        if c.compute_flops_per_s_max < c.compute_flops_per_s_min:
            raise CrossFieldError("clients.compute_flops_per_s_max", c.compute_flops_per_s_max,
                                   f"a number >= clients.compute_flops_per_s_min ({c.compute_flops_per_s_min!r})")
        battery = self.energy.battery
        if battery is not None and battery.capacity_max_j < battery.capacity_min_j:
            raise CrossFieldError("energy.battery.capacity_max_j", battery.capacity_max_j,
                                   f"a number >= energy.battery.capacity_min_j ({battery.capacity_min_j!r})")
        if battery is not None and not self.energy.enabled:  # the ledger charges the batteries
            raise CrossFieldError("energy.enabled", False, "true when energy.battery is set (the energy ledger "
                                   "charges the batteries; without it they would be ignored)")
        if self.stragglers.policy == "deadline" and self.stragglers.deadline_s is None:
            raise CrossFieldError("stragglers.deadline_s", None, "a number > 0 (simulated seconds per local "
                                   "iteration) when stragglers.policy is deadline")
        labels = [a.label for a in self.algorithms]
        if len(set(labels)) != len(labels):
            raise CrossFieldError("algorithms", labels, "distinct labels (set 'label' to tell runs apart)",
                                   what="labels")
        for i, spec in enumerate(self.algorithms):
            try:
                merge_training(self.training, spec.training)
            except ValidationError as exc:  # e.g. eta_min above the rate this algorithm overrides
                raise CrossFieldError(f"algorithms[{i}].training", "", "").with_message(
                    f"algorithms[{i}].training.{format_validation_error(exc, Training)} (merged with training:)") \
                    from None
        return self

    def algorithm(self, label: str) -> AlgorithmSpec:
        """The algorithm spec whose run label is ``label``."""
        for spec in self.algorithms:
            if spec.label == label:
                return spec
        raise KeyError(label)

    def training_for(self, label: str) -> Training:
        """The training settings of the run of ``label``: ``training:`` with that algorithm's
        ``training:`` block applied (:func:`merge_training`)."""
        return merge_training(self.training, self.algorithm(label).training)

    def compression_for(self, label: str) -> dict[str, tuple[str, CompressorSpec] | None]:
        """Each path's compressor of the run of ``label`` with the scenario field it comes from
        (``algorithms[i].compression.activations`` or ``compression.activations``), or None:
        the algorithm's ``compression:`` paths win over the top-level block's."""
        spec = self.algorithm(label)
        out: dict[str, tuple[str, CompressorSpec] | None] = {}
        for path, source in merge_compression(self.compression, spec.compression).items():
            if source == "own":
                out[path] = (f"algorithms[{self.algorithms.index(spec)}].compression.{path}",
                             getattr(spec.compression, path))
            elif source == "shared":
                out[path] = (f"compression.{path}", getattr(self.compression, path))
            else:
                out[path] = None
        return out

    def to_yaml_dict(self) -> dict[str, Any]:
        """The scenario as plain YAML-able data (components flattened back to ``{name, **params}``)."""
        return self.model_dump(mode="json")
