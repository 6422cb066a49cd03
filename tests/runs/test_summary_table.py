"""sfl_sim.analysis.comparison: the comparison printed in 80 columns and written as summary.csv / summary.md."""
from __future__ import annotations

import csv

from sfl_sim.analysis.comparison import CSV_COLUMNS, csv_rows, format_tables, markdown, write_summary_files
from sfl_sim.analysis.tta import tta_column_name


def summary(label: str, **changes) -> dict:
    base = {"label": label, "algorithm": "scala", "seed": 0, "status": "complete",
            "evaluated": "global model on the test set", "device": "cpu", "rounds_completed": 150,
            "rounds_planned": 150, "client_updates": 1500, "final_test_accuracy": 0.81234, "best_test_accuracy": 0.8255,
            "final_sim_time_s": 1234567.8, "host_time_s": 6123.4, "uplink_bytes": 123456789012,
            "downlink_bytes": 23456789012, "client_flops": 1.2e15, "server_flops": 3.4e15,
            "client_energy_j": 54321.0, "client_rounds": 1500, "dropped_clients": 0, "drop_rate": 0.0,
            "dropped_clients_by_cause": {}, "rounds_all_lost": 0, "uplink_attempts": 15000, "outage_rate": 0.0,
            "retransmissions": 0, "dropped_transmissions": 0, "harq_retransmissions": 0.0, "warnings": [],
            "time_to_accuracy_s": {"0.5": 12345.6, "0.6": 23456.7, "0.7": None, "0.8": None}}
    return {**base, **changes}


def test_printed_tables_fit_80_columns_even_with_long_labels():
    runs = [summary("scala"), summary("a_label_far_longer_than_any_column_should_be_allowed", algorithm="fedavg",
                                      evaluated="mean over the latest cohort's auxiliary models")]
    text = format_tables(runs)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "a_label_far_longer_than_any_column_should_be_allowed" in text  # whole in the tta table or note


def test_time_to_accuracy_is_a_table_of_its_own_one_row_per_run_one_column_per_target():
    text = format_tables([summary("scala"), summary("fedavg", time_to_accuracy_s={"0.5": 99.0, "0.6": None,
                                                                                  "0.7": None, "0.8": None})])
    lines = text.splitlines()
    head = lines.index("simulated time to accuracy (s; - = not reached)")
    assert lines[head + 1].split() == ["run", "0.5", "0.6", "0.7", "0.8"]
    assert lines[head + 2].split() == ["scala", "12,346", "23,457", "-", "-"]
    assert lines[head + 3].split() == ["fedavg", "99.0", "-", "-", "-"]  # a decimal below 100 s
    assert lines[0].split()[:5] == ["run", "rounds", "updates", "final", "acc"]


def test_csv_rows_carry_the_summary_numbers_under_their_own_names():
    columns, rows = csv_rows([summary("scala"), {}])  # an empty summary (nothing to report) is skipped
    assert columns == list(CSV_COLUMNS) + [tta_column_name(t) for t in (0.5, 0.6, 0.7, 0.8)]
    (row,) = rows
    assert {k: row[k] for k in CSV_COLUMNS} == {k: summary("scala")[k] for k in CSV_COLUMNS}
    assert row[tta_column_name(0.5)] == 12345.6 and row[tta_column_name(0.7)] is None


def test_written_files_round_trip_the_numbers(tmp_path):
    csv_path, md_path = write_summary_files([summary("scala"), summary("fedavg", seed=3)], tmp_path / "new")
    with csv_path.open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["label"] for r in rows] == ["scala", "fedavg"]
    assert float(rows[0]["final_sim_time_s"]) == 1234567.8 and int(rows[1]["seed"]) == 3
    assert rows[0][tta_column_name(0.8)] == ""
    md = md_path.read_text()
    assert md == markdown([summary("scala"), summary("fedavg", seed=3)])
    assert "| scala | scala | 0 | complete | 150 | 1500 | 0.8123 |" in md and "# Simulated time to accuracy (s)" in md


