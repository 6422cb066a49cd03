"""An exception's message on one line: the one helper every one-line error goes through."""
from __future__ import annotations

from sfl_sim.kit.checks import one_line


def test_one_line_collapses_whitespace_and_names_an_empty_message_by_its_type() -> None:
    assert one_line(ValueError("a\n  b\tc ")) == "a b c"
    assert one_line(ValueError("a\nb"), with_type=True) == "ValueError: a b"
    assert one_line(KeyError()) == "KeyError" == one_line(KeyError(), with_type=True)
