"""The run-directory schema: file names, CSV headers and the schema version, defined once.

The simulator (:mod:`sfl_sim.results`) writes run directories with these names and headers and
:mod:`analysis` reads them; both import this module. It holds constants only and imports nothing,
so ``import analysis.schema`` is cheap and pulls in neither pandas, matplotlib, torch nor the
engine (``sfl_sim`` may import ``analysis``, never the reverse).
"""

from __future__ import annotations

__all__ = [
    "SCHEMA_VERSION",
    "SCENARIO_FILE",
    "METRICS_FILE",
    "ROUNDS_FILE",
    "SUMMARY_FILE",
    "CELL_FILE",
    "CHECKPOINT_FILE",
    "STUDY_FILE",
    "METRICS_COLUMNS",
    "ROUNDS_COLUMNS",
    "ROUNDS_NUMERIC_COLUMNS",
    "CUMULATIVE_COLUMNS",
]

#: Version of the run-directory layout, written to ``summary.json`` as ``schema_version``.
SCHEMA_VERSION = 1

#: The resolved scenario of one run (a YAML mapping).
SCENARIO_FILE = "scenario.yaml"
#: One row per evaluated round, columns :data:`METRICS_COLUMNS`.
METRICS_FILE = "metrics.csv"
#: One row per round, columns :data:`ROUNDS_COLUMNS`.
ROUNDS_FILE = "rounds.csv"
#: Run-level summary (JSON object carrying ``schema_version``).
SUMMARY_FILE = "summary.json"
#: One row per client: position, path loss, SNR, rate, compute budget, data held.
CELL_FILE = "cell.csv"
#: State to resume from the last evaluated round (torch; never read by :mod:`analysis`).
CHECKPOINT_FILE = "checkpoint.pt"
#: The study definition at the top of a study directory.
STUDY_FILE = "study.yaml"

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
#: ``cohort`` is space-separated client ids, ``dropped`` space-separated ``client:reason``.
ROUNDS_COLUMNS: tuple[str, ...] = (
    "round",
    "sim_time_s",
    "round_sim_time_s",
    "uplink_bytes",
    "downlink_bytes",
    "client_flops",
    "server_flops",
    "retransmissions",
    "dropped_transmissions",
    "dropped_clients",
    "cohort",
    "dropped",
)

#: The numeric columns of ``rounds.csv`` (all but ``cohort`` and ``dropped``).
ROUNDS_NUMERIC_COLUMNS: tuple[str, ...] = ROUNDS_COLUMNS[:-2]

#: The traffic and compute counters, cumulative in ``metrics.csv``, per round in ``rounds.csv``.
CUMULATIVE_COLUMNS: tuple[str, ...] = ("uplink_bytes", "downlink_bytes", "client_flops", "server_flops")
