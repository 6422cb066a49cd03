"""sfl_sim.runs.progress: a header line per run, plain evaluation lines off a terminal, a bar on one."""
from __future__ import annotations

import io
from pathlib import Path

from sfl_sim.runs.progress import RunProgress, evaluation_line, header_line


class TerminalStream(io.StringIO):
    def isatty(self) -> bool:
        return True


def _drive(progress: RunProgress, start_round: int = 0) -> None:
    progress.start("demo", "scala", (2, 3), "cpu", Path("runs/demo/scala"), 4, start_round)
    for rnd in range(start_round + 1, 5):
        if rnd % 2 == 0:
            progress.evaluated(rnd, 1234.5 * rnd, 0.5 + rnd / 100, host_time_s=10.0 * rnd)
        progress.advance()
    progress.close()


def test_header_names_scenario_run_position_device_output_and_rounds():
    line = header_line("demo", "scala", (2, 3), "cuda:0", Path("runs/demo/scala"), 150)
    assert line == "scenario demo: run 2/3 scala on cuda:0, 150 rounds, output runs/demo/scala"
    assert "resuming after round 40" in header_line("demo", "scala", (1, 1), "cpu", "d", 150, start_round=40)


def test_off_a_terminal_one_plain_line_per_evaluation_and_no_carriage_return():
    out = io.StringIO()
    _drive(RunProgress(stream=out))
    text = out.getvalue()
    assert "\r" not in text
    assert text.splitlines() == [
        header_line("demo", "scala", (2, 3), "cpu", Path("runs/demo/scala"), 4),
        evaluation_line("scala", 2, 4, 2469.0, 0.52, 20.0),
        evaluation_line("scala", 4, 4, 4938.0, 0.54, 40.0),
    ]
    assert text.splitlines()[1] == "scala: round 2/4, sim 2,469.0 s, acc 0.5200, host 20.0 s"


def test_on_a_terminal_a_bar_with_rounds_simulated_time_and_accuracy():
    out = TerminalStream()
    _drive(RunProgress(stream=out), start_round=1)
    text = out.getvalue()
    assert text.startswith(header_line("demo", "scala", (2, 3), "cpu", Path("runs/demo/scala"), 4, 1) + "\n")
    assert "\r" in text and "4/4" in text and "sim 4,938.0 s, acc 0.540" in text
    assert "round 2/4" not in text  # no plain lines on a terminal


def test_disabled_prints_nothing():
    for stream in (io.StringIO(), TerminalStream()):
        _drive(RunProgress(enabled=False, stream=stream))
        assert stream.getvalue() == ""