def test_the_printout_has_the_client_energy_column_when_it_fits_and_the_files_always():
    small = dict(final_sim_time_s=812.3, host_time_s=61.0, uplink_bytes=1.2e6, downlink_bytes=3.4e5)
    text = format_tables([summary("scala", **small), summary("fedavg", client_energy_j=None, **small)])
    assert text.splitlines()[0].split()[-2:] == ["client", "J"]
    assert text.splitlines()[1].split()[-1] == "5.43e+04" and text.splitlines()[2].split()[-1] == "-"
    assert "client J: joules all clients spent" in text
    wide = format_tables([summary("a_label_far_longer_than_any_column_should_be_allowed")])
    assert "client J" not in wide and max(len(line) for line in wide.splitlines()) <= 80
    assert "client J" in markdown([summary("scala")]) and "client_energy_j" in CSV_COLUMNS


LOSSY = dict(client_rounds=300, client_updates=59, dropped_clients=241, drop_rate=241 / 300, rounds_all_lost=2,
             uplink_attempts=900, outage_rate=0.3, retransmissions=32, dropped_transmissions=238,
             harq_retransmissions=45.0,
             dropped_clients_by_cause={"deadline": 3, "outage": 238})


def test_drops_reach_the_printout_the_csv_and_the_markdown_with_the_note_once():
    small = dict(final_sim_time_s=812.3, host_time_s=61.0, uplink_bytes=1.2e9, downlink_bytes=3.4e8)
    text = format_tables([summary("scala", **LOSSY, **small), summary("fedavg", **small)])
    # printed when a run dropped clients, before the client energy (which no longer fits here)
    assert text.splitlines()[0].split()[-2:] == ["drop", "%"] and "client J" not in text
    assert text.splitlines()[1].split()[-1] == "80.3" and text.splitlines()[2].split()[-1] == "0.0"
    runs = [summary("scala", **LOSSY), summary("fedavg")]
    text = format_tables(runs)  # wide numbers: no room for the column, the note says it
    assert "drop %" not in text and max(len(line) for line in text.splitlines()) <= 80
    flat = " ".join(text.split())
    assert flat.count("drops shorten rounds") == 1 and "scala 241 of 300 client-rounds" in flat
    assert "fedavg 0 of" not in flat
    columns, rows = csv_rows(runs)
    assert columns[len(CSV_COLUMNS):len(CSV_COLUMNS) + 2] == ["dropped_deadline_clients", "dropped_outage_clients"]
    assert rows[0]["dropped_outage_clients"] == 238 and rows[1]["dropped_outage_clients"] == 0
    assert rows[0]["drop_rate"] == 241 / 300 and rows[0]["harq_retransmissions"] == 45.0
    md = markdown(runs)
    assert "| scala | 300 | 3 | 238 | 80.3 | 30.0 | 0.3 | 2 |" in md  # 45 HARQ copies over 150 rounds
    assert "| fedavg | 1500 | 0 | 0 | 0.0 | 0.0 | 0 | 0 |" in md
    assert " ".join(md.split()).count("drops shorten rounds") == 1


def test_a_run_without_drops_prints_no_drop_column_and_no_note():
    text = format_tables([summary("scala"), summary("fedavg")])
    assert "drop %" not in text and "drops shorten rounds" not in text
    assert "drop %" in markdown([summary("scala")])  # the files always have it


def test_a_run_that_lost_every_client_in_every_round_ends_with_a_warning_line():
    lost = summary("scala", **{**LOSSY, "warnings": ["every round lost every selected client (150 of 150 rounds; "
                                                     "deadline 300): no client's work reached the server"]})
    for text in (format_tables([lost]), markdown([lost])):
        assert "warning: scala: every round lost every selected client" in " ".join(text.split())


def test_a_summary_from_before_the_drop_counts_reads_with_empty_cells():
    old = {k: v for k, v in summary("scala").items() if k not in LOSSY and k != "warnings"}
    columns, (row,) = csv_rows([old])
    assert row["drop_rate"] is None and row["client_rounds"] is None
    assert "drop %" not in format_tables([old]) and "| scala | - |" in markdown([old])
