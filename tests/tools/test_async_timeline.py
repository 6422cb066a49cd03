"""tools/async_timeline.py: it makes a tiny default FedBuff run and draws its timeline (the docs' figure)."""
import subprocess
import sys
from pathlib import Path

import pytest

#: End-to-end runs of the real training (each takes a second or more): the inner loop leaves them out.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_timeline_script_draws_a_real_run(tmp_path: Path) -> None:
    out = tmp_path / "timeline.png"
    subprocess.run([sys.executable, str(ROOT / "tools" / "async_timeline.py"), "-o", str(out)], check=True,
                   capture_output=True, text=True, cwd=tmp_path)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_a_synchronous_run_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "async_timeline.py"), str(tmp_path / "run"),
                             "-o", str(tmp_path / "t.png")], capture_output=True, text=True)
    assert result.returncode == 1 and "allowed: an asynchronous run's directory" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
