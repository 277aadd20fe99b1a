"""A one-second run of benchmarks/soak.py, so the soak script cannot rot.

The real soak runs for minutes and is not part of the suite.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SOAK = Path(__file__).resolve().parent.parent / "benchmarks" / "soak.py"


def test_soak_runs_and_loses_nothing() -> None:
    done = subprocess.run(
        [sys.executable, str(SOAK), "--duration", "1"],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = dict(line.split() for line in done.stdout.splitlines())
    assert rows["pipeline_lost"] == "0"
    assert int(rows["pipeline_sent"].replace(",", "")) > 0
    assert rows["pipeline_sent"] == rows["pipeline_received"]
    assert int(rows["pubsub_published"].replace(",", "")) > 0
