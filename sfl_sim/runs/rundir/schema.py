"""The run-directory schema: file names, CSV headers, ``resolved.yaml``'s keys, run statuses and the
schema version, defined once.

The simulator (:mod:`sfl_sim.runs.rundir.files`) writes run directories with these names and headers and
:mod:`sfl_sim.analysis` reads them; both import this module.  It describes today's shape: a run
directory written by older code is read in this shape through :mod:`sfl_sim.runs.rundir.upgrade`.
It holds constants and the one definition of the best accuracy (:func:`best_trained_accuracy`), and
imports nothing but :mod:`typing`, so ``import sfl_sim.runs.rundir.schema`` is cheap and pulls in
neither pandas, matplotlib, torch nor the engine (``sfl_sim`` may import ``analysis``, never the
reverse).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, get_args

__all__ = [
    "SCHEMA_VERSION",
    "RunStatus",
    "RUNNING",
    "COMPLETE",
    "DIVERGED",
    "FAILED",
    "RUN_STATUSES",
    "StopReason",
    "STOP_REASON",
    "STOPPED_AT_ROUNDS",
    "STOPPED_AT_TIME_BUDGET",
    "SCENARIO_FILE",
    "RESOLVED_FILE",
    "METRICS_FILE",
    "ROUNDS_FILE",
    "SUMMARY_FILE",
    "CELL_FILE",
    "ENERGY_FILE",
    "STALENESS_FILE",
    "STALENESS_COLUMNS",
    "ENERGY_COLUMNS",
    "ENERGY_BATTERY_COLUMN",
    "CLIENTS_FILE",
    "CLIENTS_COLUMNS",
    "SLOTS_COLUMNS",
    "SLOTS_FILE",
    "HANDOVERS_FILE",
    "HANDOVERS_COLUMNS",
    "CLIENTS_NUMERIC_COLUMNS",
    "CLIENT_TIME_COLUMNS",
    "CLIENT_SPAN_COLUMN",
    "CLIENT_KEPT",
    "NO_LOS_STATE",
    "CHECKPOINT_FILE",
    "STUDY_FILE",
    "STUDY_STATUS_FILE",
    "SCENARIO_SUMMARY_CSV",
    "SCENARIO_SUMMARY_MD",
    "SCENARIO_SUMMARY_MD_TITLE",
    "SCENARIO_SUMMARY_CSV_HEADER_START",
    "STUDY_STATUS_HEADER_START",
    "REPORT_README_TITLE",
    "WORK_FILE",
    "WORK_VERSION",
    "WORK_SHA256",
    "RETIMED_FROM",
    "HOST_ONLY_FIELDS",
    "RESOLVED_COMPONENTS",
    "RESOLVED_TRAINING",
    "RESOLVED_ENERGY",
    "RESOLVED_ASYNCHRONY",
    "RESOLVED_COMPRESSION",
    "ENERGY_DEVICE_FIELD",
    "ENERGY_FROM_ROUND",
    "CLASSES_FILE",
    "CLASSES_LEADING_COLUMNS",
    "CLASS_ACCURACY_COLUMN",
    "VACANT_ACCURACY_COLUMN",
    "BEST_ACCURACY_DEFINITION",
    "GLOBAL_MODEL_EVALUATION",
    "METRICS_COLUMNS",
    "ROUNDS_COLUMNS",
    "ROUNDS_NUMERIC_COLUMNS",
    "HOST_TIME_COLUMNS",
    "CUMULATIVE_COLUMNS",
    "CELL_COLUMNS",
    "CELL_REPORT_COLUMNS",
    "FIRST_TRAINED_ROUND",
    "best_trained_accuracy",
    "first_time_reaching_s",
    "classes_columns",
]

#: Version of the run-directory layout, written to ``summary.json`` as ``schema_version``.
SCHEMA_VERSION = 1

#: ``status`` of a run's ``summary.json``: ``running`` until its last round, then ``complete``;
#: ``diverged`` (a non-finite weight or test loss stopped it) or ``failed`` (an error during
#: training), both with an ``error`` line.
RunStatus = Literal["running", "complete", "diverged", "failed"]
RUNNING: RunStatus = "running"
COMPLETE: RunStatus = "complete"
DIVERGED: RunStatus = "diverged"
FAILED: RunStatus = "failed"
#: Every :data:`RunStatus`, in the order above.
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)

#: Why a ``complete`` run stopped, ``summary.json``'s :data:`STOP_REASON`: it ran the scenario's
#: ``rounds``, or its simulated clock reached the scenario's ``max_sim_time_s`` at the end of a round
#: (fewer rounds than planned; every seed of a study then ends at about the same simulated time).
StopReason = Literal["rounds", "max_sim_time_s"]
STOPPED_AT_ROUNDS: StopReason = "rounds"
STOPPED_AT_TIME_BUDGET: StopReason = "max_sim_time_s"
#: The ``summary.json`` key of a complete run's :data:`StopReason`.
STOP_REASON = "stop_reason"

#: The resolved scenario of one run (a YAML mapping).
SCENARIO_FILE = "scenario.yaml"
#: What the run resolved to: every component's full parameters after defaults, its training
#: settings and the versions of the code (a YAML mapping; :mod:`sfl_sim.runs.resolved`).
RESOLVED_FILE = "resolved.yaml"
#: One row per evaluated round, columns :data:`METRICS_COLUMNS`.
METRICS_FILE = "metrics.csv"
#: One row per round, columns :data:`ROUNDS_COLUMNS`.
ROUNDS_FILE = "rounds.csv"
#: One row per evaluated round (the rows of ``metrics.csv``): :data:`CLASSES_LEADING_COLUMNS`,
#: then one :data:`CLASS_ACCURACY_COLUMN` per class.
CLASSES_FILE = "classes.csv"
#: Run-level summary (JSON object carrying ``schema_version``).
SUMMARY_FILE = "summary.json"
#: One row per client, columns :data:`CELL_COLUMNS` in a run directory and
#: :data:`CELL_REPORT_COLUMNS` in the folder of ``sfl-sim channel``.
CELL_FILE = "cell.csv"
#: One row per (round, client of that round's cohort), columns :data:`ENERGY_COLUMNS` (with
#: :data:`ENERGY_BATTERY_COLUMN` after them when batteries are on); written only when the scenario's
#: ``energy.enabled`` is true.
ENERGY_FILE = "energy.csv"
#: One row per update an asynchronous run's server used (per aggregation and contribution),
#: columns :data:`STALENESS_COLUMNS`; written only by asynchronous algorithms.
STALENESS_FILE = "staleness.csv"
#: One row per (round, client of that round's cohort), columns :data:`CLIENTS_COLUMNS`: what the
#: radio did for the client and where its time in the round went; written unless the scenario's
#: ``metrics.client_record`` is false.  An asynchronous run writes a dispatch group's rows under
#: the aggregation at which its last client arrived (each client's span: its dispatch to its arrival).
CLIENTS_FILE = "clients.csv"
#: One row per uplink grant of a slot-form dynamic scheduler, columns :data:`SLOTS_COLUMNS`;
#: written only with ``metrics.slot_trace`` (and a synchronous algorithm).
SLOTS_FILE = "slots.csv"
#: Exact header of ``slots.csv``: the round, the slot's index on the grid (``t = slot * slot_s``)
#: and its start ``time_s``, the client granted, its ``rbs``, the transport block's bits
#: (``tb_bits``), ``failed`` (1: the block failed and its bits went back to the buffer, HARQ) and the
#: ``cell`` whose band granted it (0 with one cell; with ``cell.network``, the client's serving cell
#: when the transfer started: :mod:`sfl_sim.engine.band.cells`).  A file written before ``cell``
#: existed reads it as 0 in a run without ``cell.network``, empty (unknown) in one with it
#: (:func:`sfl_sim.runs.rundir.upgrade.slots_fill`).
SLOTS_COLUMNS: tuple[str, ...] = ("round", "slot", "time_s", "client", "rbs", "tb_bits", "failed", "cell")
#: One row per change of serving cell of a run with ``cell.network``, columns
#: :data:`HANDOVERS_COLUMNS` (:meth:`sfl_sim.channel.network.HandoverTrace.rows`), in time order;
#: rewritten with every summary (every event the radio evaluated so far).
HANDOVERS_FILE = "handovers.csv"
#: Exact header of ``handovers.csv``: when (s), the client, the cell it left and the one it joined
#: (-1: none yet after a radio link failure), the cause (``a3``, ``rlf``) and the time without a link (s).
HANDOVERS_COLUMNS: tuple[str, ...] = ("time_s", "client", "source_cell", "target_cell", "cause", "interruption_s")
#: State to resume from the last evaluated round (torch; never read by :mod:`sfl_sim.analysis`).
CHECKPOINT_FILE = "checkpoint.pt"
#: The study definition at the top of a study directory.
STUDY_FILE = "study.yaml"
#: The study's table of runs at the top of a study directory (one row per run: name, status,
#: coordinates, error), rewritten as runs end.
STUDY_STATUS_FILE = "runs.csv"
#: The end-of-run tables of a scenario's runs, at the top of its output directory (``sfl-sim scenario``).
SCENARIO_SUMMARY_CSV = "summary.csv"
SCENARIO_SUMMARY_MD = "summary.md"
#: The first line of :data:`SCENARIO_SUMMARY_MD` (its first table's title).
SCENARIO_SUMMARY_MD_TITLE = "# Runs"
#: The first cells of :data:`SCENARIO_SUMMARY_CSV`'s header.
SCENARIO_SUMMARY_CSV_HEADER_START = "label,algorithm,seed,status,"
#: The first cells of :data:`STUDY_STATUS_FILE`'s header.
STUDY_STATUS_HEADER_START = "name,status"
#: The first line of a report folder's ``README.md`` (``sfl-sim report``).
REPORT_README_TITLE = "# sfl-sim report"
#: What the engine timed, per round: one JSON object per line, gzip-compressed, appended round by
#: round (a gzip member each; :mod:`sfl_sim.runs.rundir.work`).  Each line is a
#: :class:`sfl_sim.engine.record.RoundRecord` (``round``, ``cohort``, ``processes``, ``draws``,
#: ``unreplayable`` where set); the first line is a header ``{"work_version": WORK_VERSION}``.
#: Plain data only: reading it never runs code.  ``sfl-sim retime`` replays it.
WORK_FILE = "work.jsonl.gz"
#: Layout version of :data:`WORK_FILE` (its header line).
WORK_VERSION = 1
#: Key of a complete run's ``summary.json``: the SHA-256 (hex) of its :data:`WORK_FILE`'s lines,
#: decompressed (:func:`sfl_sim.runs.rundir.work.digest`), which binds the record to the run.
WORK_SHA256 = "work_sha256"
#: Key of a re-timed run's ``resolved.yaml``: the run directory it was re-timed from, and the
#: fields that were changed (``{"run": path, "set": {field: value}}``).
RETIMED_FROM = "retimed_from"

#: Fields of a run's ``scenario.yaml`` that decide only how the host works or what the run
#: records, never what it computes: where its files go, the device and execution path asked for,
#: evaluation batching, host threads (asked for and used) and the optional measurements
#: (``metrics``).  A resume may change them (:mod:`sfl_sim.runs.rundir.files`) and a study never counts
#: them as part of a setting (:mod:`sfl_sim.analysis.study_data`).  A field covers every field below it.
HOST_ONLY_FIELDS: tuple[str, ...] = (
    "output_dir",
    "eval_batch_size",
    "training.torch_threads",
    "torch_threads_used",
    "device",
    "execution",
    "metrics",
)

#: Keys of ``resolved.yaml`` (written by :mod:`sfl_sim.runs.resolved`, which documents its layout):
#: the components (keyed by the scenario field naming each), the training settings, the ``energy:``
#: section and the compression paths the run applies.
RESOLVED_COMPONENTS = "components"
RESOLVED_TRAINING = "training"
RESOLVED_ENERGY = "energy"
RESOLVED_COMPRESSION = "compression"
#: In ``resolved.yaml``'s algorithm component: what an asynchronous algorithm's policy resolved to
#: (``concurrency``, ``buffer_size``, ``period_s``, ``refill``: a ``null`` default as its number).
RESOLVED_ASYNCHRONY = "resolved"
#: The component of ``resolved.yaml`` that charges the run's energy (only when ``energy.enabled``).
ENERGY_DEVICE_FIELD = "energy.device"
#: In ``resolved.yaml``'s ``energy``: the first round charged under it, where that is not round 1
#: (energy accounting adopted by a resume); not compared between records.
ENERGY_FROM_ROUND = "from_round"

#: Exact header of ``metrics.csv``, in order. Bytes and FLOPs are cumulative since the start of
#: the run; ``sim_time_s`` is the simulated clock, ``host_time_s`` cumulative host seconds.
METRICS_COLUMNS: tuple[str, ...] = (
    "round",
    "sim_time_s",
    "test_accuracy",
    "test_loss",
    "uplink_bytes",
    "downlink_bytes",
    "client_flops",
    "server_flops",
    "host_time_s",
)

#: Exact header of ``rounds.csv``, in order. Bytes, FLOPs and counts are *of that round*;
#: ``sim_time_s`` is the clock at the round's end, ``round_sim_time_s`` its duration;
#: ``round_host_time_s`` the host seconds the round took (training, and on an evaluated round its
#: evaluation and rows, up to the checkpoint write);
#: ``uplink_attempts`` the uplink transmissions started (every attempt of every payload, the
#: retransmissions included; ``retransmissions + dropped_transmissions`` of them failed, so their
#: ratio is the round's outage rate; empty in rows written before the column existed);
#: ``harq_retransmissions`` the HARQ copies of transport blocks beyond the first (``cell.harq``; its
#: expected value, a real number, in mode ``expected``; 0 without HARQ);
#: ``online_clients`` how many clients were online when the cohort was selected (all without
#: ``clients.availability``), ``unavailable_clients`` how many of the cohort went offline during
#: the round (also among ``dropped_clients``), ``availability_wait_s`` how long the round waited,
#: within ``round_sim_time_s``, for anyone to come online; ``uplink_rb_load`` the fraction of the
#: uplink's resource-block time with a transmission on it during the round
#: (:meth:`RoundContext.uplink_load <sfl_sim.engine.RoundContext.uplink_load>`; empty for an
#: asynchronous run and in rows written before the column existed); with ``server.edge``
#: (:mod:`sfl_sim.engine.edge`; 0 without it, empty in rows written before the columns existed):
#: ``handovers`` the handovers of cohort clients still in the round, ``handover_lost_s`` the seconds
#: they lost to them (each handover's interruption plus a migration's backhaul time, summed over the
#: clients), ``migrations`` the server-side states moved edge to edge, ``handover_drops`` the clients
#: a handover dropped (also among ``dropped_clients``, reason ``handover``), ``backhaul_bytes`` the
#: bytes over the backhaul (every ``backhaul/...`` kind: migrations, the sequential server's w_s
#: moves, cloud-step payloads, and each cell's aggregate up and the global model down),
#: ``backhaul_energy_j`` their energy, ``8 x backhaul_bytes x server.edge.backhaul_j_per_bit``, J
#: (:func:`sfl_sim.clients.energy.backhaul_energy_j`; 0 without ``server.edge``, empty without an
#: energy ledger and in rows written before the column existed);
#: ``cohort`` is space-separated client ids, ``dropped`` space-separated ``client:reason``.
ROUNDS_COLUMNS: tuple[str, ...] = (
    "round",
    "sim_time_s",
    "round_sim_time_s",
    "round_host_time_s",
    "uplink_bytes",
    "downlink_bytes",
    "client_flops",
    "server_flops",
    "uplink_attempts",
    "retransmissions",
    "dropped_transmissions",
    "dropped_clients",
    "harq_retransmissions",
    "online_clients",
    "unavailable_clients",
    "availability_wait_s",
    "client_energy_j",
    "uplink_rb_load",
    "handovers",
    "handover_lost_s",
    "migrations",
    "handover_drops",
    "backhaul_bytes",
    "backhaul_energy_j",
    "cohort",
    "dropped",
)

#: Exact header of ``energy.csv`` (without batteries), in order: per round and cohort client, the
#: joules it spent computing, transmitting (every attempt), receiving and waiting (idle time in the
#: round, plus the RRC tail past its end when the energy model has one), and their sum.
#: ``client_energy_j`` of ``rounds.csv`` is the sum of ``total_j`` over the round's rows; empty
#: when the run had no energy ledger.
ENERGY_COLUMNS: tuple[str, ...] = ("round", "client", "compute_j", "uplink_j", "downlink_j", "idle_j", "total_j")
#: Exact header of ``staleness.csv``, in order: ``round`` is the model version the aggregation
#: produced (its ``rounds.csv`` row), ``client`` whose update it used, ``dispatch`` the update's
#: place among the run's dispatches (0, 1, ...), ``start_version`` the version the client trained
#: from, ``staleness`` the aggregations between (``round - 1 - start_version``), ``dispatched_s``
#: and ``arrived_s`` when it was sent the model and when its update arrived (simulated seconds).
STALENESS_COLUMNS: tuple[str, ...] = ("round", "client", "dispatch", "start_version", "staleness", "dispatched_s",
                                      "arrived_s")
#: The column after :data:`ENERGY_COLUMNS` when batteries are on: the client's charge left at the
#: round's end, J.
ENERGY_BATTERY_COLUMN = "battery_j"

#: ``los`` of a client whose path-loss model has no LOS state (1: LOS, 0: NLOS otherwise).
NO_LOS_STATE = -1

#: ``outcome`` in ``clients.csv`` of a client whose payloads the server used; any other value is
#: why it was dropped (``rounds.csv``'s ``dropped`` reasons: ``outage``, ``deadline``,
#: ``over_selection``, ``unavailable``, ``battery``).
CLIENT_KEPT = "kept"

#: Where a client's time in a round went, seconds: the parts add up to :data:`CLIENT_SPAN_COLUMN`
#: (each instant of the span counts once, for the first of these that applies):
#:
#: ``compute_s``           computing (its ``compute`` steps);
#: ``uplink_air_s``        on the air uplink (every attempt, failed ones too; HARQ copies included);
#: ``harq_wait_s``         waiting for HARQ feedback between the copies of a transport block;
#: ``downlink_s``          receiving (its unicasts and the round's broadcasts);
#: ``wait_server_s``       idle while the server computes (its own request or another client's);
#: ``wait_others_s``       idle while the server does not compute: waiting for the other clients;
#: ``availability_wait_s`` the wait, at the round's start, for anyone to come online
#:                         (``rounds.csv``'s ``availability_wait_s``; 0 without ``clients.availability``).
CLIENT_TIME_COLUMNS: tuple[str, ...] = (
    "compute_s",
    "uplink_air_s",
    "harq_wait_s",
    "downlink_s",
    "wait_server_s",
    "wait_others_s",
    "availability_wait_s",
)

#: A client's span in its round, seconds: from the round's start (before any wait for clients to
#: come online) to the end of the client's part of it, which is the round's end, or the moment it
#: left early (its payload lost after outage, its battery empty, it went offline).  The longest span
#: of a round is the round's duration (``round_sim_time_s``) whenever a client stayed to its end.
CLIENT_SPAN_COLUMN = "span_s"

#: Exact header of ``clients.csv``, in order; one row per round and cohort client, in cohort order.
#:
#: * ``cell``: its serving cell at the round's start (0 with one cell; with ``cell.network`` -1 while
#:   it had no link then); a run directory older than the column reads it 0 without ``cell.network``
#:   (one cell), empty with one (unknown: :func:`sfl_sim.runs.rundir.upgrade.log_fill`);
#: * ``outcome``: :data:`CLIENT_KEPT`, or why the client was dropped (the first reason recorded);
#: * the large-scale channel during the round: ``distance_m``, ``los`` (1, 0, or
#:   :data:`NO_LOS_STATE`), ``pathloss_db``, ``shadowing_db``;
#: * its uplink as it stood at the round's end: the share it held (``uplink_share_hz``), the
#:   transmit power on it (``tx_power_w``) and the fading draw its rate was last computed with (its
#:   last upload attempt's; the round's draw when it sent nothing): ``fading_gain_db``,
#:   ``snr_db`` (signal over thermal noise), ``sinr_db`` (with the round's interference; equal to
#:   ``snr_db`` without), ``cqi`` (empty unless the rate model has CQIs, ``cell.rate: mcs_table``;
#:   0 below CQI 1), ``spectral_efficiency_bps_per_hz`` (rate over share) and ``uplink_rate_bps``
#:   (a device trace's rate where one is given).  With a dynamic ``cell.scheduler`` these describe
#:   the round's static share, which the outage rule judges: what the scheduler did is in the grant
#:   columns;
#: * what a dynamic ``cell.scheduler`` granted it on the uplink (empty with ``static``, the
#:   default; from a client that sent nothing through the band only ``uplink_rb_s``, 0):
#:   ``uplink_granted_rb_mean`` (RBs on average over its time in the band: its transfers' first bit
#:   to last, waits for a grant counted as 0), ``uplink_rb_s`` (RB-seconds granted),
#:   ``uplink_transport_blocks`` (transport blocks granted, failed HARQ blocks included; empty in
#:   the ``fluid`` form, which has none), ``uplink_scheduled_rate_bps`` (bits sent on its grants
#:   over its time in the band) and ``uplink_sinr_used_db`` (the SINR of its grants, the mean of
#:   the dB values weighted by the time it held RBs); a run directory older than these columns
#:   reads them empty;
#: * ``downlink_rate_bps``: its unicast downlink rate in the round (empty with ``ideal`` downlink);
#: * the channel in time: ``speed_m_per_s``, the speed its fading's Doppler is computed from (a
#:   time-varying fading's fixed ``speed_m_per_s`` when set, a drop-based evaluation; else the radio
#:   state's nominal speed of its mobility: a timed mobility's nominal speed, a step model's
#:   top speed, 0 for static clients); ``doppler_hz``, the maximum Doppler ``f_D = v f_c / c`` the
#:   time-varying fading runs at (empty without one); ``fading_gain_uploads_db``, the fading power
#:   gain at the start of each of its uplink transfers in the round (every attempt, every HARQ
#:   copy), the linear mean over them in dB: a time-varying fading's gains at those times (empty
#:   when it sent nothing), otherwise ``fading_gain_db`` (the per-transfer draws are not kept); a
#:   run directory older than these columns reads them empty;
#: * what it sent and received, as ``rounds.csv`` counts them (each column sums over the round's rows
#:   to that round's ``rounds.csv`` value): ``uplink_attempts``, ``retransmissions``,
#:   ``dropped_transmissions``, ``harq_retransmissions``, ``uplink_bytes``, ``downlink_bytes``,
#:   ``client_flops``;
#: * :data:`CLIENT_SPAN_COLUMN` and its parts, :data:`CLIENT_TIME_COLUMNS`.
CLIENTS_COLUMNS: tuple[str, ...] = (
    "round",
    "client",
    "cell",
    "outcome",
    "distance_m",
    "los",
    "pathloss_db",
    "shadowing_db",
    "fading_gain_db",
    "snr_db",
    "sinr_db",
    "cqi",
    "spectral_efficiency_bps_per_hz",
    "uplink_share_hz",
    "tx_power_w",
    "uplink_rate_bps",
    "downlink_rate_bps",
    "uplink_granted_rb_mean",
    "uplink_rb_s",
    "uplink_transport_blocks",
    "uplink_scheduled_rate_bps",
    "uplink_sinr_used_db",
    "speed_m_per_s",
    "doppler_hz",
    "fading_gain_uploads_db",
    "uplink_attempts",
    "retransmissions",
    "dropped_transmissions",
    "harq_retransmissions",
    "uplink_bytes",
    "downlink_bytes",
    "client_flops",
    CLIENT_SPAN_COLUMN,
    *CLIENT_TIME_COLUMNS,
)

#: The numeric columns of ``clients.csv`` (all but ``outcome``).
CLIENTS_NUMERIC_COLUMNS: tuple[str, ...] = tuple(c for c in CLIENTS_COLUMNS if c != "outcome")

#: The numeric columns of ``rounds.csv`` (all but ``cohort`` and ``dropped``).
ROUNDS_NUMERIC_COLUMNS: tuple[str, ...] = ROUNDS_COLUMNS[:-2]

#: The host-time columns (``metrics.csv``'s cumulative, ``rounds.csv``'s per round): they differ
#: from run to run of the same seed, every other column does not.
HOST_TIME_COLUMNS: tuple[str, ...] = ("host_time_s", "round_host_time_s")

#: The traffic and compute counters, cumulative in ``metrics.csv``, per round in ``rounds.csv``.
CUMULATIVE_COLUMNS: tuple[str, ...] = ("uplink_bytes", "downlink_bytes", "client_flops", "server_flops")

#: Exact header of a run's ``cell.csv``: per client its position, distance, path loss, shadowing,
#: SNR and uplink rate on an equal share of the band among the cohort
#: (``round(clients.count * clients.participation)`` clients, no fading), compute budget, local
#: data size and number of classes held; then the SINR there (``snr_db`` is signal over thermal
#: noise only, the same without interference) and the power control's transmit power (W).
CELL_COLUMNS: tuple[str, ...] = (
    "client",
    "x_m",
    "y_m",
    "distance_m",
    "pathloss_db",
    "shadowing_db",
    "snr_db",
    "uplink_rate_bps",
    "compute_flops_per_s",
    "data_samples",
    "classes_held",
    "sinr_db",
    "tx_power_w",
)

#: Exact header of the ``cell.csv`` of ``sfl-sim channel`` (the cell alone, without training):
#: the radio columns of :data:`CELL_COLUMNS` plus ``los`` (1 LOS, 0 NLOS, -1 when the path-loss
#: model has no LOS state) and the uplink rate on the cohort's share (``uplink_rate_bps`` of a
#: run's ``cell.csv``) next to the rate on the whole band; then the SINR on the share (``snr_db``
#: is signal over thermal noise only), the CQI and its TS 38.214 table efficiency there (empty
#: unless ``cell.rate`` is ``mcs_table``) and the power control's transmit power (W);
#: with an MCS rate model (``mcs_table``) the error rate of a first transmission of one slot's
#: transport block at the client's CQI (``bler``) and its expected HARQ transmissions
#: (``expected_transmissions``), ``nan`` otherwise.
CELL_REPORT_COLUMNS: tuple[str, ...] = (
    "client",
    "x_m",
    "y_m",
    "distance_m",
    "los",
    "pathloss_db",
    "shadowing_db",
    "snr_db",
    "uplink_rate_cohort_share_bps",
    "uplink_rate_full_band_bps",
    "bler",
    "expected_transmissions",
    "sinr_db",
    "cqi",
    "mcs_efficiency_bps_per_hz",
    "tx_power_w",
)

#: ``local_vacant_class_accuracy``: accuracy of the round's locally trained models on their vacant
#: classes (FedVLS): per aggregated client, the mean over the classes absent from its local data of
#: its model's accuracy on that class's test images (before aggregation); averaged over those clients
#: with a vacant class. Measured only when the scenario sets ``metrics.local_vacant_class_accuracy``
#: (the column is always there); empty otherwise, and where the algorithm has no local models or no
#: client has a vacant class.
VACANT_ACCURACY_COLUMN = "local_vacant_class_accuracy"

#: The columns of ``classes.csv`` before the per-class ones.
CLASSES_LEADING_COLUMNS: tuple[str, ...] = ("round", VACANT_ACCURACY_COLUMN)

#: Per-class test accuracy column of ``classes.csv``: ``CLASS_ACCURACY_COLUMN.format(n)`` for class
#: ``n`` (0-based), the fraction of that class's test samples the evaluated model gets right
#: (empty for a class without test samples, or when the algorithm reports no per-class accuracy).
CLASS_ACCURACY_COLUMN = "class_{}_accuracy"

#: ``evaluated`` in ``summary.json`` of a run whose accuracy is its global model's (the algorithm's
#: ``evaluation_description``); any other value names what was scored instead.
GLOBAL_MODEL_EVALUATION = "global model on the test set"

#: The first round that trained; the row of round 0 scores the initial model.
FIRST_TRAINED_ROUND = 1

#: What ``best_test_accuracy`` in ``summary.json`` (and the report's best accuracy) is.
BEST_ACCURACY_DEFINITION = (
    "max of test_accuracy over the evaluated trained rounds (round >= 1) of metrics.csv; the round-0 "
    "evaluation of the initial model is left out (the papers' 'maximum accuracy achieved during training')"
)


def best_trained_accuracy(rounds: Iterable[float], accuracies: Iterable[float]) -> tuple[float, int] | None:
    """The best test accuracy over the trained rounds and the first round reaching it.

    :data:`BEST_ACCURACY_DEFINITION`: the maximum of ``test_accuracy`` over the rows whose round
    is at least :data:`FIRST_TRAINED_ROUND`; a NaN accuracy (not measured) is skipped.

    Parameters
    ----------
    rounds, accuracies : iterables of float
        The ``round`` and ``test_accuracy`` columns of ``metrics.csv``, row by row in file order.

    Returns
    -------
    (float, int) or None
        The best accuracy and the round of the first row that reached it; None without any
        trained row.
    """
    best: tuple[float, int] | None = None
    for rnd, acc in zip(rounds, accuracies, strict=True):
        if rnd >= FIRST_TRAINED_ROUND and acc == acc and (best is None or acc > best[0]):
            best = (float(acc), int(rnd))
    return best


def first_time_reaching_s(rounds: Iterable[float], times_s: Iterable[float], accuracies: Iterable[float],
                          target_accuracy: float) -> float | None:
    """Time to accuracy: the simulated time of the first evaluated row, in round order, whose
    ``test_accuracy >= target_accuracy`` (a NaN accuracy never reaches it); None when no row does.

    Parameters
    ----------
    rounds, times_s, accuracies : iterables of float
        The ``round``, ``sim_time_s`` and ``test_accuracy`` columns of ``metrics.csv``.
    target_accuracy : float
        A fraction in [0, 1].
    """
    rows = sorted(zip(rounds, times_s, accuracies, strict=True),
                  key=lambda r: r[0])  # stable: file order within a round
    for _, t, acc in rows:
        if acc >= target_accuracy:
            return float(t)
    return None


def classes_columns(num_classes: int) -> tuple[str, ...]:
    """Exact header of ``classes.csv`` for ``num_classes`` classes (none for a negative count)."""
    return (*CLASSES_LEADING_COLUMNS, *(CLASS_ACCURACY_COLUMN.format(n) for n in range(max(num_classes, 0))))
